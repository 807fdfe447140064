"""Sizes and meshes for drawing springs as tubes and particles as balls (no OpenGL).

A system without a surface (rope, ring, star, random network) is drawn as a lit
tube along its springs: one instanced open cylinder per spring, with sphere
impostors of the same radius closing the joints. Everything is sized from the
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
    "TUBE_RADIUS_SHARE",
    "SPRITE_RADIUS_SHARE",
    "SPRITE_RADIUS_SHARE_ROPE",
    "scene_spacing",
    "tube_springs",
    "cylinder_mesh",
]

TUBE_RADIUS_SHARE = 0.16         # tube radius / spacing
SPRITE_RADIUS_SHARE = 0.2        # particle sprite radius / spacing, systems with a surface
SPRITE_RADIUS_SHARE_ROPE = 0.3   # particle sprite radius / spacing, the others


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


def cylinder_mesh(segments: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """An open unit cylinder: (2 * (segments + 1), 3) float32 vertices
    (cos a, sin a, t) with t 0 at one end and 1 at the other, and
    (2 * segments, 3) uint32 triangles, counter-clockwise seen from outside."""
    if segments < 3:
        raise ValueError(f"segments: must be >= 3, got {segments}")
    angle = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    ring = np.stack([np.cos(angle), np.sin(angle)], axis=-1)
    verts = np.concatenate([np.column_stack([ring, np.zeros(segments + 1)]),
                            np.column_stack([ring, np.ones(segments + 1)])])
    i = np.arange(segments)
    j = segments + 1 + i          # the same angle at t = 1
    tris = np.concatenate([np.stack([i, i + 1, j + 1], -1), np.stack([i, j + 1, j], -1)])
    return verts.astype(np.float32), tris.astype(np.uint32)
