"""The viewer's controller without a window or GL: stepping, hotkeys, drag and fling,
panel parameters, recording, and the command line's one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ropesim.engine.integrators import INTEGRATORS
from ropesim.render.renderer import WIREFRAME_MODES
from ropesim.io.scenes import load, scene_from_dict, scene_names
from ropesim.app.controller import EnergyHistory, ViewerController
from ropesim.app.frame_clock import MAX_FRAME_TIME
from ropesim.app.hotkeys import HOTKEYS, LEFT, MIDDLE, RIGHT, key_names
from ropesim.app.viewer import main

ROOT = Path(__file__).resolve().parent.parent
VIEW = (800, 600)
WIDE = (1280, 720)
FRAME = 1.0 / 60.0


class FakeClock:
    """A settable time source, s."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def rope_scene(dim: int = 3, gravity: float = 0.0, n: int = 40, **simulation):
    """A straight rope along +x from (-1.5, 0), pinned at its start."""
    settings = {"dt": 0.001, "gravity": [0.0, -gravity, 0.0], "substeps": 16, **simulation}
    origin = [-1.5, 0.0] if dim == 2 else [-1.5, 0.0, 0.0]
    return scene_from_dict({
        "builder": "rope",
        "rope": {"n": n, "length": 3.0, "dim": dim, "pins": "start", "origin": origin,
                 "mass": 0.04, "stiffness": 2000.0, "damping": 0.5},
        "simulation": settings,
    }, "test-rope")


def cloth_scene(**simulation):
    settings = {"dt": 0.001, "substeps": 16, **simulation}
    return scene_from_dict({
        "builder": "cloth",
        "cloth": {"nx": 8, "ny": 6, "spacing": 0.1, "pins": "top-corners"},
        "simulation": settings,
    }, "test-cloth")


def controller(scene=None, **kwargs) -> ViewerController:
    kwargs.setdefault("clock", FakeClock())
    return ViewerController(scene or rope_scene(), VIEW, **kwargs)


def screen_of(c: ViewerController, i: int) -> tuple[float, float]:
    """Framebuffer pixel where particle i is drawn."""
    pixels, _ = c.camera.project(c.sim.positions[i:i + 1], *c.view_size)
    return float(pixels[0, 0]), float(pixels[0, 1])


def drag_fast(c: ViewerController, i: int, step_px: tuple[float, float], samples: int = 10,
              interval: float = FRAME) -> np.ndarray:
    """Grab particle i and move the cursor step_px per frame (the simulation runs in
    between, as in the window); returns the last drag target, m."""
    x, y = screen_of(c, i)
    c.press(x, y, LEFT)
    assert c.sim.grabbed == i
    for _ in range(samples):
        c.clock.t += interval
        c.advance(interval)
        x, y = x + step_px[0], y + step_px[1]
        c.drag(x, y)
    return c.mouse.interaction.last_point.copy()


# --- hotkeys ---------------------------------------------------------------------------------
ISSUE_KEYS = ["space", "right", "period", "r", "backspace", "i", "w", "s", "g", "equal",
              "minus", *"123456789", "f", "p", "v", "h", "f1", "escape", "f11",
              "a",   # issue 12: A shows / hides the origin axes
              "c"]   # issue 11: C toggles self-collision


def test_hotkey_table_binds_every_key_of_the_issue_and_no_modifier():
    bound = [name for hotkey in HOTKEYS for name in hotkey.keys]
    assert sorted(bound) == sorted(ISSUE_KEYS)
    assert len(bound) == len(set(bound))
    assert not any(word in name for name in bound for word in ("shift", "ctrl", "alt"))
    c = controller()
    for hotkey in HOTKEYS:
        assert callable(getattr(c, hotkey.action)), hotkey


def test_key_names_translate_backend_codes_and_skip_modifiers():
    class Keys:  # the shape of moderngl-window's wnd.keys namespaces
        SPACE, RIGHT, PERIOD, ESCAPE, F1, F11 = 32, 1001, 46, 27, 2001, 2011
        EQUAL, MINUS, BACKSPACE = 61, 45, 8
        LEFT_SHIFT, LEFT_CTRL = 3001, 3002
        NUMBER_1, NUMBER_9, NUMPAD_3 = 49, 57, 4003
        A, R, Z = 97, 114, 122
        UP = "undefined"

    names = key_names(Keys)
    assert names[Keys.SPACE] == "space" and names[Keys.NUMBER_9] == "9"
    assert names[Keys.NUMPAD_3] == "3" and names[Keys.R] == "r" and names[Keys.F11] == "f11"
    assert Keys.LEFT_SHIFT not in names and Keys.LEFT_CTRL not in names
    assert "undefined" not in names


def test_unbound_key_is_ignored():
    c = controller()
    assert c.handle_key("q") is False


def test_space_pauses_and_resumes():
    c = controller()
    c.handle_key("space")
    assert c.paused and c.advance(FRAME) == 0
    c.handle_key("space")
    assert not c.paused and c.advance(FRAME) > 0


@pytest.mark.parametrize("key", ["right", "period"])
def test_single_step_while_paused(key):
    c = controller()
    c.handle_key("space")
    before = c.sim.step_count
    c.handle_key(key)
    assert c.sim.step_count == before + 1 and c.paused


@pytest.mark.parametrize("key", ["r", "backspace"])
def test_reset_restores_the_initial_state(key):
    c = controller(rope_scene(gravity=9.81))
    initial = c.sim.positions.copy()
    for _ in range(5):
        c.advance(FRAME)
    assert c.sim.time > 0 and not np.allclose(c.sim.positions, initial)
    c.handle_key(key)
    assert c.sim.time == 0 and np.allclose(c.sim.positions, initial)


def test_i_switches_integrator_live_without_reset():
    c = controller(rope_scene(gravity=9.81))
    for _ in range(3):
        c.advance(FRAME)
    names = list(INTEGRATORS)
    positions, time = c.sim.positions.copy(), c.sim.time
    first = c.sim.integrator
    c.handle_key("i")
    assert c.sim.integrator == names[(names.index(first) + 1) % len(names)]
    assert c.sim.time == time and np.array_equal(c.sim.positions, positions)
    for _ in range(len(names) - 1):
        c.handle_key("i")
    assert c.sim.integrator == first


def test_w_cycles_the_three_draw_modes():
    c = controller()
    seen = []
    for _ in range(3):
        c.handle_key("w")
        seen.append(c.options.mode)
    assert sorted(seen) == sorted(WIREFRAME_MODES)


def test_s_toggles_strain_colours_and_g_gravity():
    c = controller(rope_scene(gravity=9.81))
    c.handle_key("s")
    assert c.options.strain_colors
    c.handle_key("s")
    assert not c.options.strain_colors
    c.handle_key("g")
    assert np.all(c.sim.gravity == 0)
    c.handle_key("g")
    assert np.allclose(c.sim.gravity, [0, -9.81, 0])


def test_equal_and_minus_double_and_halve_the_time_scale_within_its_limits():
    from ropesim.app.frame_clock import TIME_SCALES

    c = controller()
    c.handle_key("minus")
    assert c.time_scale == 0.5 and "0.5x" in c.message
    assert c.advance(0.010) == 5   # 10 ms of real time at half speed: 5 steps of 1 ms
    c.handle_key("equal")
    assert c.time_scale == 1.0 and c.message == "real time"
    for _ in range(20):
        c.handle_key("minus")
    assert c.time_scale == TIME_SCALES[0]
    for _ in range(20):
        c.handle_key("equal")
    assert c.time_scale == TIME_SCALES[1]


def test_a_toggles_the_origin_axes():
    c = controller()
    shown = c.options.show_axes
    c.handle_key("a")
    assert c.options.show_axes is not shown
    c.handle_key("a")
    assert c.options.show_axes is shown


def test_digits_open_shipped_scenes():
    c = controller()
    names = scene_names()
    c.handle_key("2")
    assert c.scene.name == names[1]
    c.handle_key("1")
    assert c.scene.name == names[0] == "cloth"
    if len(names) < 9:
        c.handle_key("9")
        assert c.scene.name == "cloth" and "no scene 9" in c.message


def test_f_frames_the_scene_again():
    c = controller(rope_scene(dim=2))
    start = (c.camera.azimuth, c.camera.elevation, c.camera.distance)
    assert start[:2] == (0.0, 0.0)  # a 2-D scene starts face-on
    c.press(5, 5, LEFT)
    c.drag(205, 105)
    c.release(205, 105, LEFT)
    c.scroll(3)
    assert (c.camera.azimuth, c.camera.elevation) != start[:2]
    c.handle_key("f")
    assert (c.camera.azimuth, c.camera.elevation) == (0.0, 0.0)
    assert c.camera.distance == pytest.approx(start[2])


def test_f_shows_a_2d_scene_face_on_even_if_it_starts_at_an_angle():
    c = controller(load("ring"))
    c.handle_key("f")
    assert (c.camera.azimuth, c.camera.elevation) == (0.0, 0.0)
    pixels, _ = c.camera.project(c.sim.positions, *c.view_size)
    assert np.all((pixels >= 0) & (pixels <= np.array(c.view_size)))   # all of it in view


def test_h_f1_toggle_the_ui_and_esc_f11_request_quit_and_fullscreen():
    c = controller()
    c.handle_key("h")
    assert not c.show_ui
    c.handle_key("f1")
    assert c.show_ui
    c.handle_key("f11")
    assert c.fullscreen_requested
    c.handle_key("f11")
    assert not c.fullscreen_requested
    c.handle_key("escape")
    assert c.quit_requested


def fake_frames(shape=(48, 64, 3)):
    def source() -> np.ndarray:
        return np.full(shape, 128, dtype=np.uint8)
    return source


def test_p_saves_a_png(tmp_path):
    c = controller(frame_source=fake_frames(), output_dir=tmp_path)
    c.handle_key("p")
    files = list(tmp_path.glob("*.png"))
    assert len(files) == 1 and files[0].stat().st_size > 0
    assert str(files[0]) in c.message


def test_p_into_a_missing_folder_reports_the_failure_and_keeps_running(tmp_path):
    c = controller(frame_source=fake_frames(), output_dir=tmp_path / "missing")
    c.handle_key("p")
    assert c.message.startswith("screenshot failed") and not (tmp_path / "missing").exists()
    assert c.advance(FRAME) > 0


def test_p_and_v_without_a_renderer_only_report():
    c = controller()
    c.handle_key("p")
    assert "no renderer" in c.message
    c.handle_key("v")
    assert c.recorder is None and "no renderer" in c.message


def test_v_records_fixed_dt_frames_to_mp4(tmp_path):
    from ropesim.io.video import steps_per_frame

    c = controller(frame_source=fake_frames(), output_dir=tmp_path)
    c.handle_key("v")
    assert c.recorder is not None and c.status == "recording"
    per_frame = steps_per_frame(c.sim.dt, 30)
    for frame_time in (0.001, 0.2, 0.05):   # whatever the machine did
        before = c.sim.step_count
        c.advance(frame_time)
        assert c.sim.step_count - before == per_frame
    c.handle_key("v")
    assert c.recorder is None and c.recorded_frames == 3
    video = list(tmp_path.glob("*.mp4"))
    assert len(video) == 1 and video[0].stat().st_size > 0


# --- frame stepping ----------------------------------------------------------------------------
def test_advance_runs_the_real_time_that_passed():
    c = controller()   # dt 1 ms
    assert c.advance(0.010) == 10
    assert c.advance(0.0105) == 10          # 0.5 ms carried over ...
    assert c.advance(0.0005) == 1           # ... and used
    assert c.advance(0.2) == 200            # a slow frame owes (and allows) more steps


def test_a_slow_draw_does_not_slow_the_simulated_time():
    c = controller(cloth_scene())
    start = c.sim.time
    for _ in range(10):                     # 10 frames of 0.1 s: a draw-bound 10 fps
        c.advance(0.1)
    assert c.sim.time - start == pytest.approx(1.0, abs=1e-9)
    assert c.frame_clock.real_time_factor == pytest.approx(1.0, abs=0.02)
    assert MAX_FRAME_TIME >= 0.1


def diverged_controller() -> ViewerController:
    """A rope too stiff for explicit Euler at dt 20 ms, run until it diverged."""
    scene = rope_scene(gravity=9.81, integrator="explicit_euler", dt=0.02)
    c = controller(scene)
    for _ in range(200):
        c.advance(FRAME)
        if c.error:
            break
    return c


def test_divergence_pauses_and_says_how_to_recover():
    c = diverged_controller()
    assert c.paused and c.error and c.status == "diverged"
    assert "diverged" in c.error and "R" in c.error and "dt" in c.error
    title = c.window_title()
    assert "diverged" in title and "R reset" in title and "dt" in title
    assert np.all(np.isfinite(c.sim.positions))
    c.handle_key("r")
    assert c.error is None and "diverged" not in c.window_title()


def test_energy_history_rolls():
    history = EnergyHistory(capacity=3)
    for k in range(5):
        history.add(float(k), 1.0 * k, -2.0)
    series = history.series()
    assert len(history) == 3
    assert list(series["time"]) == [2.0, 3.0, 4.0]
    assert list(series["total"]) == [0.0, 1.0, 2.0]


def test_energy_is_sampled_every_frame():
    c = controller()
    for _ in range(4):
        c.advance(FRAME)
    assert len(c.energy) == 5   # the initial sample and one per frame


# --- mouse: drag, fling, pins, camera ----------------------------------------------------------------
def test_hover_highlights_the_particle_under_the_cursor():
    c = controller()
    c.mouse_move(*screen_of(c, 20))
    assert c.hovered == 20 and c.options.hovered == 20
    c.mouse_move(3, 3)
    assert c.hovered is None


def test_fast_drag_release_leaves_the_particle_with_the_drag_velocity():
    c = controller()
    i = c.sim.n_particles - 1
    first, start = c.sim.positions[i].copy(), c.sim.time
    last = drag_fast(c, i, (6.0, -4.0), samples=10)
    # the drag plane faces the camera, so equal pixel steps are equal metres; the
    # velocity is per simulated second (16 capped steps of 1 ms per 1/60 s frame)
    expected = (last - first) / (c.sim.time - start)
    assert np.linalg.norm(expected) > 1.0
    c.release(*c.mouse.interaction.last_xy, LEFT)
    assert c.sim.grabbed is None
    got = c.sim.velocities[i]
    assert np.linalg.norm(got - expected) < 0.03 * np.linalg.norm(expected)


def test_fling_velocity_is_right_when_events_arrive_in_batches_at_a_low_frame_rate():
    """pyglet hands over a frame's mouse events at once: equal arrival times."""
    c = controller()
    i = c.sim.n_particles - 1
    frame = 0.1   # 10 fps
    x, y = screen_of(c, i)
    first, start = c.sim.positions[i].copy(), c.sim.time
    c.press(x, y, LEFT)
    for _ in range(6):
        c.clock.t += frame
        c.advance(frame)
        for _ in range(3):   # three motion events per frame, same clock time
            x += 4.0
            c.drag(x, y)
    expected = (c.mouse.interaction.last_point - first) / (c.sim.time - start)
    c.release(x, y, LEFT)
    got = c.sim.velocities[i]
    assert np.linalg.norm(got - expected) < 0.05 * np.linalg.norm(expected)


def test_release_after_holding_still_does_not_fling():
    c = controller()
    i = c.sim.n_particles - 1
    drag_fast(c, i, (6.0, 0.0))
    c.clock.t += 0.5
    c.release(*c.mouse.interaction.last_xy, LEFT)
    assert np.allclose(c.sim.velocities[i], 0.0)


def test_dragging_while_paused_poses_the_particle_without_a_fling():
    c = controller()
    i = c.sim.n_particles - 1
    c.handle_key("space")
    last = drag_fast(c, i, (8.0, 0.0))
    c.release(*c.mouse.interaction.last_xy, LEFT)
    assert np.allclose(c.sim.positions[i], last)
    assert np.allclose(c.sim.velocities[i], 0.0)


def test_pinned_particle_can_be_dragged_and_stays_where_dropped():
    c = controller()
    assert c.sim.pinned[0]
    last = drag_fast(c, 0, (5.0, 7.0))
    c.release(*c.mouse.interaction.last_xy, LEFT)
    assert c.sim.pinned[0]
    assert np.allclose(c.sim.positions[0], last)
    for _ in range(5):
        c.advance(FRAME)
    assert np.allclose(c.sim.positions[0], last) and np.allclose(c.sim.velocities[0], 0)


def test_drag_in_a_2d_scene_stays_in_the_plane():
    c = controller(rope_scene(dim=2, gravity=9.81))
    c.camera.orbit(35.0, 20.0)   # even seen at an angle
    i = c.sim.n_particles - 1
    drag_fast(c, i, (4.0, -6.0))
    c.release(*c.mouse.interaction.last_xy, LEFT)
    assert np.all(c.sim.positions[:, 2] == 0)
    assert abs(c.sim.velocities[i, 2]) == 0 and np.linalg.norm(c.sim.velocities[i]) > 0.5


def test_flinging_a_rope_end_sends_a_wave_down_the_rope():
    c = controller(rope_scene(gravity=0.0))
    n = c.sim.n_particles
    rest = c.sim.positions.copy()
    drag_fast(c, n - 1, (0.0, -15.0), samples=6)   # a flick upwards, 0.1 s
    c.release(*c.mouse.interaction.last_xy, LEFT)
    fling_speed = np.linalg.norm(c.sim.velocities[n - 1])
    assert fling_speed > 2.0
    moved = np.zeros(n)
    for _ in range(30):   # half a second
        c.advance(FRAME)
        moved = np.maximum(moved, np.linalg.norm(c.sim.positions - rest, axis=1))
    middle = slice(n // 3, 2 * n // 3)
    assert moved[middle].min() > 0.05     # every particle of the middle third moved > 5 cm
    assert moved[n // 6] > 0.01           # and the wave reached near the pinned end


def test_shift_click_pins_and_unpins():
    c = controller()
    i = 25
    xy = screen_of(c, i)
    c.press(*xy, LEFT, shift=True)
    c.release(*xy, LEFT)
    assert c.sim.pinned[i] and c.sim.grabbed is None
    c.press(*xy, LEFT, shift=True)
    assert not c.sim.pinned[i]
    c.press(3, 3, LEFT, shift=True)   # empty space: starts an orbit, pins nothing
    assert c.sim.pinned.sum() == 1


def test_left_drag_on_empty_space_orbits_and_right_or_middle_drag_pans():
    c = controller()
    azimuth, target = c.camera.azimuth, c.camera.target.copy()
    c.press(5, 5, LEFT)
    c.drag(55, 5)
    c.release(55, 5, LEFT)
    assert c.camera.azimuth != azimuth and np.allclose(c.camera.target, target)
    for button in (RIGHT, MIDDLE):
        before = c.camera.target.copy()
        c.press(5, 5, button)
        c.drag(45, 25)
        c.release(45, 25, button)
        assert not np.allclose(c.camera.target, before)


def test_wheel_zooms_toward_the_point_under_the_cursor():
    c = controller()
    i = c.sim.n_particles - 1
    xy = screen_of(c, i)
    distance = c.camera.distance
    c.mouse_move(*xy)
    c.scroll(2)
    assert c.camera.distance < distance
    assert np.allclose(screen_of(c, i), xy, atol=1e-6)


def test_picking_stays_exact_after_a_resize():
    c = controller()
    c.set_view_size(1000, 300)
    i = 30
    c.mouse_move(*screen_of(c, i))
    assert c.hovered == i


# --- panel parameters ----------------------------------------------------------------------------------
def test_live_parameters_apply_without_restart():
    c = controller(rope_scene(gravity=9.81))
    for _ in range(3):
        c.advance(FRAME)
    time = c.sim.time
    c.set_parameter("stiffness", 4000.0)
    assert np.allclose(c.sim.stiffness, 2 * c.sim.system.stiffness)
    assert c.parameter("stiffness") == pytest.approx(4000.0)
    c.set_parameter("damping", 1.0)
    assert np.allclose(c.sim.damping, 1.0)
    c.set_parameter("mass", 0.08)
    assert np.allclose(c.sim.masses, 0.08)
    c.set_parameter("dt", 0.0005)
    assert c.sim.dt == 0.0005
    c.set_parameter("gravity", -3.0)
    assert np.allclose(c.sim.gravity, [0, -3.0, 0])
    assert c.sim.time == time
    c.set_parameter("mass", 0.0)
    assert "mass" in c.message and np.allclose(c.sim.masses, 0.08)
    c.handle_key("r")   # a reset keeps the edits
    assert c.sim.dt == 0.0005 and np.allclose(c.sim.masses, 0.08)


def test_cloth_width_height_and_pins_restart_keeping_live_edits():
    c = controller(cloth_scene())
    c.set_parameter("dt", 0.0007)
    c.set_parameter("stiffness", 2 * c.parameter("stiffness"))
    c.handle_key("i")
    integrator = c.sim.integrator
    for pins, count in ((1, 1), (2, 2), (4, 4)):
        c.restart_cloth(10, 7, pins)
        assert c.sim.n_particles == 70 and c.sim.pinned.sum() == count
    assert c.sim.dt == 0.0007 and c.sim.integrator == integrator
    assert c.live.stiffness_scale == pytest.approx(2.0)
    assert c.cloth_shape() == (10, 7, 4)


def test_cloth_restart_is_refused_for_other_scenes():
    c = controller()
    n = c.sim.n_particles
    c.restart_cloth(5, 5, 2)
    assert c.sim.n_particles == n and "cloth" in c.message


# --- command line ---------------------------------------------------------------------------------------
def test_missing_scene_is_a_one_line_error(capsys):
    assert main(["no-such-scene"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-scene" in err and "Traceback" not in err
    assert "cloth" in err   # names the shipped scenes


def test_bad_flag_values_are_one_line_errors(capsys):
    assert main(["cloth", "--dt", "-1"]) != 0
    assert main(["cloth", "--set", "cloth.nx=oops"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err


def test_viewer_and_run_read_set_dt_and_integrator_with_one_parser():
    from ropesim.app.arguments import scene_from_args
    from ropesim.app.cli import build_parser as build_cli_parser
    from ropesim.app.viewer import build_parser

    flags = ["--set", "stiffness=5000", "rope.n=12", "--dt", "0.0005", "--integrator", "verlet"]
    viewer_scene = scene_from_args(build_parser().parse_args(["rope", *flags, "--substeps", "8"]))
    run_scene = scene_from_args(build_cli_parser().parse_args(["run", "rope", *flags]))
    assert viewer_scene.params == run_scene.params
    assert viewer_scene.params["stiffness"] == 5000 and viewer_scene.params["n"] == 12
    assert viewer_scene.settings == {**run_scene.settings, "substeps": 8}
    assert run_scene.settings["dt"] == 0.0005 and run_scene.settings["integrator"] == "verlet"


def test_headless_window_backend_points_to_ropesim_render(capsys):
    assert main(["cloth", "--window", "headless"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ropesim render" in err


def test_help_lists_our_and_moderngl_window_flags(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--window", "--size", "--fullscreen", "--vsync", "--integrator", "--set"):
        assert flag in out


def test_no_display_is_a_one_line_error_naming_the_headless_command():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from ropesim.app.viewer import main; sys.exit(main([]))"],
        env=env, capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1, result.stderr
    assert "display" in result.stderr and "ropesim render" in result.stderr
    assert "Traceback" not in result.stderr


# --- the panel reads the controller through an interface ---------------------------------------
def test_controller_provides_everything_the_panel_reads():
    from ropesim.app.panel import PanelSource

    c = controller(cloth_scene())
    wanted = set(PanelSource.__annotations__) | {
        name for name, value in vars(PanelSource).items()
        if callable(value) and not name.startswith("_")}
    assert wanted >= {"sim", "energy", "set_parameter", "restart_cloth"}
    assert [name for name in sorted(wanted) if not hasattr(c, name)] == []


def test_panel_builds_its_windows_from_a_controller_without_a_window():
    """imgui draw lists are built on the CPU: no window and no GL are needed."""
    from imgui_bundle import imgui, implot

    from ropesim.app.panel import Panel

    context, plot_context = imgui.create_context(), implot.create_context()
    try:
        io = imgui.get_io()
        io.set_ini_filename("")   # no imgui.ini in the working folder
        io.display_size = imgui.ImVec2(*WIDE)   # wide enough for the panel and the overlay
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        c = ViewerController(cloth_scene(), WIDE, clock=FakeClock())
        panel = Panel(c)
        vertices = []
        for _ in range(3):
            c.advance(FRAME)
            io.delta_time = FRAME
            imgui.new_frame()
            panel.draw()
            imgui.render()
            vertices.append(sum(cmd.vtx_buffer.size() for cmd in imgui.get_draw_data().cmd_lists))
        # imgui shows new windows from their second frame on
        assert min(vertices[1:]) > 1000   # text, sliders and the energy plot of both windows
    finally:
        implot.destroy_context(plot_context)
        imgui.destroy_context(context)


# --- issue 12: framing in the free viewport ------------------------------------------------------
def framed_box(c: ViewerController) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel bounds (min, max) of the projected scene reach, and the free viewport in px."""
    from ropesim.render.framing import reach_points

    points = reach_points(c.sim)
    low, high = points.min(axis=0), points.max(axis=0)
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1])
                        for z in (low[2], high[2])])
    pixels, depth = c.camera.project(corners, *c.view_size)
    assert np.all(np.isfinite(pixels)) and np.all((depth > -1) & (depth < 1))
    left, top, right, bottom = c.free_viewport()
    width, height = c.view_size
    free = np.array([[left * width, top * height], [right * width, bottom * height]])
    return pixels.min(axis=0), pixels.max(axis=0), free


@pytest.mark.parametrize("size,overrides", [
    ((1280, 720), {}),
    ((1280, 720), {"cloth.nx": 128}),
    ((1280, 720), {"cloth.nx": 128, "cloth.ny": 128}),
    ((900, 560), {}),                       # narrow: the panel is a strip at the top
])
def test_scene_load_and_f_frame_the_scene_inside_the_free_viewport(size, overrides):
    scene = load("cloth").with_overrides(overrides) if overrides else load("cloth")
    c = ViewerController(scene, size, clock=FakeClock())
    for _ in range(2):                      # the initial view, then F after orbiting
        low, high, free = framed_box(c)
        assert np.all(low >= free[0] - 0.5) and np.all(high <= free[1] + 0.5)
        fill = (high - low) / (free[1] - free[0])
        assert fill.max() > 0.5             # the tighter side fills a good part of the free part
        direction = (c.camera.azimuth, c.camera.elevation)
        assert direction == (scene.camera["azimuth"], scene.camera["elevation"])
        c.press(700, 300, LEFT)
        c.drag(800, 350)
        c.release(800, 350, LEFT)
        c.handle_key("f")
    assert c.panel_collapsed == (size[0] < 1000)


def test_a_chain_released_level_is_framed_with_where_it_will_hang():
    c = ViewerController(load("chain-wave"), (1280, 720), clock=FakeClock())
    pin = c.sim.positions[np.flatnonzero(c.sim.pinned)[0]]
    length = np.linalg.norm(c.sim.positions - pin, axis=1).max()
    hanging = pin - np.array([0.0, length, 0.0])
    pixels, _ = c.camera.project(np.vstack([c.sim.positions, hanging]), *c.view_size)
    left, top, right, bottom = c.free_viewport()
    width, height = c.view_size
    assert np.all(pixels[:, 0] >= left * width - 0.5) and np.all(pixels[:, 0] <= right * width)
    assert np.all(pixels[:, 1] >= top * height - 0.5) and np.all(pixels[:, 1] <= bottom * height)


def test_hiding_the_panel_centres_the_scene_in_the_whole_view():
    c = ViewerController(load("cloth"), (1280, 720), clock=FakeClock())
    centre = c.camera.project(c.camera.target[None], *c.view_size)[0][0]
    left, _, right, _ = c.free_viewport()
    assert centre[0] == pytest.approx(0.5 * (left + right) * 1280)
    c.handle_key("h")
    centre = c.camera.project(c.camera.target[None], *c.view_size)[0][0]
    assert centre == pytest.approx([640.0, 360.0])


# --- issue 12: title, warm-up, recording, drag threshold, clamping ------------------------------
def test_title_shows_scene_time_fps_and_real_time_factor():
    import re

    c = controller()
    for _ in range(30):
        c.advance(FRAME)
    title = c.window_title()
    match = re.fullmatch(r"ropesim - test-rope - t (\d+\.\d) s - (\d+) fps - (\d+\.\d\d)x real time",
                         title)
    assert match, title
    assert float(match[1]) == pytest.approx(c.sim.time, abs=0.05)
    assert int(match[2]) == 60 and float(match[3]) == pytest.approx(1.0, abs=0.01)
    c.handle_key("space")
    assert c.window_title().endswith(" - paused")


def test_a_new_scene_or_integrator_warms_up_outside_the_timing():
    c = controller()
    assert c.needs_warm_up
    c.warm_up()
    # one step to compile (not measured), one to measure the cost for the next frame
    assert not c.needs_warm_up and c.sim.step_count == 2 and c.frame_clock.ms_per_step > 0
    assert c.advance(0.2) == 0              # the frame that held the compile owes no time
    budget = c.frame_clock.step_budget(0.01)
    assert budget < 10**9 and c.advance(0.01) == min(10, budget)
    c.handle_key("i")
    assert c.needs_warm_up
    c.handle_key("space")
    assert not c.needs_warm_up              # paused: nothing to compile yet


def test_a_recording_stops_and_is_saved_when_the_scene_changes(tmp_path):
    c = controller(frame_source=fake_frames(), output_dir=tmp_path)
    c.handle_key("v")
    for _ in range(3):
        c.advance(FRAME)
    c.handle_key("2")
    assert c.recorder is None and c.status != "recording"
    videos = list(tmp_path.glob("ropesim-test-rope-*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 0
    assert "video saved" in c.message and "3 frames" in c.message and "scene 2" in c.message


def test_a_press_that_just_misses_a_particle_does_not_orbit_until_the_mouse_moves():
    from ropesim.app.mouse import DRAG_THRESHOLD_PX

    c = controller()
    view = (c.camera.azimuth, c.camera.elevation, *c.camera.target)
    c.press(5, 5, LEFT)
    c.drag(5 + 0.7 * DRAG_THRESHOLD_PX, 5 + 0.7 * DRAG_THRESHOLD_PX)   # < threshold
    c.release(5 + 0.7 * DRAG_THRESHOLD_PX, 5, LEFT)
    assert (c.camera.azimuth, c.camera.elevation, *c.camera.target) == view
    c.press(5, 5, RIGHT)
    c.drag(7, 6)
    assert np.array_equal(c.camera.target, view[2:])   # no pan either
    c.drag(5 + 2 * DRAG_THRESHOLD_PX, 5)
    assert not np.array_equal(c.camera.target, view[2:])


def test_a_typed_stiffness_beyond_the_limit_is_clamped_and_the_reason_shown():
    from ropesim.app.parameters import SCALE_LIMITS

    c = controller()
    c.set_parameter("stiffness", 1e12)
    limit = SCALE_LIMITS[1] * 2000.0
    assert c.parameter("stiffness") == pytest.approx(limit)
    assert np.allclose(c.sim.stiffness, SCALE_LIMITS[1] * c.sim.system.stiffness)
    assert "above the highest" in c.message and f"{limit:g}" in c.message
    c.set_parameter("dt", 1.0)
    assert c.sim.dt == 0.02 and "dt" in c.message
    c.set_parameter("stiffness", 3000.0)
    assert c.message == ""                  # in range: nothing to say


def test_resuming_after_a_divergence_restarts_the_energy_plot():
    c = diverged_controller()
    assert c.error and len(c.energy) > 2
    c.set_parameter("dt", 0.001)
    c.handle_key("space")
    assert c.error is None and len(c.energy) == 1
