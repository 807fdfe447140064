"""Force parts. A force is one object that adds newtons into an (n, 3) array (see
:class:`Force`); a new effect is one new module here with a Force subclass.

The default list, every simulation's parts in this order, is DEFAULT_FORCES: springs
with dampers, gravity and drag. The integrators apply these three in their own fused
kernels (the fast paths); attached forces (Simulation.add_force) are summed into one
array that every kernel path takes as an input, and the implicit integrators treat the
ones with Jacobian products implicitly.
"""

from ..kernels.particles import MIN_LENGTH
from .base import Force
from .drag import Drag
from .gravity import Gravity, gravity_energy
from .wind import Wind
from .springs import (
    SpringForces, add_spring_forces, spring_energy, spring_forces, spring_strain,
    stiffness_blocks, system_diagonal, system_product,
)

#: the parts of every simulation, in order (Simulation builds one of each)
DEFAULT_FORCES = (SpringForces, Gravity, Drag)

__all__ = [
    "Force", "SpringForces", "Gravity", "Drag", "Wind", "DEFAULT_FORCES", "MIN_LENGTH",
    "add_spring_forces",
    "spring_forces", "spring_energy", "spring_strain", "stiffness_blocks", "system_product",
    "system_diagonal", "gravity_energy",
]
