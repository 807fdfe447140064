"""The viewer's timeline: rewind, scrub, resume, what-if branches and replay.

:class:`Timeline` is one of the :class:`~ropesim.app.controller.ViewerController`'s
helpers (window-free, tested in tests/test_history.py). After every frame that stepped
it pushes ``sim.get_state()`` into a :class:`~ropesim.app.history.History`; Left / ,
(:meth:`Timeline.step_back`), Right / . (:meth:`Timeline.step_forward`) and the panel's
slider (:meth:`Timeline.scrub_to`) restore a held state with ``sim.set_state``;
resuming (Space) from a rewound moment drops the later history (:meth:`Timeline.resume`).

**Branches.** :meth:`Timeline.branch_here` keeps the original run as a ghost: a second
Simulation restored to the shown state. Its future is taken from the history where the
history has it (branching at an earlier moment), then computed; it advances with the
main run (to the same simulated time) while the user changes a parameter or the
integrator. While a branch lives, each history entry is a :class:`BranchFrame` (both
runs' states, inside the same memory budget), so rewinding moves both runs. The
:class:`BranchSeries` (RMS position difference, both runs' energies) feeds the panel.

**Replay.** With a :class:`~ropesim.app.replay.Replay` open (``ropesim view --replay``)
the same controls move through a saved trajectory's frames and nothing is simulated.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.simulation import Simulation, SimulationDiverged
from .history import DEFAULT_HISTORY_MB, History, state_nbytes
from ..io.outputs import OutputError
from .replay import Replay, history_trajectory


@dataclass(frozen=True)
class BranchFrame:
    """One history entry while a branch lives: the main run's and the ghost's states."""

    main: Any
    ghost: Any

    @property
    def nbytes(self) -> int:
        return state_nbytes(self.main) + state_nbytes(self.ghost)


class BranchSeries:
    """Per-frame samples of a branch: simulated time (s), RMS position difference
    between the runs (m) and each run's total energy (J)."""

    def __init__(self) -> None:
        self._rows: list[tuple[float, float, float, float]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, time: float, rms: float, energy: float, ghost_energy: float) -> None:
        if self._rows and time <= self._rows[-1][0]:
            return   # the same moment again (a frame that did not step)
        self._rows.append((float(time), float(rms), float(energy), float(ghost_energy)))

    def truncate_after(self, time: float) -> None:
        """Drop the samples later than ``time`` (s)."""
        while self._rows and self._rows[-1][0] > time:
            self._rows.pop()

    def series(self) -> dict[str, np.ndarray]:
        """"time", "rms", "energy", "ghost_energy" arrays, oldest first."""
        data = np.ascontiguousarray(np.array(self._rows, dtype=np.float64).reshape(-1, 4).T)
        return dict(zip(("time", "rms", "energy", "ghost_energy"), data))


#: the energy budget's layers, stacked bottom to top: the current kinetic and elastic
#: energy, then what the losses took since tracking began (J)
BUDGET_LAYERS = ("kinetic", "elastic", "damping", "drag", "friction", "contact", "tearing")


class BudgetSeries:
    """Per-frame samples of ``sim.energy_budget()`` while ``sim.track_energy`` is on:
    time (s), each of BUDGET_LAYERS (J) and ``available`` = initial + inputs - gravity
    - attached potentials (J), which the stacked layers reach when the budget closes
    (kinetic + elastic + losses = initial + inputs - gravity - attached - balance)."""

    def __init__(self) -> None:
        self._rows: list[tuple[float, ...]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self._rows.clear()

    def sample(self, sim: Simulation) -> None:
        """Add the budget now (nothing while tracking is off; a rewound time first drops
        the later samples)."""
        if not sim.track_energy:
            return
        self.truncate_after(sim.time)
        if self._rows and self._rows[-1][0] == sim.time:
            return
        b = sim.energy_budget()
        available = b.initial + b.grab + b.forces + b.user - b.gravity - b.attached
        self._rows.append((sim.time, *(getattr(b, name) for name in BUDGET_LAYERS), available))

    def truncate_after(self, time: float) -> None:
        while self._rows and self._rows[-1][0] > time:
            self._rows.pop()

    def series(self) -> dict[str, np.ndarray]:
        """"time", each layer and "available" as arrays, oldest first."""
        names = ("time", *BUDGET_LAYERS, "available")
        data = np.array(self._rows, dtype=np.float64).reshape(-1, len(names)).T
        return dict(zip(names, np.ascontiguousarray(data)))


def rms_difference(a: np.ndarray, b: np.ndarray) -> float:
    """sqrt(mean over particles of |a_i - b_i|^2), m."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return float(np.sqrt(np.mean(np.sum(d * d, axis=1))))


class Branch:
    """The original run kept beside the main one after "branch here".

    ghost : the original run's Simulation, restored from the state at the branch.
    start_time : simulated time of the branch, s.
    pending : the original run's later (time s, state) history, replayed into the
        ghost as the main run reaches those times, before the ghost simulates on.
    """

    def __init__(self, ghost: Simulation, pending: list[tuple[float, Any]] | None = None) -> None:
        self.ghost = ghost
        self.start_time = ghost.time
        self.pending = deque(pending or ())
        self.series = BranchSeries()
        self.diverged: str | None = None

    def follow(self, sim: Simulation) -> None:
        """Bring the ghost to the main run's time: the original's recorded states while
        there are some, then steps of the ghost's own dt; then sample the series."""
        target = sim.time
        reached = None
        while self.pending and self.pending[0][0] <= target + 0.5 * self.ghost.dt:
            _, reached = self.pending.popleft()
        if reached is not None:   # only the latest one reached: a restore costs ms
            self.ghost.set_state(reached.main if isinstance(reached, BranchFrame) else reached)
        if not self.pending and self.diverged is None:
            steps = int(np.floor((target - self.ghost.time) / self.ghost.dt + 0.5))
            if steps > 0:
                try:
                    self.ghost.step(steps)
                except SimulationDiverged as exc:
                    self.diverged = f"the original run diverged at t = {exc.time:.4g} s"
        self.sample(sim)

    def sample(self, sim: Simulation) -> None:
        self.series.add(sim.time, rms_difference(sim.positions, self.ghost.positions),
                        sim.energy(), self.ghost.energy())


class Timeline:
    """History, branch and replay of one ViewerController (``controller.timeline``).

    controller : the ViewerController (its sim, scene, options, mouse, energy, paused,
        message and single_step are used).
    history_mb : the history's memory budget, MB (both runs' states while branched).
    """

    def __init__(self, controller: Any, history_mb: float = DEFAULT_HISTORY_MB) -> None:
        self.controller = controller
        self.history = History(history_mb)
        self.branch: Branch | None = None
        self.replay: Replay | None = None
        self.budget = BudgetSeries()
        self._topology_version: int | None = None  # of the springs the held states have

    # -- state -----------------------------------------------------------------------------
    @property
    def replaying(self) -> bool:
        """A saved trajectory is shown: nothing is simulated."""
        return self.replay is not None

    @property
    def seconds_held(self) -> float:
        """Simulated seconds the history (or the replayed trajectory) spans."""
        return self.replay.duration if self.replay is not None else self.history.seconds_held

    @property
    def fraction(self) -> float:
        """Where the shown moment lies in the held span, 0 (oldest) .. 1 (newest)."""
        return self.replay.fraction if self.replay is not None else self.history.fraction

    @property
    def rewound(self) -> bool:
        """An earlier moment than the newest is shown."""
        return not self.history.at_end

    def open_replay(self, replay: Replay) -> None:
        """Show ``replay``'s trajectory instead of simulating (from its first frame, paused)."""
        c = self.controller
        self.drop_branch(quiet=True)
        self.history.clear()
        self.replay = replay
        c.paused = True
        c.warm_up_pending = False
        replay.show(0)
        c.energy.clear()
        for time, kinetic, potential in replay.energies():
            c.energy.add(time, kinetic, potential)
        c.message = (f"replay of {replay.name}: {len(replay)} frames, {replay.duration:.3g} s; "
                     "Space plays, Left / Right step, the Timeline slider scrubs")

    def attach(self) -> None:
        """A new scene: no replay, no branch, the history restarts at its first state."""
        self.replay = None
        self.restart()

    def restart(self) -> None:
        """After a reset: the history restarts (a replay goes back to its first frame)."""
        if self.replay is not None:
            self.replay.show(0)
            return
        self.budget.clear()
        self.drop_branch(quiet=True)
        self.history.clear()
        self.record()

    def record(self) -> None:
        """Push the main run's state (with the ghost's while branched) after a frame."""
        if self.replay is not None:
            return
        sim = self.controller.sim
        version = sim.topology_version
        if version != self._topology_version:
            if self._topology_version is not None and len(self.history):
                # the held states have the old springs: set_state would refuse them
                self.drop_branch(quiet=True)
                self.history.clear()
                self.controller.message = ("the network was edited: the timeline starts "
                                           "again from here")
            self._topology_version = version
        state = sim.get_state()
        if self.branch is not None:
            self.branch.follow(sim)
            state = BranchFrame(state, self.branch.ghost.get_state())
        self.history.push(state, sim.time)
        self.budget.sample(sim)
        self._sync_ghost()

    def set_budget_tracking(self, on: bool) -> None:
        """Start (from now) or stop the energy budget of the main run (sim.track_energy;
        it costs about one more step per step)."""
        sim = self.controller.sim
        self.budget.clear()
        sim.track_energy = bool(on) and self.replay is None
        self.budget.sample(sim)

    # -- moving through time ------------------------------------------------------------------
    def _pause(self) -> bool:
        """Pause for a move through time; False (and a message) while recording a video."""
        c = self.controller
        if c.recorder is not None:
            c.message = "stop the recording (V) before moving through the history"
            return False
        c.paused = True
        c.frame_clock.clear()
        return True

    def step_back(self) -> None:
        """Show the previous held frame (pausing first)."""
        if not self._pause():
            return
        if self.replay is not None:
            self.replay.step(-1)
            return
        entry = self.history.step_back()
        if entry is None:
            self.controller.message = (f"the oldest held moment (the history holds "
                                       f"{self.history.seconds_held:.2f} s)")
            return
        self._show(entry)

    def step_forward(self) -> None:
        """Show the next held frame; at the newest one, simulate one step (pausing first)."""
        if not self._pause():
            return
        if self.replay is not None:
            self.replay.step(+1)
            return
        entry = self.history.step_forward()
        if entry is None:
            self.controller.single_step()
            return
        self._show(entry)

    def scrub_to(self, fraction: float) -> None:
        """Show the held moment at ``fraction`` (0 oldest .. 1 newest) of the span."""
        if not self._pause():
            return
        if self.replay is not None:
            self.replay.scrub_to(fraction)
            return
        entry = self.history.scrub_to(fraction)
        if entry is not None:
            self._show(entry)

    def _show(self, entry: Any) -> None:
        c = self.controller
        c.mouse.let_go()
        branched = isinstance(entry, BranchFrame)
        c.sim.set_state(entry.main if branched else entry)
        if self.branch is not None and branched:
            self.branch.ghost.set_state(entry.ghost)
        c.error = None
        self.budget.truncate_after(c.sim.time)
        back = len(self.history) - 1 - self.history.cursor
        c.message = (f"t = {c.sim.time:.3f} s, {back} frames back (Space resumes from here "
                     "and drops the later history)" if back else f"t = {c.sim.time:.3f} s: "
                     "the newest held moment")
        self._sync_ghost()

    def resume(self) -> None:
        """Called as the run resumes: from a rewound moment, the later history (and
        the energy and branch samples after it) are dropped; a branch made later than
        the shown moment is dropped too."""
        if self.replay is not None:
            if self.replay.at_end:
                self.replay.show(0)
            return
        c = self.controller
        if c.sim.grabbed is not None and not c.mouse.dragging:
            c.sim.release()   # a restored grab has no mouse behind it
        entry = self.history.current
        dropped = self.history.truncate_after()
        if self.branch is not None and not isinstance(entry, BranchFrame):
            self.drop_branch(quiet=True)
            c.message = "resumed before the branch: the branch was dropped"
        if dropped:
            c.energy.truncate_after(c.sim.time)
            if self.branch is not None:
                self.branch.series.truncate_after(c.sim.time)
                self.branch.pending.clear()
            c.message = f"resumed from t = {c.sim.time:.3f} s; {dropped} later frames dropped"

    def save_history(self) -> Path | None:
        """Write the held frames (the main run's) as a trajectory ``.npz`` in the output
        folder, which ``ropesim view --replay`` opens; returns its path (None on failure)."""
        c = self.controller
        if self.replay is not None:
            c.message = "a replay is already a saved trajectory"
            return None
        entries = [(t, s.main if isinstance(s, BranchFrame) else s)
                   for t, s in zip(self.history.times, self.history.states())]
        path = c.capture.output_path(".npz")
        try:
            history_trajectory(entries, c.scene).save(path)
        except (OutputError, OSError) as exc:
            c.message = f"history not saved: {exc}"
            return None
        c.message = f"history saved: {path} ({len(entries)} frames; ropesim view --replay {path})"
        return path

    # -- branches ---------------------------------------------------------------------------
    def branch_here(self) -> None:
        """Keep the original run from the shown moment as a ghost; the main run goes on
        from here with whatever the user changes next (parameters, integrator)."""
        c = self.controller
        if self.replay is not None:
            c.message = "a replay has no simulation to branch (open a scene to branch)"
            return
        ghost = c.scene.simulation()
        ghost.set_state(c.sim.get_state())
        if ghost.grabbed is not None:
            ghost.release()
        self.branch = Branch(ghost, self.history.later())
        self.history.truncate_after()
        self.history.replace_newest(BranchFrame(c.sim.get_state(), ghost.get_state()))
        self.branch.sample(c.sim)
        c.message = (f"branched at t = {c.sim.time:.3f} s: the original run goes on as the "
                     "ghost; change a parameter or the integrator and resume (N drops it)")
        self._sync_ghost()

    def drop_branch(self, quiet: bool = False) -> None:
        """Forget the ghost (the history keeps the main run's states)."""
        if self.branch is None:
            if not quiet:
                self.controller.message = "no branch to drop (B branches here)"
            return
        self.branch = None
        self.history.map_states(lambda s: s.main if isinstance(s, BranchFrame) else s)
        if not quiet:
            self.controller.message = "branch dropped"
        self._sync_ghost()

    def _sync_ghost(self) -> None:
        """The renderer draws the ghost from ``options.ghost`` (None: no ghost)."""
        c = self.controller
        show = self.branch is not None and isinstance(self.history.current, BranchFrame)
        c.options.ghost = self.branch.ghost.positions if show else None

    # -- replay -----------------------------------------------------------------------------
    def play(self, frame_time: float) -> int:
        """A running frame of a replay: advance by ``frame_time`` s times the time
        scale; pauses at the end. Returns 0 (nothing is simulated)."""
        c = self.controller
        if self.replay.play(frame_time * c.time_scale):
            c.paused = True
            c.message = "end of the replay (Space plays it again)"
        return 0


__all__ = ["BUDGET_LAYERS", "Branch", "BranchFrame", "BranchSeries", "BudgetSeries", "Timeline",
           "rms_difference"]
