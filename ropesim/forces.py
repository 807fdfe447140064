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
        diffs = np.unique(np.abs(b - a)[: 1 << 16])
        candidates = sorted({n} | {int(d) for d in diffs[:32] if d >= 2 and n % d == 0},
                            reverse=True)
    for cols in candidates:
        if cols < 2 or n % cols:
            continue
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


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"}, inline="always")
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
