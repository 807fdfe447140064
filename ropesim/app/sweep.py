"""The ``ropesim sweep`` command and :func:`sweep`: every combination of some scene
parameters, run headless in parallel processes (or on a Dask cluster).

``ropesim sweep SCENE --vary stiffness=100:10000:8 --vary dt=1e-4:1e-2:6:log --steps N``
runs the product of the ranges, each run a fresh simulation of the scene with the
values applied as ``--set`` overrides (so a name means what it means there: a builder
parameter such as ``stiffness``, ``damping``, ``mass``, ``cloth.nx``, or a simulation
setting such as ``dt``, ``drag``). A range is ``a:b:n`` (n values, linear) or
``a:b:n:log`` (geometric); one value is ``a``. Each row holds the varied values, the
final energy (J), the largest |strain| seen (sampled every STRAIN_EVERY steps),
whether and when the run diverged (step, s) and its wall time (s). Rows are appended
to the CSV as they finish (flushed, so a killed sweep keeps them) and the file is
rewritten in parameter order at the end (or after Ctrl-C). ``--plot`` draws a heat map
of one column over two varied parameters.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import multiprocessing
import os
import signal
import sys
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..engine import parallel
from ..engine.simulation import SimulationDiverged
from ..io.plots import PLOT_SUFFIXES, new_figure
from ..io.scenes import Scene, SceneError, load
from .arguments import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, PROG, UsageError,
                        add_scene_command, check_output, number, scene_from_args)
from .progress import ProgressBar

DEFAULT_SWEEP_DURATION = 1.0  # s simulated by each run without --steps/--duration
STRAIN_EVERY = 10  # steps between max-strain samples
#: the result columns of a row, after the varied parameters
RESULT_COLUMNS = ("steps", "final_energy_J", "max_strain", "diverged", "diverged_step",
                  "diverged_time_s", "wall_time_s")
#: the columns a heat map can colour by
METRICS = ("max_strain", "final_energy_J", "wall_time_s", "diverged_time_s")
DEFAULT_METRIC = "max_strain"

Row = dict[str, Any]


# --- ranges --------------------------------------------------------------------------------------
def _number(text: str, what: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--vary {spec!r}: {what} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"--vary {spec!r}: {what} must be finite, got {text!r}")
    return value


def _is_int_literal(text: str) -> bool:
    return text.strip().lstrip("+-").isdigit()


def range_values(spec: str, where: str = "--vary") -> list[float | int]:
    """``"a"``, ``"a:b:n"`` (n values from a to b, linear) or ``"a:b:n:log"``
    (geometric, a and b > 0) -> the values; integers stay integers when a and b are
    written as integers and every value is whole (e.g. ``cloth.nx=8:32:4``)."""
    parts = spec.split(":")
    scale = "linear"
    if len(parts) == 4:
        scale = parts.pop().strip().lower()
        if scale not in ("lin", "linear", "log"):
            raise ValueError(f"{where} {spec!r}: scale must be log or linear, got {scale!r}")
    if len(parts) == 1:
        value = _number(parts[0], "the value", spec)
        return [int(value) if _is_int_literal(parts[0]) else value]
    if len(parts) != 3:
        raise ValueError(f"{where} {spec!r}: expected a, a:b:n or a:b:n:log")
    start = _number(parts[0], "the start a", spec)
    stop = _number(parts[1], "the end b", spec)
    try:
        count = int(parts[2])
    except ValueError:
        raise ValueError(f"{where} {spec!r}: the count n must be an integer >= 1, "
                         f"got {parts[2]!r}") from None
    if count < 1:
        raise ValueError(f"{where} {spec!r}: the count n must be an integer >= 1, got {count}")
    if scale == "log":
        if start <= 0 or stop <= 0:
            raise ValueError(f"{where} {spec!r}: a log range needs a > 0 and b > 0")
        values = np.geomspace(start, stop, count)
    else:
        values = np.linspace(start, stop, count)
    whole = np.all(values == np.round(values))
    if _is_int_literal(parts[0]) and _is_int_literal(parts[1]) and whole and scale != "log":
        return [int(v) for v in np.round(values)]
    return [float(f"{v:.12g}") for v in values]  # without geomspace's rounding noise


def parse_vary(text: str) -> tuple[str, list[float | int]]:
    """``"name=a:b:n[:log]"`` -> (name, values); an argparse type."""
    name, sep, spec = text.partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise argparse.ArgumentTypeError(
            f"expected NAME=a:b:n or NAME=a:b:n:log (e.g. stiffness=100:10000:8), got {text!r}")
    try:
        return name.strip(), range_values(spec.strip(), where=f"--vary {name.strip()}=")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _as_values(name: str, values: Any) -> list[Any]:
    if isinstance(values, str):
        return range_values(values, where=f"vary[{name!r}]:")
    try:
        values = list(values)
    except TypeError:
        values = [values]
    if not values:
        raise ValueError(f"vary[{name!r}]: needs at least one value")
    return values


# --- one run -------------------------------------------------------------------------------------
def run_case(scene: Scene, values: Mapping[str, Any], steps: int | None = None,
             duration: float | None = None) -> Row:
    """One run of ``scene`` (with ``values`` already applied): the sweep's row. ``steps``
    or ``duration`` (s) sets its length."""
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # dt past the stable step: expected
        sim = scene.simulation()
    n = int(steps) if steps is not None else max(1, round(float(duration) / sim.dt))
    max_strain = sim.max_strain()
    diverged_step: int | str = ""
    diverged_time: float | str = ""
    try:
        for _ in sim.step_chunks(n, STRAIN_EVERY):
            max_strain = max(max_strain, sim.max_strain())
    except SimulationDiverged as stop:  # the state is the last finite one
        diverged_step, diverged_time = stop.step, stop.time
        max_strain = max(max_strain, sim.max_strain())
    return {**values, "steps": n, "final_energy_J": sim.energy(), "max_strain": max_strain,
            "diverged": diverged_step != "", "diverged_step": diverged_step,
            "diverged_time_s": diverged_time, "wall_time_s": time.perf_counter() - started}


def _start_worker(scene: Scene, serial: bool) -> None:
    """A pool worker: leave Ctrl-C to the parent, with ``serial`` run the serial kernels
    (the processes are the parallelism; same results bit for bit), and load the compiled
    kernels once so that the first run's wall time is not the cache load."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if serial:
        parallel.set_mode("serial")
    run_case(scene, {}, steps=1)


# --- the table -----------------------------------------------------------------------------------
class SweepTable:
    """The CSV being written: one row appended (and flushed) as each run finishes; at
    :meth:`close` the file is rewritten with the finished rows in parameter order."""

    def __init__(self, path: str | Path | None, names: Sequence[str]):
        self.path = None if path is None else Path(path)
        self.columns = [*names, *RESULT_COLUMNS]
        self.rows: dict[int, Row] = {}
        self._file = None
        if self.path is not None:
            self._file = open(self.path, "w", newline="", encoding="utf-8")
            self._writer = csv.DictWriter(self._file, self.columns)
            self._writer.writeheader()
            self._file.flush()

    def add(self, index: int, row: Row) -> None:
        self.rows[index] = row
        if self._file is not None:
            self._writer.writerow(row)
            self._file.flush()
            os.fsync(self._file.fileno())

    def ordered(self) -> list[Row]:
        return [self.rows[i] for i in sorted(self.rows)]

    def close(self) -> None:
        if self._file is None:
            return
        self._file.close()
        self._file = None
        partial = self.path.with_name(self.path.name + ".partial")
        with open(partial, "w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, self.columns)
            writer.writeheader()
            writer.writerows(self.ordered())
        os.replace(partial, self.path)


def read_table(path: str | Path) -> list[dict[str, str]]:
    """The rows of a sweep CSV as strings (the header names the columns)."""
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


# --- the sweep -----------------------------------------------------------------------------------
def sweep_cases(scene: Scene, vary: Mapping[str, Any]) -> list[tuple[dict[str, Any], Scene]]:
    """Every combination of the varied values (the last name varies fastest) with its
    validated scene; a bad name or value raises ValueError naming it."""
    if not vary:
        raise ValueError("vary: name at least one parameter to vary, e.g. stiffness=100:1000:4")
    names = list(vary)
    lists = [_as_values(name, vary[name]) for name in names]
    cases = []
    for combination in itertools.product(*lists):
        values = dict(zip(names, combination))
        try:
            cases.append((values, scene.with_overrides(values)))
        except SceneError as exc:
            raise ValueError(f"vary: {exc}") from None
    return cases


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _stop_workers(executor: ProcessPoolExecutor) -> None:
    """End the pool's worker processes now (after Ctrl-C): the running runs are dropped."""
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()


def _run_pool(scene: Scene, cases: list[tuple[dict, Scene]], length: dict, workers: int,
              table: SweepTable, progress: Callable[[int, int], None]) -> None:
    workers = min(workers, len(cases))
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=_context(),
                                   initializer=_start_worker, initargs=(scene, workers > 1))
    try:
        pending: dict[Future, int] = {
            executor.submit(run_case, case, values, **length): index
            for index, (values, case) in enumerate(cases)}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                table.add(pending.pop(future), future.result())
                progress(len(table.rows), len(cases))
    except BaseException:
        _stop_workers(executor)
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown()


def _run_dask(address: Any, cases: list[tuple[dict, Scene]], length: dict, table: SweepTable,
              progress: Callable[[int, int], None]) -> None:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise ValueError("dask: the Dask path needs dask.distributed: "
                         "pip install 'ropesim[sweep]'") from None
    with Client(address) as client:
        futures = {client.submit(run_case, case, values, pure=False, **length): index
                   for index, (values, case) in enumerate(cases)}
        try:
            for future in as_completed(futures):
                table.add(futures[future], future.result())
                progress(len(table.rows), len(cases))
        except BaseException:
            client.cancel(list(futures))
            raise


def sweep(scene: Scene | str, vary: Mapping[str, Any], steps: int | None = None,
          duration: float | None = None, workers: int | None = None, dask: Any = None,
          out: str | Path | None = None,
          progress: Callable[[int, int], None] | None = None) -> list[Row]:
    """Run every combination of ``vary`` on ``scene`` (a Scene, a shipped scene name or
    a .toml path) and return the rows in parameter order.

    ``vary`` maps override names (as ``--set`` takes them) to ``"a:b:n"`` /
    ``"a:b:n:log"`` ranges or lists of values. Each run lasts ``steps`` steps or
    ``duration`` s (default DEFAULT_SWEEP_DURATION). ``workers`` processes (default:
    all cores) or, with ``dask``, a dask.distributed scheduler address or cluster.
    ``out`` writes the CSV as rows finish; ``progress(done, total)`` is called after
    each. After Ctrl-C the finished rows are written in order and KeyboardInterrupt
    propagates.
    """
    if isinstance(scene, (str, Path)):
        scene = load(scene)
    if steps is not None and duration is not None:
        raise ValueError("steps, duration: give one of them, not both")
    if steps is not None and (isinstance(steps, bool) or int(steps) != steps or steps < 1):
        raise ValueError(f"steps: must be an integer >= 1, got {steps!r}")
    if duration is None and steps is None:
        duration = DEFAULT_SWEEP_DURATION
    if duration is not None and not (math.isfinite(duration) and duration > 0):
        raise ValueError(f"duration: must be finite and > 0 s, got {duration!r}")
    workers = (os.cpu_count() or 1) if workers is None else workers
    if isinstance(workers, bool) or int(workers) != workers or workers < 1:
        raise ValueError(f"workers: must be an integer >= 1, got {workers!r}")
    cases = sweep_cases(scene, vary)
    length = {"steps": steps, "duration": duration}
    table = SweepTable(out, list(vary))
    report = progress or (lambda done, total: None)
    try:
        if dask is not None:
            _run_dask(dask, cases, length, table, report)
        else:
            _run_pool(scene, cases, length, int(workers), table, report)
    finally:
        table.close()
    return table.ordered()


# --- the heat map --------------------------------------------------------------------------------
def _label(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def plot_heatmap(rows: Sequence[Row], x_name: str, y_name: str, path: str | Path,
                 metric: str = DEFAULT_METRIC, title: str = "") -> Path:
    """A heat map of ``metric`` over two varied parameters (cells in sweep order; a
    diverged run's cell is grey with an x), saved to ``path``."""
    from matplotlib.colors import LogNorm

    if metric not in METRICS:
        raise ValueError(f"metric: unknown {metric!r}; allowed: {', '.join(METRICS)}")
    xs = list(dict.fromkeys(row[x_name] for row in rows))
    ys = list(dict.fromkeys(row[y_name] for row in rows))
    grid = np.full((len(ys), len(xs)), np.nan)
    diverged = np.zeros_like(grid, dtype=bool)
    for row in rows:
        cell = ys.index(row[y_name]), xs.index(row[x_name])
        diverged[cell] = bool(row["diverged"])
        value = row[metric]
        if value != "" and (metric == "diverged_time_s" or not row["diverged"]):
            grid[cell] = float(value)
    figure = new_figure(1.6 + 0.9 * len(xs), 1.4 + 0.6 * len(ys))
    ax = figure.subplots()
    ax.set_facecolor("0.8")
    finite = grid[np.isfinite(grid)]
    norm = None
    if finite.size and finite.min() > 0 and finite.max() > 100 * finite.min():
        norm = LogNorm(finite.min(), finite.max())
    mesh = ax.pcolormesh(np.ma.masked_invalid(grid), cmap="viridis", norm=norm)
    figure.colorbar(mesh, ax=ax, label=metric.replace("_", " "))
    rows_y, cols_x = np.nonzero(diverged)
    ax.scatter(cols_x + 0.5, rows_y + 0.5, marker="x", color="crimson", s=60)
    ax.set_xticks(np.arange(len(xs)) + 0.5, [_label(v) for v in xs], rotation=30, ha="right")
    ax.set_yticks(np.arange(len(ys)) + 0.5, [_label(v) for v in ys])
    ax.set_xlabel(x_name)
    ax.set_ylabel(y_name)
    ax.set_title(f"{title} (x: diverged)" if title else "x: diverged", fontsize=10)
    figure.savefig(path)
    return Path(path)


# --- the command ---------------------------------------------------------------------------------
def add_sweep_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``sweep`` subcommand to an argparse subparsers object; it sets
    ``args.handler`` to :func:`cmd_sweep`."""
    parser = add_scene_command(
        subparsers, "sweep", cmd_sweep,
        help="run every combination of some parameters in parallel and tabulate them",
        description="Run the scene once per combination of the --vary ranges (names as "
                    "--set takes them: stiffness, damping, mass, dt, drag, cloth.nx, ...), "
                    "in parallel processes or on a Dask cluster, and write a CSV of final "
                    "energy, max strain, divergence (step, time) and wall time per run.")
    parser.add_argument("--vary", action="append", type=parse_vary, required=True,
                        metavar="NAME=a:b:n[:log]",
                        help="a parameter and its range: n values from a to b, linear or "
                             "log (repeat for more parameters; all combinations run)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--steps", type=number(int), metavar="N", help="steps per run")
    length.add_argument("--duration", type=number(), metavar="S",
                        help=f"simulated time per run, s (default {DEFAULT_SWEEP_DURATION:g})")
    parser.add_argument("--workers", type=number(int), metavar="N",
                        help="parallel processes (default: all cores)")
    parser.add_argument("--dask", metavar="ADDRESS",
                        help="run on this Dask scheduler (e.g. tcp://host:8786) instead")
    parser.add_argument("--out", "-o", metavar="PATH",
                        help="the CSV table (rows appended as runs finish); default: stdout")
    parser.add_argument("--plot", metavar="PATH",
                        help="heat map over the two varied parameters (.png, .svg, .pdf)")
    parser.add_argument("--metric", default=DEFAULT_METRIC, metavar="COLUMN",
                        help=f"what the heat map colours: one of {', '.join(METRICS)} "
                             f"(default {DEFAULT_METRIC})")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (it is also off when stderr is not a terminal)")
    return parser


def _print_table(rows: Iterable[Row], names: Sequence[str]) -> None:
    writer = csv.DictWriter(sys.stdout, [*names, *RESULT_COLUMNS], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run the sweep, write the table and heat map; returns the exit code."""
    scene = scene_from_args(args)
    vary = dict(args.vary)
    if len(vary) != len(args.vary):
        repeated = [name for name in vary if [n for n, _ in args.vary].count(name) > 1]
        raise UsageError(f"--vary: {', '.join(repeated)} given more than once")
    out = check_output(args.out, (".csv",)) if args.out else None
    plot = check_output(args.plot, PLOT_SUFFIXES) if args.plot else None
    if plot is not None and len(vary) != 2:
        raise UsageError(f"--plot draws a heat map over two varied parameters; "
                         f"got {len(vary)} ({', '.join(vary)})")
    if args.metric not in METRICS:
        raise UsageError(f"--metric: unknown {args.metric!r}; allowed: {', '.join(METRICS)}")
    try:
        cases = len(sweep_cases(scene, vary))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    where = f"on the Dask cluster {args.dask}" if args.dask else (
        f"in {args.workers or os.cpu_count() or 1} processes")
    bar = ProgressBar(f"{scene.name} sweep", "runs", enabled=False if args.quiet else None)
    started = time.perf_counter()
    try:
        rows = sweep(scene, vary, steps=args.steps, duration=args.duration,
                     workers=args.workers, dask=args.dask, out=out, progress=bar)
    except KeyboardInterrupt:
        bar.close()
        kept = f"the finished rows are in {out}" if out else "nothing saved (add --out PATH)"
        print(f"{PROG}: sweep interrupted (Ctrl-C); {kept}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ValueError as exc:
        bar.close()
        raise UsageError(str(exc)) from None
    except OSError as exc:  # the Dask scheduler cannot be reached (or a CSV write failed)
        bar.close()
        print(f"{PROG}: sweep failed: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_FAILED
    bar.close()
    if out is None:
        _print_table(rows, list(vary))
    if plot is not None:
        x_name, y_name = list(vary)
        plot_heatmap(rows, x_name, y_name, plot, args.metric,
                     title=f"{scene.name}: {args.metric.replace('_', ' ')}")
    diverged = sum(1 for row in rows if row["diverged"])
    written = [str(p) for p in (out, plot) if p is not None]
    print(f"{scene.name}: {cases} runs {where} in {time.perf_counter() - started:.1f} s, "
          f"{diverged} diverged" + (f"; wrote {', '.join(written)}" if written else ""),
          file=sys.stderr if out is None else sys.stdout)
    return EXIT_OK


__all__ = ["sweep", "run_case", "sweep_cases", "range_values", "parse_vary", "read_table",
           "plot_heatmap", "SweepTable", "add_sweep_parser", "cmd_sweep", "METRICS",
           "RESULT_COLUMNS", "DEFAULT_SWEEP_DURATION"]
