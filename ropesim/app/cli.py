"""The ``ropesim`` command: the viewer, and headless ``scenes``, ``run``, ``render``, ``compare``.

``ropesim`` alone opens the viewer (or, with no display, renders the cloth scene to
``ropesim-cloth.mp4``); ``ropesim view ...`` and ``ropesim --window glfw ...`` pass
their arguments untouched to the viewer. The other subcommands need no display
and no GPU (rendering uses EGL, e.g. Mesa's llvmpipe).

Exit codes: 0 done; 2 a user error (unknown scene, bad ``--set``, unwritable path:
one line on stderr, nothing computed or written); 1 the simulation diverged or
rendering failed; 130 interrupted by Ctrl-C. After divergence or Ctrl-C what was
computed is still written, and the file says where the run stopped and why.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

import numpy as np

PROG = "ropesim"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
HEADLESS_OUTPUT = "ropesim-cloth.mp4"
HEADLESS_SCENE = "cloth"
HEADLESS_DURATION = 4.0  # s of video rendered by `ropesim` without a display
DEFAULT_RUN_DURATION = 2.0  # s simulated by `run` without --steps/--duration
DEFAULT_COMPARE_DURATION = 2.0  # s simulated per integrator by `compare`
DEFAULT_SWEEP_DURATION = 1.0  # s simulated per (integrator, dt) cell of a sweep
DEFAULT_EVERY = 10
COMPARE_SAMPLES = 400  # samples per compared run (drift and strain curves)
#: a sweep cell whose energy grew by more than this many energy scales is "unstable"
UNSTABLE_DRIFT = 1.0


class UsageError(Exception):
    """A user error: reported as one line, exit code 2, before any work."""


# --- small helpers -------------------------------------------------------------------------
def _error_line(message: str) -> str:
    return f"{PROG}: error: {' '.join(str(message).split())}"


def has_display() -> bool:
    """False on Linux (and other X11/Wayland systems) when neither DISPLAY nor
    WAYLAND_DISPLAY is set; True elsewhere (macOS, Windows always have a desktop)."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def _format_seconds(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--:--"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ProgressBar:
    """A one-line progress bar on a terminal: percentage, rate and ETA.

    Call it as ``bar(done, total)``; it redraws at most every ``interval`` s and only
    when ``enabled`` (by default: the stream is a terminal). ``close()`` ends the line.
    """

    def __init__(self, label: str, unit: str, enabled: bool | None = None,
                 stream: TextIO | None = None, width: int = 24, interval: float = 0.1):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.label, self.unit, self.width, self.interval = label, unit, width, interval
        self._start: float | None = None
        self._last_draw = -math.inf
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        """Record progress; rate and ETA are measured from the first call."""
        now = time.perf_counter()
        if self._start is None:
            self._start = now
        if not self.enabled or (now - self._last_draw < self.interval and done < total):
            return
        self._last_draw = now
        elapsed = now - self._start
        rate = done / elapsed if elapsed > 0 else math.nan
        eta = (total - done) / rate if rate and rate > 0 else math.inf
        fraction = done / total if total else 1.0
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        speed = f"{rate:,.0f}" if math.isfinite(rate) and done else "--"
        line = (f"{self.label} [{bar}] {fraction:4.0%} {done}/{total} {self.unit} "
                f"{speed} {self.unit}/s ETA {_format_seconds(eta)}")
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# --- argument parsing -----------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line (via UsageError) instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix(PROG).strip()
        raise UsageError(f"{command}: {message}" if command else message)


def _number(kind: type = float, minimum: float = 0.0, strict: bool = True) -> Callable[[str], Any]:
    """An argparse type: a finite ``kind`` (int or float) > minimum (>= if not strict)."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            noun = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not (math.isfinite(value) and (value > minimum if strict else value >= minimum)):
            bound = f"{'>' if strict else '>='} {minimum:g}"
            raise argparse.ArgumentTypeError(f"must be finite and {bound}, got {text!r}")
        return value
    return parse


def parse_size(text: str) -> tuple[int, int]:
    """``"WxH"`` -> (width, height) px."""
    parts = text.lower().split("x")
    try:
        width, height = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--size expects WIDTHxHEIGHT in pixels, got {text!r}") from None
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"--size: width and height must be >= 1 px, got {text!r}")
    return width, height


def parse_dt_sweep(text: str) -> np.ndarray:
    """``"lo:hi:count"`` -> count log-spaced time steps from lo to hi, s."""
    try:
        lo_text, hi_text, count_text = text.split(":")
        lo, hi, count = float(lo_text), float(hi_text), int(count_text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--dt-sweep expects LO:HI:COUNT such as 1e-4:1e-2:8, got {text!r}") from None
    if not (0 < lo < hi and math.isfinite(hi)) or count < 2:
        raise argparse.ArgumentTypeError(
            f"--dt-sweep needs 0 < LO < HI and COUNT >= 2, got {text!r}")
    return np.geomspace(lo, hi, count)


def parse_assignment(text: str) -> tuple[str, str]:
    """``"key=value"`` -> (key, value)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--set expects key=value, got {text!r}")
    return key.strip(), value.strip()


def _add_scene_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scene", help="a shipped scene name (see `ropesim scenes`) or a .toml file")
    parser.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="extend",
                        nargs="+", type=parse_assignment, default=[],
                        help="override a scene parameter, validated like the scene file: "
                             "--set stiffness=2000 cloth.nx=64 simulation.drag=0 ground.height=-2")
    parser.add_argument("--dt", type=_number(), help="time step, s")


def _add_integrator_option(parser: argparse.ArgumentParser) -> None:
    from ..engine.integrators import INTEGRATORS

    parser.add_argument("--integrator", help=f"one of: {', '.join(INTEGRATORS)}")


def _add_quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (it is also off when stderr is not a terminal)")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every subcommand except ``view`` (passed to the viewer)."""
    from ..render.renderer import WIREFRAME_MODES

    parser = _Parser(
        prog=PROG,
        description="Interactive 3D rope and cloth mass-spring simulator. Without a "
                    "subcommand it opens the viewer (`ropesim view --help`); viewer flags "
                    "such as `--window glfw` go to the viewer too.",
        epilog="Exit codes: 0 ok, 1 diverged or failed, 2 usage error, 130 interrupted.")
    from importlib.metadata import version

    parser.add_argument("--version", action="version", version=f"{PROG} {version('ropesim')}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    commands.add_parser("view", help="open the interactive viewer (the default)", add_help=False)

    commands.add_parser("scenes", help="list the shipped scenes")

    run = commands.add_parser(
        "run", help="simulate without a window and save the trajectory",
        description="Step a scene and save positions every K steps, times, energies "
                    "(kinetic, spring, gravity, total, J), momentum and the spring list.")
    _add_scene_options(run)
    _add_integrator_option(run)
    length = run.add_mutually_exclusive_group()
    length.add_argument("--duration", type=_number(), metavar="S",
                        help=f"simulated time, s (default {DEFAULT_RUN_DURATION:g})")
    length.add_argument("--steps", type=_number(int, 0, strict=False), metavar="N",
                        help="number of steps")
    run.add_argument("--every", type=_number(int), default=DEFAULT_EVERY, metavar="K",
                     help=f"sample every K steps (default {DEFAULT_EVERY})")
    run.add_argument("--out", "-o", metavar="PATH",
                     help="trajectory file: .npz (everything) or .csv (the energy table)")
    run.add_argument("--csv", nargs="?", const=True, default=None, metavar="PATH",
                     help="also write the energy table as CSV (default: --out with .csv)")
    run.add_argument("--plot", metavar="PATH", help="draw energy over time (.png, .svg, .pdf)")
    run.add_argument("--track", type=_number(int, 0, strict=False), metavar="I",
                     help="add particle I's coordinates over time to --plot")
    _add_quiet_option(run)

    render = commands.add_parser(
        "render", help="render a video, GIF, PNG frames or a still, offscreen",
        description="Render offscreen (EGL) with the viewer's drawing code. Each frame "
                    "advances round(1 / (fps * dt)) steps, so videos play at true speed.")
    _add_scene_options(render)
    _add_integrator_option(render)
    render.add_argument("--out", "-o", required=True, metavar="PATH",
                        help="cloth.mp4, cloth.gif, frames/ (numbered PNGs) or still.png "
                             "(the last frame)")
    length = render.add_mutually_exclusive_group()
    length.add_argument("--frames", type=_number(int), metavar="N",
                        help="number of frames")
    length.add_argument("--duration", type=_number(float, 0, strict=False),
                        metavar="S",
                        help="simulated time, s (default 4)")
    render.add_argument("--fps", type=_number(),
                        help="frames per second (default 30; 25 for GIF)")
    render.add_argument("--size", type=parse_size, metavar="WxH",
                        help="pixels (default 1024x576; 512x288 for GIF); "
                             "video sides must be multiples of 16")
    render.add_argument("--camera", metavar="AZ,EL,DIST",
                        help="azimuth, elevation (deg), distance (m)[, target x,y,z (m)]")
    render.add_argument("--wireframe", default="surface+springs", metavar="MODE",
                        help=f"one of: {', '.join(WIREFRAME_MODES)} (default surface+springs)")
    render.add_argument("--strain", action="store_true", help="colour springs by strain")
    _add_quiet_option(render)

    compare = commands.add_parser(
        "compare", help="compare integrators: energy drift, strain, speed, stability",
        description="Run one scene under several integrators with the same dt and "
                    "duration; print a table and plot energy drift and max strain. "
                    "With --dt-sweep, map where each integrator diverges.")
    _add_scene_options(compare)
    compare.add_argument("--integrators", metavar="A,B,C",
                         help="comma-separated names (default: all)")
    compare.add_argument("--duration", type=_number(), metavar="S",
                         help=f"simulated time per run, s (default {DEFAULT_COMPARE_DURATION:g}; "
                              f"{DEFAULT_SWEEP_DURATION:g} with --dt-sweep)")
    compare.add_argument("--dt-sweep", type=parse_dt_sweep, metavar="LO:HI:COUNT",
                         help="run every integrator at COUNT log-spaced dt from LO to HI s")
    compare.add_argument("--plot", metavar="PATH", help="write the plot (.png, .svg, .pdf)")
    _add_quiet_option(compare)
    return parser


# --- shared validation -------------------------------------------------------------------------
def load_scene(name: str, overrides: Sequence[tuple[str, str]] = (), dt: float | None = None,
               integrator: str | None = None) -> Any:
    """The scene with ``--set`` overrides, ``--dt`` and ``--integrator`` applied and validated."""
    from ..io.scenes import SceneError, load

    changes: dict[str, object] = dict(overrides)
    if dt is not None:
        changes["simulation.dt"] = dt
    if integrator is not None:
        changes["simulation.integrator"] = integrator
    try:
        scene = load(name)
        return scene.with_overrides(changes) if changes else scene
    except SceneError as exc:
        raise UsageError(str(exc)) from None


def _check_output(path: str, suffixes: Sequence[str] | None = None) -> Path:
    from ..io.recording import OutputError, check_output_path

    try:
        return check_output_path(path, suffixes)
    except OutputError as exc:
        raise UsageError(str(exc)) from None


def _scene_toml(scene: Any) -> str:
    import tomli_w

    return tomli_w.dumps(scene.to_dict())


# --- scenes ------------------------------------------------------------------------------------
def cmd_scenes(args: argparse.Namespace) -> int:
    """Print the shipped scenes: name, particles, springs, 2-D/3-D, description."""
    from ..io.scenes import load, scene_names

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
    from ..io.recording import PLOT_SUFFIXES, TRAJECTORY_SUFFIXES, RecordingInterrupted, record

    scene = load_scene(args.scene, args.overrides, args.dt, args.integrator)
    dt = scene.settings["dt"]
    steps = args.steps if args.steps is not None else round(
        (args.duration or DEFAULT_RUN_DURATION) / dt)
    if args.track is not None and args.plot is None:
        raise UsageError("--track draws into the energy plot: add --plot PATH")
    if args.csv is True and args.out is None:
        raise UsageError("--csv without a path needs --out (or give --csv PATH)")
    outputs: list[tuple[str, Path]] = []
    if args.out:
        outputs.append(("trajectory", _check_output(args.out, TRAJECTORY_SUFFIXES)))
    if args.csv:
        csv_path = Path(args.out).with_suffix(".csv") if args.csv is True else args.csv
        outputs.append(("csv", _check_output(str(csv_path), (".csv",))))
    if args.plot:
        outputs.append(("plot", _check_output(args.plot, PLOT_SUFFIXES)))
    sim = scene.simulation()
    if args.track is not None and args.track >= sim.n_particles:
        raise UsageError(f"--track {args.track}: particle index must be in "
                         f"0..{sim.n_particles - 1} (scene {scene.name} has "
                         f"{sim.n_particles} particles)")

    bar = ProgressBar(scene.name, "steps", enabled=False if args.quiet else None)
    started = time.perf_counter()
    status = EXIT_OK
    try:
        trajectory = record(sim, steps, every=args.every, progress=bar)
    except RecordingInterrupted as stop:
        trajectory = stop.trajectory
        status = EXIT_INTERRUPTED
    finally:
        bar.close()
    elapsed = time.perf_counter() - started
    trajectory.scene_toml = _scene_toml(scene)
    if status == EXIT_OK and trajectory.diverged:
        status = EXIT_FAILED
    written = _write_run_outputs(trajectory, outputs, args.track)

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


def _write_run_outputs(trajectory: Any, outputs: list[tuple[str, Path]],
                       track: int | None) -> list[str]:
    from ..io.recording import plot_energy

    written = []
    for kind, path in outputs:
        if kind == "plot":
            plot_energy(trajectory, path, track=track)
        else:
            trajectory.save(path)
        written.append(str(path))
    return written


# --- render --------------------------------------------------------------------------------------
def cmd_render(args: argparse.Namespace) -> int:
    """Render offscreen to a video, GIF, PNG folder or still image."""
    from ..render.camera import parse_camera_arg
    from ..io.recording import (DEFAULT_FPS, DEFAULT_GIF_FPS, DEFAULT_SIZE, OutputError,
                            check_video_path, frame_count, output_kind, render,
                            steps_per_frame)
    from ..render.renderer import WIREFRAME_MODES
    from ..engine.simulation import SimulationDiverged

    scene = load_scene(args.scene, args.overrides, args.dt, args.integrator)
    try:
        kind = output_kind(args.out)
        is_gif = kind == "gif"
        fps = args.fps or (DEFAULT_GIF_FPS if is_gif else DEFAULT_FPS)
        gif_size = (DEFAULT_SIZE[0] // 2, DEFAULT_SIZE[1] // 2)
        size = args.size or (gif_size if is_gif else DEFAULT_SIZE)
        n_frames = frame_count(args.frames, args.duration, fps)
        camera = parse_camera_arg(args.camera) if args.camera else None
        if args.wireframe not in WIREFRAME_MODES:
            raise UsageError(f"--wireframe: unknown mode {args.wireframe!r}; allowed: "
                             f"{', '.join(WIREFRAME_MODES)}")
        check_video_path(args.out, size)
    except (OutputError, ValueError) as exc:
        raise UsageError(str(exc)) from None

    bar = ProgressBar(scene.name, "frames", enabled=False if args.quiet else None)
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
        render(scene, out=args.out, frames=n_frames, fps=fps, size=size, camera=camera,
               wireframe=args.wireframe, strain_colors=args.strain, progress=progress)
    except SimulationDiverged as exc:
        bar.close()
        print(f"{PROG}: {scene.name}: diverged at step {exc.step} (t = {exc.time:.4f} s): "
              f"{exc.reason}; {kept()}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        bar.close()
        print(f"{PROG}: {scene.name}: interrupted (Ctrl-C) after {done[0]} of {n_frames} "
              f"frames; {kept()}", file=sys.stderr)
        return EXIT_INTERRUPTED
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


# --- compare -----------------------------------------------------------------------------------
@dataclass
class IntegratorRun:
    """One integrator's run in a comparison: its trajectory, the energy scale used
    for drift (J) and the wall time per step (s)."""

    integrator: str
    dt: float
    trajectory: Any
    energy_scale: float
    seconds_per_step: float

    @property
    def drift(self) -> np.ndarray:
        """(E(t) - E(0)) / energy_scale per sample, dimensionless."""
        return (self.trajectory.total - self.trajectory.total[0]) / self.energy_scale

    @property
    def final_drift(self) -> float:
        return float(self.drift[-1])

    @property
    def max_abs_drift(self) -> float:
        return float(np.abs(self.drift).max())

    @property
    def energy_ratio(self) -> float:
        """Final over initial energy, both measured from E(0) - energy_scale."""
        return 1.0 + self.final_drift

    @property
    def max_strain(self) -> float:
        return float(self.trajectory.max_strain.max())

    @property
    def status(self) -> str:
        """"diverged", "interrupted", "unstable" (energy grew by more than the scale)
        or "stable"."""
        if self.trajectory.diverged:
            return "diverged"
        if self.trajectory.interrupted:
            return "interrupted"
        return "unstable" if self.final_drift > UNSTABLE_DRIFT else "stable"

    def rank_key(self) -> tuple[int, float]:
        return (self.status != "stable", self.max_abs_drift)


def energy_scale(sim: Any) -> float:
    """A scale for energy changes, J, independent of where gravity's zero lies:
    total mass * |g| * the initial bounding-box size (the energy of falling by the
    system's own size) plus the initial kinetic and spring energy."""
    extent = float(np.ptp(sim.positions, axis=0).max()) if sim.n_particles else 0.0
    scale = (float(sim.masses.sum()) * float(np.linalg.norm(sim.gravity)) * extent
             + sim.kinetic_energy() + sim.spring_energy())
    return scale if scale > 0 and math.isfinite(scale) else 1.0


def run_integrator(scene: Any, integrator: str, dt: float, duration: float,
                   samples: int = COMPARE_SAMPLES,
                   progress: Callable[[int, int], None] | None = None) -> IntegratorRun:
    """Simulate ``scene`` for ``duration`` s with one integrator and dt (s).

    The step code is warmed up (numba) before timing. Divergence or Ctrl-C while
    stepping ends the run early: ``status`` is then "diverged" or "interrupted" and
    the trajectory holds the samples up to that point.
    """
    from ..io.recording import RecordingInterrupted, record
    from ..engine.simulation import SimulationDiverged

    with warnings.catch_warnings():
        # an explicit integrator at a dt beyond its stable step is what a comparison is for
        warnings.filterwarnings("ignore", message="dt = .* stable step", category=RuntimeWarning)
        sim = scene.simulation(integrator=integrator, dt=dt)
    scale = energy_scale(sim)
    try:
        sim.step(1)
    except SimulationDiverged:
        pass
    sim.reset()
    steps = max(1, round(duration / dt))
    started = time.perf_counter()
    try:
        trajectory = record(sim, steps, every=max(1, steps // samples), progress=progress)
    except RecordingInterrupted as stop:
        trajectory = stop.trajectory
    elapsed = time.perf_counter() - started
    return IntegratorRun(integrator, dt, trajectory, scale,
                         elapsed / max(1, trajectory.steps_done))


def _parse_integrators(text: str | None) -> list[str]:
    from ..engine.integrators import INTEGRATORS

    if text is None:
        return list(INTEGRATORS)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in INTEGRATORS]
    if unknown or not names:
        raise UsageError(f"--integrators: unknown {', '.join(map(repr, unknown)) or 'empty list'}; "
                         f"allowed: {', '.join(INTEGRATORS)}")
    return list(dict.fromkeys(names))


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare integrators on one scene (table + plot), or map stability over dt."""
    from ..io.recording import PLOT_SUFFIXES

    scene = load_scene(args.scene, args.overrides, args.dt)
    names = _parse_integrators(args.integrators)
    plot = _check_output(args.plot, PLOT_SUFFIXES) if args.plot else None
    sweep = args.dt_sweep is not None
    duration = args.duration or (DEFAULT_SWEEP_DURATION if sweep else DEFAULT_COMPARE_DURATION)
    dts = list(args.dt_sweep) if sweep else [scene.settings["dt"]]
    cells = [(name, dt) for name in names for dt in dts]
    bar = ProgressBar(scene.name, "runs", enabled=False if args.quiet else None)

    runs: list[IntegratorRun] = []
    interrupted_at: tuple[str, float] | None = None
    try:
        for index, (name, dt) in enumerate(cells):
            bar(index, len(cells))
            interrupted_at = (name, dt)  # until the run is complete
            runs.append(run_integrator(scene, name, dt, duration))
            if runs[-1].status == "interrupted":
                break
            interrupted_at = None
        bar(len(runs), len(cells))
    except KeyboardInterrupt:
        pass  # between runs: keep interrupted_at, report what finished
    finally:
        bar.close()

    if sweep:
        print(sweep_table(runs, names, dts, scene.name, duration))
        if plot and runs:
            plot_sweep(runs, names, dts, plot, scene.name, duration)
    else:
        print(compare_table(runs, scene.name, dts[0], duration))
        if plot and runs:
            plot_compare(runs, plot, scene.name, dts[0])
    if plot and runs:
        print(f"wrote {plot}")
    if interrupted_at is not None:
        print(f"{PROG}: interrupted (Ctrl-C) during {interrupted_at[0]} at dt = "
              f"{interrupted_at[1]:g} s; the table and plot show the runs so far",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def compare_table(runs: list[IntegratorRun], scene: str, dt: float, duration: float) -> str:
    """The comparison as text, best first (stable runs by smallest max |drift|)."""
    lines = [f"{scene}: dt = {dt:g} s, {duration:g} s simulated; drift = (E(t) - E(0)) / "
             f"energy scale ({runs[0].energy_scale:.4g} J)" if runs else scene]
    header = ("rank", "integrator", "energy ratio", "final drift", "max |drift|", "max strain",
              "ms/step", "diverged")
    rows = []
    for rank, run in enumerate(sorted(runs, key=IntegratorRun.rank_key), start=1):
        traj = run.trajectory
        stopped = "no" if traj.completed else (
            f"at t = {traj.times[-1]:.3g} s" if traj.diverged else "interrupted")
        rows.append((str(rank), run.integrator, f"{run.energy_ratio:.4f}",
                     f"{run.final_drift:+.2e}", f"{run.max_abs_drift:.2e}",
                     f"{run.max_strain:.3g}", f"{run.seconds_per_step * 1e3:.4f}", stopped))
    lines += _columns([header, *rows])
    lines.append("energy ratio = (E_end - E_ref) / (E(0) - E_ref) with E_ref = E(0) - energy scale "
                 "(gravity's zero is arbitrary); diverged runs count up to divergence")
    return "\n".join(lines)


def _columns(rows: list[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) if i not in (1,) else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows]


def _cell_text(run: IntegratorRun | None) -> str:
    if run is None:
        return "-"
    if run.status == "diverged":
        return f"DIVERGED@{run.trajectory.times[-1]:.3g}s"
    if run.status == "interrupted":
        return "interrupted"
    return f"{run.status} {run.final_drift:+.1e}"


def sweep_table(runs: list[IntegratorRun], names: list[str], dts: list[float], scene: str,
                duration: float) -> str:
    """Integrators x dt: stable/unstable with the final energy drift, or where it diverged."""
    by_cell = {(run.integrator, run.dt): run for run in runs}
    header = ("dt (s)", *[f"{dt:.3g}" for dt in dts])
    rows = [(name, *[_cell_text(by_cell.get((name, dt))) for dt in dts]) for name in names]
    lines = [f"{scene}: stability over dt, {duration:g} s simulated per cell; "
             "cells: status and final energy drift (E_end - E(0)) / energy scale"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(lines)


def plot_compare(runs: list[IntegratorRun], path: Path, scene: str, dt: float) -> Path:
    """Two panels over time: energy drift (symlog) and max strain; a cross where a run diverged."""
    from ..io.recording import new_figure, save_figure

    figure = new_figure(12.0, 4.4)
    drift_ax, strain_ax = figure.subplots(1, 2)
    for run in runs:
        traj = run.trajectory
        label = run.integrator + ("" if traj.completed else f" ({run.status})")
        (line,) = drift_ax.plot(traj.times, run.drift, label=label, lw=1.4)
        strain_ax.plot(traj.times, traj.max_strain, color=line.get_color(), lw=1.4, label=label)
        if traj.diverged:
            for ax, value in ((drift_ax, run.drift[-1]), (strain_ax, traj.max_strain[-1])):
                ax.plot(traj.times[-1], value, "x", color=line.get_color(), ms=10, mew=2.5)
    drift_ax.set_yscale("symlog", linthresh=1e-4)
    drift_ax.set_ylabel("energy drift (E(t) - E(0)) / energy scale")
    drift_ax.set_title(f"{scene}: energy drift, dt = {dt:g} s")
    strain_ax.set_yscale("log")
    strain_ax.set_ylabel("max |strain|")
    strain_ax.set_title("max spring strain")
    for ax in (drift_ax, strain_ax):
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
    drift_ax.legend(loc="best", fontsize="small")
    return save_figure(figure, path)


def plot_sweep(runs: list[IntegratorRun], names: list[str], dts: list[float], path: Path,
               scene: str, duration: float) -> Path:
    """The stability map: one cell per (integrator, dt), coloured by final energy drift
    (symlog), diverged cells dark with the time of divergence."""
    from matplotlib.colors import SymLogNorm

    from ..io.recording import new_figure, save_figure

    by_cell = {(run.integrator, run.dt): run for run in runs}
    drift = np.full((len(names), len(dts)), np.nan)
    for i, name in enumerate(names):
        for j, dt in enumerate(dts):
            run = by_cell.get((name, dt))
            if run is not None and run.status in ("stable", "unstable"):
                drift[i, j] = run.final_drift
    figure = new_figure(1.6 + 1.05 * len(dts), 1.3 + 0.62 * len(names))
    ax = figure.subplots()
    ax.set_facecolor("0.18")
    norm = SymLogNorm(linthresh=1e-4, vmin=-1.0, vmax=1.0)
    image = ax.imshow(np.ma.masked_invalid(drift), cmap="coolwarm", norm=norm, aspect="auto")
    for i, name in enumerate(names):
        for j, dt in enumerate(dts):
            run = by_cell.get((name, dt))
            if run is None:
                text, color = "", "white"
            elif run.status == "diverged":
                text, color = f"diverged\n{run.trajectory.times[-1]:.2g} s", "#ff8a80"
            elif run.status == "interrupted":
                text, color = "stopped", "white"
            else:
                strong = abs(run.final_drift) > 0.1  # dark cell colour: white text
                text = f"{run.status}\n{run.final_drift:+.0e}"
                color = "white" if strong else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color=color)
    ax.set_xticks(range(len(dts)), [f"{dt:.2g}" for dt in dts])
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("time step dt (s)")
    ax.set_title(f"{scene}: stability map ({duration:g} s per cell)")
    figure.colorbar(image, ax=ax, label="final energy drift / energy scale")
    return save_figure(figure, path)


# --- the viewer and the no-argument default ------------------------------------------------------
def run_viewer(argv: list[str]) -> int:
    """Hand ``argv`` untouched to the interactive viewer (imported only now)."""
    try:
        from . import viewer
    except ImportError as exc:
        print(_error_line(f"the viewer cannot start: {exc}"), file=sys.stderr)
        return EXIT_FAILED
    return int(viewer.main(argv) or 0)


def headless_default() -> int:
    """``ropesim`` with no display: render the default scene to a short video instead."""
    out = Path(HEADLESS_OUTPUT)
    print(f"{PROG}: no display (DISPLAY and WAYLAND_DISPLAY are unset), so instead of opening "
          f"the viewer: rendering the {HEADLESS_SCENE} scene offscreen to {out}")
    status = main(["render", HEADLESS_SCENE, "--out", str(out),
                   "--duration", str(HEADLESS_DURATION)])
    if status == EXIT_OK:
        print(f"{PROG}: video written to {out.resolve()}")
    return status


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "scenes": cmd_scenes, "run": cmd_run, "render": cmd_render, "compare": cmd_compare,
}
OWN_FLAGS = ("-h", "--help", "--version")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings as one line: ``ropesim: warning: ...``."""
    print(f"{PROG}: warning: {' '.join(str(message).split())}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ropesim`` command; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return _dispatch(argv)
        except BrokenPipeError:  # `ropesim ... | head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_FAILED


def _dispatch(argv: list[str]) -> int:
    if not argv:
        return run_viewer([]) if has_display() else headless_default()
    if argv[0] == "view":
        return run_viewer(argv[1:])
    if argv[0].startswith("-") and argv[0] not in OWN_FLAGS:
        return run_viewer(argv)
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            return run_viewer([])
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(_error_line(str(exc)), file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
