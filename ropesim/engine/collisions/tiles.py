"""Rest-shape tiles: the search for the candidate pairs of self-collision (numba).

The primitives are grouped once, by their place in the rest shape (the system's initial
positions), into tiles: cubic rest cells of side TILE_SPACINGS particle spacings, one
connected component per tile (a 6 x 6 patch of a cloth). On each build, every tile is
fitted with the affine map that best carries its particles' rest positions r to their
positions x now (least squares in the tile's rest plane),

    x = f(r) + e,    f(r) = x_mean + A (r - r_mean),    |e| <= rho (the residual),

and gets the bounding box of its particles. The tiles are swept along the axis of their
widest spread; a pair of tiles whose boxes come within ``reach`` (m) is either

* **certified**: two primitives of one component that do not repel by the rest-shape
  exclusion are at least E = EXCLUDE_FACTOR x thickness apart in the rest shape, and for
  r_i in tile a, r_j in tile b

      |x_i - x_j| >= sigma_a sqrt(E^2 - h^2) - rho_a - rho_b - mu_ab,

  with sigma_a the smallest stretch of A_a in its rest plane, h a bound of the component
  of r_i - r_j normal to that plane (the tiles' rest thickness) and mu_ab a bound of
  |f_a - f_b| over tile b's rest box (how far b is from where a's map puts it). When that
  bound is above the reach (with a's map or b's), no pair of the two tiles can be in the
  list: a smooth part of a cloth is settled without a look at its particles;
* or searched by brute force, primitive against primitive (box, distance and the
  exclusion tests of the neighbour list): folds, layers, other components, ropes.

The bound is exact (points of capsules and triangles are convex combinations of their
particles, so they obey it too), so the list holds the same pairs as a test of every
pair. A rope or a network whose tile has no rest plane is never certified.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from .geometry import pair_weights, weighted_gap
from .primitives import Primitives

#: tile side (rest shape) in particle spacings (the median over particles of their
#: shortest spring's rest length): 6 builds the benchmark cloth's list 1.2-1.5x faster
#: than 4 (fewer tile pairs to walk and settle), and a 96 x 96 pile's no slower
TILE_SPACINGS = 6.0
#: a tile is planar (can be certified) when the second moment of its rest positions along
#: the second axis is above this fraction of the first
PLANAR_RATIO = 1e-6
#: relative margin on the certificate (float rounding of the fits)
CERTIFY_MARGIN = 1e-6
#: the walk of the tree is cut into tasks, the pairs of its nodes at this depth (and of
#: shallower leaves), dealt in turn to LANES lanes; each lane has its own scratch and
#: buffer of found pairs, and the parallel query runs the lanes on numba's threads. The
#: lanes, not the threads, split the work, so the list does not depend on the thread count
TASK_DEPTH = 5
LANES = 8
#: pairs a lane's buffer holds to start with (doubled when a build needs more)
LANE_PAIRS = 256


@dataclass
class Tiles:
    """Tiles of a Primitives set: the static part (rest shape) and the per-build fits.

    prim_start (T+1,), prim_list (P,): the primitives tile by tile; part_start (T+1,),
    part_list: the particles of each tile's primitives; component (T,); rest_mean (T, 3)
    m; frame (T, 3, 3): rows u1, u2 (the rest plane) and the normal; extent (T, 3) m:
    half-sizes of the rest positions along the frame; inv_moment (T, 2) 1/m^2 (0 for a
    tile without a rest plane); plane (M, 2) m: each member's rest offset along u1, u2;
    rest_members (M, 3) m: the members' rest positions; spheres_only (T,): the tile's
    primitives are the spheres of its members, in member order (a cloth's tile).
    Per build: x_mean (T, 3) m, stretch A (T, 3, 3), its in-plane columns A u (T, 2, 3),
    residual rho (T,) m, sigma (T,), box lo/hi (T, 3) m, the members' positions
    x_members (M, 3) m. Per drift check (drifted): lo/hi again, and the box move_lo/hi
    (T, 3) m of the members' displacements since the build.
    """

    prim_start: np.ndarray
    prim_list: np.ndarray
    part_start: np.ndarray
    part_list: np.ndarray
    component: np.ndarray
    rest_mean: np.ndarray
    frame: np.ndarray
    extent: np.ndarray
    inv_moment: np.ndarray
    plane: np.ndarray
    rest_members: np.ndarray
    spheres_only: np.ndarray

    def __post_init__(self) -> None:
        t = self.n_tiles
        self.x_mean = np.zeros((t, 3))
        self.stretch = np.zeros((t, 3, 3))
        self.in_plane = np.zeros((t, 2, 3))
        self.rho = np.zeros(t)
        self.sigma = np.zeros(t)
        self.lo = np.zeros((t, 3))
        self.hi = np.zeros((t, 3))
        self.node_left, self.node_right, self.node_tile, depth = build_tree(self.rest_mean)
        self.node_lo = np.zeros((self.node_tile.size, 3))
        self.node_hi = np.zeros((self.node_tile.size, 3))
        # the drift check's boxes of the displacements since the build, per tile and node
        self.move_lo = np.zeros((t, 3))
        self.move_hi = np.zeros((t, 3))
        self.node_move_lo = np.zeros((self.node_tile.size, 3))
        self.node_move_hi = np.zeros((self.node_tile.size, 3))
        self.tasks = walk_tasks(self.node_left, self.node_right, TASK_DEPTH)
        # per lane: the walk pops one pair and pushes at most three: 2 more per level
        self.stack = np.zeros((LANES, 2 * depth + 8, 2), np.int64)
        sizes = np.diff(self.prim_start)
        # per lane: residuals of the primitives of the two tiles of a searched pair
        self.res_a = np.zeros((LANES, int(sizes.max()) if sizes.size else 0))
        self.res_b = np.zeros_like(self.res_a)
        self.x_members = np.zeros((self.part_list.size, 3))
        members = np.diff(self.part_start)
        # per lane: the members of the two tiles of a searched pair near the other's box
        self.near_a = np.zeros((LANES, int(members.max()) if members.size else 0), np.int64)
        self.near_b = np.zeros_like(self.near_a)
        # per lane: the coordinates of tile b's near members, one row per axis
        self.near_x = np.zeros((LANES, 3, self.near_a.shape[1]))
        # per lane: the pairs found (p, q), how many, tile pairs searched and certified
        self.lane_pairs = np.zeros((LANES, LANE_PAIRS, 2), np.int32)
        self.lane_found = np.zeros(LANES, np.int64)
        self.lane_tally = np.zeros((LANES, 2), np.int64)

    @property
    def n_tiles(self) -> int:
        return self.component.shape[0]


def particle_spacing(rest_x: np.ndarray, adj_start: np.ndarray, adj_list: np.ndarray) -> float:
    """Median over particles with springs of their shortest spring's length in the rest
    shape (m); 1 % of the bounding-box diagonal (at least 1e-6 m) without springs."""
    n = rest_x.shape[0]
    owner = np.repeat(np.arange(n), np.diff(adj_start))
    lengths = np.linalg.norm(rest_x[owner] - rest_x[adj_list], axis=1)
    shortest = np.full(n, np.inf)
    np.minimum.at(shortest, owner, lengths)
    shortest = shortest[np.isfinite(shortest) & (shortest > 0)]
    if shortest.size:
        return float(np.median(shortest))
    return max(0.01 * float(np.linalg.norm(np.ptp(rest_x, axis=0))), 1e-6)


def build_tree(centres: np.ndarray):
    """A binary tree over points (T, 3) m, split at the median of the widest axis:
    (left, right, leaf) per node in preorder (left/right -1 and leaf = the point for a
    leaf, leaf -1 otherwise) and the tree's depth."""
    left, right, leaf = [], [], []
    todo = [(np.arange(centres.shape[0]), -1, 0)] if centres.shape[0] else []  # (points, parent, 0 left / 1 right)
    depth = 0
    levels = [0]
    while todo:
        ids, parent, side = todo.pop()
        node = len(leaf)
        level = levels.pop()
        depth = max(depth, level)
        if parent >= 0:
            (left if side == 0 else right)[parent] = node
        left.append(-1)
        right.append(-1)
        if ids.size == 1:
            leaf.append(int(ids[0]))
            continue
        leaf.append(-1)
        span = np.ptp(centres[ids], axis=0)
        ranked = ids[np.argsort(centres[ids, int(np.argmax(span))], kind="stable")]
        half = ranked.size // 2
        todo.append((ranked[half:], node, 1))  # popped after the left one: preorder
        levels.append(level + 1)
        todo.append((ranked[:half], node, 0))
        levels.append(level + 1)
    return (np.array(left, np.int64), np.array(right, np.int64), np.array(leaf, np.int64),
            depth)


def walk_tasks(left: np.ndarray, right: np.ndarray, depth: int) -> np.ndarray:
    """(K, 2) int64: every pair (i <= j) of the tree's frontier nodes, the nodes at
    ``depth`` and the leaves above it. Each pair of leaves lies under exactly one pair of
    frontier nodes, so walking every task finds what one walk from the root finds."""
    frontier = []
    todo = [(0, 0)] if left.size else []
    while todo:
        node, level = todo.pop()
        if level == depth or left[node] < 0:
            frontier.append(node)
        else:
            todo.append((int(right[node]), level + 1))
            todo.append((int(left[node]), level + 1))
    f = np.array(frontier, np.int64)
    i, j = np.triu_indices(f.size)
    return np.ascontiguousarray(np.column_stack([f[i], f[j]]))


def build_tiles(prims: Primitives) -> Tiles:
    """Group the primitives into rest-shape tiles (see the module docstring)."""
    rest = prims.rest_x
    n = rest.shape[0]
    side = TILE_SPACINGS * particle_spacing(rest, prims.adj_start, prims.adj_list)
    p = prims.prims.astype(np.int64)
    centre = rest[p].mean(axis=1)
    keys = np.column_stack([prims.component[p[:, 0]], np.floor((centre - rest.min(axis=0)) / side).astype(np.int64)])
    _, tile_of = np.unique(keys, axis=0, return_inverse=True)
    tile_of = tile_of.ravel()
    n_tiles = int(tile_of.max()) + 1 if tile_of.size else 0
    prim_list = np.argsort(tile_of, kind="stable").astype(np.int64)
    prim_start = np.zeros(n_tiles + 1, np.int64)
    np.cumsum(np.bincount(tile_of, minlength=n_tiles), out=prim_start[1:])
    members = np.unique(np.repeat(tile_of, 3) * n + p.ravel())
    part_tile, part_list = np.divmod(members, n)
    counts = np.bincount(part_tile, minlength=n_tiles)
    part_start = np.zeros(n_tiles + 1, np.int64)
    np.cumsum(counts, out=part_start[1:])
    r = rest[part_list]
    rest_mean = np.add.reduceat(r, part_start[:-1], axis=0) / counts[:, None]
    q = r - rest_mean[part_tile]
    moment = np.add.reduceat(q[:, :, None] * q[:, None, :], part_start[:-1], axis=0)
    values, vectors = np.linalg.eigh(moment)  # ascending
    frame = np.ascontiguousarray(np.stack([vectors[:, :, 2], vectors[:, :, 1],
                                           vectors[:, :, 0]], axis=1))
    offsets = np.abs(np.einsum("kdj,kj->kd", frame[part_tile], q))
    extent = np.maximum.reduceat(offsets, part_start[:-1], axis=0)
    planar = (counts >= 3) & (values[:, 1] > PLANAR_RATIO * values[:, 2]) & (values[:, 2] > 0)
    inv_moment = np.zeros((n_tiles, 2))
    inv_moment[planar, 0] = 1.0 / values[planar, 2]
    inv_moment[planar, 1] = 1.0 / values[planar, 1]
    # a tile of spheres only lists its particles in both lists, in the same order
    sphere = p[prim_list, 0] == p[prim_list, 2]
    spheres_only = (np.diff(prim_start) == counts) & (
        np.add.reduceat(sphere.astype(np.int64), prim_start[:-1]) == counts)
    for t in np.flatnonzero(spheres_only):
        first, last = prim_start[t], prim_start[t + 1]
        spheres_only[t] = np.array_equal(p[prim_list[first:last], 0],
                                         part_list[part_start[t]:part_start[t + 1]])
    return Tiles(prim_start=prim_start, prim_list=prim_list, part_start=part_start,
                 part_list=np.ascontiguousarray(part_list, dtype=np.int64),
                 component=np.ascontiguousarray(prims.component[p[prim_list[prim_start[:-1]], 0]]),
                 rest_mean=np.ascontiguousarray(rest_mean), frame=frame,
                 extent=np.ascontiguousarray(extent), inv_moment=inv_moment,
                 plane=np.ascontiguousarray(np.einsum("kdj,kj->kd", frame[part_tile, :2], q)),
                 rest_members=np.ascontiguousarray(r, dtype=np.float64),
                 spheres_only=spheres_only)


@njit(cache=True, inline="always")
def _fit_tile(t, x, part_start, part_list, plane, inv_moment, frame, x_mean, stretch,
              in_plane, rho, sigma, lo, hi, x_members):
    """fit_tiles for tile t."""
    first, last = part_start[t], part_start[t + 1]
    mx = my = mz = 0.0
    b00 = b01 = b02 = b10 = b11 = b12 = 0.0
    lo0 = lo1 = lo2 = np.inf  # the box in locals: the stores below may alias
    hi0 = hi1 = hi2 = -np.inf
    for m in range(first, last):
        i = part_list[m]
        px, py, pz = np.float64(x[i, 0]), np.float64(x[i, 1]), np.float64(x[i, 2])
        x_members[m, 0], x_members[m, 1], x_members[m, 2] = px, py, pz
        mx += px
        my += py
        mz += pz
        c0, c1 = plane[m, 0], plane[m, 1]
        b00 += px * c0
        b01 += py * c0
        b02 += pz * c0
        b10 += px * c1
        b11 += py * c1
        b12 += pz * c1
        lo0, lo1, lo2 = min(lo0, px), min(lo1, py), min(lo2, pz)
        hi0, hi1, hi2 = max(hi0, px), max(hi1, py), max(hi2, pz)
    lo[t, 0], lo[t, 1], lo[t, 2] = lo0, lo1, lo2
    hi[t, 0], hi[t, 1], hi[t, 2] = hi0, hi1, hi2
    inv = 1.0 / (last - first)
    mx, my, mz = mx * inv, my * inv, mz * inv
    x_mean[t, 0], x_mean[t, 1], x_mean[t, 2] = mx, my, mz
    if inv_moment[t, 0] == 0.0:
        rho[t] = np.inf
        sigma[t] = 0.0
        return
    k0, k1 = inv_moment[t, 0], inv_moment[t, 1]
    b00, b01, b02 = b00 * k0, b01 * k0, b02 * k0
    b10, b11, b12 = b10 * k1, b11 * k1, b12 * k1
    in_plane[t, 0, 0], in_plane[t, 0, 1], in_plane[t, 0, 2] = b00, b01, b02
    in_plane[t, 1, 0], in_plane[t, 1, 1], in_plane[t, 1, 2] = b10, b11, b12
    for r in range(3):  # A = (A u1) u1^T + (A u2) u2^T
        for c in range(3):
            stretch[t, r, c] = in_plane[t, 0, r] * frame[t, 0, c] + in_plane[t, 1, r] * frame[t, 1, c]
    largest_sq = 0.0
    for m in range(first, last):
        c0, c1 = plane[m, 0], plane[m, 1]
        ex = x_members[m, 0] - mx - b00 * c0 - b10 * c1
        ey = x_members[m, 1] - my - b01 * c0 - b11 * c1
        ez = x_members[m, 2] - mz - b02 * c0 - b12 * c1
        largest_sq = max(largest_sq, ex * ex + ey * ey + ez * ez)
    rho[t] = largest_sq ** 0.5
    g00 = b00 * b00 + b01 * b01 + b02 * b02
    g01 = b00 * b10 + b01 * b11 + b02 * b12
    g11 = b10 * b10 + b11 * b11 + b12 * b12
    half_trace = 0.5 * (g00 + g11)
    smallest = half_trace - ((0.5 * (g00 - g11)) ** 2 + g01 * g01) ** 0.5
    sigma[t] = max(smallest, 0.0) ** 0.5


@njit(cache=True)
def fit_tiles(x, part_start, part_list, plane, inv_moment, frame, x_mean, stretch, in_plane,
              rho, sigma, lo, hi, x_members):
    """Per tile: the mean x_mean, the least-squares stretch A (x - x_mean ~ A (r -
    rest_mean), A normal = 0), its in-plane columns A u1, A u2, the largest residual rho
    (m), the smallest in-plane stretch sigma and the bounding box lo, hi (m) of its
    particles at the positions x (m). ``plane`` holds each member's rest offset in its
    tile's plane (u1 . q, u2 . q); the offsets sum to 0, so A u_c = sum x (u_c . q) /
    moment_c needs no mean first. The members' positions go to x_members, in member
    order."""
    for t in range(part_start.shape[0] - 1):
        _fit_tile(t, x, part_start, part_list, plane, inv_moment, frame, x_mean, stretch,
                  in_plane, rho, sigma, lo, hi, x_members)


@njit(cache=True, parallel=True)
def fit_tiles_parallel(x, part_start, part_list, plane, inv_moment, frame, x_mean, stretch,
                       in_plane, rho, sigma, lo, hi, x_members):
    """fit_tiles with the tiles on numba's threads: the same fits."""
    for t in prange(part_start.shape[0] - 1):
        _fit_tile(t, x, part_start, part_list, plane, inv_moment, frame, x_mean, stretch,
                  in_plane, rho, sigma, lo, hi, x_members)


@njit(cache=True, inline="always")
def _mismatch(a, b, rest_mean, frame, extent, x_mean, stretch, in_plane):
    """mu (m): a bound of |f_a - f_b| over tile b's rest box, how far tile b is from
    where tile a's map puts it (module docstring)."""
    dx = rest_mean[b, 0] - rest_mean[a, 0]
    dy = rest_mean[b, 1] - rest_mean[a, 1]
    dz = rest_mean[b, 2] - rest_mean[a, 2]
    # mu: |f_a - f_b| over b's rest box, g0 at its centre plus the box's half-sizes
    gx = x_mean[a, 0] - x_mean[b, 0] + stretch[a, 0, 0] * dx + stretch[a, 0, 1] * dy + stretch[a, 0, 2] * dz
    gy = x_mean[a, 1] - x_mean[b, 1] + stretch[a, 1, 0] * dx + stretch[a, 1, 1] * dy + stretch[a, 1, 2] * dz
    gz = x_mean[a, 2] - x_mean[b, 2] + stretch[a, 2, 0] * dx + stretch[a, 2, 1] * dy + stretch[a, 2, 2] * dz
    mu = (gx * gx + gy * gy + gz * gz) ** 0.5
    for d in range(3):
        fx, fy, fz = frame[b, d, 0], frame[b, d, 1], frame[b, d, 2]
        cx = stretch[a, 0, 0] * fx + stretch[a, 0, 1] * fy + stretch[a, 0, 2] * fz
        cy = stretch[a, 1, 0] * fx + stretch[a, 1, 1] * fy + stretch[a, 1, 2] * fz
        cz = stretch[a, 2, 0] * fx + stretch[a, 2, 1] * fy + stretch[a, 2, 2] * fz
        if d < 2:  # f_b's own column (its normal column is 0)
            cx -= in_plane[b, d, 0]
            cy -= in_plane[b, d, 1]
            cz -= in_plane[b, d, 2]
        mu += extent[b, d] * (cx * cx + cy * cy + cz * cz) ** 0.5
    return mu


@njit(cache=True, inline="always")
def _reach_of_fit(a, b, exclude, rest_mean, frame, extent, sigma):
    """sigma_a sqrt(E^2 - h^2) (m): the distance tile a's map keeps between a point of
    tile a and one of tile b at least E = ``exclude`` apart in the rest shape, before the
    residuals; -inf when it says nothing."""
    if sigma[a] <= 0.0:
        return -np.inf
    dx = rest_mean[b, 0] - rest_mean[a, 0]
    dy = rest_mean[b, 1] - rest_mean[a, 1]
    dz = rest_mean[b, 2] - rest_mean[a, 2]
    h = extent[a, 2] + abs(frame[a, 2, 0] * dx + frame[a, 2, 1] * dy + frame[a, 2, 2] * dz)
    for d in range(3):
        h += extent[b, d] * abs(frame[a, 2, 0] * frame[b, d, 0] + frame[a, 2, 1] * frame[b, d, 1]
                                + frame[a, 2, 2] * frame[b, d, 2])
    if h >= exclude:
        return -np.inf
    return sigma[a] * (exclude * exclude - h * h) ** 0.5


@njit(cache=True, inline="always")
def _joined(i, j, adj_start, adj_list):
    if i == j:
        return True
    for u in range(adj_start[i], adj_start[i + 1]):
        if adj_list[u] == j:
            return True
    return False


@njit(cache=True, inline="always")
def _close_or_joined(a, b, rest_sq, exclude_sq, joined_sq, adj_start, adj_list):
    """excluded for two particles of one component, rest_sq (m^2) apart in the rest
    shape: closer than the exclusion, or joined by a spring (scanned only when they are
    not farther apart than a's farthest joined particle, joined_sq[a])."""
    if rest_sq < exclude_sq:
        return True
    return rest_sq <= joined_sq[a] and _joined(a, b, adj_start, adj_list)


@njit(cache=True, inline="always")
def excluded(p, q, prims, adj_start, adj_list, component, rest_x, joined_sq, exclude_sq):
    """Whether primitives p and q never repel (neighbours.py's module docstring). The
    rest-shape test goes first: it settles most candidates of a cloth without a scan of
    the springs; two spheres of different components, or farther apart in the rest shape
    than any particle joined to one of them (joined_sq), need no scan either."""
    a0, a1, a2 = prims[p, 0], prims[p, 1], prims[p, 2]
    b0, b1, b2 = prims[q, 0], prims[q, 1], prims[q, 2]
    if a0 == a2 and b0 == b2:  # two spheres: their particles
        if component[a0] != component[b0]:
            return False
        gx, gy, gz = (rest_x[a0, 0] - rest_x[b0, 0], rest_x[a0, 1] - rest_x[b0, 1],
                      rest_x[a0, 2] - rest_x[b0, 2])
        return _close_or_joined(a0, b0, gx * gx + gy * gy + gz * gz, exclude_sq,
                                joined_sq, adj_start, adj_list)
    if component[a0] == component[b0]:
        wa0, wa1, wa2, wb0, wb1, wb2 = pair_weights(rest_x, a0, a1, a2, b0, b1, b2)
        gx, gy, gz = weighted_gap(rest_x, a0, a1, a2, b0, b1, b2, wa0, wa1, wa2, wb0, wb1,
                                  wb2)
        if gx * gx + gy * gy + gz * gz < exclude_sq:
            return True
    for i in range(3):
        ai = prims[p, i]
        if i > 0 and ai == prims[p, i - 1]:
            continue  # a sphere's or capsule's repeated index
        for j in range(3):
            bj = prims[q, j]
            if j > 0 and bj == prims[q, j - 1]:
                continue
            if _joined(ai, bj, adj_start, adj_list):
                return True
    return False


@njit(cache=True, inline="always")
def _near_box(x, prims, p, lo, hi, t, reach):
    """Whether primitive p's bounding box comes within ``reach`` (m) of tile t's box on
    every axis."""
    a0, a1, a2 = prims[p, 0], prims[p, 1], prims[p, 2]
    if a0 == a2:  # a sphere: its particle
        for d in range(3):
            if x[a0, d] > hi[t, d] + reach or x[a0, d] < lo[t, d] - reach:
                return False
        return True
    for d in range(3):
        if (min(x[a0, d], x[a1, d], x[a2, d]) > hi[t, d] + reach
                or max(x[a0, d], x[a1, d], x[a2, d]) < lo[t, d] - reach):
            return False
    return True


@njit(cache=True, inline="always")
def _test_pair(p, q, x, shape, exclude_sq, reach_sq, pairs, found, lane):
    """Keep the pair p, q (_keep) if it is within sqrt(reach_sq) (m) and not excluded
    (shape: Primitives.search_arrays)."""
    prims, adj_start, adj_list, component, rest_x, joined_sq = shape
    a0, a1, a2 = prims[p, 0], prims[p, 1], prims[p, 2]
    b0, b1, b2 = prims[q, 0], prims[q, 1], prims[q, 2]
    if a0 == a2 and b0 == b2:  # two spheres
        gx = x[a0, 0] - x[b0, 0]
        gy = x[a0, 1] - x[b0, 1]
        gz = x[a0, 2] - x[b0, 2]
    else:
        wa0, wa1, wa2, wb0, wb1, wb2 = pair_weights(x, a0, a1, a2, b0, b1, b2)
        if wa0 < 0.0:
            return  # a pair the pass does not test (see pair_weights)
        gx, gy, gz = weighted_gap(x, a0, a1, a2, b0, b1, b2, wa0, wa1, wa2, wb0, wb1, wb2)
    if gx * gx + gy * gy + gz * gz > reach_sq:
        return
    if excluded(p, q, prims, adj_start, adj_list, component, rest_x, joined_sq, exclude_sq):
        return
    _keep(p, q, pairs, found, lane)


@njit(cache=True, inline="always")
def _keep(p, q, pairs, found, lane):
    """Put the pair p, q (smaller index first) into the lane's buffer (counted past its
    size, so that the build can redo with a bigger one)."""
    k = found[lane]
    if k < pairs.shape[1]:
        pairs[lane, k, 0], pairs[lane, k, 1] = (p, q) if p < q else (q, p)
    found[lane] = k + 1


@njit(cache=True, inline="always")
def _residual(x, rest_x, prims, p, t, rest_mean, x_mean, stretch):
    """Largest distance (m) of primitive p's particles from where tile t's map puts
    them, |x_k - f_t(r_k)|."""
    worst_sq = 0.0
    corners = 1 if prims[p, 0] == prims[p, 2] else 3  # a sphere: one particle
    for corner in range(corners):
        k = prims[p, corner]
        qx = rest_x[k, 0] - rest_mean[t, 0]
        qy = rest_x[k, 1] - rest_mean[t, 1]
        qz = rest_x[k, 2] - rest_mean[t, 2]
        ex = x[k, 0] - x_mean[t, 0] - (stretch[t, 0, 0] * qx + stretch[t, 0, 1] * qy + stretch[t, 0, 2] * qz)
        ey = x[k, 1] - x_mean[t, 1] - (stretch[t, 1, 0] * qx + stretch[t, 1, 1] * qy + stretch[t, 1, 2] * qz)
        ez = x[k, 2] - x_mean[t, 2] - (stretch[t, 2, 0] * qx + stretch[t, 2, 1] * qy + stretch[t, 2, 2] * qz)
        worst_sq = max(worst_sq, ex * ex + ey * ey + ez * ez)
    return worst_sq ** 0.5


@njit(cache=True, inline="always")
def _mark(t, other, base, x, rest_x, prims, reach, prim_start, prim_list, rest_mean,
          x_mean, stretch, lo, hi, out):
    """Per primitive of tile t (in tile order): -1 if its box is not within ``reach`` (m)
    of tile ``other``'s box (t != other), else its residual under tile base's map (0
    without a base); returns the largest."""
    largest = -1.0
    for k in range(prim_start[t + 1] - prim_start[t]):
        p = prim_list[prim_start[t] + k]
        if t != other and not _near_box(x, prims, p, lo, hi, other, reach):
            out[k] = -1.0
            continue
        out[k] = (_residual(x, rest_x, prims, p, base, rest_mean, x_mean, stretch)
                  if base >= 0 else 0.0)
        largest = max(largest, out[k])
    return largest


@njit(cache=True, inline="always")
def _search_pair(a, b, base, budget, x, shape, exclude_sq, reach, prim_start, prim_list,
                 rest_mean, x_mean, stretch, lo, hi, res_a, res_b, pairs, found, lane):
    """Every pair of a primitive of tile a and one of tile b (after it, if a == b) within
    ``reach`` (m) and not excluded, into the lane's buffer. Paired are only the primitives
    whose boxes come within reach of the other tile's box and, with a ``base`` tile
    whose map keeps rest-distant points ``budget`` + reach apart (_reach_of_fit), the
    pairs whose residuals under that map add up to the budget or more (the others are
    farther apart than the reach)."""
    prims, rest_x = shape[0], shape[4]
    reach_sq = reach * reach
    largest_a = _mark(a, b, base, x, rest_x, prims, reach, prim_start, prim_list, rest_mean,
                      x_mean, stretch, lo, hi, res_a)
    if a == b:
        largest_b = largest_a
        res_b = res_a
    else:
        largest_b = _mark(b, a, base, x, rest_x, prims, reach, prim_start, prim_list,
                          rest_mean, x_mean, stretch, lo, hi, res_b)
    if largest_a < 0.0 or largest_b < 0.0 or largest_a + largest_b < budget:
        return
    first_b = prim_start[b]
    for k in range(prim_start[a + 1] - prim_start[a]):
        ea = res_a[k]
        if ea < 0.0 or ea + largest_b < budget:
            continue
        p = prim_list[prim_start[a] + k]
        for m in range(k + 1 if a == b else 0, prim_start[b + 1] - first_b):
            eb = res_b[m]
            if eb < 0.0 or ea + eb < budget:
                continue
            _test_pair(p, prim_list[first_b + m], x, shape, exclude_sq, reach_sq, pairs,
                       found, lane)


@njit(cache=True, inline="always")
def _near_members(t, other, reach, part_start, x_members, lo, hi, out):
    """The members of tile t (indices into x_members) within ``reach`` (m) of tile
    ``other``'s box on every axis, into out; returns how many. Branch free (each member
    is written, and counted if near): whether a member is near is as good as random."""
    lo0, lo1, lo2 = lo[other, 0] - reach, lo[other, 1] - reach, lo[other, 2] - reach
    hi0, hi1, hi2 = hi[other, 0] + reach, hi[other, 1] + reach, hi[other, 2] + reach
    found = 0
    for m in range(part_start[t], part_start[t + 1]):
        x0, x1, x2 = x_members[m, 0], x_members[m, 1], x_members[m, 2]
        away = ((x0 > hi0) | (x0 < lo0) | (x1 > hi1) | (x1 < lo1) | (x2 > hi2)
                | (x2 < lo2))
        out[found] = m
        found += 1 - np.int64(away)
    return found


@njit(cache=True, inline="always")
def _count_near(px, py, pz, xs, ys, zs, first, last, reach_sq):
    """How many of the points first..last-1 of the coordinates xs, ys, zs (m) lie within
    sqrt(reach_sq) (m) of (px, py, pz): a branch-free loop over unsigned indices (no
    negative-index wrap to test), which LLVM vectorises: 10x the speed of the loop over
    signed ones."""
    near = 0
    for k in range(np.uint64(first), np.uint64(last)):
        gx = px - xs[k]
        gy = py - ys[k]
        gz = pz - zs[k]
        near += np.int64(gx * gx + gy * gy + gz * gz <= reach_sq)
    return near


@njit(cache=True, inline="always")
def _search_spheres(a, b, x_members, rest_members, part_start, prim_start, prim_list, shape,
                    exclude_sq, reach, lo, hi, near_a, near_b, near_x, pairs, found, lane):
    """_search_pair for two tiles of one component made of spheres only (spheres_only):
    the members of each tile near the other's box (_near_members); tile b's copied to
    near_x (3 rows of coordinates), so that each near member of tile a counts those
    within reach in a vector loop (_count_near) and goes through them one by one only if
    there are any: distance, then the rest-shape distance and the springs (excluded's
    tests for two spheres of one component). The same float64 arithmetic as a test of
    every pair: the same pairs."""
    prims, adj_start, adj_list, joined_sq = shape[0], shape[1], shape[2], shape[5]
    reach_sq = reach * reach
    if a == b:
        count_a = count_b = part_start[a + 1] - part_start[a]
        for k in range(count_a):
            near_a[k] = part_start[a] + k
        near_b = near_a
    else:
        count_a = _near_members(a, b, reach, part_start, x_members, lo, hi, near_a)
        if count_a == 0:
            return
        count_b = _near_members(b, a, reach, part_start, x_members, lo, hi, near_b)
    xs, ys, zs = near_x[0], near_x[1], near_x[2]
    for w in range(count_b):
        k = near_b[w]
        xs[w], ys[w], zs[w] = x_members[k, 0], x_members[k, 1], x_members[k, 2]
    for u in range(count_a):
        m = near_a[u]
        px, py, pz = x_members[m, 0], x_members[m, 1], x_members[m, 2]
        start = u + 1 if a == b else 0
        if _count_near(px, py, pz, xs, ys, zs, start, count_b, reach_sq) == 0:
            continue
        for w in range(start, count_b):
            k = near_b[w]
            gx = px - xs[w]
            gy = py - ys[w]
            gz = pz - zs[w]
            if gx * gx + gy * gy + gz * gz > reach_sq:
                continue
            gx = rest_members[m, 0] - rest_members[k, 0]
            gy = rest_members[m, 1] - rest_members[k, 1]
            gz = rest_members[m, 2] - rest_members[k, 2]
            rest_sq = gx * gx + gy * gy + gz * gz
            if rest_sq < exclude_sq:
                continue
            p = prim_list[prim_start[a] + m - part_start[a]]
            q = prim_list[prim_start[b] + k - part_start[b]]
            if not _close_or_joined(prims[p, 0], prims[q, 0], rest_sq, exclude_sq, joined_sq,
                                    adj_start, adj_list):
                _keep(p, q, pairs, found, lane)


@njit(cache=True)
def refit_tree(node_left, node_right, node_tile, lo, hi, node_lo, node_hi):
    """Boxes (m) of the tree's nodes from the tiles' boxes lo, hi: the nodes are in
    preorder, so going backwards meets the children before their parent."""
    for node in range(node_tile.shape[0] - 1, -1, -1):
        t = node_tile[node]
        for d in range(3):
            if t >= 0:
                node_lo[node, d] = lo[t, d]
                node_hi[node, d] = hi[t, d]
            else:
                node_lo[node, d] = min(node_lo[node_left[node], d], node_lo[node_right[node], d])
                node_hi[node, d] = max(node_hi[node_left[node], d], node_hi[node_right[node], d])


@njit(cache=True, inline="always")
def _apart(i, j, node_lo, node_hi, reach):
    """Whether the boxes of tree nodes i and j are farther apart than ``reach`` (m) on
    some axis."""
    apart = False
    for d in range(3):
        if node_lo[j, d] > node_hi[i, d] + reach or node_lo[i, d] > node_hi[j, d] + reach:
            apart = True
    return apart


@njit(cache=True, inline="always")
def _open(i, j, node_left, node_right, node_tile, node_lo, node_hi, stack, top):
    """Push the pairs of children of the node pair (i, j) (not two leaves) onto the walk's
    stack from ``top``; returns the new top. A node against itself gives its children's
    three pairs, else the node with the wider box is opened (a leaf stays)."""
    if i == j:
        left, right = node_left[i], node_right[i]
        stack[top, 0], stack[top, 1] = left, left
        stack[top + 1, 0], stack[top + 1, 1] = right, right
        stack[top + 2, 0], stack[top + 2, 1] = left, right
        return top + 3
    size_i = size_j = 0.0
    for d in range(3):
        size_i = max(size_i, node_hi[i, d] - node_lo[i, d])
        size_j = max(size_j, node_hi[j, d] - node_lo[j, d])
    if node_tile[i] < 0 and (node_tile[j] >= 0 or size_i >= size_j):
        stack[top, 0], stack[top, 1] = node_left[i], j
        stack[top + 1, 0], stack[top + 1, 1] = node_right[i], j
    else:
        stack[top, 0], stack[top, 1] = i, node_left[j]
        stack[top + 1, 0], stack[top + 1, 1] = i, node_right[j]
    return top + 2


@njit(cache=True)
def _move_boxes(x, x_build, part_start, part_list, lo, hi, move_lo, move_hi):
    """Per tile: the box lo, hi (m) of its members at the positions x now and the box
    move_lo, move_hi (m) of their displacements x - x_build; a tile with a non-finite
    displacement gets the box of everything (it moved too far)."""
    for t in range(part_start.shape[0] - 1):
        lo0 = lo1 = lo2 = ml0 = ml1 = ml2 = np.inf
        hi0 = hi1 = hi2 = mh0 = mh1 = mh2 = -np.inf
        for m in range(part_start[t], part_start[t + 1]):
            i = part_list[m]
            px, py, pz = np.float64(x[i, 0]), np.float64(x[i, 1]), np.float64(x[i, 2])
            ux, uy, uz = px - x_build[i, 0], py - x_build[i, 1], pz - x_build[i, 2]
            if not abs(ux) + abs(uy) + abs(uz) < np.inf:
                ml0 = ml1 = ml2 = -np.inf
                mh0 = mh1 = mh2 = np.inf
            lo0, lo1, lo2 = min(lo0, px), min(lo1, py), min(lo2, pz)
            hi0, hi1, hi2 = max(hi0, px), max(hi1, py), max(hi2, pz)
            ml0, ml1, ml2 = min(ml0, ux), min(ml1, uy), min(ml2, uz)
            mh0, mh1, mh2 = max(mh0, ux), max(mh1, uy), max(mh2, uz)
        lo[t, 0], lo[t, 1], lo[t, 2] = lo0, lo1, lo2
        hi[t, 0], hi[t, 1], hi[t, 2] = hi0, hi1, hi2
        move_lo[t, 0], move_lo[t, 1], move_lo[t, 2] = ml0, ml1, ml2
        move_hi[t, 0], move_hi[t, 1], move_hi[t, 2] = mh0, mh1, mh2


@njit(cache=True)
def drifted(x, x_build, part_start, part_list, boxes, tree, stack, reach, limit_sq):
    """Whether two primitives now within ``reach`` (m) of each other may have moved
    more than sqrt(limit_sq) (m) relative to each other since the build (x_build, m).

    The tiles get the boxes of their members now and of their displacements
    (_move_boxes), the tree's nodes the unions of their tiles' (refit_tree), and the
    tree is walked against itself: a pair of nodes whose boxes are farther apart than
    the reach holds no such primitives, and one whose displacement boxes' union has a
    diagonal within sqrt(limit_sq) holds none that moved farther than that relative to
    each other (a point of a primitive moves by a convex combination of its particles'
    displacements); a pair of tiles that is neither (or a tile that is not) has drifted.
    Smooth motion (a cloth falling, swinging or turning as a whole) is settled near the
    root. ``boxes`` = (lo, hi, move_lo, move_hi), ``tree`` = (node_left, node_right,
    node_tile, node_lo, node_hi, node_move_lo, node_move_hi); ``stack`` (S, 2): the
    walk's (one lane's rows of Tiles.stack)."""
    lo, hi, move_lo, move_hi = boxes
    node_left, node_right, node_tile, node_lo, node_hi, node_move_lo, node_move_hi = tree
    if node_tile.shape[0] == 0:
        return False
    _move_boxes(x, x_build, part_start, part_list, lo, hi, move_lo, move_hi)
    refit_tree(node_left, node_right, node_tile, lo, hi, node_lo, node_hi)
    refit_tree(node_left, node_right, node_tile, move_lo, move_hi, node_move_lo,
               node_move_hi)
    stack[0, 0], stack[0, 1] = 0, 0
    top = 1
    while top > 0:
        top -= 1
        i, j = stack[top, 0], stack[top, 1]
        if _apart(i, j, node_lo, node_hi, reach):
            continue
        spread_sq = 0.0
        for d in range(3):
            spread_sq += (max(node_move_hi[i, d], node_move_hi[j, d])
                          - min(node_move_lo[i, d], node_move_lo[j, d])) ** 2
        if spread_sq <= limit_sq:
            continue
        if node_tile[i] >= 0 and node_tile[j] >= 0:
            return True
        top = _open(i, j, node_left, node_right, node_tile, node_lo, node_hi, stack, top)
    return False


@njit(cache=True)
def _run_lane(lane, tasks, x, shape, tiles, fits, tree, scratch, exclude_sq, reach):
    """Walk the lane's tasks (every LANES-th, from the lane's index: pairs of tree nodes,
    see query_tiles) with the lane's rows of the scratch into the lane's pair buffer;
    tile pairs searched and certified go to tally. The arrays come in the tuples that
    query_tiles describes."""
    (prim_start, prim_list, part_start, tile_component, rest_mean, frame, extent,
     rest_members, spheres_only) = tiles
    x_mean, stretch, in_plane, rho, sigma, lo, hi, x_members = fits
    node_left, node_right, node_tile, node_lo, node_hi = tree
    stacks, res_as, res_bs, near_as, near_bs, near_xs, pairs, found, tally = scratch
    stack, res_a, res_b = stacks[lane], res_as[lane], res_bs[lane]
    near_a, near_b, near_x = near_as[lane], near_bs[lane], near_xs[lane]
    exclude = exclude_sq ** 0.5
    needed = reach * (1.0 + CERTIFY_MARGIN)
    found[lane] = 0
    searched = certified = 0
    for task in range(lane, tasks.shape[0], LANES):
        stack[0, 0], stack[0, 1] = tasks[task, 0], tasks[task, 1]
        top = 1
        while top > 0:
            top -= 1
            i, j = stack[top, 0], stack[top, 1]
            if i == j and node_tile[i] < 0:  # a node against itself: its children
                top = _open(i, j, node_left, node_right, node_tile, node_lo, node_hi, stack,
                            top)
                continue
            if _apart(i, j, node_lo, node_hi, reach):
                continue
            a, b = node_tile[i], node_tile[j]
            if a < 0 or b < 0:
                top = _open(i, j, node_left, node_right, node_tile, node_lo, node_hi, stack,
                            top)
                continue
            base, budget = -1, -np.inf
            if tile_component[a] == tile_component[b]:
                # certified when, with a's map or b's, the separation (the rest-shape reach
                # of the fit less both residuals and the maps' mismatch) is above the reach;
                # the mismatch is computed only where the rest can pass, and a tile's
                # map matches itself (mismatch 0)
                residuals = rho[a] + rho[b]
                room_a = _reach_of_fit(a, b, exclude, rest_mean, frame, extent, sigma) - needed
                if room_a - residuals > 0.0 and (a == b or room_a - residuals > _mismatch(
                        a, b, rest_mean, frame, extent, x_mean, stretch, in_plane)):
                    certified += 1
                    continue
                room_b = room_a
                if a != b:
                    room_b = _reach_of_fit(b, a, exclude, rest_mean, frame, extent,
                                           sigma) - needed
                    if room_b - residuals > 0.0 and room_b - residuals > _mismatch(
                            b, a, rest_mean, frame, extent, x_mean, stretch, in_plane):
                        certified += 1
                        continue
                if room_a > -np.inf or room_b > -np.inf:  # a map for the search's residuals
                    base, budget = (a, room_a) if room_a >= room_b else (b, room_b)
            searched += 1
            if tile_component[a] == tile_component[b] and spheres_only[a] and spheres_only[b]:
                _search_spheres(a, b, x_members, rest_members, part_start, prim_start, prim_list,
                                shape, exclude_sq, reach, lo, hi, near_a, near_b, near_x, pairs,
                                found, lane)
                continue
            _search_pair(a, b, base, budget, x, shape, exclude_sq, reach, prim_start, prim_list,
                         rest_mean, x_mean, stretch, lo, hi, res_a, res_b, pairs, found, lane)
    tally[lane, 0], tally[lane, 1] = searched, certified


@njit(cache=True)
def _gather(pairs, found, tally, listed):
    """The lanes' pairs one after the other into listed (L, 2); returns (how many pairs
    (> L: redo with a longer list), the largest lane buffer wanted (> its size: redo
    with bigger ones), tile pairs searched, certified)."""
    lane_needed = total = searched = certified = 0
    for lane in range(LANES):
        lane_needed = max(lane_needed, found[lane])
        searched += tally[lane, 0]
        certified += tally[lane, 1]
    if lane_needed > pairs.shape[1]:
        return 0, lane_needed, searched, certified
    for lane in range(LANES):
        for k in range(found[lane]):
            if total < listed.shape[0]:
                listed[total, 0], listed[total, 1] = pairs[lane, k, 0], pairs[lane, k, 1]
            total += 1
    return total, lane_needed, searched, certified


@njit(cache=True)
def query_tiles(tasks, x, shape, tiles, fits, tree, scratch, listed, exclude_sq, reach):
    """Candidate pairs (p < q) into listed (L, 2) from tiles fitted by fit_tiles and a
    tree refitted by refit_tree (module docstring): the tree is walked against itself,
    task by task (walk_tasks), and each pair of tiles whose boxes come within ``reach``
    (m) is certified or searched. The arrays in tuples (Tiles names them): ``shape`` =
    Primitives.search_arrays; ``tiles`` = (prim_start, prim_list, part_start,
    component, rest_mean, frame, extent, rest_members, spheres_only); ``fits`` =
    (x_mean, stretch, in_plane, rho, sigma, lo, hi, x_members); ``tree`` = (node_left,
    node_right, node_tile, node_lo, node_hi); ``scratch`` = (stack, res_a, res_b,
    near_a, near_b, near_x, lane_pairs, lane_found, lane_tally). Returns _gather's
    tuple."""
    for lane in range(LANES):
        _run_lane(lane, tasks, x, shape, tiles, fits, tree, scratch, exclude_sq, reach)
    return _gather(scratch[6], scratch[7], scratch[8], listed)


@njit(cache=True, parallel=True)
def query_tiles_parallel(tasks, x, shape, tiles, fits, tree, scratch, listed, exclude_sq,
                         reach):
    """query_tiles with the lanes on numba's threads: the same list."""
    for lane in prange(LANES):
        _run_lane(lane, tasks, x, shape, tiles, fits, tree, scratch, exclude_sq, reach)
    return _gather(scratch[6], scratch[7], scratch[8], listed)
