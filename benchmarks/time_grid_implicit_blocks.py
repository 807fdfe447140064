"""Time the spring pass of the implicit grid solver (forces.grid_implicit_blocks) on the
stiff 64 x 64 cloth, optionally against the scalar kernel it replaced.

    PYTHONPATH=. python benchmarks/time_grid_implicit_blocks.py [--old 95c5514] [--size 64]

--old REV loads forces.implicit_blocks (and its spring_slots, interleaved_order) from
git revision REV of ropesim/forces.py and times it on the same state. Prints the median
and minimum over repetitions, in microseconds per call.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# this checkout's ropesim, not an installed one
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ropesim as rs  # noqa: E402
from ropesim.engine.kernels import grid_implicit  # noqa: E402
from workload import stiff_cloth_system  # noqa: E402


def load_old(rev: str):
    """ropesim/forces.py of git revision ``rev`` as a standalone module."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = subprocess.run(["git", "show", f"{rev}:ropesim/forces.py"], cwd=root, check=True,
                          capture_output=True, text=True).stdout
    path = os.path.join(tempfile.mkdtemp(), "old_forces.py")
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location("old_forces", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(call, repeats: int, inner: int) -> tuple[float, float]:
    """(median, min) microseconds per call."""
    call()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            call()
        samples.append((time.perf_counter() - start) / inner * 1e6)
    return float(np.median(samples)), float(min(samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="git revision holding forces.implicit_blocks")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--inner", type=int, default=200)
    args = parser.parse_args()

    system, _ = stiff_cloth_system(args.size)
    sim = rs.Simulation(system, dt=1 / 60, integrator="backward_euler")
    sim.step(5)
    g = sim.integrator_object.grid_solver()
    p, x, v = sim.params, sim.positions, sim.velocities
    spring_a, spring_b = (np.ascontiguousarray(sim.system.springs[:, e], dtype=np.int32)
                          for e in (0, 1))
    dt = 1 / 60
    alpha, beta = dt * dt, dt
    outputs = [np.zeros_like(a) for a in (g.force, g.kv, g.kv_clamped, g.b_exact, g.b_clamped)]

    def new():
        grid_implicit.grid_implicit_blocks(x, v, g.cols, g.gblocks, g.pblocks, alpha, beta,
                                           *g.scratch, *outputs)

    calls = {"grid_implicit_blocks": new}
    if args.old:
        old = load_old(args.old)
        layout = sim.integrator_object.model.grid()
        slots = old.spring_slots(layout, g.pblocks)
        order = old.interleaved_order(spring_a.shape[0])
        previous = [np.zeros_like(a) for a in outputs]

        def before():
            old.implicit_blocks(x, v, spring_a, spring_b, p.rest_lengths, p.stiffness,
                                p.damping, slots, order, alpha, beta, *previous)

        calls[f"implicit_blocks ({args.old})"] = before
        new()
        before()
        for name, a, b in zip(("force", "kv", "kv_clamped", "b_exact", "b_clamped"),
                              outputs, previous):
            print(f"  {name:10s} max |new - old| / max |old| = "
                  f"{np.abs(a - b).max() / np.abs(b).max():.1e}")
    print(f"{args.size}x{args.size} stiff cloth, {spring_a.shape[0]} springs, "
          f"{x.dtype} state")
    results = {name: [] for name in calls}
    for _ in range(3):  # interleaved, to share the machine's ups and downs
        for name, call in calls.items():
            results[name].append(timed(call, max(1, args.repeats // 3), args.inner))
    for name, r in results.items():
        medians, mins = zip(*r)
        print(f"  {name:34s} median {np.median(medians):7.1f} us   min {min(mins):7.1f} us")


if __name__ == "__main__":
    main()
