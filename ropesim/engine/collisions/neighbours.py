"""The cached candidate pairs of self-collision: a neighbour list with a skin.

A build (tiles.py: rest-shape tiles fitted with affine maps, a tree over them, exact
certificates for smooth tile pairs and a search of the others; or, for a list of
spheres rebuilt every step, columns.py's grid, whichever a Chooser times as faster,
timed again at once when the state makes its pick slower than the other was: the
same pairs) keeps, per primitive p, the primitives q that are within
``reach = thickness + skin`` (m, surface to surface) and not excluded:

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
else, a walk of the tiles' tree (tiles.drifted) finds no two tiles within the thickness
of each other whose particles' displacements spread over more than the skin (a cloth
swinging or turning fast but smoothly keeps its list). Only when both fail is the list
rebuilt.

Checking costs time too (about a quarter of a list build's, for a 128 x 128 cloth),
and a list that the next step's check finds stale saves nothing. So the list is kept
one of two ways: *checked*, built with a skin of SKIN_FACTOR thicknesses and checked
every step, or *rebuilt*, built every step without a skin (reach = thickness: fewer
tile pairs to settle) and never checked. A checked list that serves fewer than
MIN_CHECKED_STEPS steps switches to rebuilding (a swinging or folding cloth whose
layers slide a skin in a few steps); every probe_every-th rebuilt step (PROBE_EVERY,
doubled after each probe that does not last, up to MAX_PROBE_EVERY) tries a checked
list again. The choice depends on the positions only, as does the pass
(self_contact.py): it changes the speed, never the result.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from .. import parallel
from .columns import ColumnGrid, all_spheres, query_columns, query_columns_parallel
from .primitives import Primitives
from .tiles import (build_tiles, drifted, fit_tiles, fit_tiles_parallel, query_tiles,
                    query_tiles_parallel, refit_tree)

#: candidate pairs in the rest-shape exclusion: closer than this many thicknesses
EXCLUDE_FACTOR = 3.0
#: skin (m) of a checked list, in thicknesses: its reach (2 thicknesses) stays below the
#: exclusion distance (EXCLUDE_FACTOR) so that tile pairs of a smooth cloth can still be
#: certified (tiles.py)
SKIN_FACTOR = 1.0
#: room for candidate pairs to start with (doubled when a build needs more)
START_PAIRS = 1024
#: a checked list must serve at least this many steps (its build's step and the steps
#: its checks passed) to pay for its checks and its thicker reach: a check costs about a
#: quarter of a build on a 128 x 128 cloth (0.24 against 0.8-1 ms), a build with the
#: skin up to 1.6 times one without; a list that lasts fewer is rebuilt instead
MIN_CHECKED_STEPS = 3
#: while rebuilding, a checked list is tried again every probe_every-th step:
#: PROBE_EVERY, doubled after each probe that does not last, up to MAX_PROBE_EVERY
PROBE_EVERY = 8
MAX_PROBE_EVERY = 128


@njit(cache=True)
def drifted_as_a_whole(x, x_build, limit_sq):
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
    """Candidate pairs (``pairs``: p < q) of the primitives of a Primitives set,
    valid for ``thickness`` (m) while the particles stay within the skin."""

    def __init__(self, prims: Primitives, n_particles: int):
        self.prims = prims
        self.has_triangles = prims.n_triangles > 0
        self.tiles = build_tiles(prims)
        self.listed = np.zeros((START_PAIRS, 2), np.int32)  # pairs p < q, n_listed of them
        self.n_listed = 0
        self._pair_scratch(START_PAIRS)
        self.key_counts = np.zeros(len(prims.prims) + 1, np.int64)
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
        self.chooser = parallel.Chooser()  # serial or parallel build (the same list)
        # a rebuilt list of spheres only is built on a column grid (columns.py)
        spheres = all_spheres(prims)
        self.columns = ColumnGrid(len(prims.prims)) if spheres else None
        self.corners = 1 if spheres else 3  # particles a primitive may have
        # a rebuilt list of spheres on the columns (True) or on the tiles (False)
        self.grid_chooser = parallel.Chooser(follows_mode=False, drift=True)

    def _pair_scratch(self, size: int) -> None:
        """Room for ``size`` touching pairs (self_contact.py): their keys (p << 31 | q),
        the keys' sort's and split's scratch, the split's sides, the pass's ends and
        weights."""
        self.keys = np.zeros(size, np.int64)
        self.spare_keys = np.zeros_like(self.keys)
        self.sides = np.zeros(size, np.int8)
        self.ends = np.zeros((size, 2), np.int32)
        self.weights = np.zeros((size, 2))

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
        if not drifted_as_a_whole(x, self.x_build, 0.25 * skin * skin):
            return False
        t = self.tiles
        return drifted(x, self.x_build, t.part_start, t.part_list,
                       (t.lo, t.hi, t.move_lo, t.move_hi),
                       (t.node_left, t.node_right, t.node_tile, t.node_lo, t.node_hi,
                        t.node_move_lo, t.node_move_hi), t.stack[0], thickness, skin * skin)

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

    def build(self, x: np.ndarray, thickness: float, columns: bool | None = None) -> None:
        """Find the candidate pairs of the positions x (n, 3) m now; ``columns``: True
        or False builds a list of spheres on the column grid or on the tiles, None lets
        the grid chooser pick for a rebuilt list (a checked one is built on the tiles)."""
        p = self.prims
        # a list that the next step rebuilds without a check needs no skin
        skin_factor = self.skin_factor if self.checked else 0.0
        reach = (1.0 + skin_factor) * thickness
        exclude_sq = (EXCLUDE_FACTOR * thickness) ** 2
        t = self.tiles
        chosen = columns is None and self.columns is not None and not self.checked
        on_columns = (self.columns is not None and bool(columns) if not chosen
                      else self.grid_chooser.parallel())
        # the columns' lanes pay on two threads at every size that needs self-collision;
        # tiles timed against the columns (the columns' pick) run as their own pick stands
        tiles_timed = not on_columns and not (chosen and self.grid_chooser.best)
        use_parallel = ((parallel.get_mode() != "serial" if on_columns
                         else self.chooser.parallel() if tiles_timed
                         else self.chooser.current()) and parallel.threads() > 1)
        start = time.perf_counter()
        shape = p.search_arrays
        if not on_columns:
            fit = fit_tiles_parallel if use_parallel else fit_tiles
            fit(x, t.part_start, t.part_list, t.plane, t.inv_moment, t.frame, t.x_mean,
                t.stretch, t.in_plane, t.rho, t.sigma, t.lo, t.hi, t.x_members)
            refit_tree(t.node_left, t.node_right, t.node_tile, t.lo, t.hi, t.node_lo,
                       t.node_hi)
        if on_columns:
            self.columns.turn_over()
        while True:
            if on_columns:
                g = self.columns
                query = query_columns_parallel if use_parallel else query_columns
                total, lane_needed, self.searched, self.certified = query(
                    x, shape, g.arrays,
                    self.listed, exclude_sq, reach, t.lane_pairs, t.lane_found)
            else:
                query = query_tiles_parallel if use_parallel else query_tiles
                total, lane_needed, self.searched, self.certified = query(
                    t.tasks, x, shape,
                    (t.prim_start, t.prim_list, t.part_start, t.component, t.rest_mean,
                     t.frame, t.extent, t.rest_members, t.spheres_only),
                    (t.x_mean, t.stretch, t.in_plane, t.rho, t.sigma, t.lo, t.hi,
                     t.x_members),
                    (t.node_left, t.node_right, t.node_tile, t.node_lo, t.node_hi),
                    (t.stack, t.res_a, t.res_b, t.near_a, t.near_b, t.near_x,
                     t.lane_pairs, t.lane_found, t.lane_tally), self.listed, exclude_sq,
                    reach)
            if lane_needed > t.lane_pairs.shape[1]:
                t.lane_pairs = np.zeros((t.lane_pairs.shape[0], 2 * lane_needed, 2), np.int32)
            elif total > self.listed.shape[0]:
                self.listed = np.zeros((2 * total, 2), np.int32)
                self._pair_scratch(2 * total)
            else:
                break
        if tiles_timed:
            self.chooser.record(use_parallel, start)
        if chosen:
            self.grid_chooser.record(on_columns, start)
        self.n_listed = total
        if self.checked:  # a rebuilt list is never checked against its positions
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
