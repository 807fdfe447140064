"""One measurement per call, meant to run in a fresh process (see run.py).

Each case takes a dict of parameters and returns a dict of results (JSON-able). The
driver (run.py) starts ``python benchmarks/run.py --worker '<json>'`` for every case,
so every figure comes from a process that compiled or loaded its own kernels.
"""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
ROOT = os.path.dirname(HERE)
if os.path.isfile(os.path.join(ROOT, "ropesim", "__init__.py")) and ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # in a source checkout, measure the code next to the benchmark

from workload import DT, cloth_arrays, cloth_system, stiff_cloth_system  # noqa: E402

ROPESIM_IMPLS = ("ropesim-f32", "ropesim-f64", "ropesim-f32-serial", "ropesim-f32-general")
PEER_IMPLS = ("numpy", "warp-scatter", "warp-gather", "taichi-scatter", "taichi-gather")


def _timed_loop(step, steps: int, budget: float) -> tuple[int, float]:
    """Call step() up to ``steps`` times or until ``budget`` seconds pass (at least
    5 calls); returns (calls, seconds)."""
    done = 0
    start = time.perf_counter()
    deadline = start + budget
    while done < steps:
        step()
        done += 1
        if done >= 5 and time.perf_counter() > deadline:
            break
    return done, time.perf_counter() - start


def explicit(p: dict) -> dict:
    """The standard cloth, symplectic Euler: steps/s one call per step and in batches."""
    impl, n = p["impl"], int(p["n"])
    steps, budget = int(p.get("steps", 1000)), float(p.get("budget", 2.0))
    out = {"impl": impl, "n": n}
    if impl.startswith("ropesim"):
        from ropesim.engine import parallel
        from ropesim.engine.simulation import Simulation

        dtype = np.float64 if impl == "ropesim-f64" else np.float32
        if impl == "ropesim-f32-serial":
            parallel.set_mode("serial")
        grid_kernels = impl != "ropesim-f32-general"
        t0 = time.perf_counter()
        sim = Simulation(cloth_system(n), dt=DT, dtype=dtype, grid_kernels=grid_kernels)
        t1 = time.perf_counter()
        sim.step()
        t2 = time.perf_counter()
        out["setup_s"] = t1 - t0
        out["first_call_s"] = t2 - t1
        # warm-up: let the parallel chooser time both versions (and compile the parallel one)
        warm_until = time.perf_counter() + float(p.get("warmup", 0.5))
        while time.perf_counter() < warm_until or sim.step_count < 30:
            sim.step()
        calls, secs = _timed_loop(sim.step, steps, budget)
        out["per_call"] = calls / secs
        t = time.perf_counter()
        sim.step(calls)
        out["batch"] = calls / (time.perf_counter() - t)
        out["steps_timed"] = calls
        path = sim.integrator_object.path()
        out["path"] = path.kind
        chooser = getattr(path, "chooser", None)
        if chooser is not None and getattr(path, "can_parallel", True):
            out["chooser"] = repr(chooser)
            out["parallel_share"] = chooser.calls[1] / max(1, sum(chooser.calls))
        out["threading"] = parallel.info()
        out["finite"] = bool(np.all(np.isfinite(sim.positions)))
        out["y_mean"] = float(sim.positions[:, 1].mean())
        out["springs"] = sim.n_springs
    else:
        from peers import make_peer

        cloth = cloth_arrays(n)
        t0 = time.perf_counter()
        peer = make_peer(impl, cloth)
        t1 = time.perf_counter()
        peer.step()
        peer.positions()
        t2 = time.perf_counter()
        out["setup_s"] = t1 - t0
        out["first_call_s"] = t2 - t1
        for _ in range(int(p.get("peer_warmup", 20))):
            peer.step()
        peer.positions()

        def step_sync():
            peer.step()

        calls, secs = _timed_loop(step_sync, steps, budget)
        t = time.perf_counter()
        peer.positions()  # a sync point: the last step is finished
        secs += time.perf_counter() - t
        out["per_call"] = calls / secs
        out["steps_timed"] = calls
        out["threads"] = peer.threads
        pos = peer.positions()
        out["finite"] = bool(np.all(np.isfinite(pos)))
        out["y_mean"] = float(pos[:, 1].mean())
        out["springs"] = cloth.n_springs
    return out


def implicit(p: dict) -> dict:
    """The stiff 64x64 cloth: one simulated second of backward Euler at dt = 1/60
    against symplectic Euler at the largest dt it survives. The two are timed
    alternately, ``reps`` times each (fresh simulations), and the medians reported: the
    machine's speed drifts, and a ratio of two single runs far apart would carry it."""
    import warnings

    import ropesim as rs
    from ropesim.engine import parallel

    warnings.simplefilter("ignore")
    n = int(p.get("n", 64))
    reps = int(p.get("reps", 3))
    dtype = np.dtype(p.get("dtype", "float64"))
    system, k = stiff_cloth_system(n)
    out = {"n": n, "dtype": dtype.name, "stiffness": k, "springs": system.n_springs}
    tol = float(p.get("cg_tolerance", 1e-4))
    # "serial": backward Euler's two CG attempts one after the other, never at once
    be_mode = p.get("be_parallel", "auto")
    out["be_parallel"] = be_mode
    out["cg_tolerance"] = tol

    def backward_euler():
        parallel.set_mode(be_mode)
        sim = rs.Simulation(system, dt=1 / 60, integrator="backward_euler", dtype=dtype,
                            cg_tolerance=tol)
        iterations = []
        t = time.perf_counter()
        for _ in range(60):
            sim.step()
            iterations.append(sim.solver_stats.iterations)
        elapsed = time.perf_counter() - t
        parallel.set_mode("auto")
        return elapsed, sim, iterations

    t = time.perf_counter()
    backward_euler()  # warm-up (compiles)
    out["be_first_run_s"] = time.perf_counter() - t
    # symplectic Euler: largest stable dt among 1/3000 ... (it must diverge at 1/3000)
    stable_dt = None
    for steps_per_s in p.get("explicit_rates", (3000, 3100, 3200, 3300, 3400, 3500, 3750,
                                                 4000, 4500, 5000, 6000)):
        dt = 1.0 / steps_per_s
        probe = rs.Simulation(system, dt=dt, dtype=dtype)
        try:
            probe.step(steps_per_s)  # one simulated second
        except rs.SimulationDiverged:
            out.setdefault("explicit_diverged_at", []).append(f"1/{steps_per_s}")
            continue
        stable_dt = dt
        break
    out["explicit_dt"] = stable_dt
    steps = int(round(1.0 / stable_dt)) if stable_dt else 0
    be_times, se_times, se_call_times = [], [], []
    for _ in range(reps):
        elapsed, sim, iterations = backward_euler()
        be_times.append(elapsed)
        if stable_dt is None:
            continue
        se = rs.Simulation(system, dt=stable_dt, dtype=dtype)
        se.step(10)
        t = time.perf_counter()
        se.step(steps)
        se_times.append(time.perf_counter() - t)
        se2 = rs.Simulation(system, dt=stable_dt, dtype=dtype)
        se2.step(10)
        t = time.perf_counter()
        for _ in range(steps):
            se2.step()
        se_call_times.append(time.perf_counter() - t)
    out["be_second_s"] = float(np.median(be_times))
    out["be_second_all_s"] = be_times
    stats = sim.solver_stats
    out["be_steps_per_s"] = 60 / out["be_second_s"]
    out["cg_iterations_mean"] = stats.total_iterations / 60
    out["cg_last_solve_mean"] = float(np.mean(iterations))
    out["cg_last_solve_max"] = int(max(iterations))
    out["fallback_steps"] = stats.fallback_steps
    out["be_finite"] = bool(np.all(np.isfinite(sim.positions)))
    out["be_y_mean"] = float(sim.positions[:, 1].mean())
    out["be_concurrent_steps"] = sim.integrator_object.grid_solver().concurrent_steps
    # accuracy (not timed): the same second solved to 1e-10, and the explicit reference
    tight = rs.Simulation(system, dt=1 / 60, integrator="backward_euler", dtype=dtype,
                          cg_tolerance=1e-10)
    tight.step(60)
    out["be_solver_error_m"] = float(np.abs(sim.positions - tight.positions).max())
    if stable_dt is not None:
        reference = rs.Simulation(system, dt=stable_dt, dtype=dtype)
        reference.step(steps)  # one simulated second from the start, like backward Euler's
        out["be_time_step_error_m"] = float(np.abs(tight.positions - reference.positions).max())
        out["se_second_s"] = float(np.median(se_times))
        out["se_second_all_s"] = se_times
        out["se_second_per_call_s"] = float(np.median(se_call_times))
        out["se_steps"] = steps
    return out


def frame(p: dict) -> dict:
    """Viewer frame cost: substeps of symplectic Euler + vertex normals + upload of
    positions and normals into GL buffers (headless EGL when available)."""
    import ropesim as rs

    n = int(p["n"])
    substeps = int(p.get("substeps", 10))
    dtype = np.dtype(p.get("dtype", "float32"))
    system = cloth_system(n)  # the standard cloth, with triangles for the surface normals
    sim = rs.Simulation(system, dt=DT, dtype=dtype, substeps=substeps)
    out = {"n": n, "substeps": substeps, "dtype": dtype.name}
    renderer = None
    try:
        from ropesim.render.offscreen import create_headless_context
        from ropesim.render.renderer import Renderer

        ctx = create_headless_context()
        renderer = Renderer(ctx, sim)
        out["gl"] = ctx.info.get("GL_RENDERER", "?")
    except Exception as exc:  # no EGL: measure normals + one host copy instead
        out["gl"] = f"none ({type(exc).__name__})"
        from ropesim.render.surface import vertex_normals

        normals = np.zeros((sim.n_particles, 3), np.float32)
        staging = np.zeros((sim.n_particles, 3), np.float32)
        tris = np.asarray(system.triangles)

    def one_frame():
        sim.step(substeps)
        if renderer is not None:
            renderer.update(sim)
        else:
            vertex_normals(sim.positions, tris, normals)
            np.copyto(staging, sim.positions, casting="same_kind")

    for _ in range(10):
        one_frame()
    if renderer is not None:
        ctx.finish()
    frames, secs = _timed_loop(one_frame, int(p.get("frames", 300)), float(p.get("budget", 2.0)))
    if renderer is not None:
        t = time.perf_counter()
        ctx.finish()
        secs += time.perf_counter() - t
    out["frame_ms"] = 1e3 * secs / frames
    # the same frames without the simulation: normals + upload alone
    if renderer is not None:
        t = time.perf_counter()
        for _ in range(frames):
            renderer.update(sim)
        ctx.finish()
        out["upload_ms"] = 1e3 * (time.perf_counter() - t) / frames
    return out


def startup(p: dict) -> dict:
    """Start-up: import, first explicit step (float32 grid kernel), first parallel step,
    first backward Euler step. Cold or warm depends on NUMBA_CACHE_DIR (set by run.py)."""
    t0 = time.perf_counter()
    import ropesim as rs
    from ropesim.engine import parallel

    t1 = time.perf_counter()
    out = {"import_s": t1 - t0, "cache_dir": os.environ.get("NUMBA_CACHE_DIR", "")}
    sim = rs.Simulation(cloth_system(64), dt=DT, dtype=np.float32)
    t = time.perf_counter()
    parallel.set_mode("serial")
    sim.step()
    out["first_step_s"] = time.perf_counter() - t
    parallel.set_mode("parallel")
    t = time.perf_counter()
    sim.step()
    out["first_parallel_step_s"] = time.perf_counter() - t
    parallel.set_mode("auto")
    sim64 = rs.Simulation(cloth_system(64), dt=DT)
    t = time.perf_counter()
    sim64.step()
    out["first_step_f64_s"] = time.perf_counter() - t
    imp = rs.Simulation(cloth_system(32), dt=1 / 60, integrator="backward_euler")
    t = time.perf_counter()
    imp.step()
    out["first_implicit_step_s"] = time.perf_counter() - t
    out["total_s"] = time.perf_counter() - t0
    return out


def loaded(p: dict) -> dict:
    """Steps/s of the float32 cloth while other processes keep cores busy (started by
    run.py), for a forced serial, forced parallel or automatic choice."""
    from ropesim.engine import parallel
    from ropesim.engine.simulation import Simulation

    n = int(p["n"])
    mode = p["mode"]
    parallel.set_mode(mode)
    sim = Simulation(cloth_system(n), dt=DT, dtype=np.float32)
    sim.step()
    warm_until = time.perf_counter() + float(p.get("warmup", 0.5))
    while time.perf_counter() < warm_until:
        sim.step()
    calls, secs = _timed_loop(sim.step, 10 ** 9, float(p.get("budget", 3.0)))
    out = {"n": n, "mode": mode, "per_call": calls / secs, "threading": parallel.info()}
    chooser = getattr(sim.integrator_object.path(), "chooser", None)
    if chooser is not None and mode == "auto":
        out["chooser"] = repr(chooser)
        out["parallel_share"] = chooser.calls[1] / max(1, sum(chooser.calls))
    return out


CASES = {"explicit": explicit, "implicit": implicit, "frame": frame, "startup": startup,
         "loaded": loaded}
