"""The panel's "Collisions" section: self-collision on / off (also the C key), its
thickness (m) and the friction between layers, edited live on the running Simulation,
and each Box, Capsule and Mesh collider's contact margin (m, or "auto").

The thickness slider spans THICKNESS_RANGE around the simulation's default thickness
(collisions.default_thickness: 0.8 x the particle spacing), on a log scale; a typed
value outside it is kept if valid. Values the Simulation refuses are clamped into its
range first, so the panel never raises.

A margin edit replaces the collider in ``sim.contacts`` by a copy with the new margin
(:func:`set_collider_margin`; the Simulation packs its contacts again, as for any live
change of them). A margin the collider refuses (below 0, not finite) is not set and the
section shows the collider's error. Packing a mesh again rebuilds its BVH, so a mesh's
margin is set when its slider is let go (or a typed value entered), a box's or
capsule's while it is dragged.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..engine.colliders.shapes import AUTO_MARGIN, COLLIDER_TYPES, MARGIN_SHARE, Collider, Mesh
from ..engine.collisions import default_thickness
from ..engine.collisions.self_contact import MAX_FRICTION
from ..engine.contacts import collider_margin
from ..engine.simulation import Simulation

#: the thickness slider's span, as factors of the default thickness
THICKNESS_RANGE = (0.1, 5.0)
#: the friction slider's span (a typed value may go up to MAX_FRICTION)
FRICTION_RANGE = (0.0, 2.0)
#: the margin sliders' span, as factors of the default thickness ("auto" is MARGIN_SHARE
#: x the spacing, a quarter of the default thickness); a typed value may go beyond
MARGIN_RANGE = (0.0, 1.0)

Slider = Callable[..., tuple[bool, float]]


def set_collider_margin(sim: Simulation, index: int, margin: float | str) -> str | None:
    """Set the margin of contact ``index`` (a Box, Capsule or Mesh) live: m >= 0, or
    "auto". Returns None, or why it was refused (the collider's or the Simulation's
    error, which names the field, the value and what is allowed)."""
    contacts = sim.contacts
    try:
        collider = dataclasses.replace(contacts[index], margin=margin)
        sim.contacts = contacts[:index] + (collider,) + contacts[index + 1:]
    except (TypeError, ValueError) as exc:
        return f"collider {index}: {exc}"
    return None


class CollisionSection:
    """Draws the section for one Simulation at a time (the default thickness and the
    auto margin of the current one are computed once)."""

    def __init__(self) -> None:
        self._sim: Simulation | None = None
        self._default = 1.0
        self._auto_margin: float | None = None
        #: a mesh's margin being dragged (index -> m), set when the slider is let go
        self._pending: dict[int, float] = {}
        #: why the last margin edit was refused (None: it was not)
        self.refused: str | None = None

    def default_for(self, sim: Simulation) -> float:
        if sim is not self._sim:
            self._sim, self._default = sim, default_thickness(sim.system)
            self._auto_margin, self._pending, self.refused = None, {}, None
        return self._default

    def margin_of(self, sim: Simulation, collider: Collider) -> float:
        """The collider's margin in m ("auto" resolved for ``sim``'s system)."""
        if collider.margin != AUTO_MARGIN:
            return float(collider.margin)
        self.default_for(sim)
        if self._auto_margin is None:
            self._auto_margin = collider_margin(collider, sim.system)
        return self._auto_margin

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
        self.draw_margins(imgui, sim, slider)

    def draw_margins(self, imgui: Any, sim: Simulation, slider: Slider) -> None:
        """One line per Box, Capsule and Mesh of ``sim.contacts``: an "auto" checkbox and
        the margin slider (m; greyed while auto), then the last refusal, if any."""
        colliders = [(i, c) for i, c in enumerate(sim.contacts) if isinstance(c, COLLIDER_TYPES)]
        if not colliders:
            return
        imgui.text(f"collider margins [m] (auto: {MARGIN_SHARE:g} x the spacing)")
        low, high = (factor * self.default_for(sim) for factor in MARGIN_RANGE)
        for index, collider in colliders:
            auto = collider.margin == AUTO_MARGIN
            changed, auto_now = imgui.checkbox(f"auto###margin-auto-{index}", auto)
            if changed:  # leaving auto keeps the margin it gave
                self.refused = set_collider_margin(
                    sim, index, AUTO_MARGIN if auto_now else self.margin_of(sim, collider))
            imgui.same_line()
            imgui.begin_disabled(auto)
            shown = self._pending.get(index, self.margin_of(sim, collider))
            changed, value = slider(f"{type(collider).__name__.lower()} {index}"
                                    f"###margin-{index}", shown, low, high, "%.4g")
            if changed and not auto:  # imgui's float32, back to the digits shown or typed
                self._pending[index] = float(f"{value:.7g}")
            if index in self._pending and (not isinstance(collider, Mesh)
                                           or imgui.is_item_deactivated_after_edit()):
                self.refused = set_collider_margin(sim, index, self._pending.pop(index))
            imgui.end_disabled()
        if self.refused:
            imgui.text_wrapped(self.refused)
