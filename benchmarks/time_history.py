"""What the viewer's rewind history costs per displayed frame on the standard cloth
(benchmarks/workload.py: symplectic Euler, dt = 1/600 s, float64).

    PYTHONPATH=. python benchmarks/time_history.py [--sizes 64 128] [--frames 120]

The viewer keeps one ``sim.get_state()`` per displayed frame in a
:class:`ropesim.app.history.History` (ropesim/app/timeline.py). Per size this runs
frames of 10 steps (one 60 fps frame of real time at dt = 1/600 s) in alternating
rounds without and with the history (the machine is shared), timing in each frame its
steps and, separately, the snapshot and the push after them; printed (medians): ms of
the 10 steps without and with the history, ms of the snapshot + push (and its share of
the steps' time), the bytes the history grows by per frame (parameter arrays shared),
MB per simulated second at 60 frames per second, the seconds the default 256 MB holds,
the size of a first (unshared) state and what one rewind (``sim.set_state``) costs.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# this checkout's ropesim, not an installed one
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ropesim as rs  # noqa: E402
from ropesim.app.history import DEFAULT_HISTORY_MB, MB, History  # noqa: E402
from tables import print_table, sizes_parser  # noqa: E402
from workload import DT, cloth_system  # noqa: E402

STEPS_PER_FRAME = 10     # 1/60 s of simulated time at dt = 1/600 s
FRAMES_PER_SECOND = 60   # displayed frames per simulated second at 1x real time


def frame_times(sim: rs.Simulation, frames: int,
                history: History | None) -> tuple[list[float], list[float]]:
    """Per frame: the wall time of its 10 steps and of the snapshot + push after them
    (0 without ``history``), s."""
    steps, kept = [], []
    for _ in range(frames):
        start = time.perf_counter()
        sim.step(STEPS_PER_FRAME)
        stepped = time.perf_counter()
        if history is not None:
            history.push(sim.get_state(), sim.time)
        steps.append(stepped - start)
        kept.append(time.perf_counter() - stepped)
    return steps, kept


def measure(size: int, frames: int, rounds: int) -> dict[str, float]:
    sim = rs.Simulation(cloth_system(size), dt=DT, integrator="symplectic_euler")
    sim.step(2 * STEPS_PER_FRAME)              # compile / load the kernels
    history = History()
    history.push(sim.get_state(), sim.time)
    plain, stepped, kept = [], [], []
    for _ in range(rounds):                     # alternate: the machine is noisy
        plain += frame_times(sim, frames, None)[0]
        steps, snapshots = frame_times(sim, frames, history)
        stepped += steps
        kept += snapshots
    growth = History(budget_mb=1e6)            # unbounded: what each frame adds
    growth.push(sim.get_state(), sim.time)
    first = growth.nbytes
    frame_times(sim, 30, growth)
    per_frame = (growth.nbytes - first) / 30
    restores = []
    for fraction in np.linspace(0.0, 1.0, 20):
        state = history.scrub_to(fraction)
        start = time.perf_counter()
        sim.set_state(state)
        restores.append(time.perf_counter() - start)
    ms = lambda values: 1e3 * float(np.median(values))  # noqa: E731
    step_ms, with_steps_ms, push_ms = ms(plain), ms(stepped), ms(kept)
    mb_per_second = per_frame * FRAMES_PER_SECOND / MB
    return {"size": size, "step_ms": step_ms, "with_steps_ms": with_steps_ms,
            "push_ms": push_ms, "push_pct": 100 * push_ms / with_steps_ms,
            "kb_per_frame": per_frame / 1024, "mb_per_second": mb_per_second,
            "seconds_held": DEFAULT_HISTORY_MB / mb_per_second,
            "state_mb": sim.get_state().nbytes / MB, "restore_ms": ms(restores)}


def row(size: int, frames: int, rounds: int) -> list[str]:
    r = measure(size, frames, rounds)
    return [f"{size} x {size}", f"{r['step_ms']:.2f}", f"{r['with_steps_ms']:.2f}",
            f"{r['push_ms']:.2f} ({r['push_pct']:.0f} %)", f"{r['kb_per_frame']:.0f}",
            f"{r['mb_per_second']:.1f}", f"{r['seconds_held']:.0f}", f"{r['state_mb']:.2f}",
            f"{r['restore_ms']:.2f}"]


def main() -> None:
    parser = sizes_parser(__doc__, [64, 128])
    parser.add_argument("--frames", type=int, default=120, help="frames per timed round")
    args = parser.parse_args()
    print_table(("cloth", "10 steps, ms (no history)", "10 steps, ms (history on)",
                 "snapshot + push, ms (% of the steps)", "kB / frame", "MB / s of history",
                 f"s in {DEFAULT_HISTORY_MB:g} MB", "a first state, MB",
                 "rewind (set_state), ms"),
                (row(size, args.frames, args.rounds) for size in args.sizes))


if __name__ == "__main__":
    main()
