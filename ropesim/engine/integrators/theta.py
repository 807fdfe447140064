"""The theta-method: implicit midpoint (theta = 1/2) and backward Euler (theta = 1),
linearised once per step.

The theta-method (the beta family of the course note, seed 001) solves

    (M - theta^2 dt^2 K - theta dt D) dv = dt f0 + theta dt^2 K v0,
    v1 = v0 + dv,   x1 = x0 + dt (v0 + theta dv),

then drag v1 *= exp(-drag dt). f0 = spring forces + attached forces + m g at
(x0, v0, t0); K = df/dx of the springs (exact Jacobian, including the transverse term
that is negative for compressed springs) and D = df/dv of the spring dampers, plus the
Jacobians of attached forces that provide them (Force.jacobian_product); an attached
force without them is in f0 only, i.e. explicit inside the implicit step.

Solvers: on a structured grid (kernels.grid.grid_layout) with no implicit attached
force, CG preconditioned by multigrid (linalg.multigrid.GridMultigrid, _GridImplicit);
otherwise Jacobi-preconditioned CG on the spring list (linalg.cg). If CG meets
non-positive curvature (a strongly compressed spring made the matrix indefinite), the
step is redone with the transverse term clamped at zero, the always-definite form, and
``fallback_steps`` counts it.
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np
from numba import njit

from .. import parallel
from ..forces.base import Force
from ..forces.springs import spring_forces, stiffness_blocks, system_diagonal, system_product
from ..kernels.grid import GridLayout
from ..kernels.grid_implicit import (
    COMPACT_ROWS, GRID_PAD, grid_implicit_blocks, grid_implicit_scratch, grid_spring_params,
    padded_edges,
)
from ..kernels.particles import hold, hold_tracked, speed_result, track_speed
from ..linalg.cg import NEGATIVE_CURVATURE, conjugate_gradient
from ..linalg.multigrid import GridMultigrid, grid_pcg
from ..state import Changed, Model, State
from .base import Integrator, SolverStats, register_integrator


@njit(cache=True)
def _theta_rhs(f, external, has_external, mass, gravity, stiff_v, fixed, dt, theta, rhs):
    """rhs = dt (f0 + m g) + theta dt^2 K v0, where stiff_v = Ks_graph v0 = -K v0 and
    f0 = f + external (the attached forces, when has_external).

    Over the particles of ``fixed`` only: the grid path passes padded arrays whose pad
    rows must stay untouched (zero)."""
    for i in range(fixed.shape[0]):
        for d in range(3):
            if fixed[i]:
                rhs[i, d] = 0.0
            else:
                g = np.float64(gravity[d])
                f0 = np.float64(f[i, d]) + external[i, d] if has_external else f[i, d]
                rhs[i, d] = dt * (f0 + mass[i] * g) - theta * dt * dt * stiff_v[i, d]


@njit(cache=True)
def _theta_update(x, v, dv, fixed, dt, theta, damp_factor):
    """v1 = v0 + dv, x1 = x0 + dt (v0 + theta dv), then drag; returns max |v|^2, NaN
    once a velocity or position is not finite (a NaN position leaves CG with nothing to
    do, so the velocities alone would not show it)."""
    max_speed_sq, bad = 0.0, 0.0  # see particles.track_speed
    for i in range(x.shape[0]):
        if fixed[i]:
            bad = hold_tracked(x, v, i, bad, 0.0)
            continue
        for d in range(3):
            x[i, d] += dt * (v[i, d] + theta * dv[i, d])
            v[i, d] = (v[i, d] + dv[i, d]) * damp_factor
        max_speed_sq, bad = track_speed(x, v, i, max_speed_sq, bad, 0.0)
    return speed_result(max_speed_sq, bad)


@njit(cache=True)
def _zero_fixed_rows(out, fixed):
    for i in range(fixed.shape[0]):
        if fixed[i]:
            hold(out, i, 0.0)


def _record(stats: SolverStats, status: int, iterations: int, residual: float,
            tolerance: float) -> None:
    stats.iterations = iterations
    stats.residual = residual
    stats.converged = residual <= tolerance
    stats.implicit_steps += 1


class _GridImplicit:
    """The theta-method of a grid system: the same linear system as the spring-list path
    (exact Jacobian first, clamped on non-positive curvature), solved in float64 by CG with
    the multigrid preconditioner of GridMultigrid; blocks in the padded edge layout."""

    kind = "grid-multigrid"

    def __init__(self, model: Model, layout: GridLayout):
        rows, cols = layout.rows, layout.cols
        offsets = [(int(b[0]), int(b[1])) for b in layout.blocks]
        self.pblocks = padded_edges(rows, cols, offsets)
        self.cols = cols
        self.gblocks = layout.blocks
        # the kernel's work arrays, among them P: stiffness, damping, rest length per edge
        # slot, refreshed when the integrator is notified of an edit (params_stale)
        self.scratch = grid_implicit_scratch(layout, self.pblocks)
        self.params_stale = True
        self.mg = GridMultigrid(rows, cols, offsets, workspaces=2)
        edges = int(self.pblocks[:, 1].sum())
        n = rows * cols
        # rows padded by GRID_PAD so that no two rows are a multiple of 4 KiB apart.
        # The operator's blocks are kept in the simulation's precision: a float32 system's
        # Jacobian is no more exact than float32 anyway, and float32 blocks halve the
        # memory traffic of CG's product (which still multiplies and sums in float64)
        op_dtype = np.float32 if model.dtype == np.float32 else np.float64
        self.b_exact = np.zeros((COMPACT_ROWS, edges + GRID_PAD), op_dtype)
        self.b_clamped = np.zeros((COMPACT_ROWS, edges + GRID_PAD), op_dtype)
        self.force = np.zeros((3, n + GRID_PAD))
        self.kv = np.zeros((3, n + GRID_PAD))
        self.kv_clamped = np.zeros((3, n + GRID_PAD))
        self.op_diag = np.zeros((6, n + GRID_PAD), op_dtype)
        vec = (3, n + GRID_PAD)
        # per attempt (0 exact, 1 clamped): right-hand side; dv, r, p, ap, temp of CG
        self.rhs = (np.zeros(vec), np.zeros(vec))
        self.vectors = tuple(tuple(np.zeros(vec) for _ in range(5)) for _ in range(2))
        self.work = (self.mg.workspace(0), self.mg.workspace(1))
        self.stop = np.zeros(1, np.uint8)  # set: the clamped attempt is not needed
        self.never = np.zeros(1, np.uint8)
        # on two or more cores the two attempts can run at once (the clamped one on a
        # helper thread): it is then ready when the exact one meets negative curvature,
        # and stopped when the exact one converges. On the stiff 64 x 64 cloth the steps
        # that fall back gain more than the others lose (the two solves share the memory
        # system; docs/performance.md). The chooser compares mean times per iteration
        # (the mix of both kinds of step decides; they come in runs, so the two ways are
        # timed alternately) with one-after-the-other; the results are the same. A window
        # of 20 steps alternating call by call is not swayed by a burst of load: no early
        # re-check (recheck = the interval)
        self.chooser = (parallel.Chooser(probe=10, statistic="mean", interleave=True,
                                         recheck=0.25) if parallel.threads() > 1 else None)
        self.concurrent_steps = 0  # steps that ran both attempts at once
        self.pending = None  # a clamped attempt told to stop, maybe still running

    def finish(self) -> None:
        """Wait for a clamped attempt that was told to stop (it uses the operators)."""
        if self.pending is not None:
            self.pending.result()
            self.pending = None

    def step(self, model: Model, state: State, dt: float, theta: float,
             external: np.ndarray, has_external: bool, stats: SolverStats) -> float:
        p = model.params
        alpha = theta * theta * dt * dt
        beta = theta * dt
        if self.params_stale:
            grid_spring_params(p.stiffness, p.damping, p.rest_lengths, self.cols, self.gblocks,
                               self.pblocks, self.scratch[2])
            self.params_stale = False
        grid_implicit_blocks(state.x, state.v, self.cols, self.gblocks, self.pblocks, alpha,
                             beta, *self.scratch, self.force, self.kv, self.kv_clamped,
                             self.b_exact, self.b_clamped)
        self.op_diag[:3, :p.mass.shape[0]] = p.mass
        self.finish()  # a stopped clamped attempt of the last step still reads the operators
        self.mg.setup(p.mass, p.fixed, self.b_clamped)
        mg = self.mg.arrays()
        edges = (self.b_exact, self.b_clamped)
        gravity = model.gravity()
        for k, kv in enumerate((self.kv, self.kv_clamped)):
            # the grid arrays are (3, n) structure-of-arrays: the shared kernels take .T views
            _theta_rhs(self.force.T, external, has_external, p.mass, gravity, kv.T, p.fixed,
                       dt, theta, self.rhs[k].T)
        both = self.chooser is not None and self.chooser.parallel()
        self.stop[0] = 0
        tolerance, max_iterations = model.cg_tolerance, model.cg_max_iterations

        def solve(k):
            return grid_pcg(self.rhs[k], self.op_diag, edges[k], self.pblocks, p.fixed,
                            self.vectors[k], tolerance, max_iterations,
                            self.stop if k else self.never, mg, self.work[k])

        start = time.perf_counter()
        if both:
            self.concurrent_steps += 1
            clamped = parallel.helper_thread().submit(solve, 1)
            outcomes = [solve(0)]
            if outcomes[0][0] != NEGATIVE_CURVATURE:
                # not needed: it stops within an iteration, waited for by the next step
                self.stop[0] = 1
                self.pending = clamped
            else:
                outcomes.append(clamped.result())
        else:
            outcomes = [solve(0)]
            if outcomes[0][0] == NEGATIVE_CURVATURE:
                outcomes.append(solve(1))
        # the exact attempt's answer, or the clamped one's if it met negative curvature
        status, iterations, residual = outcomes[0]
        used = 0
        work = iterations
        if status == NEGATIVE_CURVATURE:
            stats.fallback_steps += 1
            used = 1
            status, iterations, residual = outcomes[1]
            work += iterations
        stats.total_iterations += work
        if self.chooser is not None:  # per iteration of the attempts one after the other
            self.chooser.record(both, start, max(work, 1))
        _record(stats, status, iterations, residual, tolerance)
        dv = self.vectors[used][0]
        return _theta_update(state.x, state.v, dv.T, p.fixed, dt, theta, model.damp_factor(dt))


class _SpringListImplicit:
    """The theta-method on the spring list: Jacobi-preconditioned CG (linalg.cg) with the
    springs' matrix-free operator and the Jacobian products of implicit attached forces."""

    kind = "spring-list-cg"

    def __init__(self, model: Model):
        n, m, dtype = model.n_particles, model.n_springs, model.dtype
        self.model = model
        self.blocks = np.zeros((m, 6), dtype)
        self.normals = np.zeros((m, 3), dtype)
        self.force = np.zeros((n, 3), dtype)
        self.rhs = np.zeros((n, 3), dtype)
        self.dv = np.zeros((n, 3), dtype)
        self.r = np.zeros((n, 3), dtype)
        self.z = np.zeros((n, 3), dtype)
        self.p = np.zeros((n, 3), dtype)
        self.ap = np.zeros((n, 3), dtype)
        self.diag = np.zeros((n, 3), dtype)
        self.zero_mass = np.zeros(n, dtype)
        self.alpha = self.beta = 0.0
        self.state: State | None = None
        self.implicit: list[Force] = []

    def apply(self, p: np.ndarray, out: np.ndarray) -> None:
        """out = A p = (M - alpha K - beta D) p, rows of fixed particles zero."""
        m, params = self.model, self.model.params
        system_product(p, params.mass, m.spring_a, m.spring_b, self.blocks, self.normals,
                       params.damping, self.alpha, self.beta, params.fixed, out)
        if self.implicit:
            for force in self.implicit:
                force.jacobian_product(self.state, params, p, -self.alpha, -self.beta, out)
            _zero_fixed_rows(out, params.fixed)

    def step(self, model: Model, state: State, dt: float, theta: float,
             external: np.ndarray, has_external: bool, stats: SolverStats,
             implicit: list[Force]) -> float:
        p = model.params
        self.state, self.implicit = state, implicit
        spring_forces(state.x, state.v, model.spring_a, model.spring_b, p.rest_lengths,
                      p.stiffness, p.damping, self.force)
        self.alpha = theta * theta * dt * dt
        self.beta = theta * dt
        gravity = model.gravity()
        tolerance = model.cg_tolerance
        for clamp in (False, True):
            stiffness_blocks(state.x, model.spring_a, model.spring_b, p.rest_lengths,
                             p.stiffness, clamp, self.blocks, self.normals)
            # Ks_graph v0 (the zero mass array drops the M term; alpha=1, beta=0 keep only
            # K), minus K v0 of the implicit attached forces
            system_product(state.v, self.zero_mass, model.spring_a, model.spring_b,
                           self.blocks, self.normals, p.damping, 1.0, 0.0, p.fixed, self.ap)
            for force in implicit:
                force.jacobian_product(state, p, state.v, -1.0, 0.0, self.ap)
            _theta_rhs(self.force, external, has_external, p.mass, gravity, self.ap, p.fixed,
                       dt, theta, self.rhs)
            system_diagonal(p.mass, model.spring_a, model.spring_b, self.blocks, self.normals,
                            p.damping, self.alpha, self.beta, self.diag)
            for force in implicit:
                force.jacobian_diagonal(state, p, -self.alpha, -self.beta, self.diag)
            status, iterations, residual = conjugate_gradient(
                self.apply, self.diag, self.rhs, p.fixed, self.dv, self.r, self.z, self.p,
                self.ap, tolerance, model.cg_max_iterations)
            stats.total_iterations += iterations
            if status != NEGATIVE_CURVATURE:
                break
            stats.fallback_steps += 1
        _record(stats, status, iterations, residual, tolerance)
        self.state = None
        return _theta_update(state.x, state.v, self.dv, p.fixed, dt, theta,
                             model.damp_factor(dt))


class _Theta(Integrator):
    """The theta-method with this class's ``theta``."""

    theta: ClassVar[float] = 1.0
    unconditionally_stable = True
    has_solver_stats = True

    def __init__(self, model: Model):
        super().__init__(model)
        self._grid: _GridImplicit | None | bool = False  # not looked for yet
        self._spring_list: _SpringListImplicit | None = None
        self._implicit = model.implicit_forces()

    def grid_solver(self) -> _GridImplicit | None:
        """The multigrid solver of a grid system, made on first use; None without grid
        structure (then the spring-list CG is used)."""
        if self._grid is False:
            layout = self.model.grid()
            self._grid = None if layout is None else _GridImplicit(self.model, layout)
        return self._grid

    def spring_list_solver(self) -> _SpringListImplicit:
        if self._spring_list is None:
            self._spring_list = _SpringListImplicit(self.model)
        return self._spring_list

    def notify_model_changed(self, flags: Changed) -> None:
        if flags & Changed.TOPOLOGY:  # new spring list: both solvers are set up again
            self.finish()
            self._grid, self._spring_list = False, None
        if flags & Changed.SPRINGS and isinstance(self._grid, _GridImplicit):
            self._grid.params_stale = True
        if flags & Changed.FORCES:
            self._implicit = self.model.implicit_forces()

    def finish(self) -> None:
        if isinstance(self._grid, _GridImplicit):
            self._grid.finish()

    def step(self, state: State, dt: float) -> float:
        external, has_external = self.external_forces(state)
        grid = None if self._implicit else self.grid_solver()
        if grid is not None:
            return grid.step(self.model, state, dt, self.theta, external, has_external,
                             self.stats)
        return self.spring_list_solver().step(self.model, state, dt, self.theta, external,
                                              has_external, self.stats, self._implicit)


@register_integrator
class ImplicitMidpoint(_Theta):
    name = "implicit_midpoint"
    description = "theta = 1/2, CG solve: nearly conserves energy, large dt"
    theta = 0.5


@register_integrator
class BackwardEuler(_Theta):
    name = "backward_euler"
    description = "theta = 1, CG solve: damps, stable at any dt"
    theta = 1.0
