"""What wind, tearing and strain limiting cost per step on the standard 128 x 128 cloth
(benchmarks/workload.py: symplectic Euler, dt = 1/600 s, float64).

    PYTHONPATH=. python benchmarks/time_tearing_wind.py [--size 128] [--steps 300]

Each case runs the same cloth from rest for a warm-up, then times --steps steps; printed:
microseconds per step and the extra over the plain step. Cases: plain; + Wind (gusty,
across the cloth); + break_strain (finite, never reached: the check runs every step);
+ max_stretch 0.1 (the Provot passes: up to tearing.MAX_STRETCH_PASSES while the
pinned-corner cloth sags past 10 %); all four together. Then each hook's kernel alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ropesim as rs  # noqa: E402
from workload import DT, cloth_system  # noqa: E402


def per_step_us(sim: rs.Simulation, steps: int, repeats: int = 3) -> float:
    """Best of ``repeats`` runs of ``steps`` steps, microseconds per step."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        sim.step(steps)
        best = min(best, time.perf_counter() - start)
    return 1e6 * best / steps


def make(size: int, case: str) -> rs.Simulation:
    sim = rs.Simulation(cloth_system(size), dt=DT, integrator="symplectic_euler")
    if case in ("wind", "all"):
        sim.add_force(rs.Wind(velocity=(0.0, 0.0, 6.0), gust=0.3, seed=1))
    if case in ("tearing", "all"):
        sim.break_strain = 10.0  # finite: checked every step, never reached
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
                                                    model.spring_b, p.rest_lengths),
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
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    results, passes = {}, {}
    for case in ("plain", "wind", "tearing", "strain limit", "all"):
        sim = make(args.size, case)
        sim.step(20)  # compile / load the kernels
        results[case] = per_step_us(sim, args.steps)
        passes[case] = sim.stretch_passes
    plain = results["plain"]
    print(f"{args.size} x {args.size} cloth, {sim.n_springs} springs, "
          f"{len(sim.system.triangles)} triangles, symplectic Euler, float64")
    for case, us in results.items():
        print(f"  {case:<13} {us:9.1f} us/step   extra {us - plain:+8.1f} us"
              + (f"   ({passes[case]} stretch passes in the last step)" if passes[case] else ""))
    print("kernels alone (on the sagged cloth of the last case):")
    for name, us in kernel_us(sim, args.steps).items():
        print(f"  {name:<17} {us:9.1f} us/call")


if __name__ == "__main__":
    main()
