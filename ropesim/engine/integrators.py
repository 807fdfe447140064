"""The five time integrators behind one signature, and their registry.

Every integrator is ``step(data: StepData, dt: float) -> float``: it advances the
state arrays in ``data`` by dt seconds in place and returns the largest squared
particle speed after the step (m^2/s^2), which the Simulation uses to catch a
diverging run; it is NaN as soon as any speed is NaN or infinite, so a non-finite
state is caught too (NaN compares false).

Explicit and symplectic Euler run one fused kernel per step, chosen per system (see
"fast paths" below: a structured-grid sweep for cloths, serial or in parallel bands
with identical results); the implicit ones solve on grids with multigrid-preconditioned
CG (solvers.GridMultigrid). Both give the physics of the plain kernels.

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

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numba import njit, prange

from . import parallel
from .forces import (
    COMPACT_ROWS, GRID_PAD, MIN_LENGTH, edge_colouring, grid_accumulate, grid_implicit_blocks,
    grid_implicit_scratch, grid_layout, grid_load_row, grid_spring_row, padded_edges,
    spring_forces, stiffness_blocks, system_product,
)
from .solvers import NEGATIVE_CURVATURE, GridMultigrid, conjugate_gradient, grid_pcg

parallel.configure()

#: use the structured-grid kernels when the springs form a grid (see forces.grid_layout)
GRID_PATH = True
#: springs from which a system without grid structure runs the edge-coloured kernels
#: (which have a parallel version); smaller ones use the plain serial scatter
COLOURED_MIN_SPRINGS = 20_000
#: springs from which a kernel's parallel version is considered at all
PARALLEL_MIN_SPRINGS = 4_000


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
    grid_shape: (rows, cols) of a grid cloth, optional (the grid kernels infer it otherwise).
    k, c, rest, mass, inv_mass, fixed and gravity are read live at every step.
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
    cg_tolerance: float = 1e-4
    cg_max_iterations: int = 200
    stats: SolverStats = field(default_factory=SolverStats)
    grid_shape: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        n, m = self.x.shape[0], self.spring_a.shape[0]
        dtype = self.x.dtype
        self.force = np.zeros((n, 3), dtype)
        self._implicit_ready = False
        self._n, self._m, self._dtype = n, m, dtype
        self._explicit_path = None
        self._implicit_path = False  # not chosen yet

    def grid(self):
        """The structured-grid layout of the springs (forces.grid_layout), or None."""
        if not hasattr(self, "_grid"):
            self._grid = (grid_layout(self.spring_a, self.spring_b, self._n, self.grid_shape)
                          if GRID_PATH and self._m else None)
        return self._grid

    def implicit_path(self):
        """The multigrid solver of a grid system for the theta-method, or None (then the
        Jacobi-preconditioned CG on the spring list is used)."""
        if self._implicit_path is False:
            layout = self.grid()
            self._implicit_path = None if layout is None else _GridImplicit(self, layout)
        return self._implicit_path

    def explicit_path(self):
        """The kernels the Euler integrators use for this system, chosen on first use:
        a structured-grid sweep, edge-coloured scatter, or the plain scatter."""
        if self._explicit_path is None:
            self._explicit_path = _choose_explicit_path(self)
        return self._explicit_path

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
    bad = 0.0
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
        if speed_sq > max_speed_sq:
            max_speed_sq = speed_sq
        bad += speed_sq * 0.0  # 0, or NaN once any speed is NaN or infinite
    return max_speed_sq if bad == 0.0 else bad


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
    bad = 0.0
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
        if speed_sq > max_speed_sq:
            max_speed_sq = speed_sq
        bad += speed_sq * 0.0  # 0, or NaN once any speed is NaN or infinite
    return max_speed_sq if bad == 0.0 else bad


@njit(cache=True)
def _theta_rhs(f, mass, gravity, stiff_v, fixed, dt, theta, rhs):
    """rhs = dt (f0 + m g) + theta dt^2 K v0, where stiff_v = Ks_graph v0 = -K v0.

    Over the particles of ``fixed`` only: the grid path passes padded arrays whose pad
    rows must stay untouched (zero)."""
    for i in range(fixed.shape[0]):
        for d in range(3):
            if fixed[i]:
                rhs[i, d] = 0.0
            else:
                g = np.float64(gravity[d])
                rhs[i, d] = dt * (f[i, d] + mass[i] * g) - theta * dt * dt * stiff_v[i, d]


@njit(cache=True)
def _theta_update(x, v, dv, fixed, dt, theta, damp_factor):
    """v1 = v0 + dv, x1 = x0 + dt (v0 + theta dv), then drag; returns max |v|^2."""
    max_speed_sq = 0.0
    bad = 0.0
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
        if speed_sq > max_speed_sq:
            max_speed_sq = speed_sq
        bad += speed_sq * 0.0  # 0, or NaN once any speed is NaN or infinite
    return max_speed_sq if bad == 0.0 else bad


# --- fast paths of the Euler integrators ------------------------------------------------
#
# explicit_euler and symplectic_euler run one fused kernel per step (forces, update and
# max speed in one call, no allocation), picked once per system by explicit_path():
#
# - grid: the springs form a structured grid (forces.grid_layout, e.g. every cloth from
#   builders.cloth). The grid is swept row by row; each row of x and v is read once
#   into a small structure-of-arrays window of max_dr + 1 rows, the springs of a row
#   are evaluated on contiguous (SIMD) rows, their forces are added into the window,
#   and a row is integrated and written back as soon as no later spring touches it.
#   State traffic per step is one read and one write of x and v. The parallel version
#   splits the rows into bands, one per thread; the springs that cross a band boundary
#   are evaluated by both neighbouring bands (from a copy of the boundary rows taken
#   before the step), each keeping the half on its side. Every particle's force is
#   summed in the same order for any number of bands, so serial and parallel results
#   are bit-for-bit identical.
# - coloured: large systems without grid structure. Springs are grouped by an edge
#   colouring (no two springs of a colour share a particle) and applied colour by
#   colour, a colour in parallel; the serial version runs the same order.
# - plain: the spring-order scatter (spring_forces) then the update, in one call.
#
# Kernels run in the state's dtype: float32 state is computed in float32 throughout.

_FAST = {"nsz", "contract"}  # no 'nnan'/'ninf': the NaN check on the speed must stay


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath=_FAST | {"reassoc"},
      inline="always")
def _grid_update_row(r, x, v, X, V, F, inv_mass, fixed, gravity, dt, damp, symplectic,
                     cols, window, one, speed_sq, speed_bits):
    """Integrate grid row r from its window slot; returns (max |v|^2, 0 or NaN).

    speed_sq (cols,) is scratch and speed_bits an integer view of it: the largest
    |v|^2 >= 0 is found as the largest bit pattern, an integer maximum that
    vectorises (a float maximum would need the 'nnan' flag). NaN and inf are caught
    by a sum of |v|^2 * 0, which any of them turns into NaN ('reassoc' lets it vectorise).
    """
    s = r % window
    base = r * cols
    g0 = gravity[0]
    g1 = gravity[1]
    g2 = gravity[2]
    zero = one - one
    X0 = X[s, 0]
    X1 = X[s, 1]
    X2 = X[s, 2]
    V0 = V[s, 0]
    V1 = V[s, 1]
    V2 = V[s, 2]
    F0 = F[s, 0]
    F1 = F[s, 1]
    F2 = F[s, 2]
    xr = x[base:base + cols].reshape(-1)  # flat rows: a constant stride of 3
    vr = v[base:base + cols].reshape(-1)
    wr = inv_mass[base:base + cols]
    fr = fixed[base:base + cols]
    bad = zero
    for j in range(cols):
        w = wr[j]
        if symplectic:
            u0 = V0[j] + dt * (F0[j] * w + g0)
            u1 = V1[j] + dt * (F1[j] * w + g1)
            u2 = V2[j] + dt * (F2[j] * w + g2)
            y0 = X0[j] + dt * u0
            y1 = X1[j] + dt * u1
            y2 = X2[j] + dt * u2
        else:
            y0 = X0[j] + dt * V0[j]
            y1 = X1[j] + dt * V1[j]
            y2 = X2[j] + dt * V2[j]
            u0 = V0[j] + dt * (F0[j] * w + g0)
            u1 = V1[j] + dt * (F1[j] * w + g1)
            u2 = V2[j] + dt * (F2[j] * w + g2)
        u0 *= damp
        u1 *= damp
        u2 *= damp
        if fr[j]:
            u0 = zero
            u1 = zero
            u2 = zero
            y0 = X0[j]
            y1 = X1[j]
            y2 = X2[j]
        xr[3 * j] = y0
        xr[3 * j + 1] = y1
        xr[3 * j + 2] = y2
        vr[3 * j] = u0
        vr[3 * j + 1] = u1
        vr[3 * j + 2] = u2
        sq = u0 * u0 + u1 * u1 + u2 * u2
        speed_sq[j] = sq
        bad += sq * zero  # stays 0 unless some speed is NaN or infinite
    top = speed_bits[0]
    for j in range(1, cols):
        top = max(top, speed_bits[j])
    speed_bits[0] = top
    return speed_sq[0], bad


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath=_FAST | {"reassoc"})
def _grid_band(band, r0, r1, x, v, gx, gv, k, c, rest, inv_mass, fixed, gravity, dt, damp,
               tiny, one, symplectic, rows, cols, blocks, max_dr, windows, temps, speeds,
               speed_bits):
    """One Euler step of grid rows [r0, r1) (a band); rows outside it are read from the
    boundary copies gx, gv. Returns (max |v|^2, 0 or NaN) of the band.

    The row kernels are inlined here (one call per band: no per-row call overhead)."""
    window = max_dr + 1
    X = windows[band, 0]
    V = windows[band, 1]
    F = windows[band, 2]
    T = temps[band]
    S = speeds[band]
    Sb = speed_bits[band]
    lo = max(0, r0 - max_dr)
    loaded = lo
    zero = one - one
    max_sq = zero
    bad = zero
    for r in range(lo, r1):
        top = min(rows - 1, r + max_dr)
        while loaded <= top:
            if r0 <= loaded < r1:
                grid_load_row(loaded, x, v, X, V, F, cols, window)
            else:
                grid_load_row(loaded, gx, gv, X, V, F, cols, window)
            loaded += 1
        sa = r % window
        for o in range(blocks.shape[0]):
            rb = r + blocks[o, 0]
            if rb >= rows or rb < r0:
                continue
            dc = blocks[o, 1]
            c0 = blocks[o, 3]
            c1 = blocks[o, 4]
            first = blocks[o, 2] + r * (c1 - c0)
            sb = rb % window
            grid_spring_row(X, V, T, k, c, rest, sa, sb, dc, c0, c1, first, tiny, one)
            if r >= r0:
                grid_accumulate(F, T, sa, 0, c0, c1, 1)
            if rb < r1:
                grid_accumulate(F, T, sb, dc, c0, c1, -1)
        if r >= r0:
            m, b = _grid_update_row(r, x, v, X, V, F, inv_mass, fixed, gravity, dt, damp,
                                    symplectic, cols, window, one, S, Sb)
            max_sq = max(max_sq, m)
            bad += b
    return max_sq, bad


@njit(cache=True, error_model="numpy", boundscheck=False)
def _grid_euler(x, v, k, c, rest, inv_mass, fixed, gravity, dt, damp, tiny, one,
                symplectic, rows, cols, blocks, max_dr, windows, temps, speeds, speed_bits):
    """Serial grid Euler step (one band: all rows); returns max |v|^2 (NaN if not finite)."""
    first = rows - rows  # band 0 from row 0, as plain int64 (no literal specialisation)
    max_sq, bad = _grid_band(first, first, rows, x, v, x, v, k, c, rest, inv_mass, fixed,
                             gravity, dt, damp, tiny, one, symplectic, rows, cols, blocks,
                             max_dr, windows, temps, speeds, speed_bits)
    return max_sq if bad == 0.0 else bad


@njit(cache=True, error_model="numpy", boundscheck=False)
def _copy_rows(src, dst, lo, hi):
    for i in range(lo, hi):
        dst[i, 0] = src[i, 0]
        dst[i, 1] = src[i, 1]
        dst[i, 2] = src[i, 2]


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def _grid_euler_parallel(x, v, gx, gv, k, c, rest, inv_mass, fixed, gravity, dt, damp,
                         tiny, one, symplectic, rows, cols, blocks, max_dr, windows, temps,
                         speeds, speed_bits, bands, results):
    """Parallel grid Euler step: one band of rows per task, bands[t]:bands[t + 1]."""
    nb = bands.shape[0] - 1
    for t in range(1, nb):  # copies of the rows either side of each band boundary
        lo = max(0, bands[t] - max_dr) * cols
        hi = min(rows, bands[t] + max_dr) * cols
        _copy_rows(x, gx, lo, hi)
        _copy_rows(v, gv, lo, hi)
    for t in prange(nb):
        m, b = _grid_band(np.int64(t), bands[t], bands[t + 1], x, v, gx, gv, k, c, rest,
                          inv_mass, fixed, gravity, dt, damp, tiny, one, symplectic, rows,
                          cols, blocks, max_dr, windows, temps, speeds, speed_bits)
        results[t, 0] = m
        results[t, 1] = b
    max_sq = results[0, 0]
    bad = results[0, 1]
    for t in range(1, nb):
        max_sq = max(max_sq, results[t, 0])
        bad += results[t, 1]
    return max_sq if bad == 0.0 else bad


@njit(cache=True)
def _plain_euler(x, v, spring_a, spring_b, rest, k, c, f, inv_mass, fixed, gravity, dt,
                 symplectic, damp_factor):
    """spring_forces then _euler_update, in one call."""
    spring_forces(x, v, spring_a, spring_b, rest, k, c, f)
    return _euler_update(x, v, f, inv_mass, fixed, gravity, dt, symplectic, damp_factor)


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath=_FAST)
def _apply_springs(lo, hi, order, x, v, spring_a, spring_b, rest, k, c, f, tiny, one):
    """Add the forces of springs order[lo:hi] into f (the spring_forces formula)."""
    for e in range(lo, hi):
        s = order[e]
        i = spring_a[s]
        j = spring_b[s]
        dx = x[i, 0] - x[j, 0]
        dy = x[i, 1] - x[j, 1]
        dz = x[i, 2] - x[j, 2]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        if length < tiny:
            continue
        inv = one / length
        nx = dx * inv
        ny = dy * inv
        nz = dz * inv
        rel = (v[i, 0] - v[j, 0]) * nx + (v[i, 1] - v[j, 1]) * ny + (v[i, 2] - v[j, 2]) * nz
        mag = -k[s] * (length - rest[s]) - c[s] * rel
        f[i, 0] += mag * nx
        f[i, 1] += mag * ny
        f[i, 2] += mag * nz
        f[j, 0] -= mag * nx
        f[j, 1] -= mag * ny
        f[j, 2] -= mag * nz


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath=_FAST)
def _update_range(lo, hi, x, v, f, inv_mass, fixed, gravity, dt, symplectic, damp, one):
    """Euler update of particles [lo, hi) from forces f; returns (max |v|^2, 0 or NaN)."""
    zero = one - one
    max_sq = zero
    bad = zero
    g0 = gravity[0]
    g1 = gravity[1]
    g2 = gravity[2]
    for i in range(lo, hi):
        if fixed[i]:
            v[i, 0] = zero
            v[i, 1] = zero
            v[i, 2] = zero
            continue
        w = inv_mass[i]
        if symplectic:
            u0 = v[i, 0] + dt * (f[i, 0] * w + g0)
            u1 = v[i, 1] + dt * (f[i, 1] * w + g1)
            u2 = v[i, 2] + dt * (f[i, 2] * w + g2)
            x[i, 0] += dt * u0
            x[i, 1] += dt * u1
            x[i, 2] += dt * u2
        else:
            u0 = v[i, 0] + dt * (f[i, 0] * w + g0)
            u1 = v[i, 1] + dt * (f[i, 1] * w + g1)
            u2 = v[i, 2] + dt * (f[i, 2] * w + g2)
            x[i, 0] += dt * v[i, 0]
            x[i, 1] += dt * v[i, 1]
            x[i, 2] += dt * v[i, 2]
        u0 *= damp
        u1 *= damp
        u2 *= damp
        v[i, 0] = u0
        v[i, 1] = u1
        v[i, 2] = u2
        sq = u0 * u0 + u1 * u1 + u2 * u2
        max_sq = max(max_sq, sq)
        bad += sq * zero
    return max_sq, bad


@njit(cache=True, error_model="numpy", boundscheck=False)
def _coloured_euler(x, v, spring_a, spring_b, rest, k, c, f, order, starts, inv_mass,
                    fixed, gravity, dt, symplectic, damp, tiny, one, chunks, results):
    """Serial edge-coloured Euler step: the same order of sums as the parallel one."""
    f[:] = 0.0
    _apply_springs(0, order.shape[0], order, x, v, spring_a, spring_b, rest, k, c, f, tiny,
                   one)
    max_sq, bad = _update_range(0, x.shape[0], x, v, f, inv_mass, fixed, gravity, dt,
                                symplectic, damp, one)
    return max_sq if bad == 0.0 else bad


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def _coloured_euler_parallel(x, v, spring_a, spring_b, rest, k, c, f, order, starts,
                             inv_mass, fixed, gravity, dt, symplectic, damp, tiny, one,
                             chunks, results):
    """Parallel edge-coloured Euler step: within a colour no two springs share a particle."""
    n_chunks = chunks.shape[0] - 1
    for t in prange(n_chunks):
        for i in range(chunks[t], chunks[t + 1]):
            f[i, 0] = 0.0
            f[i, 1] = 0.0
            f[i, 2] = 0.0
    for q in range(starts.shape[0] - 1):
        lo = starts[q]
        size = starts[q + 1] - lo
        for t in prange(n_chunks):  # 64 slices of the colour; no particle in two springs
            _apply_springs(lo + size * t // n_chunks, lo + size * (t + 1) // n_chunks, order,
                           x, v, spring_a, spring_b, rest, k, c, f, tiny, one)
    for t in prange(n_chunks):
        m, b = _update_range(chunks[t], chunks[t + 1], x, v, f, inv_mass, fixed, gravity,
                             dt, symplectic, damp, one)
        results[t, 0] = m
        results[t, 1] = b
    max_sq = results[0, 0]
    bad = results[0, 1]
    for t in range(1, n_chunks):
        max_sq = max(max_sq, results[t, 0])
        bad += results[t, 1]
    return max_sq if bad == 0.0 else bad


class _PlainPath:
    """Spring-order scatter and update in one serial kernel (small systems)."""

    kind = "plain"

    def euler(self, d: StepData, dt: float, symplectic: bool) -> float:
        return _plain_euler(d.x, d.v, d.spring_a, d.spring_b, d.rest, d.k, d.c, d.force,
                            d.inv_mass, d.fixed, d.gravity, dt, symplectic,
                            np.exp(-d.drag * dt))


class _ColouredPath:
    """Edge-coloured scatter: serial or parallel, identical results."""

    kind = "coloured"

    def __init__(self, d: StepData, order: np.ndarray, starts: np.ndarray):
        self.order, self.starts = order, starts
        self.colours = starts.shape[0] - 1
        self.chooser = parallel.Chooser()
        self._type = d.x.dtype.type
        n = d.x.shape[0]
        self.chunks = np.linspace(0, n, 65).astype(np.int64)  # fixed: result independent
        self.results = np.zeros((64, 2), d.x.dtype)            # of the thread count

    def euler(self, d: StepData, dt: float, symplectic: bool) -> float:
        t = self._type
        args = (d.x, d.v, d.spring_a, d.spring_b, d.rest, d.k, d.c, d.force, self.order,
                self.starts, d.inv_mass, d.fixed, d.gravity, t(dt), symplectic,
                t(np.exp(-d.drag * dt)), t(MIN_LENGTH), t(1.0), self.chunks, self.results)
        use_parallel = self.chooser.parallel() and parallel.threads() > 1
        start = time.perf_counter()
        if use_parallel:
            result = _coloured_euler_parallel(*args)
        else:
            result = _coloured_euler(*args)
        self.chooser.record(use_parallel, start)
        return float(result)


class _GridPath:
    """Structured-grid sweep: serial, or in bands of rows in parallel, identical results."""

    kind = "grid"

    def __init__(self, d: StepData, layout):
        self.layout = layout
        self.rows, self.cols = layout.rows, layout.cols
        self.blocks = layout.blocks
        self.max_dr = layout.max_dr
        self._type = d.x.dtype.type
        self._dtype = d.x.dtype
        self.chooser = parallel.Chooser()
        self.can_parallel = d.spring_a.shape[0] >= PARALLEL_MIN_SPRINGS and self.rows >= 16
        self._scratch(1)
        self._bands_for = 0
        self.gx = self.gv = None

    def _scratch(self, bands: int) -> None:
        window = self.max_dr + 1
        # rows padded by 64 bytes: with a power-of-two row length (N = 512) every window
        # row would fall into the same two L1 cache sets and evict the others
        width = self.cols + 64 // self._dtype.itemsize
        self.windows = np.zeros((bands, 3, window, 3, width), self._dtype)
        self.temps = np.zeros((bands, 3, width), self._dtype)
        bits = np.int32 if self._dtype == np.float32 else np.int64
        self.speed_bits = np.zeros((bands, self.cols), bits)
        self.speeds = self.speed_bits.view(self._dtype)  # the same memory, as floats
        self.results = np.zeros((bands, 2), self._dtype)

    def _bands(self, threads: int) -> np.ndarray:
        if self._bands_for != threads:
            nb = max(1, min(threads, self.rows // 8))
            self.bands = np.linspace(0, self.rows, nb + 1).round().astype(np.int64)
            if self.windows.shape[0] < nb:
                self._scratch(nb)
            self.results = np.zeros((nb, 2), self._dtype)
            if self.gx is None:
                self.gx = np.zeros((self.rows * self.cols, 3), self._dtype)
                self.gv = np.zeros_like(self.gx)
            self._bands_for = threads
        return self.bands

    def euler(self, d: StepData, dt: float, symplectic: bool) -> float:
        t = self._type
        dt_t, damp, tiny, one = t(dt), t(np.exp(-d.drag * dt)), t(MIN_LENGTH), t(1.0)
        if self.can_parallel:
            use_parallel = self.chooser.parallel()
            threads = parallel.threads() if use_parallel else 1
            if threads > 1:
                bands = self._bands(threads)
                start = time.perf_counter()
                result = _grid_euler_parallel(
                    d.x, d.v, self.gx, self.gv, d.k, d.c, d.rest, d.inv_mass, d.fixed,
                    d.gravity, dt_t, damp, tiny, one, symplectic, self.rows, self.cols,
                    self.blocks, self.max_dr, self.windows, self.temps, self.speeds,
                    self.speed_bits, bands, self.results)
                self.chooser.record(True, start)
                return float(result)
            start = time.perf_counter()
            result = _grid_euler(d.x, d.v, d.k, d.c, d.rest, d.inv_mass, d.fixed, d.gravity,
                                 dt_t, damp, tiny, one, symplectic, self.rows, self.cols,
                                 self.blocks, self.max_dr, self.windows, self.temps,
                                 self.speeds, self.speed_bits)
            self.chooser.record(False, start)
            return float(result)
        return float(_grid_euler(d.x, d.v, d.k, d.c, d.rest, d.inv_mass, d.fixed, d.gravity,
                                 dt_t, damp, tiny, one, symplectic, self.rows, self.cols,
                                 self.blocks, self.max_dr, self.windows, self.temps,
                                 self.speeds, self.speed_bits))


def _choose_explicit_path(d: StepData):
    n, m = d.x.shape[0], d.spring_a.shape[0]
    layout = d.grid()
    if layout is not None:
        return _GridPath(d, layout)
    if m >= COLOURED_MIN_SPRINGS:
        colouring = edge_colouring(d.spring_a, d.spring_b, n)
        if colouring is not None:
            return _ColouredPath(d, *colouring)
    return _PlainPath()


# --- the theta-method on structured grids ---------------------------------------------------


class _GridImplicit:
    """The theta-method of a grid system: the same linear system as _theta_method (exact
    Jacobian first, clamped on non-positive curvature), solved in float64 by CG with the
    multigrid preconditioner of solvers.GridMultigrid; blocks in the padded edge layout."""

    kind = "grid-multigrid"

    def __init__(self, d: StepData, layout):
        rows, cols = layout.rows, layout.cols
        offsets = [(int(b[0]), int(b[1])) for b in layout.blocks]
        self.pblocks = padded_edges(rows, cols, offsets)
        self.cols = cols
        self.gblocks = layout.blocks
        # the kernel's work arrays, among them k, c, rest per edge slot (refreshed inside
        # whenever the live d.k, d.c, d.rest differ from the copy it keeps)
        self.scratch = grid_implicit_scratch(layout, self.pblocks)
        self.mg = GridMultigrid(rows, cols, offsets, workspaces=2)
        edges = int(self.pblocks[:, 1].sum())
        n = rows * cols
        # rows padded by GRID_PAD so that no two rows are a multiple of 4 KiB apart.
        # The operator's blocks are kept in the simulation's precision: a float32 system's
        # Jacobian is no more exact than float32 anyway, and float32 blocks halve the
        # memory traffic of CG's product (which still multiplies and sums in float64)
        op_dtype = np.float32 if d.x.dtype == np.float32 else np.float64
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
        # and stopped when the exact one converges. Measured on the stiff 64 x 64 cloth:
        # steps that fall back ~30% faster, the others ~9% slower (the two solves share
        # the memory system). The chooser compares mean times per iteration (the mix of
        # both kinds of step decides; they come in runs, so the two ways are timed
        # alternately) with one-after-the-other; the results are the same.
        self.chooser = (parallel.Chooser(probe=10, statistic="mean", interleave=True)
                        if parallel.threads() > 1 else None)
        self.concurrent_steps = 0  # steps that ran both attempts at once
        self.pending = None  # a clamped attempt told to stop, maybe still running

    def finish(self) -> None:
        """Wait for a clamped attempt that was told to stop (it uses the operators)."""
        if self.pending is not None:
            self.pending.result()
            self.pending = None

    def step(self, d: StepData, dt: float, theta: float) -> float:
        alpha = theta * theta * dt * dt
        beta = theta * dt
        grid_implicit_blocks(d.x, d.v, d.k, d.c, d.rest, self.cols, self.gblocks, self.pblocks,
                             alpha, beta, *self.scratch, self.force, self.kv,
                             self.kv_clamped, self.b_exact, self.b_clamped)
        self.op_diag[:3, :d.mass.shape[0]] = d.mass
        self.finish()  # a stopped clamped attempt of the last step still reads the operators
        self.mg.setup(d.mass, d.fixed, self.b_clamped)
        stats = d.stats
        mg = self.mg.arrays()
        edges = (self.b_exact, self.b_clamped)
        for k, kv in enumerate((self.kv, self.kv_clamped)):
            # the grid arrays are (3, n) structure-of-arrays: the shared kernels take .T views
            _theta_rhs(self.force.T, d.mass, d.gravity, kv.T, d.fixed, dt, theta,
                       self.rhs[k].T)
        both = self.chooser is not None and self.chooser.parallel()
        self.stop[0] = 0

        def solve(k):
            return grid_pcg(self.rhs[k], self.op_diag, edges[k], self.pblocks, d.fixed,
                            self.vectors[k], d.cg_tolerance, d.cg_max_iterations,
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
        stats.iterations = iterations
        stats.residual = residual
        stats.converged = residual <= d.cg_tolerance
        stats.implicit_steps += 1
        dv = self.vectors[used][0]
        return _theta_update(d.x, d.v, dv.T, d.fixed, dt, theta, np.exp(-d.drag * dt))


# --- integrators ---------------------------------------------------------------------


def _compute_forces(d: StepData) -> None:
    spring_forces(d.x, d.v, d.spring_a, d.spring_b, d.rest, d.k, d.c, d.force)


def explicit_euler(d: StepData, dt: float) -> float:
    return d.explicit_path().euler(d, dt, False)


def symplectic_euler(d: StepData, dt: float) -> float:
    return d.explicit_path().euler(d, dt, True)


def verlet(d: StepData, dt: float) -> float:
    _compute_forces(d)
    _verlet_first_half(d.x, d.v, d.force, d.inv_mass, d.fixed, d.gravity, dt)
    _compute_forces(d)  # at x1, with the half-step velocity for the dampers
    return _verlet_second_half(
        d.v, d.force, d.inv_mass, d.fixed, d.gravity, dt, np.exp(-d.drag * dt)
    )


def _theta_method(d: StepData, dt: float, theta: float) -> float:
    grid = d.implicit_path()
    if grid is not None:
        return grid.step(d, dt, theta)
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
    unconditionally_stable: bool  # stable at any dt (no explicit stability limit)
    description: str
    has_solver_stats: bool = False  # fills SolverStats (the panel shows them)


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
                   "theta = 1/2, CG solve: nearly conserves energy, large dt", True),
        Integrator("backward_euler", backward_euler, True,
                   "theta = 1, CG solve: damps, stable at any dt", True),
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
