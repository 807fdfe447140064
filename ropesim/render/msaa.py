"""Multisampling for a software rasteriser: only the part of the view that needs it.

Mesa's llvmpipe pays for every sample: the clear, each fragment's depth test and
colour write and the resolve. Most of a ropesim frame is the floor (its grid lines
and shadows are antialiased in its own shader) and the background, which gain
nothing from samples. :class:`MultisampleLayer` is a multisampled colour texture and
depth buffer of the view's size that the renderer draws only the scene's objects
into (cloth, tubes, balls, colliders, springs, particles), cleared to transparent
and limited by a scissor to the objects' rectangle on screen
(:func:`screen_rect`); :meth:`MultisampleLayer.composite` then averages each
pixel's samples in a shader and blends the result, premultiplied by its coverage,
over the single-sampled floor already in the destination. Where everything lies on
the floor's side of the camera, that equals resolving one multisampled image of
floor and objects together (the floor is flat across a pixel's samples).
"""

from __future__ import annotations

import math
import moderngl
import numpy as np

__all__ = ["BLEND_OVER", "MultisampleLayer", "screen_rect"]

# Blending of translucent fragments ("over"): colour by source alpha, and the alpha
# channel as coverage (a + (1 - a) dst), so a layer cleared to transparent ends up
# premultiplied by what covers it.
BLEND_OVER = (moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA,
              moderngl.ONE, moderngl.ONE_MINUS_SRC_ALPHA)
_UNIT_LAYER = 7   # texture unit of the layer in the composite pass (unused by the renderer)

Rect = tuple[int, int, int, int]   # x, y (bottom-left origin), width, height, px

_VERTEX = """
#version 330 core
// One triangle over the whole view; the scissor keeps the objects' rectangle.
void main() {
    vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
"""

_FRAGMENT = """
#version 330 core
// The mean of a pixel's samples: colour premultiplied by the coverage, and the coverage.
uniform sampler2DMS u_layer;
out vec4 f_color;
void main() {
    ivec2 pixel = ivec2(gl_FragCoord.xy);
    vec4 sum = vec4(0.0);
    for (int i = 0; i < SAMPLES; i++) sum += texelFetch(u_layer, pixel, i);
    f_color = sum * (1.0 / float(SAMPLES));
}
"""


def screen_rect(view_proj: np.ndarray, lo: np.ndarray, hi: np.ndarray, width: int,
                height: int, margin_px: float) -> Rect | None:
    """The pixel rectangle (x, y from the bottom left, width, height) of the box
    lo..hi (m) seen through ``view_proj`` (pyrr row-vector layout), grown by
    ``margin_px`` and clipped to the width x height view; the whole view when a
    corner lies behind the camera, None when the box is off screen."""
    if margin_px < 0 or not math.isfinite(margin_px):
        raise ValueError(f"margin_px: must be a finite number >= 0, got {margin_px}")
    corners = np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                        for z in (lo[2], hi[2])], dtype=np.float64)
    clip = corners @ np.asarray(view_proj, dtype=np.float64)
    w = clip[:, 3]
    if not np.all(np.isfinite(clip)) or np.any(w <= 1e-9):
        return 0, 0, int(width), int(height)
    ndc = clip[:, :2] / w[:, None]
    x0 = math.floor((ndc[:, 0].min() * 0.5 + 0.5) * width - margin_px)
    x1 = math.ceil((ndc[:, 0].max() * 0.5 + 0.5) * width + margin_px)
    y0 = math.floor((ndc[:, 1].min() * 0.5 + 0.5) * height - margin_px)
    y1 = math.ceil((ndc[:, 1].max() * 0.5 + 0.5) * height + margin_px)
    x0, y0 = max(x0, 0), max(y0, 0)
    x1, y1 = min(x1, int(width)), min(y1, int(height))
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1 - x0, y1 - y0


class MultisampleLayer:
    """A ``samples``-times multisampled RGBA8 texture and depth buffer for the scene's
    objects, sized to the view on :meth:`begin` (re-created only when the size changes)."""

    def __init__(self, ctx: moderngl.Context, samples: int) -> None:
        if int(samples) < 2:
            raise ValueError(f"samples: a multisampled layer needs 2..{ctx.max_samples}, "
                             f"got {samples}")
        self.ctx = ctx
        self.samples = min(int(samples), int(ctx.max_samples))
        self.program = ctx.program(
            vertex_shader=_VERTEX,
            fragment_shader=_FRAGMENT.replace("#version 330 core",
                                              f"#version 330 core\n#define SAMPLES {self.samples}"))
        self.program["u_layer"].value = _UNIT_LAYER
        self._vao = ctx.vertex_array(self.program, [])
        self.size: tuple[int, int] | None = None
        self._gl: list = []
        self.fbo: moderngl.Framebuffer | None = None

    def _resize(self, width: int, height: int) -> None:
        for obj in self._gl:
            obj.release()
        self.color = self.ctx.texture((width, height), 4, samples=self.samples)
        depth = self.ctx.depth_renderbuffer((width, height), samples=self.samples)
        self.fbo = self.ctx.framebuffer([self.color], depth)
        self._gl = [self.fbo, self.color, depth]
        self.size = (width, height)

    def begin(self, width: int, height: int, rect: Rect) -> None:
        """Bind the layer for drawing (viewport: the whole view) and clear ``rect`` to
        transparent and the far plane; later draws are scissored to ``rect``."""
        if self.size != (int(width), int(height)):
            self._resize(int(width), int(height))
        self.fbo.scissor = tuple(int(v) for v in rect)
        self.fbo.use()
        self.ctx.viewport = (0, 0, int(width), int(height))
        self.fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0, viewport=tuple(int(v) for v in rect))

    def composite(self, destination: moderngl.Framebuffer, rect: Rect) -> None:
        """Blend the layer's ``rect`` over ``destination`` (same size), premultiplied;
        leaves ``destination`` bound, blending off and its scissor as it was."""
        ctx = self.ctx
        self.fbo.scissor = None
        previous = destination.scissor
        destination.scissor = tuple(int(v) for v in rect)
        destination.use()
        ctx.viewport = (0, 0, *self.size)
        depth_test = ctx.DEPTH_TEST
        ctx.disable(depth_test)
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = moderngl.ONE, moderngl.ONE_MINUS_SRC_ALPHA
        self.color.use(_UNIT_LAYER)
        self._vao.render(moderngl.TRIANGLES, vertices=3)
        ctx.disable(moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        ctx.enable(depth_test)
        destination.scissor = previous
        destination.use()

    def release(self) -> None:
        for obj in (*self._gl, self._vao, self.program):
            obj.release()
        self._gl = []
        self.size = None
