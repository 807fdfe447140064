"""Side by side: the stable integrators at dt = 1/60 s against symplectic Euler at its
largest stable dt (issue 14's benchmark). Standalone: ``python benchmarks/time_solvers.py``.

1. The stiff 64 x 64 cloth (workload.stiff_cloth_system): one simulated second with
   each unconditionally stable integrator at dt = 1/60 s (XPBD with its substeps) and
   with symplectic Euler at the largest dt of EXPLICIT_RATES it survives; the runs are
   timed alternately, ``--reps`` times each (medians reported; each simulation first
   runs a second so that its parallel chooser has settled, and is reset to the initial
   state before each timed second: the same bits as a fresh one), and
   each one's position error after the second is the largest distance from a reference
   run (symplectic Euler at dt = 1/REFERENCE_RATE s); then each run goes on to
   HEALTH_S under the divergence check (engine/health.py, which first looks at step 64,
   after the timed 60 steps), and the table says whether it got there.
2. The standard 128 x 128 cloth (workload.cloth_system) at dt = 1/60 s: steps per second
   of XPBD and VBD (goal: >= 60, real time), once the parallel chooser has settled.

Prints a markdown table (and JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (HERE, ROOT):  # measure the code next to the benchmark
    if path not in sys.path:
        sys.path.insert(0, path)

import ropesim as rs  # noqa: E402
from ropesim.engine import parallel  # noqa: E402
from workload import cloth_system, stiff_cloth_system  # noqa: E402

EXPLICIT_RATES = (3000, 3100, 3200, 3300, 3400, 3500, 3750, 4000, 4500, 5000, 6000)
REFERENCE_RATE = 12_000
DT = 1.0 / 60.0
#: simulated seconds the stiff cloth's runs go on for under the divergence check
HEALTH_S = 10.0
#: most steps of one 128 x 128 rate turn (see realtime_table)
MAX_RATE_STEPS = 120
#: wall seconds each 128 x 128 simulation runs before it is timed: the parallel
#: chooser's probe windows come after 0.25, 0.5, 1 and then every 2 s (parallel.Chooser)
CHOOSER_SETTLE_S = 4.0


def configured(system, integrator: str, dt: float, settings: dict | None = None):
    """A Simulation of ``system`` with the integrator and its settings."""
    sim = rs.Simulation(system, dt=dt, integrator=integrator)
    for key, value in (settings or {}).items():
        setattr(sim.integrator_object, key, value)
    return sim


def timed_second(sim) -> float:
    """Seconds of wall time for one simulated second of ``sim`` from where it is."""
    steps = int(round(1.0 / sim.dt))
    start = time.perf_counter()
    sim.step(steps)
    return time.perf_counter() - start


def one_second(system, integrator: str, dt: float, settings: dict | None = None):
    """(seconds of wall time, Simulation) for one simulated second of a new simulation."""
    sim = configured(system, integrator, dt, settings)
    return timed_second(sim), sim


def run_on(sim, until_s: float) -> str:
    """Step on to ``until_s`` (s) under the divergence check (which first looks at step
    64: one second at dt = 1/60 s is 60 steps): "yes", or when and why it stopped."""
    try:
        sim.step(max(0, round((until_s - sim.time) / sim.dt)))
    except rs.SimulationDiverged as error:
        caught = error.detected_step * error.dt
        return f"stopped at {caught:.2f} s ({error.reason.split(':')[0]})"
    return "yes"


def largest_stable_dt(system) -> float | None:
    for rate in EXPLICIT_RATES:
        try:
            one_second(system, "symplectic_euler", 1.0 / rate)
        except rs.SimulationDiverged:
            continue
        return 1.0 / rate
    return None


def stiff_cloth_table(reps: int) -> list[dict]:
    system, _ = stiff_cloth_system(64)
    runs = [(name, DT, {}) for name, cls in rs.INTEGRATORS.items()
            if cls.unconditionally_stable]
    # the trade-offs: XPBD substeps around the default, without over-relaxation (the
    # papers' projection), more VBD sweeps, Chebyshev
    runs += [("xpbd", DT, {"substeps": n}) for n in (4, 6, 8, 10, 20)]
    runs += [("xpbd", DT, {"substeps": n, "relaxation": 1.0}) for n in (5, 6)]
    # tethers (kernels/tethers.py): the weight carried to the pins at once
    runs += [("xpbd", DT, {"substeps": n, "relaxation": 1.0, "tethers": 0.1})
             for n in (4, 5, 6)]
    # chain projection (kernels/chains.py): each line of springs solved at once
    runs += [("xpbd", DT, {"substeps": n, "projection": "chains", "tethers": slack})
             for n, slack in ((2, 0.05), (3, 0.1), (4, 0.1))]
    runs += [("xpbd", DT, {"substeps": 4, "projection": "chains"})]
    runs += [("vbd", DT, {"iterations": 30}), ("vbd", DT, {"iterations": 30,
                                                         "chebyshev_rho": 0.7})]
    explicit_dt = largest_stable_dt(system)
    if explicit_dt is not None:
        runs.append(("symplectic_euler", explicit_dt, {}))
    _, reference = one_second(system, "symplectic_euler", 1.0 / REFERENCE_RATE)
    # warm-up: compile or load every kernel, and run a second so that the parallel
    # choosers (serial against parallel kernels, timed in the first steps) have settled:
    # a viewer runs for minutes, so its steady rate is what a user sees; every timed
    # second then starts from the initial state again (reset keeps the choosers)
    finals = [configured(system, name, dt, settings) for name, dt, settings in runs]
    for sim in finals:
        timed_second(sim)
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(reps):  # alternately, so a drift of the machine's speed hits all alike
        for r, sim in enumerate(finals):
            sim.reset()
            times[r].append(timed_second(sim))
    rows = []
    for r, (name, dt, settings) in enumerate(runs):
        sim = finals[r]
        error = float(np.linalg.norm(sim.positions - reference.positions, axis=1).max())
        stats = sim.solver_stats if sim.has_solver_stats else None
        rows.append({
            "integrator": name, "settings": settings, "dt": dt,
            "second_s": float(np.median(times[r])), "all_s": times[r],
            "error_m": error, "iterations": stats.iterations if stats else None,
            "residual": stats.residual if stats else None,
            "health": run_on(sim, HEALTH_S),
        })
    explicit = rows[-1]["second_s"] if explicit_dt is not None else None
    for row in rows:
        row["speedup_vs_explicit"] = explicit / row["second_s"] if explicit else None
    return rows


def realtime_table(seconds: float, rounds: int = 3) -> list[dict]:
    """Steps per second on the 128 x 128 cloth at dt = 1/60 s: XPBD and VBD with their
    grid kernels and with the spring-list kernels (grid_kernels=False), each run for
    CHOOSER_SETTLE_S first, then measured in ``rounds`` alternating turns of seconds /
    rounds each (at most MAX_RATE_STEPS steps); also per CPU second (the
    process's CPU time, all its threads: on a loaded machine the wall rate measures the
    share of the cores this process got, the CPU rate the code)."""
    system = cloth_system(128)
    cases = [(name, grid) for name in ("xpbd", "vbd") for grid in (True, False)]
    sims = {}
    for name, grid in cases:
        sims[name, grid] = rs.Simulation(system, dt=DT, integrator=name, grid_kernels=grid)
        # compile or load, then run until the parallel chooser's probe windows (serial
        # against parallel, every 0.25 s at first) have spread out to their steady
        # interval: a viewer runs for minutes, so its steady rate is what a user sees
        # (the windows that come every 2 s then stay in the measurement)
        start = time.perf_counter()
        while time.perf_counter() - start < CHOOSER_SETTLE_S:
            sims[name, grid].step()
    steps = dict.fromkeys(cases, 0)
    spent = dict.fromkeys(cases, 0.0)
    cpu = dict.fromkeys(cases, 0.0)
    for _ in range(rounds):
        for case in cases:
            sims[case].reset()  # every turn from the same start
            start, cpu_start, done = time.perf_counter(), time.process_time(), 0
            while done < 5 or (done < MAX_RATE_STEPS
                               and time.perf_counter() - start < seconds / rounds):
                sims[case].step()
                done += 1
            steps[case] += done
            spent[case] += time.perf_counter() - start
            cpu[case] += time.process_time() - cpu_start
    return [{"integrator": name, "grid_kernels": grid,
             "steps_per_s": steps[name, grid] / spent[name, grid],
             "steps_per_cpu_s": steps[name, grid] / cpu[name, grid],
             "finite": bool(np.all(np.isfinite(sims[name, grid].positions)))}
            for name, grid in cases]


def describe(settings: dict, name: str) -> str:
    from ropesim.engine.integrators import vbd, xpbd

    if name == "xpbd":
        substeps = settings.get("substeps", xpbd.DEFAULT_SUBSTEPS)
        iterations = settings.get("iterations", xpbd.DEFAULT_ITERATIONS)
        relaxation = settings.get("relaxation", xpbd.DEFAULT_RELAXATION)
        tethers = settings.get("tethers")
        projection = (", chains" if settings.get("projection") == "chains"
                      else f", relaxation {relaxation:g}")
        return (f"{substeps} substeps x {iterations} iteration{projection}"
                + (f", tethers {tethers:g}" if tethers is not None else ""))
    if name == "vbd":
        rho = settings.get("chebyshev_rho", 0.0)
        sweeps = settings.get("iterations", vbd.DEFAULT_ITERATIONS)
        return f"{sweeps} sweeps" + (f", Chebyshev {rho}" if rho else "")
    return ""


def markdown(stiff: list[dict], realtime: list[dict]) -> str:
    lines = ["Stiff 64 x 64 cloth (k = 4e6 m N/m), one simulated second; error = largest "
             f"distance from symplectic Euler at dt = 1/{REFERENCE_RATE} s after 1 s.", "",
             "| integrator | dt | wall s (median) | x vs symplectic Euler | error m | "
             f"runs to {HEALTH_S:g} s |", "|---|---|---|---|---|---|"]
    for row in stiff:
        label = row["integrator"] + (f" ({describe(row['settings'], row['integrator'])})"
                                     if describe(row["settings"], row["integrator"]) else "")
        speedup = row["speedup_vs_explicit"]
        lines.append(f"| {label} | 1/{round(1 / row['dt'])} | {row['second_s']:.3f} | "
                     f"{f'{speedup:.2f}' if speedup else '-'} | {row['error_m']:.3g} | "
                     f"{row['health']} |")
    lines += ["", "Standard 128 x 128 cloth at dt = 1/60 s (defaults):", "",
              "| integrator | kernels | steps/s | steps per CPU s |", "|---|---|---|---|"]
    for row in realtime:
        kernels = "grid" if row["grid_kernels"] else "spring list"
        lines.append(f"| {row['integrator']} | {kernels} | {row['steps_per_s']:.1f} | "
                     f"{row['steps_per_cpu_s']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="timed runs of each (median)")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="wall seconds of each 128 x 128 rate measurement")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    load_before = os.getloadavg()[0]
    stiff = stiff_cloth_table(args.reps)
    realtime = realtime_table(args.seconds)
    print(markdown(stiff, realtime))
    print(f"\nLoad average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after.")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"stiff_cloth": stiff, "realtime": realtime,
                       "threads": parallel.info()}, handle, indent=1)


if __name__ == "__main__":
    main()
