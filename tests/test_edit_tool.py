"""Issue 13, editing the network live in the viewer, through the controller without a
window: Delete removes the hovered particle, Alt+drag adds a spring at the current
distance, Shift+drag pins (or unpins) a rectangle's particles; the renderer follows the
changed topology (EGL)."""

from __future__ import annotations

import numpy as np
import pytest

from ropesim.app.controller import ViewerController
from ropesim.app.edit_tool import particles_in_box
from ropesim.app.hotkeys import EDIT_HOTKEYS, LEFT, MOUSE_HELP
from ropesim.io.scenes import scene_from_dict
from test_renderer import ctx  # noqa: F401  (the EGL context fixture)

VIEW = (800, 600)
NX, NY = 10, 8


def cloth_scene():
    return scene_from_dict({
        "builder": "cloth",
        "cloth": {"nx": NX, "ny": NY, "spacing": 0.1, "pins": "top-corners"},
        "simulation": {"dt": 0.001, "substeps": 16},
    }, "test-cloth")


def controller() -> ViewerController:
    c = ViewerController(cloth_scene(), VIEW, clock=lambda: 100.0, paused=True)
    c.camera.update({"azimuth": 0.0, "elevation": 0.0})   # face-on: particles do not overlap
    return c


def screen_of(c: ViewerController, i: int) -> tuple[float, float]:
    pixels, _ = c.camera.project(c.sim.positions[i:i + 1], *c.view_size)
    return float(pixels[0, 0]), float(pixels[0, 1])


def springs_of(c: ViewerController, i: int) -> int:
    return int(np.count_nonzero((c.sim.springs == i).any(axis=1)))


# --- Delete ----------------------------------------------------------------------------------
def test_delete_removes_the_hovered_particle_with_its_springs():
    c = controller()
    i = 4 * NX + 5
    before = c.sim.n_springs
    attached = springs_of(c, i)
    assert attached >= 8                            # structural, shear and bend springs
    c.mouse_move(*screen_of(c, i))
    assert c.hovered == i
    assert c.handle_key("delete")
    assert c.sim.removed_particles[i] and springs_of(c, i) == 0
    assert c.sim.n_springs == before - attached
    assert f"particle {i} removed with {attached} springs" == c.message
    assert c.hovered is None
    c.mouse_move(*screen_of(c, i))
    assert c.hovered != i                           # a removed particle cannot be picked
    c.mouse_leave()
    c.handle_key("delete")
    assert c.message == "Delete: hover a particle to remove it"
    c.reset()
    assert not c.sim.removed_particles.any() and c.sim.n_springs == before


# --- Alt+drag --------------------------------------------------------------------------------
def test_alt_drag_from_one_particle_to_another_adds_a_spring_at_their_distance():
    c = controller()
    i, j = 2 * NX + 1, 6 * NX + 7                   # far apart, not joined
    distance = float(np.linalg.norm(c.sim.positions[i] - c.sim.positions[j]))
    before = c.sim.n_springs
    c.press(*screen_of(c, i), LEFT, alt=True)
    assert not c.dragging and c.sim.grabbed is None
    halfway = np.add(screen_of(c, i), screen_of(c, j)) / 2
    c.drag(*halfway)
    (band, colour, width), = c.overlay_lines()
    assert np.allclose(band, [screen_of(c, i), halfway])      # the rubber band
    c.drag(*screen_of(c, j))
    c.release(*screen_of(c, j), LEFT)
    assert c.sim.n_springs == before + 1
    assert sorted(c.sim.springs[-1].tolist()) == [i, j]
    assert c.sim.rest_lengths[-1] == pytest.approx(distance)   # at rest where it was drawn
    assert c.waves.probes == []                     # the press's probe toggle is undone
    assert f"spring {before} added" in c.message
    assert c.overlay_lines() == []
    c.press(*screen_of(c, i), LEFT, alt=True)      # the same pair again: refused, says why
    c.release(*screen_of(c, j), LEFT)
    assert c.sim.n_springs == before + 1 and "already joined" in c.message


def test_an_added_spring_holds_the_particles_at_its_length_while_the_cloth_runs():
    c = controller()
    i, j = (NY - 1) * NX, (NY - 1) * NX + NX - 1    # the two bottom corners
    c.press(*screen_of(c, i), LEFT, alt=True)
    c.drag(*screen_of(c, j))
    c.release(*screen_of(c, j), LEFT)
    rest = c.sim.rest_lengths[-1]
    c.toggle_pause()
    for _ in range(60):
        c.advance(1 / 60)
    length = np.linalg.norm(c.sim.positions[i] - c.sim.positions[j])
    assert length == pytest.approx(rest, rel=0.05)
    assert np.isfinite(c.sim.positions).all()


def test_alt_click_without_a_second_particle_is_still_a_probe_toggle():
    c = controller()
    i = 3 * NX + 3
    c.press(*screen_of(c, i), LEFT, alt=True)
    c.release(*screen_of(c, i), LEFT)
    assert c.waves.probes == [i] and c.sim.n_springs == controller().sim.n_springs


# --- Shift+drag ------------------------------------------------------------------------------
def test_shift_drag_pins_the_particles_in_the_rectangle_and_again_unpins_them():
    c = controller()
    corner_a = np.array(screen_of(c, 2 * NX + 2)) - 5.0    # around columns 2-5, rows 2-4
    corner_b = np.array(screen_of(c, 4 * NX + 5)) + 5.0
    inside = sorted(r * NX + k for r in range(2, 5) for k in range(2, 6))
    start = corner_a - 0.5 * (np.array(screen_of(c, 1)) - np.array(screen_of(c, 0)))
    assert c.pick(*start) is None                   # begun between particles
    pinned_before = c.sim.pinned.copy()

    def shift_drag(a, b) -> None:
        c.press(*a, LEFT, shift=True)
        c.drag(*b)
        (box, _, _), = c.overlay_lines()
        assert np.allclose(box[[0, 2]], [a, b])     # the rectangle follows the cursor
        c.release(*b, LEFT)

    shift_drag(start, corner_b)
    group = sorted(np.flatnonzero(c.sim.pinned & ~pinned_before).tolist())
    assert group == inside and f"pinned {len(inside)} particles" in c.message
    assert c.camera.azimuth == 0.0                  # no orbit
    assert sorted(particles_in_box(c.camera, c.view_size, c.sim.positions, start,
                                   corner_b).tolist()) == inside
    shift_drag(start, corner_b)
    assert np.array_equal(c.sim.pinned, pinned_before) and "unpinned" in c.message


def test_a_shift_drag_begun_on_a_particle_pins_the_group_including_it():
    c = controller()
    first = 3 * NX + 3
    c.press(*screen_of(c, first), LEFT, shift=True)
    assert c.sim.pinned[first]                      # a Shift+press on a particle toggles it
    end = np.array(screen_of(c, 5 * NX + 6)) + 5.0
    c.drag(*end)
    c.release(*end, LEFT)
    expected = [r * NX + k for r in range(3, 6) for k in range(3, 7)]
    assert c.sim.pinned[expected].all()
    c.press(*screen_of(c, first), LEFT, shift=True)   # a click still toggles one
    c.release(*screen_of(c, first), LEFT)
    assert not c.sim.pinned[first]


# --- undo and the tables ----------------------------------------------------------------------
def test_ctrl_z_does_not_mend_springs_renumbered_by_an_edit_since_the_cut():
    c = controller()
    left, right = np.array(screen_of(c, 4 * NX)), np.array(screen_of(c, 4 * NX + NX - 1))
    y = 0.5 * (screen_of(c, 4 * NX)[1] + screen_of(c, 5 * NX)[1])
    c.press(left[0] - 20, y, LEFT, cut=True)
    c.release(right[0] + 20, y, LEFT)
    broken = int(c.sim.broken.sum())
    assert broken > NX
    c.sim.add_spring(0, NX * NY - 1)
    c.undo_cut()
    assert "network was edited" in c.message and int(c.sim.broken.sum()) == broken


def test_the_edit_keys_and_gestures_are_in_the_help():
    keys = {name for hotkey in EDIT_HOTKEYS for name in hotkey.keys}
    assert {"k", "ctrl+z", "delete"} <= keys
    labels = " ".join(label for label, _ in MOUSE_HELP)
    assert "Alt+drag" in labels and "Shift+drag" in labels and "X" in labels


# --- the renderer follows the topology (EGL) ----------------------------------------------------
def test_the_renderer_follows_removed_particles_and_added_springs(ctx):  # noqa: F811
    from ropesim.render.offscreen import render_frame
    from ropesim.render.renderer import RenderOptions, Renderer

    c = controller()
    renderer = Renderer(ctx, c.sim)
    options = RenderOptions(show_grid=False, shadows=False)
    background = np.round(np.array(options.background) * 255)
    i = 4 * NX + 5
    try:
        x, y = (int(round(v)) for v in screen_of(c, i))
        pixels = render_frame(ctx, renderer, c.camera, *VIEW, options, samples=0)
        assert np.abs(pixels[y, x] - background).max() > 10          # cloth at particle i
        radius = renderer.particle_radius
        c.mouse_move(*screen_of(c, i))
        c.delete_hovered()
        pixels = render_frame(ctx, renderer, c.camera, *VIEW, options, samples=0)
        assert renderer.topology_version == c.sim.topology_version
        assert renderer.n_springs == c.sim.n_springs
        assert renderer.particle_radius == radius                    # sizes kept
        assert np.abs(pixels[y, x] - background).max() <= 10         # a hole where it was
        c.sim.add_spring(0, NX * NY - 1)
        render_frame(ctx, renderer, c.camera, *VIEW, options, samples=0)
        assert renderer.n_springs == c.sim.n_springs
    finally:
        renderer.release()


def test_a_removed_particle_is_not_drawn_among_the_particles(ctx):  # noqa: F811
    from ropesim.render.offscreen import render_frame
    from ropesim.render.renderer import RenderOptions, Renderer

    c = controller()
    corner = NY * NX - 1                            # bottom right: no spring passes over it
    renderer = Renderer(ctx, c.sim)
    options = RenderOptions(mode="springs+particles", show_grid=False, shadows=False)
    background = np.round(np.array(options.background) * 255)
    x, y = (int(round(v)) for v in screen_of(c, corner))
    try:
        pixels = render_frame(ctx, renderer, c.camera, *VIEW, options, samples=0)
        assert np.abs(pixels[y, x] - background).max() > 10
        c.sim.remove_particle(corner)
        pixels = render_frame(ctx, renderer, c.camera, *VIEW, options, samples=0)
        assert np.abs(pixels[y, x] - background).max() <= 10
        neighbour = screen_of(c, corner - 1)
        assert np.abs(pixels[int(round(neighbour[1])), int(round(neighbour[0]))]
                      - background).max() > 10   # the others are still drawn
    finally:
        renderer.release()
