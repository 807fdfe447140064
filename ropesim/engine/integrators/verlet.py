"""Stormer-Verlet. Its positions are those of x_{n+1} = 2 x_n - x_{n-1} + a dt^2; it is run
in velocity form so velocities are second-order accurate at whole steps:

    x1 = x0 + dt v0 + dt^2/2 a0,   v1 = v0 + dt/2 (a0 + a1),

a0 at (x0, v0, t0) and a1 at (x1, v0 + dt/2 a0, t0 + dt) (the dampers see the half-step
velocity), then drag v1 *= exp(-drag dt).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..forces.springs import add_spring_forces
from ..kernels.sweeps import KICK, euler_update, start_forces
from ..state import Model, State
from .base import Integrator, register_integrator


@njit(cache=True)
def _verlet_first_half(x, v, f, inv_mass, fixed, gravity, dt):
    """v += dt/2 a0 (half kick), x += dt v (drift): x1 = x0 + dt v0 + dt^2/2 a0."""
    half = 0.5 * dt
    for i in range(x.shape[0]):
        if fixed[i]:
            continue
        w = inv_mass[i]
        for d in range(3):
            v[i, d] += half * (f[i, d] * w + gravity[d])
            x[i, d] += dt * v[i, d]


@njit(cache=True)
def _total_forces(x, v, spring_a, spring_b, rest, k, c, external, has_external, f):
    """f = the attached forces (or 0) + the spring forces, N."""
    start_forces(f, external, has_external, 0, f.shape[0])
    add_spring_forces(x, v, spring_a, spring_b, rest, k, c, f)


@register_integrator
class Verlet(Integrator):
    name = "verlet"
    description = "Stormer-Verlet: second order, bounded energy"

    def __init__(self, model: Model):
        super().__init__(model)
        self.force = np.zeros((model.n_particles, 3), model.dtype)
        self._end = State(self.force, self.force)  # the state at t0 + dt (arrays set in step)

    def _forces(self, state: State) -> None:
        m, p = self.model, self.model.params
        external, has_external = self.external_forces(state)
        _total_forces(state.x, state.v, m.spring_a, m.spring_b, p.rest_lengths, p.stiffness,
                      p.damping, external, has_external, self.force)

    def step(self, state: State, dt: float) -> float:
        m, p = self.model, self.model.params
        gravity = m.gravity()
        self._forces(state)
        _verlet_first_half(state.x, state.v, self.force, p.inv_mass, p.fixed, gravity, dt)
        end = self._end
        end.x, end.v, end.time, end.step_count = state.x, state.v, state.time + dt, state.step_count
        self._forces(end)  # at x1, with the half-step velocity for the dampers
        # v += dt/2 a1 (the second half kick) and drag; returns max |v|^2
        return euler_update(state.x, state.v, self.force, p.inv_mass, p.fixed, gravity,
                            0.5 * dt, KICK, m.damp_factor(dt))
