"""The viewer's clock: real frame times in, fixed-dt steps per frame and frame statistics out.

Running, real time is added to an accumulator and ``min(floor(acc / dt), substeps)``
steps of the fixed dt are run; the leftover is kept up to one frame's worth of steps,
so a slow machine slows the simulation down instead of spiralling into ever longer
frames. The clock also keeps the frame rate (averaged over the last ``FPS_WINDOW`` s),
the steps of the last frame and a smoothed wall time per step.
"""

from __future__ import annotations

from collections import deque

from ..render.frame_loop import FrameAdvance

MAX_FRAME_TIME = 0.25        # s; a longer frame (window dragged, debugger) counts as this
FPS_WINDOW = 1.0             # s of recent frames the frame rate is averaged over
STAT_SMOOTHING = 0.1         # weight of the newest frame in the ms-per-step average


class FrameClock:
    """Frame times -> step counts (:meth:`steps_for`) and frame statistics.

    ``accumulator`` is simulated time owed, s; ``fps`` frames per s; ``ms_per_step``
    the smoothed wall time of one step, ms; ``steps_last_frame`` the steps run in the
    last frame.
    """

    def __init__(self) -> None:
        self.accumulator = 0.0
        self.fps = 0.0
        self.ms_per_step = 0.0
        self.steps_last_frame = 0
        self._frame_times: deque[float] = deque()

    def tick(self, frame_time: float) -> float:
        """Count one displayed frame that took ``frame_time`` s; returns it clamped to
        0..MAX_FRAME_TIME."""
        frame_time = min(max(float(frame_time), 0.0), MAX_FRAME_TIME)
        self._frame_times.append(frame_time)
        total = sum(self._frame_times)
        while len(self._frame_times) > 1 and total - self._frame_times[0] >= FPS_WINDOW:
            total -= self._frame_times.popleft()
        self.fps = len(self._frame_times) / total if total > 0 else 0.0
        return frame_time

    def steps_for(self, frame_time: float, dt: float, substeps: int) -> int:
        """Steps of ``dt`` (s) owed after ``frame_time`` s, at most ``substeps``."""
        self.accumulator += frame_time
        steps = min(int(self.accumulator / dt + 1e-9), substeps)
        self.accumulator = min(self.accumulator - steps * dt, substeps * dt)
        return steps

    def clear(self) -> None:
        """Forget the time owed (after a pause, a reset or a dt change)."""
        self.accumulator = 0.0

    def count(self, advance: FrameAdvance) -> None:
        """Take the steps and wall time of the frame just run into the statistics."""
        self.steps_last_frame = advance.steps
        if advance.steps > 0:
            ms = advance.ms_per_step
            self.ms_per_step = ms if self.ms_per_step == 0 else (
                self.ms_per_step + STAT_SMOOTHING * (ms - self.ms_per_step))

    @property
    def frame_interval(self) -> float:
        """Mean recent frame time, s (1/60 before the first frames)."""
        return 1.0 / self.fps if self.fps > 0 else 1.0 / 60.0


__all__ = ["FPS_WINDOW", "FrameClock", "MAX_FRAME_TIME"]
