"""Which Box, Capsule or Mesh collider a camera ray hits first (Ctrl+drag in the viewer).

The ray is taken into each collider's frame at its current pose; a box by the slab test,
a capsule by the closest approach of the ray to its axis, a mesh by the first crossing
in its BVH (Mesh.bvh: built once per geometry).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..engine.colliders import Box, Capsule, Mesh, posed_at
from ..engine.colliders.bvh import STACK_SIZE, first_crossing
from ..engine.contacts import collider_frame


def _ray_box(origin: np.ndarray, direction: np.ndarray, half: np.ndarray) -> float | None:
    """Ray parameter of the entry into a box of half extents ``half`` (its frame)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        s0 = (-half - origin) / direction
        s1 = (half - origin) / direction
    near = np.where(direction == 0.0, np.where(np.abs(origin) <= half, -np.inf, np.inf),
                    np.minimum(s0, s1))
    far = np.where(direction == 0.0, np.where(np.abs(origin) <= half, np.inf, -np.inf),
                   np.maximum(s0, s1))
    enter, leave = float(near.max()), float(far.min())
    if enter > leave or leave < 0.0:
        return None
    return max(enter, 0.0)


def _ray_capsule(origin: np.ndarray, direction: np.ndarray, half: float,
                 radius: float) -> float | None:
    """Ray parameter (m) of the ray's closest approach to a capsule's axis (x from -half
    to half, its frame) when that approach is within ``radius``; unit ``direction``."""
    b, along, e = float(direction[0]), float(direction @ origin), float(origin[0])
    t = (b * e - along) / (1.0 - b * b) if 1.0 - b * b > 1e-12 else 0.0
    s = min(max(e + max(t, 0.0) * b, -half), half)
    t = max(s * b - along, 0.0)
    gap = origin + t * direction - np.array([s, 0.0, 0.0])
    return t if float(np.linalg.norm(gap)) <= radius else None


class ColliderPicker:
    """Ray casts against a simulation's colliders; ``reach`` (m) is the ray length a
    mesh is tested to."""

    def __init__(self, reach: float = 1e4) -> None:
        self.reach = float(reach)
        self._stack = np.zeros(STACK_SIZE, np.int64)

    def _ray_mesh(self, origin: np.ndarray, direction: np.ndarray, mesh: Mesh) -> float | None:
        boxes, links, rows = mesh.bvh
        d = direction * self.reach
        s, tri = first_crossing(*origin, *d, boxes, links, rows, self._stack)
        return None if tri < 0 else s * self.reach

    def pick(self, origin: Sequence[float], direction: Sequence[float],
             contacts: Sequence[Any], time: float) -> tuple[int, np.ndarray] | None:
        """(index into ``contacts``, hit point m) of the nearest collider the ray from
        ``origin`` along unit ``direction`` hits at ``time`` (s), or None."""
        origin = np.asarray(origin, dtype=np.float64)
        direction = np.asarray(direction, dtype=np.float64)
        direction = direction / np.linalg.norm(direction)
        best: tuple[float, int] | None = None
        for index, contact in enumerate(contacts):
            if not isinstance(contact, (Box, Capsule, Mesh)):
                continue
            posed = posed_at(contact, time)
            centre, rotation, half = collider_frame(posed)
            o, d = (origin - centre) @ rotation, direction @ rotation
            if isinstance(posed, Box):
                t = _ray_box(o, d, 0.5 * np.asarray(posed.size))
            elif isinstance(posed, Capsule):
                t = _ray_capsule(o, d, half, posed.radius)
            else:
                t = self._ray_mesh(o, d, posed)
            if t is not None and (best is None or t < best[0]):
                best = (t, index)
        if best is None:
            return None
        return best[1], origin + best[0] * direction
