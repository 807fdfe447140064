"""The cached candidate pairs of self-collision: a neighbour list with a skin.

A build (tiles.py: rest-shape tiles fitted with affine maps, a tree over them, exact
certificates for smooth tile pairs and a search of the others) keeps, per primitive p,
the primitives q that are within ``reach = thickness + skin`` (m, surface to surface)
and not excluded:

* they share a particle, or a particle of one is joined by a spring to a particle of
  the other;
* they belong to one connected component and their distance in the rest shape (the
  system's initial positions) is below ``EXCLUDE_FACTOR x thickness``: such pairs start
  close, so pushing them apart would fight the springs.

The list stays valid while no two primitives that could now touch have moved more than
``skin`` relative to each other since the build (their distance then shrank by at most
the skin, so they were within reach and are listed). Two checks, cheap first: no
particle has moved more than skin / 2 relative to the mean displacement of all (a cloth
falling or carried as a whole keeps its list; |u_i - u_j| <= |u_i - u| + |u_j - u|);
else, no cell of a coarse grid (side DRIFT_CELLS x thickness) holds two primitives
whose displacements differ by more than the skin (drifted_locally: a cloth swinging
fast but smoothly keeps its list). Only when both fail is the list rebuilt.

Checking costs time too (about a list build's, for a 128 x 128 cloth), and a list that
the next step's check finds stale saves nothing. So the list is kept one of two ways:
*checked*, built with a skin of SKIN_FACTOR thicknesses and checked every step, or
*rebuilt*, built every step without a skin (reach = thickness: fewer tile pairs to
settle) and never checked. A checked list that serves fewer than MIN_CHECKED_STEPS
steps switches to rebuilding (a swinging or folding cloth whose layers slide a skin in
a few steps); every probe_every-th rebuilt step (PROBE_EVERY, doubled after each probe
that does not last, up to MAX_PROBE_EVERY) tries a checked list again. The choice
depends on the positions only, as does the pass (self_contact.py): it changes the
speed, never the result.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from .. import parallel
from .geometry import bounding_ball
from .hashing import cell_hash, table_mask
from .primitives import Primitives
from .tiles import (build_tiles, fit_tiles, fit_tiles_parallel, query_tiles,
                    query_tiles_parallel, refit_tree)

#: candidate pairs in the rest-shape exclusion: closer than this many thicknesses
EXCLUDE_FACTOR = 3.0
#: skin (m) of a checked list, in thicknesses: its reach (2 thicknesses) stays below the
#: exclusion distance (EXCLUDE_FACTOR) so that tile pairs of a smooth cloth can still be
#: certified (tiles.py)
SKIN_FACTOR = 1.0
#: side of the cells of the local drift check, in thicknesses (at least)
DRIFT_CELLS = 4.0
#: room for candidate pairs to start with (doubled when a build needs more)
START_PAIRS = 1024
#: a checked list must serve at least this many steps (its build's step and the steps
#: its checks passed) to pay for its checks: a check costs about a build's time on a
#: 128 x 128 cloth (0.75 against 1-3 ms); a list that lasts fewer is rebuilt instead
MIN_CHECKED_STEPS = 4
#: while rebuilding, a checked list is tried again every probe_every-th step:
#: PROBE_EVERY, doubled after each probe that does not last, up to MAX_PROBE_EVERY
PROBE_EVERY = 8
MAX_PROBE_EVERY = 128


@njit(cache=True)
def _largest_radius(x, prims, first):
    """The largest bounding-ball radius (m) of the capsules and triangles, which come
    after the spheres (radius 0) from index ``first``."""
    largest = 0.0
    for p in range(first, prims.shape[0]):
        if prims[p, 0] != prims[p, 2]:
            largest = max(largest, bounding_ball(x, prims[p, 0], prims[p, 1], prims[p, 2])[3])
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


@njit(cache=True)
def _fill_cells(x, x_build, prims, thickness, cell_size, mask, box_min, box_max, cell_key,
                touched):
    """drifted_locally's table: (used, full): the buckets filled (touched[:used]) and
    whether the cells outgrew the table (then the filling stopped)."""
    inv = 1.0 / cell_size
    used = 0
    for p in range(prims.shape[0]):
        a = prims[p, 0]
        if a == prims[p, 2]:  # a sphere: its particle (a cloth's primitives, the fast way)
            cx, cy, cz = np.float64(x[a, 0]), np.float64(x[a, 1]), np.float64(x[a, 2])
            radius = 0.5 * thickness
        else:
            cx, cy, cz, radius = bounding_ball(x, a, prims[p, 1], prims[p, 2])
            radius += 0.5 * thickness
        lo_i = np.int64(math.floor((cx - radius) * inv))
        lo_j = np.int64(math.floor((cy - radius) * inv))
        lo_k = np.int64(math.floor((cz - radius) * inv))
        hi_i = np.int64(math.floor((cx + radius) * inv))
        hi_j = np.int64(math.floor((cy + radius) * inv))
        hi_k = np.int64(math.floor((cz + radius) * inv))
        for i in range(lo_i, hi_i + 1):
            for j in range(lo_j, hi_j + 1):
                for k in range(lo_k, hi_k + 1):
                    h = cell_hash(i, j, k, mask)
                    while box_max[h, 0] >= box_min[h, 0] and not (
                            cell_key[h, 0] == i and cell_key[h, 1] == j
                            and cell_key[h, 2] == k):
                        h = (h + 1) & mask  # another cell's bucket: probe on
                    if box_max[h, 0] < box_min[h, 0]:  # a new cell
                        if 4 * used >= 3 * (mask + 1):
                            return used, True  # the table is 3/4 full
                        touched[used] = h
                        used += 1
                        cell_key[h, 0], cell_key[h, 1], cell_key[h, 2] = i, j, k
                    for corner in range(3):
                        c = prims[p, corner]
                        if corner > 0 and c == prims[p, corner - 1]:
                            break  # a sphere's or capsule's repeated index: no more
                        for d in range(3):
                            u = x[c, d] - x_build[c, d]
                            box_min[h, d] = min(box_min[h, d], u)
                            box_max[h, d] = max(box_max[h, d], u)
    return used, False


@njit(cache=True)
def drifted_locally(x, x_build, prims, thickness, cell_size, mask, box_min, box_max,
                    cell_key, touched, limit_sq):
    """Whether two primitives that may now be within ``thickness`` (m) of each other can
    have moved more than sqrt(limit_sq) (m) relative to each other since the build.

    Each primitive's bounding ball (a sphere's particle, bounding_ball for the others;
    + thickness / 2) is put into every cell of side ``cell_size`` it overlaps, and each
    cell keeps the bounding box of the displacements of the particles put into it. Two
    primitives within thickness have overlapping balls, so they share a cell, and the
    relative displacement of any two of their points is at most that cell's box
    diagonal. A cell owns one bucket of the
    table (mask + 1 buckets, ``cell_key`` the cell that holds it): it starts at
    hash(cell) and probes on past the buckets of other cells, so two cells never share
    a box (a shared box holds displacements from far apart: a cloth that turns as a
    whole failed the check every step when hash collisions merged cells). The boxes
    start empty (min inf, max -inf) and are emptied again on the way out (only the
    ``touched`` buckets, listed in that scratch array); a table 3/4 full counts as
    moved (a rebuild: always safe)."""
    used, moved = _fill_cells(x, x_build, prims, thickness, cell_size, mask, box_min,
                              box_max, cell_key, touched)
    for u in range(used):
        h = touched[u]
        diagonal_sq = 0.0
        for d in range(3):
            diagonal_sq += (box_max[h, d] - box_min[h, d]) ** 2
            box_min[h, d] = np.inf
            box_max[h, d] = -np.inf
        if not diagonal_sq <= limit_sq:  # NaN counts as moved
            moved = True
    return moved


class NeighbourList:
    """Candidate pairs (``pairs``: p < q) of the primitives of a Primitives set,
    valid for ``thickness`` (m) while the particles stay within the skin."""

    def __init__(self, prims: Primitives, n_particles: int):
        self.prims = prims
        n_prims = prims.prims.shape[0]
        self.tiles = build_tiles(prims)
        self.listed = np.zeros((START_PAIRS, 2), np.int32)  # pairs p < q, n_listed of them
        self.n_listed = 0
        self.keys = np.zeros(START_PAIRS, np.int64)  # the touching pairs of a step, p * P + q
        self.x_build = np.zeros((n_particles, 3))
        self.built_for = -1.0  # thickness of the last build (m), -1: never built
        self.reach = -1.0  # thickness + skin of the last build (m)
        self.builds = 0
        self.searched = self.certified = 0  # tile pairs of the last build
        self.skin_factor = SKIN_FACTOR  # skin of a checked build, in thicknesses
        self.lived = 0  # updates since the last build
        self.checked = True  # the way the list is kept (module docstring)
        self.probe_every = PROBE_EVERY
        self.until_probe = PROBE_EVERY  # rebuilt steps left before a checked list
        self.probing = False  # the checked list is a probe
        self.n_spheres = prims.n_spheres
        self.largest_half = 0.0  # m, at the last build
        # at least 4 buckets a primitive (a ball overlaps 1 to 8 cells, about 2 in a cloth)
        self.drift_mask = table_mask(2 * n_prims)
        self.box_min = np.full((self.drift_mask + 1, 3), np.inf)
        self.box_max = np.full((self.drift_mask + 1, 3), -np.inf)
        self.cell_key = np.zeros((self.drift_mask + 1, 3), np.int64)  # a bucket's cell
        self.touched = np.zeros(self.drift_mask + 1, np.int64)  # the filled buckets
        self.chooser = parallel.Chooser()  # serial or parallel build (the same list)

    def update(self, x: np.ndarray, thickness: float) -> bool:
        """Rebuild if the list is kept rebuilt, or checked and the particles left the
        skin, or the thickness changed; True if rebuilt."""
        self.lived += 1
        if self.built_for == thickness:
            if self.checked and not self._drifted(x, thickness):
                return False
            self._choose()
        self.build(x, thickness)
        return True

    def _drifted(self, x: np.ndarray, thickness: float) -> bool:
        """Whether the particles may have left the skin (the two checks, cheap first)."""
        skin = self.skin
        if not drifted(x, self.x_build, 0.25 * skin * skin):
            return False
        cell_size = max(2.0 * self.largest_half + thickness, DRIFT_CELLS * thickness)
        return drifted_locally(x, self.x_build, self.prims.prims, thickness, cell_size,
                               self.drift_mask, self.box_min, self.box_max, self.cell_key,
                               self.touched, skin * skin)

    def _choose(self) -> None:
        """The list ran out: pick the way to keep the next one (module docstring). A
        checked list that served fewer than MIN_CHECKED_STEPS steps did not pay for its
        checks: rebuild, and probe a checked list again after probe_every steps."""
        if not self.checked:
            self.until_probe -= 1
            if self.until_probe <= 0:
                self.checked = self.probing = True
            return
        if self.lived < MIN_CHECKED_STEPS:
            self.probe_every = (min(2 * self.probe_every, MAX_PROBE_EVERY) if self.probing
                                else PROBE_EVERY)
            self.checked, self.until_probe = False, self.probe_every
        else:
            self.probe_every = PROBE_EVERY
        self.probing = False

    def build(self, x: np.ndarray, thickness: float) -> None:
        """Find the candidate pairs of the positions x (n, 3) m now."""
        p = self.prims
        # a list that the next step rebuilds without a check needs no skin
        skin_factor = self.skin_factor if self.checked else 0.0
        reach = (1.0 + skin_factor) * thickness
        exclude_sq = (EXCLUDE_FACTOR * thickness) ** 2
        self.largest_half = _largest_radius(x, p.prims, self.n_spheres)
        t = self.tiles
        use_parallel = self.chooser.parallel() and parallel.threads() > 1
        fit, query = ((fit_tiles_parallel, query_tiles_parallel) if use_parallel
                      else (fit_tiles, query_tiles))
        start = time.perf_counter()
        fit(x, t.part_start, t.part_list, t.plane, t.inv_moment, t.frame, t.x_mean, t.stretch,
            t.in_plane, t.rho, t.sigma, t.lo, t.hi, t.x_members)
        refit_tree(t.node_left, t.node_right, t.node_tile, t.lo, t.hi, t.node_lo, t.node_hi)
        while True:
            total, lane_needed, self.searched, self.certified = query(
                t.tasks, x, (p.prims, p.adj_start, p.adj_list, p.component, p.rest_x),
                (t.prim_start, t.prim_list, t.part_start, t.component, t.rest_mean, t.frame,
                 t.extent, t.rest_members, t.spheres_only),
                (t.x_mean, t.stretch, t.in_plane, t.rho, t.sigma, t.lo, t.hi, t.x_members),
                (t.node_left, t.node_right, t.node_tile, t.node_lo, t.node_hi),
                (t.stack, t.res_a, t.res_b, t.near_a, t.near_b, t.lane_pairs, t.lane_found,
                 t.lane_tally), self.listed, exclude_sq, reach)
            if lane_needed > t.lane_pairs.shape[1]:
                t.lane_pairs = np.zeros((t.lane_pairs.shape[0], 2 * lane_needed, 2), np.int32)
            elif total > self.listed.shape[0]:
                self.listed = np.zeros((2 * total, 2), np.int32)
                self.keys = np.zeros(2 * total, np.int64)  # for touching_pairs
            else:
                break
        self.chooser.record(use_parallel, start)
        self.n_listed = total
        self.x_build[:] = x
        self.built_for = thickness
        self.reach = reach
        self.lived = 0
        self.builds += 1

    @property
    def skin(self) -> float:
        """Skin (m) of the current list (reach - thickness)."""
        return self.reach - self.built_for

    @property
    def n_pairs(self) -> int:
        return self.n_listed

    @property
    def pairs(self) -> np.ndarray:
        """(n_pairs, 2) int32 view: the candidate pairs (p < q) of the last build."""
        return self.listed[:self.n_listed]
