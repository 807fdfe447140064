"""render: offscreen frames of real simulations through an EGL context.

Every check looks at pixels: where the cloth lands compared with the camera's own
projection, what colours strain, pins and faces get, and that per-frame updates
reuse the GL buffers.
"""

from __future__ import annotations

import itertools

import moderngl
import numpy as np
import pytest

from ropesim.render import renderer as render
from ropesim.engine.builders import cloth, rope
from ropesim.render.camera import OrbitCamera
from ropesim.engine.contacts import Ground, Sphere
from ropesim.io.video import check_video_size
from ropesim.render.msaa import MultisampleLayer, screen_rect
from ropesim.render.offscreen import (
    FrameGrabber,
    OffscreenTarget,
    create_headless_context,
    render_frame,
)
from ropesim.render.renderer import (GL_LINE_MAX_PX, WIREFRAME_MODES, Renderer, RenderOptions,
                                     load_shader_source)
from ropesim.engine.simulation import Simulation
from ropesim.render.surface import compute_normals

W, H = 320, 240
BARE = dict(show_grid=False, show_axes=False)   # only the simulation itself


@pytest.fixture(scope="module")
def ctx() -> moderngl.Context:
    try:
        context = create_headless_context()
    except RuntimeError as exc:   # no EGL driver on this machine at all
        pytest.skip(str(exc))
    yield context
    context.release()


@pytest.fixture
def cloth_sim() -> Simulation:
    return Simulation(cloth(24, 24, 0.05))


@pytest.fixture
def renderer(ctx: moderngl.Context, cloth_sim: Simulation) -> Renderer:
    r = Renderer(ctx, cloth_sim)
    yield r
    r.release()


def framed(sim: Simulation, planar: bool = False) -> OrbitCamera:
    cam = OrbitCamera()
    cam.frame(sim.positions, planar=planar, aspect=W / H)
    return cam


def background_rgb(options: RenderOptions) -> np.ndarray:
    return np.round(np.asarray(options.background[:3]) * 255).astype(int)


def differs(pixels: np.ndarray, color: np.ndarray, tol: int = 6) -> np.ndarray:
    """Boolean mask: pixel differs from ``color`` by more than ``tol`` in some channel."""
    return np.abs(pixels.astype(int) - color).max(axis=-1) > tol


def projected(cam: OrbitCamera, points: np.ndarray) -> np.ndarray:
    px, _ = cam.project(points, W, H)
    assert np.all(np.isfinite(px))
    return px


# --- frames land where the camera says -------------------------------------------------

def test_cloth_frame_is_not_blank(ctx, renderer, cloth_sim) -> None:
    opts = RenderOptions()
    img = render_frame(ctx, renderer, framed(cloth_sim), W, H, opts)
    assert img.shape == (H, W, 3) and img.dtype == np.uint8
    covered = differs(img, background_rgb(opts)).mean()
    assert covered > 0.15, f"only {covered:.1%} of the pixels differ from the background"


@pytest.mark.parametrize("mode", ["surface", "springs+particles"])
def test_pixels_sit_where_particles_project(ctx, renderer, cloth_sim, mode: str) -> None:
    opts = RenderOptions(mode=mode, **BARE)
    cam = framed(cloth_sim)
    img = render_frame(ctx, renderer, cam, W, H, opts)
    bg = background_rgb(opts)
    px = projected(cam, cloth_sim.positions)
    # Every particle is a sprite centred on its projection; on the surface, an edge
    # particle may sit on the boundary between pixels, so look at its 3x3 block.
    reach = 0 if mode == "springs+particles" else 1
    rng = np.random.default_rng(3)
    for i in rng.choice(cloth_sim.n_particles, 20, replace=False):
        u, v = px[i].astype(int)
        block = img[v - reach:v + reach + 1, u - reach:u + reach + 1]
        assert differs(block, bg).any(), f"particle {i} at pixel ({u}, {v})"
    # Far from the cloth: the corners, and everything well outside its projected box.
    for patch in (img[:6, :6], img[:6, -6:], img[-6:, :6], img[-6:, -6:]):
        assert not differs(patch, bg).any()
    lo = np.floor(px.min(axis=0)).astype(int) - 4
    hi = np.ceil(px.max(axis=0)).astype(int) + 4
    outside = np.ones((H, W), bool)
    outside[max(lo[1], 0):hi[1], max(lo[0], 0):hi[0]] = False
    assert not differs(img[outside], bg).any()
    assert differs(img[~outside], bg).mean() > 0.5


def test_particles_are_drawn_at_their_projection_in_their_colours(ctx, cloth_sim) -> None:
    """Large sprites: pinned particles orange, hovered cyan, grabbed green, the rest white."""
    r = Renderer(ctx, cloth_sim, particle_radius=0.02)
    cam = framed(cloth_sim)
    img = render_frame(ctx, r, cam, W, H,
                       RenderOptions(mode="springs+particles", hovered=100, grabbed=300, **BARE))
    r.release()
    px = projected(cam, cloth_sim.positions)
    rgb = {i: img[int(px[i, 1]), int(px[i, 0])].astype(int) for i in (0, 23, 100, 300, 250, 575)}
    for pinned in (0, 23):   # the builder's top corners
        red, green, blue = rgb[pinned]
        assert red > 200 and red > green + 50 and green > blue + 50, rgb[pinned]
    red, green, blue = rgb[100]
    assert blue > 200 and green > 150 and red < 120, rgb[100]
    red, green, blue = rgb[300]
    assert green > 200 and green > red + 80 and green > blue + 80, rgb[300]
    for plain in (250, 575):
        assert rgb[plain].min() > 180 and np.ptp(rgb[plain]) < 40, rgb[plain]


def test_sim_grabbed_is_highlighted_without_options(ctx, cloth_sim) -> None:
    r = Renderer(ctx, cloth_sim, particle_radius=0.02)
    cam = framed(cloth_sim)
    cloth_sim.grab(300, cloth_sim.positions[300].copy())
    img = render_frame(ctx, r, cam, W, H, RenderOptions(mode="springs+particles", **BARE))
    r.release()
    u, v = projected(cam, cloth_sim.positions[300:301])[0]
    red, green, blue = img[int(v), int(u)].astype(int)
    assert green > red + 80 and green > blue + 80


def test_front_and_back_faces_get_their_colours(ctx, renderer, cloth_sim) -> None:
    cam = framed(cloth_sim, planar=True)          # looking down -z at the front (+z) side
    opts = RenderOptions(**BARE)
    front = render_frame(ctx, renderer, cam, W, H, opts)[H // 2, W // 2].astype(int)
    cam.orbit(180.0, 0.0)
    back = render_frame(ctx, renderer, cam, W, H, opts)[H // 2, W // 2].astype(int)
    assert front[0] > front[2] + 60, f"front should be the warm colour, got {front}"
    assert back[2] > back[0] + 60, f"back should be the cool colour, got {back}"


# --- modes and strain ------------------------------------------------------------------------

def test_the_three_modes_give_different_images(ctx, renderer, cloth_sim) -> None:
    cam = framed(cloth_sim)
    images = {m: render_frame(ctx, renderer, cam, W, H, RenderOptions(mode=m))
              for m in WIREFRAME_MODES}
    for a, b in itertools.combinations(WIREFRAME_MODES, 2):
        changed = differs(images[a], images[b].astype(int), tol=10).mean()
        assert changed > 0.02, f"{a} and {b} differ in only {changed:.2%} of the pixels"


def test_systems_without_triangles_draw_a_tube_or_springs_and_particles(ctx) -> None:
    """A rope has no surface: the default mode draws it as a tube (issue 12), the two other
    modes as springs and particles; every mode draws something."""
    sim = Simulation(rope(12, 1.0))
    r = Renderer(ctx, sim)
    cam = framed(sim)
    images = [render_frame(ctx, r, cam, W, H, RenderOptions(mode=m)) for m in WIREFRAME_MODES]
    r.release()
    assert not r.has_surface and r.has_tube
    for image in images:
        assert differs(image, background_rgb(RenderOptions())).mean() > 0.005
    assert not np.array_equal(images[0], images[2])  # the tube is not the lines


def test_mode_is_validated_with_the_allowed_values() -> None:
    with pytest.raises(ValueError, match="surface, surface\\+springs, springs\\+particles"):
        RenderOptions(mode="wireframe")
    opts = RenderOptions()
    opts.mode = "bogus"
    with pytest.raises(ValueError, match="mode"):
        opts.validate()
    with pytest.raises(ValueError, match="spring_width_px"):
        RenderOptions(spring_width_px=0)


def test_draw_rejects_a_bad_mode_set_after_construction(ctx, renderer, cloth_sim) -> None:
    opts = RenderOptions()
    opts.mode = "points"
    with pytest.raises(ValueError, match="allowed"):
        render_frame(ctx, renderer, framed(cloth_sim), W, H, opts)


def is_red(p: np.ndarray) -> bool:
    r, g, b = (int(c) for c in p)
    return r > 150 and r > g + 70 and r > b + 70


def is_blue(p: np.ndarray) -> bool:
    r, g, b = (int(c) for c in p)
    return b > 150 and b > r + 70


def near(img: np.ndarray, uv: np.ndarray, test, radius: int = 1) -> bool:
    u, v = int(uv[0]), int(uv[1])
    patch = img[v - radius:v + radius + 1, u - radius:u + radius + 1].reshape(-1, 3)
    return any(test(p) for p in patch)


def test_strain_colours_stretched_red_and_compressed_blue(ctx) -> None:
    """Move the right column outwards (stretch) and the left column inwards
    (compress) by half a spacing; only the springs there change colour."""
    nx = ny = 12
    s = 0.1
    sim = Simulation(cloth(nx, ny, s))
    cam = framed(sim, planar=True)
    pos = sim.positions
    cols = np.arange(nx * ny) % nx
    pos[cols == nx - 1, 0] += 0.5 * s
    pos[cols == 0, 0] += 0.5 * s
    r = Renderer(ctx, sim)
    opts = RenderOptions(mode="springs+particles", strain_colors=True, spring_width_px=3, **BARE)
    img = render_frame(ctx, r, cam, W, H, opts)
    plain = render_frame(ctx, r, cam, W, H, RenderOptions(mode="springs+particles",
                                                          spring_width_px=3, **BARE))
    r.release()
    rows = np.arange(1, ny - 1)
    ids = rows * nx
    stretched = projected(cam, 0.5 * (pos[ids + nx - 2] + pos[ids + nx - 1]))
    compressed = projected(cam, 0.5 * (pos[ids] + pos[ids + 1]))
    at_rest = projected(cam, 0.5 * (pos[ids + nx // 2 - 1] + pos[ids + nx // 2]))
    assert all(near(img, uv, is_red) for uv in stretched)
    assert all(near(img, uv, is_blue) for uv in compressed)
    assert not any(near(img, uv, is_red) or near(img, uv, is_blue) for uv in at_rest)
    # without strain colouring the same springs are neither red nor blue
    assert not any(near(plain, uv, is_red) or near(plain, uv, is_blue)
                   for uv in np.concatenate([stretched, compressed]))


# --- per-frame updates ------------------------------------------------------------------

def test_moving_the_sim_changes_the_image_and_reuses_buffers(ctx, renderer, cloth_sim) -> None:
    cam = framed(cloth_sim)
    grabber = FrameGrabber(ctx, W, H)
    before = grabber.grab(renderer, cam, RenderOptions())
    buffers = dict(renderer.buffers)
    glos = {k: b.glo for k, b in buffers.items()}
    staging = renderer._pos32
    cloth_sim.integrator = "backward_euler"   # stable at the default dt for this cloth
    cloth_sim.velocities[:, 2] = np.linspace(-1.0, 1.0, cloth_sim.n_particles)  # out of plane
    cloth_sim.step(40)
    after = grabber.grab(renderer, cam, RenderOptions())
    grabber.release()
    assert differs(before, after.astype(int), tol=10).mean() > 0.01
    assert all(renderer.buffers[k] is b for k, b in buffers.items())
    assert {k: b.glo for k, b in renderer.buffers.items()} == glos
    assert renderer._pos32 is staging
    uploaded = np.frombuffer(renderer.buffers["positions"].read(), np.float32).reshape(-1, 3)
    assert np.allclose(uploaded, cloth_sim.positions, atol=1e-6)
    normals = np.frombuffer(renderer.buffers["normals"].read(), np.float32).reshape(-1, 3)
    expected = compute_normals(cloth_sim.positions, cloth_sim.system.triangles)
    assert np.allclose(normals, expected, atol=1e-6)
    assert not np.allclose(normals, [0.0, 0.0, 1.0], atol=0.05)   # the cloth bent


def test_update_uploads_float32_state_directly(ctx) -> None:
    sim = Simulation(cloth(6, 5, 0.1), dtype=np.float32)
    r = Renderer(ctx, sim)
    sim.positions[:, 2] += 0.25
    r.update(sim)
    uploaded = np.frombuffer(r.buffers["positions"].read(), np.float32).reshape(-1, 3)
    r.release()
    assert np.array_equal(uploaded, sim.positions)


def test_update_refuses_a_different_scene(ctx, renderer) -> None:
    with pytest.raises(ValueError, match="rebuild"):
        renderer.update(Simulation(cloth(5, 5, 0.1)))


def test_flags_are_uploaded_only_when_they_change(ctx, renderer, cloth_sim) -> None:
    cam = framed(cloth_sim)
    grabber = FrameGrabber(ctx, 64, 48, samples=0)
    opts = RenderOptions(hovered=5)
    grabber.grab(renderer, cam, opts)
    count = renderer.flag_uploads
    grabber.grab(renderer, cam, opts)
    grabber.grab(renderer, cam, opts)
    assert renderer.flag_uploads == count
    opts.hovered = 6
    grabber.grab(renderer, cam, opts)
    assert renderer.flag_uploads == count + 1
    cloth_sim.pin(200)
    grabber.grab(renderer, cam, opts)
    assert renderer.flag_uploads == count + 2
    flags = np.frombuffer(renderer.buffers["flags"].read(), np.uint32)
    grabber.release()
    assert flags[200] == render.FLAG_PINNED and flags[6] == render.FLAG_HOVERED
    assert flags[0] == render.FLAG_PINNED and flags[5] == 0
    with pytest.raises(ValueError, match="hovered"):
        render_frame(ctx, renderer, cam, 64, 48, RenderOptions(hovered=10_000))


def test_rebuild_switches_scene(ctx, renderer) -> None:
    sim = Simulation(rope(10, 1.0))
    renderer.rebuild(sim)
    assert renderer.n_particles == 10 and not renderer.has_surface
    assert renderer.buffers["positions"].size == 10 * 12
    assert renderer.buffers["springs"].size == 9 * 2 * 4
    img = render_frame(ctx, renderer, framed(sim), W, H, RenderOptions(**BARE))
    assert differs(img, background_rgb(RenderOptions())).any()


# --- obstacles, grid, axes ----------------------------------------------------------------

def test_sphere_obstacle_and_ground_grid_are_drawn(ctx) -> None:
    ball = Sphere((0.0, -0.6, 0.5), 0.25)
    sim = Simulation(cloth(10, 10, 0.1), contacts=(Ground(-1.2), ball))
    cam = framed(sim)
    cam.distance *= 1.5
    r = Renderer(ctx, sim)
    with_grid = render_frame(ctx, r, cam, W, H, RenderOptions(show_axes=False))
    bare = render_frame(ctx, r, cam, W, H, RenderOptions(**BARE))
    r.release()
    bg = background_rgb(RenderOptions())
    u, v = projected(cam, np.array([ball.center]))[0]
    red, green, blue = bare[int(v), int(u)].astype(int)
    assert blue >= red and abs(red - green) < 40 and red > 60, "the ball is a neutral grey"
    # A point on the ground beside the cloth: grid there, background without it.
    u, v = projected(cam, np.array([[0.8, -1.2, 0.0]]))[0]
    assert 0 <= u < W and 0 <= v < H
    assert differs(with_grid[int(v), int(u)], bg)
    assert not differs(bare[int(v), int(u)], bg)


def test_axes_point_along_x_y_z_in_red_green_blue(ctx) -> None:
    sim = Simulation(cloth(4, 4, 0.1, origin=(2.0, 0.0, 0.0)))   # keep the origin clear
    cam = framed(sim)
    cam.target = np.zeros(3)
    cam.distance = 4.0
    r = Renderer(ctx, sim)
    img = render_frame(ctx, r, cam, W, H, RenderOptions(show_grid=False, spring_width_px=3,
                                                         show_axes=True))  # off by default
    ends = projected(cam, np.eye(3) * 0.6 * r.axis_length)
    r.release()
    for axis, uv in enumerate(ends):
        p = img[int(uv[1]), int(uv[0])].astype(int)
        assert p.argmax() == axis and p[axis] > 150, f"axis {axis}: {p}"


# --- targets, contexts, shaders -----------------------------------------------------------

def test_offscreen_target_reads_top_row_first(ctx) -> None:
    target = OffscreenTarget(ctx, 40, 30, samples=0)
    target.clear((1.0, 0.0, 0.0))
    target.fbo.clear(0.0, 1.0, 0.0, 1.0, viewport=(0, 0, 40, 10))   # GL rows 0..9 = bottom
    img = target.read_rgb()
    target.release()
    assert img.shape == (30, 40, 3) and img.dtype == np.uint8
    assert (img[:20] == [255, 0, 0]).all() and (img[20:] == [0, 255, 0]).all()


def test_multisampled_target_matches_geometry_of_plain_one(ctx, renderer, cloth_sim) -> None:
    cam = framed(cloth_sim)
    opts = RenderOptions(**BARE)
    plain = FrameGrabber(ctx, W, H, samples=0)
    msaa = FrameGrabber(ctx, W, H, samples=4)
    a = plain.grab(renderer, cam, opts)
    b = msaa.grab(renderer, cam, opts)
    plain.release()
    msaa.release()
    bg = background_rgb(opts)
    assert abs(differs(a, bg).mean() - differs(b, bg).mean()) < 0.01
    with pytest.raises(ValueError, match="samples"):
        OffscreenTarget(ctx, 8, 8, samples=8)


def test_render_frame_reuses_its_target(ctx, renderer, cloth_sim) -> None:
    cam = framed(cloth_sim)
    render_frame(ctx, renderer, cam, W, H)
    grabber = renderer.frame_grabber(W, H)
    render_frame(ctx, renderer, cam, W, H)
    assert renderer.frame_grabber(W, H) is grabber
    render_frame(ctx, renderer, cam, 160, 120)
    assert renderer.frame_grabber(160, 120) is not grabber


def test_check_video_size_names_the_bad_side() -> None:
    check_video_size(640, 480)
    with pytest.raises(ValueError, match="width=650"):
        check_video_size(650, 480)
    with pytest.raises(ValueError, match="height=500"):
        check_video_size(640, 500)


def test_headless_context_failure_is_one_clear_line(monkeypatch) -> None:
    def broken(**kwargs):
        raise Exception("eglGetDisplay failed\nmore detail")

    monkeypatch.setattr(render.moderngl, "create_standalone_context", broken)
    with pytest.raises(RuntimeError) as info:
        create_headless_context()
    message = str(info.value)
    assert "\n" not in message
    assert "EGL" in message and "eglGetDisplay failed" in message and "install" in message


def test_shader_includes_are_resolved() -> None:
    source = load_shader_source("surface.frag")
    assert "#include" not in source and "vec3 shade(" in source
    assert source.startswith("#version 330")


def test_headless_camera_frames_a_cloth_enlarged_with_set_from_the_scenes_direction() -> None:
    """`ropesim render cloth --set cloth.nx=96 cloth.ny=96` (a 4.75 m cloth, four times the
    scene's): the headless camera frames its reach as the viewer does (render/framing.py),
    from the scene's azimuth and elevation, instead of keeping the scene's distance (for
    the 1.15 m cloth), so every particle, and where it will swing to, is in the picture."""
    from ropesim.io.scenes import load
    from ropesim.render.framing import reach_points
    from ropesim.render.headless import make_camera

    scene = load("cloth")
    sim = scene.with_overrides({"cloth.nx": 96, "cloth.ny": 96}).simulation()
    view = make_camera(sim, W / H, scene.camera)
    assert view.azimuth == pytest.approx(scene.camera["azimuth"])
    assert view.elevation == pytest.approx(scene.camera["elevation"])
    pixels, _ = view.project(reach_points(sim), W, H)
    assert np.all(np.isfinite(pixels))
    assert pixels[:, 0].min() >= 0 and pixels[:, 0].max() <= W
    assert pixels[:, 1].min() >= 0 and pixels[:, 1].max() <= H
    # the scene's own distance (for its 24 x 24 cloth) would have cut the big one off
    kept = make_camera(sim, W / H, scene.camera, dict(scene.camera))
    cut, _ = kept.project(sim.positions, W, H)
    assert np.nanmin(cut[:, 0]) < 0 or np.nanmax(cut[:, 0]) > W or np.any(~np.isfinite(cut))


# --- issue 12: the viewer frame's cheaper paths draw what the plain paths draw ---------
# The objects multisampled over their screen rectangle (render/msaa.py) and blended
# over a single-sampled floor give the image of one fully multisampled frame, with the
# edges still antialiased; the floor drawn in two parts (the light frustum's reach with
# the shadow lookup, the rest without) equals the floor in one shadowed pass; the shadow
# map is drawn again only when a caster changed, and a kept one gives the same image;
# thin springs drawn as GL_LINES cover the pixels the quad lines cover.

def hanging_cloth() -> Simulation:
    """A 20 x 20 cloth bent into waves above a ground, with a ball beside it."""
    sim = Simulation(cloth(20, 20, 0.05, plane="xz", pins="top-corners"),
                     contacts=(Ground(-0.6), Sphere((0.3, -0.4, 0.3), 0.12)))
    x, z = sim.positions[:, 0], sim.positions[:, 2]
    sim.positions[:, 1] = -0.2 + 0.05 * np.sin(9.0 * x) * np.cos(7.0 * z)
    return sim


def angled_camera(sim: Simulation, elevation: float = 25.0) -> OrbitCamera:
    cam = OrbitCamera()
    cam.frame(sim.positions, aspect=W / H)
    cam.update({"azimuth": 30.0, "elevation": elevation})
    return cam


def full_msaa(renderer: Renderer, cam: OrbitCamera, opts: RenderOptions) -> np.ndarray:
    """One image drawn wholly into a 4x multisampled target and resolved (int array)."""
    return renderer.frame_grabber(W, H, 4).grab(renderer, cam, opts).astype(int)


def through_layer(ctx, renderer: Renderer, cam: OrbitCamera, opts: RenderOptions,
                  layer: MultisampleLayer | None) -> np.ndarray:
    """One image drawn into a single-sampled target, the objects through ``layer``."""
    target = OffscreenTarget(ctx, W, H, samples=0)
    try:
        target.use()
        renderer.draw(cam, W, H, opts, multisample=layer)
        return target.read_rgb().astype(int)
    finally:
        target.release()


def test_objects_multisampled_over_the_floor_match_one_multisampled_frame(ctx) -> None:
    sim = hanging_cloth()
    renderer = Renderer(ctx, sim)
    layer = MultisampleLayer(ctx, 4)
    try:
        cam, opts = angled_camera(sim), RenderOptions()
        reference = full_msaa(renderer, cam, opts)
        layered = through_layer(ctx, renderer, cam, opts, layer)
        aliased = through_layer(ctx, renderer, cam, opts, None)
    finally:
        layer.release()
        renderer.release()
    diff = np.abs(layered - reference).max(axis=2)
    # the floor is single-sampled (its lines are filtered in its shader): tiny differences
    assert diff.mean() < 0.5
    assert np.count_nonzero(diff > 12) < 0.002 * W * H
    # and the cloth's and the ball's edges are still antialiased: much closer to the
    # multisampled frame than the frame without samples is
    edge_error_layered = np.abs(layered - reference).sum()
    edge_error_aliased = np.abs(aliased - reference).sum()
    assert np.count_nonzero(np.abs(aliased - reference).max(axis=2) > 24) > 100
    assert edge_error_layered < 0.3 * edge_error_aliased


def test_from_below_the_floor_everything_goes_through_the_layer(ctx) -> None:
    sim = hanging_cloth()
    renderer = Renderer(ctx, sim)
    layer = MultisampleLayer(ctx, 4)
    try:
        cam, opts = angled_camera(sim, elevation=-20.0), RenderOptions()
        frame = renderer._plan(cam, W, H, opts)
        assert not renderer._floor_under_scene(frame)   # the floor hides the cloth here
        reference = full_msaa(renderer, cam, opts)
        layered = through_layer(ctx, renderer, cam, opts, layer)
    finally:
        layer.release()
        renderer.release()
    assert np.abs(layered - reference).max() <= 2


def test_screen_rect_of_a_box_seen_through_the_identity_projection() -> None:
    identity = np.eye(4)
    lo, hi = np.array([-0.5, -0.5, 0.0]), np.array([0.5, 0.5, 0.0])
    # x: -0.5..0.5 of 2 across 100 px is 25..75; y: 12.5..37.5 of 50 px, rounded outwards
    assert screen_rect(identity, lo, hi, 100, 50, 0.0) == (25, 12, 50, 26)
    assert screen_rect(identity, lo, hi, 100, 50, 3.0) == (22, 9, 56, 32)
    assert screen_rect(identity, lo + 5.0, hi + 5.0, 100, 50, 0.0) is None     # off screen
    behind = np.diag([1.0, 1.0, 1.0, -1.0])                                      # w < 0
    assert screen_rect(behind, lo, hi, 100, 50, 0.0) == (0, 0, 100, 50)
    with pytest.raises(ValueError, match="margin_px"):
        screen_rect(identity, lo, hi, 100, 50, -1.0)


def test_layer_rejects_fewer_than_two_samples(ctx) -> None:
    with pytest.raises(ValueError, match="samples"):
        MultisampleLayer(ctx, 1)


def test_floor_in_two_parts_equals_the_floor_in_one_shadowed_pass(ctx, monkeypatch) -> None:
    sim = hanging_cloth()
    renderer = Renderer(ctx, sim)
    try:
        cam, opts = angled_camera(sim), RenderOptions()
        target = OffscreenTarget(ctx, W, H, samples=0)
        target.use()
        renderer.draw(cam, W, H, opts)
        reach = renderer._light_reach(-0.6, (0.0, -0.6, 0.0), 4.0 * renderer.extent)
        assert reach is not None and reach.shape == (4, 2)
        split = target.read_rgb().astype(int)
        monkeypatch.setattr(renderer, "_light_reach", lambda *args: None)
        target.use()
        renderer.draw(cam, W, H, opts)
        one_pass = target.read_rgb().astype(int)
        target.release()
    finally:
        renderer.release()
    # the shadow is on the floor in both, and the two agree to a level
    assert np.abs(split - one_pass).max() <= 1


def test_shadow_map_is_drawn_again_only_when_a_caster_moved(ctx) -> None:
    sim = hanging_cloth()
    renderer = Renderer(ctx, sim)
    target = OffscreenTarget(ctx, W, H, samples=0)
    try:
        target.use()
        cam, opts = angled_camera(sim), RenderOptions()
        renderer.draw(cam, W, H, opts)
        assert renderer.shadow_draws == 1
        cam.update({"azimuth": 75.0})            # the camera does not move a shadow
        renderer.draw(cam, W, H, opts)
        assert renderer.shadow_draws == 1
        kept = target.read_rgb()
        original = sim.positions[7].copy()
        sim.positions[7] += (0.0, 0.05, 0.0)     # a particle moved while paused
        renderer.draw(cam, W, H, opts)
        assert renderer.shadow_draws == 2
        sim.positions[7] = original
        renderer.draw(cam, W, H, opts)
        assert renderer.shadow_draws == 3
        renderer.draw(cam, W, H, RenderOptions(shadows=False))
        renderer.draw(cam, W, H, opts)            # after shadows off and on: drawn afresh
        assert renderer.shadow_draws == 4
        fresh_renderer = Renderer(ctx, sim)
        target.use()
        fresh_renderer.draw(cam, W, H, opts)
        fresh = target.read_rgb()
        fresh_renderer.release()
    finally:
        target.release()
        renderer.release()
    assert np.array_equal(kept, fresh)           # a kept shadow map is the same picture


def spring_pixels(ctx, sim: Simulation, width_px: float) -> np.ndarray:
    """Where a springs+particles frame of ``sim`` (no floor) differs from the background."""
    renderer = Renderer(ctx, sim)
    try:
        opts = RenderOptions(mode="springs+particles", show_grid=False, shadows=False,
                             spring_width_px=width_px, particle_min_px=0.0)
        image = renderer.frame_grabber(W, H, 0).grab(renderer, angled_camera(sim), opts).astype(int)
    finally:
        renderer.release()
    return np.abs(image - np.array([31, 33, 41])).max(axis=2) > 40


def test_thin_springs_as_gl_lines_cover_the_pixels_of_the_quad_lines(ctx) -> None:
    sim = Simulation(cloth(8, 8, 0.1, plane="xz"))
    as_lines = spring_pixels(ctx, sim, GL_LINE_MAX_PX)            # GL_LINES
    as_quads = spring_pixels(ctx, sim, GL_LINE_MAX_PX + 0.01)     # quads by vertex id
    overlap = np.count_nonzero(as_lines & as_quads) / np.count_nonzero(as_lines | as_quads)
    assert np.count_nonzero(as_lines) > 2000 and overlap > 0.75
    # a torn spring is left out of the GL_LINES too: with every spring torn only the
    # particles remain, the same pixels as on the quad path
    sim.break_springs(np.arange(len(sim.system.springs)))
    torn_lines = spring_pixels(ctx, sim, GL_LINE_MAX_PX)
    torn_quads = spring_pixels(ctx, sim, GL_LINE_MAX_PX + 0.01)
    assert np.count_nonzero(torn_lines) < 0.6 * np.count_nonzero(as_lines)
    assert np.count_nonzero(torn_lines ^ torn_quads) < 0.02 * np.count_nonzero(torn_quads)
