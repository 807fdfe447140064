"""Numba kernels for spring forces, energies and the spring Jacobian.

Every kernel takes plain arrays (no objects) and writes into arrays it is given, so
the step allocates nothing. Conventions, for spring s joining particles a[s] and b[s]:

    d = x[a] - x[b],  l = |d|,  n = d / l
    Hooke:    f_a = -k (l - L) n                      (f_b = -f_a)
    damping:  f_a = -c ((v[a] - v[b]) . n) n          (along the spring only)

k in N/m, c in N*s/m, L in m. A spring whose ends coincide (l ~ 0) has no defined
direction and contributes no force, so it never produces NaN.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: below this length (m) a spring has no direction and exerts no force
MIN_LENGTH = 1e-12


@njit(cache=True)
def spring_forces(x, v, spring_a, spring_b, rest, k, c, f):
    """Set f (n, 3) to the Hooke + damping forces of all springs, N."""
    f[:] = 0.0
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        dx = x[i, 0] - x[j, 0]
        dy = x[i, 1] - x[j, 1]
        dz = x[i, 2] - x[j, 2]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        if length < MIN_LENGTH:
            continue
        inv = 1.0 / length
        nx = dx * inv
        ny = dy * inv
        nz = dz * inv
        rel_speed = (v[i, 0] - v[j, 0]) * nx + (v[i, 1] - v[j, 1]) * ny + (v[i, 2] - v[j, 2]) * nz
        mag = -k[s] * (length - rest[s]) - c[s] * rel_speed
        f[i, 0] += mag * nx
        f[i, 1] += mag * ny
        f[i, 2] += mag * nz
        f[j, 0] -= mag * nx
        f[j, 1] -= mag * ny
        f[j, 2] -= mag * nz


@njit(cache=True)
def spring_energy(x, spring_a, spring_b, rest, k):
    """Elastic energy sum of k/2 (l - L)^2, J."""
    total = 0.0
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        dx = x[i, 0] - x[j, 0]
        dy = x[i, 1] - x[j, 1]
        dz = x[i, 2] - x[j, 2]
        stretch = np.sqrt(dx * dx + dy * dy + dz * dz) - rest[s]
        total += 0.5 * k[s] * stretch * stretch
    return total


@njit(cache=True)
def spring_strain(x, spring_a, spring_b, rest, out):
    """Signed strain (l - L) / L of every spring into out (m,); 0 for L = 0."""
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        dx = x[i, 0] - x[j, 0]
        dy = x[i, 1] - x[j, 1]
        dz = x[i, 2] - x[j, 2]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        out[s] = (length - rest[s]) / rest[s] if rest[s] > 0.0 else 0.0


@njit(cache=True)
def kinetic_energy(v, mass):
    """Sum of m/2 |v|^2, J."""
    total = 0.0
    for i in range(v.shape[0]):
        total += 0.5 * mass[i] * (v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2])
    return total


@njit(cache=True)
def gravity_energy(x, mass, gravity):
    """Potential of uniform gravity, -sum m g.x, J (zero at the origin)."""
    total = 0.0
    for i in range(x.shape[0]):
        total -= mass[i] * (gravity[0] * x[i, 0] + gravity[1] * x[i, 1] + gravity[2] * x[i, 2])
    return total


@njit(cache=True)
def stiffness_blocks(x, spring_a, spring_b, rest, k, clamp, blocks, normals):
    """Per-spring 3x3 stiffness block Ks = -(df_a/dx_a), stored as 6 unique entries.

    Ks = k [ n n^T + (1 - L/l) (I - n n^T) ]. The transverse factor (1 - L/l) is
    negative for a compressed spring, which can make the implicit system indefinite;
    with clamp=True it is limited to >= 0 (the always-definite form). Also stores the
    unit direction n of each spring in normals (m, 3) for the damping block c n n^T.
    blocks[s] = (xx, yy, zz, xy, xz, yz).
    """
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        dx = x[i, 0] - x[j, 0]
        dy = x[i, 1] - x[j, 1]
        dz = x[i, 2] - x[j, 2]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        if length < MIN_LENGTH:
            for e in range(6):
                blocks[s, e] = 0.0
            normals[s, 0] = 0.0
            normals[s, 1] = 0.0
            normals[s, 2] = 0.0
            continue
        inv = 1.0 / length
        nx = dx * inv
        ny = dy * inv
        nz = dz * inv
        transverse = 1.0 - rest[s] * inv
        if clamp and transverse < 0.0:
            transverse = 0.0
        axial = 1.0 - transverse
        ks = k[s]
        blocks[s, 0] = ks * (axial * nx * nx + transverse)
        blocks[s, 1] = ks * (axial * ny * ny + transverse)
        blocks[s, 2] = ks * (axial * nz * nz + transverse)
        blocks[s, 3] = ks * axial * nx * ny
        blocks[s, 4] = ks * axial * nx * nz
        blocks[s, 5] = ks * axial * ny * nz
        normals[s, 0] = nx
        normals[s, 1] = ny
        normals[s, 2] = nz


@njit(cache=True)
def system_product(p, mass, spring_a, spring_b, blocks, normals, c, alpha, beta, fixed, out):
    """out = A p with A = M + alpha Ks_graph + beta C_graph (matrix-free).

    Ks_graph and C_graph are the graph Laplacians of the per-spring blocks Ks and
    c n n^T, i.e. -K and -D of the whole system. Rows of fixed particles are zero so
    that conjugate gradient stays in the subspace of free particles.
    """
    n = p.shape[0]
    for i in range(n):
        out[i, 0] = mass[i] * p[i, 0]
        out[i, 1] = mass[i] * p[i, 1]
        out[i, 2] = mass[i] * p[i, 2]
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        qx = p[i, 0] - p[j, 0]
        qy = p[i, 1] - p[j, 1]
        qz = p[i, 2] - p[j, 2]
        b = blocks[s]
        nx = normals[s, 0]
        ny = normals[s, 1]
        nz = normals[s, 2]
        damp = beta * c[s] * (nx * qx + ny * qy + nz * qz)
        rx = alpha * (b[0] * qx + b[3] * qy + b[4] * qz) + damp * nx
        ry = alpha * (b[3] * qx + b[1] * qy + b[5] * qz) + damp * ny
        rz = alpha * (b[4] * qx + b[5] * qy + b[2] * qz) + damp * nz
        out[i, 0] += rx
        out[i, 1] += ry
        out[i, 2] += rz
        out[j, 0] -= rx
        out[j, 1] -= ry
        out[j, 2] -= rz
    for i in range(n):
        if fixed[i]:
            out[i, 0] = 0.0
            out[i, 1] = 0.0
            out[i, 2] = 0.0


@njit(cache=True)
def system_diagonal(mass, spring_a, spring_b, blocks, normals, c, alpha, beta, out):
    """Diagonal of A = M + alpha Ks_graph + beta C_graph, for the Jacobi preconditioner."""
    for i in range(mass.shape[0]):
        out[i, 0] = mass[i]
        out[i, 1] = mass[i]
        out[i, 2] = mass[i]
    for s in range(spring_a.shape[0]):
        for end in range(2):
            i = spring_a[s] if end == 0 else spring_b[s]
            for d in range(3):
                nd = normals[s, d]
                out[i, d] += alpha * blocks[s, d] + beta * c[s] * nd * nd


# --- structured grids ----------------------------------------------------------------------
#
# A cloth built on a rows x cols grid (particle id = r * cols + c) whose springs come in
# blocks, one block per neighbour offset (dr, dc), each block listing its springs in
# row-major order of their first particle, needs no index arrays at all: the spring of
# block o at grid cell (r, c) is number first[o] + r * (c1 - c0) + (c - c0), and its
# other end is (r + dr, c + dc). ``grid_layout`` recognises such a spring list (the
# order of ``builders.cloth``); the row kernels below then sweep the grid row by row on
# contiguous, vectorisable rows of a structure-of-arrays window. Each spring's force is
# the formula of ``spring_forces``, evaluated in the state's dtype (fused multiply-adds
# allowed), with the lower grid end as the first end.

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


def _grid_layout_for(a: np.ndarray, b: np.ndarray, rows: int, cols: int):
    ra, ca = np.divmod(a, cols)
    rb, cb = np.divmod(b, cols)
    swap = (rb < ra) | ((rb == ra) & (cb < ca))
    lo = np.where(swap, b, a)
    dr = np.abs(rb - ra)
    dc = np.where(swap, ca - cb, cb - ca)
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
def grid_load_row(q, x, v, X, V, F, cols, window):
    """Copy grid row q of x, v (n, 3) into window slot q % window of X, V (W, 3, cols),
    structure-of-arrays, and zero that slot of the force window F."""
    s = q % window
    xr = x[q * cols:(q + 1) * cols].reshape(-1)  # flat rows: a constant stride of 3
    vr = v[q * cols:(q + 1) * cols].reshape(-1)
    Xs0 = X[s, 0]
    Xs1 = X[s, 1]
    Xs2 = X[s, 2]
    Vs0 = V[s, 0]
    Vs1 = V[s, 1]
    Vs2 = V[s, 2]
    for j in range(cols):
        Xs0[j] = xr[3 * j]
        Xs1[j] = xr[3 * j + 1]
        Xs2[j] = xr[3 * j + 2]
    for j in range(cols):
        Vs0[j] = vr[3 * j]
        Vs1[j] = vr[3 * j + 1]
        Vs2[j] = vr[3 * j + 2]
    F[s] = 0.0


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"},
      inline="always")
def grid_spring_row(X, V, T, k, c, rest, sa, sb, dc, c0, c1, first, tiny, one):
    """Forces of the springs (slot sa, column j) -> (slot sb, column j + dc), j in [c0, c1),
    on their first end, into T[:, c0:c1]; spring parameters from index ``first`` on.

    Same arithmetic as ``spring_forces`` (a spring shorter than MIN_LENGTH = tiny exerts
    nothing). ``one`` and ``tiny`` carry the state's dtype so float32 stays float32.
    """
    n = c1 - c0
    Xa0 = X[sa, 0, c0:c1]
    Xa1 = X[sa, 1, c0:c1]
    Xa2 = X[sa, 2, c0:c1]
    Xb0 = X[sb, 0, c0 + dc:c1 + dc]
    Xb1 = X[sb, 1, c0 + dc:c1 + dc]
    Xb2 = X[sb, 2, c0 + dc:c1 + dc]
    Va0 = V[sa, 0, c0:c1]
    Va1 = V[sa, 1, c0:c1]
    Va2 = V[sa, 2, c0:c1]
    Vb0 = V[sb, 0, c0 + dc:c1 + dc]
    Vb1 = V[sb, 1, c0 + dc:c1 + dc]
    Vb2 = V[sb, 2, c0 + dc:c1 + dc]
    T0 = T[0, c0:c1]
    T1 = T[1, c0:c1]
    T2 = T[2, c0:c1]
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


# --- edge colouring --------------------------------------------------------------------------


@njit(cache=True)
def _greedy_colours(spring_a, spring_b, n_particles, colour):
    """Smallest colour not yet used at either end, spring by spring; returns the count."""
    used = np.zeros((n_particles, 2), np.uint64)  # bitmask of colours 0..127 per particle
    count = 0
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        c = -1
        for word in range(2):
            free = ~(used[i, word] | used[j, word])
            if free != 0:
                bit = 0
                while not (free >> np.uint64(bit)) & np.uint64(1):
                    bit += 1
                c = word * 64 + bit
                break
        if c < 0:
            return -1
        used[i, c // 64] |= np.uint64(1) << np.uint64(c % 64)
        used[j, c // 64] |= np.uint64(1) << np.uint64(c % 64)
        colour[s] = c
        if c + 1 > count:
            count = c + 1
    return count


def edge_colouring(spring_a, spring_b, n_particles: int):
    """Group springs into colours that share no particle (greedy, deterministic).

    Returns (order, starts): springs order[starts[q]:starts[q + 1]] form colour q, each
    colour sorted by spring index, so the springs of one colour can be applied in
    parallel without two threads touching the same particle. None if more than 128
    colours would be needed (a particle with very many springs).
    """
    a = np.asarray(spring_a, dtype=np.int64)
    b = np.asarray(spring_b, dtype=np.int64)
    colour = np.empty(a.shape[0], np.int64)
    count = _greedy_colours(a, b, int(n_particles), colour)
    if count < 0:
        return None
    order = np.argsort(colour, kind="stable").astype(np.int64)
    starts = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(colour, minlength=count), out=starts[1:])
    return order, starts


# --- implicit operators on structured grids ------------------------------------------------
#
# The implicit integrators' matrix A = M + alpha Ks_graph + beta C_graph is, on a grid,
# a sum over neighbour offsets of 3 x 3 blocks per edge. The grid versions store one
# symmetric block per edge, b = alpha Ks + beta c n n^T as (xx, yy, zz, xy, xz, yz), in
# a *padded* layout: the edge whose lower end is node a of offset block o sits at
# base[o] + a, for every node a of the first rows - dr rows (slots without a spring hold
# zero blocks). Then the other end is a + shift[o] (shift = dr * cols + dc) and a whole
# offset block is one long contiguous loop. Vectors are structure-of-arrays (3, n + pad);
# the pad entries stay zero.
#
# A spring's block is b = g n n^T + h I (g = alpha k L/l + beta c >= 0 along the spring,
# h = alpha k (1 - L/l) across it). The fine grid stores it compact, as the 4 rows
# (sqrt(g) n, h): b q = w (w . q) + h q. Two thirds of the memory of (xx, yy, zz, xy,
# xz, yz), and the products on the fine grid are limited by that memory. Coarse
# multigrid levels (sums of such blocks) keep the 6 entries.

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
    """Work arrays of grid_implicit_blocks for a grid layout: (X, V, P, seen, S, T)."""
    n = layout.rows * layout.cols
    m = int(sum((b[4] - b[3]) * (layout.rows - b[0]) for b in layout.blocks))
    edges = int(pblocks[:, 1].sum())
    ring = int(pblocks[:, 2].max() + GRID_CHUNK - 1) // GRID_CHUNK + 1
    X = np.zeros((3, n + GRID_PAD))
    V = np.zeros((3, n + GRID_PAD))
    P = np.zeros((3, edges + GRID_PAD))
    seen = np.full((3, m), np.nan)  # NaN: the first call fills P
    S = np.zeros(_NS * GRID_CHUNK)
    T = np.zeros(pblocks.shape[0] * ring * _NT * GRID_CHUNK)
    return X, V, P, seen, S, T


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def _grid_params(k, c, rest, cols, gblocks, pblocks, P, seen):
    """Copy k, c, rest (spring order) into their slots of P (3, E + pad) unless they equal
    ``seen`` (3, m), the values P was filled from; then seen := them."""
    m = k.shape[0]
    differ = 0
    s0 = seen[0]
    s1 = seen[1]
    s2 = seen[2]
    for s in range(m):  # loads only: ~8 us on the 64 x 64 cloth, the copy ~17
        differ += (k[s] != s0[s]) | (c[s] != s1[s]) | (rest[s] != s2[s])
    if differ == 0:
        return
    for s in range(m):
        s0[s] = k[s]
        s1[s] = c[s]
        s2[s] = rest[s]
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


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"},
      inline="always")
def _grid_springs(X, V, P, S, T, a0, b0, e, w, alpha, beta):
    """Springs a0 + j -> b0 + j, slot e + j, j < w: n, g, h (exact, clamped) into S rows,
    force, Ks u, Ks_clamped u on the lower end into T rows (see the comment above)."""
    ks_ = P[0, e:e + w]
    cs_ = P[1, e:e + w]
    rs_ = P[2, e:e + w]
    xa0 = X[0, a0:a0 + w]
    xa1 = X[1, a0:a0 + w]
    xa2 = X[2, a0:a0 + w]
    xb0 = X[0, b0:b0 + w]
    xb1 = X[1, b0:b0 + w]
    xb2 = X[2, b0:b0 + w]
    va0 = V[0, a0:a0 + w]
    va1 = V[1, a0:a0 + w]
    va2 = V[2, a0:a0 + w]
    vb0 = V[0, b0:b0 + w]
    vb1 = V[1, b0:b0 + w]
    vb2 = V[2, b0:b0 + w]
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
    b0 = b[0, e:e + w]
    b1 = b[1, e:e + w]
    b2 = b[2, e:e + w]
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
def grid_implicit_blocks(x, v, k, c, rest, cols, gblocks, pblocks, alpha, beta,
                         X, V, P, seen, S, T, force, kv, kv_clamped, b_exact, b_clamped):
    """Everything a theta-method step needs from the springs of a grid, in one pass.

    x, v (n, 3): state, m and m/s (float32 or float64); k (N/m), c (N*s/m), rest (m):
    (m,) in spring order, read live (changes are noticed by comparison with ``seen``);
    cols: row length; gblocks: GridLayout.blocks; pblocks: padded_edges of its offsets;
    alpha = (theta dt)^2 in s^2, beta = theta dt in s. Scratch from grid_implicit_scratch:
    X, V, P, seen, S, T. Out: force (N), kv, kv_clamped (Ks_graph v, exact and clamped,
    N/s), each (3, n + GRID_PAD), pads zero; b_exact, b_clamped (COMPACT_ROWS,
    E + GRID_PAD): alpha Ks + beta c n n^T per padded edge slot, compact (see above),
    zero in slots without a spring. All in float64
    (the blocks stored in their arrays' dtype), same formulas as stiffness_blocks,
    system_product and spring_forces; per-node sums run offset block by offset block.
    """
    n = x.shape[0]
    C = GRID_CHUNK
    nb = gblocks.shape[0]
    ring = T.shape[0] // (nb * _NT * C)  # chunks of T kept per offset block
    _grid_params(k, c, rest, cols, gblocks, pblocks, P, seen)
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
    b0 = edges[0, base:base + count]
    b1 = edges[1, base:base + count]
    b2 = edges[2, base:base + count]
    b3 = edges[3, base:base + count]
    b4 = edges[4, base:base + count]
    b5 = edges[5, base:base + count]
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
    w0 = edges[0, base:base + count]
    w1 = edges[1, base:base + count]
    w2 = edges[2, base:base + count]
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
        xa0 = x[0, :count]
        xa1 = x[1, :count]
        xa2 = x[2, :count]
        xb0 = x[0, shift:shift + count]
        xb1 = x[1, shift:shift + count]
        xb2 = x[2, shift:shift + count]
        t0 = temp[0, :count]
        t1 = temp[1, :count]
        t2 = temp[2, :count]
        if compact:
            _compact_terms(edges, base, xa0, xa1, xa2, xb0, xb1, xb2, t0, t1, t2)
        else:
            _full_terms(edges, base, xa0, xa1, xa2, xb0, xb1, xb2, t0, t1, t2)
        _edge_scatter(temp, y, count, shift, n)
    _zero_fixed_and_pad(y, fixed, n)
