"""Multigrid-preconditioned CG on structured grids.

On a grid cloth (kernels.grid.grid_layout) the implicit step uses an aggregation multigrid
cycle as the preconditioner: Jacobi's ~500 iterations for a stiff cloth at dt = 1/60
become ~13. Level l + 1 merges 2 x 2 nodes of level l (2 x 1 along a side shorter than
4 nodes: a rope is a 1 x n grid; piecewise-constant prolongation P); its operator is
the Galerkin product P^T A_l P, which for a "mass + spring-Laplacian" operator is
again one: the node blocks are summed, the edge
blocks of the edges between two aggregates are summed into a coarse edge, edges inside
an aggregate drop out, and an edge to a fixed node is added to the free end's node
block. The smoother is block-Jacobi (3 x 3 node blocks, weight omega) before and after
the coarse correction; the coarsest level (<= 16 nodes) is solved directly (a product
with its dense inverse, computed from a Cholesky factor). The preconditioner is built
from the clamped (always definite) matrix, so it is valid for both CG attempts. The smoothing weight
0.9 (< 1, so the smoother converges for these operators) needs ~8% fewer CG
iterations than 0.7 on the stiff 64 x 64 cloth. A V-cycle (one coarse visit per level)
is symmetric positive definite but weak with piecewise-constant aggregation (~25
iterations on that cloth, the error of each level's coarse space compounding); the
first two levels therefore use K-cycles (see mg_cycle), ~13 iterations, and CG is the
flexible variant that a nonlinear preconditioner needs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels.grid import grid_offsets
from ..kernels.grid_implicit import COMPACT_ROWS, GRID_PAD, grid_apply, padded_edges
from .cg import CONVERGED, MAX_ITERATIONS, NEGATIVE_CURVATURE, STOPPED


def _sorted_pairs(first: np.ndarray, second: np.ndarray) -> list[tuple[int, int]]:
    """The distinct (first[i], second[i]) pairs of two integer arrays, sorted (as
    sorted(set(zip(first, second))), without a Python loop over the elements)."""
    if first.size == 0:
        return []
    base, low = int(first.min()), int(second.min())
    span = int(second.max()) - low + 1
    keys = np.unique((first.astype(np.int64) - base) * span + (second - low))
    return [(int(k // span) + base, int(k % span) + low) for k in keys]


class GridMultigrid:
    """The level structure of the multigrid cycle for a rows x cols grid with these spring
    offsets (built once per system; ``setup`` refreshes the operators every solve).

    ``arrays()`` are the operators (read-only during a solve); ``workspace(k)`` the
    scratch vectors of solver k: ``workspaces`` solves can run at once on one hierarchy.
    """

    def __init__(self, rows: int, cols: int, offsets, omega: float = 0.9,
                 coarsest: int = 16, dtype=np.float32, kcycle_levels: int = 2,
                 workspaces: int = 1):
        # a preconditioner needs no more precision than float32 (CG itself runs in
        # float64): half the memory traffic of every V-cycle
        dtype = np.dtype(dtype)
        self.omega = dtype.type(omega)
        dims, pbs, aggs, ecos = [], [], [], []
        r, c, offs = int(rows), int(cols), [tuple(map(int, o)) for o in offsets]
        while True:
            pb = padded_edges(r, c, offs)
            dims.append((r, c))
            pbs.append(pb)
            # a side of 4 or more nodes is halved, a shorter one kept (semi-coarsening:
            # a rope is a 1 x n grid, a strip of cloth 2 x n), so the dense coarsest
            # level stays small for every shape
            fr, fc = (2 if r >= 4 else 1), (2 if c >= 4 else 1)
            if r * c <= coarsest or fr == fc == 1:
                break
            rc, cc = (r + fr - 1) // fr, (c + fc - 1) // fc
            node = np.arange(r * c)
            agg = (node // c // fr) * cc + (node % c) // fc
            # every edge slot of this level: lower end a, upper end a + shift
            lo_list, hi_list, valid_list = [], [], []
            for (dr, dc), (base, count, shift) in zip(offs, pb):
                a = np.arange(count)
                col = a % c + dc
                lo_list.append(a)
                hi_list.append(a + shift)
                valid_list.append((col >= 0) & (col < c))
            lo = np.concatenate(lo_list)
            hi = np.minimum(np.concatenate(hi_list), r * c - 1)
            valid = np.concatenate(valid_list)
            ia, ib = agg[lo], agg[hi]
            lower, dR, dC = grid_offsets(ia, ib, cc)
            cross = valid & (ia != ib)
            coarse_offs = _sorted_pairs(dR[cross], dC[cross])
            cpb = padded_edges(rc, cc, coarse_offs)
            eco = np.full(lo.size, -1, np.int64)
            for o, (base, _, _) in zip(coarse_offs, cpb):
                sel = cross & (dR == o[0]) & (dC == o[1])
                eco[sel] = base + lower[sel]
            aggs.append(agg.astype(np.int64))
            ecos.append(eco)
            r, c, offs = rc, cc, coarse_offs
        self.levels = len(dims)
        self.dims = dims
        n = [a * b for a, b in dims]
        e = [int(pb[:, 1].sum()) if pb.size else 0 for pb in pbs]
        # every level's block is padded: rows of (k, size) arrays are then never a
        # multiple of 4 KiB apart (4K aliasing stalls loads behind unrelated stores)
        self.nodes = np.array(n, dtype=np.int64)
        self.node_off = np.concatenate([[0], np.cumsum([k + GRID_PAD for k in n])]).astype(
            np.int64)
        self.vec_off = self.node_off
        self.edge_off = np.concatenate([[0], np.cumsum([k + GRID_PAD for k in e])]).astype(
            np.int64)
        self.pb_off = np.concatenate([[0], np.cumsum([len(pb) for pb in pbs])]).astype(np.int64)
        self.pblocks = np.concatenate([pb for pb in pbs]).astype(np.int64).reshape(-1, 3)
        total_nodes = total_vec = int(self.node_off[-1])
        total_edges = int(self.edge_off[-1])
        self.agg = np.zeros(total_nodes, np.int64)
        self.eco = np.full(max(total_edges, 1), -1, np.int64)
        for l, (agg, eco) in enumerate(zip(aggs, ecos)):
            self.agg[self.node_off[l]:self.node_off[l] + agg.size] = agg
            self.eco[self.edge_off[l]:self.edge_off[l] + eco.size] = eco
        # flat storage, each level a contiguous (6, E_l), (6, n_l) or (3, n_l + pad) block
        self.diag = np.zeros(6 * total_nodes, dtype)
        self.dinv = np.zeros(6 * total_nodes, dtype)
        self.fixed = np.zeros(total_nodes, np.uint8)
        nc = 3 * n[-1]
        self.factor = np.zeros((nc, nc))  # the coarsest level's inverse (see _mg_setup)
        self.inverse = np.zeros((nc, nc))  # scratch of _mg_setup
        self.set_kcycle_levels(kcycle_levels)

        def views(flat, off, k):  # per-level (k, size) views of a flat array, as a tuple
            return tuple(flat[k * off[l]:k * off[l + 1]].reshape(k, off[l + 1] - off[l])
                         for l in range(self.levels))

        # level 0 keeps the compact blocks it is given (forces.COMPACT_ROWS rows), the
        # coarse levels (Galerkin sums) all 6 entries
        self.edges_l = tuple(
            np.zeros((COMPACT_ROWS if l == 0 else 6, self.edge_off[l + 1] - self.edge_off[l]),
                     dtype) for l in range(self.levels))
        self.diag_l = views(self.diag, self.node_off, 6)
        self.dinv_l = views(self.dinv, self.node_off, 6)
        self.fine_edges = self.edges_l[0]  # level 0 edge blocks, refreshed every solve
        self.fine_full = np.zeros((6, self.fine_edges.shape[1]), dtype)  # expanded
        self.cols = np.array([c for _, c in dims], dtype=np.int64)
        # per solver: cycle vectors X (solution), B (right-hand side), R (residual), T
        # (scratch), C1, V1 (the K-cycle's first direction and its product), the K-cycle's
        # (rho1, alpha1) per level and the coarsest solve's scratch
        self._workspaces = []
        for _ in range(workspaces):
            flats = [np.zeros(3 * total_vec, dtype) for _ in range(6)]
            self._workspaces.append(
                tuple(views(f, self.vec_off, 3) for f in flats)
                + (np.zeros((self.levels, 2)), np.zeros(nc, dtype)))

    def set_kcycle_levels(self, levels: int) -> None:
        """K-cycle coarse correction on the first ``levels`` levels, V-cycle below (0:
        a plain V-cycle, a symmetric positive definite preconditioner)."""
        self.modes = np.full(self.levels, V_CYCLE, np.int64)
        self.modes[:levels] = K_CYCLE
        self.schedule = cycle_schedule(self.modes)

    def arrays(self) -> tuple:
        """The operators, as mg_cycle and grid_pcg take them (``mg``)."""
        return (self.schedule, self.omega, self.nodes, self.node_off, self.pb_off,
                self.pblocks, self.edges_l, self.diag_l, self.dinv_l, self.fixed, self.agg,
                self.factor, self.cols)

    def workspace(self, k: int = 0) -> tuple:
        """Solver k's scratch, as mg_cycle and grid_pcg take it (``work``): per-level
        tuples X, B, R, T, C1, V1, then kstate and the coarsest solve's scratch."""
        return self._workspaces[k]

    def setup(self, mass, fixed, fine_edges=None) -> None:
        """Build every level from the level-0 edge blocks (``fine_edges``, copied into
        self.fine_edges, or already there) and the masses."""
        if fine_edges is not None:
            self.fine_edges[...] = fine_edges
        _mg_setup(mass, fixed, self.levels, self.nodes, self.node_off, self.edge_off,
                  self.pb_off, self.pblocks, self.edges_l, self.diag_l, self.dinv_l, self.fixed,
                  self.agg, self.eco, self.factor, self.inverse, self.fine_full)


@njit(cache=True, error_model="numpy", boundscheck=False)
def _inv3(a, b, c, d, e, f):
    """Inverse of the symmetric [[a, d, e], [d, b, f], [e, f, c]] as 6 entries (0 if singular)."""
    A = b * c - f * f
    B = a * c - e * e
    C = a * b - d * d
    D = e * f - d * c
    E = d * f - e * b
    F = d * e - a * f
    det = a * A + d * D + e * E
    if not det > 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    s = 1.0 / det
    return A * s, B * s, C * s, D * s, E * s, F * s


@njit(cache=True, error_model="numpy", boundscheck=False)
def _assign(dst, src):
    """dst[:, :] = src for 2-D arrays of the same shape, as a plain loop (numba's
    array-to-array slice assignment compiles a few seconds of broadcasting code)."""
    for d in range(dst.shape[0]):
        for i in range(dst.shape[1]):
            dst[d, i] = src[d, i]


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def _expand_compact(compact, full):
    """full = the (xx, yy, zz, xy, xz, yz) rows of compact (w, h) blocks, w w^T + h I."""
    w0 = compact[0]
    w1 = compact[1]
    w2 = compact[2]
    h = compact[3]
    for e in range(compact.shape[1]):
        full[0, e] = w0[e] * w0[e] + h[e]
        full[1, e] = w1[e] * w1[e] + h[e]
        full[2, e] = w2[e] * w2[e] + h[e]
        full[3, e] = w0[e] * w1[e]
        full[4, e] = w0[e] * w2[e]
        full[5, e] = w1[e] * w2[e]


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _node_edges(pblocks, o, n):
    """(base, shift, count) of offset block o of a level of n nodes: its first edge slot,
    the node offset of its far ends, and how many of its edges end on a node (edge a
    joins nodes a and a + shift, so a < n - shift)."""
    shift = pblocks[o, 2]
    return pblocks[o, 0], shift, min(pblocks[o, 1], n - shift)


@njit(cache=True, error_model="numpy", boundscheck=False)
def _mg_setup(mass, fixed0, levels, nodes, node_off, edge_off, pb_off, pblocks, edges_l,
              diag_l, dinv_l, fixed, agg, eco, factor, inverse, fine_full):
    """Refresh every level (Galerkin coarse operators, block-Jacobi inverses, coarsest
    inverse, via Cholesky) from level 0's edge blocks, the masses and the fixed flags.
    Level 0's compact blocks are expanded into fine_full (6, E0) first."""
    _expand_compact(edges_l[0], fine_full)
    n0 = mass.shape[0]
    diag = diag_l[0]
    for i in range(n0):
        fixed[i] = 0 if fixed0[i] == 0 else 1
        diag[0, i] = mass[i]
        diag[1, i] = mass[i]
        diag[2, i] = mass[i]
        diag[3, i] = 0.0
        diag[4, i] = 0.0
        diag[5, i] = 0.0
    for l in range(levels):
        no = node_off[l]
        n = nodes[l]
        diag = diag_l[l]
        dinv = dinv_l[l]
        edges = fine_full if l == 0 else edges_l[l]
        # node blocks with their edges: D = diag + sum of incident edge blocks
        _assign(dinv, diag)
        for o in range(pb_off[l], pb_off[l + 1]):
            base, shift, cnt = _node_edges(pblocks, o, n)
            for q in range(6):
                eq = edges[q, base:base + cnt]
                da = dinv[q, :cnt]
                db = dinv[q, shift:shift + cnt]
                for a in range(cnt):
                    da[a] += eq[a]
                for a in range(cnt):
                    db[a] += eq[a]
        for i in range(n):
            if fixed[no + i]:
                for q in range(6):
                    dinv[q, i] = 0.0
                continue
            r = _inv3(dinv[0, i], dinv[1, i], dinv[2, i], dinv[3, i], dinv[4, i], dinv[5, i])
            for q in range(6):
                dinv[q, i] = r[q]
        if l == levels - 1:
            break
        # Galerkin coarse level
        nco = node_off[l + 1]
        nc = nodes[l + 1]
        cdiag = diag_l[l + 1]
        cedges = edges_l[l + 1]
        cdiag[:, :] = 0.0
        cedges[:, :] = 0.0
        for j in range(nc):
            fixed[nco + j] = 1
        for i in range(n):
            if fixed[no + i]:
                continue
            j = agg[no + i]
            fixed[nco + j] = 0
            for q in range(6):
                cdiag[q, j] += diag[q, i]
        eo = edge_off[l]
        for o in range(pb_off[l], pb_off[l + 1]):
            base, shift, cnt = _node_edges(pblocks, o, n)
            for a in range(cnt):
                b = a + shift
                fa = fixed[no + a]
                fb = fixed[no + b]
                if fa and fb:
                    continue
                e = base + a
                if fa or fb:  # an edge to a fixed node stiffens the free end's node
                    j = agg[no + (b if fa else a)]
                    for q in range(6):
                        cdiag[q, j] += edges[q, e]
                    continue
                target = eco[eo + e]
                if target >= 0:
                    for q in range(6):
                        cedges[q, target] += edges[q, e]
    # coarsest level: dense matrix and its Cholesky factor (fixed nodes: identity rows)
    l = levels - 1
    no = node_off[l]
    n = nodes[l]
    diag = diag_l[l]
    edges = fine_full if l == 0 else edges_l[l]
    m = 3 * n
    factor[:, :] = 0.0
    for i in range(n):
        for p in range(3):
            for q in range(3):
                factor[3 * i + p, 3 * i + q] = diag[_SYM[p, q], i]
    for o in range(pb_off[l], pb_off[l + 1]):
        base, shift, cnt = _node_edges(pblocks, o, n)
        for a in range(cnt):
            b = a + shift
            for p in range(3):
                for q in range(3):
                    w = edges[_SYM[p, q], base + a]
                    factor[3 * a + p, 3 * a + q] += w
                    factor[3 * b + p, 3 * b + q] += w
                    factor[3 * a + p, 3 * b + q] -= w
                    factor[3 * b + p, 3 * a + q] -= w
    for i in range(n):
        if fixed[no + i]:
            for p in range(3):
                for k in range(m):
                    factor[3 * i + p, k] = 0.0
                    factor[k, 3 * i + p] = 0.0
                factor[3 * i + p, 3 * i + p] = 1.0
    for j in range(m):  # in-place Cholesky, lower triangle
        s = factor[j, j]
        for k in range(j):
            s -= factor[j, k] * factor[j, k]
        s = np.sqrt(s) if s > 0.0 else 1e-300
        factor[j, j] = s
        for i in range(j + 1, m):
            t = factor[i, j]
            for k in range(j):
                t -= factor[i, k] * factor[j, k]
            factor[i, j] = t / s
    # the inverse, from the factor: the coarsest solve (several per cycle) is then one
    # dense product instead of two dependent triangular sweeps. A^-1 = W^T W with W =
    # L^-1 (lower triangular), both formed row by row (contiguous inner loops)
    w = inverse
    for i in range(m):
        for j in range(m):
            w[i, j] = 0.0
        w[i, i] = 1.0
        for k in range(i):  # row i of W: (e_i - sum_k L[i, k] W[k, :]) / L[i, i]
            lik = factor[i, k]
            for j in range(k + 1):
                w[i, j] -= lik * w[k, j]
        d = 1.0 / factor[i, i]
        for j in range(i + 1):
            w[i, j] *= d
    for i in range(m):
        for j in range(m):
            factor[i, j] = 0.0
    for k in range(m):  # A^-1[i, j] = sum over k >= max(i, j) of W[k, i] W[k, j]
        for i in range(k + 1):
            wki = w[k, i]
            for j in range(i + 1):
                factor[i, j] += wki * w[k, j]
    for i in range(m):  # symmetric: the exact mirror image
        for j in range(i + 1, m):
            factor[i, j] = factor[j, i]


_SYM = np.array([[0, 3, 4], [3, 1, 5], [4, 5, 2]], dtype=np.int64)


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath={"nsz", "contract"})
def _jacobi(dinv, b, x, n, omega, add):
    """x (+)= omega D^-1 b over n nodes (D^-1 as 6 symmetric entries per node)."""
    for i in range(n):
        b0 = b[0, i]
        b1 = b[1, i]
        b2 = b[2, i]
        z0 = omega * (dinv[0, i] * b0 + dinv[3, i] * b1 + dinv[4, i] * b2)
        z1 = omega * (dinv[3, i] * b0 + dinv[1, i] * b1 + dinv[5, i] * b2)
        z2 = omega * (dinv[4, i] * b0 + dinv[5, i] * b1 + dinv[2, i] * b2)
        if add:
            x[0, i] += z0
            x[1, i] += z1
            x[2, i] += z2
        else:
            x[0, i] = z0
            x[1, i] = z1
            x[2, i] = z2


@njit(cache=True, error_model="numpy", boundscheck=False,
      fastmath={"nsz", "contract", "reassoc"})
def _cg_update(dv, r, p, ap, z, b, step, n):
    """dv += step p, r -= step ap, b = r (the multigrid cycle's input) in one pass.
    Returns (r.r, r.z) of the new r with z the previous preconditioned residual
    (flexible CG needs the second)."""
    total = 0.0
    previous = 0.0
    for i in range(n):
        r0 = r[0, i] - step * ap[0, i]
        r1 = r[1, i] - step * ap[1, i]
        r2 = r[2, i] - step * ap[2, i]
        dv[0, i] += step * p[0, i]
        dv[1, i] += step * p[1, i]
        dv[2, i] += step * p[2, i]
        r[0, i] = r0
        r[1, i] = r1
        r[2, i] = r2
        total += r0 * r0 + r1 * r1 + r2 * r2
        b[0, i] = r0
        b[1, i] = r1
        b[2, i] = r2
        previous += r0 * z[0, i] + r1 * z[1, i] + r2 * z[2, i]
    return total, previous


@njit(cache=True, error_model="numpy", boundscheck=False,
      fastmath={"nsz", "contract", "reassoc"})
def _cg_direction(p, z, ratio, n):
    """p = z + ratio p."""
    for d in range(3):
        pd = p[d]
        zd = z[d]
        for i in range(n):
            pd[i] = zd[i] + ratio * pd[i]


@njit(cache=True, error_model="numpy", boundscheck=False,
      fastmath={"nsz", "contract", "reassoc"})
def _coarsest_solve(l, nodes, node_off, fixed, factor, X_l, B_l, scratch):
    """x = A^-1 b on the coarsest level (factor holds the dense inverse, see _mg_setup)."""
    no = node_off[l]
    n = nodes[l]
    m = 3 * n
    x = X_l[l]
    b = B_l[l]
    y = scratch[:m]
    for i in range(n):
        for d in range(3):
            y[3 * i + d] = 0.0 if fixed[no + i] else b[d, i]
    for i in range(n):
        for d in range(3):
            if fixed[no + i]:
                x[d, i] = 0.0
                continue
            row = factor[3 * i + d]
            s = 0.0
            for k in range(m):
                s += row[k] * y[k]
            x[d, i] = s


#: coarse-correction modes of a multigrid level (GridMultigrid.modes)
V_CYCLE = 0  # one visit of the next level
K_CYCLE = 1  # two visits, combined by two steps of flexible CG on the next level

#: multigrid schedule operations
_PRE, _RESTRICT, _SOLVE, _PROLONG, _POST, _K_FIRST, _K_SECOND = range(7)


def cycle_schedule(modes) -> np.ndarray:
    """The (operation, level) sequence of one cycle from level 0 (a flat list, so the
    kernel runs it without recursion: numba's cache cannot hold recursive functions).
    modes[l] is V_CYCLE or K_CYCLE for the coarse correction of level l; the last level
    is solved directly."""
    levels = len(modes)
    ops = []

    def cycle(l):
        if l == levels - 1:
            ops.append((_SOLVE, l))
            return
        ops.append((_PRE, l))
        ops.append((_RESTRICT, l))
        cycle(l + 1)
        if modes[l] == K_CYCLE and l + 1 < levels - 1:
            ops.append((_K_FIRST, l + 1))
            cycle(l + 1)
            ops.append((_K_SECOND, l + 1))
        ops.append((_PROLONG, l))
        ops.append((_POST, l))

    cycle(0)
    return np.array(ops, dtype=np.int64).reshape(-1, 2)


@njit(cache=True, error_model="numpy", boundscheck=False)
def _restrict(b, r, bc, n, cols):
    """bc = P^T (b - r) on a rows x cols level (n nodes): the sum over each 2 x 2
    aggregate, added in fine-node order; the pad of bc is zeroed."""
    rows = n // cols
    cc = (cols + 1) // 2
    half = cols // 2
    odd = cols % 2 == 1
    for d in range(3):
        bd = b[d]
        rd = r[d]
        cd = bc[d]
        for J in range((rows + 1) // 2):
            f0 = 2 * J * cols
            o = J * cc
            if 2 * J + 1 < rows:
                f1 = f0 + cols
                for K in range(half):
                    a = f0 + 2 * K
                    e = f1 + 2 * K
                    cd[o + K] = (((bd[a] - rd[a]) + (bd[a + 1] - rd[a + 1]))
                                 + (bd[e] - rd[e])) + (bd[e + 1] - rd[e + 1])
                if odd:
                    a = f0 + cols - 1
                    e = f1 + cols - 1
                    cd[o + half] = (bd[a] - rd[a]) + (bd[e] - rd[e])
            else:
                for K in range(half):
                    a = f0 + 2 * K
                    cd[o + K] = (bd[a] - rd[a]) + (bd[a + 1] - rd[a + 1])
                if odd:
                    a = f0 + cols - 1
                    cd[o + half] = bd[a] - rd[a]
        for j in range(((rows + 1) // 2) * cc, cd.shape[0]):
            cd[j] = 0.0


@njit(cache=True, error_model="numpy", boundscheck=False)
def mg_cycle(mg, work):
    """X level 0 = M^-1 (B level 0): one multigrid cycle (see cycle_schedule) with the
    operators ``mg`` (GridMultigrid.arrays()) and the scratch ``work`` (.workspace(k)).

    Each level: block-Jacobi from zero, the residual restricted to the next level, the
    coarse correction, prolongation, block-Jacobi again. The coarse correction is one
    cycle of the next level (V_CYCLE) or, for K_CYCLE, two of them combined by two steps
    of flexible CG on that level (Notay's K-cycle): the first direction is c1 =
    cycle(rc) for the restricted residual rc, the second c2 = cycle(rc - alpha1 A c1),
    and the correction is their A-optimal combination. Unsmoothed aggregation loses
    accuracy level by level in a V-cycle; the K-cycle recovers it (~2x fewer outer CG
    iterations on the stiff 64 x 64 cloth) for about a W-cycle's work. C1, V1 and
    kstate (levels, 2) hold the K-cycle's first direction, its product and (rho1,
    alpha1).
    """
    (schedule, omega, nodes, node_off, pb_off, pblocks, edges_l, diag_l, dinv_l, fixed,
     agg, factor, cols) = mg
    X_l, B_l, R_l, T_l, C1_l, V1_l, kstate, scratch = work
    for step in range(schedule.shape[0]):
        op = schedule[step, 0]
        l = schedule[step, 1]
        no = node_off[l]
        n = nodes[l]
        if op == _SOLVE:
            _coarsest_solve(l, nodes, node_off, fixed, factor, X_l, B_l, scratch)
            continue
        x = X_l[l]
        b = B_l[l]
        r = R_l[l]
        pb = pblocks[pb_off[l]:pb_off[l + 1]]
        fx = fixed[no:no + n]
        if op == _PRE:
            _jacobi(dinv_l[l], b, x, n, omega, False)
        elif op == _PROLONG:
            xc = X_l[l + 1]
            for i in range(n):
                if fx[i]:
                    continue
                j = agg[no + i]
                x[0, i] += xc[0, j]
                x[1, i] += xc[1, j]
                x[2, i] += xc[2, j]
        elif op == _K_FIRST:  # x = c1 = cycle(rc), b = rc: keep c1, b = rc - alpha1 A c1
            c1 = C1_l[l]
            v1 = V1_l[l]
            _assign(c1, x)
            grid_apply(c1, diag_l[l], edges_l[l], pb, fx, T_l[l], v1)
            rho1 = _dot3(c1, v1, n)
            alpha1 = _dot3(c1, b, n) / rho1 if rho1 > 0.0 else 0.0
            kstate[l, 0] = rho1
            kstate[l, 1] = alpha1
            for d in range(3):
                for i in range(n):
                    b[d, i] -= alpha1 * v1[d, i]
        elif op == _K_SECOND:  # x = c2 = cycle(b): x = w1 c1 + w2 c2
            c1 = C1_l[l]
            rho1 = kstate[l, 0]
            alpha1 = kstate[l, 1]
            w1 = alpha1
            w2 = 0.0
            if rho1 > 0.0:
                grid_apply(x, diag_l[l], edges_l[l], pb, fx, T_l[l], r)
                gamma = _dot3(x, V1_l[l], n)
                rho2 = _dot3(x, r, n) - gamma * gamma / rho1
                if rho2 > 1e-12 * rho1:  # else c2 adds nothing new: the first step alone
                    alpha2 = _dot3(x, b, n)
                    w1 = alpha1 - gamma * alpha2 / (rho1 * rho2)
                    w2 = alpha2 / rho2
            for d in range(3):
                for i in range(n):
                    x[d, i] = w1 * c1[d, i] + w2 * x[d, i]
        else:  # _RESTRICT or _POST: both start from the residual r = b - A x
            grid_apply(x, diag_l[l], edges_l[l], pb, fx, T_l[l], r)
            if op == _RESTRICT:
                _restrict(b, r, B_l[l + 1], n, cols[l])
            else:
                for d in range(3):
                    for i in range(n):
                        r[d, i] = b[d, i] - r[d, i]
                _jacobi(dinv_l[l], r, x, n, omega, True)


@njit(cache=True, error_model="numpy", boundscheck=False,
      fastmath={"nsz", "contract", "reassoc"})
def _dot3(a, b, n):
    total = 0.0
    for i in range(n):
        total += a[0, i] * b[0, i] + a[1, i] * b[1, i] + a[2, i] * b[2, i]
    return total


@njit(cache=True, error_model="numpy", boundscheck=False, nogil=True)
def grid_pcg(rhs, op_diag, op_edges, op_pblocks, fixed, vectors, tolerance, max_iterations,
             stop, mg, work):
    """Multigrid-preconditioned flexible CG for A dv = rhs on a grid (vectors (3, n + pad),
    zero at fixed nodes and in the pad); ``vectors`` = (dv, r, p, ap, temp), dv starts at
    0; ``mg``, ``work``: see mg_cycle. Returns (status, iterations, relative residual
    |r| / |rhs|) like conjugate_gradient, or STOPPED once ``stop[0]`` is set (by
    another thread; the kernel runs without the GIL, so two solves can run at once).

    Flexible (Polak-Ribiere) CG: a K-cycle preconditioner is not a fixed linear map, and
    beta = r.(z - z_previous) / r_previous.z_previous keeps CG converging for it (with a
    linear preconditioner it equals the usual beta up to rounding)."""
    dv, r, p, ap, temp = vectors
    n = fixed.shape[0]
    B0 = work[1][0]
    X0 = work[0][0]
    dv[:, :] = 0.0
    _assign(r, rhs)
    rhs_norm = np.sqrt(_dot3(r, r, n))
    if rhs_norm == 0.0:
        return CONVERGED, 0, 0.0
    _assign(B0, r)
    mg_cycle(mg, work)
    _assign(p, X0)
    rz = _dot3(r, X0, n)
    if not rz > 0.0:
        return NEGATIVE_CURVATURE, 0, 1.0
    for it in range(max_iterations):
        if stop[0]:
            return STOPPED, it, np.sqrt(_dot3(r, r, n)) / rhs_norm
        grid_apply(p, op_diag, op_edges, op_pblocks, fixed, temp, ap)
        curvature = _dot3(p, ap, n)
        if not curvature > 0.0:
            return NEGATIVE_CURVATURE, it + 1, np.sqrt(_dot3(r, r, n)) / rhs_norm
        step = rz / curvature
        rr, r_z_previous = _cg_update(dv, r, p, ap, X0, B0, step, n)
        residual = np.sqrt(rr) / rhs_norm
        if residual <= tolerance:
            return CONVERGED, it + 1, residual
        mg_cycle(mg, work)
        # z = X level 0, read in place (its float32 -> float64 reads are exact)
        rz_new = _dot3(r, X0, n)
        if not rz_new > 0.0:
            return NEGATIVE_CURVATURE, it + 1, residual
        ratio = (rz_new - r_z_previous) / rz
        rz = rz_new
        _cg_direction(p, X0, ratio, n)
    return MAX_ITERATIONS, max_iterations, np.sqrt(_dot3(r, r, n)) / rhs_norm
