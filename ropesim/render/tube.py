"""Sizes and meshes for drawing springs as tubes and particles as balls (no OpenGL).

A system without a surface (rope, ring, star, random network) is drawn as a lit
tube along its springs: an open cylinder of :data:`TUBE_SEGMENTS` sides per
spring (drawn by vertex id, :func:`spring_indices`), with sphere impostors of
the same radius closing the joints. Everything is sized from the
scene's *spacing*, the typical distance between neighbouring particles at rest
(:func:`scene_spacing`), so a 150-link chain and a 40-node random network both
look right:

* tube radius = :data:`TUBE_RADIUS_SHARE` x spacing (m);
* particle sprite radius = :data:`SPRITE_RADIUS_SHARE` (cloth) or
  :data:`SPRITE_RADIUS_SHARE_ROPE` (others) x spacing (m).

Springs that only stiffen a chain against bending (a spring a-b where a-c-b are
springs of together the same rest length, e.g. a rope's i..i+2 springs) are left
out of the tube: drawn as tubes they would cut the corners of a bent rope.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "bounds",
    "TUBE_RADIUS_SHARE",
    "SPRITE_RADIUS_SHARE",
    "SPRITE_RADIUS_SHARE_ROPE",
    "scene_spacing",
    "tube_springs",
    "TUBE_SEGMENTS",
    "spring_indices",
]

TUBE_RADIUS_SHARE = 0.2          # tube radius / spacing
SPRITE_RADIUS_SHARE = 0.2        # particle sprite radius / spacing, systems with a surface
SPRITE_RADIUS_SHARE_ROPE = 0.3   # particle sprite radius / spacing, the others
TUBE_SEGMENTS = 10               # sides of a tube's cylinders


@njit(cache=True, nogil=True)
def _bounds(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
    for k in range(3):
        lo[k] = np.inf
        hi[k] = -np.inf
    for i in range(points.shape[0]):
        for k in range(3):
            v = points[i, k]
            if v < lo[k]:
                lo[k] = v
            if v > hi[k]:
                hi[k] = v


def bounds(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-axis minimum and maximum, m, of (n, 3) points with n >= 1, as two float64
    (3,) arrays (one pass; numpy's axis-0 min/max of a narrow array is much slower)."""
    lo = np.empty(3)
    hi = np.empty(3)
    _bounds(points, lo, hi)
    return lo, hi


@njit(cache=True)
def _nearest_distances(points: np.ndarray, out: np.ndarray) -> None:
    """Distance (m) from each of the points (sorted by x) to its nearest other
    point at a non-zero distance (inf if none), by a sweep along x."""
    n = points.shape[0]
    for i in range(n):
        best = np.inf
        for step in (1, -1):
            j = i + step
            while 0 <= j < n:
                dx = points[j, 0] - points[i, 0]
                if dx * dx >= best:
                    break
                dy = points[j, 1] - points[i, 1]
                dz = points[j, 2] - points[i, 2]
                d = dx * dx + dy * dy + dz * dz
                if 0.0 < d < best:
                    best = d
                j += step
        out[i] = np.sqrt(best)


def scene_spacing(positions: np.ndarray, rest_lengths: np.ndarray) -> float:
    """Typical distance between neighbouring particles, m: the median over the
    particles of the distance to the nearest other one, but at most the median
    spring rest length. Equals the grid spacing of a rope or cloth; for a random
    network (long springs between close particles) it is the particles' spacing.
    Falls back to the median rest length, then 1 m."""
    pos = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    rest = np.asarray(rest_lengths, dtype=np.float64)
    rest = rest[rest > 0]
    median_rest = float(np.median(rest)) if rest.size else np.inf
    if pos.shape[0] >= 2:
        order = np.argsort(pos[:, 0], kind="stable")
        nearest = np.empty(pos.shape[0])
        _nearest_distances(np.ascontiguousarray(pos[order]), nearest)
        nearest = nearest[np.isfinite(nearest)]
        if nearest.size:
            return min(float(np.median(nearest)), median_rest)
    return median_rest if np.isfinite(median_rest) else 1.0


def tube_springs(springs: np.ndarray, rest_lengths: np.ndarray,
                 tolerance: float = 0.01) -> np.ndarray:
    """Indices of the springs to draw as tubes: all but bending springs a-b that
    span two springs a-c, c-b whose rest lengths add up to the a-b rest length
    within ``tolerance`` (relative)."""
    pairs = np.asarray(springs, dtype=np.int64).reshape(-1, 2)
    rest = np.asarray(rest_lengths, dtype=np.float64).reshape(-1)
    neighbours: dict[int, dict[int, float]] = {}
    for (a, b), length in zip(pairs.tolist(), rest.tolist()):
        neighbours.setdefault(a, {})[b] = length
        neighbours.setdefault(b, {})[a] = length
    keep = []
    for k, ((a, b), length) in enumerate(zip(pairs.tolist(), rest.tolist())):
        around_a, around_b = neighbours[a], neighbours[b]
        if len(around_b) < len(around_a):
            around_a, around_b = around_b, around_a
        spans = any(c in around_b and abs(around_a[c] + around_b[c] - length)
                    <= tolerance * length for c in around_a if c not in (a, b))
        if not spans:
            keep.append(k)
    return np.asarray(keep, dtype=np.uint32)


def spring_indices(count: int, corners: int, corner_triangles: np.ndarray) -> np.ndarray:
    """Index buffer for ``count`` springs drawn by vertex id: spring k's copy of
    ``corner_triangles`` ((t, 3) corner numbers below ``corners``) offset by
    k * corners, as (count * t * 3,) uint32."""
    tris = np.asarray(corner_triangles, dtype=np.uint64).reshape(-1)
    base = np.arange(count, dtype=np.uint64)[:, None] * np.uint64(corners)
    out = base + tris[None, :]
    if out.size and out.max() >= 2 ** 32:
        raise ValueError(f"count: {count} springs of {corners} corners overflow 32-bit indices")
    return out.astype(np.uint32).reshape(-1)
