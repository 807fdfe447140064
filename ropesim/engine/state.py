"""The bundles the integrators work on: State (what every step changes), Params (what
the user edits live), Model (springs, parameters, attached forces and solver settings of
one simulation) and the Changed flags an integrator is notified with.

One vocabulary at the Python level: stiffness (N/m), damping (N*s/m), rest_lengths (m),
mass (kg); the kernels below the integrators use short math names (k, c, rest).
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from .kernels.grid import GridLayout, grid_layout


class State:
    """The changing state: positions x (n, 3) m, velocities v (n, 3) m/s (arrays in the
    simulation's dtype, updated in place), time (s) and step_count."""

    __slots__ = ("x", "v", "time", "step_count")

    def __init__(self, x: np.ndarray, v: np.ndarray, time: float = 0.0, step_count: int = 0):
        self.x = x
        self.v = v
        self.time = time
        self.step_count = step_count

    def __repr__(self) -> str:
        return f"State(n={self.x.shape[0]}, time={self.time:.4f}, step_count={self.step_count})"


class Params(NamedTuple):
    """The live parameters, arrays in the simulation's dtype (numba takes the bundle as
    it is). Edit them through Simulation.set_* (which notify the integrator), not here.

    rest_lengths (m,) m; stiffness (m,) N/m; damping (m,) N*s/m; mass, inv_mass (n,) kg
    and 1/kg; fixed (n,) uint8, 1 = not moved by the integrator (pinned or grabbed);
    gravity (3,) m/s^2; drag (1,) float64, 1/s (v *= exp(-drag dt) each step).
    """

    rest_lengths: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    mass: np.ndarray
    inv_mass: np.ndarray
    fixed: np.ndarray
    gravity: np.ndarray
    drag: np.ndarray


class Changed(enum.IntFlag):
    """What changed, for Integrator.notify_model_changed."""

    STIFFNESS = 1
    DAMPING = 2
    REST_LENGTHS = 4
    MASS = 8
    FIXED = 16  # pins or the grabbed particle
    FORCES = 32  # the list of attached forces (or gravity / drag removed or restored)
    TOPOLOGY = 64  # the spring list itself (springs added or removed: engine/topology.py)
    SPRINGS = STIFFNESS | DAMPING | REST_LENGTHS
    ALL = SPRINGS | MASS | FIXED | FORCES | TOPOLOGY


class Model:
    """What an integrator is built from and reads every step: the spring end indices
    spring_a, spring_b (m,) int32, the Params, the attached forces, whether gravity and
    drag act, the CG settings of the implicit integrators and whether the structured-grid
    kernels may be used (``grid_kernels``; False: spring-list kernels, for comparisons),
    and the rest shape ``rest_positions`` (n, 3) m (the system's initial positions; None:
    unknown, an integrator that needs it takes the positions it first steps from).
    """

    def __init__(self, spring_a: np.ndarray, spring_b: np.ndarray, params: Params,
                 grid_shape: tuple[int, int] | None = None, grid_kernels: bool = True,
                 rest_positions: np.ndarray | None = None):
        self.spring_a = spring_a
        self.rest_positions = rest_positions
        self.spring_b = spring_b
        self.params = params
        self.grid_shape = grid_shape
        self.grid_kernels = bool(grid_kernels)
        # attached forces (forces.Force objects: that module imports this one), in order
        self.forces: list[Any] = []
        self.gravity_on = True
        self.drag_on = True
        self.cg_tolerance = 1e-4
        self.cg_max_iterations = 200
        self._no_gravity = np.zeros(3, params.gravity.dtype)
        self._layout: GridLayout | None | bool = False  # not looked for yet

    @property
    def n_particles(self) -> int:
        return self.params.mass.shape[0]

    @property
    def n_springs(self) -> int:
        return self.spring_a.shape[0]

    @property
    def dtype(self) -> np.dtype:
        return self.params.mass.dtype

    def grid(self) -> GridLayout | None:
        """The structured-grid layout of the springs (kernels.grid.grid_layout), found once;
        None without grid structure or with grid_kernels off."""
        if self._layout is False:
            self._layout = (grid_layout(self.spring_a, self.spring_b, self.n_particles,
                                        self.grid_shape)
                            if self.grid_kernels and self.n_springs else None)
        return self._layout

    def set_springs(self, spring_a: np.ndarray, spring_b: np.ndarray, params: Params) -> None:
        """A live topology edit (engine/topology.py): the new spring list and the Params
        sized for it; the grid layout is looked for again on next use."""
        self.spring_a, self.spring_b, self.params = spring_a, spring_b, params
        self._layout = False

    def gravity(self) -> np.ndarray:
        """The acceleration the particle update adds, m/s^2 (zero with gravity removed)."""
        return self.params.gravity if self.gravity_on else self._no_gravity

    def damp_factor(self, dt: float) -> float:
        """exp(-drag dt), the drag factor of one step of dt s (1 with drag removed)."""
        return np.exp(-float(self.params.drag[0]) * dt) if self.drag_on else 1.0

    def accumulate_attached(self, state: State, f: np.ndarray) -> bool:
        """f = the sum of the attached forces at ``state``, N; False (f untouched) if none."""
        if not self.forces:
            return False
        f[:] = 0.0
        for force in self.forces:
            force.accumulate(state, self.params, f)
        return True

    def implicit_forces(self) -> list[Any]:
        """The attached forces with Jacobian products."""
        return [force for force in self.forces if force.has_jacobian]


@njit(cache=True)
def kinetic_energy(v, mass):
    """Sum of m/2 |v|^2, J."""
    total = 0.0
    for i in range(v.shape[0]):
        total += 0.5 * mass[i] * (v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2])
    return total
