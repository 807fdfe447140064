"""Uniform gravity: the force part and its potential energy kernel."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..state import Params, State
from .base import Force


@njit(cache=True)
def gravity_energy(x, mass, gravity):
    """Potential of uniform gravity, -sum m g.x, J (zero at the origin)."""
    total = 0.0
    for i in range(x.shape[0]):
        total -= mass[i] * (gravity[0] * x[i, 0] + gravity[1] * x[i, 1] + gravity[2] * x[i, 2])
    return total


class Gravity(Force):
    """Uniform gravity, the acceleration params.gravity (m/s^2) on every particle: the
    force m g, N. Part of the default list: the integrators add g to every free particle's
    acceleration in their update kernels (as NVIDIA Newton's integrate_particles does),
    so it costs no pass of its own; it is as implicit as the integrator (a constant
    force has a zero Jacobian)."""

    fused = True

    def accumulate(self, state: State, params: Params, f: np.ndarray) -> None:
        f += params.mass[:, None] * params.gravity

    def potential_energy(self, state: State, params: Params) -> float:
        """-sum m g.x, J (zero at the origin)."""
        return float(gravity_energy(state.x, params.mass, params.gravity))
