"""Solver settings by integrator name: the XPBD and VBD attributes a scene file
(``[xpbd]``, ``[vbd]`` tables, io/scenes.py) or the panel sets on a Simulation.

The Simulation keeps one integrator instance per name, so settings given to an
integrator that is not the current one take effect whenever it is switched to, and
stay through switches away and back.
"""

from __future__ import annotations

from typing import Any

from .integrators.vbd import INITIALISATIONS
from .integrators.xpbd import RELAXATION_RANGE

#: the settable attributes of each integrator: name -> (kind, allowed values), where
#: kind is "count" (an integer in [1, limit]), "number" (a float) or "choice"
SOLVER_SETTINGS: dict[str, dict[str, tuple[str, str]]] = {
    "xpbd": {
        "substeps": ("count", "an integer from 1 to 1000 (substeps per step)"),
        "iterations": ("count", "an integer from 1 to 1000 (Gauss-Seidel passes per substep)"),
        "compliance": ("number", "a compliance >= 0 m/N (absent: each spring's 1/k)"),
        "relaxation": ("number", f"a number from {RELAXATION_RANGE[0]:g} to below "
                                 f"{RELAXATION_RANGE[1]:g} (over-relaxation of each "
                                 "projection)"),
    },
    "vbd": {
        "iterations": ("count", "an integer from 1 to 1000 (sweeps per step)"),
        "chebyshev_rho": ("number", "a number from 0 (off) to below 1"),
        "initialisation": ("choice", "one of " + ", ".join(INITIALISATIONS)),
    },
}
#: largest substeps or iterations a scene may ask for
MAX_COUNT = 1000


def solver_setting_allowed(integrator: str, key: str, value: Any) -> bool:
    """Whether ``value`` (already of the key's type) is allowed for integrator.key."""
    kind = SOLVER_SETTINGS[integrator][key][0]
    if kind == "count":
        return 1 <= value <= MAX_COUNT
    if key == "chebyshev_rho":
        return 0.0 <= value < 1.0
    if key == "relaxation":
        return RELAXATION_RANGE[0] <= value < RELAXATION_RANGE[1]
    if kind == "number":
        return value >= 0.0
    return value in INITIALISATIONS


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
