"""What the viewer's rewind history costs per displayed frame on the standard cloth
(benchmarks/workload.py: symplectic Euler, dt = 1/600 s, float64).

    PYTHONPATH=. python benchmarks/time_history.py [--sizes 64 128] [--frames 120]

The viewer keeps one ``sim.get_state()`` per displayed frame in a
:class:`ropesim.app.history.History` (ropesim/app/timeline.py). Per size this runs
frames of 10 steps (one 60 fps frame of real time at dt = 1/600 s) and times, per
frame: the steps alone, and the steps plus the snapshot and the push, in alternating
rounds (the machine is shared); printed: ms per frame of each, the history's extra
(ms and % of the frame), the bytes the history grows by per frame (parameter arrays
shared), MB per simulated second at 60 frames per second, the seconds the default
256 MB holds, and what one rewind (``sim.set_state``) costs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ropesim as rs  # noqa: E402
from ropesim.app.history import DEFAULT_HISTORY_MB, MB, History  # noqa: E402
from workload import DT, cloth_system  # noqa: E402

STEPS_PER_FRAME = 10     # 1/60 s of simulated time at dt = 1/600 s
FRAMES_PER_SECOND = 60   # displayed frames per simulated second at 1x real time


def frame_ms(sim: rs.Simulation, frames: int, history: History | None) -> float:
    """Median wall time of a frame (10 steps, then the snapshot if ``history``), ms."""
    times = []
    for _ in range(frames):
        start = time.perf_counter()
        sim.step(STEPS_PER_FRAME)
        if history is not None:
            history.push(sim.get_state(), sim.time)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def measure(size: int, frames: int, rounds: int) -> dict[str, float]:
    sim = rs.Simulation(cloth_system(size), dt=DT, integrator="symplectic_euler")
    sim.step(2 * STEPS_PER_FRAME)              # compile / load the kernels
    history = History()
    history.push(sim.get_state(), sim.time)
    plain, kept = [], []
    for _ in range(rounds):                     # alternate: the machine is noisy
        plain.append(frame_ms(sim, frames, None))
        kept.append(frame_ms(sim, frames, history))
    before = history.nbytes
    count = len(history)
    frame_ms(sim, frames, history)
    per_frame = (history.nbytes - before) / (len(history) - count)
    state = history.scrub_to(0.5)
    start = time.perf_counter()
    for _ in range(20):
        sim.set_state(state)
    restore_ms = 1e3 * (time.perf_counter() - start) / 20
    step_ms, with_ms = float(np.median(plain)), float(np.median(kept))
    mb_per_second = per_frame * FRAMES_PER_SECOND / MB
    return {"size": size, "step_ms": step_ms, "with_ms": with_ms,
            "extra_ms": with_ms - step_ms, "extra_pct": 100 * (with_ms / step_ms - 1),
            "kb_per_frame": per_frame / 1024, "mb_per_second": mb_per_second,
            "seconds_held": DEFAULT_HISTORY_MB / mb_per_second,
            "first_state_mb": sim.get_state().nbytes / MB, "restore_ms": restore_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--frames", type=int, default=120, help="frames per timed round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    args = parser.parse_args()
    print(f"| cloth | frame (10 steps), ms | + history, ms | extra, ms (%) | kB / frame "
          f"| MB / s of history | s in {DEFAULT_HISTORY_MB:g} MB | one state, MB "
          "| rewind (set_state), ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes:
        r = measure(size, args.frames, args.rounds)
        print(f"| {size} x {size} | {r['step_ms']:.2f} | {r['with_ms']:.2f} | "
              f"{r['extra_ms']:.2f} ({r['extra_pct']:.0f} %) | {r['kb_per_frame']:.0f} | "
              f"{r['mb_per_second']:.1f} | {r['seconds_held']:.0f} | "
              f"{r['first_state_mb']:.2f} | {r['restore_ms']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
