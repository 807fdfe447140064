"""The fused Euler sweeps: forces, update and max speed in one kernel per step.

explicit_euler and symplectic_euler run one fused kernel per step (forces, update and
max speed in one call, no allocation), picked once per system by the Euler integrators
(integrators/euler.py):

- grid: the springs form a structured grid (kernels.grid.grid_layout, e.g. every cloth
  from builders.cloth). The grid is swept row by row; each row of x and v is read once
  into a small structure-of-arrays window of max_dr + 1 rows, the springs of a row
  are evaluated on contiguous (SIMD) rows, their forces are added into the window,
  and a row is integrated and written back as soon as no later spring touches it.
  State traffic per step is one read and one write of x and v. The parallel version
  splits the rows into bands, one per thread; the springs that cross a band boundary
  are evaluated by both neighbouring bands (from a copy of the boundary rows taken
  before the step), each keeping the half on its side. Every particle's force is
  summed in the same order for any number of bands, so serial and parallel results
  are bit-for-bit identical.
- coloured: large systems without grid structure. Springs are grouped by an edge
  colouring (no two springs of a colour share a particle) and applied colour by
  colour, a colour in parallel; the serial version runs the same order.
- plain: the spring-order scatter (spring_forces) then the update, in one call.

Kernels run in the state's dtype: float32 state is computed in float32 throughout.

Attached forces (Simulation.add_force) come in as one array ``external`` (n, 3), N,
with ``has_external``: each kernel starts its force sum from it instead of from zero,
so with the default force list (has_external false) nothing else changes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..forces.springs import add_spring_forces
from .grid import grid_accumulate, grid_load_row, grid_spring_row
from .particles import (
    add_pair, hold_tracked, spring_magnitude, spring_vector, speed_result, track_speed,
)

_FAST = {"nsz", "contract"}  # no 'nnan'/'ninf': the NaN check on the speed must stay


# The kernels called from Python take their arrays one by one: a numba call types every
# argument, and a namedtuple argument costs about 1 us more to type than its arrays (a
# few percent of a 64 x 64 cloth step). Inside, the sweep's arguments travel as the
# bundles below (made in numba, at no cost).


class SweepParams(NamedTuple):
    """The parameters the particle update and the springs read (state.Params' arrays):
    stiffness (m,) N/m, damping (m,) N*s/m, rest_lengths (m,) m, inv_mass (n,) 1/kg,
    fixed (n,) uint8, gravity (3,) m/s^2."""

    stiffness: np.ndarray
    damping: np.ndarray
    rest_lengths: np.ndarray
    inv_mass: np.ndarray
    fixed: np.ndarray
    gravity: np.ndarray


class StepScalars(NamedTuple):
    """The scalars of one Euler step, in the state's dtype: dt (s), damp = exp(-drag dt),
    tiny = MIN_LENGTH (m), one = 1; symplectic (bool): symplectic or explicit Euler."""

    dt: float
    damp: float
    tiny: float
    one: float
    symplectic: bool


class GridSweep(NamedTuple):
    """Layout and scratch of the grid sweep (made by integrators.euler.GridPath): rows,
    cols, blocks (GridLayout.blocks), max_dr, and per band the row windows (bands, 3,
    max_dr + 1, 3, width), temps (bands, 3, width), speeds and their integer view
    speed_bits (bands, cols)."""

    rows: int
    cols: int
    blocks: np.ndarray
    max_dr: int
    windows: np.ndarray
    temps: np.ndarray
    speeds: np.ndarray
    speed_bits: np.ndarray



#: euler_update modes: x += dt v before the kick, after it, or not at all
EXPLICIT, SYMPLECTIC, KICK = 0, 1, 2


@njit(cache=True)
def euler_update(x, v, f, inv_mass, fixed, gravity, dt, mode, damp_factor):
    """v += dt a with a = f / m + g, then v *= damp_factor, on the free particles; x moves
    by dt v before the kick (mode EXPLICIT: explicit Euler), after it (SYMPLECTIC) or not
    (KICK: Verlet's second half kick). Fixed particles get v = 0. Returns max |v|^2."""
    max_speed_sq, bad = 0.0, 0.0  # see particles.track_speed
    for i in range(x.shape[0]):
        if fixed[i]:
            bad = hold_tracked(x, v, i, bad, 0.0)
            continue
        w = inv_mass[i]
        for d in range(3):
            accel = f[i, d] * w + gravity[d]
            if mode == KICK:  # one rounding to the state's dtype
                v[i, d] = (v[i, d] + dt * accel) * damp_factor
                continue
            if mode == EXPLICIT:
                x[i, d] += dt * v[i, d]
            v[i, d] += dt * accel
            if mode == SYMPLECTIC:
                x[i, d] += dt * v[i, d]
            v[i, d] *= damp_factor
        max_speed_sq, bad = track_speed(x, v, i, max_speed_sq, bad, 0.0)
    return speed_result(max_speed_sq, bad)


@njit(cache=True, inline="always")
def _combine(results, count):
    """The step's max |v|^2 (or NaN) from the (max |v|^2, NaN check) of count parts."""
    max_sq = results[0, 0]
    bad = results[0, 1]
    for t in range(1, count):
        max_sq = max(max_sq, results[t, 0])
        bad += results[t, 1]
    return speed_result(max_sq, bad)


@njit(cache=True, inline="always")
def start_forces(f, external, has_external, lo, hi):
    """f[lo:hi] = external[lo:hi] (the attached forces) or 0: where a force sum starts."""
    for i in range(lo, hi):
        for d in range(3):
            f[i, d] = external[i, d] if has_external else 0.0


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
    X0, X1, X2 = X[s, 0], X[s, 1], X[s, 2]
    V0, V1, V2 = V[s, 0], V[s, 1], V[s, 2]
    F0, F1, F2 = F[s, 0], F[s, 1], F[s, 2]
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
        bad += (sq + y0 + y1 + y2) * zero  # 0 unless a speed or position is NaN or inf
    top = speed_bits[0]
    for j in range(1, cols):
        top = max(top, speed_bits[j])
    speed_bits[0] = top
    return speed_sq[0], bad


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath=_FAST | {"reassoc"})
def _grid_band(band, r0, r1, x, v, gx, gv, params, step, grid, external, has_external):
    """One Euler step of grid rows [r0, r1) (a band); rows outside it are read from the
    boundary copies gx, gv. params: SweepParams, step: StepScalars, grid: GridSweep.
    Returns (max |v|^2, 0 or NaN) of the band.

    The row kernels are inlined here (one call per band: no per-row call overhead)."""
    k, c, rest = params.stiffness, params.damping, params.rest_lengths
    inv_mass, fixed, gravity = params.inv_mass, params.fixed, params.gravity
    dt, damp, tiny, one, symplectic = step
    rows, cols, blocks, max_dr = grid.rows, grid.cols, grid.blocks, grid.max_dr
    window = max_dr + 1
    X = grid.windows[band, 0]
    V = grid.windows[band, 1]
    F = grid.windows[band, 2]
    T = grid.temps[band]
    S = grid.speeds[band]
    Sb = grid.speed_bits[band]
    lo = max(0, r0 - max_dr)
    loaded = lo
    zero = one - one
    max_sq = zero
    bad = zero
    for r in range(lo, r1):
        top = min(rows - 1, r + max_dr)
        while loaded <= top:
            if r0 <= loaded < r1:
                grid_load_row(loaded, x, v, X, V, F, cols, window, external, has_external)
            else:
                grid_load_row(loaded, gx, gv, X, V, F, cols, window, external, has_external)
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
def grid_euler(x, v, k, c, rest, inv_mass, fixed, gravity, dt, damp, tiny, one,
               symplectic, rows, cols, blocks, max_dr, windows, temps, speeds, speed_bits,
               external, has_external):
    """Serial grid Euler step (one band: all rows); returns max |v|^2 (NaN if not finite).
    The arguments are the fields of SweepParams, StepScalars and GridSweep, then
    external (n, 3) N: the attached forces, used when has_external."""
    params = SweepParams(k, c, rest, inv_mass, fixed, gravity)
    step = StepScalars(dt, damp, tiny, one, symplectic)
    grid = GridSweep(rows, cols, blocks, max_dr, windows, temps, speeds, speed_bits)
    first = rows - rows  # band 0 from row 0, as plain int64 (no literal specialisation)
    max_sq, bad = _grid_band(first, first, rows, x, v, x, v, params, step, grid, external,
                             has_external)
    return speed_result(max_sq, bad)


@njit(cache=True, error_model="numpy", boundscheck=False)
def _copy_rows(src, dst, lo, hi):
    for i in range(lo, hi):
        dst[i, 0] = src[i, 0]
        dst[i, 1] = src[i, 1]
        dst[i, 2] = src[i, 2]


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def grid_euler_parallel(x, v, gx, gv, k, c, rest, inv_mass, fixed, gravity, dt, damp,
                        tiny, one, symplectic, rows, cols, blocks, max_dr, windows, temps,
                        speeds, speed_bits, external, has_external, bands, results):
    """Parallel grid Euler step: one band of rows per task, bands[t]:bands[t + 1]; gx, gv:
    copies of the boundary rows; the other arguments as grid_euler's."""
    params = SweepParams(k, c, rest, inv_mass, fixed, gravity)
    step = StepScalars(dt, damp, tiny, one, symplectic)
    grid = GridSweep(rows, cols, blocks, max_dr, windows, temps, speeds, speed_bits)
    nb = bands.shape[0] - 1
    for t in range(1, nb):  # copies of the rows either side of each band boundary
        lo = max(0, bands[t] - max_dr) * cols
        hi = min(rows, bands[t] + max_dr) * cols
        _copy_rows(x, gx, lo, hi)
        _copy_rows(v, gv, lo, hi)
    for t in prange(nb):
        m, b = _grid_band(np.int64(t), bands[t], bands[t + 1], x, v, gx, gv, params, step,
                          grid, external, has_external)
        results[t, 0] = m
        results[t, 1] = b
    return _combine(results, nb)


@njit(cache=True)
def plain_euler(x, v, spring_a, spring_b, rest, k, c, f, inv_mass, fixed, gravity, dt,
                symplectic, damp_factor, external, has_external):
    """The spring forces (in spring order) then euler_update, in one call."""
    start_forces(f, external, has_external, 0, f.shape[0])
    add_spring_forces(x, v, spring_a, spring_b, rest, k, c, f)
    mode = SYMPLECTIC if symplectic else EXPLICIT
    return euler_update(x, v, f, inv_mass, fixed, gravity, dt, mode, damp_factor)


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath=_FAST)
def _apply_springs(lo, hi, order, x, v, spring_a, spring_b, rest, k, c, f, tiny, one):
    """Add the forces of springs order[lo:hi] into f (the spring_forces formula)."""
    for e in range(lo, hi):
        s = order[e]
        i = spring_a[s]
        j = spring_b[s]
        dx, dy, dz, length = spring_vector(x, i, j)
        if length < tiny:
            continue
        inv = one / length
        nx = dx * inv
        ny = dy * inv
        nz = dz * inv
        mag = spring_magnitude(v, i, j, nx, ny, nz, length, k[s], c[s], rest[s])
        add_pair(f, i, j, mag * nx, mag * ny, mag * nz)


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
            bad = hold_tracked(x, v, i, bad, zero)
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
        max_sq, bad = track_speed(x, v, i, max_sq, bad, zero)
    return max_sq, bad


@njit(cache=True, error_model="numpy", boundscheck=False)
def coloured_euler(x, v, spring_a, spring_b, rest, k, c, f, order, starts, inv_mass,
                   fixed, gravity, dt, symplectic, damp, tiny, one, chunks, results, external,
                   has_external):
    """Serial edge-coloured Euler step: the same order of sums as the parallel one.
    f (n, 3) scratch; springs order[starts[q]:starts[q + 1]] form colour q; chunks,
    results: the parallel version's particle split (see StepScalars for the scalars)."""
    start_forces(f, external, has_external, 0, f.shape[0])
    _apply_springs(0, order.shape[0], order, x, v, spring_a, spring_b, rest, k, c, f, tiny,
                   one)
    max_sq, bad = _update_range(0, x.shape[0], x, v, f, inv_mass, fixed, gravity, dt,
                                symplectic, damp, one)
    return speed_result(max_sq, bad)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def coloured_euler_parallel(x, v, spring_a, spring_b, rest, k, c, f, order, starts,
                            inv_mass, fixed, gravity, dt, symplectic, damp, tiny, one,
                            chunks, results, external, has_external):
    """Parallel edge-coloured Euler step: within a colour no two springs share a particle.
    The arguments as coloured_euler's."""
    n_chunks = chunks.shape[0] - 1
    for t in prange(n_chunks):
        start_forces(f, external, has_external, chunks[t], chunks[t + 1])
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
    return _combine(results, n_chunks)


