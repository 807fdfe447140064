#!/usr/bin/env python
"""ropesim benchmarks (issue 5): the standard cloth against NumPy, Warp and Taichi, the
implicit integrator on a stiff cloth, the viewer's frame cost, start-up and compile
time, and parallel kernels on a busy machine.

    python benchmarks/run.py                                  # everything; prints the report
    python benchmarks/run.py --write docs/performance.md      # ... and writes it there
    python benchmarks/run.py --quick                          # one round, N <= 256, short
    python benchmarks/run.py --only explicit --sizes 64 128 --rounds 5
    git worktree add ../before HEAD~3 && python benchmarks/run.py --baseline ../before
                                                              # this checkout against another

Every measurement runs in a fresh Python process (``--worker``), and the processes of
one round are interleaved (every implementation at one size, then the next size), with
the order rotated from round to round; a figure is the median over the rounds. Ratios
compare numbers from the same run. Warp and Taichi are measured when installed
(``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if os.path.isfile(os.path.join(ROOT, "ropesim", "__init__.py")):
    sys.path.insert(0, ROOT)  # in a source checkout, measure the code next to the benchmark

from report import merge_page  # noqa: E402
from workload import SIZES, cloth_arrays  # noqa: E402

ROPESIM = ("ropesim-f32", "ropesim-f32-serial", "ropesim-f32-general", "ropesim-f64")
PEERS = ("numpy", "warp-scatter", "warp-gather", "taichi-scatter", "taichi-gather")
LABELS = {
    "ropesim-f32": "ropesim float32 (grid kernel, auto threads)",
    "ropesim-f32-serial": "ropesim float32, serial only",
    "ropesim-f32-general": "ropesim float32, grid path off (edge-coloured / plain scatter)",
    "ropesim-f64": "ropesim float64 (default dtype)",
    "numpy": "NumPy (bincount scatter)",
    "warp-scatter": "Warp CPU, scatter kernels",
    "warp-gather": "Warp CPU, gather kernel",
    "taichi-scatter": "Taichi ti.cpu, scatter kernel",
    "taichi-gather": "Taichi ti.cpu, gather kernel",
}


# --- processes ------------------------------------------------------------------------------


def worker_main(spec: str) -> None:
    params = json.loads(spec)
    import cases

    result = cases.CASES[params.pop("case")](params)
    sys.stdout.write("\nRESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()


def run_case(case: str, params: dict, env: dict | None = None, timeout: float = 900,
             root: str = ROOT) -> dict:
    """Run one case in a fresh process. ``root``: the checkout to measure; another checkout
    runs its own benchmarks/run.py worker (its own cases.py, which knows its own internals)."""
    cmd = [sys.executable, os.path.join(root, "benchmarks", "run.py"), "--worker",
           json.dumps({"case": case, **params})]
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONPATH", "")
    if env:
        full_env.update(env)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=full_env, cwd=root)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return {"error": " | ".join(tail) or f"exit code {proc.returncode}"}


def available_peers() -> list[str]:
    import importlib.util

    names = ["numpy"]
    if importlib.util.find_spec("warp") is not None:
        names += ["warp-scatter", "warp-gather"]
    if importlib.util.find_spec("taichi") is not None:
        names += ["taichi-scatter", "taichi-gather"]
    return names


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# --- sections --------------------------------------------------------------------------------


def bench_explicit(sizes, rounds, impls, steps, budget) -> dict:
    results: dict[tuple[str, int], list[dict]] = {}
    for r in range(rounds):
        for n in sizes:
            shift = r % len(impls)
            order = impls[shift:] + impls[:shift]
            for impl in order:
                res = run_case("explicit", {"impl": impl, "n": n, "steps": steps,
                                            "budget": budget})
                results.setdefault((impl, n), []).append(res)
                if "error" in res:
                    log(f"  round {r + 1} N={n} {impl}: ERROR {res['error']}")
                else:
                    extra = f", batch {res['batch']:.0f}" if "batch" in res else ""
                    log(f"  round {r + 1} N={n} {impl}: {res['per_call']:.0f} steps/s{extra}")
    return results


def bench_loaded(n, rounds, loads, budget) -> dict:
    configs = [
        ("serial", {}, "serial"),
        ("parallel", {}, "parallel"),
        ("auto", {}, "auto"),
        ("parallel, OMP_WAIT_POLICY=active", {"OMP_WAIT_POLICY": "active"}, "parallel"),
        ("parallel, workqueue layer", {"NUMBA_THREADING_LAYER": "workqueue"}, "parallel"),
    ]
    results: dict[tuple[str, int], list[float]] = {}
    for r in range(rounds):
        for busy in loads:
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(busy)]
            try:
                time.sleep(0.2)
                shift = r % len(configs)
                for label, env, mode in configs[shift:] + configs[:shift]:
                    res = run_case("loaded", {"n": n, "mode": mode, "budget": budget}, env=env)
                    value = res.get("per_call")
                    results.setdefault((label, busy), []).append(value)
                    log(f"  round {r + 1} busy={busy} {label}: "
                        f"{value if value is None else round(value)} steps/s"
                        + (f" {res.get('chooser', '')}" if "chooser" in res else "")
                        + (f" ERROR {res['error']}" if "error" in res else ""))
            finally:
                for hog in hogs:
                    hog.kill()
                    hog.wait()
    return {"n": n, "configs": [c[0] for c in configs], "loads": list(loads),
            "results": results}


def bench_startup() -> dict:
    cache = tempfile.mkdtemp(prefix="ropesim-numba-cache-")
    try:
        env = {"NUMBA_CACHE_DIR": cache}
        log("  cold start (empty numba cache) ...")
        cold = run_case("startup", {}, env=env)
        log(f"  {cold}")
        log("  warm start (cache filled) ...")
        warm = run_case("startup", {}, env=env)
        log(f"  {warm}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"cold": cold, "warm": warm}


#: the symplectic Euler runs of the side-by-side comparison: (impl, results key)
SIDE_BY_SIDE_IMPLS = (("ropesim-f32", "explicit"), ("ropesim-f32-serial", "serial"))
#: fresh one-second backward Euler runs per checkout and round (the median is its figure)
SIDE_BY_SIDE_BE_RUNS = 7


def bench_side_by_side(baseline: str, sizes, rounds, steps, budget) -> dict:
    """This checkout against another one (``--baseline DIR``), in the same run: symplectic
    Euler float32 on the standard cloth at each size and backward Euler on the stiff 64 x 64
    cloth, the two checkouts alternated process by process, the order swapped every round."""
    roots = {"this": ROOT, "baseline": os.path.abspath(baseline)}
    results: dict[tuple[str, str], list] = {}
    for r in range(rounds):
        order = ["this", "baseline"] if r % 2 == 0 else ["baseline", "this"]
        for n in sizes:
            for impl, key in SIDE_BY_SIDE_IMPLS:
                for who in order:
                    res = run_case("explicit", {"impl": impl, "n": n, "steps": steps,
                                                "budget": budget}, root=roots[who])
                    results.setdefault((who, f"{key} {n}"), []).append(res.get("per_call"))
                    log(f"  round {r + 1} N={n} {impl} {who}: {res.get('per_call') or res}")
        for who in order:
            # no symplectic Euler reference (explicit_rates empty): backward Euler's
            # runs follow one another, SIDE_BY_SIDE_BE_RUNS fresh ones, the median taken
            res = run_case("implicit", {"dtype": "float64", "cg_tolerance": 1e-4,
                                        "be_parallel": "auto", "reps": SIDE_BY_SIDE_BE_RUNS,
                                        "explicit_rates": []}, root=roots[who])
            results.setdefault((who, "implicit"), []).append(res.get("be_second_s"))
            log(f"  round {r + 1} backward Euler {who}: {res.get('be_second_s') or res}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=roots["baseline"],
                            capture_output=True, text=True).stdout.strip()
    return {"baseline": roots["baseline"], "commit": commit, "sizes": list(sizes),
            "results": results}


def side_by_side_section(data, add) -> None:
    sbs = data["side_by_side"]
    add(f"`--baseline {os.path.relpath(sbs['baseline'], ROOT)}` (commit {sbs['commit'] or '?'}), "
        "measured in the same run, the two checkouts alternating process by process (each "
        "runs its own benchmark worker), the order swapped every round. Median and best of "
        "the rounds: on this 2-core machine one round can lose up to half its speed to the "
        "scheduler (OpenMP threads waiting for a core), which only ever slows a run down, so "
        "the best round is the estimate least affected by it; \"serial only\" runs both "
        "checkouts' single-thread kernels and leaves the threads out. Backward Euler: "
        f"the median of {SIDE_BY_SIDE_BE_RUNS} fresh one-second runs per round (each a new "
        "simulation, its serial/parallel choice made again). Ratio > 1: this checkout is "
        "faster.")
    add("")
    add("| workload | this, median | baseline, median | ratio | this, best | baseline, best "
        "| ratio |")
    add("|---|---:|---:|---:|---:|---:|---:|")
    res = sbs["results"]

    def row(label: str, key: str, digits: int = 0, lower_is_better: bool = False) -> None:
        ours, theirs = res.get(("this", key), []), res.get(("baseline", key), [])
        ours, theirs = [v for v in ours if v], [v for v in theirs if v]
        if not ours or not theirs:
            return
        best = min if lower_is_better else max
        cells = []
        for a, b in ((median(ours), median(theirs)), (best(ours), best(theirs))):
            ratio = b / a if lower_is_better else a / b
            cells += [fmt(a, digits), fmt(b, digits), f"**{ratio:.2f}x**"]
        add(f"| {label} | " + " | ".join(cells) + " |")

    for n in sbs["sizes"]:
        for impl, key in SIDE_BY_SIDE_IMPLS:
            label = "symplectic Euler, float32" + (", serial only" if "serial" in impl else "")
            row(f"{label}, N = {n} (steps/s)", f"{key} {n}")
    row("backward Euler, stiff 64 x 64, float64, s per simulated second", "implicit", 3,
        lower_is_better=True)


#: (dtype, CG tolerance, how backward Euler's two CG attempts run: "auto" = at once on
#: two cores after a step that fell back, if that is faster; "serial" = one after the other)
IMPLICIT_RUNS = (("float64", 1e-4, "auto"), ("float32", 1e-4, "auto"),
                 ("float64", 1e-4, "serial"), ("float64", 1e-6, "auto"),
                 ("float64", 1e-5, "auto"), ("float64", 1e-3, "auto"))


def bench_implicit(rounds) -> dict:
    out = {}
    for r in range(rounds):
        for dtype, tol, mode in IMPLICIT_RUNS:
            res = run_case("implicit", {"dtype": dtype, "cg_tolerance": tol,
                                        "be_parallel": mode})
            out.setdefault(f"{dtype} {tol:g} {mode}", []).append(res)
            log(f"  round {r + 1} {dtype} tol {tol:g} {mode}: {res}")
    return out


def bench_frame(rounds) -> dict:
    out = {}
    for r in range(rounds):
        for n in (64, 128):
            for dtype in ("float32", "float64"):
                res = run_case("frame", {"n": n, "dtype": dtype})
                out.setdefault((n, dtype), []).append(res)
                log(f"  round {r + 1} N={n} {dtype}: {res}")
    return out


def bandwidth() -> dict:
    """STREAM-like triad a = b + s c on 3 x 32 MiB float64, 1 and 2 threads (numba)."""
    code = r"""
import time, numpy as np, numba, json
from numba import njit, prange
@njit(parallel=True, cache=False)
def triad(a, b, c, s):
    for i in prange(a.shape[0]):
        a[i] = b[i] + s * c[i]
n = 4 * 1024 * 1024
a = np.zeros(n); b = np.ones(n); c = np.ones(n)
out = {}
for t in (1, numba.config.NUMBA_NUM_THREADS):
    numba.set_num_threads(t)
    triad(a, b, c, 3.0)
    best = 1e9
    for _ in range(20):
        s = time.perf_counter(); triad(a, b, c, 3.0); best = min(best, time.perf_counter() - s)
    out[str(t)] = 3 * 8 * n / best / 1e9
print("RESULT " + json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {}


# --- report ------------------------------------------------------------------------------------


def machine() -> dict:
    info = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        info["cpu"] = platform.processor()
    info["cores"] = os.cpu_count()
    try:
        with open("/proc/meminfo") as fh:
            info["memory_gb"] = round(int(fh.readline().split()[1]) / 2 ** 20, 1)
    except OSError:
        pass
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.split(":")[0].strip() in ("L2 cache", "L3 cache"):
                info[line.split(":")[0].strip()] = line.split(":", 1)[1].strip()
    except OSError:
        pass
    import numba
    import numpy

    import ropesim

    info["ropesim"] = os.path.dirname(os.path.abspath(ropesim.__file__))
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                        capture_output=True, text=True).stdout.strip()
    except OSError:
        info["commit"] = ""
    info["numpy"] = numpy.__version__
    info["numba"] = numba.__version__
    for mod in ("warp", "taichi"):
        try:
            info[mod] = __import__(mod).__version__ if mod == "warp" else ".".join(
                map(str, __import__(mod).__version__))
        except Exception:
            info[mod] = "not installed"
    return info


def fmt(value, digits=0):
    if value is None:
        return "–"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def traffic(n: int) -> dict:
    """Bytes per step of the standard cloth (float32), minimum and as ropesim reads it."""
    cloth = cloth_arrays(n)
    particles, springs = cloth.n_particles, cloth.n_springs
    state = 4 * 3 * 4 * particles  # x and v, read and written, float32
    minimum = state + 4 * particles + springs * (2 * 4 + 4)  # + inverse mass, 2 ints + L
    grid = state + 4 * particles  # neighbours from row and column, uniform L
    # ropesim's grid kernel: state + inverse mass + fixed flag (1 byte) + k, c, L per spring
    ours = state + 4 * particles + particles + springs * 3 * 4
    return {"particles": particles, "springs": springs, "minimum": minimum, "grid": grid,
            "ropesim": ours}


def preamble(data) -> str:
    """The page's title, recipe, machine and method: what a full run says about itself."""
    lines = []
    add = lines.append
    mach = data["machine"]
    add("# Performance")
    add("")
    add("<!-- sections generated by benchmarks/run.py, which keeps the others when it "
        "rewrites this page -->")
    add("")
    add("Regenerate this page (about 10 minutes on 2 cores; Warp and Taichi are measured when "
        "installed):")
    add("")
    add("```")
    add("pip install -e .[bench]")
    add(f"python benchmarks/run.py {' '.join(data['argv'])}".rstrip())
    add("```")
    add("")
    add(f"Run on {data['date']}: {mach.get('cpu', '?')}, {mach.get('cores')} cores, "
        f"{mach.get('memory_gb', '?')} GB, L2 {mach.get('L2 cache', '?')}, "
        f"L3 {mach.get('L3 cache', '?')}; Python {mach['python']}, NumPy {mach['numpy']}, "
        f"numba {mach['numba']}, Warp {mach['warp']}, Taichi {mach['taichi']}. "
        f"Threading: {data.get('threading', '?')}. ropesim: "
        + ("this source checkout" if os.path.abspath(mach.get("ropesim", "")).startswith(ROOT)
           else mach.get("ropesim", "?"))
        + (f", commit {mach['commit']}" if mach.get("commit") else "") + ".")
    add("")
    add("Method: every figure comes from a fresh process; the processes of one round are "
        "interleaved (all implementations at one size, then the next size) and the order "
        "rotates between rounds; a figure is the median over "
        f"{data['rounds']} rounds, and every ratio compares numbers of the same run. "
        "Timing starts after a warm-up (first call, then >= 0.5 s of steps for ropesim "
        "so that its serial/parallel chooser has timed both kernels; 20 steps for the "
        f"peers) and covers {data['steps']} steps, or as many as fit in "
        f"{data['budget']:g} s (at least 5) for the slow ones.")
    add("")
    return "\n".join(lines) + "\n"


HOW = """- **Structured-grid kernel** (ropesim/engine/kernels/sweeps.py `_grid_band`). A cloth
  whose springs come in blocks of one neighbour offset each, listed row by row (every
  `builders.cloth`, and this workload), is recognised once (kernels/grid.py `grid_layout`); no
  spring index is read after that. The grid is swept row by row: each row of positions and
  velocities is copied once into a small structure-of-arrays window (3 rows), the springs of
  a row are evaluated on contiguous rows of that window (AVX-512 SIMD, float32 stays float32,
  fused multiply-adds), their forces are summed into the window, and a row is integrated and
  written back as soon as no later spring touches it. Positions and velocities are read and
  written once per step; nothing is allocated.
- **Parallel row bands with identical results.** The parallel version gives each thread a
  band of rows; springs that cross a band boundary are evaluated by both bands from a copy of
  the boundary rows taken before the step, each band keeping the half on its side. Every
  particle's force is summed in the same order for any number of bands, so serial and
  parallel runs agree bit for bit (tests/test_performance_paths.py), and replaying steps
  after a divergence gives the same state.
- **Threading that survives a busy machine** (parallel.py). numba uses its OpenMP layer
  with a bounded spin (`GOMP_SPINCOUNT`) instead of spinning without limit, and a `Chooser`
  times the serial and the parallel kernel on the running machine in alternating turns
  (so that load falls on both), runs the faster, re-checks a new pick after 30 ms, then
  every 0.25-2 s (doubling only on a clear margin), and drops a version whose call takes
  over 4x the other's (the section above shows what that buys under load).
- **Other systems.** Springs without grid structure use an edge-coloured scatter (colours
  of springs that share no particle, applied colour by colour, a colour in parallel) from
  20,000 springs up, and the fused plain scatter below that.
- **Implicit steps** on grids use a multigrid-preconditioned CG in float64 (see above).
"""


def _explicit_medians(data):
    res = data["explicit"]
    med = {}
    for (impl, n), runs in res.items():
        med[(impl, n, "per_call")] = median([r.get("per_call") for r in runs])
        med[(impl, n, "batch")] = median([r.get("batch") for r in runs])
        med[(impl, n, "first")] = median([r.get("first_call_s") for r in runs])
    return med


def explicit_tables(data, add) -> None:
    sizes = data["sizes"]
    impls = data["impls"]
    med = _explicit_medians(data)
    head = "| implementation | " + " | ".join(f"N={n}" for n in sizes) + " |"
    rule = "|---|" + "---:|" * len(sizes)
    add("The workload of issue 5 (benchmarks/workload.py): N x N particles, structural, "
        "shear and bend springs (about 6 N^2 springs), float32 unless noted, dt = 1/600 s. "
        "One Python call per step (`sim.step()` in a loop; `peer.step()` for the peers).")
    add("")
    add(head)
    add(rule)
    for impl in impls:
        cells = [fmt(med.get((impl, n, "per_call"))) for n in sizes]
        add(f"| {LABELS.get(impl, impl)} | " + " | ".join(cells) + " |")
    add("")
    peers_fast = [p for p in impls if p.startswith(("warp", "taichi"))]
    if peers_fast:
        add("Ratios (same run): ropesim float32 over the faster of Warp and Taichi (best of "
            "their scatter and gather kernels), and over NumPy; spring updates per second.")
        add("")
        add("| | " + " | ".join(f"N={n}" for n in sizes) + " |")
        add(rule)
        best, ratio, ratio_np, updates, ratio_serial = [], [], [], [], []
        for n in sizes:
            ours = med.get(("ropesim-f32", n, "per_call"))
            peer_vals = [(med.get((p, n, "per_call")), p) for p in peers_fast]
            peer_vals = [(v, p) for v, p in peer_vals if v]
            top = max(peer_vals) if peer_vals else (None, None)
            best.append(f"{fmt(top[0])} ({top[1]})" if top[0] else "–")
            ratio.append(f"**{ours / top[0]:.1f}x**" if ours and top[0] else "–")
            npv = med.get(("numpy", n, "per_call"))
            ratio_np.append(f"{ours / npv:.0f}x" if ours and npv else "–")
            springs = cloth_arrays(n).n_springs
            updates.append(f"{ours * springs / 1e9:.2f} G" if ours else "–")
            ser = med.get(("ropesim-f32-serial", n, "per_call"))
            ratio_serial.append(f"{ours / ser:.2f}x" if ours and ser else "–")
        add("| fastest of Warp/Taichi | " + " | ".join(best) + " |")
        add("| ropesim / fastest peer | " + " | ".join(ratio) + " |")
        add("| ropesim / NumPy | " + " | ".join(ratio_np) + " |")
        add("| ropesim spring updates/s | " + " | ".join(updates) + " |")
        add("| ropesim auto / serial-only | " + " | ".join(ratio_serial) + " |")
        add("")
    if 256 in sizes:
        v = med.get(("ropesim-f32", 256, "per_call"))
        if v:
            add(f"Moonshot (1,000 steps/s at N = 256): **{v:,.0f} steps/s** "
                f"({'reached' if v >= 1000 else 'not reached'}).")
            add("")
    add("For reference, issue 5 quoted Warp 3,245 / 930 / 239 and Taichi 2,279 / 943 / 243 "
        "steps/s at N = 64 / 128 / 256 on this machine class; the hand-written peer kernels "
        "here (benchmarks/peers.py) measure faster than that, and the ratios above use the "
        "numbers of this run.")
    add("")
    add("One call per step against one call for all steps (`sim.step(k)`), ropesim float32 "
        "and float64, steps/s:")
    add("")
    add("| | " + " | ".join(f"N={n}" for n in sizes) + " |")
    add(rule)
    for impl in ("ropesim-f32", "ropesim-f64"):
        if impl in impls:
            add(f"| {impl}, `sim.step()` x k | "
                + " | ".join(fmt(med.get((impl, n, "per_call"))) for n in sizes) + " |")
            add(f"| {impl}, `sim.step(k)` | "
                + " | ".join(fmt(med.get((impl, n, "batch"))) for n in sizes) + " |")
    add("")
    add("First call (s): ropesim's includes building the simulation's kernel plan and "
        "loading (or compiling, on a cold cache) its kernels; Warp's loads or compiles its "
        "module; Taichi's compiles its kernel. Median over rounds, warm caches:")
    add("")
    add("| implementation | " + " | ".join(f"N={n}" for n in sizes) + " |")
    add(rule)
    for impl in impls:
        add(f"| {impl} | " + " | ".join(fmt(med.get((impl, n, "first")), 3) for n in sizes)
            + " |")


def bandwidth_section(data, add) -> None:
    bw = data["bandwidth"]
    med = _explicit_medians(data) if "explicit" in data else {}
    triad = ", ".join(f"{v:.1f} GB/s with {k} thread{'s' if k != '1' else ''}"
                      for k, v in bw.items())
    add(f"Measured bandwidth (triad a = b + s c on 3 x 32 MiB, numba): {triad}.")
    peak = max(bw.values()) if bw else 25.0
    add("")
    add("Minimum traffic of one step (float32): positions and velocities read and written "
        "(4 x 12 bytes per particle), the inverse mass (4 bytes per particle), and per "
        "spring two particle indices and a rest length (12 bytes). A grid cloth whose "
        "neighbours come from row and column and whose springs share their parameters "
        "needs only the particle terms. ropesim's grid kernel reads no indices but keeps "
        "per-spring stiffness, damping and rest length (12 bytes; they can be edited live) "
        "and a 1-byte pin flag per particle; the spring-to-particle maps are implicit.")
    add("")
    add("| N | particles | springs | minimum MB/step | bound steps/s | grid-only MB | "
        "ropesim reads+writes MB | ropesim steps/s | ropesim GB/s | fraction of bound |")
    add("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in data.get("sizes", SIZES):
        t = traffic(n)
        bound = peak * 1e9 / t["minimum"]
        ours = med.get(("ropesim-f32", n, "per_call"))
        add(f"| {n} | {t['particles']:,} | {t['springs']:,} | {t['minimum'] / 1e6:.2f} | "
            f"{bound:,.0f} | {t['grid'] / 1e6:.2f} | {t['ropesim'] / 1e6:.2f} | {fmt(ours)} | "
            + (f"{ours * t['ropesim'] / 1e9:.1f} | {ours / bound:.2f} |" if ours
               else "– | – |"))
    add("")
    if 256 in data.get("sizes", ()):
        t = traffic(256)
        add(f"At N = 256: {t['particles']:,} particles x 52 bytes = "
            f"{t['particles'] * 52 / 1e6:.2f} MB plus {t['springs']:,} springs x 12 bytes = "
            f"{t['springs'] * 12 / 1e6:.2f} MB, {t['minimum'] / 1e6:.2f} MB per step; at "
            f"{peak:.1f} GB/s that is {t['minimum'] / peak / 1e6:.2f} ms, a bound of "
            f"{peak * 1e9 / t['minimum']:,.0f} steps/s. The working set (about "
            f"{t['ropesim'] / 1e6:.0f} MB) fits in this machine's L3 cache, so a step can "
            "run faster than DRAM bandwidth alone would allow.")
        add("")
        ours = med.get(("ropesim-f32", 256, "per_call"))
        batch = med.get(("ropesim-f32", 256, "batch"))
        if ours:
            issue_bound = 25e9 / t["minimum"]
            add(f"Against the 25 GB/s quoted in issue 5 (a bound of {issue_bound:,.0f} steps/s "
                f"at N = 256), ropesim's {ours:,.0f} steps/s one call per step is "
                f"{ours / issue_bound:.2f}x the bound"
                + (f" and its {batch:,.0f} steps/s with `sim.step(k)` {batch / issue_bound:.2f}x"
                   if batch else "")
                + f"; against the bandwidth measured here it is {ours / bound_256(data):.2f}x.")
            add("")


def bound_256(data) -> float:
    bw = data.get("bandwidth") or {"2": 25.0}
    return max(bw.values()) * 1e9 / traffic(256)["minimum"]


def implicit_section(data, add) -> None:
    add("The standard 64 x 64 cloth with 400 x its stiffness (k = 4e6 m N/m, "
        "benchmarks/workload.py `stiff_cloth_system`): symplectic Euler diverges at "
        "dt = 1/3000 s. One simulated second: backward Euler at dt = 1/60 s (60 steps, "
        "CG tolerance as given) against symplectic Euler at the largest dt that survives a "
        "simulated second (found by trying 1/3000, 1/3100, ... each run). Within each run the "
        "two are timed alternately, 3 times each, and the medians taken (the machine's speed "
        "drifts); the table gives the median over runs. 'Solver error' is "
        "the largest position difference after that second from the same run solved to a "
        "relative residual of 1e-10: what the stopping rule costs in accuracy.")
    add("")
    add("| dtype, CG tolerance | BE wall s per sim. s | BE steps/s | CG iterations per step "
        "(all solves) | last-solve mean / max | clamped fallbacks | steps with both attempts "
        "at once | solver error m | SE dt | SE wall s per sim. s (`step(n)` / per call) | "
        "BE / SE speed |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key, runs in data["implicit"].items():
        ok = [r for r in runs if "error" not in r]
        name, tol, mode = (key.split(" ") + ["auto"])[:3]
        dtype = f"{name}, {tol}" + (" (default)" if float(tol) == 1e-4 else "")
        if mode == "serial":
            dtype += ", attempts one after the other"
        if not ok:
            add(f"| {dtype} | error: {runs[0].get('error')} |")
            continue
        be = median([r["be_second_s"] for r in ok])
        se = median([r.get("se_second_s") for r in ok])
        se_call = median([r.get("se_second_per_call_s") for r in ok])
        r0 = ok[0]
        dt = r0.get("explicit_dt")
        iters = median([r["cg_iterations_mean"] for r in ok])
        add(f"| {dtype} | {be:.3f} | {60 / be:.0f} | {iters:.0f} | "
            f"{median([r['cg_last_solve_mean'] for r in ok]):.0f} / {r0['cg_last_solve_max']} | "
            f"{r0['fallback_steps']} / 60 | {r0.get('be_concurrent_steps', '–')} | "
            f"{r0['be_solver_error_m']:.1e} | "
            f"{'1/%d' % round(1 / dt) if dt else '–'} | "
            f"{fmt(se, 3)} / {fmt(se_call, 3)} | "
            + (f"**{se / be:.2f}x**" if se else "–") + " |")
    add("")
    steps_error = [r.get("be_time_step_error_m") for runs in data["implicit"].values()
                   for r in runs if r.get("be_time_step_error_m") is not None]
    if steps_error:
        add(f"Backward Euler's own error at dt = 1/60 s is much larger: after the second its "
            f"positions (solved to 1e-10) differ from symplectic Euler's at its stable dt by "
            f"up to {median(steps_error):.2f} m (median over runs), the numerical damping of "
            "large implicit steps. The default tolerance, 1e-4, keeps the solver's error three "
            "orders of magnitude below that (tests/test_physics.py checks the same on a "
            "smaller stiff cloth for both implicit integrators); 1e-6 buys digits the "
            "integrator does not have.")
        add("")
    add("How the step is solved (ropesim/engine/integrators/theta.py `_GridImplicit`, "
        "linalg/multigrid.py, kernels/grid_implicit.py): the exact "
        "spring Jacobian first, the clamped one (transverse term of compressed springs "
        "dropped) when CG meets non-positive curvature; flexible CG in float64, "
        "preconditioned by aggregation multigrid in float32 (2 x 2 aggregates, Galerkin "
        "coarse operators, block-Jacobi smoothing, K-cycles on the first two levels, a dense "
        "inverse on the 4 x 4 coarsest level). The K-cycle (two coarse visits combined by "
        "two flexible-CG steps) took the default-tolerance iterations from ~28 to ~18 per "
        "step: a V-cycle of unsmoothed aggregation loses accuracy level by level. After a "
        "step that fell back to the clamped Jacobian (about half of them here, in runs), the "
        "next step runs both attempts at once on two cores, the clamped one on a helper "
        "thread, stopped when the exact one converges: same answer, the fallback's cost "
        "hidden; a run-time chooser falls back to one-after-the-other when that is faster "
        "(a busy machine). The spring pass is a structured-grid kernel (~135 us), and the "
        "fine grid stores each spring's block g n n^T + h I as the 4 numbers (sqrt(g) n, h) "
        "instead of 6 (the float64 CG product ~37 -> ~25 us: the fine-grid products are "
        "limited by memory traffic). Tried "
        "without gain: warm-starting CG from the previous step's dv (at dt = 1/60 the "
        "velocity change differs too much from one step to the next), or reusing the "
        "previous step's multigrid operators (3-4x the iterations), fine-grained parallel "
        "operator products (the work per call is too small for two threads), over-corrected "
        "coarse corrections (the preconditioner loses definiteness), no pre-smoothing.")


def frame_section(data, add) -> None:
    add("One displayed frame of the viewer path: 10 substeps of symplectic Euler "
        "(dt = 1/600 s, i.e. real time at 60 frames/s), per-vertex normals and the upload of "
        "positions and normals into the existing GL buffers (`Renderer.update`, headless EGL; "
        "float32 state is uploaded without a copy, float64 is converted once into a staging "
        "array). Drawing is not included.")
    add("")
    add("| cloth | dtype | frame ms | of which normals + upload ms | frames/s possible | GL |")
    add("|---|---|---:|---:|---:|---|")
    for (n, dtype), runs in sorted(data["frame"].items()):
        ok = [r for r in runs if "error" not in r]
        if not ok:
            add(f"| {n}x{n} | {dtype} | error: {runs[0].get('error')} | | | |")
            continue
        ms = median([r["frame_ms"] for r in ok])
        up = median([r.get("upload_ms") for r in ok])
        add(f"| {n}x{n} | {dtype} | {ms:.2f} | {fmt(up, 2)} | {1e3 / ms:,.0f} | "
            f"{ok[0].get('gl', '?')} |")


def startup_section(data, add) -> None:
    st = data["startup"]
    add("A fresh process: `import ropesim`, the first float32 step of the 64 x 64 cloth "
        "(serial grid kernel), its first parallel step (parallel kernel), the first float64 "
        "step and the first backward Euler step (32 x 32). Cold: empty numba cache (every "
        "kernel compiled); warm: the cache that run left (kernels loaded from disk).")
    add("")
    add("| | import s | first f32 step s | first parallel step s | first f64 step s | "
        "first implicit step s | total s |")
    add("|---|---:|---:|---:|---:|---:|---:|")
    for label in ("cold", "warm"):
        r = st.get(label, {})
        if "error" in r:
            add(f"| {label} | error: {r['error']} |")
            continue
        add(f"| {label} | {fmt(r.get('import_s'), 2)} | {fmt(r.get('first_step_s'), 2)} | "
            f"{fmt(r.get('first_parallel_step_s'), 2)} | {fmt(r.get('first_step_f64_s'), 2)} | "
            f"{fmt(r.get('first_implicit_step_s'), 2)} | {fmt(r.get('total_s'), 2)} |")


def loaded_section(data, add) -> None:
    ld = data["loaded"]
    n = ld["n"]
    add(f"Float32 {n} x {n} cloth, steps/s (one call per step) while 0, 1 or 2 other "
        "processes spin on the cores (`python -c 'while True: pass'`), median over rounds. "
        "'serial' and 'parallel' force one version of the grid kernel; 'auto' is the "
        "default: ropesim times both and runs the faster (they give identical results). "
        "The last two rows force the parallel kernel with numba's OpenMP threads spinning "
        "without limit (OMP_WAIT_POLICY=active) and with the workqueue layer. Ratios are "
        "to 'serial' under the same load.")
    add("")
    loads = ld["loads"]
    add("| | " + " | ".join(f"{b} busy" for b in loads) + " |")
    add("|---|" + "---:|" * len(loads))
    res = ld["results"]
    serial = {b: median(res.get(("serial", b), [])) for b in loads}
    for label in ld["configs"]:
        cells = []
        for b in loads:
            v = median(res.get((label, b), []))
            s = serial[b]
            cells.append(f"{fmt(v)} ({v / s:.2f}x)" if v and s else fmt(v))
        add(f"| {label} | " + " | ".join(cells) + " |")
    add("")
    worst_forced = min((median(res.get((label, b), [])) or 0) / serial[b]
                       for label in ld["configs"] if label.startswith("parallel")
                       for b in loads if serial[b])
    worst_auto = min((median(res.get(("auto", b), [])) or 0) / serial[b]
                     for b in loads if serial[b])
    add(f"Forced parallel kernels fall to {worst_forced:.2f}x of the serial speed under load; "
        f"the automatic choice stays at {worst_auto:.2f}x or more.")


def how_section(data, add) -> None:
    add(HOW.rstrip("\n"))


#: What run.py measures by default (``--only``); a run of all of them is a full run.
MEASURED = ("explicit", "implicit", "frame", "startup", "loaded")

#: Every section run.py writes, in page order: the part of the results it reports (None:
#: every full run writes it), its title, the function that writes its lines.
SECTIONS = (
    ("side_by_side", "This checkout against a baseline checkout", side_by_side_section),
    ("explicit", "Standard cloth, symplectic Euler, steps per second", explicit_tables),
    ("bandwidth", "Distance to the memory-bandwidth bound", bandwidth_section),
    ("implicit", "Implicit integration: a stiff 64 x 64 cloth", implicit_section),
    ("frame", "Viewer frame cost", frame_section),
    ("startup", "Start-up and compile time", startup_section),
    ("loaded", "Parallel kernels on a busy machine", loaded_section),
    (None, "What makes it fast", how_section),
)


def is_full_run(data) -> bool:
    """Whether the run measured every default part (then it also rewrites the preamble)."""
    return all(part in data for part in MEASURED)


def report(data) -> str:
    """The markdown this run generates: the preamble, then a section for each part of
    ``data`` in SECTIONS order. In a partial run each section names its date, commit and
    command, since the page keeps the preamble of its last full run (:func:`write_page`)."""
    full = is_full_run(data)
    stamp = (f"Measured on {data['date']}, commit {data['machine'].get('commit') or '?'}: "
             f"`python benchmarks/run.py {' '.join(data['argv'])}`.")
    texts = [preamble(data)]
    for part, title, write in SECTIONS:
        if part in data or (part is None and full):
            lines = [f"## {title}", ""] + ([] if full else [stamp, ""])
            write(data, lines.append)
            texts.append("\n".join(lines).rstrip("\n") + "\n\n")
    return "".join(texts).rstrip("\n") + "\n"


def write_page(path: str, generated: str, data) -> None:
    """Write the report to ``path``; an existing page keeps, in place, every section this
    run did not generate (benchmarks/report.py ``merge_page``)."""
    if os.path.exists(path):
        with open(path) as fh:
            existing = fh.read()
        generated = merge_page(existing, generated, [title for _, title, _ in SECTIONS],
                               replace_preamble=is_full_run(data))
    with open(path, "w") as fh:
        fh.write(generated)
    log(f"wrote {path}")


# --- main ---------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--write", metavar="FILE", help="write the markdown report here")
    parser.add_argument("--json", metavar="FILE", help="also save the raw results")
    parser.add_argument("--save", metavar="FILE",
                        help="save the results (pickle) before writing the report")
    parser.add_argument("--report-from", metavar="FILE",
                        help="only write the report, from results saved with --save")
    parser.add_argument("--quick", action="store_true", help="one round, N <= 256, shorter")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--budget", type=float, default=3.0,
                        help="seconds at most per timed loop (slow implementations)")
    parser.add_argument("--only", default=",".join(MEASURED),
                        help=f"comma-separated parts of {', '.join(MEASURED)}, or none "
                             "(with --baseline: only the side-by-side section)")
    parser.add_argument("--impls", nargs="+", default=None)
    parser.add_argument("--baseline", metavar="DIR",
                        help="another ropesim checkout (e.g. a git worktree of the commit "
                             "before a change) to time side by side with this one")
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(args.worker)
        return 0
    if args.report_from:
        import pickle

        with open(args.report_from, "rb") as fh:
            data = pickle.load(fh)
        text = report(data)
        print(text)
        if args.write:
            write_page(args.write, text, data)
        return 0
    rounds = args.rounds or (1 if args.quick else 3)
    sizes = args.sizes or ([32, 64, 128, 256] if args.quick else list(SIZES))
    budget = 1.0 if args.quick else args.budget
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in sections if s not in MEASURED + ("none",)]
    if unknown:
        parser.error(f"--only: unknown part(s) {', '.join(unknown)}; allowed: "
                     f"{', '.join(MEASURED)}, none")
    impls = args.impls or (list(ROPESIM) + available_peers())
    argv_out = [a for a in (argv if argv is not None else sys.argv[1:])]
    for flag in ("--save", "--json"):  # where raw results went is not part of the recipe
        if flag in argv_out:
            i = argv_out.index(flag)
            del argv_out[i:i + 2]
    if "--write" in argv_out:
        i = argv_out.index("--write")
        argv_out[i + 1] = os.path.relpath(os.path.abspath(argv_out[i + 1]), ROOT)
    data = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "machine": machine(),
            "rounds": rounds, "sizes": sizes, "impls": impls, "steps": args.steps,
            "budget": budget, "argv": argv_out}
    started = time.perf_counter()
    log(f"ropesim benchmarks: sections {sections}, sizes {sizes}, {rounds} round(s)")
    if "explicit" in sections:
        log("standard cloth, symplectic Euler:")
        data["explicit"] = bench_explicit(sizes, rounds, impls, args.steps, budget)
        for runs in data["explicit"].values():
            for r in runs:
                if "threading" in r:
                    th = r["threading"]
                    data["threading"] = (f"numba layer {th['layer']}, {th['threads']} threads, "
                                         f"GOMP_SPINCOUNT={th['GOMP_SPINCOUNT']}")
                    break
        log("memory bandwidth:")
        data["bandwidth"] = bandwidth()
        log(f"  {data['bandwidth']}")
    if args.baseline:
        log(f"side by side with {args.baseline}:")
        data["side_by_side"] = bench_side_by_side(
            args.baseline, [n for n in sizes if n in (64, 128, 256)] or sizes, rounds,
            args.steps, budget)
    if "implicit" in sections:
        log("stiff cloth, backward Euler vs symplectic Euler:")
        data["implicit"] = bench_implicit(1 if args.quick else max(1, rounds - 1))
    if "frame" in sections:
        log("viewer frame cost:")
        data["frame"] = bench_frame(1 if args.quick else rounds)
    if "startup" in sections:
        log("start-up:")
        data["startup"] = bench_startup()
    if "loaded" in sections:
        log("busy machine:")
        data["loaded"] = bench_loaded(128, 1 if args.quick else 2, (0, 1, 2),
                                      2.0 if args.quick else 3.0)
    log(f"done in {time.perf_counter() - started:.0f} s")
    if args.save:
        import pickle

        with open(args.save, "wb") as fh:
            pickle.dump(data, fh)
    text = report(data)
    print(text)
    if args.write:
        write_page(args.write, text, data)
    if args.json:
        def keyed(obj):
            if isinstance(obj, dict):
                return {(" ".join(map(str, k)) if isinstance(k, tuple) else str(k)): keyed(v)
                        for k, v in obj.items()}
            if isinstance(obj, list):
                return [keyed(v) for v in obj]
            return obj

        with open(args.json, "w") as fh:
            json.dump(keyed(data), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
