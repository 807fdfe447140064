"""The viewer's history (issue 15): the ring buffer within its memory budget, rewind /
scrub / resume through the controller matching a fresh run bit for bit, and branches."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from ropesim.app.controller import ViewerController
from ropesim.app.history import DEFAULT_HISTORY_MB, MB, History
from ropesim.app.timeline import BUDGET_LAYERS, BranchFrame, rms_difference
from ropesim.app.timeline_panel import stacked
from ropesim.engine.integrators import INTEGRATORS
from ropesim.io.scenes import scene_from_dict
from ropesim.render.ghost import GHOST_COLOR
from ropesim.render.renderer import Renderer, RenderOptions
from test_renderer import ctx  # noqa: F401  (the EGL context fixture, shared)
from test_viewer import FakeClock


@dataclass(frozen=True)
class FakeState:
    """A snapshot's shape: arrays and an nbytes total."""

    positions: np.ndarray
    stiffness: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.positions.nbytes + self.stiffness.nbytes


def fake_state(value: float, n: int = 1000, stiffness: float = 100.0) -> FakeState:
    return FakeState(np.full((n, 3), value), np.full(4 * n, stiffness))


# --- the ring buffer ---------------------------------------------------------------------
def test_default_budget_is_256_mb():
    assert DEFAULT_HISTORY_MB == 256
    assert History().budget_bytes == 256 * MB


@pytest.mark.parametrize("budget", [0, -1.0, float("nan"), float("inf")])
def test_a_budget_that_is_not_positive_and_finite_is_refused_naming_it(budget):
    with pytest.raises(ValueError, match="budget_mb"):
        History(budget)


def test_a_budget_that_is_not_a_number_is_a_type_error():
    with pytest.raises(TypeError, match="budget_mb"):
        History("lots")


def test_history_stays_within_its_memory_budget_and_drops_the_oldest_first():
    history = History(budget_mb=1.0)
    frame_bytes = fake_state(0.0).nbytes          # 56 kB, all arrays different each frame
    for k in range(200):
        history.push(fake_state(float(k), stiffness=float(k)), time=k * 0.01)
        assert history.nbytes <= history.budget_bytes
    kept = len(history)
    assert kept == history.budget_bytes // frame_bytes
    assert history.nbytes == kept * frame_bytes
    assert history.current.positions[0, 0] == 199.0
    assert history.times[0] == pytest.approx((200 - kept) * 0.01)
    assert history.seconds_held == pytest.approx((kept - 1) * 0.01)


def test_arrays_shared_between_states_are_counted_once():
    history = History(budget_mb=1.0)
    stiffness = np.full(4000, 100.0)      # a parameter array the snapshots share
    for k in range(10):
        history.push(FakeState(np.full((1000, 3), float(k)), stiffness), time=k * 0.01)
    positions = 1000 * 3 * 8
    assert history.nbytes == 10 * positions + stiffness.nbytes
    history.scrub_to(fraction=0.0)
    history.truncate_after()   # drops all but the oldest, which still holds the array
    assert len(history) == 1 and history.nbytes == positions + stiffness.nbytes
    history.clear()
    assert history.nbytes == 0


def test_step_back_forward_and_the_ends():
    history = History()
    for k in range(5):
        history.push(fake_state(float(k), n=4), time=0.1 * k)
    assert history.at_end and history.step_forward() is None
    assert history.step_back().positions[0, 0] == 3.0
    assert history.step_back().positions[0, 0] == 2.0
    assert not history.at_end and history.cursor == 2
    assert history.step_forward().positions[0, 0] == 3.0
    for _ in range(3):
        history.step_back()
    assert history.cursor == 0 and history.step_back() is None


def test_scrub_to_a_fraction_or_a_time_shows_the_nearest_state():
    history = History()
    for k in range(11):
        history.push(fake_state(float(k), n=4), time=0.5 + 0.1 * k)   # 0.5 .. 1.5 s
    assert history.scrub_to(0.0).positions[0, 0] == 0.0
    assert history.scrub_to(1.0).positions[0, 0] == 10.0
    assert history.scrub_to(0.42).positions[0, 0] == 4.0
    assert history.fraction == pytest.approx(0.4)
    assert history.scrub_to(time=0.87).positions[0, 0] == 4.0
    assert history.current_time == pytest.approx(0.9)
    assert history.scrub_to(-3.0).positions[0, 0] == 0.0    # clamped
    assert history.scrub_to(time=99.0).positions[0, 0] == 10.0
    with pytest.raises(TypeError, match="fraction"):
        history.scrub_to(0.5, time=1.0)
    with pytest.raises(ValueError, match="fraction"):
        history.scrub_to(float("nan"))


def test_truncate_after_and_pushing_while_rewound_drop_the_later_states():
    history = History()
    for k in range(6):
        history.push(fake_state(float(k), n=4), time=float(k))
    history.scrub_to(time=2.0)
    assert history.truncate_after() == 3
    assert len(history) == 3 and history.at_end
    history.scrub_to(time=1.0)
    history.push(fake_state(9.0, n=4), time=1.5)
    assert list(history.times) == [0.0, 1.0, 1.5] and history.current.positions[0, 0] == 9.0


def test_a_state_larger_than_the_budget_is_still_kept_alone():
    history = History(budget_mb=0.01)
    history.push(fake_state(0.0), time=0.0)
    history.push(fake_state(1.0), time=0.1)
    assert len(history) == 1 and history.current.positions[0, 0] == 1.0


# --- the viewer's controller: rewind, scrub, resume -------------------------------------

FRAME = 1.0 / 60.0


def cloth_scene(integrator: str = "symplectic_euler", dt: float = 0.001):
    return scene_from_dict({
        "builder": "cloth",
        "cloth": {"nx": 8, "ny": 6, "spacing": 0.1, "pins": "top-corners",
                  "stiffness": 800.0, "damping": 0.2},
        "simulation": {"dt": dt, "integrator": integrator},
    }, "test-cloth")


def make_controller(scene=None, **kwargs) -> ViewerController:
    return ViewerController(scene or cloth_scene(), (800, 600), clock=FakeClock(), **kwargs)


def run_frames(c: ViewerController, frames: int) -> None:
    for _ in range(frames):
        c.advance(FRAME)


def fresh_run(scene, steps: int):
    sim = scene.simulation()
    sim.step(steps)
    return sim


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_rewinding_n_frames_then_resuming_matches_a_fresh_run_bit_for_bit(integrator):
    scene = cloth_scene(integrator)
    c = make_controller(scene)
    run_frames(c, 12)
    for _ in range(5):
        c.handle_key("left")
    assert c.paused and c.timeline.rewound
    c.handle_key("space")                 # resume from the shown moment
    assert not c.paused and not c.timeline.rewound
    run_frames(c, 7)
    fresh = fresh_run(scene, c.sim.step_count)
    assert c.sim.time == fresh.time
    assert np.array_equal(c.sim.positions, fresh.positions)
    assert np.array_equal(c.sim.velocities, fresh.velocities)


def test_left_and_comma_step_back_a_frame_each_and_pause():
    c = make_controller()
    run_frames(c, 6)
    times = c.timeline.history.times
    c.handle_key("left")
    assert c.paused and c.sim.time == times[-2]
    c.handle_key("comma")
    assert c.sim.time == times[-3]
    assert np.array_equal(c.sim.positions, c.timeline.history.current.positions)


def test_right_steps_forward_through_the_history_then_simulates_at_its_end():
    c = make_controller()
    run_frames(c, 6)
    newest = c.timeline.history.times[-1]
    for _ in range(3):
        c.handle_key("left")
    steps = c.sim.step_count
    for _ in range(3):
        c.handle_key("right")
    assert c.sim.time == newest and c.sim.step_count > steps
    held = len(c.timeline.history)
    c.handle_key("period")                # at the end: one step of dt, held as a frame
    assert c.sim.time == pytest.approx(newest + c.sim.dt)
    assert len(c.timeline.history) == held + 1


def test_scrubbing_shows_the_moment_and_space_drops_the_later_history():
    c = make_controller()
    run_frames(c, 10)
    held = len(c.timeline.history)
    c.timeline.scrub_to(0.5)
    shown = c.sim.time
    assert c.paused and 0 < c.timeline.history.cursor < held - 1
    assert c.timeline.history.times[0] < shown < c.timeline.history.times[-1]
    c.handle_key("space")
    assert c.timeline.history.times[-1] == shown
    assert c.energy.series()["time"][-1] <= shown        # the plot forgets the dropped future
    run_frames(c, 2)
    assert c.timeline.history.times[-1] > shown


def test_the_viewer_history_stays_within_its_budget_and_reports_seconds_held():
    c = make_controller(history_mb=0.05)
    frame_bytes = c.sim.get_state().nbytes
    run_frames(c, 60)
    history = c.timeline.history
    assert history.nbytes <= 0.05 * MB
    assert 1 < len(history) < 60
    assert history.seconds_held == pytest.approx(history.times[-1] - history.times[0])
    assert history.seconds_held < c.sim.time
    assert history.nbytes < len(history) * frame_bytes   # parameter arrays shared


def test_reset_and_a_new_scene_restart_the_history():
    c = make_controller()
    run_frames(c, 5)
    c.reset()
    assert len(c.timeline.history) == 1 and c.timeline.seconds_held == 0.0


# --- branches ---------------------------------------------------------------------------
def test_the_ghost_of_a_branch_is_the_original_run_and_the_branch_differs():
    scene = cloth_scene()
    c = make_controller(scene)
    run_frames(c, 4)
    c.handle_key("space")                              # pause
    c.handle_key("b")
    branch = c.timeline.branch
    assert branch is not None and c.options.ghost is not None
    c.set_parameter("stiffness", 0.25 * c.parameter("stiffness"))
    c.handle_key("space")
    run_frames(c, 8)
    original = fresh_run(scene, branch.ghost.step_count)
    assert branch.ghost.time == pytest.approx(c.sim.time)
    assert np.array_equal(branch.ghost.positions, original.positions)
    series = branch.series.series()
    assert len(series["time"]) >= 8 and series["rms"][0] == 0.0
    assert series["rms"][-1] == pytest.approx(rms_difference(c.sim.positions,
                                                             branch.ghost.positions))
    assert series["rms"][-1] > 1e-4                     # softer cloth sags more
    assert isinstance(c.timeline.history.current, BranchFrame)


def test_branching_at_an_earlier_moment_takes_the_ghost_from_the_history():
    c = make_controller()
    run_frames(c, 8)
    for _ in range(3):
        c.handle_key("left")
    recorded = c.timeline.history.later()         # the original run's next 3 frames
    branched_at = c.sim.get_state()
    c.handle_key("b")
    assert len(c.timeline.branch.pending) == 3
    c.handle_key("space")
    run_frames(c, 1)
    reached = [s for t, s in recorded if t <= c.sim.time + 0.5 * c.sim.dt]
    expected = reached[-1] if reached else branched_at
    assert np.array_equal(c.timeline.branch.ghost.positions, expected.positions)
    assert np.array_equal(c.timeline.branch.ghost.velocities, expected.velocities)


def test_rewinding_a_branch_moves_both_runs_and_resuming_before_it_drops_it():
    c = make_controller()
    run_frames(c, 3)
    c.handle_key("b")
    c.set_parameter("damping", 4.0 * c.parameter("damping"))
    run_frames(c, 5)
    ghost_time = c.timeline.branch.ghost.time
    c.handle_key("left")
    assert c.timeline.branch.ghost.time < ghost_time
    assert c.timeline.branch.ghost.time == c.sim.time
    c.timeline.scrub_to(0.0)                # before the branch
    assert c.options.ghost is None
    c.handle_key("space")
    assert c.timeline.branch is None and "dropped" in c.message


def test_n_drops_the_branch():
    c = make_controller()
    run_frames(c, 2)
    c.handle_key("b")
    run_frames(c, 2)
    c.handle_key("n")
    assert c.timeline.branch is None and c.options.ghost is None
    assert not any(isinstance(s, BranchFrame) for _, s in c.timeline.history.later())
    assert not isinstance(c.timeline.history.current, BranchFrame)


# --- the ghost on screen (EGL) ----------------------------------------------------------------
def test_the_ghost_of_a_branch_is_drawn_translucent_where_the_original_run_is(ctx):
    """The ghost's pixels take the ghost colour over the background, and the live
    cloth stays visible through it (the ghost writes no depth and blends)."""
    c = make_controller()
    run_frames(c, 2)
    c.handle_key("b")
    renderer = Renderer(ctx, c.sim)
    grabber = renderer.frame_grabber(320, 240)
    shifted = c.sim.positions + np.array([0.3, 0.0, 0.0])
    c.options.shadows = c.options.show_grid = False
    plain = grabber.grab(renderer, c.camera, RenderOptions(shadows=False, show_grid=False))
    c.options.ghost = shifted
    ghosted = grabber.grab(renderer, c.camera, c.options).astype(float)
    plain = plain.astype(float)
    changed = np.abs(ghosted - plain).sum(axis=2) > 30
    assert changed.sum() > 200
    # where only the ghost covers the background, the colour moved toward the ghost's
    background = np.all(np.abs(plain - plain[0, 0]) < 3, axis=2)
    only_ghost = changed & background
    assert only_ghost.sum() > 100
    towards = np.array(GHOST_COLOR) * 255 - plain[0, 0]
    moved = (ghosted[only_ghost] - plain[only_ghost]) @ towards
    assert np.all(moved > 0)
    # the live cloth behind the sheet still shows (blended, not hidden)
    cloth = changed & ~background
    assert np.all(np.abs(ghosted[cloth] - np.array(GHOST_COLOR) * 255).sum(axis=1) > 20)


# --- the energy budget the panel stacks -------------------------------------------------------
def test_the_stacked_budget_reaches_initial_plus_inputs_minus_potentials():
    """kinetic + elastic + losses = initial + inputs - gravity - attached - balance: with
    symplectic Euler at a small dt the stack's top meets the line within 1 % of the
    largest energy it held (the budget closes)."""
    c = make_controller(cloth_scene(dt=2e-4))
    c.timeline.set_budget_tracking(True)
    assert c.sim.track_energy
    run_frames(c, 20)
    series = c.timeline.budget.series()
    assert len(series["time"]) >= 20
    top = stacked(series, BUDGET_LAYERS)[-1]
    assert series["damping"][-1] > 0                      # the dampers took energy
    assert np.max(np.abs(top - series["available"])) < 0.01 * np.max(top)
    c.handle_key("left")                                   # rewinding drops later samples
    assert c.timeline.budget.series()["time"][-1] <= c.sim.time
    c.timeline.set_budget_tracking(False)
    assert not c.sim.track_energy and len(c.timeline.budget) == 0


def test_resuming_at_a_moment_with_a_grab_lets_the_particle_go():
    """A restored state may hold a grab the mouse no longer drives: resuming releases it."""
    c = make_controller()
    i = c.sim.n_particles - 1
    c.sim.grab(i, c.sim.positions[i] + np.array([0.0, 0.1, 0.0]))
    run_frames(c, 3)
    c.sim.release()
    run_frames(c, 3)
    for _ in range(4):
        c.handle_key("left")
    assert c.sim.grabbed == i              # the state shown was taken during the grab
    c.handle_key("space")
    assert c.sim.grabbed is None


def test_an_edit_of_the_network_restarts_the_history_so_rewinding_never_fails():
    """States held before a spring was added have the old spring list (set_state refuses
    them): the timeline starts again at the edit, and stepping back stays after it."""
    c = make_controller()
    run_frames(c, 6)
    c.sim.add_spring(0, 47)
    edited_at = c.sim.time
    run_frames(c, 4)
    assert "edited" in c.message
    for _ in range(10):
        c.handle_key("left")             # as far back as the history goes: no error
    assert c.sim.time >= edited_at and c.sim.n_springs == c.sim.system.springs.shape[0]
    c.handle_key("space")
    run_frames(c, 2)
    assert np.isfinite(c.sim.positions).all()
