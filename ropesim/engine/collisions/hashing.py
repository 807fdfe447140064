"""A spatial hash of points built with a counting sort (numba).

Points (the primitives' centres) are binned into cubic cells of side ``cell_size``
(m); a cell (i, j, k) goes to bucket hash(i, j, k) & mask of a table of 2^p >= 2 x
points buckets. The counting sort writes ``order``: the points bucket by bucket, with
``start[h]:start[h + 1]`` the slice of bucket h. Each point keeps its integer cell, so
a query skips the points of other cells that share its bucket (no duplicate pairs).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def cell_hash(i, j, k, mask):
    """Bucket of cell (i, j, k) (int64 coordinates) in a table of mask + 1 buckets."""
    return ((i * 73856093) ^ (j * 19349663) ^ (k * 83492791)) & mask


def table_mask(n_points: int) -> int:
    """mask = 2^p - 1 for the smallest table of at least 2 x n_points buckets."""
    return (1 << max(1, math.ceil(math.log2(max(2 * n_points, 2))))) - 1


#: the 13 neighbour cells (di, dj, dk) > (0, 0, 0) in lexicographic order: with the own
#: cell they visit every pair of neighbouring cells once
HALF_SHELL = np.array([(di, dj, dk) for di in (-1, 0, 1) for dj in (-1, 0, 1)
                       for dk in (-1, 0, 1) if (di, dj, dk) > (0, 0, 0)], dtype=np.int64)


@njit(cache=True)
def bin_points(centres, radius, cell_size, mask, cells, keys, start, cursor, order,
               rank, sorted_centres, sorted_radius, sorted_cells):
    """Bin the points centres (P, 3) m with radii (P,) m: cells (P, 3) int64 and keys
    (P,) per point; start (mask + 2,) and order (P,) bucket by bucket, rank (P,) its
    inverse (order[rank[p]] = p); the points' centres, radii and cells copied in that
    order (sorted_*), so a query reads them contiguously (cursor: (mask + 1,) scratch)."""
    n = centres.shape[0]
    inv = 1.0 / cell_size
    for p in range(n):
        i = np.int64(math.floor(centres[p, 0] * inv))
        j = np.int64(math.floor(centres[p, 1] * inv))
        k = np.int64(math.floor(centres[p, 2] * inv))
        cells[p, 0] = i
        cells[p, 1] = j
        cells[p, 2] = k
        keys[p] = cell_hash(i, j, k, mask)
    start[:] = 0
    for p in range(n):
        start[keys[p] + 1] += 1
    for h in range(mask + 1):
        start[h + 1] += start[h]
        cursor[h] = start[h]
    for p in range(n):
        h = keys[p]
        e = cursor[h]
        cursor[h] += 1
        order[e] = p
        rank[p] = e
        for d in range(3):
            sorted_centres[e, d] = centres[p, d]
            sorted_cells[e, d] = cells[p, d]
        sorted_radius[e] = radius[p]
