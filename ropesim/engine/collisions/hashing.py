"""The spatial hash of the neighbour list's local drift check (numba): a cell (i, j, k)
goes to bucket hash(i, j, k) & mask of a table of 2^p >= 2 x points buckets."""

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
