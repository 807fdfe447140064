"""Compile every engine kernel ahead of the first step, in parallel processes.

Why: numba compiles a kernel on its first call (``cache=True`` keeps the machine code
on disk afterwards), and a fresh install compiles about nine minutes of kernels on
first use: every integrator in float64 and float32, on the structured-grid and the
spring-list path, serial and parallel, plus the colliders, the self-collision pass and
what the shipped scenes add (wind on a sail, tearing, ...).
``precompile()`` runs small simulations that reach those kernels, spread over
``jobs`` processes (compiling is single-threaded, so two processes on two cores take
about half the time); the kernels land in numba's cache, and every later process
(the viewer, ``ropesim run``, the tests) loads them instead of compiling them.

A kernel already cached is only loaded, so a second run takes seconds. Run it as
``python -m ropesim.app.precompile [--jobs N]``; the test suite runs it first
(tests/conftest.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from ..engine import builders, parallel
from ..engine.contacts import Box, Capsule, Ground, Mesh, Sphere
from ..engine.forces import Wind
from ..engine.integrators import INTEGRATORS
from ..engine.model import concatenate
from ..engine.simulation import Simulation, SimulationDiverged
from ..io.scenes import load, scene_names

#: the engine's float types (Simulation(dtype=...))
DTYPES = ("float64", "float32")


def _cloth(n: int = 40):
    return builders.cloth(n, n, 1.0 / n, mass=1.0 / n ** 2, stiffness=50.0, damping=0.01,
                          pins="top-corners")


def _step_both_ways(make: Callable[[], object], steps: int = 3) -> None:
    """Step a fresh simulation from ``make()`` with the serial and then the parallel
    kernels (both versions of every kernel that has two)."""
    before = parallel.get_mode()
    try:
        for mode in ("serial", "parallel"):
            parallel.set_mode(mode)
            make().step(steps)
    finally:
        parallel.set_mode(before)


#: integrator settings with kernels of their own: job "<name>-<variant>:<dtype>" compiles
#: them as _integrator_job compiles the defaults
KERNEL_VARIANTS: dict[str, dict[str, dict]] = {"xpbd": {"chains": {"projection": "chains"}}}


def _integrator_job(name: str, dtype: str, settings: dict | None = None) -> None:
    """Integrator ``name`` in ``dtype`` with ``settings`` (None: its defaults): a grid
    cloth with wind on both kernel paths and a rope (a spring list that is no grid),
    serial and parallel."""
    def configured(sim: Simulation) -> Simulation:
        for key, value in (settings or {}).items():
            setattr(sim.integrator_object, key, value)
        return sim

    for grid_kernels in (True, False):
        def make(grid_kernels=grid_kernels):
            sim = Simulation(_cloth(), dt=1 / 600, integrator=name, dtype=dtype,
                             grid_kernels=grid_kernels)
            sim.add_force(Wind((1.0, 0.0, 0.5)))
            return configured(sim)

        _step_both_ways(make)
    rope = builders.rope(30, 1.0)
    _step_both_ways(lambda: configured(Simulation(rope, dt=1 / 600, integrator=name,
                                                  dtype=dtype)))


def _collisions_job(dtype: str) -> None:
    """Every kind of collider and the self-collision pass, in ``dtype``."""
    tetra = Mesh(np.array([[0.0, -1.0, 0.0], [1.0, -1.0, 0.0], [0.0, -1.0, 1.0],
                              [0.3, -0.7, 0.3]]),
                    np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]]))
    colliders = [Ground(-1.2), Sphere((0.2, -0.3, 0.2), 0.1),
                 Box((0.5, -0.6, 0.5), (0.3, 0.1, 0.3), rotation=(0.0, 20.0, 0.0)),
                 Capsule((0.0, -0.4, 0.5), (1.0, -0.4, 0.5), 0.05), tetra]
    _step_both_ways(lambda: Simulation(_cloth(24), dt=1 / 600, dtype=dtype,
                                       self_collision=True, contacts=colliders))

    def rebuilt_on_columns() -> Simulation:  # a bunched cloth's list (collisions/columns.py)
        sim = Simulation(_cloth(24), dt=1 / 600, dtype=dtype, self_collision=True)
        sim._self_collision.neighbours.build(sim.positions, sim.thickness, columns=True)
        return sim

    _step_both_ways(rebuilt_on_columns, steps=0)

    def two_layers() -> Simulation:  # touching all over: the passes on two sides at once
        sim = Simulation(concatenate([_cloth(24), _cloth(24)]), dt=1 / 600, dtype=dtype,
                         self_collision=True)
        sim.positions[24 * 24:, 2] += 0.5 * sim.thickness
        return sim

    _step_both_ways(two_layers, steps=1)


def _scenes_job() -> None:
    """Every shipped scene (float64, its own settings) with every integrator, switched
    live: the forces, tearing and contacts that only scenes combine."""
    for name in scene_names():
        sim = load(name).simulation()
        for integrator in INTEGRATORS:
            sim.integrator = integrator
            try:
                sim.step(2)
            except SimulationDiverged:  # explicit Euler on a stiff scene: compiled anyway
                sim = load(name).simulation()


#: rough compile seconds of each job kind on a cold cache (2-core machine), for the
#: order jobs start in: longest first, so the processes finish together
COST_HINTS = {"collisions": 150.0, "xpbd": 65.0, "scenes": 60.0, "implicit_midpoint": 55.0,
              "xpbd-chains": 40.0, "vbd": 32.0, "explicit_euler": 20.0}


def jobs() -> dict[str, Callable[[], None]]:
    """Job name ("<integrator or collisions>:<dtype>", "<integrator>-<variant>:<dtype>"
    for KERNEL_VARIANTS, and "scenes") -> what it compiles, longest first (COST_HINTS)."""
    table: dict[str, Callable[[], None]] = {"scenes": _scenes_job}
    for dtype in DTYPES:
        table[f"collisions:{dtype}"] = partial(_collisions_job, dtype)
        table.update({f"{name}:{dtype}": partial(_integrator_job, name, dtype)
                      for name in INTEGRATORS})
        table.update({f"{name}-{variant}:{dtype}": partial(_integrator_job, name, dtype,
                                                           settings)
                      for name, variants in KERNEL_VARIANTS.items()
                      for variant, settings in variants.items()})
    order = sorted(table, key=lambda job: -COST_HINTS.get(job.split(":")[0], 1.0))
    return {job: table[job] for job in order}


def run_jobs(names: Sequence[str]) -> None:
    """Run the named jobs in this process."""
    table = jobs()
    for name in names:
        table[name]()


def cache_is_cold() -> bool:
    """Whether numba's cache holds no kernel of this package yet (a fresh install or
    clone): no index file under the package, or under NUMBA_CACHE_DIR when set."""
    root = Path(os.environ.get("NUMBA_CACHE_DIR") or Path(__file__).resolve().parents[1])
    return not any(root.rglob("*.nbi"))


def precompile(n_jobs: int = 2, quiet: bool = True) -> float:
    """Compile (or load) every job's kernels, ``n_jobs`` processes at a time, longest
    job first; returns the wall seconds. Raises RuntimeError naming a failed job."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs: expected an integer >= 1 (processes), got {n_jobs!r}")
    start = time.perf_counter()
    package_parent = str(Path(__file__).resolve().parents[2])  # this ropesim, not another
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [package_parent] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    out = subprocess.DEVNULL if quiet else None
    waiting, running, failed = list(jobs()), {}, []
    while waiting or running:
        while waiting and len(running) < n_jobs:
            job = waiting.pop(0)
            running[job] = subprocess.Popen(
                [sys.executable, "-m", "ropesim.app.precompile", "--run", job],
                stdout=out, stderr=out, env=env)
        time.sleep(0.05)
        for job, proc in list(running.items()):
            if proc.poll() is not None:
                del running[job]
                if proc.returncode != 0:
                    failed.append(job)
    if failed:
        raise RuntimeError(f"precompile: job(s) {', '.join(failed)} failed (run "
                           f"python -m ropesim.app.precompile --run JOB to see why)")
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ropesim.app.precompile",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--run", nargs="+", metavar="JOB",
                        help="run these jobs in this process (names: --list)")
    parser.add_argument("--list", action="store_true", help="list the jobs")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: expected an integer >= 1 (processes), got {args.jobs}")
    if args.list:
        print("\n".join(jobs()))
        return 0
    if args.run:
        unknown = sorted(set(args.run) - set(jobs()))
        if unknown:
            parser.error(f"--run: unknown job(s) {', '.join(unknown)}; allowed: "
                         f"{', '.join(jobs())}")
        run_jobs(args.run)
        return 0
    seconds = precompile(args.jobs, quiet=False)
    print(f"precompiled the engine's kernels in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
