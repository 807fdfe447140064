"""The time integrators, one module each, and their registry.

Adding an integrator is one new module with an Integrator subclass decorated with
``@register_integrator``, plus its import line below (the registry's order is the
order of these imports: the order menus and the viewer's I key show).
"""

from .base import (
    DEFAULT_INTEGRATOR, INTEGRATORS, Integrator, SolverStats, get_integrator,
    register_integrator,
)
from .euler import ExplicitEuler, SymplecticEuler  # explicit_euler, symplectic_euler
from .verlet import Verlet  # verlet
from .theta import BackwardEuler, ImplicitMidpoint  # implicit_midpoint, backward_euler
from .xpbd import XPBD  # xpbd
from .vbd import VBD  # vbd

__all__ = [
    "Integrator", "INTEGRATORS", "DEFAULT_INTEGRATOR", "SolverStats", "register_integrator",
    "get_integrator", "ExplicitEuler", "SymplecticEuler", "Verlet", "ImplicitMidpoint",
    "BackwardEuler", "XPBD", "VBD",
]
