"""The shapes self-collision works on, derived once from a SpringSystem.

Every collision primitive is a row (a, b, c) of particle indices: a particle that is
not the end of any capsule is a sphere (a, a, a); a rope's spring is a capsule
(a, b, b), thickness wide; a cloth triangle (a, b, c), when the cloth is sparse for the
thickness (see SelfCollision), is a sheet that spheres cannot pass. One segment routine
serves sphere-sphere, sphere-capsule and capsule-capsule pairs; spheres against
triangles use the closest point of the triangle (geometry.pair_weights).

Which springs are capsules: the springs of the triangle-free parts of a system (ropes,
rings, stars, networks), except a spring spanned by two shorter springs through a
common particle (a rope's bend spring (i, i+2), a triangle's longest side), which would
only double a capsule already there. Particles in a triangle (cloth) are spheres.

Also here: the spring adjacency (CSR) the exclusion test scans, each particle's
largest squared rest distance to a particle it is joined to (two spheres farther apart
in the rest shape are not joined: no scan), and connected component labels (particles
of different components never count as close in the rest shape, so two cloths joined
with concatenate always collide).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..model import SpringSystem


@dataclass
class Primitives:
    """Primitives (P, 3) int32 (spheres, capsules, then triangles), the spring adjacency
    as CSR (adj_start (n+1,), adj_list), component labels (n,), the rest shape (n, 3) m
    and joined_sq (n,) m^2: per particle, the largest squared rest distance to a
    particle joined to it by a spring (-1 if none; joined_reach)."""

    prims: np.ndarray
    adj_start: np.ndarray
    adj_list: np.ndarray
    component: np.ndarray
    rest_x: np.ndarray
    joined_sq: np.ndarray

    @property
    def search_arrays(self) -> tuple:
        """The arrays the candidate searches read (tiles.py, columns.py): (prims,
        adj_start, adj_list, component, rest_x, joined_sq)."""
        return (self.prims, self.adj_start, self.adj_list, self.component, self.rest_x,
                self.joined_sq)

    @property
    def n_spheres(self) -> int:
        return int(np.count_nonzero(self.prims[:, 0] == self.prims[:, 1]))

    @property
    def n_capsules(self) -> int:
        p = self.prims
        return int(np.count_nonzero((p[:, 0] != p[:, 1]) & (p[:, 1] == p[:, 2])))

    @property
    def n_triangles(self) -> int:
        return int(np.count_nonzero(self.prims[:, 1] != self.prims[:, 2]))


@njit(cache=True)
def _components(n, spring_a, spring_b, out):
    """Connected component label (the smallest particle index in it) per particle."""
    for i in range(n):
        out[i] = i
    for k in range(spring_a.shape[0]):
        a = spring_a[k]
        while out[a] != a:
            a = out[a]
        b = spring_b[k]
        while out[b] != b:
            b = out[b]
        if a < b:
            out[b] = a
        elif b < a:
            out[a] = b
    for i in range(n):
        root = i
        while out[root] != root:
            root = out[root]
        out[i] = root


@njit(cache=True)
def joined_reach(rest_x, adj_start, adj_list, out):
    """out[i] = the largest squared rest distance (m^2) from particle i to a particle
    joined to it by a spring, -1 if none, in the float64 arithmetic of the exclusion
    test (tiles.excluded), so that a joined pair's squared distance never exceeds it."""
    for i in range(rest_x.shape[0]):
        largest = -1.0
        for u in range(adj_start[i], adj_start[i + 1]):
            j = adj_list[u]
            gx = rest_x[i, 0] - rest_x[j, 0]
            gy = rest_x[i, 1] - rest_x[j, 1]
            gz = rest_x[i, 2] - rest_x[j, 2]
            largest = max(largest, gx * gx + gy * gy + gz * gz)
        out[i] = largest


@njit(cache=True)
def _spanned(spring_a, spring_b, rest, adj_start, adj_list, adj_spring, out):
    """out[k] = 1 when spring k's ends are also joined through a common particle by two
    springs, both shorter than spring k."""
    for k in range(spring_a.shape[0]):
        a = spring_a[k]
        b = spring_b[k]
        length = rest[k]
        for u in range(adj_start[a], adj_start[a + 1]):
            c = adj_list[u]
            if c == b or not rest[adj_spring[u]] < length:
                continue
            for w in range(adj_start[c], adj_start[c + 1]):
                if adj_list[w] == b and rest[adj_spring[w]] < length:
                    out[k] = 1
                    break
            if out[k]:
                break


def adjacency(n: int, spring_a: np.ndarray, spring_b: np.ndarray):
    """CSR of the springs in both directions: (start (n+1,), neighbour, spring index)."""
    ends = np.concatenate([spring_a, spring_b]).astype(np.int64)
    others = np.concatenate([spring_b, spring_a]).astype(np.int32)
    springs = np.concatenate([np.arange(spring_a.size)] * 2).astype(np.int64)
    order = np.argsort(ends, kind="stable")
    start = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(ends, minlength=n), out=start[1:])
    return start, np.ascontiguousarray(others[order]), np.ascontiguousarray(springs[order])


def build_primitives(system: SpringSystem, triangles: bool = False) -> Primitives:
    """The spheres and capsules of ``system`` (see the module docstring), and its
    triangles if ``triangles``."""
    n = system.n_particles
    spring_a = np.ascontiguousarray(system.springs[:, 0], dtype=np.int32)
    spring_b = np.ascontiguousarray(system.springs[:, 1], dtype=np.int32)
    rest = np.asarray(system.rest_lengths, dtype=np.float64)
    start, neighbour, spring_of = adjacency(n, spring_a, spring_b)
    in_triangle = np.zeros(n, bool)
    if system.triangles is not None and len(system.triangles):
        in_triangle[np.asarray(system.triangles).ravel()] = True
    spanned = np.zeros(spring_a.size, np.uint8)
    _spanned(spring_a, spring_b, rest, start, neighbour, spring_of, spanned)
    capsule = (~in_triangle[spring_a] & ~in_triangle[spring_b] & (spanned == 0)
               & (spring_a != spring_b))
    on_capsule = np.zeros(n, bool)
    on_capsule[spring_a[capsule]] = True
    on_capsule[spring_b[capsule]] = True
    spheres = np.flatnonzero(~on_capsule).astype(np.int32)
    component = np.empty(n, np.int64)
    _components(n, spring_a, spring_b, component)
    rows = [np.repeat(spheres[:, None], 3, axis=1),
            np.column_stack([spring_a[capsule], spring_b[capsule], spring_b[capsule]])]
    if triangles and system.triangles is not None:
        rows.append(np.asarray(system.triangles, dtype=np.int32).reshape(-1, 3))
    rest_x = np.ascontiguousarray(system.positions3(), dtype=np.float64)
    joined_sq = np.empty(n, np.float64)
    joined_reach(rest_x, start, neighbour, joined_sq)
    return Primitives(
        prims=np.ascontiguousarray(np.concatenate(rows).astype(np.int32)),
        adj_start=start, adj_list=neighbour, component=component, rest_x=rest_x,
        joined_sq=joined_sq,
    )
