"""The viewer's frame clock on a fake clock: real-time stepping within a per-frame time
budget. A frame's real duration is its draw time plus the physics it ran, as in the
window's loop; the physics' cost per step is given, so nothing here depends on the
machine."""

from __future__ import annotations

import pytest

from ropesim.app.frame_clock import (BUDGET_FRACTION, FPS_MARGIN, GOVERNOR_FRAMES, MAX_FRAME_TIME,
                                     MIN_BUDGET_FRACTION, MIN_FPS, MSAA_HEADROOM, FrameClock,
                                     SampleGovernor)
from ropesim.render.frame_loop import FrameAdvance

DT = 0.001   # s


def run_loop(clock: FrameClock, draw_s: float, step_s: float, frames: int,
             dt: float = DT) -> dict[str, list[float]]:
    """Drive ``clock`` as the window does: each frame lasts the draw plus the physics
    of the steps the clock chose (``step_s`` s per step). Returns per-frame lists."""
    frame_time = 1.0 / 60.0
    out: dict[str, list[float]] = {"frame": [], "physics": [], "simulated": []}
    for _ in range(frames):
        clock.tick(frame_time)
        steps = clock.steps_for(min(frame_time, MAX_FRAME_TIME), dt)
        physics = steps * step_s
        clock.count(FrameAdvance(steps, physics), dt)
        out["frame"].append(frame_time)
        out["physics"].append(physics)
        out["simulated"].append(steps * dt)
        frame_time = draw_s + physics
    return out


def test_a_slow_draw_keeps_the_simulation_in_real_time():
    clock = FrameClock()
    run = run_loop(clock, draw_s=0.1, step_s=2e-5, frames=60)
    steady = slice(10, None)
    real = sum(run["frame"][steady])
    assert sum(run["simulated"][steady]) == pytest.approx(real, rel=0.01)
    assert clock.real_time_factor == pytest.approx(1.0, abs=0.01)
    assert clock.fps == pytest.approx(1.0 / 0.102, rel=0.05)   # the draw sets the frame rate
    assert not clock.budget_limited


def test_fast_physics_at_vsync_runs_exactly_in_real_time():
    clock = FrameClock()
    run = run_loop(clock, draw_s=1.0 / 60.0, step_s=0.0, frames=300)   # a free physics
    assert sum(run["simulated"][5:]) == pytest.approx(sum(run["frame"][5:]), abs=DT)


def test_slow_physics_is_capped_by_the_budget_and_cannot_spiral():
    """2 ms per 1 ms step: real time would need twice the machine. The physics takes at
    most BUDGET_FRACTION of each frame, so frames settle at draw / (1 - fraction)."""
    clock = FrameClock()
    draw = 0.01
    run = run_loop(clock, draw_s=draw, step_s=0.002, frames=200)
    # the first two frames measure the cost (uncapped); from then on the budget holds
    for previous, physics in zip(run["frame"][2:], run["physics"][3:]):
        assert physics <= BUDGET_FRACTION * previous + 0.002   # whole steps, at least one
    settled = run["frame"][-50:]
    assert max(settled) <= draw / (1 - BUDGET_FRACTION) + 0.004
    assert max(settled) < 2 * min(settled)                   # steady, not growing
    assert clock.budget_limited and clock.accumulator == 0.0  # the debt is dropped
    factor = sum(run["simulated"][-50:]) / sum(settled)
    assert factor == pytest.approx(BUDGET_FRACTION * DT / 0.002, rel=0.2)


def test_a_slow_draw_with_slow_physics_keeps_the_minimum_frame_rate():
    """A 25 ms draw (a large cloth on a software rasteriser) and physics that cannot keep
    real time in half a frame (0.8 ms per 1 ms step): the physics gets what is left of a
    1 / (MIN_FPS * FPS_MARGIN) frame, so frames settle there (above MIN_FPS by the
    margin), not at draw / (1 - BUDGET_FRACTION)."""
    clock = FrameClock()
    draw, step = 0.025, 0.0008
    target = 1.0 / (MIN_FPS * FPS_MARGIN)
    run = run_loop(clock, draw_s=draw, step_s=step, frames=200)
    settled = run["frame"][-50:]
    assert max(settled) <= target + step + 1e-9
    assert min(settled) >= target - 2 * step          # and it uses what is left
    assert max(settled) < 1.0 / MIN_FPS                # whole steps stay above MIN_FPS
    assert clock.budget_limited
    assert clock.fps == pytest.approx(MIN_FPS * FPS_MARGIN, rel=0.03)


def test_near_the_minimum_frame_rate_the_physics_keeps_its_minimum_share():
    """A 31 ms draw leaves almost nothing of a 1 / MIN_FPS frame: the physics still gets
    MIN_BUDGET_FRACTION of each frame, so frames settle at draw / (1 - that) and it moves on."""
    clock = FrameClock()
    draw, step = 0.031, 0.0008
    run = run_loop(clock, draw_s=draw, step_s=step, frames=200)
    for frame, physics in zip(run["frame"][-50:-1], run["physics"][-49:]):
        assert physics == pytest.approx(MIN_BUDGET_FRACTION * frame, abs=step)
    assert max(run["frame"][-50:]) == pytest.approx(draw / (1 - MIN_BUDGET_FRACTION), abs=2 * step)


def test_a_draw_slower_than_the_minimum_frame_rate_keeps_the_full_budget():
    """A 60 ms draw (a loaded machine) cannot make MIN_FPS whatever the physics does: the
    physics that cannot keep up keeps BUDGET_FRACTION of each frame, as without the floor."""
    clock = FrameClock()
    draw, step = 0.06, 0.0008
    run = run_loop(clock, draw_s=draw, step_s=step, frames=200)
    assert max(run["frame"][-50:]) == pytest.approx(draw / (1 - BUDGET_FRACTION), abs=2 * step)
    assert clock.budget_limited


def test_physics_that_fits_the_budget_keeps_real_time_below_the_minimum_frame_rate():
    """A 60 ms draw (a loaded machine) and physics at 0.3 ms per 1 ms step: real time
    fits in BUDGET_FRACTION of the frame, so it runs in full; the frame rate gives."""
    clock = FrameClock()
    run = run_loop(clock, draw_s=0.06, step_s=0.0003, frames=200)
    assert sum(run["simulated"][-50:]) == pytest.approx(sum(run["frame"][-50:]), rel=0.02)
    assert not clock.budget_limited
    assert clock.fps == pytest.approx(0.7 / 0.06, rel=0.05) and clock.fps < MIN_FPS


def test_max_steps_per_frame_caps_the_steps_as_the_viewers_substeps_flag_asks():
    """``--substeps 4`` with dt = 1 ms at 60 fps: 4 ms of simulated time per 16.7 ms frame
    (slow motion), the rest dropped, however cheap the physics."""
    clock = FrameClock()
    clock.max_steps_per_frame = 4
    run = run_loop(clock, draw_s=1.0 / 60.0, step_s=0.0, frames=120)
    assert all(simulated == pytest.approx(4 * DT) for simulated in run["simulated"])
    assert clock.budget_limited and clock.accumulator == 0.0
    assert clock.real_time_factor == pytest.approx(4 * DT * 60.0, rel=0.02)


def test_the_first_frames_of_an_unmeasured_physics_are_not_capped():
    clock = FrameClock()
    clock.tick(0.2)
    assert clock.steps_for(0.2, DT) == 200
    clock.count(FrameAdvance(200, 3.0), DT)   # the first frame may hold a compile: not counted
    assert clock.ms_per_step == 0.0 and clock.steps_for(0.1, DT) == 100


def test_one_slow_frame_does_not_set_the_budget():
    """A kernel compile makes one frame's steps look slow; the median ignores it."""
    clock = FrameClock()
    clock.count(FrameAdvance(10, 1e-4), DT)
    for cost in (1e-5, 1e-5, 3.0, 1e-5):                     # 3 s: numba compiling
        clock.count(FrameAdvance(100, 100 * cost), DT)
    assert clock.ms_per_step == pytest.approx(0.01)
    assert clock.step_budget(1.0 / 60.0) == int(BUDGET_FRACTION / 60.0 * 1000 / 0.01)


def test_a_skipped_frame_owes_no_time_and_counts_no_frame():
    clock = FrameClock()
    clock.skip_next_frame()
    assert clock.tick(0.2) == 0.0 and clock.fps == 0.0
    assert clock.steps_for(0.0, DT) == 0


def test_time_scale_slows_the_simulated_time():
    clock = FrameClock()
    clock.set_time_scale(0.25)
    run = run_loop(clock, draw_s=1.0 / 60.0, step_s=0.0, frames=240)
    assert sum(run["simulated"][10:]) == pytest.approx(0.25 * sum(run["frame"][10:]), abs=DT)
    assert clock.real_time_factor == pytest.approx(0.25, abs=0.01)
    with pytest.raises(ValueError, match="time_scale"):
        clock.set_time_scale(0.0)


def test_budget_fraction_must_leave_time_to_draw():
    with pytest.raises(ValueError, match="budget_fraction"):
        FrameClock(budget_fraction=1.0)


def test_msaa_goes_off_when_the_median_draw_misses_the_budget_and_back_with_headroom():
    """The window's scene MSAA: 4 samples while draws fit the target frame; when the
    median draw of the last GOVERNOR_FRAMES frames misses it they go off (a few slow
    frames do not, frames that alternate slow and fast do, by their median); draws
    without MSAA that leave room for its cost switch them on again; in between they stay."""
    governor = SampleGovernor(4)
    target = 1.0 / (MIN_FPS * FPS_MARGIN)
    slow, middle, fast = 1.5 * target, 0.7 * target, 0.5 * MSAA_HEADROOM * target
    few_slow = [slow] * (GOVERNOR_FRAMES // 2 - 1) + [fast] * (GOVERNOR_FRAMES // 2 + 1)
    assert all(governor.update(d) == 4 for d in few_slow * 3)   # a minority of slow frames
    alternating = [slow, slow, fast] * GOVERNOR_FRAMES           # the median is slow
    assert 0 in [governor.update(d) for d in alternating[:GOVERNOR_FRAMES + 1]]
    assert all(governor.update(middle) == 0 for _ in range(3 * GOVERNOR_FRAMES))  # no flapping
    ups = [governor.update(fast) for _ in range(GOVERNOR_FRAMES)]   # on once most are fast
    assert ups[:GOVERNOR_FRAMES // 2] == [0] * (GOVERNOR_FRAMES // 2) and ups[-1] == 4
    assert all(governor.update(middle) == 4 for _ in range(3 * GOVERNOR_FRAMES))
    off = SampleGovernor(0)                                  # --samples 0 / unsupported
    assert all(off.update(fast) == 0 for _ in range(2 * GOVERNOR_FRAMES))
