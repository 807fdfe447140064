"""XPBD kernels (integrators/xpbd.py): the per-particle and per-spring pieces that the
spring-list path and the structured-grid path share, the grid's edge colouring, and
the grid path's step kernels (one numba call per step, every substep and every colour
inside it, no index arrays). The grid path works on structure-of-arrays copies of x,
v and the substep's start positions ((3, n): one contiguous row per axis), so that the
springs of one grid row and colour are projected by one loop over contiguous (or
strided) views, each spring's dlambda and its moves together (no two springs of a colour
share a particle, so the order within a row does not change a bit; a loop of dlambdas
into a scratch row and two loops of moves after it measured 1.4x slower).

Edge colouring of a grid (kernels.grid.GridLayout): the springs of one block (one
neighbour offset (dr, dc)) split into two colours by parity, (r // dr) % 2 for dr > 0
and (c // dc) % 2 for dr = 0: two springs of a block share a particle only when their
first ends are (dr, dc) apart, and those differ in that parity. Six cloth blocks give
12 colours, block by block, parity 0 then 1. The spring-list path uses the same colours
on a grid system (``grid_edge_colouring``), and since springs of one colour share no
particle, the two paths give identical results: only the order of the colours matters
(both use the one arithmetic of ``xpbd_dlambda``, without fastmath, so a vectorised and
a scalar evaluation round alike; tests/test_grid_solvers.py compares them bit for bit).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .grid import GridLayout
from .particles import MIN_LENGTH, hold, speed_result, track_speed
from .tethers import tether

def grid_edge_colouring(layout: GridLayout) -> tuple[np.ndarray, np.ndarray]:
    """(order, starts), int64, like colouring.edge_colouring: springs
    order[starts[q]:starts[q + 1]] form colour q; colours 2 b + p are block b's springs
    of parity p (module docstring), each in row-major order."""
    rows = layout.rows
    order, starts = [], [0]
    for dr, dc, first, c0, c1 in layout.blocks:
        r, c = np.divmod(np.arange((rows - dr) * (c1 - c0)), c1 - c0)
        c = c + c0
        parity = (r // dr) % 2 if dr > 0 else (c // dc) % 2
        for p in range(2):
            order.append(first + np.flatnonzero(parity == p))
            starts.append(starts[-1] + order[-1].shape[0])
    return np.concatenate(order).astype(np.int64), np.array(starts, np.int64)


def projection_scales(h: float, compliance: float) -> tuple[float, float, float, bool]:
    """(per_k, per_spring, per_c, rigid): a spring's h^2 / alpha = per_k k + per_spring
    and its damping term h gamma / alpha = per_c c (compliance < 0: each spring's
    alpha = 1/k with its damper; > 0: that alpha, m/N, undamped; 0: rigid)."""
    if compliance < 0.0:
        return h * h, 0.0, h, False
    if compliance == 0.0:
        return 0.0, 0.0, 0.0, True
    return 0.0, h * h / compliance, 0.0, False


@njit(cache=True, error_model="numpy", boundscheck=False)
def weights(inv_mass, fixed, w):
    """w = 1/m for free particles, 0 for fixed ones, 1/kg (the projection's weights)."""
    for i in range(w.shape[0]):
        w[i] = 0.0 if fixed[i] else inv_mass[i]


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def xpbd_dlambda(xi0, xi1, xi2, xj0, xj1, xj2, pi0, pi1, pi2, pj0, pj1, pj2, wsum, rest,
                 k, c, lam, per_k, per_spring, per_c, rigid, relaxation):
    """(dlambda, n) of one XPBD projection of a spring from x_j to x_i (substep start
    positions p), in the stiffness form (times h^2 / alpha, the scales of
    projection_scales): dlambda = omega N / D with N = -(h^2/alpha C + h gamma/alpha
    n . (dx_i - dx_j) + lambda), D = 1 + (h^2/alpha + h gamma/alpha) (w_i + w_j) and the
    over-relaxation omega = min(relaxation, D) (so a soft spring, D < relaxation, takes
    its whole spring impulse N and no more); rigid: relaxation (-C) / (w_i + w_j).
    0 between two fixed particles, for a spring without direction and for a broken one
    (k = 0, whatever the compliance). Branch free: an early return kept numba from
    compiling the loops around it well."""
    dx = xi0 - xj0
    dy = xi1 - xj1
    dz = xi2 - xj2
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    moves = wsum > 0.0 and length >= MIN_LENGTH and k > 0.0  # k = 0: broken, no force
    inv = 1.0 / length if moves else 0.0
    nx = dx * inv
    ny = dy * inv
    nz = dz * inv
    C = length - rest
    stiff = per_k * k + per_spring
    damp = per_c * c
    moved = nx * (xi0 - pi0 - xj0 + pj0) + ny * (xi1 - pi1 - xj1 + pj1) + nz * (
        xi2 - pi2 - xj2 + pj2)
    numerator = -C if rigid else -(stiff * C + damp * moved + lam)
    denominator = wsum if rigid else 1.0 + (stiff + damp) * wsum
    # omega / D apart from the positions: the division leaves the chain of dependent
    # operations (measured 6-9 % faster)
    scale = (relaxation if rigid else min(relaxation, denominator)) / denominator
    return (numerator * scale if moves else 0.0), nx, ny, nz


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def project_spring(x, x_prev, w, lam, i, j, s, rest, k, c, per_k, per_spring, per_c,
                   rigid, relaxation):
    """One XPBD projection of spring s = (i, j) on (n, 3) positions (the list path)."""
    wi = w[i]
    wj = w[j]
    dlam, nx, ny, nz = xpbd_dlambda(x[i, 0], x[i, 1], x[i, 2], x[j, 0], x[j, 1], x[j, 2],
                                    x_prev[i, 0], x_prev[i, 1], x_prev[i, 2], x_prev[j, 0],
                                    x_prev[j, 1], x_prev[j, 2], wi + wj, rest[s], k[s],
                                    c[s], lam[s], per_k, per_spring, per_c, rigid,
                                    relaxation)
    lam[s] += dlam
    tx = dlam * nx
    ty = dlam * ny
    tz = dlam * nz
    x[i, 0] += wi * tx
    x[i, 1] += wi * ty
    x[i, 2] += wi * tz
    x[j, 0] -= wj * tx
    x[j, 1] -= wj * ty
    x[j, 2] -= wj * tz


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def predict(x, v, x_prev, w, gravity, external, has_external, h, lo, hi):
    """x_prev = x; v += h (g + w f_ext); x += h v for free particles [lo, hi); (n, 3)
    arrays (the list path)."""
    for i in range(lo, hi):
        for d in range(3):
            x_prev[i, d] = x[i, d]
        if w[i] == 0.0:
            continue
        for d in range(3):
            a = gravity[d] + (w[i] * external[i, d] if has_external else 0.0)
            v[i, d] += h * a
            x[i, d] += h * v[i, d]


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def finish(x, v, x_prev, w, h, damp, lo, hi):
    """v = (x - x_prev) / h, then drag, for particles [lo, hi); (max |v|^2, check sum);
    (n, 3) arrays (the list path).

    Written as v + (x - x_predicted) / h, x_predicted recomputed as predict made it (the
    same bits): a particle no constraint moved keeps its velocity exactly, where
    (x - x_prev) / h would lose digits of x at every substep."""
    max_sq, bad = 0.0, 0.0
    for i in range(lo, hi):
        if w[i] == 0.0:
            hold(v, i, 0.0)
            continue
        for d in range(3):
            predicted = x_prev[i, d] + h * v[i, d]
            v[i, d] = (v[i, d] + (x[i, d] - predicted) / h) * damp
        max_sq, bad = track_speed(x, v, i, max_sq, bad, 0.0)
    return max_sq, bad


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def predict_soa(X, V, P, w, gravity, external, has_external, h, lo, hi):
    """predict on (3, n) arrays X, V, P (x_prev), particles [lo, hi) (the same bits)."""
    for d in range(3):
        Xd, Vd, Pd, g = X[d], V[d], P[d], gravity[d]
        for i in range(lo, hi):
            Pd[i] = Xd[i]
            if w[i] != 0.0:
                a = g + (w[i] * external[i, d] if has_external else 0.0)
                Vd[i] += h * a
                Xd[i] += h * Vd[i]


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def finish_soa(X, V, P, w, h, damp, lo, hi):
    """finish's velocities on (3, n) arrays, particles [lo, hi) (the same bits)."""
    for d in range(3):
        Xd, Vd, Pd = X[d], V[d], P[d]
        for i in range(lo, hi):
            predicted = Pd[i] + h * Vd[i]
            Vd[i] = (Vd[i] + (Xd[i] - predicted) / h) * damp if w[i] != 0.0 else 0.0


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def project_run(X, P, w, lam, rest, k, c, per_k, per_spring, per_c, rigid, relaxation,
                i0, j_off, s0, stride, count):
    """Project ``count`` springs of one colour on (3, n) arrays: spring e joins
    i = i0 + stride e to i + j_off and has index s0 + stride e, on slices (views: no
    copies)."""
    if stride == 1:  # contiguous views (the rows of dr > 0 blocks)
        i_end, s_end = i0 + count, s0 + count
        _project_views(X[0, i0:i_end], X[1, i0:i_end], X[2, i0:i_end],
                       X[0, i0 + j_off:i_end + j_off], X[1, i0 + j_off:i_end + j_off],
                       X[2, i0 + j_off:i_end + j_off], P[0, i0:i_end], P[1, i0:i_end],
                       P[2, i0:i_end], P[0, i0 + j_off:i_end + j_off],
                       P[1, i0 + j_off:i_end + j_off], P[2, i0 + j_off:i_end + j_off],
                       w[i0:i_end], w[i0 + j_off:i_end + j_off], lam[s0:s_end],
                       rest[s0:s_end], k[s0:s_end], c[s0:s_end], per_k,
                       per_spring, per_c, rigid, relaxation, count)
    else:  # strided views (the column parities of dr = 0 blocks)
        i_end, s_end = i0 + stride * (count - 1) + 1, s0 + stride * (count - 1) + 1
        j0, j_end = i0 + j_off, i_end + j_off
        _project_views(X[0, i0:i_end:stride], X[1, i0:i_end:stride],
                       X[2, i0:i_end:stride], X[0, j0:j_end:stride], X[1, j0:j_end:stride],
                       X[2, j0:j_end:stride], P[0, i0:i_end:stride], P[1, i0:i_end:stride],
                       P[2, i0:i_end:stride], P[0, j0:j_end:stride], P[1, j0:j_end:stride],
                       P[2, j0:j_end:stride], w[i0:i_end:stride], w[j0:j_end:stride],
                       lam[s0:s_end:stride], rest[s0:s_end:stride], k[s0:s_end:stride],
                       c[s0:s_end:stride], per_k, per_spring, per_c,
                       rigid, relaxation, count)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _project_views(Xi0, Xi1, Xi2, Xj0, Xj1, Xj2, Pi0, Pi1, Pi2, Pj0, Pj1, Pj2, wi, wj, lam,
                   rest, k, c, per_k, per_spring, per_c, rigid, relaxation,
                   count):
    """project_run on views: spring e joins particle e of the i views to particle e of
    the j views."""
    for e in range(count):
        dlam, nx, ny, nz = xpbd_dlambda(Xi0[e], Xi1[e], Xi2[e], Xj0[e], Xj1[e], Xj2[e],
                                        Pi0[e], Pi1[e], Pi2[e], Pj0[e], Pj1[e], Pj2[e],
                                        wi[e] + wj[e], rest[e], k[e], c[e], lam[e], per_k,
                                        per_spring, per_c, rigid, relaxation)
        lam[e] += dlam
        tx = dlam * nx
        ty = dlam * ny
        tz = dlam * nz
        Xi0[e] += wi[e] * tx
        Xi1[e] += wi[e] * ty
        Xi2[e] += wi[e] * tz
        Xj0[e] -= wj[e] * tx
        Xj1[e] -= wj[e] * ty
        Xj2[e] -= wj[e] * tz


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def project_grid_row(X, P, w, lam, rest, k, c, per_k, per_spring, per_c, rigid,
                     relaxation, cols, r, dr, dc, first, c0, c1, parity):
    """Project grid row r of block (dr, dc, first, c0, c1): for dr > 0 all its springs
    (the caller picks the rows of a parity), for dr = 0 those of column parity
    ``parity``, dc runs with a stride of 2 dc."""
    width = c1 - c0
    if dr > 0:
        project_run(X, P, w, lam, rest, k, c, per_k, per_spring, per_c, rigid,
                    relaxation, r * cols + c0, dr * cols + dc, first + r * width, 1, width)
    else:
        for t in range(dc):
            start = c0 + parity * dc + t
            if start < c1:
                count = (c1 - start + 2 * dc - 1) // (2 * dc)
                project_run(X, P, w, lam, rest, k, c, per_k, per_spring, per_c, rigid,
                            relaxation, r * cols + start, dc,
                            first + r * width + start - c0, 2 * dc, count)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def to_soa(x, X):
    """X[d, i] = x[i, d]."""
    for d in range(3):
        for i in range(x.shape[0]):
            X[d, i] = x[i, d]


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def from_soa(X, x):
    """x[i, d] = X[d, i]."""
    for i in range(x.shape[0]):
        for d in range(3):
            x[i, d] = X[d, i]


@njit(cache=True, error_model="numpy", boundscheck=False)
def grid_result(x, v, w):
    """The step's max |v|^2 over the free particles, NaN if any speed or position is
    not finite (as finish reports it)."""
    max_sq, bad = 0.0, 0.0
    for i in range(x.shape[0]):
        if w[i] != 0.0:
            max_sq, bad = track_speed(x, v, i, max_sq, bad, 0.0)
    return speed_result(max_sq, bad)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _grid_substeps(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity, external,
                   has_external, h, substeps, iterations, per_k, per_spring, per_c, rigid,
                   relaxation, damp, anchor, reach, cols, blocks, X, V, P):
    """The body of both grid step kernels: prange runs the rows of a colour (and of the
    prediction and the velocities) in parallel in xpbd_grid_step_parallel and in order
    in xpbd_grid_step, with the same arithmetic, so both give the same bits."""
    n = x.shape[0]
    rows = n // cols
    weights(inv_mass, fixed, w)
    to_soa(x, X)
    to_soa(v, V)
    for _ in range(substeps):
        for r in prange(rows):
            predict_soa(X, V, P, w, gravity, external, has_external, h, r * cols,
                        (r + 1) * cols)
        lam[:] = 0.0
        for _ in range(iterations):
            for b in range(blocks.shape[0]):
                dr, dc, first, c0, c1 = (blocks[b, 0], blocks[b, 1], blocks[b, 2],
                                         blocks[b, 3], blocks[b, 4])
                for parity in range(2):
                    for r in prange(rows - dr):  # a colour: no two springs share a particle
                        if dr == 0 or (r // dr) % 2 == parity:
                            project_grid_row(X, P, w, lam, rest, k, c, per_k,
                                             per_spring, per_c, rigid, relaxation, cols, r,
                                             dr, dc, first, c0, c1, parity)
        if anchor.shape[0] > 0:  # the tethers after the springs (kernels/tethers.py)
            for r in prange(rows):
                tether(X, w, anchor, reach, r * cols, (r + 1) * cols)
        for r in prange(rows):
            finish_soa(X, V, P, w, h, damp, r * cols, (r + 1) * cols)
    from_soa(X, x)
    from_soa(V, v)
    from_soa(P, x_prev)
    return grid_result(x, v, w)


@njit(cache=True, error_model="numpy", boundscheck=False)
def xpbd_grid_step(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity, external,
                   has_external, h, substeps, iterations, per_k, per_spring, per_c, rigid,
                   relaxation, damp, anchor, reach, cols, blocks, X, V, P):
    """``substeps`` XPBD substeps of h s on a grid (serial), on the (3, n) scratch X, V,
    P; x_prev gets the last substep's start.
    Returns the max |v|^2 (NaN if not finite)."""
    return _grid_substeps(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity,
                          external, has_external, h, substeps, iterations, per_k,
                          per_spring, per_c, rigid, relaxation, damp, anchor, reach,
                          cols, blocks, X, V, P)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def xpbd_grid_step_parallel(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity,
                            external, has_external, h, substeps, iterations, per_k,
                            per_spring, per_c, rigid, relaxation, damp, anchor, reach,
                            cols, blocks, X, V, P):
    """xpbd_grid_step with the rows of each colour in parallel (identical results)."""
    return _grid_substeps(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity,
                          external, has_external, h, substeps, iterations, per_k,
                          per_spring, per_c, rigid, relaxation, damp, anchor, reach,
                          cols, blocks, X, V, P)
