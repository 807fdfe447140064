"""What wind, tearing and strain limiting cost per step on the standard 128 x 128 cloth
(benchmarks/workload.py: symplectic Euler, dt = 1/600 s, float64).

    PYTHONPATH=. python benchmarks/time_tearing_wind.py [--size 128] [--steps 300]

Each case is its own simulation of the same cloth, started from rest and warmed up; then
the cases are timed in turn, --rounds rounds of --steps steps each, alternating (so the
noise of a shared machine falls on every case alike), and the best round of each case is
kept. Printed: microseconds per step and the ratio to the plain step of the same run.
Cases: plain; + Wind (gusty, across the cloth); + break_strain (finite, never reached:
the check runs every step); + the same with crack tips (crack_tip_factor 0.8); +
max_stretch 0.1 (the Provot passes: up to tearing.MAX_STRETCH_PASSES while the
pinned-corner cloth sags past 10 %); all of them together. Then each hook's kernel alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# this checkout's ropesim, not an installed one
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ropesim as rs  # noqa: E402
from workload import DT, cloth_system  # noqa: E402


CASES = ("plain", "wind", "tearing", "crack tips", "strain limit", "all")


def per_step_us(sims: dict[str, rs.Simulation], steps: int, rounds: int) -> dict[str, float]:
    """Best round of ``steps`` steps per case, the cases alternating; microseconds per step."""
    best = dict.fromkeys(sims, np.inf)
    for _ in range(rounds):
        for case, sim in sims.items():
            start = time.perf_counter()
            sim.step(steps)
            best[case] = min(best[case], time.perf_counter() - start)
    return {case: 1e6 * seconds / steps for case, seconds in best.items()}


def make(size: int, case: str) -> rs.Simulation:
    sim = rs.Simulation(cloth_system(size), dt=DT, integrator="symplectic_euler")
    if case in ("wind", "all"):
        sim.add_force(rs.Wind(velocity=(0.0, 0.0, 6.0), gust=0.3, seed=1))
    if case in ("tearing", "crack tips", "all"):
        sim.break_strain = 10.0  # finite: checked every step, never reached
    if case in ("crack tips", "all"):
        sim.crack_tip_factor = 0.8
    if case in ("strain limit", "all"):
        sim.max_stretch = 0.1
    return sim


def kernel_us(sim: rs.Simulation, steps: int) -> dict[str, float]:
    """Each hook alone on the current state, microseconds per call (best of 3 x steps)."""
    from ropesim.engine import tearing

    wind = rs.Wind(velocity=(0.0, 0.0, 6.0), gust=0.3, seed=1)
    sim.add_force(wind)
    f = np.zeros_like(sim.positions)
    model, p, state = sim._model, sim.params, sim.state
    parts = {
        "wind force": lambda: wind.accumulate(state, p, f),
        "tearing check": lambda: sim._tearing.check(sim.positions, model.spring_a,
                                                    model.spring_b, p.rest_lengths, sim.time),
        "one stretch pass": lambda: tearing.limit_stretch(
            sim.positions.copy(), sim.velocities.copy(), model.spring_a, model.spring_b,
            p.rest_lengths, p.inv_mass, p.fixed, sim._tearing.broken, 0.1, DT, 1, 0.0),
    }
    out = {}
    for name, call in parts.items():
        call()
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(steps):
                call()
            best = min(best, time.perf_counter() - start)
        out[name] = 1e6 * best / steps
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sims = {case: make(args.size, case) for case in CASES}
    for sim in sims.values():
        sim.step(20)  # compile / load the kernels
    results = per_step_us(sims, args.steps, args.rounds)
    plain = results["plain"]
    sim = sims["all"]
    print(f"{args.size} x {args.size} cloth, {sim.n_springs} springs, "
          f"{len(sim.system.triangles)} triangles, symplectic Euler, float64; best of "
          f"{args.rounds} alternating rounds of {args.steps} steps")
    print("| case | us/step | ratio to plain |")
    print("|---|---|---|")
    for case, us in results.items():
        passes = sims[case].stretch_passes
        note = f" ({passes} stretch passes in the last step)" if passes else ""
        print(f"| {case}{note} | {us:.1f} | {us / plain:.2f} |")
    print("kernels alone (on the sagged cloth of the last case):")
    for name, us in kernel_us(sim, args.steps).items():
        print(f"  {name:<17} {us:9.1f} us/call")


if __name__ == "__main__":
    main()
