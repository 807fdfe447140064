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

Divergence: every step reports the largest particle speed. A non-finite state or a
speed above ``max_speed`` stops the run with :class:`SimulationDiverged`, and the
state is put back to the last finite step (it is re-run from a checkpoint taken every
few steps, so normal steps pay for no copy).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from . import impulses
from .contacts import Contact, pack_contacts, project_contacts
from .forces import DEFAULT_FORCES, Force, SpringForces, Wind, spring_strain
from .integrators import DEFAULT_INTEGRATOR, INTEGRATORS, Integrator, SolverStats, get_integrator
from .model import SpringSystem, masses_per_particle, spring_coefficients
from .state import Changed, Model, Params, State, kinetic_energy
from . import tearing

#: steps between state checkpoints used to recover the last finite state
CHECKPOINT_EVERY = 64


class SimulationDiverged(RuntimeError):
    """The state became non-finite or ran away; the last finite state was kept."""

    def __init__(self, step: int, time: float, integrator: str, dt: float, reason: str):
        self.step = step
        self.time = time
        self.integrator = integrator
        self.dt = dt
        self.reason = reason
        super().__init__(
            f"simulation diverged at step {step} (t = {time:.4f} s) with integrator "
            f"{integrator} and dt = {dt:g} s: {reason}. The last finite state is kept. "
            "Try a smaller dt (more substeps for the same frame time) or an implicit integrator "
            "(backward_euler, implicit_midpoint)."
        )


def _read_only(array: np.ndarray) -> np.ndarray:
    """A view of array that cannot be written through (it still shows every change)."""
    view = array.view()
    view.flags.writeable = False
    return view


def _positive(value: float, name: str, unit: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}: must be a finite number > 0 {unit}, got {value}")
    return value


class Simulation:
    """A running mass-spring simulation.

    Parameters
    ----------
    system : the static model to simulate (not modified).
    dt : time step, s.
    gravity : acceleration (gx, gy, gz), m/s^2. Planar systems need gz = 0.
    integrator : one of ``INTEGRATORS`` (changeable later, live, by name).
    drag : global velocity damping, 1/s: v *= exp(-drag * dt) each step.
    contacts : Ground and Sphere obstacles.
    substeps : steps per rendered frame, for the viewer and video output.
    dtype : np.float64 (default, accurate) or np.float32 (faster, half the memory).
    max_speed : m/s; a faster particle is treated as a diverged simulation.
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
    ):
        if not isinstance(system, SpringSystem):
            raise ValueError(f"system: expected a SpringSystem, got {type(system).__name__}")
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype: allowed float32 or float64, got {dtype}")
        self.system = system
        self.dtype = dtype
        self.planar = system.planar
        self.max_speed = _positive(max_speed, "max_speed", "m/s")
        self.grab_follow_time = _positive(grab_follow_time, "grab_follow_time", "s")

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
        self._model = Model(spring_a, spring_b, self._params, system.grid_shape, grid_kernels)
        self._springs, self._gravity, self._drag = (
            part(spring_a, spring_b) if part is SpringForces else part()
            for part in DEFAULT_FORCES)
        self._views = {name: _read_only(getattr(self._params, name))
                       for name in ("stiffness", "damping", "mass", "rest_lengths")}
        self._integrators: dict[str, Integrator] = {}
        self._x_checkpoint = np.empty_like(self._x)
        self._v_checkpoint = np.empty_like(self._v)
        self._strain = np.zeros(system.n_springs, dtype)
        self._grabbed: int | None = None
        self._grab_target = np.zeros(3)
        self._stable_dt = system.stable_dt()
        self._warned_dt = False
        self._tearing = tearing.Tearing(self._params)
        self._max_stretch: float | None = None
        self.stretch_passes = 0  # Provot passes of the last step (0: limit off)

        self.dt = dt
        self.gravity = gravity
        self.integrator = integrator
        self.drag = drag
        self.contacts = contacts
        self.substeps = substeps
        self.cg_tolerance = cg_tolerance
        self.cg_max_iterations = cg_max_iterations
        assert self._x.shape == (n, 3)

    # --- settings (validated, live) ----------------------------------------------------
    @property
    def time(self) -> float:
        """Simulated time, s."""
        return self._state.time

    @property
    def step_count(self) -> int:
        """Steps taken since the start (or the last reset)."""
        return self._state.step_count

    @property
    def state(self) -> State:
        """The State (x, v, time, step_count) the integrators advance (live)."""
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
        self._dt = _positive(value, "dt", "s")
        self._warn_if_unstable()

    def _warn_if_unstable(self) -> None:
        """Warn once when an explicit integrator's dt is clearly past the stable step."""
        integrator = getattr(self, "_integrator", None)
        if self._warned_dt or integrator is None or integrator.unconditionally_stable:
            return
        if self._dt > 2.0 * self._stable_dt:  # stable_dt is a bound, about 2x conservative
            self._warned_dt = True
            warnings.warn(
                f"dt = {self._dt:g} s is well above the stable step of this system for "
                f"explicit integrators (about {self._stable_dt:.3g}-{2 * self._stable_dt:.3g} s): "
                "it will likely diverge. Use a smaller dt or an implicit integrator "
                "(backward_euler, implicit_midpoint).",
                RuntimeWarning, stacklevel=3,
            )

    @property
    def gravity(self) -> np.ndarray:
        """Gravitational acceleration (3,), m/s^2 (a copy; assign to change it)."""
        return self._params.gravity.astype(np.float64)

    @gravity.setter
    def gravity(self, value: Sequence[float]) -> None:
        g = np.asarray(value, dtype=np.float64).ravel()
        if g.shape == (2,):
            g = np.append(g, 0.0)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity: expected 3 finite numbers (m/s^2), got {value!r}")
        if self.planar and g[2] != 0.0:
            raise ValueError("gravity: a planar (2-D) system needs gravity z = 0")
        self._params.gravity[:] = g

    @property
    def drag(self) -> float:
        """Global drag, 1/s."""
        return float(self._params.drag[0])

    @drag.setter
    def drag(self, value: float) -> None:
        value = float(value)
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"drag: must be a finite number >= 0 (1/s), got {value}")
        self._params.drag[0] = value

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

    @property
    def unconditionally_stable(self) -> bool:
        """Whether the current integrator is stable at any dt (no explicit step limit)."""
        return self._integrator.unconditionally_stable

    @property
    def has_solver_stats(self) -> bool:
        """Whether the current integrator reports solver_stats (iterations, residual)."""
        return self._integrator.has_solver_stats

    @property
    def substeps(self) -> int:
        """Simulation steps per rendered frame."""
        return self._substeps

    @substeps.setter
    def substeps(self, value: int) -> None:
        if isinstance(value, bool) or int(value) != value or int(value) < 1:
            raise ValueError(f"substeps: must be an integer >= 1, got {value!r}")
        self._substeps = int(value)

    @property
    def contacts(self) -> tuple[Contact, ...]:
        return self._contacts

    @contacts.setter
    def contacts(self, value: Sequence[Contact]) -> None:
        value = tuple(value)
        self._grounds, self._spheres = pack_contacts(value)
        self._contacts = value

    @property
    def cg_tolerance(self) -> float:
        """Relative residual at which the implicit integrators' CG stops."""
        return self._model.cg_tolerance

    @cg_tolerance.setter
    def cg_tolerance(self, value: float) -> None:
        self._model.cg_tolerance = _positive(value, "cg_tolerance", "(relative residual)")

    @property
    def cg_max_iterations(self) -> int:
        return self._model.cg_max_iterations

    @cg_max_iterations.setter
    def cg_max_iterations(self, value: int) -> None:
        if isinstance(value, bool) or int(value) != value or int(value) < 1:
            raise ValueError(f"cg_max_iterations: must be an integer >= 1, got {value!r}")
        self._model.cg_max_iterations = int(value)

    @property
    def solver_stats(self) -> SolverStats:
        """CG iterations and residual of the last implicit step, fallback count (the
        current integrator's; each integrator keeps its own)."""
        return self._integrator.stats

    # --- state ---------------------------------------------------------------------------
    @property
    def positions(self) -> np.ndarray:
        """(n, 3) positions, m: a writable view of the state."""
        return self._x

    @property
    def velocities(self) -> np.ndarray:
        """(n, 3) velocities, m/s: a writable view of the state."""
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

    def set_stiffness(self, value: Any) -> None:
        """Set every spring's stiffness (scalar or (m,) N/m), keeping the state."""
        self._tearing.stiffness[:] = spring_coefficients(value, self.n_springs, "stiffness",
                                                         "N/m")
        self._tearing.write(self._params)  # broken springs stay at 0
        self._changed(Changed.STIFFNESS)

    def set_damping(self, value: Any) -> None:
        """Set every spring's damping (scalar or (m,) N*s/m), keeping the state."""
        self._tearing.damping[:] = spring_coefficients(value, self.n_springs, "damping",
                                                       "N*s/m")
        self._tearing.write(self._params)  # broken springs stay at 0
        self._changed(Changed.DAMPING)

    def set_rest_lengths(self, value: Any) -> None:
        """Set every spring's rest length (scalar or (m,) m, >= 0), keeping the state."""
        self._params.rest_lengths[:] = spring_coefficients(value, self.n_springs,
                                                           "rest_lengths", "m")
        self._changed(Changed.REST_LENGTHS)

    def set_mass(self, value: Any) -> None:
        """Set particle masses (scalar or (n,) kg), keeping the state."""
        m = masses_per_particle(value, self.n_particles)
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
                           self.planar)
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
        """Advance n steps of dt. Raises SimulationDiverged (state kept at the last finite step)."""
        if isinstance(n, bool) or int(n) != n or n < 0:
            raise ValueError(f"n: number of steps must be an integer >= 0, got {n!r}")
        self._save_checkpoint()
        since_checkpoint = 0
        for _ in range(int(n)):
            max_speed_sq = self._advance()
            if not max_speed_sq <= self.max_speed * self.max_speed:
                self._recover(since_checkpoint, max_speed_sq)
            since_checkpoint += 1
            if since_checkpoint == CHECKPOINT_EVERY:
                self._save_checkpoint()
                since_checkpoint = 0

    def _advance(self) -> float:
        """One step without the divergence check; returns the max squared speed."""
        dt = self._dt
        max_speed_sq = self._integrator.step(self._state, dt)
        if self._grabbed is not None:
            self._move_grabbed(dt)
        self._tear_and_limit(dt)
        if self._contacts:
            project_contacts(self._x, self._v, self._fixed, self._grounds, self._spheres,
                             self.planar)
        self._state.step_count += 1
        self._state.time += dt
        return max_speed_sq

    def _move_grabbed(self, dt: float) -> None:
        i = self._grabbed
        follow = max(self.grab_follow_time, dt)
        velocity = (self._grab_target - self._x[i]) / follow
        self._v[i] = velocity
        self._x[i] += velocity * dt

    def _save_checkpoint(self) -> None:
        self._x_checkpoint[:] = self._x
        self._v_checkpoint[:] = self._v
        self._checkpoint_clock = (self._state.time, self._state.step_count)

    def _recover(self, good_steps: int, max_speed_sq: float) -> None:
        """Back to the checkpoint, replay the steps that were finite, then raise."""
        failed_step, failed_time = self.step_count, self.time
        self._x[:] = self._x_checkpoint
        self._v[:] = self._v_checkpoint
        self._state.time, self._state.step_count = self._checkpoint_clock
        for _ in range(good_steps):
            self._advance()
        if math.isfinite(max_speed_sq):
            reason = (f"a particle reached {math.sqrt(max_speed_sq):.3g} m/s, above "
                      f"max_speed = {self.max_speed:g} m/s")
        else:
            reason = "velocities became non-finite (NaN or inf)"
        raise SimulationDiverged(failed_step, failed_time, self.integrator, self._dt, reason)

    def reset(self) -> None:
        """Back to the system's initial state and pins; settings and parameters are kept."""
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

    # --- interaction ---------------------------------------------------------------------------
    def _check_index(self, i: int) -> int:
        if isinstance(i, bool) or int(i) != i or not 0 <= int(i) < self.n_particles:
            raise ValueError(f"particle: index must be in 0..{self.n_particles - 1}, got {i!r}")
        return int(i)

    def _as_point(self, value: Sequence[float], name: str) -> np.ndarray:
        p = np.asarray(value, dtype=np.float64).ravel()
        if p.shape == (2,):
            p = np.append(p, 0.0)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ValueError(f"{name}: expected 2 or 3 finite numbers, got {value!r}")
        if self.planar:
            p[2] = 0.0
        return p

    def _refresh_fixed(self) -> None:
        self._fixed[:] = self._pinned
        if self._grabbed is not None:
            self._fixed[self._grabbed] = 1
        self._changed(Changed.FIXED)

    def grab(self, i: int, target: Sequence[float]) -> None:
        """Hold particle i and pull it toward target (m) each step; call again to move it."""
        i = self._check_index(i)
        if self._grabbed is not None and self._grabbed != i:
            self.release()
        self._grab_target = self._as_point(target, "target")
        self._grabbed = i
        self._refresh_fixed()

    def release(self, velocity: Sequence[float] | None = None) -> None:
        """Let go of the grabbed particle. It keeps its velocity (a fling), or takes
        ``velocity`` (m/s) if given; a pinned particle stays where it was dropped."""
        i = self._grabbed
        if i is None:
            return
        if velocity is not None:
            self._v[i] = self._as_point(velocity, "velocity")
        if self._pinned[i]:
            self._v[i] = 0.0
        self._grabbed = None
        self._refresh_fixed()

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
        starts the wave); a pinned or grabbed particle cannot be plucked."""
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

    @property
    def max_stretch(self) -> float | None:
        """Strain limit (0.1 = 10 %): after each step, springs stretched past it are
        shortened back (Provot); None (the default) = off."""
        return self._max_stretch

    @max_stretch.setter
    def max_stretch(self, value: float | None) -> None:
        self._max_stretch = tearing.stretch_limit(value)

    def _write_broken(self) -> None:
        """Broken springs to stiffness and damping 0 (user values kept), integrators told."""
        self._tearing.write(self._params)
        self._changed(Changed.STIFFNESS | Changed.DAMPING)

    def _tear_and_limit(self, dt: float) -> None:
        """The end-of-step tearing check, then the strain limit (order: tearing.py)."""
        model = self._model
        if self._tearing.breakable and self._tearing.check(
                self._x, model.spring_a, model.spring_b, self._params.rest_lengths):
            self._write_broken()
        if self._max_stretch is not None:
            self.stretch_passes = tearing.limit_stretch(
                self._x, self._v, model.spring_a, model.spring_b,
                self._params.rest_lengths, self._params.inv_mass, self._fixed,
                self._tearing.broken, self._max_stretch, dt, tearing.MAX_STRETCH_PASSES,
                tearing.STRETCH_TOLERANCE)

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
