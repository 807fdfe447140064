"""The ``ropesim wave`` command: pluck one particle of a scene and time the wave front.

``ropesim wave SCENE --source I --probes J,K --impulse P --duration T --plot waves.png``
prints, for each probe, the arrival of the first front, the distance (springs on the
shortest path, path and straight distance in m), the measured speed, the long-wavelength
theory and their ratio (see :mod:`ropesim.engine.waves` for the rule and the formulas),
then the theory's numbers and what the integrator's dispersion and damping do at this
dt. ``--integrators A,B`` repeats the run with each integrator on the same scene and
compares speed and peak at the farthest probe. Bad sources, probes, impulses or paths:
one line on stderr and exit code 2, before anything runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from .arguments import add_max_steps_argument, check_steps


EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_WAVE_DURATION = 0.5  # s simulated by `wave` without --duration
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def parse_indices(text: str) -> list[int]:
    """``"J,K,..."`` -> particle indices."""
    try:
        indices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated particle indices such as 30,60, got {text!r}") from None
    if not indices:
        raise argparse.ArgumentTypeError(f"expected at least one particle index, got {text!r}")
    return indices


def parse_impulse(text: str) -> list[float]:
    """``"P"`` (N*s along +y) or ``"PX,PY[,PZ]"`` -> an impulse vector, N*s."""
    try:
        parts = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected P (N*s along +y) or PX,PY[,PZ], got {text!r}") from None
    if len(parts) == 1:
        return [0.0, parts[0], 0.0]
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"expected 1, 2 or 3 numbers, got {text!r}")
    return parts


def _seconds(allow_zero: bool):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds, got {text!r}") from None
        if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
            bound = ">= 0" if allow_zero else "> 0"
            raise argparse.ArgumentTypeError(f"must be finite and {bound} s, got {text!r}")
        return value
    return parse


def add_wave_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``wave`` subcommand with its options to an argparse subparsers object;
    it sets ``args.handler`` to :func:`cmd_wave`."""
    wave = subparsers.add_parser(
        "wave", help="pluck a particle and measure the wave front against theory",
        description="Pluck --source with --impulse, record, and print each probe's "
                    "first-front arrival, distance, measured speed and the long-wavelength "
                    "theory (c = a*sqrt(k/m) along a chain, sqrt(T/mu) across a taut string, "
                    "the grid's P and S speeds).")
    wave.add_argument("scene", help="a shipped scene name (see `ropesim scenes`) or a .toml file")
    wave.add_argument("--source", type=int, required=True, metavar="I",
                      help="the particle plucked")
    wave.add_argument("--probes", type=parse_indices, required=True, metavar="J,K,...",
                      help="particles whose arrival times are measured")
    wave.add_argument("--impulse", type=parse_impulse, required=True, metavar="P|PX,PY[,PZ]",
                      help="N*s: one number is along +y (across a string along x)")
    wave.add_argument("--duration", type=_seconds(False), default=DEFAULT_WAVE_DURATION,
                      metavar="S", help=f"simulated time, s (default {DEFAULT_WAVE_DURATION:g})")
    wave.add_argument("--pulse", type=_seconds(True), default=0.0, metavar="S",
                      help="deliver the impulse as a smooth Hann force pulse this long, s "
                           "(default 0: at once); a pulse spanning many springs is a "
                           "long-wavelength wave")
    wave.add_argument("--threshold", type=float, default=None, metavar="F",
                      help="arrival at this fraction of the first peak (default 0.5)")
    wave.add_argument("--dt", type=_seconds(False), metavar="S", help="time step, s")
    integrators = wave.add_mutually_exclusive_group()
    integrators.add_argument("--integrator", help="the scene's integrator by default")
    integrators.add_argument("--integrators", metavar="A,B",
                             help="run once per integrator and compare, e.g. "
                                  "symplectic_euler,backward_euler")
    wave.add_argument("--plot", metavar="PATH",
                      help="kymograph / arrival map and probe traces (.png, .svg, .pdf); with "
                           "--integrators one file per integrator, PATH-NAME.png")
    add_max_steps_argument(wave)
    wave.set_defaults(handler=cmd_wave)
    return wave


def _plot_paths(plot: str | None, names: list[str]) -> list[Path | None]:
    if plot is None:
        return [None] * len(names)
    path = Path(plot)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise ValueError(f"--plot: {plot}: allowed suffixes {', '.join(PLOT_SUFFIXES)}")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"--plot: {plot}: no such folder {folder}")
    if len(names) == 1:
        return [path]
    return [path.with_name(f"{path.stem}-{name}{path.suffix}") for name in names]


def _integrator_names(args: argparse.Namespace, scene: Any) -> list[str]:
    from ..engine.integrators import INTEGRATORS

    if args.integrators:
        names = [name.strip() for name in args.integrators.split(",") if name.strip()]
    else:
        names = [args.integrator or scene.settings["integrator"]]
    unknown = [name for name in names if name not in INTEGRATORS]
    if unknown or not names:
        raise ValueError(f"integrator: unknown {', '.join(map(repr, unknown)) or 'empty list'}; "
                         f"allowed: {', '.join(INTEGRATORS)}")
    return names


def _header(scene_name: str, result: Any) -> str:
    impulse = ", ".join(f"{value:g}" for value in result.impulse)
    pulse = (f"as a {result.pulse_duration:g} s Hann pulse" if result.pulse_duration > 0
             else "at once")
    return (f"{scene_name}: plucked particle {result.source} with ({impulse}) N*s {pulse}; "
            f"{result.duration:g} s with {result.integrator} at dt = {result.dt:g} s; "
            f"departure {result.departure:.5f} s")


def _comparison(results: list[Any]) -> str:
    """Speed and peak at the farthest probe of each run against the first run."""
    reference = max(results[0].probes, key=lambda p: p.distance)
    lines = [f"at the farthest probe ({reference.particle}, {reference.distance:.4g} m), "
             f"against {results[0].integrator}:"]
    for result in results[1:]:
        probe = next(p for p in result.probes if p.particle == reference.particle)
        speed = probe.speed / reference.speed if reference.speed else math.nan
        peak = probe.peak_speed / reference.peak_speed if reference.peak_speed else math.nan
        lines.append(f"  {result.integrator}: speed x{speed:.4f}, peak |v| x{peak:.3f}")
    return "\n".join(lines)


def cmd_wave(args: argparse.Namespace) -> int:
    """Run the wave lab on a scene and print (and plot) the result; returns the exit code."""
    from ..engine.simulation import SimulationDiverged
    from ..engine.waves import THRESHOLD, wave_experiment
    from ..io.scenes import load
    from ..io.wave_plots import plot_waves

    try:
        scene = load(args.scene)
        if args.dt is not None:
            scene = scene.with_overrides({"simulation.dt": args.dt})
        names = _integrator_names(args, scene)
        plots = _plot_paths(args.plot, names)
        dt = scene.settings["dt"]
        check_steps(len(names) * args.duration / dt, args.max_steps,
                    f"--duration {args.duration:g} s at dt = {dt:g} s for {len(names)} runs",
                    "wave")
        results = []
        for name, plot in zip(names, plots):
            result = wave_experiment(
                scene, args.source, args.probes, args.impulse, args.duration,
                pulse_duration=args.pulse, integrator=name,
                threshold=THRESHOLD if args.threshold is None else args.threshold,
            )
            results.append(result)
            print(_header(scene.name, result))
            print(result.table())
            print("theory: " + result.model)
            print("integrator: " + result.integrator_note)
            if plot is not None:
                plot_waves(result, plot, title=f"{scene.name}: {result.integrator}, "
                                                     f"dt = {result.dt:g} s")
                print(f"wrote {plot}")
            print()
    except SimulationDiverged as error:
        print(f"ropesim: wave: {error}", file=sys.stderr)
        return EXIT_FAILED
    except ValueError as error:
        print(f"ropesim: error: wave: {' '.join(str(error).split())}", file=sys.stderr)
        return EXIT_USAGE
    if len(results) > 1:
        print(_comparison(results))
    return EXIT_OK
