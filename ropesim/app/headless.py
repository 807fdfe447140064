"""The headless commands: ``ropesim scenes``, ``ropesim run`` and ``ropesim render``.

None needs a display or a GPU (``render`` draws through EGL, e.g. Mesa's llvmpipe).
Each command checks every argument and output path before any work; after a
divergence, Ctrl-C, SIGTERM or SIGHUP what was computed is still written (whole, with
the umask's permissions, no temporary left), and the file says where the run stopped
and why. Stop signals that arrive while the outputs are written are noted and wait.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import tomli_w

from ..engine.simulation import SimulationDiverged
from ..io.budget_table import BudgetColumns
from ..io.interrupts import interrupt_cause, interrupt_exit_code, signals_held
from ..io.outputs import OutputError
from ..io.plots import PLOT_SUFFIXES, plot_energy
from ..io.scenes import Scene, load, scene_names
from ..io.trajectory import TRAJECTORY_SUFFIXES, RecordingInterrupted, Trajectory, record
from ..io.video import (DEFAULT_FPS, DEFAULT_GIF_FPS, DEFAULT_SIZE, check_video_path,
                        output_kind, steps_per_frame)
from ..render.camera import parse_camera_arg
from ..render.headless import DEFAULT_RENDER_DURATION, frame_count, make_camera, render
from ..render.renderer import WIREFRAME_MODES
from .arguments import (EXIT_FAILED, EXIT_OK, PROG, UsageError, add_max_steps_argument,
                        add_scene_command, check_output, check_steps, number, scene_from_args,
                        simulation_from_scene)
from .progress import progress_bar

DEFAULT_RUN_DURATION = 2.0  # s simulated by `run` without --steps/--duration
DEFAULT_EVERY = 10
#: the largest --size side, px (an offscreen target of 8192 x 8192 with 4x multisampling
#: already needs about 1 GiB; larger ones exceed common GL limits)
MAX_RENDER_SIDE = 8192


def parse_size(text: str) -> tuple[int, int]:
    """``"WxH"`` -> (width, height) px, each side in 1..MAX_RENDER_SIDE."""
    parts = text.lower().split("x")
    try:
        width, height = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected WIDTHxHEIGHT in pixels, got {text!r}") from None
    if not (1 <= width <= MAX_RENDER_SIDE and 1 <= height <= MAX_RENDER_SIDE):
        raise argparse.ArgumentTypeError(
            f"width and height must be 1..{MAX_RENDER_SIDE} px, got {text!r}")
    return width, height


def parse_camera(text: str) -> dict[str, Any]:
    """``--camera AZ,EL,DIST[,X,Y,Z]``: finite angles (deg) and target (m), distance > 0 m."""
    try:
        camera = parse_camera_arg(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected AZ,EL,DIST or AZ,EL,DIST,X,Y,Z (finite numbers), got {text!r}") from None
    values = [camera["azimuth"], camera["elevation"], camera["distance"],
              *camera.get("target", ())]
    if not all(math.isfinite(v) for v in values) or camera["distance"] <= 0:
        raise argparse.ArgumentTypeError(
            f"every value must be finite and the distance > 0 m, got {text!r}")
    return camera


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    """``-q/--quiet`` (no progress bar) and ``--progress`` (a progress line every few
    seconds even when stderr is not a terminal, e.g. in a batch job's log)."""
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("-q", "--quiet", action="store_true",
                       help="no progress bar (it is also off when stderr is not a terminal)")
    shown.add_argument("--progress", action="store_true",
                       help="show progress even when stderr is not a terminal (one line "
                            "every few seconds)")


def add_commands(commands: Any) -> None:
    """Register ``scenes``, ``run`` and ``render`` on an argparse subparsers object;
    each sets ``args.handler`` to its command function."""
    scenes = commands.add_parser("scenes", help="list the shipped scenes")
    scenes.set_defaults(handler=cmd_scenes)

    run = add_scene_command(
        commands, "run", cmd_run, help="simulate without a window and save the trajectory",
        description="Step a scene and save positions every K steps, times, energies "
                    "(kinetic, spring, gravity, total, J), momentum and the spring list.")
    length = run.add_mutually_exclusive_group()
    length.add_argument("--duration", type=number(), metavar="S",
                        help=f"simulated time, s (default {DEFAULT_RUN_DURATION:g})")
    length.add_argument("--steps", type=number(int, 0, strict=False), metavar="N",
                        help="number of steps")
    run.add_argument("--every", type=number(int), default=DEFAULT_EVERY, metavar="K",
                     help=f"sample every K steps (default {DEFAULT_EVERY})")
    run.add_argument("--out", "-o", metavar="PATH",
                     help="trajectory file: .npz (everything) or .csv (the energy table)")
    run.add_argument("--csv", nargs="?", const=True, default=None, metavar="PATH",
                     help="also write the energy table as CSV (default: --out with .csv)")
    run.add_argument("--plot", metavar="PATH", help="draw energy over time (.png, .svg, .pdf)")
    run.add_argument("--track", type=number(int, 0, strict=False), metavar="I",
                     help="add particle I's coordinates over time to --plot")
    add_max_steps_argument(run)
    add_quiet_argument(run)

    render_parser = add_scene_command(
        commands, "render", cmd_render,
        help="render a video, GIF, PNG frames or a still, offscreen",
        description="Render offscreen (EGL) with the viewer's drawing code. Each frame "
                    "advances round(1 / (fps * dt)) steps, so videos play at true speed.")
    render_parser.add_argument("--out", "-o", required=True, metavar="PATH",
                               help="cloth.mp4, cloth.gif, frames/ (numbered PNGs) or "
                                    "still.png (the last frame)")
    length = render_parser.add_mutually_exclusive_group()
    length.add_argument("--frames", type=number(int), metavar="N", help="number of frames")
    length.add_argument("--duration", type=number(float, 0, strict=False), metavar="S",
                        help="simulated time, s (default 4)")
    render_parser.add_argument("--fps", type=number(),
                               help="frames per second (default 30; 25 for GIF)")
    render_parser.add_argument("--size", type=parse_size, metavar="WxH",
                               help="pixels (default 1024x576; 512x288 for GIF); "
                                    "video sides must be multiples of 16; at most "
                                    f"{MAX_RENDER_SIDE} each")
    render_parser.add_argument("--camera", type=parse_camera, metavar="AZ,EL,DIST",
                               help="azimuth, elevation (deg), distance (m)"
                                    "[, target x,y,z (m)]")
    render_parser.add_argument("--wireframe", default="surface", metavar="MODE",
                               help=f"one of: {', '.join(WIREFRAME_MODES)} "
                                    "(default surface)")
    render_parser.add_argument("--strain", action="store_true",
                               help="colour springs by strain")
    add_max_steps_argument(render_parser)
    add_quiet_argument(render_parser)


def _scene_toml(scene: Scene) -> str:
    return tomli_w.dumps(scene.to_dict())


# --- scenes ------------------------------------------------------------------------------------
def cmd_scenes(args: argparse.Namespace) -> int:
    """Print the shipped scenes: name, particles, springs, 2-D/3-D, description."""
    rows = []
    for name in scene_names():
        scene = load(name)
        system = scene.build()
        rows.append((name, str(system.n_particles), str(system.n_springs),
                     "2-D" if system.planar else "3-D", scene.description))
    header = ("scene", "particles", "springs", "dim", "description")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        print(f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  "
              f"{row[3]:<{widths[3]}}  {row[4]}")
    return EXIT_OK


# --- run ---------------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    """Simulate headless, then write the trajectory, CSV and plot (also after a stop)."""
    scene = scene_from_args(args)
    dt = scene.settings["dt"]
    if args.steps is not None:
        steps = check_steps(args.steps, args.max_steps, f"--steps {args.steps:g}", "run")
    else:
        duration = args.duration or DEFAULT_RUN_DURATION
        steps = check_steps(duration / dt, args.max_steps,
                            f"--duration {duration:g} s at dt = {dt:g} s", "run")
    if args.track is not None and args.plot is None:
        raise UsageError("--track draws into the energy plot: add --plot PATH")
    if args.csv is True and args.out is None:
        raise UsageError("--csv without a path needs --out (or give --csv PATH)")
    outputs: list[tuple[str, Path]] = []
    if args.out is not None:
        outputs.append(("trajectory", check_output(args.out, TRAJECTORY_SUFFIXES)))
    if args.csv is not None:
        csv_path = Path(args.out).with_suffix(".csv") if args.csv is True else args.csv
        outputs.append(("csv", check_output(str(csv_path), (".csv",))))
    if args.plot is not None:
        outputs.append(("plot", check_output(args.plot, PLOT_SUFFIXES)))
    sim = simulation_from_scene(scene)
    if args.track is not None and args.track >= sim.n_particles:
        raise UsageError(f"--track {args.track}: particle index must be in "
                         f"0..{sim.n_particles - 1} (scene {scene.name} has "
                         f"{sim.n_particles} particles)")

    bar = progress_bar(scene.name, "steps", args.quiet, args.progress)
    # a CSV energy table gets the energy budget's columns (io/budget_table.py)
    budget = (BudgetColumns(sim) if any(path.suffix.lower() == ".csv"
                                        for kind, path in outputs if kind != "plot") else None)
    started = time.perf_counter()
    status = EXIT_OK
    try:
        trajectory = record(sim, steps, every=args.every,
                            progress=bar if budget is None else budget.progress(bar))
    except RecordingInterrupted as stop:
        trajectory = stop.trajectory
        status = stop.exit_code
    finally:
        bar.close()
    elapsed = time.perf_counter() - started
    trajectory.scene_toml = _scene_toml(scene)
    if status == EXIT_OK and trajectory.diverged:
        status = EXIT_FAILED
    if budget is not None:
        budget.finish(len(trajectory), not trajectory.interrupted)
    written = _write_run_outputs(trajectory, outputs, args.track, budget)

    where = f"; wrote {', '.join(written)}" if written else " (nothing saved: add --out PATH)"
    if status == EXIT_OK:
        rate = trajectory.steps_done / elapsed if elapsed > 0 else math.inf
        drift = trajectory.total[-1] - trajectory.total[0]
        print(f"{scene.name}: {trajectory.steps_done} steps of {dt:g} s with {sim.integrator} "
              f"in {elapsed:.2f} s ({rate:,.0f} steps/s); energy change {drift:+.4g} J, "
              f"max strain {trajectory.max_strain.max():.3g}; {len(trajectory)} samples{where}")
    else:
        print(f"{PROG}: {scene.name}: {trajectory.stop_reason}; kept {len(trajectory)} samples "
              f"up to t = {trajectory.times[-1]:.4f} s{where}", file=sys.stderr)
    return status


def _write_run_outputs(trajectory: Trajectory, outputs: list[tuple[str, Path]],
                       track: int | None, budget: BudgetColumns | None = None) -> list[str]:
    """Write every output; stop signals wait until all are written (then act)."""
    written = []
    with signals_held():
        for kind, path in outputs:
            if kind == "plot":
                plot_energy(trajectory, path, track=track)
            else:
                trajectory.save(path)
                if budget is not None and path.suffix.lower() == ".csv":
                    budget.add_to_csv(path)
            written.append(str(path))
    return written


# --- render --------------------------------------------------------------------------------------
def _render_steps(args: argparse.Namespace, dt: float, fps: float) -> None:
    """Refuse (UsageError) a render whose frames x steps per frame exceed --max-steps."""
    if args.frames is not None:
        frames, source = float(args.frames), f"--frames {args.frames}"
    else:
        duration = DEFAULT_RENDER_DURATION if args.duration is None else args.duration
        frames, source = max(1.0, duration * fps), f"--duration {duration:g} s"
    per_frame = max(1.0, 1.0 / (fps * dt)) if fps * dt > 0 else math.inf
    check_steps(frames * per_frame, args.max_steps,
                f"{source} at {fps:g} fps and dt = {dt:g} s", "render")


def cmd_render(args: argparse.Namespace) -> int:
    """Render offscreen to a video, GIF, PNG folder or still image."""
    scene = scene_from_args(args)
    try:
        kind = output_kind(args.out)
        is_gif = kind == "gif"
        fps = args.fps or (DEFAULT_GIF_FPS if is_gif else DEFAULT_FPS)
        gif_size = (DEFAULT_SIZE[0] // 2, DEFAULT_SIZE[1] // 2)
        size = args.size or (gif_size if is_gif else DEFAULT_SIZE)
        _render_steps(args, scene.settings["dt"], fps)
        n_frames = frame_count(args.frames, args.duration, fps)
        if args.wireframe not in WIREFRAME_MODES:
            raise UsageError(f"--wireframe: unknown mode {args.wireframe!r}; allowed: "
                             f"{', '.join(WIREFRAME_MODES)}")
        check_video_path(args.out, size)
    except (OutputError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    sim = simulation_from_scene(scene)
    view = make_camera(sim, size[0] / size[1], scene.camera, args.camera)

    bar = progress_bar(scene.name, "frames", args.quiet, args.progress)
    done = [0]

    def progress(frames_done: int, total: int) -> None:
        done[0] = frames_done
        bar(frames_done, total)

    def kept() -> str:
        if kind == "png" or done[0] == 0:
            return "nothing written"
        return f"wrote the {done[0]} frames before it to {args.out}"

    started = time.perf_counter()
    try:
        render(sim, out=args.out, frames=n_frames, fps=fps, size=size, camera=view,
               wireframe=args.wireframe, strain_colors=args.strain, progress=progress)
    except SimulationDiverged as exc:
        bar.close()
        print(f"{PROG}: {scene.name}: diverged at step {exc.step} (t = {exc.time:.4f} s): "
              f"{exc.reason}; {kept()}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt as exc:
        bar.close()
        print(f"{PROG}: {scene.name}: interrupted ({interrupt_cause(exc)}) after {done[0]} of "
              f"{n_frames} frames; {kept()}", file=sys.stderr)
        return interrupt_exit_code(exc)
    except RuntimeError as exc:  # no EGL driver, shader build failure
        bar.close()
        print(f"{PROG}: render failed: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_FAILED
    bar.close()
    elapsed = time.perf_counter() - started
    shown = "1 still (the last frame)" if kind == "png" else f"{n_frames} frames"
    simulated = (n_frames - 1) * steps_per_frame(scene.settings["dt"], fps) * scene.settings["dt"]
    print(f"{scene.name}: {shown} of {size[0]}x{size[1]} px at {fps:g} fps "
          f"({simulated:.2f} s simulated) in {elapsed:.1f} s; wrote {args.out}")
    return EXIT_OK


__all__ = ["MAX_RENDER_SIDE", "add_commands", "cmd_scenes", "cmd_run", "cmd_render", "parse_camera",
           "parse_size"]
