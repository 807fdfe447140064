"""Trajectories: record a run, save it (.npz, .csv), load it back.

Recording::

    traj = record(sim, steps=2000, every=10)   # initial state + every 10th step
    traj.times, traj.positions, traj.energy     # (k,) s, (k, n, 3) m, (k,) J
    traj.save("traj.npz"); traj.save("energy.csv")
    traj = load_trajectory("traj.npz")

A run that stops early still gives what was computed: on divergence ``record``
returns the partial trajectory (``completed`` False, ``stop_reason`` says where and
why); on Ctrl-C (or SIGTERM / SIGHUP under ``ropesim``, see :mod:`ropesim.io.interrupts`)
it raises :class:`RecordingInterrupted` (a KeyboardInterrupt, so scripts still stop)
carrying the partial trajectory in ``.trajectory``, its ``stop_reason`` naming the signal.
"""

from __future__ import annotations

import csv
import io
import signal
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.simulation import Simulation, SimulationDiverged
from .interrupts import Interrupted, interrupt_cause
from .outputs import OutputError, Progress, check_count, write_atomically

FORMAT_VERSION = 1
TRAJECTORY_SUFFIXES = (".npz", ".csv")
#: columns of the energy table (CSV), in order
ENERGY_COLUMNS = ("step", "time", "kinetic", "spring", "gravity", "total",
                  "momentum_x", "momentum_y", "momentum_z", "max_strain")


@dataclass(eq=False)
class Trajectory:
    """Samples of a run: the initial state and every ``every``-th step after it.

    Arrays (k samples, n particles, m springs): ``steps`` (k,) step index,
    ``times`` (k,) s, ``positions`` (k, n, 3) float32 m, ``kinetic``, ``spring``,
    ``gravity``, ``total`` (k,) J (gravity potential is zero at the origin),
    ``momentum`` (k, 3) kg*m/s, ``max_strain`` (k,) largest |(l - L) / L|,
    ``springs`` (m, 2) particle index pairs.

    Metadata: ``scene`` name, ``integrator``, ``dt`` (s), ``every``, ``steps_done``
    and ``steps_requested``, ``completed`` (False after divergence or Ctrl-C) and
    ``stop_reason``: a sentence starting with "completed", "diverged" or
    "interrupted" that says at which step and time the run stopped and why.
    ``scene_toml`` holds the scene file (overrides applied) when the CLI wrote it.
    """

    steps: np.ndarray
    times: np.ndarray
    positions: np.ndarray
    kinetic: np.ndarray
    spring: np.ndarray
    gravity: np.ndarray
    total: np.ndarray
    momentum: np.ndarray
    max_strain: np.ndarray
    springs: np.ndarray
    scene: str = ""
    integrator: str = ""
    dt: float = 0.0
    every: int = 1
    steps_done: int = 0
    steps_requested: int = 0
    completed: bool = True
    stop_reason: str = "completed"
    scene_toml: str = ""
    format_version: int = field(default=FORMAT_VERSION)

    @property
    def energy(self) -> np.ndarray:
        """Total mechanical energy (k,), J: kinetic + spring + gravity."""
        return self.total

    def energy_table(self) -> dict[str, np.ndarray]:
        """The per-sample columns of :data:`ENERGY_COLUMNS` as (k,) arrays."""
        table = {"step": self.steps, "time": self.times, "kinetic": self.kinetic,
                 "spring": self.spring, "gravity": self.gravity, "total": self.total}
        for axis, name in enumerate(("momentum_x", "momentum_y", "momentum_z")):
            table[name] = self.momentum[:, axis]
        table["max_strain"] = self.max_strain
        return table

    @property
    def diverged(self) -> bool:
        return self.stop_reason.startswith("diverged")

    @property
    def interrupted(self) -> bool:
        return self.stop_reason.startswith("interrupted")

    @property
    def n_particles(self) -> int:
        return self.positions.shape[1]

    def __len__(self) -> int:
        return self.times.shape[0]

    def save(self, path: str | Path) -> Path:
        """Write ``.npz`` (everything) or ``.csv`` (the energy table, metadata in
        ``#`` comment lines). The file is written whole, then moved into place."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in TRAJECTORY_SUFFIXES:
            allowed = " or ".join(TRAJECTORY_SUFFIXES)
            raise OutputError(f"{path}: a trajectory is saved as {allowed}")
        buffer = io.BytesIO()
        if suffix == ".npz":
            np.savez_compressed(buffer, **self._arrays())
        else:
            buffer.write(self._csv_text().encode("utf-8"))
        write_atomically(path, buffer.getvalue())
        return path

    def _metadata(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _ARRAY_FIELDS}

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {name: getattr(self, name) for name in _ARRAY_FIELDS}
        arrays.update({name: np.array(value) for name, value in self._metadata().items()})
        return arrays

    def _csv_text(self) -> str:
        out = io.StringIO()
        for name, value in self._metadata().items():
            if name != "scene_toml":
                out.write(f"# {name}: {value}\n")
        writer = csv.writer(out, lineterminator="\n")
        table = self.energy_table()
        writer.writerow(table)
        for row in zip(*table.values()):
            writer.writerow([repr(v.item()) if isinstance(v, np.floating) else v.item()
                             for v in row])
        return out.getvalue()

    def __repr__(self) -> str:
        return (f"Trajectory({self.scene!r}, {len(self)} samples, n={self.n_particles}, "
                f"integrator={self.integrator}, dt={self.dt:g}, {self.stop_reason!r})")


_ARRAY_FIELDS = ("steps", "times", "positions", "kinetic", "spring", "gravity", "total",
                 "momentum", "max_strain", "springs")


def load_trajectory(path: str | Path) -> Trajectory:
    """Read a trajectory written by :meth:`Trajectory.save` as ``.npz``."""
    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise ValueError(f"{path}: load_trajectory reads .npz files (a .csv holds only energies)")
    with np.load(path, allow_pickle=False) as data:
        missing = [name for name in _ARRAY_FIELDS if name not in data.files]
        if missing:
            raise ValueError(f"{path}: not a ropesim trajectory (missing {', '.join(missing)})")
        values: dict[str, Any] = {name: data[name] for name in _ARRAY_FIELDS}
        for f in fields(Trajectory):
            if f.name not in _ARRAY_FIELDS and f.name in data.files:
                values[f.name] = data[f.name].item()
    return Trajectory(**values)


# --- recording ---------------------------------------------------------------------------
class RecordingInterrupted(Interrupted):
    """A stop request (Ctrl-C, SIGTERM, SIGHUP) during :func:`record`; ``.trajectory``
    holds what was recorded, ``cause`` and ``exit_code`` say which signal it was."""

    def __init__(self, trajectory: Trajectory, signal_number: int = signal.SIGINT):
        super().__init__(signal_number)
        self.args = (trajectory.stop_reason,)
        self.trajectory = trajectory


def record(sim: Simulation, steps: int, every: int = 1,
           progress: Progress | None = None) -> Trajectory:
    """Step ``sim`` ``steps`` times, sampling the initial state, every ``every``-th
    step and the last step.

    Divergence ends the run early: the last finite state is sampled and the partial
    trajectory returned with ``completed=False``. Ctrl-C raises
    :class:`RecordingInterrupted` with the samples taken so far (the state being
    stepped at that moment may be half-updated, so it is not sampled).
    ``progress(done, steps)`` is called after each chunk of ``every`` steps.
    """
    steps = check_count("steps", steps, 0)
    every = check_count("every", every, 1)
    first_step = sim.step_count
    samples: list[tuple] = []

    def take_sample() -> None:
        if samples and samples[-1][0] == sim.step_count:
            return
        d = sim.diagnostics()
        # one append of a finished tuple: an interrupt never leaves half a sample
        samples.append((sim.step_count, sim.time, sim.positions.astype(np.float32),
                        d["kinetic"], d["spring"], d["gravity"], d["total"],
                        np.asarray(d["momentum"], dtype=np.float64), d["max_strain"]))

    def result(completed: bool, reason: str) -> Trajectory:
        return _trajectory(sim, samples, every, steps, first_step, completed, reason)

    take_sample()
    try:
        for done in sim.step_chunks(steps, every):
            take_sample()
            if progress is not None:
                progress(done, steps)
    except SimulationDiverged as exc:
        take_sample()  # the simulation kept its last finite state
        reason = (f"diverged at step {exc.step} (t = {exc.time:.4f} s) with {exc.integrator}, "
                  f"dt = {exc.dt:g} s: {exc.reason}")
        return result(False, reason)
    except KeyboardInterrupt as exc:
        last_step, last_time = samples[-1][0], samples[-1][1]
        reason = (f"interrupted ({interrupt_cause(exc)}) after step {last_step} "
                  f"(t = {last_time:.4f} s) of {first_step + steps}")
        signal_number = exc.signal_number if isinstance(exc, Interrupted) else signal.SIGINT
        raise RecordingInterrupted(result(False, reason), signal_number) from None
    return result(True, f"completed {steps} steps (t = {sim.time:.4f} s)")


def _trajectory(sim: Simulation, samples: list[tuple], every: int, steps_requested: int,
                first_step: int, completed: bool, reason: str) -> Trajectory:
    columns = list(zip(*samples))
    as_array = np.asarray
    return Trajectory(
        steps=as_array(columns[0], dtype=np.int64),
        times=as_array(columns[1], dtype=np.float64),
        positions=np.stack(columns[2]).astype(np.float32, copy=False),
        kinetic=as_array(columns[3], dtype=np.float64),
        spring=as_array(columns[4], dtype=np.float64),
        gravity=as_array(columns[5], dtype=np.float64),
        total=as_array(columns[6], dtype=np.float64),
        momentum=np.stack(columns[7]),
        max_strain=as_array(columns[8], dtype=np.float64),
        springs=np.asarray(sim.system.springs, dtype=np.int64).reshape(-1, 2),
        scene=sim.system.name or "",
        integrator=sim.integrator,
        dt=float(sim.dt),
        every=every,
        steps_done=int(samples[-1][0] - first_step),
        steps_requested=steps_requested,
        completed=completed,
        stop_reason=reason,
    )


__all__ = ["Trajectory", "record", "load_trajectory", "RecordingInterrupted", "ENERGY_COLUMNS",
           "TRAJECTORY_SUFFIXES"]
