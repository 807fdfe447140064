"""Issue 13, the viewer's cut tool and wind controls through the controller, without a
window: a stroke breaks exactly the springs whose screen segments cross it (against a
brute-force geometric count), Ctrl+Z mends them, K switches the wind, the panel edits it."""

from __future__ import annotations

import numpy as np
import pytest

from ropesim.app.controller import ViewerController
from ropesim.app.cut_tool import CutTool, crossed_springs, segments_cross
from ropesim.app.hotkeys import EDIT_HOTKEYS, HOTKEYS, LEFT, MOUSE_HELP, RIGHT, chord_name
from ropesim.app.wind_panel import (
    LIMITS, WindControls, check_setting, direction_of, wind_velocity,
)
from ropesim.engine.forces.wind import Wind
from ropesim.io.scenes import scene_from_dict
from test_renderer import ctx  # noqa: F401  (the EGL context fixture)

VIEW = (800, 600)
FRAME = 1.0 / 60.0


def cloth_scene(nx: int = 16, ny: int = 12, wind: dict | None = None):
    data = {
        "builder": "cloth",
        "cloth": {"nx": nx, "ny": ny, "spacing": 0.1, "pins": "top-corners"},
        "simulation": {"dt": 0.001, "substeps": 16},
    }
    if wind is not None:
        data["wind"] = wind
    return scene_from_dict(data, "test-cloth")


def controller(scene=None, **kwargs) -> ViewerController:
    kwargs.setdefault("clock", lambda: 100.0)
    kwargs.setdefault("paused", True)
    c = ViewerController(scene or cloth_scene(), VIEW, **kwargs)
    c.camera.update({"azimuth": 20.0, "elevation": 15.0})   # a perspective, not face-on
    return c


def brute_force_crossings(c: ViewerController, stroke: np.ndarray) -> set[int]:
    """The springs whose projected segment meets a stroke segment, found independently:
    each pair's intersection parameters from a 2x2 linear solve, both strictly in (0, 1)."""
    width, height = c.view_size
    vp = np.asarray(c.camera.view_matrix(), np.float64) @ np.asarray(
        c.camera.projection_matrix(width / height), np.float64)
    homogeneous = np.hstack([c.sim.positions, np.ones((c.sim.n_particles, 1))]) @ vp
    ndc = homogeneous[:, :2] / homogeneous[:, 3:]
    screen = np.column_stack([(ndc[:, 0] + 1) * 0.5 * width, (1 - ndc[:, 1]) * 0.5 * height])
    found = set()
    for s, (i, j) in enumerate(c.sim.system.springs):
        a, b = screen[i], screen[j]
        for p, q in zip(stroke[:-1], stroke[1:]):
            matrix = np.column_stack([q - p, a - b])      # p + t (q - p) = a + u (b - a)
            if abs(np.linalg.det(matrix)) < 1e-12:
                continue
            t, u = np.linalg.solve(matrix, a - p)
            if 0.0 < t < 1.0 and 0.0 < u < 1.0:
                found.add(s)
    return found


def screen_of(c: ViewerController, i: int) -> np.ndarray:
    pixels, _ = c.camera.project(c.sim.positions[i:i + 1], *c.view_size)
    return pixels[0]


def zigzag_over(c: ViewerController) -> np.ndarray:
    """A 4-segment stroke across the middle of the cloth, px (no point on a particle)."""
    nx, ny = 16, 12
    left, right = screen_of(c, (ny // 2) * nx), screen_of(c, (ny // 2) * nx + nx - 1)
    top, bottom = screen_of(c, 3 * nx + 7), screen_of(c, 8 * nx + 7)
    rise = 0.5 * (bottom - top)
    pts = [left - (right - left) * 0.1 + 0.37, left + (right - left) * 0.3 + rise * 0.4,
           left + (right - left) * 0.55 - rise * 0.3, left + (right - left) * 0.8 + 0.21,
           right + (right - left) * 0.1 + rise * 0.2]
    return np.array(pts)


def cut(c: ViewerController, stroke: np.ndarray, **press) -> None:
    c.press(*stroke[0], LEFT, **press)
    for point in stroke[1:-1]:
        c.drag(*point)
    c.release(*stroke[-1], LEFT)


# --- geometry --------------------------------------------------------------------------------
def test_segments_cross_only_on_a_proper_crossing():
    p, q = (0.0, 0.0), (2.0, 0.0)
    assert segments_cross(*p, *q, 1.0, -1.0, 1.0, 1.0)
    assert not segments_cross(*p, *q, 3.0, -1.0, 3.0, 1.0)     # beyond q
    assert not segments_cross(*p, *q, 1.0, 0.0, 1.0, 1.0)      # touching
    assert not segments_cross(*p, *q, 0.5, 0.0, 1.5, 0.0)      # collinear
    assert not segments_cross(*p, *q, np.nan, -1.0, 1.0, 1.0)  # an end behind the eye


def test_x_drag_breaks_exactly_the_springs_whose_screen_segments_cross_the_stroke():
    c = controller()
    stroke = zigzag_over(c)
    expected = brute_force_crossings(c, stroke)
    assert len(expected) > 20                      # the stroke crosses the cloth
    assert not c.sim.broken.any()
    cut(c, stroke, cut=True)
    assert set(np.flatnonzero(c.sim.broken)) == expected
    assert not c.dragging and c.sim.grabbed is None
    assert f"cut {len(expected)} springs" in c.message
    vectorised = crossed_springs(c.camera, c.view_size, c.sim.positions,
                                 c.sim.system.springs[:, 0], c.sim.system.springs[:, 1], stroke)
    assert set(vectorised.tolist()) == expected


def test_springs_behind_the_eye_plane_are_never_cut():
    c = controller()
    positions = c.sim.positions.copy()
    positions[:] = c.camera.eye + 5.0 * (c.camera.eye - c.camera.target)   # all behind the eye
    positions[1::2] += 0.3 * c.camera.basis()[0]
    hit = crossed_springs(c.camera, c.view_size, positions, c.sim.system.springs[:, 0],
                          c.sim.system.springs[:, 1], np.array([[0.0, 0.0], [800.0, 600.0]]))
    assert hit.size == 0


def test_ctrl_z_mends_the_last_cut_and_then_the_one_before():
    c = controller()
    stroke = zigzag_over(c)
    cut(c, stroke, cut=True)
    first = c.sim.broken.copy()
    stiffness = c.sim.stiffness.copy()
    assert np.all(stiffness[first] == 0)            # a cut spring exerts no force
    second_stroke = stroke + np.array([0.0, 40.0])
    cut(c, second_stroke, cut=True)
    assert c.sim.broken.sum() > first.sum()
    assert c.handle_key(chord_name("z", ctrl=True))
    assert np.array_equal(c.sim.broken, first)
    c.handle_key("ctrl+z")
    assert not c.sim.broken.any()
    reference = controller().sim.stiffness
    assert np.array_equal(c.sim.stiffness, reference)   # stiffness back to the scene's
    c.handle_key("ctrl+z")
    assert c.message == "nothing to undo"


def test_an_undo_leaves_springs_that_tore_on_their_own_broken():
    c = controller()
    c.sim.break_springs([0])                        # torn before the cut
    cut(c, zigzag_over(c), cut=True)
    c.undo_cut()
    assert np.flatnonzero(c.sim.broken).tolist() == [0]


def test_the_cut_tool_cuts_without_x_and_a_plain_drag_without_it_orbits():
    c = controller()
    stroke = zigzag_over(c)
    c.edit.cut.set_tool("cut")
    cut(c, stroke)
    assert c.sim.broken.any()
    c.reset()
    assert not c.sim.broken.any() and c.edit.cut.undo_depth == 0   # reset mends and forgets
    c.edit.cut.set_tool("grab")
    azimuth = c.camera.azimuth
    c.press(3, 3, LEFT)
    c.drag(60, 3)
    c.release(60, 3, LEFT)
    assert c.camera.azimuth != azimuth and not c.sim.broken.any()
    c.press(*stroke[0], RIGHT, cut=True)            # X only changes the left button
    assert c.mouse.interaction.kind == "pan"
    with pytest.raises(ValueError, match=r"tool: 'knife' is not a tool; allowed: grab, cut"):
        c.edit.cut.set_tool("knife")


def test_the_stroke_is_drawn_while_cutting_and_gone_after():
    c = controller()
    stroke = zigzag_over(c)
    c.press(*stroke[0], LEFT, cut=True)
    assert c.edit.overlay_lines() == []
    c.drag(*stroke[1])
    c.drag(*stroke[2])
    (points, colour, width), = c.edit.overlay_lines()
    assert np.allclose(points, stroke[:3]) and len(colour) == 4 and width > 0
    c.release(*stroke[2], LEFT)
    assert c.edit.overlay_lines() == []


def test_a_running_cloth_cut_in_two_falls_apart():
    """Cut the whole width below the pins: the lower part falls freely (only gravity)."""
    c = controller()
    c.camera.update({"azimuth": 0.0, "elevation": 0.0})
    nx = 16
    y = 0.5 * (screen_of(c, 2 * nx)[1] + screen_of(c, 3 * nx)[1])   # between rows 2 and 3
    cut(c, np.array([[screen_of(c, 0)[0] - 30, y], [screen_of(c, nx - 1)[0] + 30, y]]), cut=True)
    c.toggle_pause()
    lower = np.arange(3 * nx, c.sim.n_particles)
    before = c.sim.positions[lower, 1].copy()
    for _ in range(20):
        c.advance(FRAME)
    fallen = before - c.sim.positions[lower, 1]
    g, t = 9.81, c.sim.time
    assert np.allclose(fallen, 0.5 * g * t * t, rtol=0.05)   # free fall, s = g t^2 / 2


# --- wind ------------------------------------------------------------------------------------
def test_k_switches_the_wind_and_keeps_its_settings():
    c = controller()
    assert not c.wind.on and not any(isinstance(f, Wind) for f in c.sim.force_parts())
    c.wind.set("speed", 8.0)
    c.wind.set("azimuth", 90.0)
    assert c.handle_key("k")
    winds = [f for f in c.sim.force_parts() if isinstance(f, Wind)]
    assert len(winds) == 1 and np.allclose(winds[0].velocity, [0.0, 0.0, 8.0], atol=1e-12)
    assert "wind on" in c.message
    c.handle_key("k")
    assert not any(isinstance(f, Wind) for f in c.sim.force_parts()) and "wind off" in c.message
    c.handle_key("k")
    assert np.allclose(c.wind.wind.velocity, [0.0, 0.0, 8.0], atol=1e-12)


def test_wind_pushes_the_cloth_downwind_and_live_edits_act_at_once():
    c = controller(paused=False)
    c.wind.set("gust", 0.0)
    c.wind.set("speed", 10.0)
    c.wind.set("azimuth", 90.0)            # +z, through the cloth (it hangs in the xy plane)
    c.toggle_wind()
    for _ in range(10):
        c.advance(FRAME)
    assert c.sim.positions[:, 2].mean() > 0.0
    c.wind.set("azimuth", -90.0)           # live: the attached Wind turns
    assert np.allclose(c.wind.wind.velocity, [0.0, 0.0, -10.0], atol=1e-12)
    c.wind.set("gust", 1.5)
    assert c.wind.wind.gust == 1.5


def test_a_scene_that_declares_wind_starts_with_it_on_and_its_settings():
    c = controller(cloth_scene(wind={"velocity": [0.0, 0.0, 6.0], "gust": 0.4}))
    assert c.wind.on
    assert c.wind.settings["speed"] == pytest.approx(6.0)
    assert c.wind.settings["azimuth"] == pytest.approx(90.0)
    assert c.wind.settings["gust"] == pytest.approx(0.4)
    c.toggle_wind()
    assert not any(isinstance(f, Wind) for f in c.sim.force_parts())


def test_the_arrow_points_along_the_air_velocity_above_the_scene():
    c = controller()
    assert c.wind.arrow(c.sim) is None            # off: no arrow
    c.wind.set("gust", 0.0)
    c.wind.set("elevation", 30.0)
    c.toggle_wind()
    tail, head = c.wind.arrow(c.sim)
    direction = (head - tail) / np.linalg.norm(head - tail)
    assert np.allclose(direction, wind_velocity(0.0, 30.0, 1.0))
    assert min(tail[1], head[1]) > c.sim.positions[:, 1].max()
    c.wind.set("speed", 2.0 * c.wind.settings["speed"])
    tail2, head2 = c.wind.arrow(c.sim)
    assert np.linalg.norm(head2 - tail2) == pytest.approx(2.0 * np.linalg.norm(head - tail))


@pytest.mark.parametrize("name, value", [("speed", -1.0), ("speed", 41.0), ("gust", "lots"),
                                         ("elevation", 95.0), ("azimuth", float("nan"))])
def test_bad_wind_settings_name_the_field_the_value_and_the_range(name, value):
    controls = WindControls()
    low, high, unit = LIMITS[name]
    with pytest.raises(ValueError, match=rf"wind {name}: (must be >= {low:g} and <= {high:g} "
                                         rf"{unit}|expected a number|must be a finite number)"):
        controls.set(name, value)
    assert controls.settings == WindControls().settings     # nothing changed
    with pytest.raises(ValueError, match=r"wind setting: 'size' is not one; allowed: azimuth"):
        check_setting("size", 1.0)


def test_direction_of_inverts_wind_velocity():
    for azimuth, elevation, speed in [(0.0, 0.0, 5.0), (120.0, -20.0, 3.0), (-45.0, 60.0, 12.0)]:
        assert np.allclose(direction_of(wind_velocity(azimuth, elevation, speed)),
                           (azimuth, elevation, speed))


# --- tables ----------------------------------------------------------------------------------
def test_issue_13_keys_are_bound_in_their_own_table_and_shown_in_the_help():
    bound = {name for hotkey in EDIT_HOTKEYS for name in hotkey.keys}
    assert {"k", "ctrl+z"} <= bound
    assert not bound & {name for hotkey in HOTKEYS for name in hotkey.keys}
    c = controller()
    for hotkey in EDIT_HOTKEYS:
        assert callable(getattr(c, hotkey.action)), hotkey
    assert chord_name("z", ctrl=False) == "z" and chord_name("r", ctrl=True) == "r"
    assert any("X" in label and "cut" in text for label, text in MOUSE_HELP)


def test_a_fresh_cut_tool_has_nothing_to_undo():
    tool = CutTool()
    assert tool.tool == "grab" and tool.undo_depth == 0 and not tool.active


# --- the overlay (EGL) --------------------------------------------------------------------
def test_the_overlay_draws_the_stroke_and_the_arrow_where_the_controller_says(ctx):  # noqa: F811
    from ropesim.render.offscreen import OffscreenTarget
    from ropesim.render.overlay import Overlay, polyline_triangles

    c = controller()
    width, height = c.view_size
    stroke = np.array([[100.0, 100.0], [300.0, 100.0], [300.0, 250.0]])
    c.press(*stroke[0], LEFT, cut=True)
    c.drag(*stroke[1])
    c.drag(*stroke[2])
    c.wind.set("gust", 0.0)
    c.toggle_wind()
    lines = c.overlay_lines()
    assert len(lines) == 3                        # the stroke, the arrow's shaft and head
    target = OffscreenTarget(ctx, width, height, samples=0)
    overlay = Overlay(ctx)
    try:
        target.use()
        target.clear((0.0, 0.0, 0.0))
        overlay.draw(lines, width, height)
        pixels = target.read_rgb().astype(int)
    finally:
        overlay.release()
        target.release()
    assert overlay.vertices_drawn == sum(len(polyline_triangles(p, w)) for p, _, w in lines)
    red = (pixels[..., 0] > 150) & (pixels[..., 1] < 120)
    assert red[100, 150:250].all() and red[150:200, 300].all()   # along the stroke
    assert not red[200, 150] and not red[50, 200]                 # and nowhere else
    shaft = lines[1][0]
    middle = np.round(shaft.mean(axis=0)).astype(int)
    assert pixels[middle[1], middle[0], 2] > 150                  # the arrow is drawn (blue)


@pytest.mark.parametrize("mode", ["surface", "springs+particles"])
def test_a_cut_rope_is_drawn_without_its_broken_springs(ctx, mode):  # noqa: F811
    """The tube (surface mode) and the spring lines leave out broken springs: the pixel
    at a cut spring's middle shows the background after the cut, an intact one does not."""
    from ropesim.engine.builders import rope
    from ropesim.engine.simulation import Simulation
    from ropesim.render.camera import OrbitCamera
    from ropesim.render.offscreen import render_frame
    from ropesim.render.renderer import RenderOptions, Renderer

    sim = Simulation(rope(10, 3.0, pins="start"), dt=1e-3)
    camera = OrbitCamera()
    camera.frame(sim.positions, aspect=4 / 3)
    options = RenderOptions(mode=mode, show_grid=False, shadows=False)
    renderer = Renderer(ctx, sim)
    try:
        middles, _ = camera.project(0.5 * (sim.positions[:-1] + sim.positions[1:]), 320, 240)
        spots = np.round(middles).astype(int)
        background = np.round(np.array(options.background) * 255)

        def shown() -> np.ndarray:
            pixels = render_frame(ctx, renderer, camera, 320, 240, options, samples=0)
            return np.abs(pixels[spots[:, 1], spots[:, 0]] - background).max(axis=1) > 10

        assert shown().all()
        sim.break_springs([3, 4])
        after = shown()
        assert not after[3] and not after[4]
        assert after[[0, 1, 2, 5, 6, 7, 8]].all()
        sim.restore_springs([3, 4])
        assert shown().all()
    finally:
        renderer.release()


# --- the panel sections (their imgui calls, answered by a stand-in) ------------------------
class ScriptedImgui:
    """Answers the widget calls of a panel section: the widget labelled in ``edits``
    reports a change to that value, every other one reports none."""

    def __init__(self, **edits) -> None:
        self.edits = edits
        self.labels: list[str] = []

    def _answer(self, label, value):
        self.labels.append(label)
        return (True, self.edits[label]) if label in self.edits else (False, value)

    def checkbox(self, label, value):
        return self._answer(label, value)

    def slider_float(self, label, value, low, high, fmt):
        return self._answer(label, value)

    def combo(self, label, index, items):
        return self._answer(label, index)

    def small_button(self, label):
        return self._answer(label.split(" (")[0], False)[1]

    def text(self, _text):
        pass

    def same_line(self):
        pass


def test_the_panel_sections_switch_the_wind_set_it_and_choose_the_tool():
    c = controller()
    c.wind.draw_panel_section(ScriptedImgui(**{"wind on (K)": True, "speed [m/s]": 12.0,
                                                "elevation [deg]": 95.0}), c.toggle_wind)
    assert c.wind.on and c.wind.settings["speed"] == 12.0
    assert c.wind.settings["elevation"] == 90.0          # a slider's typed value is clamped
    assert np.allclose(c.wind.wind.velocity, [0.0, 12.0, 0.0], atol=1e-9)
    c.edit.draw_panel_section(ScriptedImgui(**{"left-drag tool": 1}))
    assert c.edit.cut.tool == "cut"
    cut(c, zigzag_over(c))
    assert c.sim.broken.any()
    c.edit.draw_panel_section(ScriptedImgui(**{"undo cut": True}))
    assert not c.sim.broken.any()
