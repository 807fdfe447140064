"""Solver settings by integrator name: the XPBD and VBD attributes a scene file
(``[xpbd]``, ``[vbd]`` tables, io/scenes.py) or the panel (app/solver_panel.py) sets on
a Simulation.

SOLVER_SETTING_TABLE is the one place each setting is written: its kind, its allowed
range or choices, its unit, a short meaning and the panel's slider range. The allowed
values' prose (SOLVER_SETTINGS, which scene errors and panel refusals quote), the check
(:func:`solver_setting_allowed`) and the panel's sliders are derived from it.

The Simulation keeps one integrator instance per name, so settings given to an
integrator that is not the current one take effect whenever it is switched to, and
stay through switches away and back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .integrators.vbd import INITIALISATIONS
from .integrators.xpbd import PROJECTIONS, RELAXATION_RANGE

#: largest substeps or iterations a scene may ask for
MAX_COUNT = 1000
KINDS = ("count", "number", "choice")


@dataclass(frozen=True)
class SolverSetting:
    """One integrator setting. ``kind``: "count" (an integer), "number" (a finite float)
    or "choice" (one of ``choices``). Counts and numbers are allowed from ``low`` up to
    ``high`` (included when ``high_included``; None: no upper end), in ``unit``.
    ``meaning``: a few words shown after the allowed values. ``slider``: the panel's
    slider range (inside the allowed range; ``log_slider``: logarithmic). ``noun``: how
    the allowed values' prose names the value ("a compliance >= 0 m/N");
    ``low_means``: what the low end does ("off"). ``none_means``: when None is allowed
    (the integrator's own per-spring value), what it stands for ("1/k"), and ``first``
    the value the panel sets when None is switched off."""

    kind: str
    meaning: str = ""
    low: float = 0.0
    high: float | None = None
    high_included: bool = True
    unit: str = ""
    choices: tuple[str, ...] = ()
    slider: tuple[float, float] | None = None
    log_slider: bool = False
    noun: str = "number"
    low_means: str = ""
    none_means: str = ""
    first: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"SolverSetting.kind: expected one of {', '.join(KINDS)}, got "
                             f"{self.kind!r}")
        if self.kind == "choice" and not self.choices:
            raise ValueError("SolverSetting.choices: a choice needs at least one, got ()")
        if self.slider is not None and not all(self.admits(end) for end in self.slider):
            raise ValueError(f"SolverSetting.slider: {self.slider} lies outside the allowed "
                             f"values, {self.allowed}")

    @property
    def allowed(self) -> str:
        """The allowed values in words, e.g. "an integer from 1 to 1000 (substeps per step)"."""
        unit = f" {self.unit}" if self.unit else ""
        low = f"{self.low:g}" + (f" ({self.low_means})" if self.low_means else "")
        if self.kind == "choice":
            text = "one of " + ", ".join(self.choices)
        elif self.kind == "count":
            text = f"an integer from {low} to {self.high:g}{unit}"
        elif self.high is None:
            text = f"a {self.noun} >= {low}{unit}"
        else:
            below = "" if self.high_included else "below "
            text = f"a {self.noun} from {low} to {below}{self.high:g}{unit}"
        return f"{text} ({self.meaning})" if self.meaning else text

    def admits(self, value: Any) -> bool:
        """Whether ``value`` (already of the setting's type) is allowed."""
        if self.kind == "choice":
            return value in self.choices
        if not math.isfinite(value) or value < self.low:
            return False
        if self.high is None:
            return True
        return value <= self.high if self.high_included else value < self.high


#: every settable attribute of each integrator: name -> key -> SolverSetting
SOLVER_SETTING_TABLE: dict[str, dict[str, SolverSetting]] = {
    "xpbd": {
        "substeps": SolverSetting("count", "substeps per step", 1, MAX_COUNT, slider=(1, 40)),
        "iterations": SolverSetting("count", "Gauss-Seidel passes per substep", 1, MAX_COUNT,
                                    slider=(1, 20)),
        "compliance": SolverSetting("number", "absent: each spring's 1/k", 0.0, unit="m/N",
                                    slider=(1e-9, 1e-1), log_slider=True, noun="compliance",
                                    none_means="1/k", first=1e-6),
        "relaxation": SolverSetting("number", "over-relaxation of each projection",
                                    *RELAXATION_RANGE, high_included=False,
                                    slider=(1.0, 1.99)),
        "tethers": SolverSetting("number", "absent: off; the strain allowed beyond the rest "
                                 "distance to the nearest fixed particle", 0.0,
                                 slider=(0.0, 0.5), noun="slack", none_means="off",
                                 first=0.1),
        "projection": SolverSetting("choice", "springs: one at a time; chains: each line "
                                    "of springs at once", choices=PROJECTIONS),
    },
    "vbd": {
        "iterations": SolverSetting("count", "sweeps per step", 1, MAX_COUNT,
                                    slider=(1, 100)),
        "chebyshev_rho": SolverSetting("number", "Chebyshev acceleration's spectral radius",
                                       0.0, 1.0, high_included=False, slider=(0.0, 0.99),
                                       low_means="off"),
        "initialisation": SolverSetting("choice", "the initial guess of each step",
                                        choices=INITIALISATIONS),
    },
}

#: the same settings as (kind, allowed values in words): what scene files check and quote
SOLVER_SETTINGS: dict[str, dict[str, tuple[str, str]]] = {
    name: {key: (setting.kind, setting.allowed) for key, setting in keys.items()}
    for name, keys in SOLVER_SETTING_TABLE.items()
}


def solver_setting_allowed(integrator: str, key: str, value: Any) -> bool:
    """Whether ``value`` (already of the key's type) is allowed for integrator.key."""
    return SOLVER_SETTING_TABLE[integrator][key].admits(value)


def solver_setting_refusal(integrator: str, key: str, value: Any) -> str | None:
    """None when ``value`` is allowed for integrator.key (None is, where the setting's
    ``none_means`` says what it stands for), else why not: the key, the allowed values
    and the value."""
    setting = SOLVER_SETTING_TABLE[integrator][key]
    if (setting.none_means if value is None else setting.admits(value)):
        return None
    return f"{integrator}.{key}: allowed {setting.allowed}, got {value!r}"


def apply_solver_settings(sim: Any, settings: dict[str, dict[str, Any]]) -> None:
    """Set ``settings[name][key] = value`` on the Simulation's integrator ``name`` (made
    now if it is not the current one; the current integrator stays current)."""
    current = sim.integrator
    for name, values in settings.items():
        if not values:
            continue
        sim.integrator = name
        for key, value in values.items():
            setattr(sim.integrator_object, key, value)
    if sim.integrator != current:
        sim.integrator = current
