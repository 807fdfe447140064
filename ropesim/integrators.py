"""The five time integrators behind one signature, and their registry.

Every integrator is ``step(data: StepData, dt: float) -> float``: it advances the
state arrays in ``data`` by dt seconds in place and returns the largest squared
particle speed after the step (m^2/s^2), which the Simulation uses to catch a
diverging run (NaN compares false, so a non-finite state is caught too).

Fixed particles (pinned, or grabbed by the user) are not moved by the integrator;
their velocity is set to zero (the Simulation moves a grabbed particle itself).
Global drag is applied at the end of every step as v *= exp(-drag * dt) (drag in 1/s).

- explicit_euler:    x1 = x0 + dt v0,  v1 = v0 + dt a(x0, v0). Gains energy; unstable
                     for any undamped oscillation, shown here for teaching.
- symplectic_euler:  v1 = v0 + dt a(x0, v0),  x1 = x0 + dt v1. Energy stays bounded;
                     stable for dt below about 2 sqrt(m / k).
- verlet:            Stormer-Verlet. Its positions are those of x_{n+1} = 2 x_n - x_{n-1} + a dt^2;
                     it is run in velocity form so velocities are second-order accurate
                     at whole steps: x1 = x0 + dt v0 + dt^2/2 a0, v1 = v0 + dt/2 (a0 + a1).
- implicit_midpoint: theta-method with theta = 1/2, linearised once per step.
- backward_euler:    theta-method with theta = 1, linearised once per step.

The theta-method (the beta family of the course note, seed 001) solves

    (M - theta^2 dt^2 K - theta dt D) dv = dt f0 + theta dt^2 K v0,
    v1 = v0 + dv,   x1 = x0 + dt (v0 + theta dv),

with K = df/dx of the springs (exact Jacobian, including the transverse term that is
negative for compressed springs) and D = df/dv of the spring dampers, by matrix-free
Jacobi-preconditioned CG (solvers.py). If CG meets non-positive curvature (a strongly
compressed spring made the matrix indefinite), the step is redone with the transverse
term clamped at zero, the always-definite form, and ``fallback_steps`` counts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numba import njit

from .forces import spring_forces, stiffness_blocks, system_product
from .solvers import NEGATIVE_CURVATURE, conjugate_gradient


@dataclass
class SolverStats:
    """Conjugate-gradient figures of the last implicit step and a running fallback count."""

    iterations: int = 0
    residual: float = 0.0
    converged: bool = True
    fallback_steps: int = 0
    total_iterations: int = 0
    implicit_steps: int = 0


@dataclass(eq=False)
class StepData:
    """All arrays an integrator reads and writes; owned and kept current by Simulation.

    Shapes: x, v, force, work arrays (n, 3); spring_a, spring_b (m,) int32; rest, k, c (m,);
    mass, inv_mass (n,); fixed (n,) uint8 (1 = not moved by the integrator); gravity (3,).
    """

    x: np.ndarray
    v: np.ndarray
    spring_a: np.ndarray
    spring_b: np.ndarray
    rest: np.ndarray
    k: np.ndarray
    c: np.ndarray
    mass: np.ndarray
    inv_mass: np.ndarray
    fixed: np.ndarray
    gravity: np.ndarray
    drag: float = 0.0
    cg_tolerance: float = 1e-6
    cg_max_iterations: int = 200
    stats: SolverStats = field(default_factory=SolverStats)

    def __post_init__(self) -> None:
        n, m = self.x.shape[0], self.spring_a.shape[0]
        dtype = self.x.dtype
        self.force = np.zeros((n, 3), dtype)
        self._implicit_ready = False
        self._n, self._m, self._dtype = n, m, dtype

    def implicit_work(self) -> None:
        """Allocate the CG work arrays once, the first time an implicit step runs."""
        if self._implicit_ready:
            return
        n, m, dtype = self._n, self._m, self._dtype
        self.blocks = np.zeros((m, 6), dtype)
        self.normals = np.zeros((m, 3), dtype)
        self.rhs = np.zeros((n, 3), dtype)
        self.dv = np.zeros((n, 3), dtype)
        self.cg_r = np.zeros((n, 3), dtype)
        self.cg_z = np.zeros((n, 3), dtype)
        self.cg_p = np.zeros((n, 3), dtype)
        self.cg_ap = np.zeros((n, 3), dtype)
        self.cg_diag = np.zeros((n, 3), dtype)
        self.zero_mass = np.zeros(n, dtype)
        self._implicit_ready = True


# --- kernels ------------------------------------------------------------------------


@njit(cache=True)
def _euler_update(x, v, f, inv_mass, fixed, gravity, dt, symplectic, damp_factor):
    """One explicit or symplectic Euler update from forces f; returns max |v|^2."""
    max_speed_sq = 0.0
    for i in range(x.shape[0]):
        if fixed[i]:
            v[i, 0] = 0.0
            v[i, 1] = 0.0
            v[i, 2] = 0.0
            continue
        w = inv_mass[i]
        for d in range(3):
            accel = f[i, d] * w + gravity[d]
            if symplectic:
                v[i, d] += dt * accel
                x[i, d] += dt * v[i, d]
            else:
                x[i, d] += dt * v[i, d]
                v[i, d] += dt * accel
            v[i, d] *= damp_factor
        speed_sq = v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2]
        if not speed_sq <= max_speed_sq:  # also propagates NaN
            max_speed_sq = speed_sq
    return max_speed_sq


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
def _verlet_second_half(v, f, inv_mass, fixed, gravity, dt, damp_factor):
    """v += dt/2 a1 (second half kick) and drag; returns max |v|^2."""
    half = 0.5 * dt
    max_speed_sq = 0.0
    for i in range(v.shape[0]):
        if fixed[i]:
            v[i, 0] = 0.0
            v[i, 1] = 0.0
            v[i, 2] = 0.0
            continue
        w = inv_mass[i]
        for d in range(3):
            v[i, d] = (v[i, d] + half * (f[i, d] * w + gravity[d])) * damp_factor
        speed_sq = v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2]
        if not speed_sq <= max_speed_sq:
            max_speed_sq = speed_sq
    return max_speed_sq


@njit(cache=True)
def _theta_rhs(f, mass, gravity, stiff_v, fixed, dt, theta, rhs):
    """rhs = dt (f0 + m g) + theta dt^2 K v0, where stiff_v = Ks_graph v0 = -K v0."""
    for i in range(f.shape[0]):
        for d in range(3):
            if fixed[i]:
                rhs[i, d] = 0.0
            else:
                rhs[i, d] = dt * (f[i, d] + mass[i] * gravity[d]) - theta * dt * dt * stiff_v[i, d]


@njit(cache=True)
def _theta_update(x, v, dv, fixed, dt, theta, damp_factor):
    """v1 = v0 + dv, x1 = x0 + dt (v0 + theta dv), then drag; returns max |v|^2."""
    max_speed_sq = 0.0
    for i in range(x.shape[0]):
        if fixed[i]:
            v[i, 0] = 0.0
            v[i, 1] = 0.0
            v[i, 2] = 0.0
            continue
        for d in range(3):
            x[i, d] += dt * (v[i, d] + theta * dv[i, d])
            v[i, d] = (v[i, d] + dv[i, d]) * damp_factor
        speed_sq = v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2]
        if not speed_sq <= max_speed_sq:
            max_speed_sq = speed_sq
    return max_speed_sq


# --- integrators ---------------------------------------------------------------------


def _compute_forces(d: StepData) -> None:
    spring_forces(d.x, d.v, d.spring_a, d.spring_b, d.rest, d.k, d.c, d.force)


def explicit_euler(d: StepData, dt: float) -> float:
    _compute_forces(d)
    return _euler_update(
        d.x, d.v, d.force, d.inv_mass, d.fixed, d.gravity, dt, False, np.exp(-d.drag * dt)
    )


def symplectic_euler(d: StepData, dt: float) -> float:
    _compute_forces(d)
    return _euler_update(
        d.x, d.v, d.force, d.inv_mass, d.fixed, d.gravity, dt, True, np.exp(-d.drag * dt)
    )


def verlet(d: StepData, dt: float) -> float:
    _compute_forces(d)
    _verlet_first_half(d.x, d.v, d.force, d.inv_mass, d.fixed, d.gravity, dt)
    _compute_forces(d)  # at x1, with the half-step velocity for the dampers
    return _verlet_second_half(
        d.v, d.force, d.inv_mass, d.fixed, d.gravity, dt, np.exp(-d.drag * dt)
    )


def _theta_method(d: StepData, dt: float, theta: float) -> float:
    d.implicit_work()
    _compute_forces(d)
    alpha = theta * theta * dt * dt
    beta = theta * dt
    stats = d.stats
    for clamp in (False, True):
        stiffness_blocks(d.x, d.spring_a, d.spring_b, d.rest, d.k, clamp, d.blocks, d.normals)
        # Ks_graph v0 (the zero mass array drops the M term; alpha=1, beta=0 keep only K)
        system_product(
            d.v, d.zero_mass, d.spring_a, d.spring_b, d.blocks, d.normals, d.c, 1.0, 0.0,
            d.fixed, d.cg_ap,
        )
        _theta_rhs(d.force, d.mass, d.gravity, d.cg_ap, d.fixed, dt, theta, d.rhs)
        status, iterations, residual = conjugate_gradient(
            d.rhs, d.mass, d.spring_a, d.spring_b, d.blocks, d.normals, d.c, alpha, beta,
            d.fixed, d.dv, d.cg_r, d.cg_z, d.cg_p, d.cg_ap, d.cg_diag,
            d.cg_tolerance, d.cg_max_iterations,
        )
        stats.total_iterations += iterations
        if status != NEGATIVE_CURVATURE:
            break
        stats.fallback_steps += 1
    stats.iterations = iterations
    stats.residual = residual
    stats.converged = residual <= d.cg_tolerance
    stats.implicit_steps += 1
    return _theta_update(d.x, d.v, d.dv, d.fixed, dt, theta, np.exp(-d.drag * dt))


def implicit_midpoint(d: StepData, dt: float) -> float:
    return _theta_method(d, dt, 0.5)


def backward_euler(d: StepData, dt: float) -> float:
    return _theta_method(d, dt, 1.0)


@dataclass(frozen=True)
class Integrator:
    """A named integrator: ``step(data, dt) -> max squared speed``."""

    name: str
    step: Callable[[StepData, float], float]
    implicit: bool
    description: str


INTEGRATORS: dict[str, Integrator] = {
    integ.name: integ
    for integ in (
        Integrator("explicit_euler", explicit_euler, False,
                   "forward Euler: gains energy, for teaching"),
        Integrator("symplectic_euler", symplectic_euler, False,
                   "semi-implicit Euler: bounded energy, the fast default"),
        Integrator("verlet", verlet, False,
                   "Stormer-Verlet: second order, bounded energy"),
        Integrator("implicit_midpoint", implicit_midpoint, True,
                   "theta = 1/2, CG solve: nearly conserves energy, large dt"),
        Integrator("backward_euler", backward_euler, True,
                   "theta = 1, CG solve: damps, stable at any dt"),
    )
}

DEFAULT_INTEGRATOR = "symplectic_euler"


def get_integrator(name: str) -> Integrator:
    """Look an integrator up by name, with an error that lists the valid names."""
    try:
        return INTEGRATORS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"integrator: unknown name {name!r}; allowed: {', '.join(INTEGRATORS)}"
        ) from None
