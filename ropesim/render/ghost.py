"""The ghost of a what-if branch: a second run's positions drawn translucent.

:class:`GhostLayer` draws another set of positions of the same system (the original
run kept by "branch here", see :mod:`ropesim.app.timeline`) over the scene: its
surface (cloths) as a faintly shaded translucent sheet, or (systems without one) its
springs as translucent lines, depth-tested against the scene but not writing depth, so the live run stays
visible through it. The :class:`~ropesim.render.renderer.Renderer` draws it after
the opaque passes when ``RenderOptions.ghost`` holds positions.
"""

from __future__ import annotations

from typing import Any

import moderngl
import numpy as np

from ..io.paths import shader_dir
from .msaa import BLEND_OVER

GHOST_COLOR = (0.55, 0.85, 1.0)   # sRGB, a light blue the cloth and rope colours lack
SURFACE_ALPHA = 0.4
LINE_ALPHA = 0.6
LINE_WIDTH_PX = 3.0               # where the driver draws wide lines (Mesa does); else 1 px
LIGHT = (0.3, 0.8, 0.5)           # towards the light, for the sheet's facet shading


def _source(name: str) -> str:
    return (shader_dir() / name).read_text(encoding="utf-8")


class GhostLayer:
    """GL buffers to draw ``system``'s springs (and triangles, if any) at other positions.

    ctx : the moderngl context of the renderer.
    system : the SpringSystem (``springs`` (m, 2), optional ``triangles`` (t, 3)).
    """

    def __init__(self, ctx: moderngl.Context, system: Any) -> None:
        self.ctx = ctx
        self.system = system
        self.n_particles = int(system.n_particles)
        self.program = ctx.program(vertex_shader=_source("ghost.vert"),
                                   fragment_shader=_source("ghost.frag"))
        self._pos32 = np.zeros((self.n_particles, 3), dtype=np.float32)
        self._vbo = ctx.buffer(reserve=self._pos32.nbytes, dynamic=True)
        springs = np.ascontiguousarray(system.springs, dtype=np.uint32).reshape(-1, 2)
        self._objects: list[Any] = [self.program, self._vbo]
        self._lines = self._vao(springs) if springs.size else None
        triangles = getattr(system, "triangles", None)
        self._surface = (self._vao(np.asarray(triangles, dtype=np.uint32))
                         if triangles is not None and len(triangles) else None)
        n = np.asarray(LIGHT, dtype=np.float64)
        self.program["u_light_dir"].value = tuple(float(v) for v in n / np.linalg.norm(n))
        self.program["u_color"].value = GHOST_COLOR

    def _vao(self, indices: np.ndarray) -> moderngl.VertexArray:
        ibo = self.ctx.buffer(np.ascontiguousarray(indices, dtype=np.uint32).tobytes())
        vao = self.ctx.vertex_array(self.program, [(self._vbo, "3f", "in_position")],
                                    index_buffer=ibo, index_element_size=4)
        self._objects += [vao, ibo]
        return vao

    def draw(self, positions: np.ndarray, view_proj: np.ndarray) -> None:
        """Draw the ghost at ``positions`` ((n, 3), m) with the camera's ``view_proj``
        (pyrr row-vector layout) into the bound framebuffer; leaves blending off and
        depth writes on."""
        if np.shape(positions) != (self.n_particles, 3):
            raise ValueError(f"ghost positions: expected shape ({self.n_particles}, 3), "
                             f"got {np.shape(positions)}")
        np.copyto(self._pos32, positions, casting="same_kind")
        self._vbo.write(self._pos32)
        ctx, prog = self.ctx, self.program
        prog["u_view_proj"].write(np.ascontiguousarray(view_proj, dtype=np.float32).tobytes())
        ctx.enable(moderngl.BLEND | moderngl.DEPTH_TEST)
        ctx.blend_func = BLEND_OVER   # alpha as coverage: also over a transparent layer
        target = ctx.fbo
        target.depth_mask = False
        try:
            if self._surface is not None:
                prog["u_shade"].value = True
                prog["u_alpha"].value = SURFACE_ALPHA
                self._surface.render(moderngl.TRIANGLES)
            if self._lines is not None and self._surface is None:
                prog["u_shade"].value = False
                prog["u_alpha"].value = LINE_ALPHA
                ctx.line_width = LINE_WIDTH_PX
                self._lines.render(moderngl.LINES)
                ctx.line_width = 1.0
        finally:
            target.depth_mask = True
            ctx.disable(moderngl.BLEND)

    def draws(self, system: Any) -> bool:
        """Whether this layer is alive and was built for ``system``."""
        return bool(self._objects) and self.system is system

    def release(self) -> None:
        for obj in self._objects:
            obj.release()
        self._objects = []


__all__ = ["GHOST_COLOR", "GhostLayer"]
