"""The viewer's parameter-editing helper: live edits (panel sliders, the G key) and
the restart parameters of a cloth (width, height, pins).

Live edits apply to the running simulation without a restart. Stiffness, damping and
mass are kept as scales of the scene's own per-spring / per-particle values, so mixed
values (a rope's weaker bend springs) keep their ratios. The edits themselves are the
host's state (the controller's ``live`` and ``gravity_on``, which survive resets and
cloth restarts, not scene switches); :class:`ParameterEditor` checks and applies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..engine.simulation import Simulation
from ..io.scenes import Scene

PIN_PRESETS = {1: "corner", 2: "top-corners", 4: "four-corners"}  # panel "pins 1/2/4"
#: the scaled parameters: name -> (unit, Simulation setter)
SCALED = {"stiffness": ("N/m", "set_stiffness"), "damping": ("N s/m", "set_damping"),
          "mass": ("kg", "set_mass")}
#: the documented ranges of the panel's parameters (typed values are clamped to them)
DT_LIMITS = (1e-5, 0.02)          # s
GRAVITY_LIMITS = (-30.0, 30.0)    # m/s^2, the y component
SCALE_LIMITS = (0.01, 100.0)      # times the scene's stiffness, damping, mass
UNITS = {"dt": "s", "gravity": "m/s^2", **{name: unit for name, (unit, _) in SCALED.items()}}
LIMIT_REASONS = {
    "dt": "the viewer's dt range is 1e-05 to 0.02 s",
    "gravity": "the viewer's gravity range is -30 to 30 m/s^2",
    **{name: f"the viewer scales the scene's {name} by 0.01 to 100" for name in SCALED},
}
#: the Simulation array each scaled parameter reads
_ARRAYS = {"stiffness": "stiffness", "damping": "damping", "mass": "masses"}


@dataclass
class LiveParameters:
    """Panel edits kept across resets and restarts: scales of the scene's values and
    the gravity the G key switches on and off (m/s^2; None: the scene's own)."""

    stiffness_scale: float = 1.0
    damping_scale: float = 1.0
    mass_scale: float = 1.0
    gravity: np.ndarray | None = None


class ParameterHost(Protocol):
    """Whose parameters are edited: its simulation, scene and live edits."""

    sim: Simulation
    scene: Scene
    live: LiveParameters
    gravity_on: bool


def _reference_value(scene_value: Any, values: np.ndarray) -> float:
    """The number the panel shows for a per-item parameter: the scene's scalar if it
    has one, else the largest value (0 when there are none)."""
    is_number = isinstance(scene_value, (int, float)) and not isinstance(scene_value, bool)
    if is_number and scene_value > 0:
        return float(scene_value)
    return float(values.max()) if values.size else 0.0


class ParameterEditor:
    """Checks and applies the host's live edits to the host's simulation.

    ``reference`` holds the value each scaled parameter shows at scale 1 (N/m,
    N s/m, kg) for the simulation last :meth:`attach`-ed.
    """

    def __init__(self, host: ParameterHost) -> None:
        self.host = host
        self.reference: dict[str, float] = {}
        self._base: dict[str, np.ndarray] = {}

    def attach(self) -> None:
        """The host has a fresh simulation of its scene: read its values (the base of
        the scales) and apply the host's live edits to it."""
        host, sim = self.host, self.host.sim
        if host.live.gravity is None:
            host.live.gravity = sim.gravity
        self._base = {name: np.array(getattr(sim, _ARRAYS[name])) for name in SCALED}
        self.reference = {name: _reference_value(host.scene.params.get(name), self._base[name])
                          for name in SCALED}
        self.apply_gravity()
        self._apply_scales()

    def apply_gravity(self) -> None:
        """Gravity on or off as the host's ``gravity_on`` says."""
        host = self.host
        host.sim.gravity = host.live.gravity if host.gravity_on else np.zeros(3)

    def _apply_scales(self) -> None:
        live, sim = self.host.live, self.host.sim
        for name, (_, setter) in SCALED.items():
            getattr(sim, setter)(self._base[name] * getattr(live, f"{name}_scale"))

    def value(self, name: str) -> float:
        """Current value of a panel parameter: dt (s), stiffness (N/m), damping
        (N s/m), mass (kg) or gravity (the y component, m/s^2)."""
        live = self.host.live
        if name == "dt":
            return self.host.sim.dt
        if name == "gravity":
            return float(live.gravity[1])
        return self.reference[name] * getattr(live, f"{name}_scale")

    def limits(self, name: str) -> tuple[float, float]:
        """The documented range of a panel parameter (its slider's ends): dt DT_LIMITS s,
        gravity GRAVITY_LIMITS m/s^2, the scaled ones SCALE_LIMITS times the scene's
        value (damping down to 0)."""
        if name == "dt":
            return DT_LIMITS
        if name == "gravity":
            return GRAVITY_LIMITS
        if name in SCALED:
            reference = self.reference[name]
            low = 0.0 if name == "damping" else reference * SCALE_LIMITS[0]
            return low, reference * SCALE_LIMITS[1]
        raise ValueError(f"unknown parameter {name!r}; allowed: dt, gravity, {', '.join(SCALED)}")

    def set(self, name: str, value: float) -> str | None:
        """Apply a panel edit live. A value outside :meth:`limits` is clamped to the
        limit and the returned note says so and why (None when nothing was clamped); a
        value no limit can mend (not finite, mass <= 0, negative damping) raises a
        ValueError that names the parameter and what is allowed."""
        live = self.host.live
        value = float(value)
        if name in SCALED:
            if not (math.isfinite(value) and value >= 0 and (value > 0 or name != "mass")):
                raise ValueError(f"{name}: must be {'> 0' if name == 'mass' else '>= 0'}, "
                                 f"got {value:g}")
            if self.reference[name] <= 0:
                raise ValueError(f"{name}: the scene has no {name} to scale")
        elif name in ("dt", "gravity"):
            if not math.isfinite(value) or (name == "dt" and value <= 0):
                raise ValueError(f"{name}: must be {'> 0' if name == 'dt' else 'finite'}, "
                                 f"got {value:g}")
        low, high = self.limits(name)
        clamped = min(max(value, low), high)
        note = None
        if clamped != value:
            unit = UNITS[name]
            side = "above the highest" if value > high else "below the lowest"
            note = (f"{name}: {value:g} {unit} is {side} value {clamped:g} {unit} "
                    f"({LIMIT_REASONS[name]}); set to {clamped:g} {unit}")
        if name == "dt":
            self.host.sim.dt = clamped
        elif name == "gravity":
            live.gravity = np.array([live.gravity[0], clamped, live.gravity[2]])
            self.apply_gravity()
        else:
            setattr(live, f"{name}_scale", clamped / self.reference[name])
            self._apply_scales()
        return note


def cloth_shape(scene: Scene) -> tuple[int, int, int | None]:
    """(nx, ny, pins preset 1/2/4 or None) of a cloth scene."""
    params = scene.params
    preset = next((k for k, v in PIN_PRESETS.items() if v == params.get("pins")), None)
    return int(params.get("nx", 24)), int(params.get("ny", 24)), preset


def cloth_overrides(nx: int, ny: int, pins: int | None) -> dict[str, object]:
    """Scene overrides for a cloth of nx x ny particles with 1, 2 or 4 pins (None: as is)."""
    overrides: dict[str, object] = {"cloth.nx": int(nx), "cloth.ny": int(ny)}
    if pins is not None:
        overrides["cloth.pins"] = PIN_PRESETS[pins]
    return overrides


__all__ = ["DT_LIMITS", "GRAVITY_LIMITS", "LIMIT_REASONS", "SCALE_LIMITS", "UNITS",
           "LiveParameters", "PIN_PRESETS", "ParameterEditor", "ParameterHost", "SCALED",
           "cloth_overrides", "cloth_shape"]
