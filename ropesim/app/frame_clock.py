"""The viewer's clock: real frame times in, fixed-dt steps per frame and frame statistics out.

Running, each frame owes the simulation the real time that passed (times the
slow-motion ``time_scale``); the clock runs as many steps of the fixed dt as that
time holds, but no more than fit in the frame's time budget: ``BUDGET_FRACTION``
of the frame's own duration, divided by the measured wall time of one step. So a
slow draw never slows the physics down (a longer frame owes more steps and allows
more), while physics that cannot keep up is capped: the time it could not simulate
is dropped, the simulation runs slower than real time, and the frames cannot
spiral (a frame's physics is at most ``BUDGET_FRACTION`` of the previous frame).
Physics that cannot keep real time even in that budget (a large cloth) is not
real time whatever the frame rate, so while the draw alone is faster than ``MIN_FPS``
it yields to the frame rate: its steps shrink to what keeps frames at MIN_FPS
(1 / (MIN_FPS * FPS_MARGIN) less the draw: aiming 10 % above MIN_FPS keeps a frame
that runs a little long above it), but never below ``MIN_BUDGET_FRACTION`` of the frame;
it then does not halve the frame rate as well. A draw slower than that (a loaded
machine) would not reach MIN_FPS anyway, so the physics keeps the full budget there.
Physics that fits the budget always runs in full (real time first).

The clock also keeps the frame rate and the real-time factor (simulated s per real
s, both over the last ``FPS_WINDOW`` s), the steps of the last frame and the wall
time per step: the median of the last ``STEP_COST_FRAMES`` frames, never counting
the first frame after a new scene or integrator (numba may compile or load its
kernels in it), so one slow frame does not set the budget. Until a frame after that
first one is measured, the steps are not capped (frames are at most MAX_FRAME_TIME).
"""

from __future__ import annotations

import math
import sys
from collections import deque

from ..render.frame_loop import FrameAdvance

MAX_FRAME_TIME = 0.25        # s; a longer frame (window dragged, debugger) counts as this
FPS_WINDOW = 1.0             # s of recent frames the frame rate is averaged over
BUDGET_FRACTION = 0.5        # share of each frame's real duration the physics may use
MIN_FPS = 30.0               # frames per s the budget keeps while the physics is capped
FPS_MARGIN = 1.1             # it aims at MIN_FPS times this, so that a frame's jitter (whole
                             # steps, the buffer swap) leaves the frame rate above MIN_FPS
MIN_BUDGET_FRACTION = 0.15   # share of the frame the physics keeps even below MIN_FPS
GOVERNOR_FRAMES = 30         # frames whose median draw switches the scene's MSAA off or on
MSAA_HEADROOM = 0.45         # MSAA back on when draws without it take under this of the target
STEP_COST_FRAMES = 15        # frames whose ms per step the budget's median is taken over
TIME_SCALES = (1 / 64, 4.0)  # slowest and fastest slow-motion factor (1: real time)


class FrameClock:
    """Frame times -> step counts (:meth:`steps_for`) and frame statistics.

    ``accumulator`` is simulated time owed, s; ``time_scale`` simulated s per real s
    asked for (1: real time); ``fps`` frames per s; ``real_time_factor`` simulated s
    per real s achieved; ``ms_per_step`` the wall time of one step, ms;
    ``steps_last_frame`` the steps run in the last frame; ``budget_limited`` whether
    the last frame's steps were capped by the time budget (or by ``max_steps_per_frame``,
    None: no fixed cap; the viewer's ``--substeps N`` sets it).
    """

    def __init__(self, budget_fraction: float = BUDGET_FRACTION) -> None:
        if not 0.0 < budget_fraction < 1.0:
            raise ValueError(f"budget_fraction: must be in (0, 1), got {budget_fraction}")
        self.budget_fraction = float(budget_fraction)
        self.accumulator = 0.0
        self.time_scale = 1.0
        self.fps = 0.0
        self.real_time_factor = 0.0
        self.steps_last_frame = 0
        self.budget_limited = False
        self.max_steps_per_frame: int | None = None
        self._step_costs: deque[float] = deque(maxlen=STEP_COST_FRAMES)  # ms per step
        self._frames: deque[list[float]] = deque()   # [real s, simulated s] per frame
        self._skip_next = False
        self._last_physics_s = 0.0        # wall time of the last frame's steps, s
        self._first_cost_pending = True   # the next measured frame may hold a compile

    # -- frames ------------------------------------------------------------------------------
    def tick(self, frame_time: float) -> float:
        """Count one displayed frame that took ``frame_time`` s; returns it clamped to
        0..MAX_FRAME_TIME (0 for the frame after :meth:`skip_next_frame`)."""
        frame_time = min(max(float(frame_time), 0.0), MAX_FRAME_TIME)
        if self._skip_next:
            self._skip_next = False
            return 0.0
        self._frames.append([frame_time, 0.0])
        total = sum(real for real, _ in self._frames)
        while len(self._frames) > 1 and total - self._frames[0][0] >= FPS_WINDOW:
            total -= self._frames.popleft()[0]
        self.fps = len(self._frames) / total if total > 0 else 0.0
        self._update_factor(total)
        return frame_time

    def _update_factor(self, total: float) -> None:
        simulated = sum(sim for _, sim in self._frames)
        self.real_time_factor = simulated / total if total > 0 else 0.0

    def skip_next_frame(self) -> None:
        """The next frame's time is not real time owed (it held a kernel compile)."""
        self._skip_next = True

    # -- steps -------------------------------------------------------------------------------
    @property
    def ms_per_step(self) -> float:
        """Wall time of one step, ms: the median of the recent frames (0: not measured)."""
        if not self._step_costs:
            return 0.0
        costs = sorted(self._step_costs)
        middle = len(costs) // 2
        return costs[middle] if len(costs) % 2 else 0.5 * (costs[middle - 1] + costs[middle])

    def step_budget(self, frame_time: float) -> int:
        """Most steps the frame's budget holds: ``budget_fraction * frame_time`` over the
        measured ms per step (at least 1, so the simulation always moves; no limit while
        the cost is not yet measured)."""
        return self._steps_in(self.budget_fraction * frame_time)

    def frame_rate_budget(self, frame_time: float) -> int:
        """Steps for physics that cannot keep real time: the time that keeps the frame
        rate at MIN_FPS * FPS_MARGIN (its frame less the draw, which is ``frame_time``
        less the last frame's physics), at least ``MIN_BUDGET_FRACTION * frame_time`` and
        at most the full budget, over the measured ms per step (at least 1). The full budget when
        the draw alone takes 1 / MIN_FPS or longer (yielding would not reach MIN_FPS)."""
        draw_s = max(frame_time - self._last_physics_s, 0.0)
        if draw_s >= 1.0 / MIN_FPS:
            return self.step_budget(frame_time)
        keeps_fps_s = 1.0 / (MIN_FPS * FPS_MARGIN) - draw_s
        return self._steps_in(min(self.budget_fraction * frame_time,
                                  max(MIN_BUDGET_FRACTION * frame_time, keeps_fps_s)))

    def _steps_in(self, seconds: float) -> int:
        if not self._step_costs:
            return sys.maxsize
        ms = self.ms_per_step
        if ms <= 0:   # too fast for the timer: no limit
            return sys.maxsize
        return max(1, int(seconds * 1000.0 / ms))

    def steps_for(self, frame_time: float, dt: float) -> int:
        """Steps of ``dt`` (s) owed after ``frame_time`` s of real time (times
        ``time_scale``), at most ``max_steps_per_frame``, if :meth:`step_budget` holds
        them, else :meth:`frame_rate_budget`. Time the budget (or the cap) cannot cover
        is dropped, not carried over."""
        owed = self.accumulator + frame_time * self.time_scale
        wanted = int(owed / dt + 1e-9)
        steps = wanted
        if self.max_steps_per_frame is not None:
            steps = min(steps, int(self.max_steps_per_frame))
        if steps > self.step_budget(frame_time):
            steps = min(steps, self.frame_rate_budget(frame_time))
        self.budget_limited = steps < wanted
        self.accumulator = 0.0 if self.budget_limited else owed - steps * dt
        return steps

    def set_time_scale(self, value: float) -> float:
        """Slow motion: simulated s per real s, clamped to TIME_SCALES; returns it."""
        value = float(value)
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"time_scale: must be a finite number > 0, got {value}")
        self.time_scale = min(max(value, TIME_SCALES[0]), TIME_SCALES[1])
        return self.time_scale

    def clear(self) -> None:
        """Forget the time owed (after a pause, a reset or a dt change)."""
        self.accumulator = 0.0
        self._last_physics_s = 0.0

    def compiled(self) -> None:
        """The kernels are compiled (a warm-up step ran): the next frame's cost counts."""
        self._first_cost_pending = False

    def forget_step_cost(self) -> None:
        """Another scene or integrator: the step cost is measured afresh."""
        self._step_costs.clear()
        self._first_cost_pending = True

    def count(self, advance: FrameAdvance, dt: float, measure: bool = True) -> None:
        """Take the steps of ``dt`` (s) and the wall time of the frame just run into
        the statistics; ``measure=False`` keeps its wall time out of the step cost."""
        self.steps_last_frame = advance.steps
        self._last_physics_s = advance.seconds
        if self._frames:
            self._frames[-1][1] += advance.steps * dt
            self._update_factor(sum(real for real, _ in self._frames))
        if measure and advance.steps > 0:
            if self._first_cost_pending:
                self._first_cost_pending = False
            else:
                self._step_costs.append(advance.ms_per_step)

    @property
    def last_physics_s(self) -> float:
        """Wall time of the last frame's steps, s (0 after a pause or clear)."""
        return self._last_physics_s

    @property
    def frame_interval(self) -> float:
        """Mean recent frame time, s (1/60 before the first frames)."""
        return 1.0 / self.fps if self.fps > 0 else 1.0 / 60.0


class SampleGovernor:
    """MSAA samples of the window's scene by the frame budget: ``max_samples`` while
    the draw (a frame less its physics, s) fits a 1 / (MIN_FPS * FPS_MARGIN) frame; 0
    once the median draw of the last ``GOVERNOR_FRAMES`` frames misses it;
    ``max_samples`` again once the median of as many frames without MSAA is under
    ``MSAA_HEADROOM`` of that frame (multisampling costs a software rasteriser about as
    much again). The median over a window keeps one slow frame from switching and sees
    through frames that alternate (the panel redraws its numbers a few times a second,
    so every few frames are slower); the gap between the two limits keeps the samples
    from flapping."""

    def __init__(self, max_samples: int) -> None:
        if max_samples < 0:
            raise ValueError(f"max_samples: must be >= 0, got {max_samples}")
        self.max_samples = int(max_samples)
        self.samples = self.max_samples
        self._draws: deque[float] = deque(maxlen=GOVERNOR_FRAMES)  # s, since the last switch

    def update(self, draw_s: float) -> int:
        """Count one frame whose draw took ``draw_s`` s; returns the samples for the next."""
        if not self.max_samples:
            return 0
        self._draws.append(float(draw_s))
        if len(self._draws) < GOVERNOR_FRAMES:
            return self.samples
        budget_s = 1.0 / (MIN_FPS * FPS_MARGIN)
        median = sorted(self._draws)[GOVERNOR_FRAMES // 2]
        if median > budget_s if self.samples else median < MSAA_HEADROOM * budget_s:
            self.samples = 0 if self.samples else self.max_samples
            self._draws.clear()
        return self.samples


__all__ = ["BUDGET_FRACTION", "FPS_MARGIN", "FPS_WINDOW", "FrameClock", "GOVERNOR_FRAMES",
           "MAX_FRAME_TIME", "MIN_BUDGET_FRACTION", "MIN_FPS", "MSAA_HEADROOM", "STEP_COST_FRAMES",
           "SampleGovernor", "TIME_SCALES"]
