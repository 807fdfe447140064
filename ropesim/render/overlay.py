"""2-D lines over the drawn scene: the cut stroke under the cursor and the wind arrow.

A line is (points (k, 2) in framebuffer pixels, top-left origin, y down; an RGBA colour
in 0..1; a width in px). :func:`polyline_triangles` turns lines into screen-space quads
(numpy, vectorised over the segments); :class:`Overlay` draws them alpha-blended and
without depth test over whatever the bound framebuffer holds. :func:`arrow_lines` makes
the lines of an arrow between two world points seen through a camera (the shaft and a
head of fixed size on screen).
"""

from __future__ import annotations

from typing import Any, Sequence

import moderngl
import numpy as np

from .renderer import load_shader_source

Line = tuple[np.ndarray, Sequence[float], float]
#: the arrow head's barbs, px, and their angle to the shaft, degrees
ARROW_HEAD_PX = 16.0
ARROW_HEAD_DEG = 25.0
VERTEX_FLOATS = 6            # x, y (px) and r, g, b, a


def polyline_triangles(points: np.ndarray, width_px: float) -> np.ndarray:
    """(6 (k - 1), 2) float32: two triangles per segment of the (k, 2) polyline, a quad
    ``width_px`` wide around it. Zero-length segments give empty quads."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if len(pts) < 2:
        return np.zeros((0, 2), np.float32)
    p, q = pts[:-1], pts[1:]
    along = q - p
    length = np.linalg.norm(along, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(length > 0, along / length, 0.0)
    side = 0.5 * float(width_px) * np.column_stack([-unit[:, 1], unit[:, 0]])
    p_out, p_in, q_out, q_in = p + side, p - side, q + side, q - side
    quads = np.stack([p_out, p_in, q_out, q_out, p_in, q_in], axis=1)
    return quads.reshape(-1, 2).astype(np.float32)


def arrow_lines(camera: Any, tail: np.ndarray, head: np.ndarray, view_size: tuple[int, int],
                head_px: float = ARROW_HEAD_PX) -> list[np.ndarray]:
    """The arrow from world point ``tail`` to ``head`` (m) on screen: the shaft and the
    head's two barbs, each a (2 or 3, 2) polyline in px. Empty when an end is behind the
    eye or the arrow points straight at the camera (no length on screen)."""
    pixels, _ = camera.project(np.array([tail, head], dtype=np.float64), *view_size)
    if not np.all(np.isfinite(pixels)):
        return []
    start, end = pixels
    along = end - start
    length = float(np.linalg.norm(along))
    if length < 1e-6:
        return []
    back = -along / length
    barbs = []
    for sign in (1.0, -1.0):
        angle = np.radians(sign * ARROW_HEAD_DEG)
        rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        barbs.append(end + min(head_px, 0.5 * length) * rotation @ back)
    return [np.array([start, end]), np.array([barbs[0], end, barbs[1]])]


class Overlay:
    """Draws :data:`Line` s over the scene (see the module docstring)."""

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        try:
            self.program = ctx.program(vertex_shader=load_shader_source("overlay.vert"),
                                       fragment_shader=load_shader_source("overlay.frag"))
        except moderngl.Error as exc:
            raise RuntimeError(f"building the overlay shader program failed: {exc}") from exc
        self._capacity = 0
        self._buffer: moderngl.Buffer | None = None
        self._vao: moderngl.VertexArray | None = None
        self.vertices_drawn = 0

    def _reserve(self, vertices: int) -> None:
        """A vertex buffer for at least ``vertices`` vertices (grown by doubling)."""
        if vertices <= self._capacity:
            return
        self._release_buffer()
        self._capacity = max(256, 2 * vertices)
        self._buffer = self.ctx.buffer(reserve=self._capacity * VERTEX_FLOATS * 4, dynamic=True)
        self._vao = self.ctx.vertex_array(self.program,
                                          [(self._buffer, "2f 4f", "in_pixel", "in_color")])

    def draw(self, lines: Sequence[Line], width: int, height: int) -> None:
        """Draw ``lines`` into the bound framebuffer of ``width`` x ``height`` px."""
        parts = []
        for points, colour, width_px in lines:
            corners = polyline_triangles(points, width_px)
            if len(corners):
                rgba = np.broadcast_to(np.asarray(colour, np.float32), (len(corners), 4))
                parts.append(np.hstack([corners, rgba]))
        self.vertices_drawn = sum(len(part) for part in parts)
        if not self.vertices_drawn:
            return
        data = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
        self._reserve(len(data))
        self._buffer.write(data)
        ctx = self.ctx
        ctx.viewport = (0, 0, int(width), int(height))
        ctx.disable(moderngl.DEPTH_TEST | moderngl.CULL_FACE)
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        self.program["u_viewport"].value = (float(width), float(height))
        self._vao.render(moderngl.TRIANGLES, vertices=len(data))
        ctx.disable(moderngl.BLEND)

    def _release_buffer(self) -> None:
        for obj in (self._vao, self._buffer):
            if obj is not None:
                obj.release()
        self._vao = self._buffer = None
        self._capacity = 0

    def release(self) -> None:
        """Free the overlay's GL objects."""
        self._release_buffer()
        self.program.release()


__all__ = ["ARROW_HEAD_PX", "Line", "Overlay", "arrow_lines", "polyline_triangles"]
