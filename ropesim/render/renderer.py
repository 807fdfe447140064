"""Draw a :class:`~ropesim.engine.simulation.Simulation` with moderngl into any framebuffer.

The same code serves the interactive viewer (moderngl-window's default
framebuffer) and headless rendering (an EGL context and an offscreen target from
:mod:`ropesim.render.offscreen`), so nothing here depends on moderngl-window.

A :class:`Renderer` builds its programs (GLSL from ``shaders/``), vertex
buffers and index buffers once per scene. Every frame it writes the particle
positions into the existing position buffer and recomputes vertex normals with
the numba kernel into a preallocated array; particle flags (pinned / hovered /
grabbed) are re-uploaded only when they change. Strain colouring runs entirely
in the geometry shader.

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

from ..io.paths import shader_dir
from .offscreen import FrameGrabber, clamp_samples
from .surface import vertex_normals

__all__ = ["WIREFRAME_MODES", "RenderOptions", "Renderer", "load_shader_source"]

WIREFRAME_MODES = ("surface", "surface+springs", "springs+particles")

# Particle flag bits, as read by shaders/particles.vert.
FLAG_PINNED = 1
FLAG_HOVERED = 2
FLAG_GRABBED = 4

Color = Sequence[float]

# Palette (sRGB).
CLOTH_FRONT = (0.84, 0.40, 0.31)
CLOTH_BACK = (0.32, 0.56, 0.70)
SPHERE_COLOR = (0.62, 0.66, 0.72)
SPRING_COLOR = (0.52, 0.60, 0.72)           # springs on their own
SPRING_ON_SURFACE_COLOR = (0.42, 0.17, 0.13)  # springs drawn over the cloth
PARTICLE_PALETTE = (
    (0.94, 0.95, 0.97),   # plain
    (1.00, 0.60, 0.10),   # pinned
    (0.30, 0.88, 1.00),   # hovered
    (0.35, 1.00, 0.45),   # grabbed
)
AXIS_COLORS = ((0.92, 0.25, 0.22), (0.35, 0.85, 0.30), (0.28, 0.50, 1.00))
GRID_LINE_COLOR = (0.46, 0.49, 0.56)
GRID_FILL_COLOR = (0.17, 0.18, 0.21)


@dataclass
class RenderOptions:
    """What to draw and how; all fields can be changed between frames.

    mode : one of WIREFRAME_MODES. Systems without triangles always draw
        springs and particles.
    strain_colors : colour springs by strain (compressed blue, rest grey,
        stretched red), saturating at +-``strain_scale``.
    strain_scale : strain (l - L) / L at which the colour saturates, dimensionless.
    show_grid, show_axes : the reference grid and the RGB (x, y, z) axes at the origin.
    hovered, grabbed : particle indices to highlight, or None. ``grabbed=None``
        falls back to the simulation's own ``sim.grabbed``.
    spring_width_px : spring line width in framebuffer pixels.
    particle_min_px : smallest particle sprite diameter in pixels.
    background : sRGB clear colour.
    """

    mode: str = "surface"
    strain_colors: bool = False
    strain_scale: float = 0.05
    show_grid: bool = True
    show_axes: bool = True
    hovered: int | None = None
    grabbed: int | None = None
    spring_width_px: float = 2.0
    particle_min_px: float = 3.0
    background: Color = (0.12, 0.13, 0.16)

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


def _program(ctx: moderngl.Context, vertex: str, fragment: str,
             geometry: str | None = None) -> moderngl.Program:
    names = [vertex, fragment] + ([geometry] if geometry else [])
    try:
        return ctx.program(
            vertex_shader=load_shader_source(vertex),
            fragment_shader=load_shader_source(fragment),
            geometry_shader=load_shader_source(geometry) if geometry else None,
        )
    except moderngl.Error as exc:
        raise RuntimeError(f"building shader program {' + '.join(names)} failed: {exc}") from exc


def _set(prog: moderngl.Program, name: str, value: Any) -> None:
    """Set a uniform if the compiled program still has it (unused ones are dropped)."""
    if name in prog:
        prog[name].value = value


def _set_matrix(prog: moderngl.Program, name: str, matrix: np.ndarray) -> None:
    if name in prog:
        prog[name].write(matrix.tobytes())


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


# --- the renderer ------------------------------------------------------------------

class Renderer:
    """GL resources for one scene and the code that draws it.

    Parameters
    ----------
    ctx : the moderngl context to draw with (any framebuffer of it).
    sim : a Simulation (``system``, ``positions``, ``pinned``, ``grabbed``, ``contacts``).
    particle_radius : sprite radius in m; default 0.2 (cloth) or 0.3 (others) times the
        short spring rest lengths.
    """

    def __init__(self, ctx: moderngl.Context, sim: Any, *,
                 particle_radius: float | None = None) -> None:
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
            "lines": _program(ctx, "lines.vert", "lines.frag", "lines.geom"),
            "particles": _program(ctx, "particles.vert", "particles.frag"),
            "grid": _program(ctx, "grid.vert", "grid.frag"),
        }
        self._build_static()
        self.sim = None
        self.rebuild(sim)

    # -- building ---------------------------------------------------------------
    def _build_static(self) -> None:
        """Meshes that do not depend on the scene: the grid quad and the unit sphere."""
        ctx, progs = self.ctx, self.programs
        corners = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], dtype=np.float32)
        self._grid_vbo = ctx.buffer(corners.tobytes())
        self._grid_vao = ctx.vertex_array(progs["grid"], [(self._grid_vbo, "2f", "in_corner")])
        verts, tris = uv_sphere()
        self._sphere_vbo = ctx.buffer(verts.tobytes())
        self._sphere_ibo = ctx.buffer(tris.tobytes())
        self._sphere_vao = ctx.vertex_array(
            progs["surface"],
            [(self._sphere_vbo, "3f", "in_position"), (self._sphere_vbo, "3f", "in_normal")],
            index_buffer=self._sphere_ibo, index_element_size=4,
        )
        self._static = [self._grid_vao, self._grid_vbo,
                        self._sphere_vao, self._sphere_vbo, self._sphere_ibo]

    def rebuild(self, sim: Any) -> None:
        """Replace the scene: free its buffers and build new ones for ``sim``."""
        self._release_scene()
        ctx, progs = self.ctx, self.programs
        system = sim.system
        positions = np.asarray(sim.positions)
        n = positions.shape[0]
        if positions.shape != (n, 3):
            raise ValueError(f"sim.positions: expected shape (n, 3), got {positions.shape}")
        self.sim = sim
        self.n_particles = n

        self._pos32 = np.empty((n, 3), dtype=np.float32)
        self._flags = np.zeros(n, dtype=np.uint32)
        self._last_pinned = np.zeros(n, dtype=bool)
        self._last_marks: tuple[int | None, int | None] | None = None  # forces a first upload
        self.flag_uploads = 0   # how often the flags buffer was written (for tests/diagnostics)
        self._vbo_pos = ctx.buffer(reserve=n * 12, dynamic=True)
        self._vbo_flags = ctx.buffer(reserve=n * 4, dynamic=True)
        self._scene += [self._vbo_pos, self._vbo_flags]

        springs = np.asarray(system.springs, dtype=np.uint32).reshape(-1, 2)
        self.n_springs = springs.shape[0]
        self._ibo_springs = self._vao_springs = self._rest_tex = None
        if self.n_springs:
            self._ibo_springs = ctx.buffer(np.ascontiguousarray(springs).tobytes())
            self._vao_springs = ctx.vertex_array(
                progs["lines"], [(self._vbo_pos, "3f", "in_position")],
                index_buffer=self._ibo_springs, index_element_size=4,
            )
            rest = getattr(sim, "rest_lengths", None)
            self._rest_tex = self._rest_length_texture(
                np.asarray(system.rest_lengths if rest is None else rest))
            self._scene += [self._vao_springs, self._ibo_springs, self._rest_tex]

        self._vao_particles = ctx.vertex_array(
            progs["particles"],
            [(self._vbo_pos, "3f", "in_position"), (self._vbo_flags, "u4", "in_flags")],
        )
        self._scene.append(self._vao_particles)

        tris = system.triangles
        self._triangles = None
        self._normals = None
        self._vbo_normals = self._ibo_tris = self._vao_surface = None
        if tris is not None and len(tris):
            self._triangles = np.ascontiguousarray(tris, dtype=np.int64).reshape(-1, 3)
            self._normals = np.zeros((n, 3), dtype=np.float32)
            self._vbo_normals = ctx.buffer(reserve=n * 12, dynamic=True)
            self._ibo_tris = ctx.buffer(self._triangles.astype(np.uint32).tobytes())
            self._vao_surface = ctx.vertex_array(
                progs["surface"],
                [(self._vbo_pos, "3f", "in_position"), (self._vbo_normals, "3f", "in_normal")],
                index_buffer=self._ibo_tris, index_element_size=4,
            )
            self._scene += [self._vao_surface, self._vbo_normals, self._ibo_tris]

        self._frame_scene(positions, np.asarray(system.rest_lengths), bool(system.planar))
        axes = np.zeros((6, 3), dtype=np.float32)   # origin -> x, origin -> y, origin -> z
        axes[1, 0] = axes[3, 1] = axes[5, 2] = self.axis_length
        self._axes_vbo = ctx.buffer(axes.tobytes())
        self._axes_vao = ctx.vertex_array(progs["lines"], [(self._axes_vbo, "3f", "in_position")])
        self._scene += [self._axes_vao, self._axes_vbo]
        self.update(sim)

    def _rest_length_texture(self, rest: np.ndarray) -> moderngl.Texture:
        """Rest lengths (m) in a one-channel float texture, row-major by spring index.

        moderngl has no buffer textures, so a 2-D texture of at most 4096 columns
        stands in for one; lines.geom reads it with texelFetch(gl_PrimitiveIDIn).
        """
        m = rest.shape[0]
        cols = min(m, 4096)
        rows = -(-m // cols)
        data = np.zeros(rows * cols, dtype=np.float32)
        data[:m] = rest
        tex = self.ctx.texture((cols, rows), 1, data.tobytes(), dtype="f4")
        tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
        return tex

    def _frame_scene(self, positions: np.ndarray, rest: np.ndarray, planar: bool) -> None:
        """Sizes derived from the initial scene: particle radius, grid and axes (m)."""
        lo = positions.min(axis=0)
        hi = positions.max(axis=0)
        extent = float(np.max(hi - lo))
        positive = rest[rest > 0]
        if not extent > 0:
            extent = float(np.percentile(positive, 50)) if positive.size else 1.0
        self.extent = extent
        if self._requested_radius is not None:
            self.particle_radius = float(self._requested_radius)
        elif positive.size:
            # Smaller on a cloth, where the surface carries the picture, than on a rope.
            share = 0.2 if self._triangles is not None else 0.3
            self.particle_radius = share * float(np.percentile(positive, 10))
        else:
            self.particle_radius = 0.01 * extent
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
            "springs": self._ibo_springs,
            "triangles": self._ibo_tris,
        }

    @property
    def has_surface(self) -> bool:
        return self._vao_surface is not None

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
        if self._triangles is not None:
            vertex_normals(pos, self._triangles, self._normals)
            self._vbo_normals.write(self._normals)

    def _update_flags(self, options: RenderOptions) -> None:
        """Re-upload particle flags, only when pins, hover or grab changed."""
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
        self.flag_uploads += 1
        np.copyto(self._last_pinned, pinned)
        self._last_marks = marks

    def draw(self, camera: Any, width: int, height: int,
             options: RenderOptions | None = None, *, clear: bool = True) -> None:
        """Upload the current state and draw the scene into the bound framebuffer.

        width, height : framebuffer size in pixels (sets the viewport).
        clear : clear colour (to ``options.background``) and depth first.

        Leaves blending off and the polygon offset at zero; enables depth testing
        and program point size.
        """
        opts = RenderOptions() if options is None else options
        opts.validate()
        if width < 1 or height < 1:
            raise ValueError(f"width, height: must be >= 1 px, got {width}x{height}")
        ctx = self.ctx
        self.update()
        self._update_flags(opts)

        ctx.viewport = (0, 0, int(width), int(height))
        if clear:
            bg = tuple(opts.background)
            ctx.clear(bg[0], bg[1], bg[2], 1.0, depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST | moderngl.PROGRAM_POINT_SIZE)
        ctx.disable(moderngl.CULL_FACE | moderngl.BLEND)

        view = np.asarray(camera.view_matrix(), dtype=np.float32)
        proj = np.asarray(camera.projection_matrix(width / height), dtype=np.float32)
        viewport = (float(width), float(height))
        for prog in self.programs.values():
            _set_matrix(prog, "u_view", view)
            _set_matrix(prog, "u_proj", proj)
            _set(prog, "u_viewport", viewport)

        ground, spheres = _obstacles(getattr(self.sim, "contacts", ()))
        surface = self.has_surface and opts.mode in ("surface", "surface+springs")
        springs = not surface or opts.mode == "surface+springs"
        particles_all = not surface or opts.mode == "surface+springs"

        if surface:
            self._draw_surface()
        self._draw_spheres(spheres)
        if springs and self._vao_springs is not None:
            color = SPRING_ON_SURFACE_COLOR if surface else SPRING_COLOR
            self._draw_springs(opts, color)
        if opts.show_axes:
            self._draw_axes(opts.spring_width_px + 1.0)
        # on a surface the plain particles are small markers, so the cloth stays readable
        self._draw_particles(opts, only_flagged=not particles_all,
                             plain_scale=0.55 if surface else 1.0)
        if opts.show_grid:
            self._draw_grid(ground)
        ctx.disable(moderngl.BLEND)

    def _draw_surface(self) -> None:
        prog = self.programs["surface"]
        prog["u_offset_scale"].value = (0.0, 0.0, 0.0, 1.0)
        prog["u_front_color"].value = CLOTH_FRONT
        prog["u_back_color"].value = CLOTH_BACK
        _set(prog, "u_spec", 0.12)
        # Push the cloth back a little so springs drawn on top do not z-fight.
        self.ctx.polygon_offset = (1.0, 1.0)
        self._vao_surface.render(moderngl.TRIANGLES)
        self.ctx.polygon_offset = (0.0, 0.0)

    def _draw_spheres(self, spheres: list[tuple[np.ndarray, float]]) -> None:
        if not spheres:
            return
        prog = self.programs["surface"]
        prog["u_front_color"].value = SPHERE_COLOR
        prog["u_back_color"].value = SPHERE_COLOR
        _set(prog, "u_spec", 0.35)
        for center, radius in spheres:
            # Particles rest on the obstacle's surface; the triangles between them cut
            # chords into it. Drawing the ball a particle radius smaller keeps it from
            # poking through a cloth lying on it.
            drawn = max(radius - self.particle_radius, 0.5 * radius)
            prog["u_offset_scale"].value = (*map(float, center), drawn)
            self._sphere_vao.render(moderngl.TRIANGLES)

    def _line_uniforms(self, width_px: float, color: Color, strain: bool,
                       strain_scale: float = 1.0) -> moderngl.Program:
        prog = self.programs["lines"]
        prog["u_width_px"].value = float(width_px)
        prog["u_color"].value = tuple(color)
        _set(prog, "u_strain", bool(strain))
        _set(prog, "u_strain_scale", float(strain_scale))
        return prog

    def _draw_springs(self, opts: RenderOptions, color: Color) -> None:
        prog = self._line_uniforms(opts.spring_width_px, color, opts.strain_colors,
                                   opts.strain_scale)
        self._rest_tex.use(location=0)
        _set(prog, "u_rest", 0)
        self._vao_springs.render(moderngl.LINES)

    def _draw_axes(self, width_px: float) -> None:
        for axis, color in enumerate(AXIS_COLORS):
            self._line_uniforms(width_px, color, False)
            self._axes_vao.render(moderngl.LINES, vertices=2, first=2 * axis)

    def _draw_particles(self, opts: RenderOptions, only_flagged: bool,
                        plain_scale: float = 1.0) -> None:
        prog = self.programs["particles"]
        prog["u_plain_scale"].value = plain_scale
        prog["u_radius_m"].value = self.particle_radius
        prog["u_min_px"].value = float(opts.particle_min_px)
        prog["u_only_flagged"].value = bool(only_flagged)
        prog["u_palette"].value = PARTICLE_PALETTE
        # Blending only smooths the one-pixel rim of each sprite.
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        self._vao_particles.render(moderngl.POINTS)
        self.ctx.disable(moderngl.BLEND)

    def _draw_grid(self, ground: float | None) -> None:
        """Ground grid at the Ground contact's height (else below the scene), or for
        planar scenes a backdrop grid in the xy plane behind z = 0."""
        prog = self.programs["grid"]
        half = 4.0 * self.extent
        cx, cy, _ = (float(v) for v in self._center)
        if self.planar:
            origin = (cx, cy, -0.02 * self.extent)
            axis_u, axis_v = (half, 0.0, 0.0), (0.0, half, 0.0)
        else:
            height = ground if ground is not None else self._lowest - 0.25 * self.extent
            origin = (cx, height, float(self._center[2]))
            axis_u, axis_v = (half, 0.0, 0.0), (0.0, 0.0, half)
        prog["u_origin"].value = origin
        prog["u_axis_u"].value = axis_u
        prog["u_axis_v"].value = axis_v
        prog["u_cell"].value = self.grid_cell
        prog["u_major"].value = 10.0
        prog["u_line_color"].value = GRID_LINE_COLOR
        prog["u_fill_color"].value = GRID_FILL_COLOR
        prog["u_fill_alpha"].value = 0.55 if ground is not None else 0.2
        _set(prog, "u_shade_below", self.planar and ground is not None)
        _set(prog, "u_ground_y", float(ground) if ground is not None else 0.0)
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        # Behind anything lying on the ground (cloth, rope) rather than z-fighting with it.
        self.ctx.polygon_offset = (2.0, 2.0)
        self._grid_vao.render(moderngl.TRIANGLE_STRIP)
        self.ctx.polygon_offset = (0.0, 0.0)
        self.ctx.disable(moderngl.BLEND)

    def frame_grabber(self, width: int, height: int, samples: int = 4) -> FrameGrabber:
        """A FrameGrabber of this size kept by the renderer (re-created only on a size change)."""
        g = self._grabber
        wanted = (width, height, clamp_samples(self.ctx, samples))
        if g is None or (g.width, g.height, g.target.samples) != wanted:
            if g is not None:
                g.release()
            g = self._grabber = FrameGrabber(self.ctx, width, height, samples)
        return g
