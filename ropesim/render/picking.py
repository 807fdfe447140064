"""Ray -> particle picking, drag planes and fling velocity (pure math, no GL).

Rays come from :meth:`ropesim.render.camera.OrbitCamera.world_ray`; all lengths are m,
times s, pixels are framebuffer pixels with a top-left origin (y down).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ropesim.render.camera import OrbitCamera

_PARALLEL_EPS = 1e-12


def _ray_sphere_entry(
    origin: np.ndarray, direction: np.ndarray, positions: np.ndarray, radius: float | np.ndarray
) -> np.ndarray:
    """Distance (m) along the unit ray to where it enters each sphere; 0 when the
    origin is inside, +inf when the ray misses or the sphere is behind it. (n,)."""
    rel = np.asarray(positions, dtype=np.float64) - origin
    t_closest = rel @ direction
    miss_sq = np.einsum("ij,ij->i", rel, rel) - t_closest * t_closest
    r_sq = np.broadcast_to(np.asarray(radius, dtype=np.float64) ** 2, t_closest.shape)
    inside = miss_sq <= r_sq
    half_chord = np.sqrt(np.where(inside, r_sq - miss_sq, 0.0))
    entry = np.maximum(t_closest - half_chord, 0.0)
    hit = inside & (t_closest + half_chord >= 0.0)
    return np.where(hit, entry, np.inf)


def _nearest(score: np.ndarray, mask: np.ndarray | None) -> int | None:
    """Index of the smallest finite score among mask-allowed entries, else None."""
    if mask is not None:
        score = np.where(np.asarray(mask, dtype=bool), score, np.inf)
    if score.size == 0:
        return None
    best = int(np.argmin(score))
    return best if np.isfinite(score[best]) else None


def pick_particle(
    origin: np.ndarray,
    direction: np.ndarray,
    positions: np.ndarray,
    radius: float | np.ndarray,
    mask: np.ndarray | None = None,
) -> int | None:
    """Nearest particle whose sphere (radius m, scalar or (n,)) the ray hits, by
    distance along the ray; None if none. ``mask`` (n,) bool marks pickable ones."""
    origin = np.asarray(origin, dtype=np.float64).reshape(3)
    direction = np.asarray(direction, dtype=np.float64).reshape(3)
    direction = direction / np.linalg.norm(direction)
    return _nearest(_ray_sphere_entry(origin, direction, positions, radius), mask)


def pick_particle_screen(
    camera: OrbitCamera,
    x_px: float,
    y_px: float,
    width: float,
    height: float,
    positions: np.ndarray,
    radius_px: float = 8.0,
    radius_world: float | np.ndarray | None = None,
    mask: np.ndarray | None = None,
) -> int | None:
    """Particle under the cursor (x, y) px: hit by the cursor ray within
    ``radius_world`` m, or projected within ``radius_px`` pixels of the cursor.
    Among the candidates, returns the one nearest to the camera (view depth)."""
    pos = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    pixels, depth = camera.project(pos, width, height)
    in_view = np.isfinite(depth) & (depth >= -1.0) & (depth <= 1.0)
    with np.errstate(invalid="ignore"):
        d_px_sq = ((pixels - np.array([x_px, y_px])) ** 2).sum(axis=1)
        candidate = in_view & (d_px_sq <= radius_px * radius_px)
    if radius_world is not None:
        origin, direction = camera.world_ray(x_px, y_px, width, height)
        candidate |= np.isfinite(_ray_sphere_entry(origin, direction, pos, radius_world))
    view_depth = (pos - camera.eye) @ camera.forward
    return _nearest(np.where(candidate, view_depth, np.inf), mask)


def drag_plane(
    camera: OrbitCamera, point: np.ndarray, planar: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(plane point, unit normal) for dragging ``point``: the plane through it facing
    the camera (normal = view direction); for planar systems the z = 0 plane."""
    point = np.asarray(point, dtype=np.float64).reshape(3)
    if planar:
        return np.array([point[0], point[1], 0.0]), np.array([0.0, 0.0, 1.0])
    return point.copy(), camera.forward


def intersect_plane(
    origin: np.ndarray,
    direction: np.ndarray,
    plane_point: np.ndarray,
    plane_normal: np.ndarray,
) -> np.ndarray | None:
    """Point (3,) m where the ray meets the plane; None if parallel or behind."""
    origin = np.asarray(origin, dtype=np.float64).reshape(3)
    direction = np.asarray(direction, dtype=np.float64).reshape(3)
    normal = np.asarray(plane_normal, dtype=np.float64).reshape(3)
    denom = float(direction @ normal)
    if abs(denom) < _PARALLEL_EPS * np.linalg.norm(direction) * np.linalg.norm(normal):
        return None
    t = float((np.asarray(plane_point, dtype=np.float64) - origin) @ normal) / denom
    if t < 0.0:
        return None
    return origin + t * direction


class FlingTracker:
    """Keeps the last few (time s, position m) drag samples; :meth:`velocity` is the
    least-squares slope (m/s) over samples within ``window`` s of the newest one."""

    def __init__(self, window: float = 0.08, max_samples: int = 8) -> None:
        self.window = float(window)
        self._samples: deque[tuple[float, np.ndarray]] = deque(maxlen=max_samples)

    def reset(self) -> None:
        """Forget all samples (call when a drag starts)."""
        self._samples.clear()

    def add(self, t: float, position: np.ndarray) -> None:
        """Record the dragged position (3,) m at time t s."""
        self._samples.append((float(t), np.array(position, dtype=np.float64).reshape(3)))

    def velocity(self) -> np.ndarray:
        """Least-squares velocity (3,) m/s; zero with fewer than 2 recent samples."""
        if not self._samples:
            return np.zeros(3)
        latest = self._samples[-1][0]
        recent = [(t, p) for t, p in self._samples if t >= latest - self.window]
        if len(recent) < 2:
            return np.zeros(3)
        times = np.array([t for t, _ in recent])
        points = np.array([p for _, p in recent])
        dt = times - times.mean()
        denom = float(dt @ dt)
        if denom <= 0.0:
            return np.zeros(3)
        return dt @ (points - points.mean(axis=0)) / denom
