"""Structured grids: recognising a grid spring list and the row kernels of its sweeps.

A cloth built on a rows x cols grid (particle id = r * cols + c) whose springs come in
blocks, one block per neighbour offset (dr, dc), each block listing its springs in
row-major order of their first particle, needs no index arrays at all: the spring of
block o at grid cell (r, c) is number first[o] + r * (c1 - c0) + (c - c0), and its
other end is (r + dr, c + dc). ``grid_layout`` recognises such a spring list (the
order of ``builders.cloth``); the row kernels below then sweep the grid row by row on
contiguous, vectorisable rows of a structure-of-arrays window. Each spring's force is
the formula of ``spring_forces``, evaluated in the state's dtype (fused multiply-adds
allowed), with the lower grid end as the first end.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: largest |dr| and |dc| a grid block may have (the row window holds max dr + 1 rows)
GRID_MAX_OFFSET = 4


class GridLayout:
    """How a spring list maps onto a rows x cols particle grid (see ``grid_layout``).

    ``blocks`` is an (nb, 5) int64 array of (dr, dc, first spring, c0, c1): block o holds
    the springs (r, c) -> (r + dr, c + dc) for r in [0, rows - dr) and c in [c0, c1),
    numbered first + r * (c1 - c0) + (c - c0). ``max_dr`` is the largest dr.
    """

    def __init__(self, rows: int, cols: int, blocks: np.ndarray):
        self.rows = int(rows)
        self.cols = int(cols)
        self.blocks = np.ascontiguousarray(blocks, dtype=np.int64).reshape(-1, 5)
        self.max_dr = int(self.blocks[:, 0].max()) if self.blocks.size else 0

    @property
    def offsets(self) -> list[tuple[int, int]]:
        return [(int(dr), int(dc)) for dr, dc in self.blocks[:, :2]]

    def __repr__(self) -> str:
        return f"GridLayout({self.rows}x{self.cols}, offsets={self.offsets})"


def grid_offsets(a: np.ndarray, b: np.ndarray, cols: int) -> tuple[np.ndarray, ...]:
    """For node pairs (a, b) of a grid with rows of ``cols``: the lower end (the earlier
    row, or column in the same row) and the offset (dr >= 0, dc) to the other end."""
    ra, ca = np.divmod(a, cols)
    rb, cb = np.divmod(b, cols)
    swap = (rb < ra) | ((rb == ra) & (cb < ca))
    return np.where(swap, b, a), np.abs(rb - ra), np.where(swap, ca - cb, cb - ca)


def _grid_layout_for(a: np.ndarray, b: np.ndarray, rows: int, cols: int):
    lo, dr, dc = grid_offsets(a, b, cols)
    if dr.max(initial=0) > GRID_MAX_OFFSET or np.abs(dc).max(initial=0) > GRID_MAX_OFFSET:
        return None
    m = a.shape[0]
    blocks = []
    s = 0
    while s < m:
        o_dr, o_dc = int(dr[s]), int(dc[s])
        if o_dr == 0 and o_dc <= 0:
            return None
        c0, c1 = max(0, -o_dc), cols - max(0, o_dc)
        width = c1 - c0
        count = (rows - o_dr) * width
        if count <= 0 or s + count > m or len(blocks) >= 64:
            return None
        j = np.arange(count)
        expected = (j // width) * cols + c0 + j % width
        seg = slice(s, s + count)
        if not (np.array_equal(lo[seg], expected) and np.all(dr[seg] == o_dr)
                and np.all(dc[seg] == o_dc)):
            return None
        blocks.append((o_dr, o_dc, s, c0, c1))
        s += count
    return GridLayout(rows, cols, np.array(blocks, dtype=np.int64))


def grid_layout(spring_a, spring_b, n_particles: int, grid_shape=None) -> GridLayout | None:
    """Recognise a structured-grid spring list, or return None.

    ``grid_shape`` (rows, cols) is tried if given; otherwise the row length is inferred
    from the index differences of the springs (the widest grid that fits wins, so a
    rope is a single row). Every spring must belong to a block (see GridLayout) with
    |dr|, |dc| <= GRID_MAX_OFFSET; a spring's two ends may be listed in either order.
    Cost: O(springs) NumPy per candidate row length, once per simulation.
    """
    a = np.asarray(spring_a, dtype=np.int64)
    b = np.asarray(spring_b, dtype=np.int64)
    n = int(n_particles)
    if a.shape[0] == 0 or n < 2:
        return None
    if grid_shape is not None:
        candidates = [int(grid_shape[1])]
    else:
        # index differences of grid springs are dr * cols + dc: try each difference, its
        # half (dr = 2) and the mean of two (dc = +1 and -1), widest first
        step = max(1, a.shape[0] >> 16)  # a strided sample meets every offset block
        diffs = [int(d) for d in np.unique(np.abs(b[::step] - a[::step]))[:24]]
        guesses = set(diffs) | {d // 2 for d in diffs if d % 2 == 0}
        guesses |= {(p + q) // 2 for p in diffs for q in diffs if p < q and (p + q) % 2 == 0}
        candidates = sorted({n} | {g for g in guesses if 2 <= g and n % g == 0}, reverse=True)
    sample = slice(0, None, max(1, a.shape[0] >> 12))
    for cols in candidates:
        if cols < 2 or n % cols:
            continue
        ra, ca = np.divmod(a[sample], cols)
        rb, cb = np.divmod(b[sample], cols)
        if (np.abs(ra - rb).max() > GRID_MAX_OFFSET
                or np.abs(ca - cb).max() > GRID_MAX_OFFSET):
            continue  # cheap rejection on a sample before the full check
        layout = _grid_layout_for(a, b, n // cols, cols)
        if layout is not None:
            return layout
    return None


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def grid_load_row(q, x, v, X, V, F, cols, window, external, has_external):
    """Copy grid row q of x, v (n, 3) into window slot q % window of X, V (W, 3, cols),
    structure-of-arrays, and start that slot of the force window F at zero, or at the
    row of ``external`` (n, 3: the attached forces, N) when has_external."""
    s = q % window
    _transpose_row(x, q, cols, X[s])
    _transpose_row(v, q, cols, V[s])
    if has_external:
        _transpose_row(external, q, cols, F[s])
    else:
        F[s] = 0.0


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _transpose_row(a, q, cols, out):
    """out[d, j] = a[q * cols + j, d]: grid row q of an (n, 3) array into a (3, >= cols)
    window slot, one contiguous loop per component."""
    flat = a[q * cols:(q + 1) * cols].reshape(-1)  # flat rows: a constant stride of 3
    out0, out1, out2 = out[0], out[1], out[2]
    for j in range(cols):
        out0[j] = flat[3 * j]
        out1[j] = flat[3 * j + 1]
        out2[j] = flat[3 * j + 2]


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"},
      inline="always")
def grid_spring_row(X, V, T, k, c, rest, sa, sb, dc, c0, c1, first, tiny, one):
    """Forces of the springs (slot sa, column j) -> (slot sb, column j + dc), j in [c0, c1),
    on their first end, into T[:, c0:c1]; spring parameters from index ``first`` on.

    Same arithmetic as ``forces.springs.spring_forces`` (a spring shorter than
    MIN_LENGTH = tiny exerts nothing). ``one`` and ``tiny`` carry the state's dtype so
    float32 stays float32.
    """
    n = c1 - c0
    Xa0, Xa1, Xa2 = _columns(X[sa], c0, c1)
    Xb0, Xb1, Xb2 = _columns(X[sb], c0 + dc, c1 + dc)
    Va0, Va1, Va2 = _columns(V[sa], c0, c1)
    Vb0, Vb1, Vb2 = _columns(V[sb], c0 + dc, c1 + dc)
    T0, T1, T2 = _columns(T, c0, c1)
    ks = k[first:first + n]
    cs = c[first:first + n]
    rs = rest[first:first + n]
    zero = one - one
    for j in range(n):
        dx = Xa0[j] - Xb0[j]
        dy = Xa1[j] - Xb1[j]
        dz = Xa2[j] - Xb2[j]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        inv = one / length if length >= tiny else zero
        nx = dx * inv
        ny = dy * inv
        nz = dz * inv
        rel = (Va0[j] - Vb0[j]) * nx + (Va1[j] - Vb1[j]) * ny + (Va2[j] - Vb2[j]) * nz
        mag = -ks[j] * (length - rs[j]) - cs[j] * rel
        T0[j] = mag * nx
        T1[j] = mag * ny
        T2[j] = mag * nz


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _columns(slot, lo, hi):
    """The three component rows of a (3, width) window slot, columns [lo, hi)."""
    return slot[0, lo:hi], slot[1, lo:hi], slot[2, lo:hi]


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def grid_accumulate(F, T, slot, shift, c0, c1, sign):
    """F[slot, :, j + shift] += sign * T[:, j] for j in [c0, c1) (sign +1 or -1)."""
    n = c1 - c0
    for d in range(3):
        Fd = F[slot, d, c0 + shift:c1 + shift]
        Td = T[d, c0:c1]
        if sign > 0:
            for j in range(n):
                Fd[j] += Td[j]
        else:
            for j in range(n):
                Fd[j] -= Td[j]

