#!/usr/bin/env python
"""Time the renderer's draw of N x N cloths offscreen (EGL), in every draw mode.

    python benchmarks/time_draw.py                       # 64, 128, 256; 1280x720; MSAA 0 and 4
    python benchmarks/time_draw.py --sizes 128 --samples 4 --draws 30
    python benchmarks/time_draw.py --json out.json       # also write the numbers
    python benchmarks/time_draw.py --window              # whole frames in the real window
    python benchmarks/time_draw.py --window --sizes 128 --modes surface --baseline ../main \
        --rounds 3 --viewer-args='--samples 4'          # against another checkout, alternating

``--window`` measures what a user sees: the real viewer window (under $DISPLAY, or an
Xvfb it starts), 1280 x 720 px with its panel, the default scene's cloth resized
with ``--set cloth.nx=N cloth.ny=N``, running (not paused) in every draw mode. A
frame is the window's whole frame: the simulation's steps within the frame
clock's budget, the upload, the draw (4x MSAA, shadows), the panel and the
buffer swap; the figures are the median wall-clock ms per frame (and fps), the
real-time factor the title shows and the scene's MSAA samples at the end (the window
switches them off while frames miss 30 fps). Each cloth size runs in a fresh process.

The cloth lies in the x-z plane (1.15 m square, like the default scene's), bent
into waves so its normals vary, above a ground at y = -1.5 m, framed by the
default scene's camera direction. One draw is ``Renderer.draw`` (positions and
normals upload, every pass) followed by ``ctx.finish()`` so the GPU work is
counted; the figure is the median over ``--draws`` draws after three warm-up
draws, as wall-clock ms and (in brackets) as CPU ms of the whole process, which
includes llvmpipe's rasteriser threads and is steadier on a busy machine.
``upload`` is ``Renderer.update`` alone (normals kernel + buffer writes).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if "--root" in sys.argv:      # a child measuring another checkout (--baseline)
    ROOT = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])
if os.path.isfile(os.path.join(ROOT, "ropesim", "__init__.py")):
    sys.path.insert(0, ROOT)  # in a source checkout, measure the code next to the benchmark

import numpy as np  # noqa: E402

SIDE_M = 1.15      # cloth side length, m
GROUND_Y = -1.5    # m


def wavy_cloth(n: int):
    """A Simulation of an n x n cloth bent into waves, with a ground below it."""
    from ropesim.engine.builders import cloth
    from ropesim.engine.contacts import Ground
    from ropesim.engine.simulation import Simulation

    system = cloth(n, n, SIDE_M / (n - 1), plane="xz", pins="top-corners")
    sim = Simulation(system, dt=5e-4, contacts=(Ground(GROUND_Y),))
    x, z = sim.positions[:, 0], sim.positions[:, 2]
    sim.positions[:, 1] = -0.55 + 0.08 * np.sin(9.0 * x) * np.cos(7.0 * z) - 0.3 * (x * x + z * z)
    return sim


def time_draws(ctx, renderer, camera, width: int, height: int, options, samples: int,
               draws: int) -> tuple[float, float]:
    """Median wall-clock and CPU milliseconds of one draw + finish into a
    width x height target (the renderer's own offscreen one)."""
    renderer.frame_grabber(width, height, samples).target.use()
    wall, cpu = [], []
    for i in range(draws + 3):
        t, c = time.perf_counter(), time.process_time()
        renderer.draw(camera, width, height, options)
        ctx.finish()
        if i >= 3:
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
    return 1e3 * statistics.median(wall), 1e3 * statistics.median(cpu)


def time_upload(ctx, renderer, draws: int) -> float:
    times = []
    for _ in range(draws):
        t = time.perf_counter()
        renderer.update()
        ctx.finish()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def window_frames(n: int, modes: list[str], frames: int, size: str,
                  viewer_args: list[str] = ()) -> list[dict]:
    """Whole frames of the viewer window on an n x n cloth, per draw mode: median
    wall ms and CPU ms per frame, the CPU ms of its physics (the controller's
    ``advance``) and of the rest (upload, draw, panel, swap), fps, the real-time
    factor and the LOD stride."""
    from ropesim.app.viewer import create_viewer

    app = create_viewer(["cloth", "--window", "pyglet", "--size", size,
                         "--set", f"cloth.nx={n}", f"cloth.ny={n}", *viewer_args])
    wnd, controller = app.wnd, app.controller
    rows = []
    last = time.perf_counter()
    advance = controller.advance
    physics_cpu = [0.0]

    def timed_advance(*args, **kwargs):
        start = time.process_time()
        try:
            return advance(*args, **kwargs)
        finally:
            physics_cpu[0] += time.process_time() - start

    controller.advance = timed_advance

    def frame() -> None:
        nonlocal last
        now = time.perf_counter()
        wnd.use()
        wnd.render(now, now - last)   # as moderngl_window.run_window_config_instance does
        wnd.swap_buffers()
        last = now

    from ropesim.app import frame_clock

    # kernels compiled, the step cost measured, the clock and the MSAA governor settled
    # (a switch takes GOVERNOR_FRAMES frames in a row; the first frames' budget is still
    # being measured): the steady state a user sees after a second or two
    for _ in range(3 * getattr(frame_clock, "GOVERNOR_FRAMES", 0) + 5):
        frame()
    for mode in modes:
        controller.options.mode = mode
        for _ in range(5):
            frame()
        wall, cpu, physics, physics_cpu_ms = [], [], [], []
        for _ in range(frames):
            t, c = time.perf_counter(), time.process_time()
            physics_cpu[0] = 0.0
            frame()
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            physics_cpu_ms.append(1e3 * physics_cpu[0])
            clock = controller.frame_clock
            physics.append(clock.steps_last_frame * clock.ms_per_step)
        ms = 1e3 * statistics.median(wall)
        draw_cpu = [1e3 * c - p for c, p in zip(cpu, physics_cpu_ms)]
        rows.append({"n": n, "mode": mode, "frame_ms": ms, "cpu_ms": 1e3 * statistics.median(cpu),
                     "physics_cpu_ms": statistics.median(physics_cpu_ms),
                     "draw_cpu_ms": statistics.median(draw_cpu),
                     "physics_ms": statistics.median(physics),
                     "fps": 1e3 / ms, "real_time_factor": controller.frame_clock.real_time_factor,
                     "lod_stride": app.renderer.lod_stride,
                     "samples": getattr(app, "scene_samples", None)})
    wnd.close()
    return rows


def start_xvfb() -> subprocess.Popen | None:
    """An Xvfb for the window benchmark when there is no $DISPLAY (None: one is set)."""
    if os.environ.get("DISPLAY"):
        return None
    for number in range(150, 200):
        if os.path.exists(f"/tmp/.X11-unix/X{number}") or os.path.exists(f"/tmp/.X{number}-lock"):
            continue
        proc = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1280x800x24", "-nolisten",
                                 "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists(f"/tmp/.X11-unix/X{number}"):
                os.environ["DISPLAY"] = f":{number}"
                return proc
            time.sleep(0.05)
        proc.kill()
    raise SystemExit("could not start Xvfb for --window")


def main_window(args: argparse.Namespace, modes: list[str]) -> int:
    """--window: one fresh process per cloth size (and checkout), a table of whole
    frames; with --baseline the two checkouts alternate, --rounds times."""
    xvfb = start_xvfb()
    roots = [("this", ROOT)] + ([("baseline", os.path.abspath(args.baseline))]
                                if args.baseline else [])
    extra = [f"--viewer-args={args.viewer_args}"] if args.viewer_args else []
    try:
        print(f"# viewer window {args.size} px, panel shown, shadows, viewer arguments "
              f"{args.viewer_args or 'none'}; median of {args.draws} frames: wall ms per whole "
              "frame (CPU ms: all, physics, the rest = draw), fps, real-time factor, samples")
        print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"{'cloth':>9} {'code':>8} {'round':>5} " + " ".join(f"{m:>52}" for m in modes))
        rows = []
        for n in args.sizes:
            for round_ in range(args.rounds):
                for label, root in roots:
                    out = subprocess.run(
                        [sys.executable, os.path.abspath(__file__), "--root", root,
                         "--window-child", str(n), "--draws", str(args.draws), "--size",
                         args.size, "--modes", *modes, *extra],
                        capture_output=True, text=True, timeout=900, check=True, cwd=root)
                    found = json.loads(out.stdout.strip().splitlines()[-1])
                    for r in found:
                        r.update(code=label, round=round_)
                    rows += found
                    print(f"{f'{n}x{n}':>9} {label:>8} {round_:>5} " + " ".join(
                        f"{r['frame_ms']:>6.1f} ({r['cpu_ms']:>5.1f}: {r['physics_cpu_ms']:>5.1f} + "
                        f"{r['draw_cpu_ms']:>5.1f}) {r['fps']:>4.1f} fps "
                        f"{r['real_time_factor']:>4.2f}x {r['samples']}S"
                        for r in found), flush=True)
            if args.baseline:
                for mode in modes:
                    mine = [r["draw_cpu_ms"] for r in rows
                            if r["n"] == n and r["mode"] == mode and r["code"] == "this"]
                    base = [r["draw_cpu_ms"] for r in rows
                            if r["n"] == n and r["mode"] == mode and r["code"] == "baseline"]
                    print(f"# {n}x{n} {mode}: draw CPU ms {statistics.median(mine):.1f} against "
                          f"{statistics.median(base):.1f}, "
                          f"{1.0 - statistics.median(mine) / statistics.median(base):+.0%} less",
                          flush=True)
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(timeout=10)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"window": args.size, "rows": rows}, f, indent=1)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--samples", type=int, nargs="+", default=[0, 4])
    parser.add_argument("--modes", nargs="+", default=None, help="default: every draw mode")
    parser.add_argument("--size", default="1280x720", help="framebuffer WxH px")
    parser.add_argument("--draws", type=int, default=15)
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--window", action="store_true",
                        help="whole frames of the real viewer window (Xvfb if no $DISPLAY)")
    parser.add_argument("--baseline", metavar="DIR",
                        help="--window: also measure the checkout in DIR, alternating")
    parser.add_argument("--rounds", type=int, default=1,
                        help="--window: runs of each checkout per size")
    parser.add_argument("--viewer-args", default="", metavar="ARGS",
                        help="--window: extra `ropesim view` arguments in one string "
                             "(write --viewer-args='--samples 4')")
    parser.add_argument("--window-child", type=int, metavar="N", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.window_child:
        print(json.dumps(window_frames(args.window_child, args.modes, args.draws, args.size,
                                       shlex.split(args.viewer_args))))
        return 0

    import moderngl

    from ropesim.render.camera import OrbitCamera
    from ropesim.render.renderer import WIREFRAME_MODES, Renderer, RenderOptions

    width, height = (int(v) for v in args.size.lower().split("x"))
    modes = args.modes or list(WIREFRAME_MODES)
    if args.window:
        return main_window(args, modes)
    ctx = moderngl.create_standalone_context(require=330, backend="egl")
    renderer_name = ctx.info["GL_RENDERER"]
    print(f"# {renderer_name}, {width}x{height} px, median of {args.draws} draws: wall ms (CPU ms)")
    print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'cloth':>9} {'samples':>7} {'upload':>7} " + " ".join(f"{m:>18}" for m in modes))
    rows = []
    for n in args.sizes:
        sim = wavy_cloth(n)
        renderer = Renderer(ctx, sim)
        camera = OrbitCamera()
        camera.frame(sim.positions, aspect=width / height)
        camera.update({"azimuth": 25.0, "elevation": 15.0})
        upload = time_upload(ctx, renderer, args.draws)
        for samples in args.samples:
            row = {"n": n, "samples": samples, "upload_ms": upload}
            for mode in modes:
                row[mode], row[mode + " cpu"] = time_draws(
                    ctx, renderer, camera, width, height, RenderOptions(mode=mode), samples,
                    args.draws)
            rows.append(row)
            print(f"{f'{n}x{n}':>9} {samples:>7} {upload:>7.1f} "
                  + " ".join(f"{row[m]:>9.1f} ({row[m + ' cpu']:>5.1f})" for m in modes),
                  flush=True)
        renderer.release()
    ctx.release()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"renderer": renderer_name, "size": [width, height], "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
