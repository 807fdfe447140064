"""Column grid: the candidate pairs of spheres, for a list rebuilt every step (numba).

A cloth that bunches and folds at the scale of its tiles (tiles.py; the benchmark's
soft cloth does) leaves the tiles' certificates little to settle, and its checked list
does not last (neighbours.py): the list is rebuilt every step with reach = thickness.
For a primitive set of spheres only (a cloth whose triangles do not collide, particles
without springs) such a build is faster on this grid, whose work follows the particles
rather than the boxes of tiles:

* the spheres go into columns: square cells of side at least ``reach`` (m) across the
  two narrower axes of their bounding box (one empty column on each side, so that
  neighbours need no test), each column sorted along the widest axis;
* every pair within reach lies in one column or two neighbouring ones, and within
  reach along the widest axis: a sweep of each column against itself and against its
  forward neighbours (+1, 0), (-1, +1), (0, +1) and (+1, +1) meets it exactly once;
* a pair met within reach (the float64 distance of tiles._search_spheres) that is not
  excluded (tiles.excluded) is listed: the same pairs as the tiles' search.

The counting sort visits the spheres in the last build's order and the insertion sort
along the axis then finds them almost in order (a list rebuilt every step). The rows of
columns are dealt in turn to LANES lanes, which sort and then sweep on numba's threads
(a lane's sweep reads the next row, so every lane sorts before any sweeps); the lanes,
not the threads, split the work, so the list does not depend on the thread count.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .primitives import Primitives
from .tiles import LANES, _gather, _keep, excluded

#: most columns per sphere (and 64 more); a wider spread gets wider columns
COLUMNS_PER_SPHERE = 4
#: factor by which the columns widen until they fit
WIDEN = 1.25


def all_spheres(prims: Primitives) -> bool:
    """Whether every primitive of the set is a sphere (the grid's case)."""
    return prims.n_spheres == prims.prims.shape[0]


class ColumnGrid:
    """Scratch of the column grid of a set of P spheres (module docstring)."""

    def __init__(self, n_spheres: int):
        p = n_spheres
        self.order = np.arange(p, dtype=np.int64)  # the spheres column by column
        self.previous = np.arange(p, dtype=np.int64)  # the last build's order
        self.column = np.zeros(p, np.int64)  # column of previous[u]
        self.staged = np.zeros((3, p))  # position (m) of previous[u], x, y, z rows
        self.max_columns = COLUMNS_PER_SPHERE * p + 64
        self.column_start = np.zeros(self.max_columns + 1, np.int64)
        # per half of the previous order, each column's count and then its cursor
        self.cursor = np.zeros((2, self.max_columns), np.int64)
        self.sorted_x = np.zeros((3, p))  # positions (m) in that order, x, y, z rows
        self.tally = np.zeros((LANES, 2), np.int64)  # no tile pairs: zeros for _gather

    def turn_over(self) -> None:
        """Before a build: the last build's order becomes the previous one (the two
        arrays trade roles, no copy)."""
        self.order, self.previous = self.previous, self.order

    @property
    def arrays(self) -> tuple:
        """The grid argument of query_columns."""
        return (self.order, self.previous, self.column, self.staged, self.column_start,
                self.cursor, self.sorted_x, self.max_columns, self.tally)


@njit(cache=True, inline="always")
def sort_columns(x, prims, reach, grid):
    """Put the spheres (prims) at the positions x (m) into columns (module docstring):
    grid's order holds them column by column (a counting sort in the previous order,
    grid's previous: the last build's order, ColumnGrid.turn_over),
    sorted_x their positions, column_start (C + 1) where each column starts. Returns
    (the number of columns C, columns per row, the axis along which the columns are
    sorted: 0, 1 or 2). Its loops are prange loops (on numba's threads in a parallel
    caller): the bounds and cells over the spheres, the count and the scatter over the
    two halves of the previous order (the first half's spheres go first in each column:
    the order of one serial counting sort), with only the prefix sum serial."""
    order, previous, column, staged, column_start, cursor, sorted_x, max_columns = grid[:8]
    n = order.shape[0]
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    for p in prange(n):
        i = prims[p, 0]
        lo0 = min(lo0, x[i, 0])
        lo1 = min(lo1, x[i, 1])
        lo2 = min(lo2, x[i, 2])
        hi0 = max(hi0, x[i, 0])
        hi1 = max(hi1, x[i, 1])
        hi2 = max(hi2, x[i, 2])
    along, spread_along = 0, _spread(lo0, hi0)
    if _spread(lo1, hi1) > spread_along:
        along, spread_along = 1, _spread(lo1, hi1)
    if _spread(lo2, hi2) > spread_along:
        along = 2
    b, c = (1, 2) if along == 0 else ((0, 2) if along == 1 else (0, 1))
    lo = (lo0, lo1, lo2)
    spread = (_spread(lo0, hi0), _spread(lo1, hi1), _spread(lo2, hi2))
    lo_b, lo_c, spread_b, spread_c = lo[b], lo[c], spread[b], spread[c]
    side = reach
    while (np.floor(spread_b / side) + 3) * (np.floor(spread_c / side) + 3) > max_columns:
        side *= WIDEN
    per_row = np.int64(np.floor(spread_b / side)) + 3
    rows = np.int64(np.floor(spread_c / side)) + 3
    columns = per_row * rows
    inverse = 1.0 / side
    for u in prange(n):  # in the previous order: the scatter below reads in turn
        i = prims[previous[u], 0]
        staged[0, u], staged[1, u], staged[2, u] = x[i, 0], x[i, 1], x[i, 2]
        column[u] = (_cell(x[i, b], lo_b, inverse, per_row)
                     + per_row * _cell(x[i, c], lo_c, inverse, rows))
    half = (n + 1) // 2
    for h in prange(2):
        cursor[h, :columns] = 0
        for u in range(h * half, min(n, (h + 1) * half)):
            cursor[h, column[u]] += 1
    total = 0
    for k in range(columns):
        column_start[k] = total
        first = cursor[0, k]
        cursor[0, k] = total
        cursor[1, k], total = total + first, total + first + cursor[1, k]
    column_start[columns] = total
    xs, ys, zs = sorted_x[0], sorted_x[1], sorted_x[2]
    for h in prange(2):
        for u in range(h * half, min(n, (h + 1) * half)):
            k = column[u]
            w = cursor[h, k]
            cursor[h, k] = w + 1
            order[w] = previous[u]
            xs[w], ys[w], zs[w] = staged[0, u], staged[1, u], staged[2, u]
    return columns, per_row, along


@njit(cache=True, inline="always")
def _spread(lo, hi):
    """hi - lo (m), or 0 if it is not finite (NaN or inf: one cell along that axis)."""
    spread = hi - lo
    return spread if spread < np.inf else 0.0


@njit(cache=True, inline="always")
def _cell(value, lo, inverse, count):
    """The cell (1 .. count - 2) of a coordinate (m); a NaN goes to the first, a
    coordinate past the last cell (an infinite spread) to the last."""
    t = (value - lo) * inverse
    if t >= 0.0 and t < count - 3:
        return np.int64(t) + 1
    return count - 2 if t >= count - 3 else np.int64(1)


@njit(cache=True, inline="always")
def _sort_rows(lane, columns, per_row, column_start, sorted_x, along, order):
    """Insertion sort along the axis of each column of the lane's rows: every LANES-th
    row from row 1 + lane (the first and last rows and columns are empty). Dealt in
    turn, the rows of a dense and of a sparse part of the spread fall to every lane
    alike (a row costs as much as its spheres and its columns)."""
    key = sorted_x[along]
    for row in range(1 + lane, columns // per_row - 1, LANES):
        for k in range(per_row * row + 1, per_row * (row + 1) - 1):
            _sort_column(column_start[k], column_start[k + 1], sorted_x, key, order)


@njit(cache=True, inline="always")
def _sort_column(first, end, sorted_x, key, order):
    """Insertion sort of the column first..end-1 along the axis (key)."""
    for w in range(first + 1, end):
        value = key[w]
        if key[w - 1] <= value:
            continue
        x0, x1, x2, p = sorted_x[0, w], sorted_x[1, w], sorted_x[2, w], order[w]
        u = w - 1
        while u >= first and key[u] > value:
            sorted_x[0, u + 1], sorted_x[1, u + 1] = sorted_x[0, u], sorted_x[1, u]
            sorted_x[2, u + 1], order[u + 1] = sorted_x[2, u], order[u]
            u -= 1
        sorted_x[0, u + 1], sorted_x[1, u + 1], sorted_x[2, u + 1] = x0, x1, x2
        order[u + 1] = p


@njit(cache=True, inline="always")
def _sweep(s0, s1, t0, t1, sorted_x, along, order, reach, pairs, met):
    """The pairs of column s0..s1-1 and column t0..t1-1 (both sorted along the axis; the
    same column if s0 == t0: then each pair once) within ``reach`` (m), into the lane's
    buffer ``pairs`` (K, 2) from index ``met`` on; returns the new count (past K: the
    build redoes it with a bigger buffer). Each candidate in the window is written and
    kept by a count, without a branch on its distance (in or out of reach, in no order
    a predictor sees); unsigned indices: no negative-index wrap to test. An empty column
    t returns at once (most neighbours of a sparse part of the spread are empty)."""
    if t0 == t1:
        return met
    xs, ys, zs, key = sorted_x[0], sorted_x[1], sorted_x[2], sorted_x[along]
    reach_sq = reach * reach
    one = np.uint64(1)
    room = pairs.shape[0]
    same = s0 == t0
    lo, end = np.uint64(t0), np.uint64(t1)
    for s in range(np.uint64(s0), np.uint64(s1)):
        ps = key[s]
        if same:
            lo = s + one
        else:
            while lo < end and key[lo] < ps - reach:
                lo += one
        px, py, pz = xs[s], ys[s], zs[s]
        p = order[s]
        w = lo
        while w < end and key[w] <= ps + reach:
            gx = px - xs[w]
            gy = py - ys[w]
            gz = pz - zs[w]
            q = order[w]
            if met < room:
                pairs[met, 0], pairs[met, 1] = min(p, q), max(p, q)
            met += np.int64(gx * gx + gy * gy + gz * gz <= reach_sq)
            w += one
    return met


@njit(cache=True, inline="always")
def _sweep_rows(lane, columns, per_row, column_start, sorted_x, along, order, shape,
                exclude_sq, reach, pairs, found):
    """The lane's rows: each column against itself and its forward neighbours; then the
    pairs met that are excluded leave the lane's buffer (a loop of its own: the sweeps'
    loops stay short)."""
    buffer = pairs[lane]
    met = 0
    for row in range(1 + lane, columns // per_row - 1, LANES):
        for k in range(per_row * row + 1, per_row * (row + 1) - 1):
            s0, s1 = column_start[k], column_start[k + 1]
            if s0 == s1:
                continue
            met = _sweep(s0, s1, s0, s1, sorted_x, along, order, reach, buffer, met)
            met = _sweep(s0, s1, s1, column_start[k + 2], sorted_x, along, order, reach,
                         buffer, met)
            up = k + per_row
            for kk in range(up - 1, up + 2):
                met = _sweep(s0, s1, column_start[kk], column_start[kk + 1], sorted_x,
                             along, order, reach, buffer, met)
    found[lane] = met
    if met > pairs.shape[1]:
        return  # the build redoes it with bigger buffers
    prims, adj_start, adj_list, component, rest_x, joined_sq = shape
    found[lane] = 0
    for k in range(met):
        p, q = pairs[lane, k, 0], pairs[lane, k, 1]
        if not excluded(p, q, prims, adj_start, adj_list, component, rest_x, joined_sq,
                        exclude_sq):
            _keep(p, q, pairs, found, lane)


@njit(cache=True, inline="always")
def _query(x, shape, grid, listed, exclude_sq, reach, pairs, found):
    """query_columns' work; its lanes' loops are prange (plain ranges when the caller is
    not parallel)."""
    order, column_start, sorted_x, tally = grid[0], grid[4], grid[6], grid[8]
    columns, per_row, along = sort_columns(x, shape[0], reach, grid)
    for lane in prange(LANES):
        _sort_rows(lane, columns, per_row, column_start, sorted_x, along, order)
    for lane in prange(LANES):
        _sweep_rows(lane, columns, per_row, column_start, sorted_x, along, order, shape,
                    exclude_sq, reach, pairs, found)
    return _gather(pairs, found, tally, listed)


@njit(cache=True)
def query_columns(x, shape, grid, listed, exclude_sq, reach, pairs, found):
    """Candidate pairs (p < q) of a set of spheres into listed (L, 2) (module
    docstring): ``shape`` = Primitives.search_arrays, ``grid`` = ColumnGrid.arrays,
    pairs and found the lanes' buffers (Tiles.lane_pairs, lane_found). Returns
    tiles._gather's tuple."""
    return _query(x, shape, grid, listed, exclude_sq, reach, pairs, found)


@njit(cache=True, parallel=True)
def query_columns_parallel(x, shape, grid, listed, exclude_sq, reach, pairs, found):
    """query_columns with the lanes on numba's threads: the same list."""
    return _query(x, shape, grid, listed, exclude_sq, reach, pairs, found)
