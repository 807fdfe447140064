"""Simulation: the changing state of a SpringSystem and the step loop around it.

The static model (a :class:`SpringSystem`) is copied once into flat arrays in the
simulation's dtype (a state.Model: springs, Params, attached forces); each step hands
the State to the chosen integrator (an object of integrators/, one per name, made on
first use and kept, so switching back keeps its scratch), then moves a grabbed
particle, then enforces contacts. Everything per particle and per spring runs in numba
kernels; the Python loop is over steps.

Forces: every simulation has the default parts springs + dampers, gravity and drag
(forces.DEFAULT_FORCES); ``add_force`` attaches any :class:`Force` at run time and
``remove_force`` takes one off again (gravity and drag too; the springs stay).
Parameters are edited with the set_* methods, which notify the integrators; the
stiffness, damping, masses and rest_lengths properties are read-only views.

Divergence (docs/divergence.md): every step reports the largest particle speed (NaN
once any velocity or position is not finite); every ``CHECK_EVERY`` steps a :class:`~ropesim.engine.health.HealthCheck` looks for a
non-finite state, an overstretched spring, an energy runaway and a particle crossing
half the scene in one step, and a healthy state is kept in a ring of checkpoints every
``CHECKPOINT_EVERY`` steps. A failed check, a non-finite state or a speed above
``max_speed`` stops the run with :class:`SimulationDiverged`: the state goes back to the
newest checkpoint that later checks confirmed, and the error carries the reason and
advice that names only integrators the situation does not rule out. No public call
returns with a NaN or inf in ``positions`` or ``velocities``.

Writable views: ``positions`` and ``velocities`` are the live state: writing them moves
particles (a pinned one stays at its new place; a pinned or grabbed particle's velocity
is overwritten by the next step). The next ``step`` compares the state with a summary
taken when the property handed the view out: a non-finite write raises
SimulationDiverged and restores the newest checkpoint; a finite one becomes the health
check's new reference (so lifting a cloth 50 m is not an energy runaway). A write
through a view kept from before the last step is not compared: a non-finite value is
still caught by the step's own report, but a finite one counts as motion. ``masses``,
``stiffness``, ``damping`` and ``rest_lengths`` are read-only views: the set_* methods
change them (and update the inverse masses and the integrators).

Every argument, setting and setter is validated where it enters (finite, in range, the
right type, fitting the simulation's dtype: SpringSystem.check_fits in the constructor,
model.check_fits_dtype in the setters); errors name the field, the value and what is
allowed.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import warnings
from typing import Any, Iterator, Sequence

import numpy as np

from . import impulses
from .collisions import DEFAULT_FRICTION, SelfCollision
from .collisions.self_contact import check_friction, check_switch, check_thickness
from .contacts import CONTACT_TYPES, Contact, ContactSet, moved
from .forces import DEFAULT_FORCES, Force, SpringForces, Wind, spring_strain
from .health import (
    CHECK_EVERY, CHECKPOINT_EVERY, CONFIRM_STEPS, RING_SIZE, Advice, CheckpointRing,
    HealthCheck, advise,
)
from .integrators import DEFAULT_INTEGRATOR, INTEGRATORS, Integrator, SolverStats, get_integrator
from .kernels.particles import state_summary
from .model import (
    SpringSystem, as_float_array, check_fits_dtype, check_number, masses_per_particle, show,
    spring_coefficients,
)
from .stability import StabilityGauge, dt_warning
from .state import Changed, Model, Params, State, kinetic_energy
from . import energy_budget, snapshot, tearing
from .topology import Topology, TopologyEditing

#: most steps one ``step(n)`` call takes (call again to go on)
MAX_STEPS_PER_CALL = 10**9
#: most substeps per frame and CG iterations per implicit step
MAX_SUBSTEPS = 100_000
MAX_CG_ITERATIONS = 1_000_000
#: a grab target farther than this many scene sizes (the initial bounding-box diagonal,
#: at least 1 m) from the scene's initial centre is pulled back onto that sphere
GRAB_REACH = 1000.0


@dataclasses.dataclass(eq=False, repr=False)
class SimulationDiverged(RuntimeError):
    """The state became non-finite or ran away; a healthy earlier state was kept.

    Attributes: ``step`` and ``time`` (s), the first step that is not kept (the run is
    taken to have diverged from there: the kept state is that of step ``step - 1``);
    ``detected_step``, the step at which a check caught it (default ``step``);
    ``integrator``, ``dt`` (s), ``reason`` (the criterion and its numbers) and ``advice``
    (a health.Advice: what to try instead, never the integrator that failed).
    """

    step: int
    time: float
    integrator: str
    dt: float
    reason: str
    advice: Advice | None = None
    detected_step: int | None = None

    def __post_init__(self) -> None:
        if self.detected_step is None:
            self.detected_step = self.step
        kept = (f"the state of step {self.step - 1} (t = {self.time - self.dt:.4f} s) is kept"
                if self.step > 1 else "the initial state is kept")
        tip = ("" if self.advice is None else
               f" Try a smaller dt or another integrator: {self.advice.text}")
        super().__init__(
            f"simulation diverged with integrator {self.integrator} and dt = {self.dt:g} s, "
            f"caught at step {self.detected_step}: {self.reason}; {kept}.{tip}"
        )


def _forwarded(path: str, doc: str) -> property:
    """A read-only property whose value is ``self.<path>`` (a dotted attribute path)."""
    return property(operator.attrgetter(path), doc=doc)


def _read_only(array: np.ndarray) -> np.ndarray:
    """A view of array that cannot be written through (it still shows every change)."""
    view = array.view()
    view.flags.writeable = False
    return view


def _positive(value: Any, name: str, unit: str) -> float:
    """A finite number > 0 (not a bool or a string) as a float."""
    number = check_number(value, name, unit)
    if not number > 0:
        raise ValueError(f"{name}: must be a finite number > 0 {unit}, got {show(value)}")
    return number


def _count(value: Any, name: str, minimum: int, maximum: int) -> int:
    """An integer (an int, or a float with an integer value) in minimum..maximum."""
    if type(value) is int and minimum <= value <= maximum:  # the common case, on every step
        return value
    allowed = f"an integer in {minimum}..{maximum:g}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name}: expected {allowed}, got {show(value)}")
    if not (math.isfinite(value) and value == math.floor(value) and minimum <= value <= maximum):
        raise ValueError(f"{name}: expected {allowed}, got {show(value)}")
    return int(value)


class Simulation(TopologyEditing):
    """A running mass-spring simulation.

    Parameters
    ----------
    system : the static model to simulate (not modified).
    dt : time step, s.
    gravity : acceleration (gx, gy, gz), m/s^2. Planar systems need gz = 0.
    integrator : one of ``INTEGRATORS`` (changeable later, live, by name).
    drag : global velocity damping, 1/s: v *= exp(-drag * dt) each step.
    contacts : a Ground, Sphere, Box, Capsule or Mesh obstacle, or a sequence of them (their
        centre + radius must fit the dtype).
    substeps : steps per rendered frame, for the viewer and video output (1..MAX_SUBSTEPS).
    dtype : np.float64 (default, accurate) or np.float32 (faster, half the memory).
    max_speed : m/s (> 0); a faster particle is treated as a diverged simulation (on
        every step, besides the health check every CHECK_EVERY steps).
    grab_follow_time : s; a grabbed particle closes the gap to its target with this
        time constant, so its velocity follows the mouse smoothly across substeps.
    cg_tolerance, cg_max_iterations : stopping rule of the implicit integrators' conjugate
        gradient (relative residual |r| / |rhs|). Momentum is conserved to about the
        tolerance times the impulse of a step. The default 1e-4 keeps the solver's error
        far below the integrator's own: on the stiff 64 x 64 cloth at dt = 1/60 s,
        backward Euler's positions after 1 s differ by < 1 mm from a 1e-10 solve, and by
        ~0.6 m from a reference at dt = 1/3400 s (docs/performance.md); lower it for
        tight conservation checks.
    grid_kernels : use the structured-grid kernels (grid sweep, multigrid solve) when the
        springs form a grid (default); False runs the spring-list kernels, the same
        physics to rounding (a switch for comparisons and tests).
    self_collision, thickness, self_friction : self-collision on/off, the distance (m,
        > 0) non-neighbour particles and rope segments keep apart (None: 0.8 x the
        particle spacing) and the Coulomb friction between layers (docs/collisions.md).
    """

    def __init__(
        self,
        system: SpringSystem,
        dt: float = 0.005,
        gravity: Sequence[float] = (0.0, -9.81, 0.0),
        integrator: str = DEFAULT_INTEGRATOR,
        drag: float = 0.0,
        contacts: Sequence[Contact] = (),
        substeps: int = 1,
        dtype: Any = np.float64,
        max_speed: float = 1e4,
        grab_follow_time: float = 1.0 / 60.0,
        cg_tolerance: float = 1e-4,
        cg_max_iterations: int = 200,
        grid_kernels: bool = True,
        self_collision: bool = False,
        thickness: float | None = None,
        self_friction: float = DEFAULT_FRICTION,
    ):
        if not isinstance(system, SpringSystem):
            raise TypeError(f"system: expected a SpringSystem, got {type(system).__name__}")
        try:
            valid = dtype is not None and np.dtype(dtype) in (np.float32, np.float64)
        except (TypeError, ValueError, SyntaxError):  # what numpy raises for what it cannot read
            valid = False
        if not valid:
            raise ValueError(f"dtype: allowed float32 or float64, got {show(dtype)}")
        dtype = np.dtype(dtype)
        if not isinstance(grid_kernels, (bool, np.bool_)):
            raise TypeError(f"grid_kernels: expected True or False, got {show(grid_kernels)}")
        system.check_fits(dtype)
        self.system = system
        self.dtype = dtype
        self.planar = system.planar
        self.max_speed = max_speed
        self.grab_follow_time = grab_follow_time

        n = system.n_particles
        self._x = np.ascontiguousarray(system.positions3(), dtype=dtype)
        self._v = np.ascontiguousarray(system.velocities3(), dtype=dtype)
        self._state = State(self._x, self._v)
        self._pinned = system.pinned.copy()
        self._fixed = self._pinned.astype(np.uint8)
        self._v[self._pinned] = 0.0
        mass = system.mass.astype(dtype)
        self._params = Params(
            rest_lengths=system.rest_lengths.astype(dtype),
            stiffness=system.stiffness.astype(dtype), damping=system.damping.astype(dtype),
            mass=mass, inv_mass=(1.0 / mass).astype(dtype), fixed=self._fixed,
            gravity=np.zeros(3, dtype), drag=np.zeros(1),
        )
        spring_a = np.ascontiguousarray(system.springs[:, 0], dtype=np.int32)
        spring_b = np.ascontiguousarray(system.springs[:, 1], dtype=np.int32)
        self._model = Model(spring_a, spring_b, self._params, system.grid_shape,
                            bool(grid_kernels),
                            np.ascontiguousarray(system.positions3(), dtype=np.float64))
        self._springs, self._gravity, self._drag = (
            part(spring_a, spring_b) if part is SpringForces else part()
            for part in DEFAULT_FORCES)
        self._views = {name: _read_only(getattr(self._params, name))
                       for name in ("stiffness", "damping", "mass", "rest_lengths")}
        self._integrators: dict[str, Integrator] = {}
        self._strain = np.zeros(system.n_springs, dtype)
        self._grabbed: int | None = None
        self._grab_target = np.zeros(3)
        start = system.positions3()
        self._scene_centre = 0.5 * (start.min(axis=0) + start.max(axis=0))
        self._scene_size = max(float(np.linalg.norm(np.ptp(start, axis=0))), 1.0)
        self._stable_dt: float | None = system.stable_dt()  # None: parameters edited
        self._warned_dt = False
        self._gauge: StabilityGauge | None = None  # made on the first dt check
        # state_summary of the state as the last step left it, taken when a view of the
        # state is handed out (``_summarised``), compared by the next step
        self._summarised = False
        self._summary = np.zeros(3)
        self._scan = np.zeros(3)
        self._tearing = tearing.Tearing(self._params)
        self._topology = Topology(system)  # live spring edits (topology.py)
        self._max_stretch: float | None = None
        self.stretch_passes = 0  # Provot passes of the last step (0: limit off)
        self._ledger: energy_budget.EnergyLedger | None = None  # track_energy off
        self._self_collision = SelfCollision(system, dtype, self_collision, thickness,
                                             self_friction)

        self.dt = dt
        self.gravity = gravity
        self.integrator = integrator
        self.drag = drag
        self.contacts = contacts
        self.substeps = substeps
        self.cg_tolerance = cg_tolerance
        self.cg_max_iterations = cg_max_iterations
        self._health = HealthCheck(self._x, self._v, spring_a, spring_b,
                                   self._params.rest_lengths, self._params.stiffness,
                                   self._params.damping, self._params.mass,
                                   self._params.gravity, self._dt)
        self._watch_energy()
        self._ring = CheckpointRing(n, dtype, RING_SIZE)
        self._ring.save(self._x, self._v, 0.0, 0)
        self._rebase_due = False
        # an edit moved a surface that particles touch (a collider's margin, the
        # self-collision thickness or switch): the next step's contact pass pushes them
        # out at once, and the state after it is the health check's new reference
        self._push_out_due = False
        assert self._x.shape == (n, 3)

    # --- settings (validated, live) ----------------------------------------------------
    time = _forwarded("_state.time", "Simulated time, s.")
    step_count = _forwarded("_state.step_count",
                            "Steps taken since the start (or the last reset).")

    @property
    def state(self) -> State:
        """The State (x, v, time, step_count) the integrators advance (live; its arrays
        are the writable views ``positions`` and ``velocities``)."""
        self._summarise()
        return self._state

    @property
    def params(self) -> Params:
        """The live Params bundle (read it; edit through the set_* methods)."""
        return self._params

    @property
    def dt(self) -> float:
        """Time step, s."""
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        dt = _positive(value, "dt", "s")
        check_fits_dtype(dt, self.dtype, "dt", "s")
        self._dt = dt
        if hasattr(self, "_health"):
            self._health.dt = dt
        self._warn_if_unstable()

    @property
    def max_speed(self) -> float:
        """m/s; a particle faster than this is a diverged simulation (> 0)."""
        return self._max_speed

    @max_speed.setter
    def max_speed(self, value: float) -> None:
        self._max_speed = _positive(value, "max_speed", "m/s")
        self._max_speed_sq = self._max_speed * self._max_speed

    @property
    def grab_follow_time(self) -> float:
        """s (> 0): a grabbed particle closes the gap to its target with this time
        constant."""
        return self._grab_follow_time

    @grab_follow_time.setter
    def grab_follow_time(self, value: float) -> None:
        self._grab_follow_time = _positive(value, "grab_follow_time", "s")

    def stable_dt(self) -> float:
        """The explicit integrators' stable-step bound (s) at the current stiffness,
        masses and pins (SpringSystem.stable_dt of the live parameters)."""
        if self._stable_dt is None:
            p = self._params
            live = dataclasses.replace(
                self.system, stiffness=p.stiffness.astype(np.float64),
                mass=p.mass.astype(np.float64), pinned=self._pinned.copy(),
                rest_lengths=p.rest_lengths.astype(np.float64), young_modulus=None)
            self._stable_dt = live.stable_dt()
        return self._stable_dt

    def _warn_if_unstable(self) -> None:
        """Warn once when an explicit integrator's dt is past the stability gauge's limit
        (stability.dt_warning)."""
        integrator = getattr(self, "_integrator", None)
        if self._warned_dt or integrator is None or integrator.unconditionally_stable:
            return
        if self._gauge is None:
            self._gauge = StabilityGauge(self)
        text = dt_warning(self, self._gauge)
        if text is not None:
            self._warned_dt = True
            stable = ", ".join(name for name, cls in INTEGRATORS.items()
                               if cls.unconditionally_stable)
            warnings.warn(f"{text}. Use a smaller dt or an implicit integrator ({stable}).",
                          RuntimeWarning, stacklevel=3)

    @property
    def gravity(self) -> np.ndarray:
        """Gravitational acceleration (3,), m/s^2 (a copy; assign to change it)."""
        return self._params.gravity.astype(np.float64)

    @gravity.setter
    def gravity(self, value: Sequence[float]) -> None:
        g = as_float_array(value, "gravity", "m/s^2").ravel()
        if g.shape == (2,):
            g = np.append(g, 0.0)
        if g.shape != (3,):
            raise ValueError(f"gravity: expected 2 or 3 finite numbers (m/s^2), got {show(value)}")
        check_fits_dtype(g, self.dtype, "gravity", "m/s^2")
        if self.planar and g[2] != 0.0:
            raise ValueError("gravity: a planar (2-D) system needs gravity z = 0")
        self._params.gravity[:] = g
        self._rebase_due = True

    @property
    def drag(self) -> float:
        """Global drag, 1/s."""
        return float(self._params.drag[0])

    @drag.setter
    def drag(self, value: float) -> None:
        drag = check_number(value, "drag", "1/s", minimum=0.0)
        check_fits_dtype(drag, self.dtype, "drag", "1/s")
        self._params.drag[0] = drag

    @property
    def integrator(self) -> str:
        """Name of the current integrator; assign a name from INTEGRATORS to switch live."""
        return self._integrator.name

    @integrator.setter
    def integrator(self, name: str) -> None:
        cls = get_integrator(name)
        current = getattr(self, "_integrator", None)
        if current is not None:
            current.finish()
        instance = self._integrators.get(name)
        if instance is None or type(instance) is not cls:  # re-registered under the name
            instance = self._integrators[name] = cls(self._model)
        self._integrator = instance
        self._warn_if_unstable()

    @property
    def integrator_object(self) -> Integrator:
        """The current Integrator instance (its scratch, stats and kernel paths)."""
        return self._integrator

    unconditionally_stable = _forwarded(
        "_integrator.unconditionally_stable",
        "Whether the current integrator is stable at any dt (no explicit step limit).")
    has_solver_stats = _forwarded(
        "_integrator.has_solver_stats",
        "Whether the current integrator reports solver_stats (iterations, residual).")

    @property
    def substeps(self) -> int:
        """Simulation steps per rendered frame."""
        return self._substeps

    @substeps.setter
    def substeps(self, value: int) -> None:
        self._substeps = _count(value, "substeps", 1, MAX_SUBSTEPS)

    @property
    def contacts(self) -> tuple[Contact, ...]:
        """The obstacles: Ground, Sphere, Box, Capsule, Mesh (assign one, or a sequence)."""
        return self._contacts

    @contacts.setter
    def contacts(self, value: Contact | Sequence[Contact]) -> None:
        if isinstance(value, CONTACT_TYPES):
            value = (value,)
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise TypeError(f"contacts: expected a Ground, Sphere, Box, Capsule or Mesh or a "
                            f"list of them, got {show(value)}")
        value = tuple(value)
        packed = ContactSet(value, self.n_particles, self.dtype, self.system, self._x,
                            self._state.time)
        grounds, spheres = packed.grounds, packed.spheres
        # a contact puts particles at centre + radius or at the ground's height
        reach = np.abs(spheres[:, :3]).max(axis=1) + spheres[:, 3] if len(spheres) else []
        check_fits_dtype(reach, self.dtype, "contacts (sphere |centre| + radius)", "m")
        check_fits_dtype(grounds[:, 0], self.dtype, "contacts (ground height)", "m")
        check_fits_dtype(packed.reach, self.dtype, "contacts (collider extent)", "m")
        self._contact_set = packed
        self._contacts = value
        if hasattr(self, "_health"):
            self._watch_energy()
            self._rebase_due = self._push_out_due = True

    def move_collider(self, i: int, over: float | None = None, **changes: Any) -> None:
        """Move contact i (a Box, Capsule or Mesh) now: any of its fields, e.g. center=,
        rotation= (deg), start=, end=, velocity= (m/s), spin= (deg/s); it stands at the new
        pose from the current time on (contacts.moved). The pose change is motion over
        the next step, or with ``over`` (s) at a constant rate over the steps of the next
        ``over`` s (no fields: the rest of a move under way, re-timed)."""
        index = _count(i, "collider index", 0, len(self._contacts) - 1)
        over = 0.0 if over is None else check_number(over, "move_collider.over", "s",
                                                        minimum=0.0)
        collider = moved(self._contacts[index], self._state.time, changes)
        # the pose change is carried out over the next step(s) (contacts.ContactSet.repose)
        self._contact_set.repose(index, self._contacts[index], collider, self._state.time,
                                 over)
        self._contacts = self._contacts[:index] + (collider,) + self._contacts[index + 1:]
        self._watch_energy()
        self._rebase_due = True  # a collider put onto the cloth gives it energy

    @property
    def energy_checked(self) -> bool:
        """Whether the divergence check's energy criterion is on: off while attached
        forces or moving colliders do work it cannot see (docs/divergence.md)."""
        return self._health.energy_check

    def _watch_energy(self) -> None:
        """Attached forces and moving colliders do work the energy criterion cannot see
        (docs/divergence.md): it is off while any acts."""
        self._health.energy_check = not self._model.forces and not self._contact_set.moving

    @property
    def cg_tolerance(self) -> float:
        """Relative residual at which the implicit integrators' CG stops."""
        return self._model.cg_tolerance

    @cg_tolerance.setter
    def cg_tolerance(self, value: float) -> None:
        self._model.cg_tolerance = check_number(value, "cg_tolerance", "(relative residual)",
                                                minimum=0.0, strict=True, maximum=1.0)

    @property
    def cg_max_iterations(self) -> int:
        return self._model.cg_max_iterations

    @cg_max_iterations.setter
    def cg_max_iterations(self, value: int) -> None:
        self._model.cg_max_iterations = _count(value, "cg_max_iterations", 1, MAX_CG_ITERATIONS)

    @property
    def solver_stats(self) -> SolverStats:
        """CG iterations and residual of the last implicit step, fallback count (the
        current integrator's; each integrator keeps its own)."""
        return self._integrator.stats

    # --- state ---------------------------------------------------------------------------
    @property
    def positions(self) -> np.ndarray:
        """(n, 3) positions, m: a writable view of the live state. A write moves the
        particles (a pinned one stays at its new place); the next step checks what was
        written (see the module docstring)."""
        self._summarise()
        return self._x

    @property
    def velocities(self) -> np.ndarray:
        """(n, 3) velocities, m/s: a writable view of the live state (a pinned or
        grabbed particle's velocity is overwritten by the next step)."""
        self._summarise()
        return self._v

    @property
    def n_particles(self) -> int:
        return self._x.shape[0]

    @property
    def n_springs(self) -> int:
        return self._model.n_springs

    @property
    def masses(self) -> np.ndarray:
        """(n,) particle masses, kg: a live read-only view (change them with set_mass)."""
        return self._views["mass"]

    @property
    def stiffness(self) -> np.ndarray:
        """(m,) spring stiffness, N/m: a live read-only view (change with set_stiffness)."""
        return self._views["stiffness"]

    @property
    def damping(self) -> np.ndarray:
        """(m,) spring damping, N*s/m: a live read-only view (change with set_damping)."""
        return self._views["damping"]

    @property
    def rest_lengths(self) -> np.ndarray:
        """(m,) spring rest lengths, m: a live read-only view (change with
        set_rest_lengths)."""
        return self._views["rest_lengths"]

    @property
    def pinned(self) -> np.ndarray:
        """(n,) bool: particles currently pinned (a copy)."""
        return self._pinned.copy()

    @property
    def grabbed(self) -> int | None:
        return self._grabbed

    # --- live parameter edits ----------------------------------------------------------------
    # The only way to change parameters: each set_* validates, writes the Params arrays
    # and tells every integrator made so far (notify_model_changed) what changed.
    def _changed(self, flags: Changed) -> None:
        for integrator in self._integrators.values():
            integrator.notify_model_changed(flags)
        if flags & (Changed.STIFFNESS | Changed.MASS | Changed.FIXED):
            self._stable_dt = None
        if flags & Changed.FORCES:
            self._watch_energy()
            self._health.gravity = self._model.gravity()
        self._rebase_due = True  # the health check's energy reference starts again

    def _spring_values(self, value: Any, name: str, unit: str) -> np.ndarray:
        coeff = spring_coefficients(value, self.n_springs, name, unit)
        check_fits_dtype(coeff, self.dtype, name, unit)
        return coeff

    def set_stiffness(self, value: Any) -> None:
        """Set every spring's stiffness (scalar or (m,) N/m), keeping the state."""
        self._tearing.stiffness[:] = self._spring_values(value, "stiffness", "N/m")
        self._tearing.write(self._params)  # broken springs stay at 0
        self._changed(Changed.STIFFNESS)

    def set_damping(self, value: Any) -> None:
        """Set every spring's damping (scalar or (m,) N*s/m), keeping the state."""
        self._tearing.damping[:] = self._spring_values(value, "damping", "N*s/m")
        self._tearing.write(self._params)  # broken springs stay at 0
        self._changed(Changed.DAMPING)

    def set_rest_lengths(self, value: Any) -> None:
        """Set every spring's rest length (scalar or (m,) m, >= 0), keeping the state."""
        self._params.rest_lengths[:] = self._spring_values(value, "rest_lengths", "m")
        self._changed(Changed.REST_LENGTHS)

    def set_mass(self, value: Any) -> None:
        """Set particle masses (scalar or (n,) kg), keeping the state."""
        m = masses_per_particle(value, self.n_particles)
        check_fits_dtype(m, self.dtype, "mass", "kg", inverse=True)
        self._params.mass[:] = m
        self._params.inv_mass[:] = 1.0 / m
        self._changed(Changed.MASS)

    # --- force parts ---------------------------------------------------------------------------
    def force_parts(self) -> tuple[Force, ...]:
        """The acting parts in order: springs, gravity and drag (unless removed), then the
        attached forces."""
        builtin = [self._springs]
        builtin += [self._gravity] if self._model.gravity_on else []
        builtin += [self._drag] if self._model.drag_on else []
        return tuple(builtin) + tuple(self._model.forces)

    def add_force(self, force: Force) -> Force:
        """Attach a Force (applied by every integrator from the next step on, also after
        an integrator switch); re-adding a removed Gravity or Drag part restores it.
        Returns the force, to remove it later."""
        if not isinstance(force, Force):
            raise TypeError(f"force: expected a ropesim Force, got {type(force).__name__}")
        if force in self.force_parts():
            raise ValueError(f"force: {force!r} is already attached to this simulation")
        if force is self._gravity:
            self._model.gravity_on = True
        elif force is self._drag:
            self._model.drag_on = True
        elif force.fused:
            raise ValueError(f"force: {force!r} is a default part of another simulation; "
                             "allowed: a new Force, or this simulation's removed gravity/drag")
        else:
            if isinstance(force, Wind):  # wind acts on this system's triangles or springs
                force.bind(self.system.triangles, self._model.spring_a, self._model.spring_b,
                           self.planar, self._tearing.broken)
            self._model.forces.append(force)
        self._changed(Changed.FORCES)
        return force

    def remove_force(self, force: Force) -> None:
        """Detach a force: an attached one, or the gravity or drag part (the springs stay:
        set their stiffness to zero instead)."""
        if force is self._gravity:
            self._model.gravity_on = False
        elif force is self._drag:
            self._model.drag_on = False
        elif any(force is f for f in self._model.forces):
            self._model.forces[:] = [f for f in self._model.forces if f is not force]
        else:
            allowed = ", ".join(repr(f) for f in self.force_parts()[1:]) or "none"
            raise ValueError(f"force: {force!r} is not a removable part of this simulation; "
                             f"allowed: {allowed}")
        self._changed(Changed.FORCES)

    # --- stepping ----------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        """Advance n steps of dt (0 <= n <= MAX_STEPS_PER_CALL). Raises SimulationDiverged
        with the state put back to a healthy checkpoint (see the module docstring)."""
        count = _count(n, "n (number of steps)", 0, MAX_STEPS_PER_CALL)
        if self._summarised:
            self._look_for_writes()
        if self._health.follow_compliance(getattr(self._integrator, "compliance", None)):
            self._rebase_due = True  # the springs' model changed (XPBD's compliance)
        if self._rebase_due:
            self._rebase()
        if self._ledger is not None:  # the energy budget: changes since the last step
            self._ledger.between_steps(self)
        for _ in range(count):
            max_speed_sq = self._advance()
            if not max_speed_sq <= self._max_speed_sq:
                self._diverged(self._speed_reason(max_speed_sq))
            if self._push_out_due:  # an edit's push-out is done: the work it did counts
                self._push_out_due = False
                self._rebase()
            if self._grabbed is not None:  # the grab's work, step by step
                self._health.follow_grab(self._x, self._v, self._grabbed)
            steps = self._state.step_count
            if steps % CHECK_EVERY == 0:
                reason = self._health.check(self._x, self._v, self._grabbed)
                if reason is not None:
                    self._diverged(reason)
                if steps % CHECKPOINT_EVERY == 0:
                    self._ring.save(self._x, self._v, self._state.time, steps)

    def _rebase(self) -> None:
        """The state now is the health check's reference (and the grab's work counts
        from it)."""
        self._health.rebase(self._x, self._v)
        if self._grabbed is not None:
            self._health.start_grab(self._x, self._v, self._grabbed)
        self._rebase_due = False

    def step_chunks(self, n: int, every: int) -> Iterator[int]:
        """Take n steps in calls of at most ``every`` steps, yielding the steps done
        after each call (for sampling, progress or a check between them)."""
        n = _count(n, "n (number of steps)", 0, MAX_STEPS_PER_CALL)
        every = _count(every, "every", 1, MAX_STEPS_PER_CALL)
        done = 0
        while done < n:
            chunk = min(every, n - done)
            self.step(chunk)
            done += chunk
            yield done

    def _summarise(self) -> None:
        """A view of the state is handed out: summarise the state as the last step left
        it (once per step), so that the next step can tell whether it was written."""
        if not self._summarised:
            state_summary(self._x, self._v, self._summary)
            self._summarised = True

    def _look_for_writes(self) -> None:
        """Compare the state with the summary taken when a view was handed out: a
        non-finite write is refused (back to the newest checkpoint), any other write
        becomes the health check's reference."""
        self._summarised = False
        state_summary(self._x, self._v, self._scan)
        if self._scan[0] >= 0:
            self._diverged(self._non_finite_reason(int(self._scan[0]), "written before the step"),
                           confirmed=False)
        if not np.array_equal(self._scan[1:], self._summary[1:]):
            self._rebase_due = True

    def _non_finite_reason(self, i: int, when: str) -> str:
        return (f"non-finite state {when}: particle {i} has position {self._x[i].tolist()} m "
                f"and velocity {self._v[i].tolist()} m/s")

    def _speed_reason(self, max_speed_sq: float) -> str:
        if math.isfinite(max_speed_sq):
            return (f"a particle reached {math.sqrt(max_speed_sq):.3g} m/s, above "
                    f"max_speed = {self._max_speed:g} m/s")
        state_summary(self._x, self._v, self._scan)
        return self._non_finite_reason(int(self._scan[0]), "after the step")

    def _advance(self) -> float:
        """One step without the divergence check; returns the max squared speed."""
        dt = self._dt
        if self._contacts:  # the swept colliders need the positions before the step
            self._contact_set.remember(self._x)
        ledger = self._ledger  # the energy budget's stages (energy_budget.py), if tracked
        if ledger is not None:
            ledger.begin(self)
        max_speed_sq = self._integrator.step(self._state, dt)
        if self._grabbed is not None:
            self._move_grabbed(dt)
        if ledger is not None:
            ledger.after_motion(self)
        self._tear_and_limit(dt)
        if ledger is not None:
            ledger.after_tearing(self)
        if self._self_collision.enabled:
            self._self_collision.apply(self._x, self._v, self._params.inv_mass, self._fixed)
        if self._contacts:
            self._contact_set.project(self._x, self._v, self._params.inv_mass, self._fixed,
                                      self._state.time, dt, self.planar)
        if ledger is not None:
            ledger.end(self)
        self._state.step_count += 1
        self._state.time += dt
        return max_speed_sq

    def _move_grabbed(self, dt: float) -> None:
        i = self._grabbed
        follow = max(self._grab_follow_time, dt)
        velocity = (self._grab_target - self._x[i]) / follow
        self._v[i] = velocity
        self._x[i] += velocity * dt

    def advice(self) -> Advice:
        """What to try if the current integrator diverges now (health.advise): never the
        current integrator, and never one the situation rules out."""
        flags = {name: cls.unconditionally_stable for name, cls in INTEGRATORS.items()}
        return advise(self.integrator, self._dt, self.stable_dt(), flags)

    def _diverged(self, reason: str, confirmed: bool = True) -> None:
        """Restore the newest healthy checkpoint (``confirmed``: the newest one that the
        checks of health.CONFIRM_STEPS later steps passed) and raise SimulationDiverged."""
        detected = self._state.step_count
        self._integrator.finish()
        kept = (self._ring.newest_healthy(detected, CONFIRM_STEPS) if confirmed
                else self._ring.newest())
        self._x[:] = kept.positions
        self._v[:] = kept.velocities
        self._state.time, self._state.step_count = kept.time, kept.step
        # the checkpoints after the kept one belong to the diverging run
        self._ring.clear()
        self._ring.save(self._x, self._v, kept.time, kept.step)
        self._summarised = False
        self._rebase_due = True
        advice = self.advice() if confirmed else None  # a write is not the integrator's
        raise SimulationDiverged(kept.step + 1, kept.time + self._dt, self.integrator,
                                 self._dt, reason, advice, detected)

    def reset(self) -> None:
        """Back to the system's initial state, pins and topology (topology.py); settings
        and parameters are kept."""
        self._reset_topology()
        self._x[:] = self.system.positions3()
        self._v[:] = self.system.velocities3()
        self._pinned[:] = self.system.pinned
        self._grabbed = None
        self._refresh_fixed()
        self._v[self._pinned] = 0.0
        self._state.time, self._state.step_count = 0.0, 0
        for integrator in self._integrators.values():
            integrator.stats = SolverStats()
        if self._tearing.restore():
            self._write_broken()
        self._ring.clear()
        self._ring.save(self._x, self._v, 0.0, 0)
        self._summarised = False
        self._rebase_due = True
        if self._ledger is not None:  # the energy budget starts again
            self._ledger = energy_budget.EnergyLedger(self)

    # --- snapshots (engine/snapshot.py) -------------------------------------------------------
    def get_state(self) -> snapshot.SimState:
        """Everything that determines the future, copied (a read-only SimState; its
        ``nbytes`` is its size in bytes): ``set_state`` goes back to it bit-exactly."""
        self._last_state = snapshot.capture(self, getattr(self, "_last_state", None))
        return self._last_state

    def set_state(self, state: snapshot.SimState) -> None:
        """Restore a get_state() of this simulation (or of one with the same particle and
        spring counts and dtype: else ValueError naming the field)."""
        snapshot.restore(self, state)

    # --- energy budget (engine/energy_budget.py) -------------------------------------------
    @property
    def track_energy(self) -> bool:
        """Whether the energy budget is kept (off by default: it costs about a step per
        step). Setting True starts it from the current state; False drops it."""
        return self._ledger is not None

    @track_energy.setter
    def track_energy(self, on: bool) -> None:
        self._ledger = energy_budget.ledger_for(self, on)

    def energy_budget(self) -> energy_budget.EnergyBudget:
        """Where the energy went since tracking began (J): energies, losses, inputs and
        their balance (energy_budget.EnergyBudget). Needs ``track_energy = True``."""
        if self._ledger is None:
            raise ValueError("energy_budget: track_energy is False; allowed: set "
                             "sim.track_energy = True first (the budget counts from then)")
        return self._ledger.budget(self)

    # --- interaction ---------------------------------------------------------------------------
    def _check_index(self, i: int) -> int:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) \
                or not 0 <= int(i) < self.n_particles:
            raise ValueError(f"particle: index must be in 0..{self.n_particles - 1}, "
                             f"got {show(i)}")
        return int(i)

    def _as_point(self, value: Sequence[float], name: str, unit: str) -> np.ndarray:
        p = as_float_array(value, name, unit).ravel()
        if p.shape == (2,):
            p = np.append(p, 0.0)
        if p.shape != (3,):
            raise ValueError(f"{name}: expected 2 or 3 finite numbers ({unit}), got {show(value)}")
        if self.planar:
            p[2] = 0.0
        return p

    def _refresh_fixed(self, rebase: bool = True) -> None:
        """Fixed flags from the pins and the grab; ``rebase``: the health check's energy
        reference starts again (a pin change; the grab's work is accounted for)."""
        self._fixed[:] = self._pinned
        if self._grabbed is not None:
            self._fixed[self._grabbed] = 1
        self._mark_removed_fixed()
        for integrator in self._integrators.values():
            integrator.notify_model_changed(Changed.FIXED)
        self._stable_dt = None
        self._rebase_due = self._rebase_due or rebase

    def grab_reach(self) -> tuple[np.ndarray, float]:
        """(centre (3,) m, radius m) of the sphere grab targets are kept in: the initial
        bounding box's centre, GRAB_REACH x its diagonal (at least 1 m)."""
        return self._scene_centre.copy(), GRAB_REACH * self._scene_size

    def grab(self, i: int, target: Sequence[float]) -> None:
        """Hold particle i and pull it toward target (2 or 3 finite numbers, m) each step;
        call again to move it. A target outside :meth:`grab_reach` is pulled back onto
        that sphere (so the state stays finite however far a pointer ray reaches)."""
        i = self._check_index(i)
        self._check_not_removed(i)
        point = self._as_point(target, "target", "m")
        centre, reach = self.grab_reach()
        offset = point - centre
        distance = float(np.linalg.norm(offset))
        if distance > reach:
            point = centre + offset * (reach / distance)
        if self._grabbed is not None and self._grabbed != i:
            self.release()
        self._grab_target = point
        if self._grabbed != i:
            self._grabbed = i
            self._refresh_fixed(rebase=False)
            self._health.start_grab(self._x, self._v, i)

    def release(self, velocity: Sequence[float] | None = None) -> None:
        """Let go of the grabbed particle. It keeps its velocity (a fling), or takes
        ``velocity`` (m/s, at most max_speed) if given; a pinned particle stays where it
        was dropped."""
        i = self._grabbed
        if i is None:
            return
        if velocity is not None:
            u = self._as_point(velocity, "velocity", "m/s")
            speed = float(np.linalg.norm(u))
            if speed > self._max_speed:
                raise ValueError(f"velocity: {speed:.3g} m/s is above max_speed = "
                                 f"{self._max_speed:g} m/s; allowed: a slower release")
            self._v[i] = u
            self._rebase_due = True
        if self._pinned[i]:
            self._v[i] = 0.0
        self._grabbed = None
        self._refresh_fixed(rebase=False)

    def pin(self, i: int) -> None:
        """Fix particle i where it is now."""
        i = self._check_index(i)
        self._pinned[i] = True
        self._v[i] = 0.0
        self._refresh_fixed()

    def unpin(self, i: int) -> None:
        i = self._check_index(i)
        self._pinned[i] = False
        self._refresh_fixed()

    def pluck(self, i: int, impulse: Sequence[float]) -> None:
        """Give particle i an impulse (3 numbers, N*s): its velocity changes by impulse / mass,
        so the momentum changes by exactly the impulse. Works while paused (the next step
        starts the wave); a pinned or grabbed particle cannot be plucked, and the new speed
        must stay within max_speed (so no inf enters a float32 state)."""
        index = impulses.check_pluckable(self, i, "particle")
        change = impulses.check_impulse(self, impulse) / float(self._params.mass[index])
        speed = float(np.linalg.norm(self._v[index].astype(np.float64) + change))
        if not speed <= self._max_speed:
            raise ValueError(f"impulse: {show(impulse)} N*s would move particle {index} at "
                             f"{speed:.3g} m/s; allowed: up to max_speed = "
                             f"{self._max_speed:g} m/s")
        impulses.pluck(self, i, impulse)

    def toggle_pin(self, i: int) -> bool:
        """Pin or unpin particle i; returns whether it is now pinned."""
        if self._pinned[self._check_index(i)]:
            self.unpin(i)
        else:
            self.pin(i)
        return bool(self._pinned[i])

    # --- tearing and strain limiting (the kernels are in tearing.py) ----------------------
    @property
    def break_strain(self) -> np.ndarray:
        """(m,) strain (l - L) / L past which each spring breaks at the end of a step
        (inf, the default: unbreakable). A copy; assign a scalar or (m,) values > 0."""
        return self._tearing.break_strain.copy()

    @break_strain.setter
    def break_strain(self, value: Any) -> None:
        self._tearing.set_break_strain(value)

    @property
    def broken(self) -> np.ndarray:
        """(m,) bool: springs broken so far (a live read-only view; reset() mends them).
        A broken spring has stiffness and damping 0, so it exerts no force."""
        return _read_only(self._tearing.broken)

    def break_springs(self, indices: Any) -> int:
        """Break the springs at ``indices`` now; returns how many were intact."""
        fresh = self._tearing.break_indices(indices)
        if fresh:
            self._write_broken()
        return fresh

    def restore_springs(self, indices: Any) -> int:
        """Mend the broken springs at ``indices`` (the viewer's undo of a cut); returns how
        many were broken. They get their stiffness (N/m) and damping (N*s/m) back."""
        mended = tearing.mend_springs(self._tearing, indices)
        if mended:
            self._write_broken()
        return mended

    @property
    def max_stretch(self) -> float | None:
        """Strain limit (0.1 = 10 %): after each step, springs stretched past it are
        shortened back (Provot); None (the default) = off."""
        return self._max_stretch

    @max_stretch.setter
    def max_stretch(self, value: float | None) -> None:
        self._max_stretch = tearing.stretch_limit(value)

    @property
    def crack_tip_factor(self) -> float:
        """Crack-tip weakening (tearing.py): for crack_tip_time s after a spring breaks by
        strain, the springs sharing a particle with it break at this times their break
        strain; in (0, 1], 1 (the default) = off."""
        return self._tearing.crack_tip_factor

    @crack_tip_factor.setter
    def crack_tip_factor(self, value: float) -> None:
        self._tearing.crack_tip_factor = tearing.crack_tip_setting(value, "crack_tip_factor")

    @property
    def crack_tip_time(self) -> float:
        """How long a crack tip's neighbours stay weakened, s (> 0; default 0.05)."""
        return self._tearing.crack_tip_time

    @crack_tip_time.setter
    def crack_tip_time(self, value: float) -> None:
        self._tearing.crack_tip_time = tearing.crack_tip_setting(value, "crack_tip_time")

    def _write_broken(self) -> None:
        """Broken springs to stiffness and damping 0 (user values kept), integrators told."""
        self._tearing.write(self._params)
        self._changed(Changed.STIFFNESS | Changed.DAMPING)

    def _tear_and_limit(self, dt: float) -> None:
        """The end-of-step tearing check, then the strain limit (order: tearing.py)."""
        model = self._model
        if self._tearing.breakable and self._tearing.check(
                self._x, model.spring_a, model.spring_b, self._params.rest_lengths,
                self._state.time + dt):
            self._write_broken()
        if self._max_stretch is not None:
            self.stretch_passes = tearing.limit_stretch(
                self._x, self._v, model.spring_a, model.spring_b,
                self._params.rest_lengths, self._params.inv_mass, self._fixed,
                self._tearing.broken, self._max_stretch, dt, tearing.MAX_STRETCH_PASSES,
                tearing.STRETCH_TOLERANCE)

    # --- self-collision (the kernels are in collisions/) ---------------------------------
    @property
    def self_collision(self) -> bool:
        """Whether non-neighbour particles and rope segments keep ``thickness`` apart."""
        return self._self_collision.enabled

    @self_collision.setter
    def self_collision(self, value: bool) -> None:
        self._self_collision.enabled = check_switch(value, "self_collision")
        self._push_out_due = True  # layers that overlap now are pushed apart

    @property
    def thickness(self) -> float:
        """Self-collision distance, m (> 0; None at construction picks the default)."""
        return self._self_collision.thickness

    @thickness.setter
    def thickness(self, value: float) -> None:
        self._self_collision.thickness = check_thickness(value, self.dtype)
        self._push_out_due = True  # layers closer than the new thickness are pushed apart

    @property
    def self_friction(self) -> float:
        """Coulomb friction coefficient between touching layers (0..10)."""
        return self._self_collision.friction

    @self_friction.setter
    def self_friction(self, value: float) -> None:
        self._self_collision.friction = check_friction(value)

    # --- diagnostics -------------------------------------------------------------------------
    def forces(self) -> np.ndarray:
        """(n, 3) spring + damping forces at the current state, N (no gravity, no
        attached forces: see force_parts for those)."""
        out = np.zeros((self.n_particles, 3), self.dtype)
        self._springs.accumulate(self._state, self._params, out)
        return out

    def kinetic_energy(self) -> float:
        """Sum of m/2 |v|^2, J."""
        return float(kinetic_energy(self._v, self._params.mass))

    def spring_energy(self) -> float:
        """Elastic energy of all springs, J."""
        return self._springs.potential_energy(self._state, self._params)

    def gravity_energy(self) -> float:
        """Gravitational potential -sum m g.x, J (zero at the origin; 0 with gravity
        removed)."""
        if not self._model.gravity_on:
            return 0.0
        return self._gravity.potential_energy(self._state, self._params)

    def attached_energy(self) -> float:
        """Potential energy of the attached forces that have one (Force.potential_energy),
        J; forces without a potential add nothing."""
        total = 0.0
        for force in self._model.forces:
            energy = force.potential_energy(self._state, self._params)
            if energy is not None:
                total += float(energy)
        return total

    def potential_energy(self) -> float:
        """Spring + gravity + attached potential energy, J."""
        return self.spring_energy() + self.gravity_energy() + self.attached_energy()

    def energy(self) -> float:
        """Total mechanical energy, J: kinetic + potential_energy(). Conserved by a
        conservative system (no damping, drag or non-potential attached force) up to the
        integrator's error."""
        return self.kinetic_energy() + self.potential_energy()

    def momentum(self) -> np.ndarray:
        """Linear momentum (3,), kg*m/s."""
        return (self._params.mass[:, None] * self._v).sum(axis=0, dtype=np.float64)

    def spring_strain(self, out: np.ndarray | None = None) -> np.ndarray:
        """(m,) signed strain (l - L) / L per spring: > 0 stretched, < 0 compressed, 0 for
        a broken spring."""
        if out is None:
            out = np.empty(self.n_springs, self.dtype)
        spring_strain(self._x, self._model.spring_a, self._model.spring_b,
                      self._params.rest_lengths, out)
        tearing.zero_broken(out, self._tearing.broken)
        return out

    def max_strain(self) -> float:
        """Largest |strain| over the intact springs (0 without springs)."""
        if self.n_springs == 0:
            return 0.0
        return float(np.abs(self.spring_strain(self._strain)).max())

    def diagnostics(self) -> dict[str, Any]:
        """Time, energies (J), momentum and max strain in one dict."""
        kinetic, spring, grav = self.kinetic_energy(), self.spring_energy(), self.gravity_energy()
        attached = self.attached_energy()
        return {
            "time": self.time, "step": self.step_count,
            "kinetic": kinetic, "spring": spring, "gravity": grav, "attached": attached,
            "total": kinetic + spring + grav + attached,
            "momentum": self.momentum(), "max_strain": self.max_strain(),
        }

    def __repr__(self) -> str:
        return (f"Simulation({self.system.name!r}, n={self.n_particles}, m={self.n_springs}, "
                f"integrator={self.integrator}, dt={self._dt:g}, t={self.time:.4f})")


__all__ = ["Simulation", "SimulationDiverged", "INTEGRATORS"]
