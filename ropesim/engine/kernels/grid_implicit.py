"""Implicit operators on structured grids: the theta-method's spring pass
(grid_implicit_blocks) and the product with the grid operator (grid_apply).

The implicit integrators' matrix A = M + alpha Ks_graph + beta C_graph is, on a grid,
a sum over neighbour offsets of 3 x 3 blocks per edge. The grid versions store one
symmetric block per edge, b = alpha Ks + beta c n n^T as (xx, yy, zz, xy, xz, yz), in
a *padded* layout: the edge whose lower end is node a of offset block o sits at
base[o] + a, for every node a of the first rows - dr rows (slots without a spring hold
zero blocks). Then the other end is a + shift[o] (shift = dr * cols + dc) and a whole
offset block is one long contiguous loop. Vectors are structure-of-arrays (3, n + pad);
the pad entries stay zero.

A spring's block is b = g n n^T + h I (g = alpha k L/l + beta c >= 0 along the spring,
h = alpha k (1 - L/l) across it). The fine grid stores it compact, as the 4 rows
(sqrt(g) n, h): b q = w (w . q) + h q. Two thirds of the memory of (xx, yy, zz, xy,
xz, yz), and the products on the fine grid are limited by that memory. Coarse
multigrid levels (sums of such blocks) keep the 6 entries.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .grid import GRID_MAX_OFFSET, GridLayout
from .particles import MIN_LENGTH

#: rows of a compact edge block (w = sqrt(g) n, h)
COMPACT_ROWS = 4

#: zero entries after the n nodes of a grid vector (covers shift overshoot at the end)
GRID_PAD = 2 * GRID_MAX_OFFSET


def padded_edges(rows: int, cols: int, offsets) -> np.ndarray:
    """(nb, 3) int64 (base, count, shift) of the padded edge layout for these offsets."""
    out, base = [], 0
    for dr, dc in offsets:
        count = (rows - dr) * cols
        out.append((base, count, dr * cols + dc))
        base += count
    return np.array(out, dtype=np.int64).reshape(-1, 3)


# The theta-method's spring terms on a grid (grid_implicit_blocks): per spring, with
# d = x_a - x_b, l = |d|, n = d / l, u = v_a - v_b, t = 1 - L / l (transverse factor):
#     force on a:  f = (-k (l - L) - c n.u) n          (the formula of spring_forces)
#     Ks = k [(1 - t) n n^T + t I]   (exact);  clamped: t replaced by max(t, 0)
#     edge block   b = alpha Ks + beta c n n^T = g n n^T + h I,  g = alpha k (1 - t) + beta c,
#                  h = alpha k t;   Ks u = k (1 - t) (n.u) n + k t u
# as in stiffness_blocks / system_product, in float64; a spring shorter than MIN_LENGTH
# contributes nothing. Spring parameters are kept per padded edge slot (zero where no
# spring), so each offset block is swept in contiguous chunks of GRID_CHUNK slots, slots
# without a spring included (they come out zero). The loops are arranged for LLVM's
# vectoriser, which cannot know that numba's arrays do not overlap and guards each loop
# with run-time overlap checks between the arrays it writes and those it reads: a loop
# that writes several rows of an array (runtime row stride) needs a check per pair of
# pointers and is left scalar beyond ~128 of them, while rows of one 1-D scratch at
# constant offsets (S[q * GRID_CHUNK + j]) count once. Hence the per-chunk scratch S, T
# and at most six output rows per loop.

#: slots per chunk of the implicit grid kernel (its scratch, 16 rows of it, stays in L1)
GRID_CHUNK = 256
_NS = 7  # per-chunk rows of S: nx, ny, nz, g, h, g clamped, h clamped
_NT = 9  # per-chunk rows of T: force, Ks u, Ks_clamped u on the lower end


def grid_implicit_scratch(layout: GridLayout, pblocks: np.ndarray) -> tuple:
    """Work arrays of grid_implicit_blocks for a grid layout: (X, V, P, S, T); P holds
    the spring parameters per edge slot (fill it with grid_spring_params)."""
    n = layout.rows * layout.cols
    edges = int(pblocks[:, 1].sum())
    ring = int(pblocks[:, 2].max() + GRID_CHUNK - 1) // GRID_CHUNK + 1
    X = np.zeros((3, n + GRID_PAD))
    V = np.zeros((3, n + GRID_PAD))
    P = np.zeros((3, edges + GRID_PAD))
    S = np.zeros(_NS * GRID_CHUNK)
    T = np.zeros(pblocks.shape[0] * ring * _NT * GRID_CHUNK)
    return X, V, P, S, T


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def grid_spring_params(k, c, rest, cols, gblocks, pblocks, P):
    """Copy k, c, rest (spring order) into their slots of P (3, E + pad), the per-slot
    parameters grid_implicit_blocks reads. Its caller runs it when they change (the
    integrator is notified of every edit), not every step."""
    for o in range(gblocks.shape[0]):
        first = gblocks[o, 2]
        c0 = gblocks[o, 3]
        width = gblocks[o, 4] - c0
        base = pblocks[o, 0]
        for r in range(pblocks[o, 1] // cols):
            e = base + r * cols + c0
            s = first + r * width
            for q in range(3):
                src = k if q == 0 else (c if q == 1 else rest)
                Pq = P[q, e:e + width]
                sq = src[s:s + width]
                for j in range(width):
                    Pq[j] = sq[j]


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _rows3(A, row, start, count):
    """Rows row, row + 1, row + 2 of the 2-D array A, columns start .. start + count - 1,
    as three 1-D views (the contiguous slices the loops below vectorise over)."""
    return (A[row, start:start + count], A[row + 1, start:start + count],
            A[row + 2, start:start + count])


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"},
      inline="always")
def _grid_springs(X, V, P, S, T, a0, b0, e, w, alpha, beta):
    """Springs a0 + j -> b0 + j, slot e + j, j < w: n, g, h (exact, clamped) into S rows,
    force, Ks u, Ks_clamped u on the lower end into T rows (see the comment above)."""
    ks_, cs_, rs_ = _rows3(P, 0, e, w)
    xa0, xa1, xa2 = _rows3(X, 0, a0, w)
    xb0, xb1, xb2 = _rows3(X, 0, b0, w)
    va0, va1, va2 = _rows3(V, 0, a0, w)
    vb0, vb1, vb2 = _rows3(V, 0, b0, w)
    C = GRID_CHUNK
    for j in range(w):
        dx = xa0[j] - xb0[j]
        dy = xa1[j] - xb1[j]
        dz = xa2[j] - xb2[j]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        short = length < MIN_LENGTH  # no direction: contributes nothing
        inv = 0.0 if short else 1.0 / length
        ks = 0.0 if short else ks_[j]
        cs = cs_[j]
        rs = rs_[j]
        nx = dx * inv
        ny = dy * inv
        nz = dz * inv
        ux = va0[j] - vb0[j]
        uy = va1[j] - vb1[j]
        uz = va2[j] - vb2[j]
        un = ux * nx + uy * ny + uz * nz
        mag = -ks * (length - rs) - cs * un
        damp = beta * cs
        transverse = 1.0 - rs * inv
        clamped = max(transverse, 0.0)  # compressed: the clamped Ks drops the t I term
        axial = ks * (1.0 - transverse)
        tr = ks * transverse
        axial_c = ks * (1.0 - clamped)
        tr_c = ks * clamped
        S[j] = nx
        S[C + j] = ny
        S[2 * C + j] = nz
        S[3 * C + j] = alpha * axial + damp
        S[4 * C + j] = alpha * tr
        S[5 * C + j] = alpha * axial_c + damp
        S[6 * C + j] = alpha * tr_c
        T[j] = mag * nx
        T[C + j] = mag * ny
        T[2 * C + j] = mag * nz
        au = axial * un
        T[3 * C + j] = au * nx + tr * ux
        T[4 * C + j] = au * ny + tr * uy
        T[5 * C + j] = au * nz + tr * uz
        au = axial_c * un
        T[6 * C + j] = au * nx + tr_c * ux
        T[7 * C + j] = au * ny + tr_c * uy
        T[8 * C + j] = au * nz + tr_c * uz


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"},
      inline="always")
def _grid_edge_blocks(S, b, e, w, q):
    """b[:, e + j] = compact g n n^T + h I, j < w: (sqrt(g) n, h), with g, h from S rows
    q, q + 1."""
    b0, b1, b2 = _rows3(b, 0, e, w)
    b3 = b[3, e:e + w]
    C = GRID_CHUNK
    for j in range(w):
        root = np.sqrt(max(S[q * C + j], 0.0))
        b0[j] = root * S[j]
        b1[j] = root * S[C + j]
        b2[j] = root * S[2 * C + j]
        b3[j] = S[(q + 1) * C + j]


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"},
      inline="always")
def _grid_gather(T, y, q, i0, w, tp, tm, plus, minus):
    """y[d, i0 + j] += T[tp + (q + d) C + j] - T[tm + (q + d) C + j], d < 3, j < w (each
    term only when plus / minus)."""
    Tp = T[tp:]
    Tm = T[tm:]
    for d in range(3):
        yd = y[d, i0:i0 + w]
        r = (q + d) * GRID_CHUNK
        if plus and minus:
            for j in range(w):
                yd[j] += Tp[r + j] - Tm[r + j]
        elif plus:
            for j in range(w):
                yd[j] += Tp[r + j]
        elif minus:
            for j in range(w):
                yd[j] -= Tm[r + j]


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def grid_implicit_blocks(x, v, cols, gblocks, pblocks, alpha, beta, X, V, P, S, T, force, kv,
                         kv_clamped, b_exact, b_clamped):
    """Everything a theta-method step needs from the springs of a grid, in one pass.

    x, v (n, 3): state, m and m/s (float32 or float64); cols: row length; gblocks:
    GridLayout.blocks; pblocks: padded_edges of its offsets; alpha = (theta dt)^2 in s^2,
    beta = theta dt in s. Scratch from grid_implicit_scratch: X, V, P (the spring
    parameters k N/m, c N*s/m, rest m per edge slot, from grid_spring_params), S, T.
    Out: force (N), kv, kv_clamped (Ks_graph v, exact and clamped, N/s), each
    (3, n + GRID_PAD), pads zero; b_exact, b_clamped (COMPACT_ROWS, E + GRID_PAD):
    alpha Ks + beta c n n^T per padded edge slot, compact (see above), zero in slots
    without a spring. All in float64 (the blocks stored in their arrays' dtype), same
    formulas as stiffness_blocks, system_product and spring_forces; per-node sums run
    offset block by offset block.
    """
    n = x.shape[0]
    C = GRID_CHUNK
    nb = gblocks.shape[0]
    ring = T.shape[0] // (nb * _NT * C)  # chunks of T kept per offset block
    force[:] = 0.0
    kv[:] = 0.0
    kv_clamped[:] = 0.0
    xf = x.reshape(-1)  # flat rows: a constant stride of 3
    vf = v.reshape(-1)
    for d in range(3):
        Xd = X[d]
        Vd = V[d]
        for i in range(n):
            Xd[i] = xf[3 * i + d]
        for i in range(n):
            Vd[i] = vf[3 * i + d]
    # chunk by chunk of nodes: first the springs of every offset block whose lower ends
    # are in the chunk (slots A .. A + C - 1), T kept in a ring of chunks per block; then
    # each node i of the chunk gets + T(slot i) and - T(slot i - shift) of each block
    for A in range(0, n, C):
        for o in range(nb):
            count = pblocks[o, 1]
            if A >= count:
                continue
            e = pblocks[o, 0] + A
            shift = pblocks[o, 2]
            w = min(C, count - A)
            Tc = T[(o * ring + (A // C) % ring) * _NT * C:]
            _grid_springs(X, V, P, S, Tc, A, A + shift, e, w, alpha, beta)
            _grid_edge_blocks(S, b_exact, e, w, 3)
            _grid_edge_blocks(S, b_clamped, e, w, 5)
        hi = min(A + C, n)
        for o in range(nb):
            count = pblocks[o, 1]
            shift = pblocks[o, 2]
            To = T[o * ring * _NT * C:(o + 1) * ring * _NT * C]
            i = A
            while i < hi:  # pieces with one source chunk for each term
                plus = i < count
                minus = shift <= i < count + shift
                lim = hi
                if plus:
                    lim = min(lim, count, (i // C + 1) * C)
                if minus:
                    lim = min(lim, count + shift, ((i - shift) // C + 1) * C + shift)
                elif i < shift:
                    lim = min(lim, shift)
                tp = tm = 0
                if plus:
                    tp = ((i // C) % ring) * _NT * C + i % C
                if minus:
                    tm = (((i - shift) // C) % ring) * _NT * C + (i - shift) % C
                _grid_gather(To, force, 0, i, lim - i, tp, tm, plus, minus)
                _grid_gather(To, kv, 3, i, lim - i, tp, tm, plus, minus)
                _grid_gather(To, kv_clamped, 6, i, lim - i, tp, tm, plus, minus)
                i = lim


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def _node_blocks(x, diag, y, n):
    """y = blockdiag(diag) x over n nodes."""
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    d0 = diag[0]
    d1 = diag[1]
    d2 = diag[2]
    d3 = diag[3]
    d4 = diag[4]
    d5 = diag[5]
    for i in range(n):
        y[0, i] = d0[i] * x0[i] + d3[i] * x1[i] + d4[i] * x2[i]
        y[1, i] = d3[i] * x0[i] + d1[i] * x1[i] + d5[i] * x2[i]
        y[2, i] = d4[i] * x0[i] + d5[i] * x1[i] + d2[i] * x2[i]


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def _edge_scatter(temp, y, count, shift, n):
    """y[i] += temp[i] (edges whose lower end is i), then y[i] -= temp[i - shift] (upper
    end), as one pass over y per component (bit-identical to two passes, a third fewer
    loads and stores); writes into the pad are left for the caller to zero."""
    if count < 512:  # small (coarse multigrid) levels: two plain passes cost less
        for d in range(3):
            ya = y[d, :count]
            yb = y[d, shift:shift + count]
            td = temp[d, :count]
            for a in range(count):
                ya[a] += td[a]
            for a in range(count):
                yb[a] -= td[a]
        return
    lo = max(count, shift)
    hi = min(count + shift, n)
    for d in range(3):
        yd = y[d]
        td = temp[d]
        for i in range(min(shift, count)):
            yd[i] += td[i]
        if shift < count:
            yb = yd[shift:count]
            tq = td[shift:count]
            tb = td[:count - shift]
            for i in range(count - shift):
                yb[i] = (yb[i] + tq[i]) - tb[i]
        if hi > lo:
            ys = yd[lo:hi]
            ts = td[lo - shift:hi - shift]
            for i in range(hi - lo):
                ys[i] -= ts[i]


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def _zero_fixed_and_pad(y, fixed, n):
    for i in range(n):
        if fixed[i]:
            y[0, i] = 0.0
            y[1, i] = 0.0
            y[2, i] = 0.0
    for i in range(n, y.shape[1]):
        y[0, i] = 0.0
        y[1, i] = 0.0
        y[2, i] = 0.0


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def _full_terms(edges, base, xa0, xa1, xa2, xb0, xb1, xb2, t0, t1, t2):
    """t = b (xa - xb) per edge of one offset block (from slot base on), b in 6-entry
    storage; all arguments but edges are the block's 1-D slices."""
    count = t0.shape[0]
    b0, b1, b2 = _rows3(edges, 0, base, count)
    b3, b4, b5 = _rows3(edges, 3, base, count)
    for a in range(count):
        q0 = xa0[a] - xb0[a]
        q1 = xa1[a] - xb1[a]
        q2 = xa2[a] - xb2[a]
        t0[a] = b0[a] * q0 + b3[a] * q1 + b4[a] * q2
        t1[a] = b3[a] * q0 + b1[a] * q1 + b5[a] * q2
        t2[a] = b4[a] * q0 + b5[a] * q1 + b2[a] * q2


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def _compact_terms(edges, base, xa0, xa1, xa2, xb0, xb1, xb2, t0, t1, t2):
    """_full_terms for compact (w, h) blocks: b q = w (w . q) + h q."""
    count = t0.shape[0]
    w0, w1, w2 = _rows3(edges, 0, base, count)
    h = edges[3, base:base + count]
    for a in range(count):
        q0 = xa0[a] - xb0[a]
        q1 = xa1[a] - xb1[a]
        q2 = xa2[a] - xb2[a]
        s = w0[a] * q0 + w1[a] * q1 + w2[a] * q2
        t0[a] = w0[a] * s + h[a] * q0
        t1[a] = w1[a] * s + h[a] * q1
        t2[a] = w2[a] * s + h[a] * q2


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def grid_apply(x, diag, edges, pblocks, fixed, temp, y):
    """y = A x on a grid level: A = blockdiag(diag) + the graph Laplacian of the edge blocks.

    x, y, temp (3, n + pad); diag (6, n) symmetric node blocks; edges (6, E) in the padded
    layout of pblocks (nb, 3) = (base, count, shift), or (COMPACT_ROWS, E) compact blocks
    (the fine grid's); rows of fixed nodes are zero.
    """
    n = fixed.shape[0]
    compact = edges.shape[0] == COMPACT_ROWS
    _node_blocks(x, diag, y, n)
    for o in range(pblocks.shape[0]):
        base = pblocks[o, 0]
        count = pblocks[o, 1]
        shift = pblocks[o, 2]
        xa0, xa1, xa2 = _rows3(x, 0, 0, count)
        xb0, xb1, xb2 = _rows3(x, 0, shift, count)
        t0, t1, t2 = _rows3(temp, 0, 0, count)
        if compact:
            _compact_terms(edges, base, xa0, xa1, xa2, xb0, xb1, xb2, t0, t1, t2)
        else:
            _full_terms(edges, base, xa0, xa1, xa2, xb0, xb1, xb2, t0, t1, t2)
        _edge_scatter(temp, y, count, shift, n)
    _zero_fixed_and_pad(y, fixed, n)
