"""`ropesim view --replay run.npz` (issue 15): a saved trajectory shown with the timeline
controls and nothing simulated; the panel's Timeline section and its stability gauge."""

from __future__ import annotations

import numpy as np
import pytest

from ropesim.app.controller import ViewerController
from ropesim.app.replay import Replay, open_trajectory, replay_scene, viewer_scene
from ropesim.app.timeline_panel import AMBER, GREEN, RED, GaugeReading, gauge_color
from ropesim.app.viewer import build_parser, main
from ropesim.engine.stability import stability_margin
from ropesim.io.scenes import scene_from_dict
from ropesim.io.trajectory import load_trajectory, record
from test_viewer import FakeClock

FRAME = 1.0 / 60.0


def rope_scene():
    return scene_from_dict({
        "builder": "rope",
        "rope": {"n": 12, "length": 1.0, "pins": "start", "mass": 0.02, "stiffness": 500.0,
                 "damping": 0.1},
        "simulation": {"dt": 0.001},
    }, "test-rope")


@pytest.fixture
def saved_run(tmp_path):
    """A 0.2 s rope run sampled every 10 steps, saved as the CLI saves it."""
    import tomli_w

    scene = rope_scene()
    trajectory = record(scene.simulation(), steps=200, every=10)
    trajectory.scene_toml = tomli_w.dumps(scene.to_dict())
    path = tmp_path / "run.npz"
    trajectory.save(path)
    return path


def replay_controller(path) -> ViewerController:
    trajectory = load_trajectory(path)
    return ViewerController(replay_scene(trajectory), (800, 600), clock=FakeClock(),
                            replay=trajectory)


def test_replay_opens_paused_on_the_first_frame_and_steps_through_the_frames(saved_run):
    trajectory = load_trajectory(saved_run)
    c = replay_controller(saved_run)
    assert c.paused and c.timeline.replaying and not c.needs_warm_up
    assert np.array_equal(c.sim.positions, trajectory.positions[0])
    c.handle_key("right")
    assert c.sim.time == trajectory.times[1]
    assert np.array_equal(c.sim.positions, trajectory.positions[1])
    c.handle_key("period")
    c.handle_key("left")
    assert c.sim.time == trajectory.times[1]
    c.handle_key("comma")
    c.handle_key("left")                          # stays on the first frame
    assert c.sim.time == trajectory.times[0]


def test_replay_simulates_nothing(saved_run):
    c = replay_controller(saved_run)
    c.single_step()
    c.warm_up()
    c.set_integrator("verlet")
    c.warm_up()
    assert c.sim.step_count == 0
    c.handle_key("space")
    c.advance(FRAME)
    assert c.sim.step_count == 0 and c.frame_clock.steps_last_frame == 0


def test_playing_a_replay_moves_in_simulated_time_and_pauses_at_the_end(saved_run):
    trajectory = load_trajectory(saved_run)
    c = replay_controller(saved_run)
    c.handle_key("space")
    c.advance(0.035)                                # 35 ms of real time at 1x
    assert c.sim.time == trajectory.times[3]        # frames every 10 ms
    for _ in range(30):
        c.advance(0.05)
    assert c.paused and c.sim.time == trajectory.times[-1] and "end" in c.message
    c.handle_key("space")                           # plays again from the start
    assert c.sim.time == trajectory.times[0] and not c.paused


def test_the_timeline_slider_scrubs_a_replay(saved_run):
    trajectory = load_trajectory(saved_run)
    c = replay_controller(saved_run)
    c.timeline.scrub_to(0.5)
    assert c.sim.time == pytest.approx(trajectory.times[len(trajectory) // 2])
    assert c.timeline.fraction == pytest.approx(0.5)
    assert c.timeline.seconds_held == pytest.approx(0.2)


def test_replay_scene_uses_the_stored_scene_else_its_springs(saved_run):
    trajectory = load_trajectory(saved_run)
    assert replay_scene(trajectory).builder == "rope"
    trajectory.scene_toml, trajectory.scene = "", "not-shipped"
    fallback = replay_scene(trajectory)
    assert fallback.builder == "explicit"
    sim = fallback.simulation()
    assert sim.n_particles == trajectory.n_particles and sim.n_springs == len(trajectory.springs)


def test_a_replay_of_another_size_is_refused_naming_the_counts(saved_run):
    trajectory = load_trajectory(saved_run)
    sim = scene_from_dict({"builder": "rope", "rope": {"n": 5}}, "small").simulation()
    with pytest.raises(ValueError, match="12 particles, the scene 5"):
        Replay(trajectory, sim)


def test_replay_flag_reads_the_file_and_bad_files_are_one_line_errors(saved_run, tmp_path, capsys):
    scene, trajectory = viewer_scene(build_parser().parse_args(["--replay", str(saved_run)]))
    assert scene.builder == "rope" and len(trajectory) == 21
    with pytest.raises(ValueError, match="--replay"):
        open_trajectory(tmp_path / "missing.npz")
    assert main(["--replay", str(tmp_path / "missing.npz")]) == 2
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    assert main(["--replay", str(tmp_path / "junk.npz")]) == 2
    assert main(["--history-mb", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 3 and "Traceback" not in err
    assert "missing.npz" in err and "junk.npz" in err and "--history-mb" in err


def test_history_mb_sets_the_budget():
    args = build_parser().parse_args(["--history-mb", "64"])
    assert args.history_mb == 64
    c = ViewerController(rope_scene(), (800, 600), clock=FakeClock(), history_mb=args.history_mb)
    assert c.timeline.history.budget_bytes == 64 << 20


# --- the panel's timeline section and stability gauge ---------------------------------------
def test_gauge_colour_is_green_below_half_amber_below_one_red_from_one():
    assert gauge_color(0.0) == GREEN and gauge_color(0.49) == GREEN
    assert gauge_color(0.5) == AMBER and gauge_color(0.99) == AMBER
    assert gauge_color(1.0) == RED and gauge_color(3.0) == RED


def test_gauge_reading_is_dt_over_the_stability_limit_and_follows_dt():
    sim = rope_scene().simulation()
    reading = GaugeReading(every=1)
    margin, limit = reading.read(sim)
    assert margin == pytest.approx(stability_margin(sim), rel=1e-9)
    assert limit == pytest.approx(sim.dt / margin)
    sim.dt = 2 * sim.dt
    assert reading.read(sim)[0] == pytest.approx(2 * margin, rel=1e-9)


def _panel_vertices(c: ViewerController) -> int:
    """Vertices of the imgui frame the Panel builds over ``c`` (after 3 frames), in a
    window tall enough for every section (imgui leaves out what is scrolled away)."""
    from imgui_bundle import imgui

    from ropesim.app.panel import Panel
    from test_viewer_panel import Harness

    harness = Harness((1280, 2400))
    try:
        harness.controller, harness.panel = c, Panel(c)
        c.advance(FRAME)
        harness.frame(3)
        return sum(cmd.vtx_buffer.size() for cmd in imgui.get_draw_data().cmd_lists)
    finally:
        harness.close()


def test_the_panel_builds_the_timeline_section_in_a_replay(saved_run):
    assert _panel_vertices(replay_controller(saved_run)) > 1000


def test_the_panel_builds_the_branch_plot():
    c = ViewerController(rope_scene(), (1280, 720), clock=FakeClock())
    c.advance(FRAME)
    c.branch_here()
    c.set_parameter("stiffness", 0.5 * c.parameter("stiffness"))
    for _ in range(4):
        c.advance(FRAME)
    without = _panel_vertices(ViewerController(rope_scene(), (1280, 720), clock=FakeClock()))
    assert _panel_vertices(c) > without   # the RMS / energy plot adds its lines


def test_the_panel_stacks_the_energy_budget_once_tracking_is_on():
    def advanced(tracking: bool) -> ViewerController:
        c = ViewerController(rope_scene(), (1280, 2400), clock=FakeClock())
        c.timeline.set_budget_tracking(tracking)
        for _ in range(4):
            c.advance(FRAME)
        return c

    without = _panel_vertices(advanced(False))   # the same frames, the budget not tracked
    # the balance line, the shaded layers and the line
    assert _panel_vertices(advanced(True)) > without


def test_a_saved_viewer_history_replays_frame_for_frame(tmp_path):
    c = ViewerController(rope_scene(), (800, 600), clock=FakeClock(), output_dir=tmp_path)
    for _ in range(6):
        c.advance(FRAME)
    held = c.timeline.history.states()
    path = c.timeline.save_history()
    assert path is not None and path.suffix == ".npz" and "--replay" in c.message
    trajectory = load_trajectory(path)
    assert len(trajectory) == len(held)
    assert np.array_equal(trajectory.times, c.timeline.history.times)
    replay = replay_controller(path)
    for state in held:
        assert np.array_equal(replay.sim.positions, state.positions.astype(np.float32))
        replay.handle_key("right")
    sim = rope_scene().simulation()
    sim.set_state(held[-1])
    assert trajectory.total[-1] == pytest.approx(sim.energy())
