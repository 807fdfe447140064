"""The default look (issue 12), checked on pixels of offscreen EGL frames: fabric
without spring lines, two-sided colours, shadows on the floor, ropes as lit tubes,
strain colouring of surfaces and tubes, MSAA; and the sizing helpers behind them
(scene spacing, tube springs, the cloth's coarser triangle grids)."""

from __future__ import annotations

import moderngl
import numpy as np
import pytest

from ropesim.engine.builders import cloth, random_network, rope
from ropesim.engine.contacts import Ground
from ropesim.engine.simulation import Simulation
from ropesim.render import renderer as render
from ropesim.render.camera import OrbitCamera
from ropesim.render.renderer import (
    STRAIN_STOPS,
    Renderer,
    RenderOptions,
    grid_triangles,
    strain_color_stops,
)
from ropesim.render.shadow import LIGHT_DIRECTION
from ropesim.render.surface import compute_normals
from ropesim.render.tube import SPRITE_RADIUS_SHARE_ROPE, scene_spacing, tube_springs
from test_renderer import ctx  # noqa: F401  (the EGL context fixture, shared)

W, H = 320, 240
BARE = dict(show_grid=False)   # axes are off by default


def render_frame(ctx: moderngl.Context, renderer: Renderer, camera: OrbitCamera, width: int,
                 height: int, options: RenderOptions, samples: int = 4) -> np.ndarray:
    """One offscreen frame through the renderer's own kept FrameGrabber."""
    assert renderer.ctx is ctx
    return renderer.frame_grabber(width, height, samples).grab(renderer, camera, options)


def face_on(sim: Simulation) -> OrbitCamera:
    cam = OrbitCamera()
    cam.frame(sim.positions, planar=True, aspect=W / H)
    return cam


def pixels_of(cam: OrbitCamera, points: np.ndarray) -> np.ndarray:
    px, _ = cam.project(np.asarray(points, dtype=float), W, H)
    assert np.all(np.isfinite(px))
    return px.astype(int)


def inner_block(img: np.ndarray, cam: OrbitCamera, sim: Simulation, margin: float) -> np.ndarray:
    """The pixels well inside a face-on cloth's projected rectangle, (k, 3) int."""
    px = pixels_of(cam, sim.positions)
    lo, hi = px.min(axis=0), px.max(axis=0)
    pad = (margin * (hi - lo)).astype(int)
    block = img[lo[1] + pad[1]:hi[1] - pad[1], lo[0] + pad[0]:hi[0] - pad[0]]
    return block.reshape(-1, 3).astype(int)


# --- fabric -------------------------------------------------------------------------------

def test_default_mode_draws_the_fabric_without_spring_lines(ctx) -> None:
    """Inside a flat, face-on cloth every pixel keeps the front colour's hue and
    brightness within the fabric pattern's range; surface+springs puts dark lines there."""
    sim = Simulation(cloth(16, 16, 0.06))
    cam = face_on(sim)
    r = Renderer(ctx, sim)
    default = inner_block(render_frame(ctx, r, cam, W, H, RenderOptions(**BARE)), cam, sim, 0.15)
    lines = inner_block(render_frame(ctx, r, cam, W, H,
                                     RenderOptions(mode="surface+springs", **BARE)), cam, sim, 0.15)
    r.release()
    assert RenderOptions().mode == "surface" and not RenderOptions().show_axes

    def off_palette(block: np.ndarray) -> float:
        brightness = block.sum(axis=1)
        median = np.median(brightness)
        warm = (block[:, 0] > block[:, 1]) & (block[:, 1] > block[:, 2])
        return float(np.mean(~warm | (brightness < 0.75 * median) | (brightness > 1.25 * median)))

    assert off_palette(default) == 0.0
    assert off_palette(lines) > 0.05


def test_fabric_pattern_is_visible_and_moves_with_the_cloth(ctx) -> None:
    """The gingham bands vary the brightness across the cloth (not a flat fill)."""
    sim = Simulation(cloth(24, 24, 0.05))
    cam = face_on(sim)
    r = Renderer(ctx, sim)
    block = inner_block(render_frame(ctx, r, cam, W, H, RenderOptions(**BARE)), cam, sim, 0.1)
    r.release()
    brightness = block.sum(axis=1)
    assert np.percentile(brightness, 95) - np.percentile(brightness, 5) > 25


def test_front_and_back_have_distinct_colours(ctx) -> None:
    sim = Simulation(cloth(12, 12, 0.08))
    cam = face_on(sim)
    r = Renderer(ctx, sim)
    front = inner_block(render_frame(ctx, r, cam, W, H, RenderOptions(**BARE)), cam, sim, 0.2)
    cam.orbit(180.0, 0.0)
    back = inner_block(render_frame(ctx, r, cam, W, H, RenderOptions(**BARE)), cam, sim, 0.2)
    r.release()
    f, b = front.mean(axis=0), back.mean(axis=0)
    assert f[0] > f[2] + 60, f"front should be warm, got {f}"
    assert b[2] > b[0] + 60, f"back should be cool, got {b}"


# --- shadows ------------------------------------------------------------------------------

def test_cloth_shadow_darkens_the_floor_below_it(ctx) -> None:
    """A flat cloth 0.8 m above the floor: the floor point the key light projects the
    cloth's centre onto is darker with shadows than without; a floor point far to
    the side is not."""
    height = 0.8
    sim = Simulation(cloth(12, 12, 0.06, plane="xz", pins="none"), contacts=(Ground(-height),))
    light = np.asarray(LIGHT_DIRECTION)
    under = -light * (height / light[1])          # from the cloth centre away from the light
    cam = OrbitCamera()
    cam.target = under
    cam.update({"azimuth": 200.0, "elevation": 35.0, "distance": 3.0})
    right = cam.basis()[0]
    beside = under + 1.2 * np.array([right[0], 0.0, right[2]]) / np.hypot(right[0], right[2])
    # the camera sees that floor point past the cloth's edge, not through the cloth
    eye = cam.eye
    crossing = eye + (under - eye) * (eye[1] / (eye[1] - under[1]))
    assert np.abs(crossing[[0, 2]]).max() > 0.33 + 0.05
    r = Renderer(ctx, sim)
    lit = render_frame(ctx, r, cam, W, H, RenderOptions(shadows=True))
    flat = render_frame(ctx, r, cam, W, H, RenderOptions(shadows=False))
    r.release()
    (u, v), (u2, v2) = pixels_of(cam, np.stack([under, beside]))
    assert 0 <= u < W and 0 <= v < H and 0 <= u2 < W and 0 <= v2 < H
    assert int(lit[v, u].sum()) < 0.8 * int(flat[v, u].sum()), (lit[v, u], flat[v, u])
    assert abs(int(lit[v2, u2].sum()) - int(flat[v2, u2].sum())) <= 6


# --- ropes --------------------------------------------------------------------------------

def rope_scene() -> tuple[Simulation, OrbitCamera]:
    sim = Simulation(rope(8, 1.4, origin=(-0.7, 0.0, 0.0)))
    cam = OrbitCamera()
    cam.target = np.zeros(3)
    cam.update({"azimuth": 0.0, "elevation": 0.0, "distance": 1.6})
    return sim, cam


def rope_column(img: np.ndarray, cam: OrbitCamera, x: float) -> np.ndarray:
    """The image column through the rope at x (m), halfway between two particles."""
    u = pixels_of(cam, [[x, 0.0, 0.0]])[0, 0]
    return img[:, u].astype(int)


def test_rope_is_a_lit_tube_wider_than_its_lines(ctx) -> None:
    sim, cam = rope_scene()
    r = Renderer(ctx, sim)
    tube = render_frame(ctx, r, cam, W, H, RenderOptions(**BARE))
    lines = render_frame(ctx, r, cam, W, H, RenderOptions(mode="springs+particles", **BARE))
    r.release()
    bg = np.round(np.asarray(RenderOptions().background) * 255).astype(int)
    x = -0.7 + 1.4 * 2.5 / 7            # between particles 2 and 3: no joint sprite
    column = rope_column(tube, cam, x)
    on = np.abs(column - bg).max(axis=1) > 20
    assert on.sum() >= 4, f"tube only {on.sum()} px wide"
    assert r.tube_radius == pytest.approx(render.TUBE_RADIUS_SHARE * 0.2)
    line_column = rope_column(lines, cam, x)
    assert on.sum() > (np.abs(line_column - bg).max(axis=1) > 20).sum()
    shades = column[on].sum(axis=1)
    assert shades.max() - shades.min() > 40, "a lit tube is brighter on one side"
    red, green, blue = column[on][np.argmax(shades)]
    assert red > blue + 40, "the tube has the rope colour"


def test_rope_modes_tube_or_lines_and_sprites(ctx) -> None:
    sim, cam = rope_scene()
    r = Renderer(ctx, sim)
    images = {m: render_frame(ctx, r, cam, W, H, RenderOptions(mode=m, **BARE))
              for m in render.WIREFRAME_MODES}
    r.release()
    assert r.has_tube and not r.has_surface
    assert not np.array_equal(images["surface"], images["springs+particles"])
    # surface+springs adds the particles as beads on the tube
    assert not np.array_equal(images["surface"], images["surface+springs"])


def test_tube_leaves_out_the_rope_bending_springs() -> None:
    system = rope(10, 1.0, bend=True)
    keep = tube_springs(system.springs, system.rest_lengths)
    assert keep.tolist() == list(range(9))                 # the 9 links, not the 8 (i, i+2)
    ring_like = np.array([[0, 1], [1, 2], [2, 0]])        # a triangle: nothing is redundant
    assert tube_springs(ring_like, np.ones(3)).tolist() == [0, 1, 2]


# --- strain -------------------------------------------------------------------------------

def test_strain_colours_the_surface_of_a_compressed_cloth(ctx) -> None:
    """All springs 5 % shorter than at rest: the surface turns the compression blue."""
    sim = Simulation(cloth(12, 12, 0.08))
    sim.positions[:] *= 0.95
    cam = face_on(sim)
    r = Renderer(ctx, sim)
    plain = inner_block(render_frame(ctx, r, cam, W, H, RenderOptions(**BARE)), cam, sim, 0.2)
    strain = inner_block(render_frame(ctx, r, cam, W, H,
                                      RenderOptions(strain_colors=True, **BARE)), cam, sim, 0.2)
    r.release()
    p, s = plain.mean(axis=0), strain.mean(axis=0)
    assert p[0] > p[2] + 60 and s[2] > s[0] + 60, (p, s)


def test_strain_colours_the_tube(ctx) -> None:
    sim, cam = rope_scene()
    sim.positions[:, 0] *= 1.1      # every link 10 % longer: saturated red
    r = Renderer(ctx, sim)
    img = render_frame(ctx, r, cam, W, H, RenderOptions(strain_colors=True, **BARE))
    r.release()
    column = rope_column(img, cam, -0.7 * 1.1 + 1.54 * 2.5 / 7)
    brightest = column[np.argmax(column.sum(axis=1))]
    assert brightest[0] > brightest[1] + 60 and brightest[0] > brightest[2] + 60, brightest


def test_strain_colour_stops_for_a_legend() -> None:
    stops = strain_color_stops(0.1)
    assert [value for value, _ in stops] == pytest.approx([-0.1, 0.0, 0.1])
    assert [color for _, color in stops] == [color for _, color in STRAIN_STOPS]
    blue, grey, red = (color for _, color in stops)
    assert blue[2] > blue[0] and red[0] > red[2] and max(grey) - min(grey) < 0.1
    with pytest.raises(ValueError, match="strain_scale"):
        strain_color_stops(0.0)


# --- antialiasing, axes ---------------------------------------------------------------------

def test_draw_works_with_msaa_4_and_smooths_edges(ctx) -> None:
    sim = Simulation(cloth(10, 10, 0.1))
    cam = OrbitCamera()
    cam.frame(sim.positions, aspect=W / H)
    cam.orbit(20.0, 10.0)
    r = Renderer(ctx, sim)
    opts = RenderOptions(**BARE)
    plain = render_frame(ctx, r, cam, W, H, opts, samples=0)
    msaa = render_frame(ctx, r, cam, W, H, opts, samples=4)
    r.release()
    bg = np.round(np.asarray(opts.background) * 255).astype(int)
    cover_plain = (np.abs(plain.astype(int) - bg).max(axis=-1) > 6).mean()
    cover_msaa = (np.abs(msaa.astype(int) - bg).max(axis=-1) > 6).mean()
    assert cover_plain > 0.1 and abs(cover_plain - cover_msaa) < 0.02
    # edge pixels blend cloth and background: more distinct colours along the silhouette
    distinct = [len(np.unique(img.reshape(-1, 3), axis=0)) for img in (plain, msaa)]
    assert distinct[1] > distinct[0]


def test_axes_are_off_by_default_and_drawn_on_request(ctx) -> None:
    sim = Simulation(cloth(4, 4, 0.1, origin=(2.0, 0.0, 0.0)))   # keep the origin clear
    cam = OrbitCamera()
    cam.target = np.zeros(3)
    cam.distance = 4.0
    r = Renderer(ctx, sim)
    off = render_frame(ctx, r, cam, W, H, RenderOptions(show_grid=False))
    on = render_frame(ctx, r, cam, W, H, RenderOptions(show_grid=False, show_axes=True,
                                                       spring_width_px=3))
    ends = pixels_of(cam, np.eye(3) * 0.6 * r.axis_length)
    r.release()
    for axis, (u, v) in enumerate(ends):
        p = on[v, u].astype(int)
        assert p.argmax() == axis and p[axis] > 150, f"axis {axis}: {p}"
        assert off[v, u].max() < 80


# --- sizes and level of detail ------------------------------------------------------------------

def test_scene_spacing_is_the_grid_spacing_and_the_networks_particle_distance() -> None:
    assert scene_spacing(cloth(6, 5, 0.07).positions3(), cloth(6, 5, 0.07).rest_lengths) \
        == pytest.approx(0.07)
    net = random_network(40, 90, seed=1, dim=3, box=2.0)
    spacing = scene_spacing(net.positions3(), net.rest_lengths)
    pos = net.positions3()
    d = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    assert spacing == pytest.approx(np.median(d.min(axis=1)))
    assert spacing < 0.5 * np.median(net.rest_lengths)      # long springs, close particles


def test_network_sprites_do_not_overlap_their_nearest_neighbours(ctx) -> None:
    net = random_network(40, 90, seed=1, dim=3, box=2.0)
    r = Renderer(ctx, Simulation(net))
    pos = net.positions3()
    d = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    overlapping = (d.min(axis=1) < 2 * r.particle_radius).mean()
    assert r.particle_radius == pytest.approx(SPRITE_RADIUS_SHARE_ROPE * r.spacing)
    r.release()
    assert overlapping < 0.2


def test_coarse_cloth_grid_keeps_the_winding_and_the_outline() -> None:
    system = cloth(9, 7, 0.1, plane="xz")
    rows, cols = system.grid_shape
    pos = system.positions3()
    full = compute_normals(pos, system.triangles)
    for stride in (2, 4):
        tris = grid_triangles(system.triangles, rows, cols, stride).astype(np.int64)
        normals = compute_normals(pos, tris)
        used = np.unique(tris)
        assert np.allclose(normals[used], full[used], atol=1e-6)    # same side up
        a, b, c = pos[tris[:, 0]], pos[tris[:, 1]], pos[tris[:, 2]]
        area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum()
        assert area == pytest.approx(0.8 * 0.6)                       # the whole cloth
        assert {0, cols - 1, (rows - 1) * cols, rows * cols - 1} <= set(used.tolist())
    assert grid_triangles(system.triangles[:-1], rows, cols, 2) is None


def test_a_distant_dense_cloth_is_drawn_from_a_coarser_grid(ctx) -> None:
    sim = Simulation(cloth(96, 96, 0.01, plane="xz"))
    r = Renderer(ctx, sim)
    cam = OrbitCamera()
    cam.frame(sim.positions, aspect=W / H)
    cam.update({"elevation": 40.0})
    render_frame(ctx, r, cam, W, H, RenderOptions(**BARE))
    far = r.lod_stride
    cam.distance *= 0.1
    render_frame(ctx, r, cam, W, H, RenderOptions(**BARE))
    near = r.lod_stride
    r.release()
    assert far > 1 and near == 1
