"""Self-collision: the contact response and the object a Simulation keeps.

After the integrator's step (and the grab, tearing and strain limit; before the
ground and spheres), the pairs of the neighbour list (neighbours.py) whose primitives
are closer than ``thickness`` (m) are taken, in the order of their primitives' indices
(touching_pairs), and projected apart in up to ``ITERATIONS`` Gauss-Seidel passes over
them (a pair that another pair's projection pushes closer than the thickness waits for
the next step). From SPLIT_PAIRS touching pairs on, the pairs are first dealt to the
two sides of a plane through their median (split_sides: no particle has pairs on both,
each side about half the pairs), the passes over each side run at once on two threads
(resolve_sides), then those over the pairs that straddle the plane. So the pass
depends on the positions and velocities only, not on when the list was last built or on
the threads: a rewound simulation (snapshot.py) steps on bit for bit.

* position: the closest points p (at s on segment a0-a1) and q (at t on b0-b1) move
  apart along n = (p - q) / |p - q| until |p - q| = thickness; the correction is split
  to the four ends by their barycentric weights (1 - s, s, 1 - t, t) and inverse
  masses, so sum(m dx) = 0 (a pinned or grabbed particle has inverse mass 0);
* velocity: the same weights carry an impulse that removes the approaching part of
  the relative normal velocity at the contact (an inelastic contact, like the ground)
  and takes up to ``friction`` times that normal impulse off the relative tangential
  velocity (Coulomb); equal and opposite, so a free system's momentum is conserved to
  round-off.

Default thickness (DEFAULT_THICKNESS_FACTOR = 0.8 of the particle spacing h: the median
over particles of the rest length of their shortest spring): above h / sqrt(2), so a
particle cannot pass between the four corners of an undistorted square cell of another
layer (its centre is h / sqrt(2) from them); below h, so the layers of a pile stay thin.
The rest-shape exclusion (neighbours.EXCLUDE_FACTOR = 3 thicknesses = 2.4 h) then covers
a cloth's structural, shear, bend and knight's-move neighbours (h, 1.41 h, 2 h, 2.24 h):
wrinkles at the scale of the grid are the springs' business, and a soft cloth that
bunches up at that scale (the benchmark cloth does) is not held apart by them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from .. import parallel
from ..model import SpringSystem, check_fits_dtype, check_number, show
from .geometry import pair_weights, weighted_gap
from .neighbours import NeighbourList
from .primitives import build_primitives

#: Gauss-Seidel passes over the contact pairs per step
ITERATIONS = 4
#: from this many touching pairs on, the passes run on the two sides of a plane at once
#: (split_sides, resolve_sides)
SPLIT_PAIRS = 512
#: bins of the histogram that places split_sides' plane at the pairs' median
PLANE_BINS = 256
#: a touching pair (p, q) is the key (p << KEY_SHIFT) | q: sorted keys order the pairs
#: by p, then q, and a shift and a mask decode them (no division in the passes)
KEY_SHIFT = 31
KEY_MASK = (1 << KEY_SHIFT) - 1
#: sort_keys counts instead of comparing from 1 / COUNTING_SORT_SHARE keys a primitive:
#: a counting sort and an insertion sort cost about keys + P steps, quicksort keys
#: log2(keys) (of 16,384 spheres: 15 against 32 us for two counting sorts at 2,749 keys)
COUNTING_SORT_SHARE = 8
#: sort_keys' insertion sort gives up for quicksort past this many shifts a key
INSERTION_SHIFTS = 4
#: default thickness in particle spacings (see the module docstring)
DEFAULT_THICKNESS_FACTOR = 0.8
#: default thickness (m) of a system without springs, in bounding-box diagonals
NO_SPRING_THICKNESS = 0.01
#: triangles collide (with spheres) when the median triangle edge is longer than this
#: many thicknesses
SPARSE_EDGE_FACTOR = 2.0
#: default Coulomb friction between layers, and the largest accepted
DEFAULT_FRICTION = 0.3
MAX_FRICTION = 10.0


def median_triangle_edge(system: SpringSystem) -> float:
    """Median edge length (m) of the system's triangles in the rest shape (0 without)."""
    if system.triangles is None or not len(system.triangles):
        return 0.0
    tri = np.asarray(system.triangles)
    x = system.positions3()
    edges = np.concatenate([x[tri[:, 1]] - x[tri[:, 0]], x[tri[:, 2]] - x[tri[:, 1]],
                            x[tri[:, 0]] - x[tri[:, 2]]])
    return float(np.median(np.linalg.norm(edges, axis=1)))


def default_thickness(system: SpringSystem) -> float:
    """DEFAULT_THICKNESS_FACTOR x the median over particles of their shortest spring's
    rest length (m); NO_SPRING_THICKNESS x the bounding-box diagonal without springs."""
    rest = np.asarray(system.rest_lengths, dtype=np.float64)
    springs = np.asarray(system.springs)
    shortest = np.full(system.n_particles, np.inf)
    np.minimum.at(shortest, springs[:, 0], rest)
    np.minimum.at(shortest, springs[:, 1], rest)
    shortest = shortest[np.isfinite(shortest) & (shortest > 0)]
    if shortest.size:
        return DEFAULT_THICKNESS_FACTOR * float(np.median(shortest))
    extent = float(np.linalg.norm(np.ptp(system.positions3(), axis=0)))
    return NO_SPRING_THICKNESS * max(extent, 1.0)


@njit(cache=True, inline="always")
def _spheres(prims, p, q):
    """(a0, b0, both): the first particles of primitives p and q, and whether both are
    spheres (a cloth's pairs: their gap is x[a0] - x[b0], no weights needed)."""
    a0, b0 = prims[p, 0], prims[q, 0]
    return a0, b0, a0 == prims[p, 2] and b0 == prims[q, 2]


@njit(cache=True, inline="always")
def _sphere_gap(x, a0, b0):
    """x[a0] - x[b0] in float64 (m): weighted_gap's value for two spheres, bit for bit."""
    return (np.float64(x[a0, 0]) - x[b0, 0], np.float64(x[a0, 1]) - x[b0, 1],
            np.float64(x[a0, 2]) - x[b0, 2])


@njit(cache=True)
def touching_pairs(x, prims, pairs, thickness, keys, spare, counts):
    """The candidate pairs (n, 2: p < q) whose primitives are closer than ``thickness``
    (m) now, into keys[:found] as (p << KEY_SHIFT) | q, sorted (by p, then q: sort_keys
    with the scratch spare (as long as keys) and counts (P + 1)); returns found. Every
    pair that close is in the list (neighbours.py), so these keys, and the passes over
    them, depend on the positions only, not on when the list was built."""
    limit_sq = thickness * thickness
    found = 0
    for k in range(pairs.shape[0]):
        p, q = np.int64(pairs[k, 0]), np.int64(pairs[k, 1])
        a0, b0, spheres = _spheres(prims, p, q)
        if spheres:
            gx, gy, gz = _sphere_gap(x, a0, b0)
        else:
            a1, a2, b1, b2 = prims[p, 1], prims[p, 2], prims[q, 1], prims[q, 2]
            wa0, wa1, wa2, wb0, wb1, wb2 = pair_weights(x, a0, a1, a2, b0, b1, b2)
            gx, gy, gz = weighted_gap(x, a0, a1, a2, b0, b1, b2, wa0, wa1, wa2, wb0, wb1,
                                      wb2)
        if gx * gx + gy * gy + gz * gz < limit_sq:
            keys[found] = (p << KEY_SHIFT) | q
            found += 1
    sort_keys(keys, found, spare, counts)
    return found


@njit(cache=True)
def sort_keys(keys, found, spare, counts):
    """Sort the keys (p << KEY_SHIFT) | q, p and q < P, of keys[:found]: from P /
    COUNTING_SORT_SHARE keys on by a stable counting sort by p into spare (O(found +
    P)) and an insertion sort back (each p's few keys by q; should a p have so many
    that it shifts more than INSERTION_SHIFTS x found keys, numba's quicksort of the
    rest), below that by numba's quicksort. counts: (P + 1,)."""
    if found * COUNTING_SORT_SHARE < counts.shape[0] - 1:
        keys[:found].sort()
        return
    _count_sort(keys, spare, found, counts, KEY_SHIFT, KEY_MASK)
    budget = INSERTION_SHIFTS * found
    for w in range(found):
        value = spare[w]
        u = w - 1
        while u >= 0 and keys[u] > value:
            keys[u + 1] = keys[u]
            u -= 1
        keys[u + 1] = value
        budget -= w - 1 - u
        if budget < 0:  # long runs of one p: quicksort what is left
            keys[w + 1:found] = spare[w + 1:found]
            keys[:found].sort()
            return


@njit(cache=True, inline="always")
def _count_sort(source, target, found, counts, shift, mask):
    """source[:found] into target[:found], stably by (key >> shift) & mask (< P)."""
    counts[:] = 0
    for k in range(found):
        counts[((source[k] >> shift) & mask) + 1] += 1
    for digit in range(counts.shape[0] - 1):
        counts[digit + 1] += counts[digit]
    for k in range(found):
        digit = (source[k] >> shift) & mask
        target[counts[digit]] = source[k]
        counts[digit] += 1


@njit(cache=True)
def split_sides(x, prims, keys, found, sided, sides, corners, bins):
    """Deal the touching pairs keys[:found] (sorted) to two sides of a plane, stably into
    sided[:found]: first the pairs all of whose particles lie below the plane, then those
    above, then those with particles on both sides; returns (below, above), the first two
    counts; sides: (L,) int8 scratch; corners: _side's; bins: (PLANE_BINS,) int64
    scratch. The plane is normal to the widest axis of the pairs' first particles' box,
    at their median (_median_plane): no particle has pairs on both sides, so the two
    sides' passes can run at once (resolve_sides) on halves of the pairs, and the split
    depends on the positions only."""
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    for k in range(found):
        i = prims[keys[k] >> KEY_SHIFT, 0]
        c0, c1, c2 = np.float64(x[i, 0]), np.float64(x[i, 1]), np.float64(x[i, 2])
        lo0, hi0 = min(lo0, c0), max(hi0, c0)
        lo1, hi1 = min(lo1, c1), max(hi1, c1)
        lo2, hi2 = min(lo2, c2), max(hi2, c2)
    axis, lo, width = 0, lo0, hi0 - lo0
    if hi1 - lo1 > hi0 - lo0 and hi1 - lo1 >= hi2 - lo2:
        axis, lo, width = 1, lo1, hi1 - lo1
    elif hi2 - lo2 > hi0 - lo0 and hi2 - lo2 > hi1 - lo1:
        axis, lo, width = 2, lo2, hi2 - lo2
    plane = _median_plane(x, prims, keys, found, axis, lo, width, bins)
    below = above = 0
    for k in range(found):
        side = _side(x, prims, keys[k], axis, plane, corners)
        sides[k] = side
        below += side == 0
        above += side == 1
    # the three groups' cursors; no branches on the sides (in no order a predictor sees)
    first, second, third = 0, below, below + above
    for k in range(found):
        side = sides[k]
        zero, one, two = side == 0, side == 1, side == 2
        sided[zero * first + one * second + two * third] = keys[k]
        first += zero
        second += one
        third += two
    return below, above


@njit(cache=True, inline="always")
def _median_plane(x, prims, keys, found, axis, lo, width, bins):
    """The median (m along the axis) of the pairs' first particles' coordinates, from a
    histogram of len(bins) bins over lo .. lo + width, interpolated in the bin where
    half the pairs are reached: each side of a plane there gets half the pairs (less
    those that straddle it; at the mean one side got up to 71 % of a bunched cloth's
    pairs, and its passes made the other thread wait). A NaN goes to the first bin; a
    spread of 0 or not finite gives lo."""
    if not 0.0 < width < np.inf:
        return lo
    count = bins.shape[0]
    bins[:] = 0
    scale = count / width
    for k in range(found):
        t = (x[prims[keys[k] >> KEY_SHIFT, 0], axis] - lo) * scale
        bins[np.int64(t) if 0.0 <= t < count else (count - 1 if t >= count else 0)] += 1
    half = 0.5 * found
    passed = 0
    for b in range(count):
        if passed + bins[b] >= half:  # then bins[b] > 0
            return lo + (b + (half - passed) / bins[b]) * (width / count)
        passed += bins[b]
    return lo


@njit(cache=True, inline="always")
def _side(x, prims, key, axis, plane, corners):
    """0 if every particle of the pair's primitives lies below the plane (m along the
    axis), 1 if every one lies at or above it, 2 if both (a NaN counts as both). In
    arithmetic, without branches (the loop over the pairs runs vectorized); corners: 1
    for a set of spheres (a sphere repeats its particle), else 3."""
    p, q = key >> KEY_SHIFT, key & KEY_MASK
    under = over = 0
    for r in range(corners):
        ca, cb = x[prims[p, r], axis], x[prims[q, r], axis]
        under += np.int64(ca < plane) + np.int64(cb < plane)
        over += np.int64(ca >= plane) + np.int64(cb >= plane)
    return 2 - 2 * np.int64(under == 2 * corners) - np.int64(over == 2 * corners)


@njit(cache=True, inline="always")
def _weigh(keys, first, end, prims, inv_mass, fixed, ends, weights):
    """Before the passes over keys[first:end]: for a pair of two spheres, their particles
    (ends[k]) and inverse masses (weights[k], 1/kg; 0 if pinned or grabbed), so that each
    pass reads them in turn; ends[k, 0] = -1 for any other pair (each pass weighs it from
    its primitives)."""
    for k in range(first, end):
        p, q = keys[k] >> KEY_SHIFT, keys[k] & KEY_MASK
        a0, b0, spheres = _spheres(prims, p, q)
        if spheres:
            ends[k, 0], ends[k, 1] = a0, b0
            weights[k, 0] = 0.0 if fixed[a0] else inv_mass[a0]
            weights[k, 1] = 0.0 if fixed[b0] else inv_mass[b0]
        else:
            ends[k, 0] = -1


@njit(cache=True)
def _passes(x, v, inv_mass, fixed, prims, keys, first, end, thickness, friction,
            iterations, ends, weights):
    """Up to ``iterations`` Gauss-Seidel passes over the pairs keys[first:end], until
    one moves nothing; returns how many pair projections ran. ends, weights: (L, 2)
    scratch (_weigh). Compiled once and called (not inlined) by every resolve: their
    compile stays short."""
    _weigh(keys, first, end, prims, inv_mass, fixed, ends, weights)
    touching = 0
    for _ in range(iterations):
        moved = 0
        for k in range(first, end):
            a0 = ends[k, 0]
            if a0 >= 0:
                moved += _project_spheres(x, v, a0, ends[k, 1], weights[k, 0],
                                          weights[k, 1], thickness, friction)
            else:
                moved += _project_pair(x, v, inv_mass, fixed, prims, keys[k] >> KEY_SHIFT,
                                       keys[k] & KEY_MASK, thickness, friction)
        touching += moved
        if moved == 0:
            break
    return touching


@njit(cache=True)
def resolve_pairs(x, v, inv_mass, fixed, prims, keys, found, thickness, friction,
                  iterations, ends, weights):
    """Project the touching pairs keys[:found] (touching_pairs) apart (module
    docstring); returns how many pair projections ran (a pair counts once per pass it
    was found penetrating). Two spheres take the short way (_project_spheres), with the
    arithmetic of the general one (_project_pair) for weights (1, 0, 0, 1, 0, 0).
    ends, weights: (L, 2) int32 and float64 scratch, L >= found."""
    return _passes(x, v, inv_mass, fixed, prims, keys, 0, found, thickness, friction,
                   iterations, ends, weights)


@njit(cache=True, inline="always")
def _resolve_sides(x, v, inv_mass, fixed, prims, sided, below, above, found, thickness,
                   friction, iterations, ends, weights, touched):
    """resolve_sides' work (its sides' loop is a prange, on numba's threads in the
    parallel caller)."""
    for side in prange(2):
        first, end = (0, below) if side == 0 else (below, below + above)
        touched[side] = _passes(x, v, inv_mass, fixed, prims, sided, first, end,
                                thickness, friction, iterations, ends, weights)
    return touched[0] + touched[1] + _passes(x, v, inv_mass, fixed, prims, sided,
                                             below + above, found, thickness, friction,
                                             iterations, ends, weights)


@njit(cache=True)
def resolve_sides(x, v, inv_mass, fixed, prims, sided, below, above, found, thickness,
                  friction, iterations, ends, weights, touched):
    """resolve_pairs over the pairs split_sides dealt into sided[:found]: the passes
    over each side's pairs (they share no particle: in either order the same result),
    then over the pairs that straddle the plane. touched: (2,) int64 scratch."""
    return _resolve_sides(x, v, inv_mass, fixed, prims, sided, below, above, found,
                          thickness, friction, iterations, ends, weights, touched)


@njit(cache=True, parallel=True)
def resolve_sides_parallel(x, v, inv_mass, fixed, prims, sided, below, above, found,
                           thickness, friction, iterations, ends, weights, touched):
    """resolve_sides with the two sides on numba's threads: the same result."""
    return _resolve_sides(x, v, inv_mass, fixed, prims, sided, below, above, found,
                          thickness, friction, iterations, ends, weights, touched)


@njit(cache=True, inline="always")
def _normal(gx, gy, gz, thickness):
    """(distance, normal) of a gap (m) closer than the thickness; (-1, 0) if it is not.
    Two points on top of each other are pushed along y."""
    dist_sq = gx * gx + gy * gy + gz * gz
    if dist_sq >= thickness * thickness:
        return -1.0, 0.0, 0.0, 0.0
    dist = dist_sq ** 0.5
    if dist > 1e-12 * thickness:
        inverse = 1.0 / dist  # one division, not three (the passes' cost is in them)
        return dist, gx * inverse, gy * inverse, gz * inverse
    return dist, 0.0, 1.0, 0.0


@njit(cache=True, inline="always")
def _impulse(rx, ry, rz, nx, ny, nz, inverse_total, friction):
    """(approaching, j): whether the contact points approach (relative velocity r, m/s,
    along the normal n below 0), and the impulse per unit of the weights (kg m/s) that
    removes the approach and takes up to ``friction`` times it off the tangential
    part (Coulomb); inverse_total: 1 / the weighted inverse masses' sum (kg)."""
    vn = rx * nx + ry * ny + rz * nz
    if vn >= 0.0:
        return False, 0.0, 0.0, 0.0
    jn = -vn * inverse_total
    tx, ty, tz = rx - vn * nx, ry - vn * ny, rz - vn * nz
    vt_sq = tx * tx + ty * ty + tz * tz
    jx, jy, jz = jn * nx, jn * ny, jn * nz
    if vt_sq > 0.0:
        # per unit of tangential velocity: min(|t| / total, friction jn) / |t|
        jt = min(inverse_total, friction * jn / vt_sq ** 0.5)
        jx -= jt * tx
        jy -= jt * ty
        jz -= jt * tz
    return True, jx, jy, jz


@njit(cache=True, inline="always")
def _project_spheres(x, v, a0, b0, ka0, kb0, thickness, friction):
    """_project_pair for two spheres (particles a0, b0 of inverse masses ka0, kb0, 1/kg,
    0 if pinned or grabbed); returns 1 if it moved them."""
    gx, gy, gz = _sphere_gap(x, a0, b0)
    dist, nx, ny, nz = _normal(gx, gy, gz, thickness)
    if dist < 0.0:
        return 0
    total = ka0 + kb0
    if total <= 0.0:
        return 0
    inverse_total = 1.0 / total
    lam = (thickness - dist) * inverse_total
    _push(x, a0, ka0 * lam, nx, ny, nz)
    _push(x, b0, -kb0 * lam, nx, ny, nz)
    rx, ry, rz = _sphere_gap(v, a0, b0)
    approaching, jx, jy, jz = _impulse(rx, ry, rz, nx, ny, nz, inverse_total, friction)
    if approaching:
        _push(v, a0, ka0, jx, jy, jz)
        _push(v, b0, -kb0, jx, jy, jz)
    return 1


@njit(cache=True, inline="always")
def _project_pair(x, v, inv_mass, fixed, prims, p, q, thickness, friction):
    """Project primitives p and q apart if they are closer than the thickness (module
    docstring); returns 1 if it moved them."""
    a0, a1, a2 = prims[p, 0], prims[p, 1], prims[p, 2]
    b0, b1, b2 = prims[q, 0], prims[q, 1], prims[q, 2]
    wa0, wa1, wa2, wb0, wb1, wb2 = pair_weights(x, a0, a1, a2, b0, b1, b2)
    gx, gy, gz = weighted_gap(x, a0, a1, a2, b0, b1, b2, wa0, wa1, wa2, wb0, wb1, wb2)
    dist, nx, ny, nz = _normal(gx, gy, gz, thickness)
    if dist < 0.0:
        return 0
    # weight x inverse mass of each end (0: pinned or grabbed; a repeated index of a
    # sphere or capsule has weight 0)
    ka0 = 0.0 if fixed[a0] else wa0 * inv_mass[a0]
    ka1 = 0.0 if fixed[a1] else wa1 * inv_mass[a1]
    ka2 = 0.0 if fixed[a2] else wa2 * inv_mass[a2]
    kb0 = 0.0 if fixed[b0] else wb0 * inv_mass[b0]
    kb1 = 0.0 if fixed[b1] else wb1 * inv_mass[b1]
    kb2 = 0.0 if fixed[b2] else wb2 * inv_mass[b2]
    total = ka0 * wa0 + ka1 * wa1 + ka2 * wa2 + kb0 * wb0 + kb1 * wb1 + kb2 * wb2
    if total <= 0.0:
        return 0
    inverse_total = 1.0 / total
    lam = (thickness - dist) * inverse_total
    _push(x, a0, ka0 * lam, nx, ny, nz)
    _push(x, a1, ka1 * lam, nx, ny, nz)
    _push(x, a2, ka2 * lam, nx, ny, nz)
    _push(x, b0, -kb0 * lam, nx, ny, nz)
    _push(x, b1, -kb1 * lam, nx, ny, nz)
    _push(x, b2, -kb2 * lam, nx, ny, nz)
    rx, ry, rz = weighted_gap(v, a0, a1, a2, b0, b1, b2, wa0, wa1, wa2, wb0, wb1, wb2)
    approaching, jx, jy, jz = _impulse(rx, ry, rz, nx, ny, nz, inverse_total, friction)
    if approaching:
        _push(v, a0, ka0, jx, jy, jz)
        _push(v, a1, ka1, jx, jy, jz)
        _push(v, a2, ka2, jx, jy, jz)
        _push(v, b0, -kb0, jx, jy, jz)
        _push(v, b1, -kb1, jx, jy, jz)
        _push(v, b2, -kb2, jx, jy, jz)
    return 1


@njit(cache=True, inline="always")
def _push(a, i, scale, dx, dy, dz):
    """a[i] += scale * (dx, dy, dz)."""
    a[i, 0] += scale * dx
    a[i, 1] += scale * dy
    a[i, 2] += scale * dz


def check_thickness(value: Any, dtype: Any) -> float:
    """A thickness: a finite number > 0 m that fits the dtype."""
    thickness = check_number(value, "thickness", "m", minimum=0.0, strict=True)
    check_fits_dtype(thickness, dtype, "thickness", "m")
    return thickness


def check_friction(value: Any) -> float:
    """A Coulomb friction coefficient in 0..MAX_FRICTION."""
    return check_number(value, "self_friction", "", minimum=0.0, maximum=MAX_FRICTION)


def check_switch(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {show(value)}")
    return bool(value)


class SelfCollision:
    """Self-collision settings and scratch of one simulation: ``enabled``,
    ``thickness`` (m), ``friction``; the primitives and neighbour list are made on
    first use."""

    def __init__(self, system: SpringSystem, dtype: Any, enabled: bool = False,
                 thickness: float | None = None, friction: float = DEFAULT_FRICTION):
        self.system = system
        self.dtype = np.dtype(dtype)
        self.enabled = check_switch(enabled, "self_collision")
        self.thickness = (default_thickness(system) if thickness is None
                          else check_thickness(thickness, self.dtype))
        self.friction = check_friction(friction)
        self._neighbours: NeighbourList | None = None
        self._median_edge = median_triangle_edge(system)
        self.touching = 0  # pair projections of the last step
        self._touched = np.zeros(2, np.int64)  # resolve_sides' scratch
        self._plane_bins = np.zeros(PLANE_BINS, np.int64)  # split_sides' scratch

    @property
    def sparse(self) -> bool:
        """Whether the system's triangles collide too: its median triangle edge (rest
        shape) is longer than SPARSE_EDGE_FACTOR x thickness, so a particle of another
        layer could pass between the particles of a triangle."""
        return self._median_edge > SPARSE_EDGE_FACTOR * self.thickness

    @property
    def neighbours(self) -> NeighbourList:
        """The neighbour list (made on first use, and again when ``sparse`` changes)."""
        nl = self._neighbours
        if nl is None or nl.has_triangles != self.sparse:
            nl = self._neighbours = NeighbourList(
                build_primitives(self.system, triangles=self.sparse), self.system.n_particles)
        return nl

    def apply(self, x: np.ndarray, v: np.ndarray, inv_mass: np.ndarray,
              fixed: np.ndarray) -> int:
        """One post-step pass on positions x (m) and velocities v (m/s), in place."""
        nl = self.neighbours
        nl.update(x, self.thickness)
        prims = nl.prims.prims
        found = touching_pairs(x, prims, nl.pairs, self.thickness, nl.keys, nl.spare_keys,
                               nl.key_counts)
        if found < SPLIT_PAIRS:
            self.touching = resolve_pairs(x, v, inv_mass, fixed, prims, nl.keys, found,
                                          self.thickness, self.friction, ITERATIONS,
                                          nl.ends, nl.weights)
            return self.touching
        below, above = split_sides(x, prims, nl.keys, found, nl.spare_keys, nl.sides,
                                   nl.corners, self._plane_bins)
        resolve = (resolve_sides_parallel if parallel.get_mode() != "serial"
                   and parallel.threads() > 1 else resolve_sides)
        self.touching = resolve(x, v, inv_mass, fixed, prims, nl.spare_keys, below, above,
                                found, self.thickness, self.friction, ITERATIONS, nl.ends,
                                nl.weights, self._touched)
        return self.touching
