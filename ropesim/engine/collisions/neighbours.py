"""The cached candidate pairs of self-collision: a neighbour list with a skin.

A build bins the primitives' centres in the spatial hash (hashing.py) with cells wide
enough that every primitive within ``reach = thickness + skin`` (m, surface to
surface) of another lies in one of its 27 neighbouring cells, then keeps, per
primitive p, the primitives q > p that are within reach and not excluded:

* they share a particle, or a particle of one is joined by a spring to a particle of
  the other;
* they belong to one connected component and their distance in the rest shape (the
  system's initial positions) is below ``EXCLUDE_FACTOR x thickness``: such pairs start
  close, so pushing them apart would fight the springs.

The list stays valid while no two particles have moved more than ``skin`` closer
together: it is rebuilt only when some particle has moved more than skin / 2 since the
last build, measured relative to the mean displacement of all particles (a cloth
falling or carried as a whole keeps its list; |u_i - u_j| <= |u_i - u| + |u_j - u|).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .geometry import closest_params, gap
from .hashing import bin_points, cell_hash, table_mask
from .primitives import Primitives

#: candidate pairs in the rest-shape exclusion: closer than this many thicknesses
EXCLUDE_FACTOR = 2.0
#: skin (m) as a fraction of the thickness
SKIN_FACTOR = 0.5
#: candidate slots per primitive to start with (doubled when a build needs more)
START_SLOTS = 16


@njit(cache=True, inline="always")
def _joined(i, j, adj_start, adj_list):
    if i == j:
        return True
    for u in range(adj_start[i], adj_start[i + 1]):
        if adj_list[u] == j:
            return True
    return False


@njit(cache=True, inline="always")
def excluded(p, q, prim_a, prim_b, adj_start, adj_list, component, rest_x, exclude_sq):
    """Whether primitives p and q never repel (see the module docstring)."""
    a0, a1, b0, b1 = prim_a[p], prim_b[p], prim_a[q], prim_b[q]
    if (_joined(a0, b0, adj_start, adj_list) or _joined(a0, b1, adj_start, adj_list)
            or _joined(a1, b0, adj_start, adj_list) or _joined(a1, b1, adj_start, adj_list)):
        return True
    if component[a0] != component[b0]:
        return False
    s, t = closest_params(rest_x, a0, a1, b0, b1)
    gx, gy, gz = gap(rest_x, a0, a1, b0, b1, s, t)
    return gx * gx + gy * gy + gz * gz < exclude_sq


@njit(cache=True, parallel=True)
def _centres(x, prim_a, prim_b, centres, half):
    for p in prange(prim_a.shape[0]):
        a, b = prim_a[p], prim_b[p]
        lsq = 0.0
        for d in range(3):
            centres[p, d] = 0.5 * (x[a, d] + x[b, d])
            lsq += (x[b, d] - x[a, d]) ** 2
        half[p] = 0.5 * lsq ** 0.5


@njit(cache=True, parallel=True)
def _query(x, prim_a, prim_b, adj_start, adj_list, component, rest_x, exclude_sq, reach,
           centres, half, cells, start, order, mask, slots, counts):
    """Candidate pairs per primitive into slots (P, S) and counts (P,); returns the
    largest count wanted (> S: the build must be redone with more slots)."""
    n_prims = prim_a.shape[0]
    capacity = slots.shape[1]
    reach_sq = reach * reach
    for p in prange(n_prims):
        found = 0
        a0, a1 = prim_a[p], prim_b[p]
        ci, cj, ck = cells[p, 0], cells[p, 1], cells[p, 2]
        for di in range(-1, 2):
            for dj in range(-1, 2):
                for dk in range(-1, 2):
                    i, j, k = ci + di, cj + dj, ck + dk
                    h = cell_hash(i, j, k, mask)
                    for e in range(start[h], start[h + 1]):
                        q = order[e]
                        if q <= p or cells[q, 0] != i or cells[q, 1] != j or cells[q, 2] != k:
                            continue
                        bound = half[p] + half[q] + reach
                        dx = centres[p, 0] - centres[q, 0]
                        dy = centres[p, 1] - centres[q, 1]
                        dz = centres[p, 2] - centres[q, 2]
                        if dx * dx + dy * dy + dz * dz > bound * bound:
                            continue
                        b0, b1 = prim_a[q], prim_b[q]
                        s, t = closest_params(x, a0, a1, b0, b1)
                        gx, gy, gz = gap(x, a0, a1, b0, b1, s, t)
                        if gx * gx + gy * gy + gz * gz > reach_sq:
                            continue
                        if excluded(p, q, prim_a, prim_b, adj_start, adj_list, component,
                                    rest_x, exclude_sq):
                            continue
                        if found < capacity:
                            slots[p, found] = q
                        found += 1
        counts[p] = found
    largest = 0
    for p in range(n_prims):
        largest = max(largest, counts[p])
    return largest


@njit(cache=True)
def drifted(x, x_build, limit_sq):
    """Whether some particle moved more than sqrt(limit_sq) (m) since the build,
    relative to the mean displacement."""
    n = x.shape[0]
    mx = my = mz = 0.0
    for i in range(n):
        mx += x[i, 0] - x_build[i, 0]
        my += x[i, 1] - x_build[i, 1]
        mz += x[i, 2] - x_build[i, 2]
    mx /= n
    my /= n
    mz /= n
    for i in range(n):
        ux = x[i, 0] - x_build[i, 0] - mx
        uy = x[i, 1] - x_build[i, 1] - my
        uz = x[i, 2] - x_build[i, 2] - mz
        if not ux * ux + uy * uy + uz * uz <= limit_sq:  # NaN counts as moved
            return True
    return False


class NeighbourList:
    """Candidate pairs (slots[p, :counts[p]]) of the primitives of a Primitives set,
    valid for ``thickness`` (m) while the particles stay within the skin."""

    def __init__(self, prims: Primitives, n_particles: int):
        self.prims = prims
        n_prims = prims.prim_a.size
        self.mask = table_mask(n_prims)
        self.centres = np.zeros((n_prims, 3))
        self.half = np.zeros(n_prims)
        self.cells = np.zeros((n_prims, 3), np.int64)
        self.keys = np.zeros(n_prims, np.int64)
        self.start = np.zeros(self.mask + 2, np.int64)
        self.cursor = np.zeros(self.mask + 1, np.int64)
        self.order = np.zeros(n_prims, np.int64)
        self.slots = np.zeros((n_prims, START_SLOTS), np.int32)
        self.counts = np.zeros(n_prims, np.int32)
        self.x_build = np.zeros((n_particles, 3))
        self.built_for = -1.0  # thickness of the last build (m), -1: never built
        self.builds = 0

    def update(self, x: np.ndarray, thickness: float) -> bool:
        """Rebuild if the particles left the skin or the thickness changed; True if
        rebuilt."""
        skin = SKIN_FACTOR * thickness
        if self.built_for == thickness and not drifted(x, self.x_build, 0.25 * skin * skin):
            return False
        self.build(x, thickness)
        return True

    def build(self, x: np.ndarray, thickness: float) -> None:
        """Find the candidate pairs of the positions x (n, 3) m now."""
        p = self.prims
        reach = (1.0 + SKIN_FACTOR) * thickness
        exclude_sq = (EXCLUDE_FACTOR * thickness) ** 2
        _centres(x, p.prim_a, p.prim_b, self.centres, self.half)
        cell_size = 2.0 * float(self.half.max(initial=0.0)) + reach
        bin_points(self.centres, cell_size, self.mask, self.cells, self.keys, self.start,
                   self.cursor, self.order)
        while True:
            largest = _query(x, p.prim_a, p.prim_b, p.adj_start, p.adj_list, p.component,
                             p.rest_x, exclude_sq, reach, self.centres, self.half, self.cells,
                             self.start, self.order, self.mask, self.slots, self.counts)
            if largest <= self.slots.shape[1]:
                break
            self.slots = np.zeros((self.slots.shape[0], 2 * largest), np.int32)
        self.x_build[:] = x
        self.built_for = thickness
        self.builds += 1

    @property
    def n_pairs(self) -> int:
        return int(self.counts.sum())
