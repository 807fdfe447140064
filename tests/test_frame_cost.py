"""The viewer frame's cheaper paths draw what the plain paths draw (issue 12).

* the objects multisampled over their screen rectangle (render/msaa.py) and blended
  over a single-sampled floor give the image of one fully multisampled frame, with
  the cloth's edges still antialiased;
* the floor drawn in two parts (the light frustum's reach with the shadow lookup,
  the rest without) equals the floor drawn in one shadowed pass;
* the shadow map is drawn again only when something that casts changed, and a
  kept one gives the same image as a fresh one;
* thin springs drawn as GL_LINES cover the pixels the quad lines cover.
"""

from __future__ import annotations

import numpy as np
import pytest

from ropesim.engine.builders import cloth
from ropesim.engine.contacts import Ground, Sphere
from ropesim.engine.simulation import Simulation
from ropesim.render.camera import OrbitCamera
from ropesim.render.msaa import MultisampleLayer, screen_rect
from ropesim.render.offscreen import OffscreenTarget, create_headless_context
from ropesim.render.renderer import GL_LINE_MAX_PX, Renderer, RenderOptions

W, H = 320, 240


@pytest.fixture(scope="module")
def ctx():
    try:
        context = create_headless_context()
    except RuntimeError as exc:   # no EGL driver on this machine at all
        pytest.skip(str(exc))
    yield context
    context.release()


def hanging_cloth() -> Simulation:
    """A 20 x 20 cloth bent into waves above a ground, with a ball beside it."""
    sim = Simulation(cloth(20, 20, 0.05, plane="xz", pins="top-corners"),
                     contacts=(Ground(-0.6), Sphere((0.3, -0.4, 0.3), 0.12)))
    x, z = sim.positions[:, 0], sim.positions[:, 2]
    sim.positions[:, 1] = -0.2 + 0.05 * np.sin(9.0 * x) * np.cos(7.0 * z)
    return sim


def camera(sim: Simulation, elevation: float = 25.0) -> OrbitCamera:
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
        cam, opts = camera(sim), RenderOptions()
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
        cam, opts = camera(sim, elevation=-20.0), RenderOptions()
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
        cam, opts = camera(sim), RenderOptions()
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
        cam, opts = camera(sim), RenderOptions()
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
        image = renderer.frame_grabber(W, H, 0).grab(renderer, camera(sim), opts).astype(int)
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
