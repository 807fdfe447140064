"""The panel's "Collisions" section: self-collision on / off (also the C key), its
thickness (m) and the friction between layers, edited live on the running Simulation.

The thickness slider spans THICKNESS_RANGE around the simulation's default thickness
(collisions.default_thickness: 0.8 x the particle spacing), on a log scale; a typed
value outside it is kept if valid. Values the Simulation refuses are clamped into its
range first, so the panel never raises.
"""

from __future__ import annotations

from typing import Any, Callable

from ..engine.collisions import default_thickness
from ..engine.collisions.self_contact import MAX_FRICTION
from ..engine.simulation import Simulation

#: the thickness slider's span, as factors of the default thickness
THICKNESS_RANGE = (0.1, 5.0)
#: the friction slider's span (a typed value may go up to MAX_FRICTION)
FRICTION_RANGE = (0.0, 2.0)

Slider = Callable[..., tuple[bool, float]]


class CollisionSection:
    """Draws the section for one Simulation at a time (the default thickness of the
    current one is computed once)."""

    def __init__(self) -> None:
        self._sim: Simulation | None = None
        self._default = 1.0

    def default_for(self, sim: Simulation) -> float:
        if sim is not self._sim:
            self._sim, self._default = sim, default_thickness(sim.system)
        return self._default

    def draw(self, imgui: Any, sim: Simulation, slider: Slider) -> None:
        """imgui widgets for ``sim``; ``slider(label, value, low, high, fmt, flags)`` is
        the panel's float slider."""
        changed, on = imgui.checkbox("self-collision (C)", sim.self_collision)
        if changed:
            sim.self_collision = bool(on)
        default = self.default_for(sim)
        low, high = (factor * default for factor in THICKNESS_RANGE)
        changed, value = slider("thickness [m]", sim.thickness, low, high, "%.4g",
                                imgui.SliderFlags_.logarithmic)
        if changed and value > 0:
            sim.thickness = float(value)
        changed, value = slider("layer friction", sim.self_friction, *FRICTION_RANGE, "%.2f")
        if changed:
            sim.self_friction = min(max(float(value), 0.0), MAX_FRICTION)
