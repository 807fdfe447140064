"""Orbit camera on pyrr matrices: view/projection, world rays, projection to pixels.

Conventions (relied on by the renderer, the viewer and picking):

* World y is up. At azimuth 0, elevation 0 the camera sits on the +z side of the
  target and looks down -z (face-on at the xy plane). Positive azimuth rotates the
  eye towards +x; positive elevation raises it towards +y.
* Matrices use pyrr's row-vector convention, ``clip = [x, y, z, 1] @ view @ proj``,
  float32; upload them with ``.tobytes()`` and write ``proj * view * vec4(p, 1)``
  in GLSL.
* Pixel coordinates are continuous framebuffer pixels, origin at the top-left
  corner of the top-left pixel, y down: ``ndc_x = 2u/width - 1``,
  ``ndc_y = 1 - 2v/height``. Pixel centres are at half-integers.
* :meth:`OrbitCamera.project` and :meth:`OrbitCamera.world_ray` are exact inverses
  of each other (both use the same float64 matrices the float32 ones are cast from).
* ``view_offset`` shifts the projection centre (a lens shift, in NDC), so the target
  can sit in the middle of the part of the view the viewer's panels leave free while
  orbiting still turns about it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pyrr import matrix44

WORLD_UP = np.array([0.0, 1.0, 0.0])
ELEVATION_LIMIT = 89.0  # deg; |elevation| < 90 keeps the look-at basis well defined
MIN_DISTANCE = 1e-6  # m
FRAME_MARGIN = 1.15  # bounding sphere radius is scaled by this when framing
DEFAULT_VIEW = (30.0, 20.0)  # deg, azimuth and elevation of frame() for 3-D scenes
FULL_VIEWPORT = (0.0, 0.0, 1.0, 1.0)


def parse_camera_arg(text: str) -> dict[str, Any]:
    """Parse a CLI ``--camera`` value ``"azimuth,elevation,distance[,tx,ty,tz]"``.

    Angles in degrees, lengths in m. Returns a dict for :meth:`OrbitCamera.update`.
    """
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError as exc:
        raise ValueError(f"--camera expects numbers, got {text!r}") from exc
    if len(values) not in (3, 6):
        raise ValueError(
            f"--camera expects azimuth,elevation,distance[,tx,ty,tz], got {text!r}"
        )
    out: dict[str, Any] = dict(zip(("azimuth", "elevation", "distance"), values[:3]))
    if len(values) == 6:
        out["target"] = values[3:]
    return out


class OrbitCamera:
    """Orbits a target point; azimuth/elevation in degrees, distance in m.

    ``near``/``far`` (m) are derived from the distance and the framed scene size
    unless set explicitly; assign ``None`` to go back to the derived values.
    """

    def __init__(
        self,
        target: Sequence[float] | np.ndarray = (0.0, 0.0, 0.0),
        azimuth: float = 0.0,
        elevation: float = 15.0,
        distance: float = 3.0,
        fov_y: float = 45.0,
    ) -> None:
        self.target = np.array(target, dtype=np.float64).reshape(3)
        self.azimuth = float(azimuth)
        self.elevation = float(np.clip(elevation, -ELEVATION_LIMIT, ELEVATION_LIMIT))
        self.distance = max(float(distance), MIN_DISTANCE)
        self.fov_y = float(fov_y)
        self.scene_radius = 1.0  # m, set by frame(); keeps the far plane behind the scene
        self.view_offset = (0.0, 0.0)  # NDC shift of the projection centre (x right, y up)
        self._near: float | None = None
        self._far: float | None = None

    # ------------------------------------------------------------------ clip planes
    @property
    def near(self) -> float:
        """Near clip distance, m (default distance / 100)."""
        return self._near if self._near is not None else 0.01 * self.distance

    @near.setter
    def near(self, value: float | None) -> None:
        self._near = None if value is None else float(value)

    @property
    def far(self) -> float:
        """Far clip distance, m (default 100 * distance + 4 * scene_radius)."""
        if self._far is not None:
            return self._far
        return 100.0 * self.distance + 4.0 * self.scene_radius

    @far.setter
    def far(self, value: float | None) -> None:
        self._far = None if value is None else float(value)

    # ------------------------------------------------------------------ geometry
    @property
    def offset_direction(self) -> np.ndarray:
        """Unit vector from the target to the eye, (3,)."""
        az, el = np.radians(self.azimuth), np.radians(self.elevation)
        return np.array([np.cos(el) * np.sin(az), np.sin(el), np.cos(el) * np.cos(az)])

    @property
    def eye(self) -> np.ndarray:
        """World position of the camera, m, (3,)."""
        return self.target + self.distance * self.offset_direction

    @property
    def forward(self) -> np.ndarray:
        """Unit view direction (eye -> target), (3,)."""
        return -self.offset_direction

    def basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unit (right, up, forward) world vectors of the camera frame."""
        forward = self.forward
        right = np.cross(forward, WORLD_UP)
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        return right, up, forward

    def _view64(self) -> np.ndarray:
        return matrix44.create_look_at(self.eye, self.target, WORLD_UP, dtype=np.float64)

    def _proj64(self, aspect: float) -> np.ndarray:
        proj = matrix44.create_perspective_projection(
            self.fov_y, float(aspect), self.near, self.far, dtype=np.float64
        )
        # lens shift: ndc += offset, i.e. clip.xy += offset * clip.w
        proj[:, 0] += self.view_offset[0] * proj[:, 3]
        proj[:, 1] += self.view_offset[1] * proj[:, 3]
        return proj

    def _view_projection64(self, aspect: float) -> np.ndarray:
        return self._view64() @ self._proj64(aspect)

    def view_matrix(self) -> np.ndarray:
        """World -> view (4, 4) float32, row-vector convention."""
        return self._view64().astype(np.float32)

    def projection_matrix(self, aspect: float) -> np.ndarray:
        """View -> clip (4, 4) float32 perspective; aspect = width / height."""
        return self._proj64(aspect).astype(np.float32)

    def view_projection(self, aspect: float) -> np.ndarray:
        """``view @ proj`` (4, 4) float32: ``clip = [x, y, z, 1] @ view_projection``."""
        return self._view_projection64(aspect).astype(np.float32)

    def pixels_per_metre(self, viewport_height_px: float, depth: float | None = None) -> float:
        """Screen scale, px/m, of lengths perpendicular to the view at ``depth`` m
        in front of the eye (default: the target's depth)."""
        depth = self.distance if depth is None else depth
        return viewport_height_px / (2.0 * depth * np.tan(np.radians(self.fov_y) / 2.0))

    # ------------------------------------------------------------------ interaction
    def orbit(self, d_azimuth_deg: float, d_elevation_deg: float) -> None:
        """Rotate the eye about the target, degrees; elevation stays within +-89."""
        self.azimuth = self.azimuth + float(d_azimuth_deg)
        self.elevation = float(
            np.clip(self.elevation + d_elevation_deg, -ELEVATION_LIMIT, ELEVATION_LIMIT)
        )

    def pan(self, dx_px: float, dy_px: float, viewport_height_px: float) -> None:
        """Move target and eye in the view plane by a mouse drag of (dx, dy) pixels
        (y down) so that points at the target's depth follow the cursor exactly."""
        right, up, _ = self.basis()
        scale = 1.0 / self.pixels_per_metre(viewport_height_px)
        self.target = self.target + scale * (-dx_px * right + dy_px * up)

    def zoom(self, factor: float, toward: np.ndarray | None = None) -> None:
        """Scale the eye-target distance by ``factor``; with ``toward`` (a world point,
        m) also scale the target about it so that point keeps its screen position."""
        new_distance = max(self.distance * float(factor), MIN_DISTANCE)
        effective = new_distance / self.distance
        if toward is not None:
            toward = np.asarray(toward, dtype=np.float64).reshape(3)
            self.target = toward + (self.target - toward) * effective
        self.distance = new_distance

    def center_in(self, viewport: Sequence[float] = FULL_VIEWPORT) -> None:
        """Put the projection centre (where the target is drawn) in the middle of
        ``viewport``: (left, top, right, bottom) as fractions of the view, y down."""
        left, top, right, bottom = (float(v) for v in viewport)
        self.view_offset = (left + right - 1.0, 1.0 - top - bottom)

    def frame(self, points: np.ndarray, planar: bool = False, aspect: float = 1.0,
              viewport: Sequence[float] = FULL_VIEWPORT, azimuth: float | None = None,
              elevation: float | None = None) -> None:
        """Reset the view onto ``points`` (k, 3) m, seen from ``azimuth`` / ``elevation``
        (deg; default face-on for ``planar`` systems, looking down -z, else DEFAULT_VIEW):
        target = bounding-box centre, drawn in the middle of ``viewport`` (fractions of
        the view, see :meth:`center_in`), and the distance at which the bounding sphere
        (times FRAME_MARGIN) fits the viewport's field of view (``aspect`` = view
        width / height), whatever the direction.
        """
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        pts = pts[np.all(np.isfinite(pts), axis=1)]
        if len(pts) == 0:
            centre, radius = np.zeros(3), 1.0
        else:
            centre = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
            radius = float(np.sqrt(((pts - centre) ** 2).sum(axis=1).max()))
        radius = max(radius, 0.05)
        default = (0.0, 0.0) if planar else DEFAULT_VIEW
        self.azimuth = float(default[0] if azimuth is None else azimuth)
        self.elevation = float(np.clip(default[1] if elevation is None else elevation,
                                       -ELEVATION_LIMIT, ELEVATION_LIMIT))
        self.target = centre
        self.scene_radius = radius
        self.center_in(viewport)
        left, top, right, bottom = (float(v) for v in viewport)
        # the viewport's half-angles about the (shifted) projection centre
        tan_y = np.tan(np.radians(self.fov_y) / 2.0)
        half_x = np.arctan(max(right - left, 1e-3) * tan_y * aspect)
        half_y = np.arctan(max(bottom - top, 1e-3) * tan_y)
        self.distance = FRAME_MARGIN * radius / np.sin(min(half_x, half_y))

    # ------------------------------------------------------------------ pixels <-> rays
    def world_ray(
        self, x_px: float, y_px: float, width: float, height: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ray through pixel (x, y) (top-left origin, y down): origin on the near
        plane, m, and unit direction; both (3,) float64."""
        inv = np.linalg.inv(self._view_projection64(width / height))
        ndc_x = 2.0 * x_px / width - 1.0
        ndc_y = 1.0 - 2.0 * y_px / height
        clip = np.array([[ndc_x, ndc_y, -1.0, 1.0], [ndc_x, ndc_y, 1.0, 1.0]])
        world = clip @ inv
        world = world[:, :3] / world[:, 3:]
        direction = world[1] - world[0]
        return world[0], direction / np.linalg.norm(direction)

    def project(
        self, points: np.ndarray, width: float, height: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates (k, 2) (top-left origin, y down) and NDC depth (k,) of
        world points (k, 3) m. Points at or behind the eye plane get NaN for both."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        vp = self._view_projection64(width / height)
        clip = pts @ vp[:3] + vp[3]
        w = clip[:, 3]
        behind = w <= 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            ndc = clip[:, :3] / w[:, None]
        pixels = np.empty((len(pts), 2))
        pixels[:, 0] = (ndc[:, 0] + 1.0) * 0.5 * width
        pixels[:, 1] = (1.0 - ndc[:, 1]) * 0.5 * height
        depth = ndc[:, 2].copy()
        pixels[behind] = np.nan
        depth[behind] = np.nan
        return pixels, depth

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """Plain-data state (degrees, m) for scene files."""
        return {
            "azimuth": self.azimuth,
            "elevation": self.elevation,
            "distance": self.distance,
            "target": [float(v) for v in self.target],
            "fov_y": self.fov_y,
        }

    def update(self, data: Mapping[str, Any]) -> None:
        """Apply the keys present in ``data`` (as written by :meth:`to_dict` or
        :func:`parse_camera_arg`); absent keys keep their current values."""
        if "target" in data:
            self.target = np.array(data["target"], dtype=np.float64).reshape(3)
        if "azimuth" in data:
            self.azimuth = float(data["azimuth"])
        if "elevation" in data:
            self.elevation = float(
                np.clip(data["elevation"], -ELEVATION_LIMIT, ELEVATION_LIMIT)
            )
        if "distance" in data:
            self.distance = max(float(data["distance"]), MIN_DISTANCE)
        if "fov_y" in data:
            self.fov_y = float(data["fov_y"])

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OrbitCamera:
        """New camera from :meth:`to_dict` output; missing keys take the defaults."""
        camera = cls()
        camera.update(data)
        return camera

    def __repr__(self) -> str:
        t = ", ".join(f"{v:.3g}" for v in self.target)
        return (
            f"OrbitCamera(target=({t}), azimuth={self.azimuth:.1f}, "
            f"elevation={self.elevation:.1f}, distance={self.distance:.3g})"
        )
