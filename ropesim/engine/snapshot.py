"""Snapshots: everything that determines a simulation's future, copied out and put back.

``Simulation.get_state()`` returns a :class:`SimState` (:func:`capture`) and
``Simulation.set_state(state)`` restores it (:func:`restore`). Stepping on from a
restored state gives bit for bit the arrays of never having left, for every integrator
and both dtypes (tests/test_snapshot.py). A SimState holds:

- the state: positions (n, 3) m, velocities (n, 3) m/s, time (s), step count, and the
  spring list it belongs to (particle pairs; a state is refused by a simulation whose
  springs join other pairs);
- pins and grab: the pinned mask (the pinned particles' places are their positions),
  the grabbed particle (or None), its target (3,) m and follow time (s);
- tearing: the broken mask, the break strains, max_stretch and the last step's passes;
- the live parameters: the user's stiffness (N/m) and damping (N*s/m) (broken springs
  get 0 from them on restore), rest lengths (m), masses (kg) and inverse masses (1/kg),
  gravity (m/s^2), drag (1/s), dt (s), substeps, contacts, max_speed (m/s), the CG
  settings, whether gravity and drag act, the self-collision settings (on / off,
  thickness (m), friction between layers), and the attached forces with a copy of each
  one's attributes (arrays copied: e.g. a Wind's air velocity and gusts);
- the integrator's name, its warm data and settings (``Integrator.save_warm``) and a
  copy of its solver statistics;
- the energy budget's accounts when ``track_energy`` is on (restored with it: the
  budget goes on from that moment; a state taken with it off turns it off).

The health check's cadence follows the step count (a check every CHECK_EVERY steps),
so it is restored with it; its energy reference and checkpoint ring start again from
the restored state (a state of a healthy run), as after ``reset``.

Every array of a SimState is a read-only copy. A parameter array (or an attached
force's array) equal to the one of the previous snapshot of the same simulation is
shared with it rather than copied again, so a history of states while the parameters stay put costs about the positions
and velocities per state: :attr:`SimState.nbytes` counts every array a state holds,
:func:`history_nbytes` counts a shared array once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from .contacts import Contact
from .energy_budget import EnergyLedger
from .integrators.base import SolverStats, get_integrator
from .state import Changed

def frozen_copy(array: np.ndarray) -> np.ndarray:
    """A read-only copy of array."""
    copy = np.array(array, copy=True)
    copy.flags.writeable = False
    return copy


def _frozen_value(value: Any) -> Any:
    """Arrays as read-only copies; dicts recursively; anything else as it is."""
    if isinstance(value, np.ndarray):
        return frozen_copy(value)
    if isinstance(value, dict):
        return {key: _frozen_value(item) for key, item in value.items()}
    return value


def _thawed_value(value: Any) -> Any:
    """Writable copies of the arrays of a _frozen_value (the state stays untouched)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {key: _thawed_value(item) for key, item in value.items()}
    return value


def _value_nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(_value_nbytes(item) for item in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_value_nbytes(item) for item in value)
    return 0


def _arrays(value: Any) -> Iterable[np.ndarray]:
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _arrays(item)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _arrays(item)


@dataclass(frozen=True, eq=False)
class SimState:
    """One moment of a Simulation, complete enough to go on from it bit-exactly (see the
    module docstring). Arrays are read-only copies in the simulation's dtype unless
    stated; make one with ``sim.get_state()``, restore it with ``sim.set_state(state)``.
    """

    positions: np.ndarray  # (n, 3) m
    velocities: np.ndarray  # (n, 3) m/s
    springs: np.ndarray  # (m, 2) int32 particle pairs: the topology the state belongs to
    time: float  # s
    step_count: int
    pinned: np.ndarray  # (n,) bool
    grabbed: int | None
    grab_target: np.ndarray  # (3,) float64, m
    grab_follow_time: float  # s
    broken: np.ndarray  # (m,) bool
    break_strain: np.ndarray  # (m,) float64, dimensionless (inf = unbreakable)
    max_stretch: float | None
    stretch_passes: int
    stiffness: np.ndarray  # (m,) N/m, the user's values (broken springs act with 0)
    damping: np.ndarray  # (m,) N*s/m, the user's values
    rest_lengths: np.ndarray  # (m,) m
    mass: np.ndarray  # (n,) kg
    inv_mass: np.ndarray  # (n,) 1/kg
    gravity: np.ndarray  # (3,) m/s^2
    drag: float  # 1/s
    gravity_on: bool
    drag_on: bool
    forces: tuple[tuple[Any, dict[str, Any]], ...]  # (attached Force, its attributes)
    dt: float  # s
    substeps: int
    contacts: tuple[Contact, ...]
    max_speed: float  # m/s
    self_collision: bool
    thickness: float  # m, the self-collision distance
    self_friction: float  # friction coefficient between layers
    cg_tolerance: float
    cg_max_iterations: int
    integrator: str
    warm: dict[str, Any]  # Integrator.save_warm() of the integrator
    stats: SolverStats  # a copy of its solver statistics
    energy: dict[str, Any] | None  # the energy budget's accounts (None: not tracked)

    @property
    def n_particles(self) -> int:
        return self.positions.shape[0]

    @property
    def n_springs(self) -> int:
        return self.stiffness.shape[0]

    @property
    def dtype(self) -> np.dtype:
        return self.positions.dtype

    @property
    def pinned_positions(self) -> np.ndarray:
        """(p, 3) places of the pinned particles, m (a copy)."""
        return self.positions[self.pinned]

    @property
    def nbytes(self) -> int:
        """Bytes of every array this state holds (a parameter array shared with another
        state counted in full: see :func:`history_nbytes`)."""
        return sum(_value_nbytes(getattr(self, field.name))
                   for field in dataclasses.fields(self))

    def arrays(self) -> list[np.ndarray]:
        """Every array this state holds (the ones shared with other states included)."""
        return [array for field in dataclasses.fields(self)
                for array in _arrays(getattr(self, field.name))]

    def __repr__(self) -> str:
        return (f"SimState(n={self.n_particles}, m={self.n_springs}, time={self.time:.4f}, "
                f"step_count={self.step_count}, integrator={self.integrator}, "
                f"nbytes={self.nbytes})")


def history_nbytes(states: Iterable[SimState]) -> int:
    """Bytes the states hold together, each shared array counted once (bytes)."""
    seen: set[int] = set()
    total = 0
    for state in states:
        for array in state.arrays():
            if id(array) not in seen:
                seen.add(id(array))
                total += int(array.nbytes)
    return total


def _shared_or_copied(value: Any, old: Any) -> Any:
    """``old`` (a read-only array of an earlier state) if value equals it, else a
    read-only copy of value (arrays; anything else through _frozen_value)."""
    if (isinstance(value, np.ndarray) and isinstance(old, np.ndarray)
            and old.dtype == value.dtype and old.shape == value.shape
            and np.array_equal(old, value)):
        return old
    return _frozen_value(value)


def _force_attributes(force: Any, previous: SimState | None) -> dict[str, Any]:
    """A copy of an attached force's attributes (arrays read-only, shared with
    ``previous``'s copy of the same force where equal)."""
    old: dict[str, Any] = {}
    for known, attributes in (() if previous is None else previous.forces):
        if known is force:
            old = attributes
    return {key: _shared_or_copied(value, old.get(key)) for key, value in vars(force).items()}


def capture(sim: Any, previous: SimState | None = None) -> SimState:
    """The SimState of ``sim`` now. Parameter arrays equal to ``previous``'s (a state
    of the same simulation) are shared with it instead of copied."""
    p, tearing, model = sim._params, sim._tearing, sim._model
    integrator = sim._integrator
    integrator.finish()
    arrays = {"stiffness": tearing.stiffness, "damping": tearing.damping,
              "rest_lengths": p.rest_lengths, "mass": p.mass, "inv_mass": p.inv_mass,
              "break_strain": tearing.break_strain, "broken": tearing.broken,
              "pinned": sim._pinned,
              "springs": np.stack((model.spring_a, model.spring_b), axis=1)}
    kept = {name: _shared_or_copied(array, None if previous is None else getattr(previous, name))
            for name, array in arrays.items()}
    return SimState(
        positions=frozen_copy(sim._x), velocities=frozen_copy(sim._v),
        time=sim._state.time, step_count=sim._state.step_count,
        grabbed=sim._grabbed, grab_target=frozen_copy(sim._grab_target),
        grab_follow_time=sim.grab_follow_time,
        max_stretch=sim.max_stretch, stretch_passes=sim.stretch_passes,
        gravity=frozen_copy(p.gravity), drag=float(p.drag[0]),
        gravity_on=model.gravity_on, drag_on=model.drag_on,
        forces=tuple((force, _force_attributes(force, previous)) for force in model.forces),
        dt=sim.dt, substeps=sim.substeps, contacts=sim.contacts, max_speed=sim.max_speed,
        self_collision=sim.self_collision, thickness=sim.thickness,
        self_friction=sim.self_friction,
        cg_tolerance=model.cg_tolerance, cg_max_iterations=model.cg_max_iterations,
        integrator=integrator.name, warm=_frozen_value(dict(integrator.save_warm())),
        stats=dataclasses.replace(integrator.stats),
        energy=None if sim._ledger is None else sim._ledger.accounts(), **kept,
    )


def check_compatible(sim: Any, state: Any) -> None:
    """TypeError unless ``state`` is a SimState; ValueError naming the field when it
    comes from a simulation of another size or dtype."""
    if not isinstance(state, SimState):
        raise TypeError(f"state: expected a SimState (from Simulation.get_state), got "
                        f"{type(state).__name__}")
    n, m = sim.n_particles, sim.n_springs
    for field, count, unit in (("positions", n, "particles"), ("velocities", n, "particles"),
                               ("mass", n, "particles"), ("pinned", n, "particles"),
                               ("stiffness", m, "springs"), ("damping", m, "springs"),
                               ("rest_lengths", m, "springs"), ("broken", m, "springs")):
        got = getattr(state, field).shape[0]
        if got != count:
            raise ValueError(f"state.{field}: the state has {got} {unit}, this simulation "
                             f"has {count}; allowed: a state of a simulation with {n} "
                             f"particles and {m} springs")
    if state.dtype != sim.dtype:
        raise ValueError(f"state.positions: the state is {state.dtype}, this simulation "
                         f"runs {sim.dtype}; allowed: a state of a {sim.dtype} simulation")
    model = sim._model
    if not (np.array_equal(state.springs[:, 0], model.spring_a)
            and np.array_equal(state.springs[:, 1], model.spring_b)):
        raise ValueError("state.springs: the state's springs join other particle pairs than "
                         "this simulation's (another system, or springs added or removed "
                         "since); allowed: a state of this spring list")
    get_integrator(state.integrator)  # still registered (else ValueError, nothing changed)


def restore(sim: Any, state: SimState) -> None:
    """Put ``state`` (a SimState of a simulation of the same size and dtype) back into
    ``sim``: after this, stepping gives what the captured simulation would have."""
    check_compatible(sim, state)
    sim._integrator.finish()
    p, tearing, model = sim._params, sim._tearing, sim._model
    sim._x[:] = state.positions
    sim._v[:] = state.velocities
    sim._state.time, sim._state.step_count = state.time, state.step_count
    sim._pinned[:] = state.pinned
    sim._grabbed = state.grabbed
    sim._grab_target = state.grab_target.copy()
    sim.grab_follow_time = state.grab_follow_time
    tearing.broken[:] = state.broken
    tearing.n_broken = int(np.count_nonzero(state.broken))
    tearing.set_break_strain(state.break_strain)
    sim.max_stretch = state.max_stretch
    sim.stretch_passes = state.stretch_passes
    tearing.stiffness[:] = state.stiffness
    tearing.damping[:] = state.damping
    tearing.write(p)
    p.rest_lengths[:] = state.rest_lengths
    p.mass[:] = state.mass
    p.inv_mass[:] = state.inv_mass
    p.gravity[:] = state.gravity
    p.drag[0] = state.drag
    model.gravity_on, model.drag_on = state.gravity_on, state.drag_on
    model.forces[:] = [force for force, _ in state.forces]
    for force, attributes in state.forces:
        vars(force).update(_thawed_value(attributes))
    model.cg_tolerance = state.cg_tolerance
    model.cg_max_iterations = state.cg_max_iterations
    if state.dt != sim.dt:  # the setters check stability: only on a change
        sim.dt = state.dt
    sim.substeps = state.substeps
    current = sim.contacts
    if len(current) != len(state.contacts) or any(
            kept is not now for kept, now in zip(state.contacts, current)):
        sim.contacts = state.contacts  # packed again only on a change (meshes are costly)
    sim.max_speed = state.max_speed
    sim.self_collision = state.self_collision
    sim.thickness = state.thickness
    sim.self_friction = state.self_friction
    if state.integrator != sim.integrator:
        sim.integrator = state.integrator
    integrator = sim._integrator
    integrator.load_warm(_thawed_value(state.warm))
    integrator.stats = dataclasses.replace(state.stats)
    sim._changed(Changed.ALL)
    sim._refresh_fixed()
    sim._ledger = None if state.energy is None else EnergyLedger(sim, state.energy)
    # the health check starts again from the restored state (module docstring)
    sim._ring.clear()
    sim._ring.save(sim._x, sim._v, state.time, state.step_count)
    sim._summarised = False
    sim._rebase_due = True


__all__ = ["SimState", "capture", "restore", "check_compatible", "history_nbytes"]
