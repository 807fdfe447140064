"""Where a VBD step's time goes on the standard cloth (issue 14's 128 x 128 goal):
the fixed cost of a step (start, end) and the cost of one sweep, from steps with 1
and with 11 sweeps (sweep = (t11 - t1) / 10, fixed = t1 - sweep), per spring term
(a sweep visits every particle's 12 spring ends), and the spring-term loop alone
(kernels/grid_vbd.py ``add_spring_run`` on a run of RUN entries of one colour, the
same 9 x RUN accumulators every call: the arithmetic without the sweep's
memory traffic). Serial kernels by default (``--mode``), best of ``--reps`` timings
of ``--steps`` steps. Standalone: ``python benchmarks/time_vbd_sweep.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from numba import njit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (HERE, ROOT):  # measure the code next to the benchmark
    if path not in sys.path:
        sys.path.insert(0, path)

import ropesim as rs  # noqa: E402
from ropesim.engine import parallel  # noqa: E402
from ropesim.engine.kernels.grid_vbd import RUN, add_spring_run  # noqa: E402
from workload import cloth_system  # noqa: E402

#: spring ends a cloth particle has away from the borders (structural, shear, bend)
ENDS_PER_PARTICLE = 12


def step_time(sim, sweeps: int, steps: int, reps: int) -> float:
    """Best of ``reps`` mean seconds per step over ``steps`` steps with ``sweeps``."""
    sim.integrator_object.iterations = sweeps
    for _ in range(3):
        sim.step()
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(steps):
            sim.step()
        best = min(best, (time.perf_counter() - start) / steps)
    return best


@njit(cache=True)
def _term_loop(soa, params, acc, calls, terms):
    for _ in range(calls):
        for b in range(params.shape[0]):
            add_spring_run(soa, params, params, params, b, acc, 0, RUN + b, 0, terms)


def term_loop_ns(calls: int = 20_000) -> float:
    """ns per spring term of add_spring_run alone (RUN-term runs, data in L1)."""
    rng = np.random.default_rng(0)
    soa = rng.random((15, 4 * RUN))
    params = np.full((6, 4 * RUN), 0.01)
    acc = np.zeros(9 * RUN)
    _term_loop(soa, params, acc, 1, RUN)  # compile or load
    start = time.perf_counter()
    _term_loop(soa, params, acc, calls, RUN)
    return (time.perf_counter() - start) / (calls * params.shape[0] * RUN) * 1e9


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--mode", choices=parallel.MODES, default="serial")
    args = parser.parse_args(argv)
    parallel.set_mode(args.mode)
    print(f"VBD on the standard cloth, dt = 1/60 s, kernels: {args.mode}\n")
    print("| N | fixed ms a step | ms a sweep | ns a spring term | steps/s at 10 sweeps |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        sim = rs.Simulation(cloth_system(n), dt=1.0 / 60.0, integrator="vbd")
        one, eleven = (step_time(sim, s, args.steps, args.reps) for s in (1, 11))
        sweep = (eleven - one) / 10.0
        fixed = one - sweep
        print(f"| {n} | {fixed * 1e3:.2f} | {sweep * 1e3:.3f} | "
              f"{sweep / (n * n * ENDS_PER_PARTICLE) * 1e9:.1f} | "
              f"{1.0 / (fixed + 10.0 * sweep):.1f} |")
    print(f"\nThe term loop alone ({RUN}-term runs, data in L1): "
          f"{term_loop_ns():.1f} ns a term.")


if __name__ == "__main__":
    main()
