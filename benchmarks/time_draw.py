#!/usr/bin/env python
"""Time the renderer's draw of N x N cloths offscreen (EGL), in every draw mode.

    python benchmarks/time_draw.py                       # 64, 128, 256; 1280x720; MSAA 0 and 4
    python benchmarks/time_draw.py --sizes 128 --samples 4 --draws 30
    python benchmarks/time_draw.py --json out.json       # also write the numbers

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
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--samples", type=int, nargs="+", default=[0, 4])
    parser.add_argument("--modes", nargs="+", default=None, help="default: every draw mode")
    parser.add_argument("--size", default="1280x720", help="framebuffer WxH px")
    parser.add_argument("--draws", type=int, default=15)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)

    import moderngl

    from ropesim.render.camera import OrbitCamera
    from ropesim.render.renderer import WIREFRAME_MODES, Renderer, RenderOptions

    width, height = (int(v) for v in args.size.lower().split("x"))
    modes = args.modes or list(WIREFRAME_MODES)
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
