"""The one frame loop: advance a simulation by one displayed frame's worth of steps.

Every output that shows frames steps the simulation the same way: the viewer's window
(steps from its real-time clock, or a fixed number while recording), the viewer's video
recording and headless :func:`ropesim.render.headless.render` (a fixed
``steps_per_frame(dt, fps)``). :func:`advance_frame` runs the steps, times them and
turns a divergence into a result instead of an exception, so each caller decides what
a divergence means for it (the window pauses with advice, ``render`` stops and
re-raises after writing the frames so far).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..engine.simulation import Simulation, SimulationDiverged


@dataclass(frozen=True)
class FrameAdvance:
    """What one frame's stepping did: ``steps`` run, their wall time ``seconds`` (s),
    and the divergence that stopped it early (None if all steps ran)."""

    steps: int
    seconds: float
    diverged: SimulationDiverged | None = None

    @property
    def ms_per_step(self) -> float:
        """Wall time per step, ms (0 when no step ran)."""
        return 1000.0 * self.seconds / self.steps if self.steps else 0.0


def advance_frame(sim: Simulation, steps: int) -> FrameAdvance:
    """Run ``steps`` steps of ``sim`` (none if ``steps`` <= 0) for one frame.

    A divergence leaves the simulation at its last finite state (see
    :class:`~ropesim.engine.simulation.SimulationDiverged`) and is returned in
    ``diverged``; ``steps`` then counts the steps that did run.
    """
    if steps <= 0:
        return FrameAdvance(0, 0.0)
    start_count = sim.step_count
    start = time.perf_counter()
    diverged = None
    try:
        sim.step(int(steps))
    except SimulationDiverged as exc:
        diverged = exc
    return FrameAdvance(sim.step_count - start_count, time.perf_counter() - start, diverged)


__all__ = ["FrameAdvance", "advance_frame"]
