"""``ropesim compare``: one scene under several integrators, or a stability map over dt.

Every integrator runs the same scene with the same dt and duration; the table ranks
them by energy drift (stable runs first), the plot shows drift and max strain over
time. With ``--dt-sweep LO:HI:COUNT`` each (integrator, dt) cell is one run and the
result is a stability map.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..engine.integrators import INTEGRATORS
from ..engine.simulation import Simulation, SimulationDiverged
from ..io.plots import PLOT_SUFFIXES, new_figure, save_figure
from ..io.scenes import Scene
from ..io.trajectory import RecordingInterrupted, Trajectory, record
from ..io.interrupts import Interrupted, signal_cause
from .arguments import (EXIT_OK, PROG, UsageError, add_max_steps_argument, add_scene_command,
                        check_output, check_steps, number, scene_from_args)
from .headless import add_quiet_argument
from .progress import progress_bar

DEFAULT_COMPARE_DURATION = 2.0  # s simulated per integrator by `compare`
DEFAULT_SWEEP_DURATION = 1.0  # s simulated per (integrator, dt) cell of a sweep
COMPARE_SAMPLES = 400  # samples per compared run (drift and strain curves)
#: a sweep cell whose energy grew by more than this many energy scales is "unstable"
UNSTABLE_DRIFT = 1.0


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


def add_command(commands: Any) -> None:
    """Register ``compare`` on an argparse subparsers object (``args.handler``)."""
    compare = add_scene_command(
        commands, "compare", cmd_compare,
        help="compare integrators: energy drift, strain, speed, stability",
        description="Run one scene under several integrators with the same dt and "
                    "duration; print a table and plot energy drift and max strain. "
                    "With --dt-sweep, map where each integrator diverges.", integrator=False)
    compare.add_argument("--integrators", metavar="A,B,C",
                         help="comma-separated names (default: all)")
    compare.add_argument("--duration", type=number(), metavar="S",
                         help=f"simulated time per run, s (default {DEFAULT_COMPARE_DURATION:g}; "
                              f"{DEFAULT_SWEEP_DURATION:g} with --dt-sweep)")
    compare.add_argument("--dt-sweep", type=parse_dt_sweep, metavar="LO:HI:COUNT",
                         help="run every integrator at COUNT log-spaced dt from LO to HI s")
    compare.add_argument("--plot", metavar="PATH", help="write the plot (.png, .svg, .pdf)")
    add_max_steps_argument(compare)
    add_quiet_argument(compare)




# --- compare -----------------------------------------------------------------------------------
@dataclass
class IntegratorRun:
    """One integrator's run in a comparison: its trajectory, the energy scale used
    for drift (J), the wall time per step (s) and the signal that stopped it (0: none)."""

    integrator: str
    dt: float
    trajectory: Trajectory
    energy_scale: float
    seconds_per_step: float
    stop_signal: int = 0

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


def energy_scale(sim: Simulation) -> float:
    """A scale for energy changes, J, independent of where gravity's zero lies:
    total mass * |g| * the initial bounding-box size (the energy of falling by the
    system's own size) plus the initial kinetic and spring energy."""
    extent = float(np.ptp(sim.positions, axis=0).max()) if sim.n_particles else 0.0
    scale = (float(sim.masses.sum()) * float(np.linalg.norm(sim.gravity)) * extent
             + sim.kinetic_energy() + sim.spring_energy())
    return scale if scale > 0 and math.isfinite(scale) else 1.0


def run_integrator(scene: Scene, integrator: str, dt: float, duration: float,
                   samples: int = COMPARE_SAMPLES,
                   progress: Callable[[int, int], None] | None = None) -> IntegratorRun:
    """Simulate ``scene`` for ``duration`` s with one integrator and dt (s).

    The step code is warmed up (numba) before timing. Divergence or Ctrl-C while
    stepping ends the run early: ``status`` is then "diverged" or "interrupted" and
    the trajectory holds the samples up to that point.
    """
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
    stop_signal = 0
    try:
        trajectory = record(sim, steps, every=max(1, steps // samples), progress=progress)
    except RecordingInterrupted as stop:
        trajectory, stop_signal = stop.trajectory, stop.signal_number
    elapsed = time.perf_counter() - started
    return IntegratorRun(integrator, dt, trajectory, scale,
                         elapsed / max(1, trajectory.steps_done), stop_signal)


def _parse_integrators(text: str | None) -> list[str]:
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
    scene = scene_from_args(args)
    names = _parse_integrators(args.integrators)
    plot = check_output(args.plot, PLOT_SUFFIXES) if args.plot is not None else None
    sweep = args.dt_sweep is not None
    duration = args.duration or (DEFAULT_SWEEP_DURATION if sweep else DEFAULT_COMPARE_DURATION)
    dts = list(args.dt_sweep) if sweep else [scene.settings["dt"]]
    cells = [(name, dt) for name in names for dt in dts]
    check_steps(sum(duration / dt for _, dt in cells), args.max_steps,
                f"--duration {duration:g} s for {len(cells)} runs", "compare")
    bar = progress_bar(scene.name, "runs", args.quiet, args.progress)

    runs: list[IntegratorRun] = []
    interrupted_at: tuple[str, float] | None = None
    stop_signal = signal.SIGINT
    try:
        for index, (name, dt) in enumerate(cells):
            bar(index, len(cells))
            interrupted_at = (name, dt)  # until the run is complete
            runs.append(run_integrator(scene, name, dt, duration))
            if runs[-1].status == "interrupted":
                stop_signal = runs[-1].stop_signal
                break
            interrupted_at = None
        bar(len(runs), len(cells))
    except KeyboardInterrupt as exc:  # between runs: keep interrupted_at, report what finished
        stop_signal = exc.signal_number if isinstance(exc, Interrupted) else signal.SIGINT
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
        print(f"{PROG}: interrupted ({signal_cause(stop_signal)}) during {interrupted_at[0]} at "
              f"dt = {interrupted_at[1]:g} s; the table and plot show the runs so far",
              file=sys.stderr)
        return 128 + stop_signal
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


__all__ = ["IntegratorRun", "add_command", "cmd_compare", "compare_table", "energy_scale",
           "parse_dt_sweep", "plot_compare", "plot_sweep", "run_integrator", "sweep_table"]
