"""``ropesim view --replay run.npz``: a saved trajectory shown with the timeline controls.

A trajectory (:mod:`ropesim.io.trajectory`, from ``ropesim run --out run.npz`` or
:func:`ropesim.io.trajectory.record`) holds positions every ``every`` steps. The viewer
draws them through the scene's Simulation without stepping it: :class:`Replay` writes a
frame's positions and time into the simulation (velocities zero) and moves through
the frames (step, scrub, play in simulated time). :func:`replay_scene` finds the scene
to draw it with: the scene file stored in the trajectory, else the shipped scene of its
name, else an explicit system of its springs.
"""

from __future__ import annotations

import argparse
import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from ..engine.simulation import Simulation
from ..io.scenes import Scene, SceneError, load, scene_from_dict, scene_names
from ..io.trajectory import Trajectory, _trajectory, load_trajectory
from .arguments import UsageError, scene_from_args


class Replay:
    """A trajectory's frames shown through ``sim`` (which is never stepped).

    trajectory : the saved run; its particle count must equal ``sim``'s.
    sim : the Simulation the renderer draws (positions, velocities and time are set).
    name : how the panel names the replay (the file name).
    """

    def __init__(self, trajectory: Trajectory, sim: Simulation, name: str = "") -> None:
        if len(trajectory) == 0:
            raise ValueError("replay: the trajectory has no frames")
        if trajectory.n_particles != sim.n_particles:
            raise ValueError(f"replay: the trajectory has {trajectory.n_particles} particles, "
                             f"the scene {sim.n_particles}")
        self.trajectory = trajectory
        self.sim = sim
        self.name = name or trajectory.scene or "trajectory"
        self.index = 0
        self._playhead = float(trajectory.times[0])   # s, while playing

    def __len__(self) -> int:
        return len(self.trajectory)

    @property
    def times(self) -> np.ndarray:
        return self.trajectory.times

    @property
    def duration(self) -> float:
        """Simulated seconds from the first to the last frame."""
        return float(self.times[-1] - self.times[0])

    @property
    def fraction(self) -> float:
        """Where the shown frame lies, 0 (first) .. 1 (last), in time."""
        return (float(self.times[self.index] - self.times[0]) / self.duration
                if self.duration > 0 else 1.0)

    @property
    def at_end(self) -> bool:
        return self.index == len(self) - 1

    def show(self, index: int) -> None:
        """Show frame ``index`` (clamped to the frames)."""
        self.index = min(max(int(index), 0), len(self) - 1)
        self.sim.positions[:] = self.trajectory.positions[self.index]
        self.sim.velocities[:] = 0.0
        self.sim.state.time = float(self.times[self.index])
        self._playhead = float(self.times[self.index])

    def step(self, frames: int) -> None:
        """Move ``frames`` frames (negative: back)."""
        self.show(self.index + int(frames))

    def scrub_to(self, fraction: float) -> None:
        """Show the frame nearest to ``fraction`` (0 .. 1, clamped) of the duration."""
        if not math.isfinite(float(fraction)):
            raise ValueError(f"scrub_to: fraction must be finite, got {fraction!r}")
        time = self.times[0] + min(max(float(fraction), 0.0), 1.0) * self.duration
        self.show(int(np.argmin(np.abs(self.times - time))))

    def play(self, seconds: float) -> bool:
        """Advance the playhead by ``seconds`` of simulated time and show the last frame
        it passed; True when it reached the last frame."""
        self._playhead += max(float(seconds), 0.0)
        index = int(np.searchsorted(self.times, self._playhead, side="right")) - 1
        if index != self.index:
            playhead = self._playhead
            self.show(index)
            self._playhead = playhead
        return self.at_end

    def energies(self) -> list[tuple[float, float, float]]:
        """(time s, kinetic J, potential J) of every frame, for the energy plot."""
        t = self.trajectory
        potential = t.spring + t.gravity
        return list(zip(t.times.tolist(), t.kinetic.tolist(), potential.tolist()))


def history_trajectory(entries: list[tuple[float, Any]], scene: Scene) -> Trajectory:
    """A Trajectory of held viewer states ((time s, SimState) oldest first, as
    ``History.later()`` lists them from the start): each state is restored into a scratch
    simulation of ``scene`` to sample its energies, momentum and strain like
    :func:`ropesim.io.trajectory.record`; ``ropesim view --replay`` opens its file."""
    if not entries:
        raise ValueError("history_trajectory: no states to save")
    sim = scene.simulation()
    samples = []
    for _, state in entries:
        sim.set_state(state)
        d = sim.diagnostics()
        samples.append((sim.step_count, sim.time, sim.positions.astype(np.float32),
                        d["kinetic"], d["spring"], d["gravity"], d["total"],
                        np.asarray(d["momentum"], dtype=np.float64), d["max_strain"]))
    steps = np.array([sample[0] for sample in samples])
    every = int(np.median(np.diff(steps))) if len(steps) > 1 else 1
    first = int(steps[0])
    trajectory = _trajectory(sim, samples, max(every, 1), int(steps[-1]) - first, first, True,
                             f"viewer history: {len(samples)} frames from t = "
                             f"{samples[0][1]:.4f} s to {samples[-1][1]:.4f} s")
    trajectory.scene = scene.name
    trajectory.scene_toml = tomli_w.dumps(scene.to_dict())
    return trajectory


def _explicit_scene(trajectory: Trajectory) -> Scene:
    """A scene drawing the trajectory's springs from its first frame (no pins, no contacts)."""
    return scene_from_dict({
        "description": "a replayed trajectory",
        "builder": "explicit",
        "explicit": {"positions": trajectory.positions[0].astype(float).tolist(),
                     "springs": trajectory.springs.astype(int).tolist()},
        "simulation": {"gravity": [0.0, 0.0, 0.0]},
    }, trajectory.scene or "replay")


def replay_scene(trajectory: Trajectory) -> Scene:
    """The scene to draw ``trajectory`` with: its stored scene file, else the shipped
    scene of its name, else its springs as an explicit system; each must have the
    trajectory's particle count (the next is tried otherwise)."""
    candidates = []
    if trajectory.scene_toml:
        candidates.append(lambda: scene_from_dict(tomllib.loads(trajectory.scene_toml),
                                                  trajectory.scene or "replay"))
    if trajectory.scene in scene_names():
        candidates.append(lambda: load(trajectory.scene))
    for make in candidates:
        try:
            scene = make()
            if scene.build().n_particles == trajectory.n_particles:
                return scene
        except (SceneError, tomllib.TOMLDecodeError, ValueError, TypeError):
            pass
    return _explicit_scene(trajectory)


def open_trajectory(path: str | Path) -> Trajectory:
    """``load_trajectory`` for ``--replay``: a missing or wrong file raises ValueError
    naming --replay, the path and what is expected."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--replay {path}: no such file (a .npz written by "
                         "`ropesim run SCENE --out run.npz`)")
    try:
        return load_trajectory(path)
    except (ValueError, OSError) as exc:
        raise ValueError(f"--replay {path}: {exc}") from None


def viewer_scene(args: argparse.Namespace) -> tuple[Scene, Trajectory | None]:
    """The viewer's scene and, with ``--replay``, the trajectory to show (its scene
    wins over the positional one); a bad file or scene raises UsageError."""
    replay = getattr(args, "replay", None)
    if replay is None:
        return scene_from_args(args), None
    try:
        trajectory = open_trajectory(replay)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return replay_scene(trajectory), trajectory


__all__ = ["Replay", "history_trajectory", "open_trajectory", "replay_scene", "viewer_scene"]
