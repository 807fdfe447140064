"""Draw a :class:`~ropesim.engine.simulation.Simulation` with moderngl into any framebuffer.

The same code serves the interactive viewer (moderngl-window's default
framebuffer) and headless rendering (an EGL context and an offscreen target from
:mod:`ropesim.render.offscreen`), so nothing here depends on moderngl-window.

A :class:`Renderer` builds its programs (GLSL from ``shaders/``), vertex
buffers and index buffers once per scene. Every frame it writes the particle
positions into the existing position buffer (and, when springs or tubes are
drawn, into a float texture the spring shaders read both ends from)
and recomputes vertex normals with the numba kernel into a preallocated array;
particle flags (pinned / hovered / grabbed) are re-uploaded only when they
change.

The default look (mode ``surface``): a cloth is a two-sided lit surface with a
fabric pattern from its grid coordinates; a system without a surface (rope,
ring, star, network) is a lit tube along its springs (render/tube.py sizes it);
a key light from above casts a PCF-softened shadow map (render/shadow.py) onto
the floor, the obstacles and the scene itself, and the floor darkens under
nearby casters. Springs are drawn as screen-space quads by vertex id (no geometry
shader). A dense cloth whose cells shrink below :data:`LOD_CELL_PX` pixels is
drawn from a coarser triangle grid over the same particles (every 2nd, 4th or
8th row and column), and casts its shadow from one of about
:data:`SHADOW_CAST_CELLS` cells a side: sub-pixel triangles cost the rasteriser
time and show nothing.

Conventions: world units are metres, y is up (gravity along -y); matrices come
from the camera in pyrr's row-vector layout and are uploaded unchanged (see
docs/architecture.md). Colours are sRGB triples in 0..1; sizes on screen are in
framebuffer pixels.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import moderngl
import numpy as np

from ..engine.tearing import intact_triangles, triangle_edge_springs
from ..io.paths import shader_dir
from .colliders import ColliderDrawing
from .ghost import GhostLayer
from .msaa import BLEND_OVER, MultisampleLayer, screen_rect
from .offscreen import FrameGrabber, clamp_samples
from .shadow import LIGHT_DIRECTION, LIGHT_DIRECTION_PLANAR, ShadowInputs, ShadowMap, fit_light
from .strain import vertex_strain
from .surface import vertex_normals
from .tube import (SPRITE_RADIUS_SHARE, SPRITE_RADIUS_SHARE_ROPE, TUBE_RADIUS_SHARE,
                   TUBE_SEGMENTS, bounds, scene_spacing, spring_indices, tube_springs)

__all__ = ["WIREFRAME_MODES", "RenderOptions", "Renderer", "load_shader_source",
           "strain_color_stops"]

WIREFRAME_MODES = ("surface", "surface+springs", "springs+particles")

# Particle flag bits, as read by shaders/particles.vert.
FLAG_PINNED = 1
FLAG_HOVERED = 2
FLAG_GRABBED = 4

Color = Sequence[float]

# Palette (sRGB).
CLOTH_FRONT = (0.80, 0.36, 0.27)            # terracotta
CLOTH_BACK = (0.22, 0.47, 0.70)             # slate blue
ROPE_COLOR = (0.86, 0.74, 0.52)             # hemp
SPHERE_COLOR = (0.62, 0.66, 0.72)
SPRING_COLOR = (0.52, 0.60, 0.72)           # springs on their own
SPRING_ON_SURFACE_COLOR = (0.42, 0.17, 0.13)  # springs drawn over the cloth or tube
PARTICLE_PALETTE = (
    (0.94, 0.95, 0.97),   # plain
    (1.00, 0.60, 0.10),   # pinned
    (0.30, 0.88, 1.00),   # hovered
    (0.35, 1.00, 0.45),   # grabbed
)
AXIS_COLORS = ((0.92, 0.25, 0.22), (0.35, 0.85, 0.30), (0.28, 0.50, 1.00))
GRID_LINE_COLOR = (0.46, 0.49, 0.56)
GRID_FILL_COLOR = (0.23, 0.24, 0.28)
# Strain colour map stops at strain -1, 0, +1 times the saturation scale.
STRAIN_STOPS = (
    (-1.0, (0.12, 0.42, 1.00)),   # compressed: blue
    (0.0, (0.72, 0.72, 0.74)),    # at rest: grey
    (1.0, (0.98, 0.16, 0.10)),    # stretched: red
)

LOD_CELL_PX = 12.0         # coarsen the drawn cloth grid while its cells stay under this, px
LOD_STRIDES = (1, 2, 4, 8)
SHADOW_CAST_CELLS = 48     # cells a side of the cloth grid that casts the shadow, at most
SHADOW_RESOLUTION = 512    # shadow-map texels a side
TUBE_MIN_PX = 3.5          # thinnest tube on screen, px (diameter)
TUBE_SPEC = 0.18           # highlight strength of tubes and their joints
JOINT_SHARE = 0.96         # joint ball radius / tube radius
FABRIC_BANDS = 12          # gingham bands across the longer side of a cloth
BACKDROP_GAP = 0.04        # planar scenes: backdrop behind z = 0, times the scene extent
CONTACT_SPACINGS = 3.0     # surfaces darken within this many spacings above the floor

# Texture units, one per sampler uniform of the shaders.
_UNIT_POSITIONS, _UNIT_SHADOW_COMPARE, _UNIT_SHADOW_RAW, _UNIT_FLOOR_SHADOW = 0, 1, 2, 3
_UNIT_SPRINGS, _UNIT_REST = 4, 5
_UNITS = {"u_positions": _UNIT_POSITIONS, "u_shadow_map": _UNIT_SHADOW_COMPARE,
          "u_shadow_depth": _UNIT_SHADOW_RAW, "u_floor_shadow": _UNIT_FLOOR_SHADOW,
          "u_springs": _UNIT_SPRINGS, "u_rest": _UNIT_REST}
LINE_CORNERS = 4           # vertices of a spring drawn as a line quad
GL_LINE_MAX_PX = 2.0       # springs up to this wide (px) are drawn as GL_LINES


def strain_color_stops(strain_scale: float = 0.05) -> list[tuple[float, tuple[float, ...]]]:
    """The strain colour map as (strain, sRGB colour) stops, linear in between:
    compressed blue at -strain_scale, grey at rest, stretched red at +strain_scale
    (dimensionless strain (l - L) / L). Colours saturate beyond the end stops."""
    if not (strain_scale > 0 and math.isfinite(strain_scale)):
        raise ValueError(f"strain_scale: must be > 0, got {strain_scale}")
    return [(t * float(strain_scale), color) for t, color in STRAIN_STOPS]


@dataclass
class RenderOptions:
    """What to draw and how; all fields can be changed between frames.

    mode : one of WIREFRAME_MODES. ``surface`` draws the body only: the cloth
        surface, or for a system without one (rope, ring, star, network) a lit
        tube along its springs; ``surface+springs`` adds the springs and every
        particle; ``springs+particles`` draws springs as lines and particles as
        sprites only.
    strain_colors : colour the springs, the surface and the tube by strain
        (compressed blue, rest grey, stretched red), saturating at
        +-``strain_scale``; see :func:`strain_color_stops`.
    strain_scale : strain (l - L) / L at which the colour saturates, dimensionless.
    show_grid, show_axes : the reference grid (floor) and the RGB (x, y, z) axes
        at the origin.
    shadows : the key light's shadows and the floor's contact shading.
    hovered, grabbed : particle indices to highlight, or None. ``grabbed=None``
        falls back to the simulation's own ``sim.grabbed``.
    spring_width_px : spring line width in framebuffer pixels.
    particle_min_px : smallest particle sprite diameter in pixels.
    background : sRGB clear colour.
    ghost : (n, 3) positions (m) of a second run of the same system drawn translucent
        over the scene (a what-if branch's original run, :mod:`ropesim.render.ghost`), or None.
    """

    mode: str = "surface"
    strain_colors: bool = False
    strain_scale: float = 0.05
    show_grid: bool = True
    show_axes: bool = False
    shadows: bool = True
    hovered: int | None = None
    grabbed: int | None = None
    spring_width_px: float = 2.0
    particle_min_px: float = 3.0
    background: Color = (0.12, 0.13, 0.16)
    ghost: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the allowed values if a field is out of range."""
        if self.mode not in WIREFRAME_MODES:
            raise ValueError(
                f"mode: {self.mode!r} is not a render mode; allowed: {', '.join(WIREFRAME_MODES)}"
            )
        if not (self.spring_width_px > 0 and math.isfinite(self.spring_width_px)):
            raise ValueError(f"spring_width_px: must be > 0 px, got {self.spring_width_px}")
        if not (self.strain_scale > 0 and math.isfinite(self.strain_scale)):
            raise ValueError(f"strain_scale: must be > 0, got {self.strain_scale}")
        if not self.particle_min_px >= 0:
            raise ValueError(f"particle_min_px: must be >= 0 px, got {self.particle_min_px}")
        if len(self.background) not in (3, 4):
            raise ValueError(
                f"background: expected an (r, g, b) colour in 0..1, got {self.background!r}"
            )


# --- shader loading -------------------------------------------------------------

_INCLUDE = re.compile(r'^[ \t]*#include[ \t]+"([^"]+)"[ \t]*$', re.MULTILINE)


def load_shader_source(name: str, directory: Path | None = None) -> str:
    """Read ``shaders/<name>`` with ``#include "file"`` lines replaced by that file."""
    directory = Path(shader_dir() if directory is None else directory)

    def read(file_name: str, seen: tuple[str, ...]) -> str:
        if file_name in seen:
            raise ValueError(f"shader {name}: #include cycle through {file_name}")
        path = directory / file_name
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise FileNotFoundError(f"shader file {path} not found ({exc.strerror})") from exc
        return _INCLUDE.sub(lambda m: read(m.group(1), seen + (file_name,)), text)

    return read(name, ())


def _with_defines(source: str, defines: Sequence[str]) -> str:
    """GLSL source with ``#define NAME`` lines after its ``#version`` line."""
    if not defines:
        return source
    version, _, rest = source.partition("\n")
    return "\n".join([version, *(f"#define {name}" for name in defines), rest])


def _program(ctx: moderngl.Context, vertex: str, fragment: str,
             defines: Sequence[str] = ()) -> moderngl.Program:
    """A program from two shader files, each compiled with ``defines`` (a variant:
    a software rasteriser runs both sides of a branch, so variants leave code out)."""
    try:
        prog = ctx.program(vertex_shader=_with_defines(load_shader_source(vertex), defines),
                           fragment_shader=_with_defines(load_shader_source(fragment), defines))
    except moderngl.Error as exc:
        raise RuntimeError(f"building shader program {vertex} + {fragment} failed: {exc}") from exc
    # Every sampler gets its own unit once: samplers of different types must not share one.
    for name, unit in _UNITS.items():
        _set(prog, name, unit)
    return prog


def _set(prog: moderngl.Program, name: str, value: Any) -> None:
    """Set a uniform if the compiled program still has it (unused ones are dropped)."""
    if name in prog:
        prog[name].value = value


def _set_matrix(prog: moderngl.Program, name: str, matrix: np.ndarray) -> None:
    if name in prog:
        prog[name].write(np.ascontiguousarray(matrix, dtype=np.float32).tobytes())


# --- static meshes ----------------------------------------------------------------

def uv_sphere(rings: int = 16, segments: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """A unit sphere: (v, 3) float32 vertices (which are also the normals) and
    (t, 3) uint32 triangles, counter-clockwise seen from outside."""
    theta = np.linspace(0.0, np.pi, rings + 1)          # from +y down to -y
    phi = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    verts = np.stack([np.sin(t) * np.cos(p), np.cos(t), -np.sin(t) * np.sin(p)], axis=-1)
    idx = np.arange((rings + 1) * (segments + 1)).reshape(rings + 1, segments + 1)
    a, b = idx[:-1, :-1], idx[:-1, 1:]
    c, d = idx[1:, :-1], idx[1:, 1:]
    tris = np.concatenate([np.stack([a, c, d], -1).reshape(-1, 3),
                           np.stack([a, d, b], -1).reshape(-1, 3)])
    return verts.reshape(-1, 3).astype(np.float32), tris.astype(np.uint32)


def grid_triangles(triangles: np.ndarray, rows: int, cols: int,
                   stride: int) -> np.ndarray | None:
    """The triangles of a rows x cols particle grid (id = row * cols + col) over
    every ``stride``-th row and column (the last row and column always kept),
    wound like ``triangles``; None unless ``triangles`` are two per grid cell, in
    two corner patterns shared by every cell."""
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    cells = (rows - 1) * (cols - 1)
    if tris.shape[0] != 2 * cells or rows < 2 or cols < 2:
        return None
    r, c = np.divmod(tris, cols)
    r0, c0 = r.min(axis=1, keepdims=True), c.min(axis=1, keepdims=True)
    dr, dc = r - r0, c - c0
    if dr.max() > 1 or dc.max() > 1:
        return None
    codes = (dr * 2 + dc) @ np.array([16, 4, 1])      # the corner pattern, as one number
    patterns = np.unique(codes)
    if len(patterns) != 2 or np.count_nonzero(codes == patterns[0]) != cells:
        return None
    if stride == 1:
        return np.ascontiguousarray(tris, dtype=np.uint32)
    kept_r = np.unique(np.append(np.arange(0, rows, stride), rows - 1))
    kept_c = np.unique(np.append(np.arange(0, cols, stride), cols - 1))
    top, bottom = kept_r[:-1, None], kept_r[1:, None]
    left, right = kept_c[None, :-1], kept_c[None, 1:]
    out = []
    for code in patterns:
        first = int(np.flatnonzero(codes == code)[0])
        corners = []
        for k in range(3):
            row = bottom if dr[first, k] else top
            col = right if dc[first, k] else left
            corners.append((row * cols + col).reshape(-1))
        out.append(np.stack(corners, axis=-1))
    return np.ascontiguousarray(np.concatenate(out), dtype=np.uint32)


def _rest_positions(system: Any) -> np.ndarray:
    """(n, 3) float64 rest (initial) positions of a SpringSystem, m."""
    rest = system.positions3() if hasattr(system, "positions3") else system.positions
    rest = np.asarray(rest, dtype=np.float64)
    return np.column_stack([rest, np.zeros((rest.shape[0], 3 - rest.shape[1]))])


def fabric_uv(system: Any, spacing: float) -> tuple[np.ndarray, float]:
    """(n, 2) float32 fabric coordinates in grid cells and the gingham band width in
    cells: (col, row) for a structured grid, else the rest positions along their two
    widest axes divided by ``spacing``."""
    grid = getattr(system, "grid_shape", None)
    n = system.n_particles
    if grid is not None:
        rows, cols = grid
        ids = np.arange(n)
        uv = np.column_stack([ids % cols, ids // cols]).astype(np.float32)
        longest = max(rows, cols) - 1
    else:
        rest = _rest_positions(system)
        widest = np.argsort(np.ptp(rest, axis=0))[::-1][:2]
        uv = (rest[:, widest] / max(spacing, 1e-12)).astype(np.float32)
        longest = float(np.ptp(uv, axis=0).max())
    return uv, max(1.0, round(longest / FABRIC_BANDS))


def _obstacles(contacts: Iterable[Any] | None) -> tuple[float | None, list[tuple[np.ndarray, float]]]:
    """(highest ground height or None, [(sphere centre, radius)]) from sim.contacts.

    Duck-typed on ``contacts.Ground`` (``.height``) and ``contacts.Sphere``
    (``.center``, ``.radius``) so the renderer does not import the engine.
    """
    ground: float | None = None
    spheres: list[tuple[np.ndarray, float]] = []
    for c in contacts or ():
        if hasattr(c, "height"):
            h = float(c.height)
            ground = h if ground is None else max(ground, h)
        elif hasattr(c, "center") and hasattr(c, "radius"):
            spheres.append((np.asarray(c.center, dtype=np.float32).reshape(3), float(c.radius)))
    return ground, spheres


def _eye_and_forward(view: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Camera position (m) and unit view direction from a row-vector view matrix."""
    rot = view[:3, :3].astype(np.float64)
    eye = -view[3, :3].astype(np.float64) @ rot.T
    return eye, -rot[:, 2]


# Two triangles of a line quad over its corners (2 * end + side).
_LINE_QUAD = np.array([[0, 1, 2], [2, 1, 3]], dtype=np.uint32)


def _cylinder_triangles(segments: int) -> np.ndarray:
    """Triangles of an open cylinder over its corners ring * (segments + 1) + side
    (tube.vert), counter-clockwise seen from outside."""
    i = np.arange(segments, dtype=np.uint32)
    j = i + segments + 1          # the same side on the second ring
    return np.concatenate([np.stack([i, i + 1, j + 1], -1), np.stack([i, j + 1, j], -1)])


@dataclass
class _SpringSet:
    """Springs drawn by vertex id (springs.glsl): the (m, 2) particle-index buffer
    and the textures made from it, and one index-buffer vertex array per program."""

    ends_buffer: moderngl.Buffer
    ends: moderngl.Texture
    rest: moderngl.Texture
    vaos: list[moderngl.VertexArray]
    corners: int
    count: int
    ibo: moderngl.Buffer | None = None
    corner_triangles: np.ndarray | None = None
    ends_array: np.ndarray | None = None           # (count, 2) uint32 particle indices
    gl_lines: moderngl.Buffer | None = None        # the shown springs' ends, for GL_LINES
    shown: int = 0                                 # springs drawn (not torn)

    def show_only(self, keep: np.ndarray) -> None:
        """Draw only the springs ``keep`` (indices into this set): torn ones are hidden."""
        keep = np.asarray(keep, dtype=np.uint32)
        tris = np.asarray(self.corner_triangles, dtype=np.uint32).reshape(-1)
        ids = (keep[:, None] * np.uint32(self.corners) + tris[None, :]).reshape(-1)
        if ids.size:
            self.ibo.write(ids)
        if self.gl_lines is not None and keep.size:
            self.gl_lines.write(np.ascontiguousarray(self.ends_array[keep]))
        self.shown = int(keep.size)
        for vao in self.vaos:
            vao.vertices = int(ids.size)

    def draw(self, which: int) -> None:
        """Draw with the ``which``-th program (the caller has set its other uniforms)."""
        vao = self.vaos[which]
        _set(vao.program, "u_vertices_per_spring", self.corners)
        self.ends.use(_UNIT_SPRINGS)
        self.rest.use(_UNIT_REST)
        vao.render(moderngl.TRIANGLES)


# --- the renderer ------------------------------------------------------------------

@dataclass
class _Frame:
    """What one draw call decided: the passes to run and the matrices to use."""

    view: np.ndarray
    proj: np.ndarray
    view_proj: np.ndarray
    eye: np.ndarray
    forward: np.ndarray
    viewport: tuple[float, float]
    ground: float | None
    spheres: list[tuple[np.ndarray, float]]
    lo: np.ndarray         # m, per-axis minimum of the particle positions
    hi: np.ndarray         # m, and maximum
    surface: bool          # the cloth surface
    tube: bool             # springs as tubes (systems without a surface)
    springs: bool          # springs as lines
    all_particles: bool    # every particle, not only the flagged ones


class Renderer:
    """GL resources for one scene and the code that draws it.

    Parameters
    ----------
    ctx : the moderngl context to draw with (any framebuffer of it).
    sim : a Simulation (``system``, ``positions``, ``pinned``, ``grabbed``, ``contacts``).
    particle_radius : sprite radius in m; default 0.2 (cloth) or 0.3 (others) times the
        scene's spacing (render/tube.py: the median distance between nearest particles).
    shadow_resolution : shadow-map texels a side.

    Attributes set per scene: ``spacing`` (m), ``particle_radius`` (m),
    ``tube_radius`` (m, :data:`~ropesim.render.tube.TUBE_RADIUS_SHARE` x spacing),
    ``extent`` (m), ``has_surface``, ``n_triangles_drawn`` (the cloth's triangles
    without a broken spring along an edge); per draw: ``lod_stride`` (rows and columns
    per drawn cloth cell) and ``shadow_stride`` (the same for the shadow).
    """

    _ghost: GhostLayer | None = None   # drawn when RenderOptions.ghost is set (issue 15)

    def __init__(self, ctx: moderngl.Context, sim: Any, *,
                 particle_radius: float | None = None,
                 shadow_resolution: int = SHADOW_RESOLUTION) -> None:
        if ctx.version_code < 330:
            raise RuntimeError(
                f"the renderer needs OpenGL 3.3 or newer; this context has {ctx.version_code}"
            )
        self.ctx = ctx
        self._requested_radius = particle_radius
        self._scene: list[Any] = []   # GL objects owned by the current scene
        self._grabber: FrameGrabber | None = None
        self.programs = {
            "surface": _program(ctx, "surface.vert", "surface.frag"),
            "cloth": _program(ctx, "surface.vert", "surface.frag", defines=("CLOTH",)),
            "surface_depth": _program(ctx, "surface.vert", "depth.frag"),
            "tube": _program(ctx, "tube.vert", "surface.frag"),
            "tube_depth": _program(ctx, "tube.vert", "depth.frag"),
            "lines": _program(ctx, "lines.vert", "lines.frag"),
            "gl_lines": _program(ctx, "gl_lines.vert", "gl_lines.frag"),
            "particles": _program(ctx, "particles.vert", "particles.frag"),
            "particles_depth": _program(ctx, "particles.vert", "sprite_depth.frag"),
            "grid": _program(ctx, "grid.vert", "grid.frag"),
            "grid_ground_line": _program(ctx, "grid.vert", "grid.frag", defines=("GROUND_LINE",)),
            # the floor beyond the light's reach: no shadow lookup (render/shadow.py)
            "grid_unshadowed": _program(ctx, "grid.vert", "grid.frag", defines=("UNSHADOWED",)),
            "grid_ground_line_unshadowed": _program(ctx, "grid.vert", "grid.frag",
                                                    defines=("GROUND_LINE", "UNSHADOWED")),
            "floor_shadow": _program(ctx, "floor_shadow.vert", "floor_shadow.frag"),
        }
        strain_colors = tuple(c for _, c in STRAIN_STOPS)
        for prog in self.programs.values():
            _set(prog, "u_strain_colors", strain_colors)
        self.shadow_map = ShadowMap(ctx, shadow_resolution)
        self._build_static()
        self.sim = None
        self.lod_stride = self.shadow_stride = 1
        self.shadow_draws = 0   # how often the shadow map was drawn (it is kept while nothing moves)
        self.rebuild(sim)

    # -- building ---------------------------------------------------------------
    def _build_static(self) -> None:
        """Meshes that do not depend on the scene: the grid quad, the unit sphere,
        the unit cylinder and the line quad."""
        ctx, progs = self.ctx, self.programs
        corners = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], dtype=np.float32)
        self._grid_vbo = ctx.buffer(corners.tobytes())
        self._grid_vaos = {name: ctx.vertex_array(progs[name], [(self._grid_vbo, "2f", "in_corner")])
                           for name in ("grid", "grid_ground_line", "grid_unshadowed",
                                        "grid_ground_line_unshadowed")}
        # the part of the floor the light's frustum reaches, in floor-quad coordinates
        self._reach_vbo = ctx.buffer(reserve=4 * 2 * 4, dynamic=True)
        self._reach_vaos = {name: ctx.vertex_array(progs[name], [(self._reach_vbo, "2f", "in_corner")])
                            for name in ("grid", "grid_ground_line")}
        self._floor_shadow_vao = ctx.vertex_array(progs["floor_shadow"],
                                                  [(self._grid_vbo, "2f", "in_corner")])
        verts, tris = uv_sphere()
        self._sphere_vbo = ctx.buffer(verts.tobytes())
        self._sphere_ibo = ctx.buffer(tris.tobytes())
        self._sphere_vaos = {
            name: ctx.vertex_array(
                progs[name],
                [(self._sphere_vbo, "3f", "in_position")]
                + ([(self._sphere_vbo, "3f", "in_normal")] if name == "surface" else []),
                index_buffer=self._sphere_ibo, index_element_size=4)
            for name in ("surface", "surface_depth")
        }
        self._static = [*self._grid_vaos.values(), *self._reach_vaos.values(), self._reach_vbo,
                        self._floor_shadow_vao, self._grid_vbo,
                        *self._sphere_vaos.values(), self._sphere_vbo, self._sphere_ibo,
                        self.shadow_map]

    def _spring_set(self, springs: np.ndarray, rest: np.ndarray,
                    programs: Sequence[str], corners: int,
                    corner_triangles: np.ndarray) -> "_SpringSet":
        """GL objects to draw ``springs`` ((m, 2) uint32, rest lengths (m,) m) with
        the vertex-id shaders (springs.glsl) of ``programs``."""
        ctx = self.ctx
        m = springs.shape[0]
        cols = min(m, 4096)
        rows = -(-m // cols)
        pairs = np.zeros((rows * cols, 2), dtype=np.uint32)
        pairs[:m] = springs
        lengths = np.zeros(rows * cols, dtype=np.float32)
        lengths[:m] = rest
        ends_buffer = ctx.buffer(pairs.tobytes())
        ends = ctx.texture((cols, rows), 2, dtype="u4")
        ends.write(ends_buffer)                      # uploaded from the buffer
        rest_tex = ctx.texture((cols, rows), 1, lengths.tobytes(), dtype="f4")
        for tex in (ends, rest_tex):
            tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
        ibo = ctx.buffer(spring_indices(m, corners, corner_triangles).tobytes())
        vaos = [ctx.vertex_array(self.programs[name], [], index_buffer=ibo, index_element_size=4)
                for name in programs]
        self._scene += [*vaos, ibo, ends, rest_tex, ends_buffer]
        return _SpringSet(ends_buffer, ends, rest_tex, vaos, corners, m, ibo, corner_triangles,
                          ends_array=springs, shown=m)

    def rebuild(self, sim: Any, keep_sizes: bool = False) -> None:
        """Replace the scene: free its buffers and build new ones for ``sim``.
        ``keep_sizes``: the same scene with another topology (sprite, tube, grid and
        axes sizes stay as they were)."""
        self._release_scene()
        ctx, progs = self.ctx, self.programs
        system = sim.system
        positions = np.asarray(sim.positions)
        n = positions.shape[0]
        if positions.shape != (n, 3):
            raise ValueError(f"sim.positions: expected shape (n, 3), got {positions.shape}")
        self.sim = sim
        self.n_particles = n
        self.topology_version = getattr(sim, "topology_version", 0)   # issue 13
        self._shadow_inputs = ShadowInputs()   # the shadow map is drawn for this scene afresh
        self._n_broken_springs = 0

        self._pos32 = np.empty((n, 3), dtype=np.float32)
        self._flags = np.zeros(n, dtype=np.uint32)
        self._last_pinned = np.zeros(n, dtype=bool)
        self._last_marks: tuple[int | None, int | None] | None = None  # forces a first upload
        self.flag_uploads = 0   # how often the flags buffer was written (for tests/diagnostics)
        self.n_flagged = 0
        self._strain = np.zeros(n, dtype=np.float32)
        self._strain_counts = np.zeros(n, dtype=np.float32)
        self._vbo_pos = ctx.buffer(reserve=n * 12, dynamic=True)
        self._vbo_flags = ctx.buffer(reserve=n * 4, dynamic=True)
        self._vbo_strain = ctx.buffer(self._strain.tobytes(), dynamic=True)
        self._ibo_flagged = ctx.buffer(reserve=n * 4, dynamic=True)
        cols = min(n, 4096)
        self._pos_tex = ctx.texture((cols, -(-n // cols)), 3, dtype="f4")
        self._pos_tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self._texture_current = False
        self._scene += [self._vbo_pos, self._vbo_flags, self._vbo_strain, self._ibo_flagged,
                        self._pos_tex]

        springs = np.ascontiguousarray(np.asarray(system.springs, dtype=np.uint32).reshape(-1, 2))
        self._springs = springs
        self.n_springs = springs.shape[0]
        rest = getattr(sim, "rest_lengths", None)
        self._rest = np.ascontiguousarray(
            np.asarray(system.rest_lengths if rest is None else rest, dtype=np.float32))
        self._lines = None
        if self.n_springs:
            self._lines = self._spring_set(springs, self._rest, ["lines"], LINE_CORNERS,
                                           _LINE_QUAD)
            # the same springs as GL_LINES over the position buffer (torn ones left out)
            self._ibo_gl_lines = ctx.buffer(springs.tobytes(), dynamic=True)
            self._scene.append(self._ibo_gl_lines)
            self._lines.gl_lines = self._ibo_gl_lines

        particle_attrs = [(self._vbo_pos, "3f", "in_position"), (self._vbo_flags, "u4", "in_flags"),
                          (self._vbo_strain, "f4", "in_strain")]
        removed = getattr(sim, "removed_particles", None)   # issue 13: not drawn
        shown: dict[str, Any] = {}
        if removed is not None and removed.any():
            kept = ctx.buffer(np.flatnonzero(~removed).astype(np.uint32).tobytes())
            self._scene.append(kept)
            shown = {"index_buffer": kept, "index_element_size": 4}
        self._vao_particles = ctx.vertex_array(progs["particles"], particle_attrs, **shown)
        self._vao_flagged = ctx.vertex_array(progs["particles"], particle_attrs,
                                             index_buffer=self._ibo_flagged, index_element_size=4)
        self._vao_particles_depth = ctx.vertex_array(
            progs["particles_depth"], [(self._vbo_pos, "3f", "in_position")], **shown)
        self._scene += [self._vao_particles, self._vao_flagged, self._vao_particles_depth]
        if self._lines is not None:
            self._vao_gl_lines = ctx.vertex_array(
                progs["gl_lines"], [(self._vbo_pos, "3f", "in_position")],
                index_buffer=self._ibo_gl_lines, index_element_size=4)
            self._scene.append(self._vao_gl_lines)

        self.spacing = scene_spacing(_rest_positions(system), self._rest)
        tris = system.triangles
        self._triangles = None
        self._normals = None
        self._vbo_normals = self._ibo_tris = self._vao_surface = None
        self.n_triangles_drawn = 0
        self._lod: dict[int, tuple[moderngl.VertexArray, moderngl.VertexArray] | None] = {}
        if tris is not None and len(tris):
            self._triangles = np.ascontiguousarray(tris, dtype=np.int64).reshape(-1, 3)
            self._normals = np.zeros((n, 3), dtype=np.float32)
            self._vbo_normals = ctx.buffer(reserve=n * 12, dynamic=True)
            uv, self._stripe = fabric_uv(system, self.spacing)
            self._vbo_uv = ctx.buffer(uv.tobytes())
            self._ibo_tris = ctx.buffer(self._triangles.astype(np.uint32).tobytes())
            # a torn cloth draws only its intact triangles: the first n_triangles_drawn rows
            self._edge_springs = triangle_edge_springs(self._triangles, springs[:, 0],
                                                       springs[:, 1], n)
            self._drawn = self._triangles.astype(np.uint32)
            self.n_triangles_drawn = len(self._drawn)
            self._n_broken_drawn = 0
            self._vao_surface, self._vao_surface_depth = self._surface_vaos(self._ibo_tris)
            self._lod[1] = (self._vao_surface, self._vao_surface_depth)
            self._scene += [self._vao_surface, self._vao_surface_depth, self._vbo_normals,
                            self._vbo_uv, self._ibo_tris]
        self._grid_shape = getattr(system, "grid_shape", None)

        self._tube = None
        if self._triangles is None and self.n_springs:
            keep = tube_springs(springs, self._rest)
            self._tube_springs = keep
            if keep.size:
                self._tube = self._spring_set(springs[keep], self._rest[keep],
                                              ["tube", "tube_depth"], 2 * (TUBE_SEGMENTS + 1),
                                              _cylinder_triangles(TUBE_SEGMENTS))

        if not keep_sizes:
            self._frame_scene(positions, bool(system.planar))
        self._build_axes()
        self.update(sim)

    def _surface_vaos(self, ibo: moderngl.Buffer) -> tuple[moderngl.VertexArray, ...]:
        """The lit and the depth-only vertex arrays of the cloth over triangles ``ibo``."""
        ctx, progs = self.ctx, self.programs
        lit = ctx.vertex_array(progs["cloth"], [
            (self._vbo_pos, "3f", "in_position"), (self._vbo_normals, "3f", "in_normal"),
            (self._vbo_uv, "2f", "in_uv"), (self._vbo_strain, "f4", "in_strain"),
        ], index_buffer=ibo, index_element_size=4)
        depth = ctx.vertex_array(progs["surface_depth"], [(self._vbo_pos, "3f", "in_position")],
                                 index_buffer=ibo, index_element_size=4)
        return lit, depth

    def _lod_vaos(self, stride: int) -> tuple[moderngl.VertexArray, moderngl.VertexArray]:
        """The cloth's vertex arrays over every ``stride``-th grid row and column
        (built on first use; the full mesh where the grid does not allow it)."""
        if self.n_triangles_drawn < len(self._triangles):
            return self._lod[1]  # torn: the coarser grids would cover the holes
        if stride not in self._lod:
            tris = None
            if self._grid_shape is not None:
                tris = grid_triangles(self._triangles, *self._grid_shape, stride)
            if tris is None:
                self._lod[stride] = None
            else:
                ibo = self.ctx.buffer(tris.tobytes())
                self._lod[stride] = self._surface_vaos(ibo)
                self._scene += [*self._lod[stride], ibo]
        return self._lod[stride] or self._lod[1]

    def _build_axes(self) -> None:
        """The origin axes: three lines from the origin over their own position texture."""
        ends = np.zeros((4, 3), dtype=np.float32)        # origin, x, y, z ends
        ends[1:] = np.eye(3) * self.axis_length
        self._axes_tex = self.ctx.texture((4, 1), 3, ends.tobytes(), dtype="f4")
        self._axes_tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self._scene.append(self._axes_tex)
        self._axes = self._spring_set(np.array([[0, 1], [0, 2], [0, 3]], np.uint32),
                                      np.zeros(3, np.float32), ["lines"], LINE_CORNERS,
                                      _LINE_QUAD)
        inset = self.tube_radius if self.has_tube else self.particle_radius
        self._colliders = ColliderDrawing(self.ctx, self.programs["surface"],
                                          self.programs["surface_depth"], inset)
        self._scene.append(self._colliders)  # boxes, capsules, meshes (render/colliders.py)

    def _frame_scene(self, positions: np.ndarray, planar: bool) -> None:
        """Sizes derived from the initial scene: particle and tube radius, grid and axes (m)."""
        lo = positions.min(axis=0)
        hi = positions.max(axis=0)
        extent = float(np.max(hi - lo))
        if not extent > 0:
            extent = self.spacing
        self.extent = extent
        share = SPRITE_RADIUS_SHARE if self._triangles is not None else SPRITE_RADIUS_SHARE_ROPE
        if self._requested_radius is not None:
            self.particle_radius = float(self._requested_radius)
        else:
            self.particle_radius = share * self.spacing
        self.tube_radius = TUBE_RADIUS_SHARE * self.spacing
        self.planar = planar
        self._center = 0.5 * (lo + hi)
        self._lowest = float(lo[1])
        self.grid_cell = 10.0 ** math.floor(math.log10(extent / 2.0))
        self.axis_length = 0.3 * extent

    def _release_scene(self) -> None:
        for obj in self._scene:
            obj.release()
        self._scene = []

    def release(self) -> None:
        """Free every GL object the renderer created (it cannot draw afterwards)."""
        self._release_scene()
        for obj in self._static:
            obj.release()
        self._static = []
        for prog in self.programs.values():
            prog.release()
        self.programs = {}
        if self._grabber is not None:
            self._grabber.release()
            self._grabber = None

    @property
    def buffers(self) -> dict[str, moderngl.Buffer | None]:
        """The scene's GL buffers by role (None where the scene has none)."""
        return {
            "positions": self._vbo_pos,
            "normals": self._vbo_normals,
            "flags": self._vbo_flags,
            "springs": None if self._lines is None else self._lines.ends_buffer,
            "triangles": self._ibo_tris,
        }

    @property
    def has_surface(self) -> bool:
        return self._vao_surface is not None

    @property
    def has_tube(self) -> bool:
        """Whether the scene is drawn as a tube in the surface modes (no surface, some springs)."""
        return self._tube is not None

    @property
    def normals(self) -> np.ndarray | None:
        """The (n, 3) float32 vertex normals last uploaded, or None without triangles."""
        return self._normals

    # -- per frame ----------------------------------------------------------------
    def update(self, sim: Any | None = None) -> None:
        """Upload the current positions (and recomputed normals) into the existing buffers.

        ``sim`` defaults to the scene's simulation; it must have as many particles
        (use :meth:`rebuild` for a different scene). Allocates nothing when the
        positions are float32 or float64.
        """
        sim = self.sim if sim is None else sim
        if getattr(sim, "topology_version", 0) != self.topology_version:
            self.rebuild(sim, keep_sizes=True)   # live edits (issue 13): springs, triangles
            return
        pos = sim.positions
        if pos.shape != (self.n_particles, 3):
            raise ValueError(
                f"sim.positions has shape {pos.shape}, the renderer was built for "
                f"({self.n_particles}, 3); call rebuild(sim) for a new scene"
            )
        if pos.dtype == np.float32 and pos.flags.c_contiguous:
            self._vbo_pos.write(pos)
        else:
            np.copyto(self._pos32, pos, casting="same_kind")
            self._vbo_pos.write(self._pos32)
        self._texture_current = False
        self._hide_broken_springs(sim)
        if self._triangles is not None:
            self._drop_torn_triangles(sim)
            vertex_normals(pos, self._drawn[:self.n_triangles_drawn], self._normals)
            self._vbo_normals.write(self._normals)

    def _hide_broken_springs(self, sim: Any) -> None:
        """Draw the lines and the tube without the broken springs (``sim.broken``; the
        index buffers are rewritten when the number of broken springs changes)."""
        broken = getattr(sim, "broken", None)
        n_broken = 0 if broken is None else int(np.count_nonzero(broken))
        if n_broken == self._n_broken_springs:
            return
        self._n_broken_springs = n_broken
        if self._lines is not None:
            self._lines.show_only(np.flatnonzero(~broken))
        if self._tube is not None:
            self._tube.show_only(np.flatnonzero(~broken[self._tube_springs]))

    def _drop_torn_triangles(self, sim: Any) -> None:
        """Draw only the triangles with no broken spring along an edge (``sim.broken``;
        re-uploaded when the number of broken springs changes)."""
        broken = getattr(sim, "broken", None)
        n_broken = 0 if broken is None else int(np.count_nonzero(broken))
        if n_broken == self._n_broken_drawn:
            return
        self._n_broken_drawn = n_broken
        count = intact_triangles(self._triangles, self._edge_springs, broken, self._drawn)
        self.n_triangles_drawn = count
        if count:
            self._ibo_tris.write(self._drawn[:count])
        for vao in self._lod[1]:
            vao.vertices = 3 * count

    def _upload_position_texture(self) -> None:
        """Copy the positions into the texture the spring shaders read
        (once per update, only on frames that draw springs or tubes)."""
        if self._texture_current:
            return
        pos = self.sim.positions
        if not (pos.dtype == np.float32 and pos.flags.c_contiguous):
            np.copyto(self._pos32, pos, casting="same_kind")
            pos = self._pos32
        cols, rows = self._pos_tex.size
        full = self.n_particles // cols
        if full:
            self._pos_tex.write(pos[:full * cols], viewport=(0, 0, cols, full))
        if full < rows:
            rest = self.n_particles - full * cols
            self._pos_tex.write(pos[full * cols:], viewport=(0, full, rest, 1))
        self._texture_current = True

    def _update_flags(self, options: RenderOptions) -> None:
        """Re-upload particle flags (and the list of flagged particles), only when
        pins, hover or grab changed."""
        sim = self.sim
        n = self.n_particles
        pinned = getattr(sim, "pinned", None)
        if pinned is None:
            pinned = sim.system.pinned
        grabbed = options.grabbed if options.grabbed is not None else getattr(sim, "grabbed", None)
        marks = (options.hovered, grabbed)
        for name, idx in zip(("hovered", "grabbed"), marks):
            if idx is not None and not 0 <= int(idx) < n:
                raise ValueError(f"{name}: particle index {idx} is out of range 0..{n - 1}")
        if marks == self._last_marks and np.array_equal(pinned, self._last_pinned):
            return
        np.copyto(self._flags, pinned, casting="unsafe")   # True -> FLAG_PINNED (1)
        if options.hovered is not None:
            self._flags[int(options.hovered)] |= FLAG_HOVERED
        if grabbed is not None:
            self._flags[int(grabbed)] |= FLAG_GRABBED
        self._vbo_flags.write(self._flags)
        flagged = np.flatnonzero(self._flags).astype(np.uint32)
        self.n_flagged = int(flagged.size)
        if flagged.size:
            self._ibo_flagged.write(flagged)
        self.flag_uploads += 1
        np.copyto(self._last_pinned, pinned)
        self._last_marks = marks

    def _update_strain(self) -> None:
        """Mean strain per particle for the surface and the tube joints."""
        vertex_strain(self.sim.positions, self._springs, self._rest, self._strain_counts,
                      self._strain)
        self._vbo_strain.write(self._strain)

    def draw(self, camera: Any, width: int, height: int,
             options: RenderOptions | None = None, *, clear: bool = True,
             multisample: MultisampleLayer | None = None) -> None:
        """Upload the current state and draw the scene into the bound framebuffer.

        width, height : framebuffer size in pixels (sets the viewport).
        clear : clear colour (to ``options.background``) and depth first.
        multisample : antialias through this layer (render/msaa.py): the objects are
            drawn into it over their rectangle on screen and blended over the floor,
            which is drawn single-sampled into the bound framebuffer first (the whole
            scene goes through the layer when the camera or an object is below the
            floor, or behind a planar scene's backdrop).

        With ``options.shadows`` the shadow map is drawn first (into its own
        framebuffer; the one bound before is bound again). Leaves blending off and
        the polygon offset at zero; enables depth testing and program point size.
        """
        opts = RenderOptions() if options is None else options
        opts.validate()
        if width < 1 or height < 1:
            raise ValueError(f"width, height: must be >= 1 px, got {width}x{height}")
        ctx = self.ctx
        target = ctx.fbo
        self.update()
        self._update_flags(opts)
        frame = self._plan(camera, int(width), int(height), opts)
        if frame.springs or frame.tube:
            self._upload_position_texture()
        if opts.strain_colors and (frame.surface or frame.tube or frame.all_particles):
            self._update_strain()

        self._colliders.update(getattr(self.sim, "contacts", ()), getattr(self.sim, "time", 0.0))
        ctx.enable(moderngl.DEPTH_TEST | moderngl.PROGRAM_POINT_SIZE)
        ctx.disable(moderngl.CULL_FACE | moderngl.BLEND)
        self._pos_tex.use(_UNIT_POSITIONS)
        if not opts.shadows:
            self._shadow_inputs.forget()
        elif self._shadow_inputs.changed(*self._shadow_key(frame, opts)):
            self.shadow_draws += 1
            self._draw_shadow_map(frame)
            if opts.show_grid:
                self._draw_floor_shadow(frame.ground)
        target.use()
        ctx.viewport = (0, 0, int(width), int(height))
        if clear:
            bg = tuple(opts.background)
            ctx.clear(bg[0], bg[1], bg[2], 1.0, depth=1.0)
        self._set_frame_uniforms(frame, opts)
        if opts.shadows:
            self.shadow_map.bind(_UNIT_SHADOW_COMPARE, _UNIT_SHADOW_RAW, _UNIT_FLOOR_SHADOW)

        # with a layer, the floor first (single-sampled) and the objects over their rectangle
        split = multisample is not None and (not opts.show_grid or self._floor_under_scene(frame))
        floor_first = split and opts.show_grid
        rect = self._objects_rect(frame, opts) if split else (0, 0, int(width), int(height))
        if floor_first:
            self._draw_grid(frame.ground, opts.background, opts.shadows)
        if multisample is not None and rect is not None:
            multisample.begin(width, height, rect)
        if frame.surface:
            self._draw_surface(frame, opts)
        if frame.tube:
            self._draw_tube(opts)
        self._draw_spheres(frame.spheres)
        self._colliders.draw()
        if frame.springs and self._lines is not None:
            body = frame.surface or frame.tube
            self._draw_springs(opts, SPRING_ON_SURFACE_COLOR if body else SPRING_COLOR)
        self._draw_particles(frame, opts)
        if opts.show_grid and not floor_first:
            self._draw_grid(frame.ground, opts.background, opts.shadows)
        if opts.show_axes:
            self._draw_axes(opts.spring_width_px + 1.0)
        if opts.ghost is not None:   # issue 15: a branch's original run, translucent
            if self._ghost is None or not self._ghost.draws(self.sim.system):
                self._ghost = GhostLayer(ctx, self.sim.system)   # freed with the scene
                self._scene.append(self._ghost)
            self._ghost.draw(opts.ghost, frame.view_proj)
        if multisample is not None and rect is not None:
            multisample.composite(target, rect)
        if opts.shadows:
            self.shadow_map.unbind(_UNIT_SHADOW_COMPARE)
        ctx.disable(moderngl.BLEND)

    def _shadow_key(self, frame: _Frame, opts: RenderOptions) -> tuple[list[np.ndarray], tuple]:
        """What the shadow map and the floor's shadow are drawn from (render/shadow.py's
        ShadowInputs): the positions, the colliders' vertices and the rest."""
        arrays = [np.asarray(self.sim.positions), self._colliders.vertices]
        settings = (frame.tube, frame.all_particles, frame.ground, opts.show_grid,
                    tuple((tuple(float(v) for v in c), r) for c, r in frame.spheres),
                    self.n_triangles_drawn, self._n_broken_springs, self.topology_version)
        return arrays, settings

    def _floor_under_scene(self, frame: _Frame) -> bool:
        """Whether the camera and everything drawn (particles, balls, colliders, up to a
        particle radius below) are on the visible side of the floor (or in front of a
        planar scene's backdrop): then the floor hides nothing and can be drawn first."""
        point, normal = self._floor_plane(frame.ground)
        axis = 2 if self.planar else 1
        level = point[axis]
        lo = frame.lo.copy()
        for center, radius in frame.spheres:
            lo = np.minimum(lo, center - radius)
        lo, _ = self._colliders.extend(lo, frame.hi)
        slack = max(self.particle_radius, self.tube_radius)
        return bool(frame.eye[axis] > level and lo[axis] >= level - slack)

    def _objects_rect(self, frame: _Frame, opts: RenderOptions) -> tuple[int, int, int, int] | None:
        """The pixel rectangle of everything but the floor (None: nothing on screen)."""
        pad = 2.0 * max(self.particle_radius, self.tube_radius)   # flagged sprites grow 1.6x
        lo, hi = frame.lo - pad, frame.hi + pad
        for center, radius in frame.spheres:
            lo, hi = np.minimum(lo, center - radius), np.maximum(hi, center + radius)
        lo, hi = self._colliders.extend(lo, hi)
        if opts.show_axes:
            lo, hi = np.minimum(lo, 0.0), np.maximum(hi, self.axis_length)
        if opts.ghost is not None:
            ghost_lo, ghost_hi = bounds(np.asarray(opts.ghost, dtype=np.float64))
            lo, hi = np.minimum(lo, ghost_lo - pad), np.maximum(hi, ghost_hi + pad)
        # sprites and tubes have a smallest size on screen; lines a width
        margin = 2.0 + 1.6 * max(opts.particle_min_px, TUBE_MIN_PX) + opts.spring_width_px
        return screen_rect(frame.view_proj, lo, hi, int(frame.viewport[0]),
                           int(frame.viewport[1]), margin)

    def _plan(self, camera: Any, width: int, height: int, opts: RenderOptions) -> _Frame:
        view = np.asarray(camera.view_matrix(), dtype=np.float32)
        proj = np.asarray(camera.projection_matrix(width / height), dtype=np.float32)
        eye, forward = _eye_and_forward(view)
        ground, spheres = _obstacles(getattr(self.sim, "contacts", ()))
        body = opts.mode in ("surface", "surface+springs")
        surface = self.has_surface and body
        tube = self.has_tube and body
        lo, hi = bounds(self.sim.positions)
        return _Frame(
            view=view, proj=proj, view_proj=view @ proj, eye=eye, forward=forward,
            viewport=(float(width), float(height)), ground=ground, spheres=spheres, lo=lo, hi=hi,
            surface=surface, tube=tube,
            springs=not (surface or tube) or opts.mode == "surface+springs",
            all_particles=not (surface or tube) or opts.mode == "surface+springs",
        )

    def _set_frame_uniforms(self, frame: _Frame, opts: RenderOptions) -> None:
        light = LIGHT_DIRECTION_PLANAR if self.planar else LIGHT_DIRECTION
        px_per_m_at_1m = float(frame.proj[1, 1]) * 0.5 * frame.viewport[1]
        for prog in self.programs.values():
            _set_matrix(prog, "u_view", frame.view)
            _set_matrix(prog, "u_proj", frame.proj)
            _set_matrix(prog, "u_view_proj", frame.view_proj)
            _set(prog, "u_viewport", frame.viewport)
            _set(prog, "u_eye", tuple(float(v) for v in frame.eye))
            _set(prog, "u_forward", tuple(float(v) for v in frame.forward))
            _set(prog, "u_light_dir", tuple(float(v) for v in light))
            _set(prog, "u_px_per_m_at_1m", px_per_m_at_1m)
            _set(prog, "u_shadows", bool(opts.shadows))
            _set(prog, "u_strain_scale", float(opts.strain_scale))

    # -- shadow pass -----------------------------------------------------------------
    def _draw_shadow_map(self, frame: _Frame) -> None:
        """Depth of every caster seen from the key light, into the shadow map."""
        ctx, progs = self.ctx, self.programs
        pad = max(self.particle_radius, self.tube_radius)
        lo, hi = frame.lo, frame.hi
        lo, hi = lo - pad, hi + pad
        for center, radius in frame.spheres:
            lo = np.minimum(lo, center - radius)
            hi = np.maximum(hi, center + radius)
        lo, hi = self._colliders.extend(lo, hi)
        center = 0.5 * (lo + hi)
        radius = 0.5 * float(np.linalg.norm(hi - lo)) + 1e-6
        light = LIGHT_DIRECTION_PLANAR if self.planar else LIGHT_DIRECTION
        if self.planar:
            receiver = (center[2] - self._backdrop_z()) / light[2]
        else:
            receiver = (center[1] - self._floor_height(frame.ground)) / light[1]
        lf = fit_light(light, center, radius, float(receiver) + radius,
                       self.shadow_map.resolution)
        self._light = lf
        res = self.shadow_map.resolution
        self.shadow_map.begin()
        ctx.viewport = (0, 0, res, res)
        ctx.polygon_offset = (2.0, 4.0)     # slope-scaled bias against shadow acne
        for name in ("surface_depth", "tube_depth"):
            _set_matrix(progs[name], "u_view_proj", lf.view_proj)
        # A cloth casts from its (coarse) surface in every mode: cheaper than its particles.
        bias = 0.0
        if self.has_surface:
            self.shadow_stride = self._cast_stride()
            # the shadow comes from a coarser grid: keep its cells from shading the fine one
            bias = 0.5 * (self.shadow_stride - 1) * self.spacing
            _set(progs["surface_depth"], "u_offset_scale", (0.0, 0.0, 0.0, 1.0))
            self._lod_vaos(self.shadow_stride)[1].render(moderngl.TRIANGLES)
        elif frame.tube or frame.all_particles:
            # tubes, or for the line modes the particles, as balls
            prog = progs["particles_depth"]
            _set_matrix(prog, "u_view", lf.view)
            _set_matrix(prog, "u_proj", lf.proj)
            _set(prog, "u_viewport", (float(res), float(res)))
            _set(prog, "u_min_px", 0.0)
            _set(prog, "u_plain_scale", 1.0)
            _set(prog, "u_radius_m", self.tube_radius if frame.tube else self.particle_radius)
            self._vao_particles_depth.render(moderngl.POINTS)
        if frame.tube:
            prog = progs["tube_depth"]
            _set(prog, "u_radius_m", self.tube_radius)
            _set(prog, "u_min_px", 0.0)
            _set(prog, "u_segments", TUBE_SEGMENTS)
            self._tube.draw(1)
        prog = progs["surface_depth"]
        for center, radius in frame.spheres:
            _set(prog, "u_offset_scale", (*map(float, center), self._drawn_sphere_radius(radius)))
            self._sphere_vaos["surface_depth"].render(moderngl.TRIANGLES)
        self._colliders.draw_depth()
        ctx.polygon_offset = (0.0, 0.0)
        for prog in self.programs.values():
            _set(prog, "u_receiver_bias_m", bias)
            _set_matrix(prog, "u_light_vp", lf.view_proj)
            _set(prog, "u_shadow_texel_m", float(lf.texel_m))
            _set(prog, "u_light_depth_m", float(lf.depth_m))

    def _floor_plane(self, ground: float | None) -> tuple[tuple[float, float, float],
                                                          tuple[float, float, float]]:
        """A point (m) and the unit normal of the floor, or of a planar scene's backdrop."""
        if self.planar:
            return (0.0, 0.0, self._backdrop_z()), (0.0, 0.0, 1.0)
        return (0.0, self._floor_height(ground), 0.0), (0.0, 1.0, 0.0)

    def _draw_floor_shadow(self, ground: float | None) -> None:
        """The floor's soft shadow and contact occlusion into the floor-shadow texture."""
        prog = self.programs["floor_shadow"]
        point, normal = self._floor_plane(ground)
        inverse = np.linalg.inv(self._light.view_proj.astype(np.float64))
        _set_matrix(prog, "u_light_vp_inverse", inverse)
        _set(prog, "u_plane_point", point)
        _set(prog, "u_plane_normal", normal)
        _set(prog, "u_shadows", True)
        self.shadow_map.bind(_UNIT_SHADOW_COMPARE, _UNIT_SHADOW_RAW)
        self.shadow_map.begin_floor()
        self.ctx.disable(moderngl.DEPTH_TEST)
        self._floor_shadow_vao.render(moderngl.TRIANGLE_STRIP)
        self.ctx.enable(moderngl.DEPTH_TEST)
        self.shadow_map.unbind(_UNIT_SHADOW_COMPARE)

    def _cast_stride(self) -> int:
        """Grid stride of the cloth that casts the shadow: at most SHADOW_CAST_CELLS cells."""
        if self._grid_shape is None:
            return 1
        cells = max(self._grid_shape) - 1
        stride = 1
        while stride < LOD_STRIDES[-1] and cells / stride > SHADOW_CAST_CELLS:
            stride *= 2
        return stride

    def _view_stride(self, frame: _Frame) -> int:
        """Grid stride of the drawn cloth: coarser while its cells, at the depth of the
        cloth's centre, are under LOD_CELL_PX."""
        if self._grid_shape is None:
            return 1
        center = 0.5 * (frame.lo + frame.hi)
        depth = float((center - frame.eye) @ frame.forward)
        if depth <= 1e-9:
            return 1
        cell_px = self.spacing * float(frame.proj[1, 1]) * 0.5 * frame.viewport[1] / depth
        stride = 1
        for s in LOD_STRIDES:
            if s * cell_px <= LOD_CELL_PX:
                stride = s
        return stride

    # -- passes -------------------------------------------------------------------
    def _floor_height(self, ground: float | None) -> float:
        """y of the floor: the Ground contact, else a little below the scene (m)."""
        return ground if ground is not None else self._lowest - 0.25 * self.extent

    def _backdrop_z(self) -> float:
        """z of a planar scene's backdrop grid (m)."""
        return -BACKDROP_GAP * self.extent

    def _drawn_sphere_radius(self, radius: float) -> float:
        # Particles rest on the obstacle's surface; the triangles between them cut
        # chords into it. Drawing the ball a particle (or tube) radius smaller keeps
        # it from poking through a cloth or rope lying on it.
        inset = self.tube_radius if self.has_tube else self.particle_radius
        return max(radius - inset, 0.5 * radius)

    def _contact_uniforms(self, prog: moderngl.Program, ground: float | None) -> None:
        _set(prog, "u_ground_y", float(ground) if ground is not None else 0.0)
        _set(prog, "u_contact_m", CONTACT_SPACINGS * self.spacing
             if ground is not None and not self.planar else 0.0)

    def _draw_surface(self, frame: _Frame, opts: RenderOptions) -> None:
        prog = self.programs["cloth"]
        prog["u_offset_scale"].value = (0.0, 0.0, 0.0, 1.0)
        prog["u_front_color"].value = CLOTH_FRONT
        prog["u_back_color"].value = CLOTH_BACK
        _set(prog, "u_spec", 0.06)
        _set(prog, "u_fabric", True)
        _set(prog, "u_stripe", float(self._stripe))
        _set(prog, "u_strain", bool(opts.strain_colors))
        self._contact_uniforms(prog, frame.ground)
        self.lod_stride = self._view_stride(frame)
        # Push the cloth back a little so springs drawn on top do not z-fight.
        self.ctx.polygon_offset = (1.0, 1.0)
        self._lod_vaos(self.lod_stride)[0].render(moderngl.TRIANGLES)
        self.ctx.polygon_offset = (0.0, 0.0)

    def _draw_tube(self, opts: RenderOptions) -> None:
        """Springs as lit cylinders, joints as sphere impostors of the same radius."""
        prog = self.programs["tube"]
        prog["u_front_color"].value = ROPE_COLOR
        prog["u_back_color"].value = ROPE_COLOR
        _set(prog, "u_spec", TUBE_SPEC)
        _set(prog, "u_fabric", False)
        _set(prog, "u_strain", bool(opts.strain_colors))
        _set(prog, "u_radius_m", self.tube_radius)
        _set(prog, "u_min_px", TUBE_MIN_PX)
        _set(prog, "u_segments", TUBE_SEGMENTS)
        self._contact_uniforms(prog, None)
        self._tube.draw(0)
        prog = self.programs["particles"]
        # a little thinner than the tube: where both overlap the cylinder shows (no seam),
        # the ball only fills the wedge a bend opens
        self._particle_uniforms(prog, opts, JOINT_SHARE * self.tube_radius,
                                JOINT_SHARE * TUBE_MIN_PX, 1.0)
        prog["u_palette"].value = (ROPE_COLOR,) + PARTICLE_PALETTE[1:]
        _set(prog, "u_spec", TUBE_SPEC)         # shaded like the cylinders they join
        # joints are opaque (no rim blending): they sit inside the tube's silhouette
        self._vao_particles.render(moderngl.POINTS)

    def _draw_spheres(self, spheres: list[tuple[np.ndarray, float]]) -> None:
        if not spheres:
            return
        prog = self.programs["surface"]
        prog["u_front_color"].value = SPHERE_COLOR
        prog["u_back_color"].value = SPHERE_COLOR
        _set(prog, "u_spec", 0.35)
        _set(prog, "u_fabric", False)
        _set(prog, "u_strain", False)
        _set(prog, "u_contact_m", 0.0)
        for center, radius in spheres:
            prog["u_offset_scale"].value = (*map(float, center), self._drawn_sphere_radius(radius))
            self._sphere_vaos["surface"].render(moderngl.TRIANGLES)

    def _line_uniforms(self, width_px: float, color: Color, color_mode: int) -> moderngl.Program:
        prog = self.programs["lines"]
        prog["u_width_px"].value = float(width_px)
        _set(prog, "u_color", tuple(color))
        _set(prog, "u_color_mode", int(color_mode))
        return prog

    def _draw_springs(self, opts: RenderOptions, color: Color) -> None:
        """Springs in one colour and at most GL_LINE_MAX_PX wide as the rasteriser's own
        lines (two vertices a spring), else (strain colours, wider) as quads."""
        if not opts.strain_colors and opts.spring_width_px <= GL_LINE_MAX_PX:
            prog = self.programs["gl_lines"]
            prog["u_color"].value = tuple(color)
            self.ctx.line_width = float(opts.spring_width_px)
            self._vao_gl_lines.render(moderngl.LINES, vertices=2 * self._lines.shown)
            self.ctx.line_width = 1.0
            return
        self._line_uniforms(opts.spring_width_px, color, 1 if opts.strain_colors else 0)
        self._lines.draw(0)

    def _draw_axes(self, width_px: float) -> None:
        prog = self._line_uniforms(width_px, AXIS_COLORS[0], 2)
        _set(prog, "u_palette", AXIS_COLORS)
        self._axes_tex.use(_UNIT_POSITIONS)
        self._axes.draw(0)
        self._pos_tex.use(_UNIT_POSITIONS)

    def _particle_uniforms(self, prog: moderngl.Program, opts: RenderOptions, radius: float,
                           min_px: float, plain_scale: float) -> None:
        prog["u_plain_scale"].value = plain_scale
        prog["u_radius_m"].value = radius
        prog["u_min_px"].value = float(min_px)
        prog["u_palette"].value = PARTICLE_PALETTE
        _set(prog, "u_strain", bool(opts.strain_colors))
        _set(prog, "u_spec", 0.45)

    def _draw_particles(self, frame: _Frame, opts: RenderOptions) -> None:
        """Every particle, or only the flagged ones (pinned, hovered, grabbed) as
        markers on a surface or tube."""
        if not frame.all_particles and not self.n_flagged:
            return
        prog = self.programs["particles"]
        # on a surface or tube the plain particles are small markers, so the body stays readable
        body = frame.surface or frame.tube
        self._particle_uniforms(prog, opts, self.particle_radius, opts.particle_min_px,
                                0.55 if frame.surface else 1.0)
        # Blending only smooths the one-pixel rim of each sprite.
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_func = BLEND_OVER
        if frame.all_particles:
            self._vao_particles.render(moderngl.POINTS)
        else:
            self._vao_flagged.render(moderngl.POINTS, vertices=self.n_flagged)
        self.ctx.disable(moderngl.BLEND)

    def _draw_grid(self, ground: float | None, background: Color, shadows: bool) -> None:
        """Ground grid at the Ground contact's height (else below the scene), or for
        planar scenes a backdrop grid in the xy plane behind z = 0; it receives the
        shadows. Opaque: it fades into ``background`` itself (no blending, which
        costs a software rasteriser per sample under MSAA). With ``shadows`` the part
        the light's frustum reaches is drawn first with the shadow lookup, and the
        rest of the floor after it without (the depth test keeps the first)."""
        # a planar scene's ground, seen edge-on, gets its line (a variant of the shader)
        name = "grid_ground_line" if self.planar and ground is not None else "grid"
        half = 4.0 * self.extent
        cx, cy, _ = (float(v) for v in self._center)
        if self.planar:
            origin = (cx, cy, self._backdrop_z())
            axis_u, axis_v = (half, 0.0, 0.0), (0.0, half, 0.0)
        else:
            origin = (cx, self._floor_height(ground), float(self._center[2]))
            axis_u, axis_v = (half, 0.0, 0.0), (0.0, 0.0, half)
        reach = self._light_reach(ground, origin, half) if shadows else None
        if reach is not None:
            self._reach_vbo.write(reach)
            # the rest behind the reach's part (drawn first) where they overlap
            passes = [(name, self._reach_vaos[name], (2.0, 2.0)),
                      (name + "_unshadowed", self._grid_vaos[name + "_unshadowed"], (3.0, 3.0))]
        else:   # all of it with the lookup (or, without shadows, none of it)
            name = name if shadows else name + "_unshadowed"
            passes = [(name, self._grid_vaos[name], (2.0, 2.0))]
        for program, vao, offset in passes:
            prog = self.programs[program]
            prog["u_origin"].value = origin
            prog["u_axis_u"].value = axis_u
            prog["u_axis_v"].value = axis_v
            prog["u_cell"].value = self.grid_cell
            prog["u_major"].value = 10.0
            prog["u_line_color"].value = GRID_LINE_COLOR
            prog["u_fill_color"].value = GRID_FILL_COLOR
            prog["u_fill_alpha"].value = 0.85
            _set(prog, "u_ground_y", float(ground) if ground is not None else 0.0)
            _set(prog, "u_background", tuple(float(c) for c in background[:3]))
            # Behind anything lying on the ground (cloth, rope) rather than z-fighting with it.
            self.ctx.polygon_offset = offset
            vao.render(moderngl.TRIANGLE_STRIP)
        self.ctx.polygon_offset = (0.0, 0.0)

    def _light_reach(self, ground: float | None, origin: tuple[float, float, float],
                     half: float) -> np.ndarray | None:
        """(4, 2) float32 corners, in the floor quad's coordinates (origin + u * half
        along the first plane axis + v * half along the second), of where the light's
        frustum meets the floor (outside it nothing casts a shadow), in strip order;
        None when a corner ray of the frustum misses the floor within its depth range."""
        point, normal = self._floor_plane(ground)
        inverse = np.linalg.inv(self._light.view_proj.astype(np.float64))
        corners = np.array([[x, y] for y in (-1.0, 1.0) for x in (-1.0, 1.0)])
        near = np.column_stack([corners, -np.ones(4), np.ones(4)]) @ inverse
        far = np.column_stack([corners, np.ones(4), np.ones(4)]) @ inverse
        p0, p1 = near[:, :3] / near[:, 3:], far[:, :3] / far[:, 3:]
        along = (p1 - p0) @ np.asarray(normal)
        if np.any(np.abs(along) < 1e-9):
            return None
        t = ((np.asarray(point) - p0) @ np.asarray(normal)) / along
        if np.any(t < 0.0) or np.any(t > 1.0) or not np.all(np.isfinite(t)):
            return None
        hits = p0 + t[:, None] * (p1 - p0) - np.asarray(origin)
        u_axis, v_axis = (0, 1) if self.planar else (0, 2)
        return np.ascontiguousarray(hits[:, [u_axis, v_axis]] / half, dtype=np.float32)

    def frame_grabber(self, width: int, height: int, samples: int = 4) -> FrameGrabber:
        """A FrameGrabber of this size kept by the renderer (re-created only on a size change)."""
        g = self._grabber
        wanted = (width, height, clamp_samples(self.ctx, samples))
        if g is None or (g.width, g.height, g.target.samples) != wanted:
            if g is not None:
                g.release()
            g = self._grabber = FrameGrabber(self.ctx, width, height, samples)
        return g
