"""Divergence detection: is a state healthy, where to go back to, and what to try next.

Three parts, each used by the Simulation's step loop (see docs/divergence.md for the
criteria and the reasons behind each threshold):

* :class:`HealthCheck` decides whether a state is healthy. One numba pass over the
  particles and one over the springs (no allocation per call) measure what four
  criteria need; :meth:`HealthCheck.check` returns ``None`` for a healthy state or a
  reason that names the criterion and its numbers:

  1. non-finite: a NaN or inf in any position or velocity;
  2. stretch: a spring longer than ``stretch_limit`` (10) times its rest length (times
     the longest stretch of the reference state or the stretch the whole weight would
     give the softest spring, whichever is larger, and times
     1 + reach / size while a grab has dragged its particle ``reach`` m);
  3. energy: the total energy (kinetic + elastic + gravity) grew since the reference
     state by more than the grab's net work plus ``energy_factor`` (1) times the
     scene's energy scale (the reference state's kinetic + elastic energy, its whole
     mass dropping the scene's height along gravity, and every input of the grab);
  4. step: a particle covering more than ``step_fraction`` (0.5) of the scene's size
     in one time step.

* :class:`CheckpointRing` keeps the last few healthy states (positions, velocities,
  time, step count and an ``extra`` slot for an integrator's warm data) in
  preallocated arrays.

* :func:`advise` turns a divergence into advice that never names the integrator that
  just failed, nor calls an integrator stable at any dt when one of that kind failed.

Units: m, s, kg, J, m/s.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from numba import njit, prange

from . import parallel

from .forces import spring_forces

#: a spring longer than this many rest lengths is a divergence (shipped scenes: <= 3.2)
STRETCH_LIMIT = 10.0
#: allowed energy gain beyond the grab's work, as a multiple of the scene's energy scale
ENERGY_FACTOR = 1.0
#: a particle covering more than this fraction of the scene's size in one step diverged
STEP_FRACTION = 0.5
#: strain whose elastic energy floors the energy scale (a scene at rest in zero gravity)
FLOOR_STRAIN = 0.01
#: s; the whole mass crossing the scene's size in this time floors the energy scale
FLOOR_CROSSING_TIME = 10.0

#: m; the smallest scene size (a single particle or a point-like scene has no size of
#: its own; half a metre per step is past any real motion at the time steps used)
MIN_SIZE = 1.0

#: steps between health checks in the step loop: a check reads every particle and
#: spring once (about the work of one step), so it adds a percent or two; the step
#: itself reports a non-finite state or a speed above max_speed every step
CHECK_EVERY = 64
#: steps between checkpoints (a multiple of CHECK_EVERY: each is taken right after a
#: check that passed)
CHECKPOINT_EVERY = 64
#: a checkpoint is restored only if the checks of at least this many steps after it
#: passed too: a blow-up grows from a state that still passes (up to 8 steps measured),
#: and up to CHECK_EVERY - 1 more steps pass before the next check sees it
CONFIRM_STEPS = 128
#: checkpoints kept: enough that one is always CONFIRM_STEPS older than a failing check
RING_SIZE = 4

#: integrators that gain energy at every dt (forward Euler): never advised
ALWAYS_UNSTABLE = frozenset({"explicit_euler"})

# slots of the scans' output array
_KINETIC, _GRAVITY, _ELASTIC, _SPEED_SQ, _FASTEST, _STRETCH, _STRETCHED, _NONFINITE = range(8)
_SCAN_SLOTS = 8


#: the scans sum in this many fixed chunks, combined in order: the serial and the
#: parallel version give bit-identical results whatever the thread count
SCAN_CHUNKS = 64
#: springs from which the parallel version of the scans is considered (parallel.Chooser)
PARALLEL_MIN_SPRINGS = 20_000


@njit(cache=True, inline="always", error_model="numpy", boundscheck=False)
def _scan_particle_chunk(x, v, mass, gravity, lo, hi, part):
    """Kinetic and gravity energy (J, float64), the fastest particle and the first
    non-finite one (-1 if none) of particles lo..hi-1 into part (one row)."""
    inf = np.inf
    kinetic = 0.0
    potential = 0.0
    fastest_sq = -1.0
    fastest = -1
    nonfinite = -1
    gx = gravity[0]
    gy = gravity[1]
    gz = gravity[2]
    for i in range(lo, hi):
        x0 = np.float64(x[i, 0])
        x1 = np.float64(x[i, 1])
        x2 = np.float64(x[i, 2])
        v0 = np.float64(v[i, 0])
        v1 = np.float64(v[i, 1])
        v2 = np.float64(v[i, 2])
        if nonfinite < 0 and not (
            abs(x0) < inf and abs(x1) < inf and abs(x2) < inf
            and abs(v0) < inf and abs(v1) < inf and abs(v2) < inf
        ):
            nonfinite = i
        sq = v0 * v0 + v1 * v1 + v2 * v2
        kinetic += 0.5 * mass[i] * sq
        potential -= mass[i] * (gx * x0 + gy * x1 + gz * x2)
        if sq > fastest_sq:
            fastest_sq = sq
            fastest = i
    part[_KINETIC] = kinetic
    part[_GRAVITY] = potential
    part[_SPEED_SQ] = fastest_sq
    part[_FASTEST] = fastest
    part[_NONFINITE] = nonfinite


@njit(cache=True, inline="always", error_model="numpy", boundscheck=False,
      fastmath={"nsz", "arcp", "contract", "reassoc"})
def _scan_spring_chunk(x, spring_a, spring_b, rest, k, lo, hi, part):
    """Elastic energy (J, float64) of springs lo..hi-1 and the largest length / rest
    length among those with stiffness (inf for a stretched spring of rest length 0)
    with its spring (the first such; -1 if none is longer than 0) into part (one row).
    Springs of stiffness 0 (broken, or cut) are not stretch-checked: their ends may part."""
    elastic = 0.0
    stretch = 0.0
    stretched = -1
    for s in range(lo, hi):
        i = spring_a[s]
        j = spring_b[s]
        dx = np.float64(x[i, 0]) - x[j, 0]
        dy = np.float64(x[i, 1]) - x[j, 1]
        dz = np.float64(x[i, 2]) - x[j, 2]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        extension = length - rest[s]
        elastic += 0.5 * k[s] * extension * extension
        # length / rest > stretch, rest = 0 included; a broken spring (k = 0) holds nothing
        if k[s] > 0 and length > stretch * rest[s]:
            stretch = length / rest[s] if rest[s] > 0 else np.inf
            stretched = s
    part[_ELASTIC] = elastic
    part[_STRETCH] = stretch
    part[_STRETCHED] = stretched


@njit(cache=True, inline="always")
def _combine(parts, out):
    """The chunks' rows in chunk order into out: sums, the fastest particle, the first
    non-finite particle and the most stretched spring."""
    out[_KINETIC] = 0.0
    out[_GRAVITY] = 0.0
    out[_ELASTIC] = 0.0
    out[_SPEED_SQ] = -1.0
    out[_FASTEST] = -1
    out[_NONFINITE] = -1
    out[_STRETCH] = 0.0
    out[_STRETCHED] = -1
    for c in range(parts.shape[0]):
        out[_KINETIC] += parts[c, _KINETIC]
        out[_GRAVITY] += parts[c, _GRAVITY]
        out[_ELASTIC] += parts[c, _ELASTIC]
        if parts[c, _SPEED_SQ] > out[_SPEED_SQ]:
            out[_SPEED_SQ] = parts[c, _SPEED_SQ]
            out[_FASTEST] = parts[c, _FASTEST]
        if out[_NONFINITE] < 0 and parts[c, _NONFINITE] >= 0:
            out[_NONFINITE] = parts[c, _NONFINITE]
        if parts[c, _STRETCH] > out[_STRETCH]:
            out[_STRETCH] = parts[c, _STRETCH]
            out[_STRETCHED] = parts[c, _STRETCHED]


@njit(cache=True, inline="always", error_model="numpy", boundscheck=False)
def _scan_chunk(x, v, mass, gravity, spring_a, spring_b, rest, k, parts, c):
    """Chunk c of both scans into parts[c] (chunk c of the particles and of the springs)."""
    chunks = parts.shape[0]
    n = x.shape[0]
    m = spring_a.shape[0]
    _scan_particle_chunk(x, v, mass, gravity, c * n // chunks, (c + 1) * n // chunks, parts[c])
    _scan_spring_chunk(x, spring_a, spring_b, rest, k, c * m // chunks, (c + 1) * m // chunks,
                       parts[c])


@njit(cache=True, error_model="numpy", boundscheck=False)
def _scan(x, v, mass, gravity, spring_a, spring_b, rest, k, parts, out):
    """The particle and the spring scan into out, chunk by chunk, serially."""
    for c in range(parts.shape[0]):
        _scan_chunk(x, v, mass, gravity, spring_a, spring_b, rest, k, parts, c)
    _combine(parts, out)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def _scan_parallel(x, v, mass, gravity, spring_a, spring_b, rest, k, parts, out):
    """_scan with the chunks in parallel: the same result, bit for bit."""
    for c in prange(parts.shape[0]):
        _scan_chunk(x, v, mass, gravity, spring_a, spring_b, rest, k, parts, c)
    _combine(parts, out)


class HealthCheck:
    """Decide whether a simulation state is healthy (see the module docstring).

    Parameters
    ----------
    positions, velocities : (n, 3) the reference state, m and m/s; the scene's size (the
        diagonal of its bounding box, at least its longest rest length) comes from it.
    spring_a, spring_b : (m,) int32 particle indices of each spring.
    rest_lengths : (m,) m. stiffness : (m,) N/m. damping : (m,) N*s/m.
    masses : (n,) kg. gravity : (3,) m/s^2.
    dt : s, the time step (assign ``dt`` when it changes).

    The parameter arrays are held by reference, so in-place edits (``set_stiffness``)
    are seen; call :meth:`rebase` after any change the check cannot account for (a
    reset, a release with a velocity, new stiffness, masses or gravity, pins, a write
    into the state), so that the energy and speed references start from there.
    """

    def __init__(
        self,
        positions: np.ndarray,
        velocities: np.ndarray,
        spring_a: np.ndarray,
        spring_b: np.ndarray,
        rest_lengths: np.ndarray,
        stiffness: np.ndarray,
        damping: np.ndarray,
        masses: np.ndarray,
        gravity: np.ndarray,
        dt: float,
        *,
        stretch_limit: float = STRETCH_LIMIT,
        energy_factor: float = ENERGY_FACTOR,
        step_fraction: float = STEP_FRACTION,
    ):
        n = masses.shape[0]
        if positions.shape != (n, 3) or velocities.shape != (n, 3):
            raise ValueError(
                f"positions, velocities: expected shape ({n}, 3) like masses, got "
                f"{positions.shape} and {velocities.shape}"
            )
        for name, value in (("stretch_limit", stretch_limit), ("energy_factor", energy_factor),
                            ("step_fraction", step_fraction)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name}: must be a finite number > 0, got {value!r}")
        self.spring_a, self.spring_b, self.rest_lengths = spring_a, spring_b, rest_lengths
        self.stiffness, self.damping, self.masses = stiffness, damping, masses
        self.gravity, self.dt = gravity, dt
        self.stretch_limit = float(stretch_limit)
        self.energy_factor = float(energy_factor)
        self.step_fraction = float(step_fraction)
        extent = np.ptp(positions, axis=0) if n else np.zeros(3)
        longest = float(rest_lengths.max()) if rest_lengths.size else 0.0
        #: m: the scene's size, the bounding-box diagonal of the reference state
        self.size = max(float(np.linalg.norm(extent)), longest, MIN_SIZE)
        #: whether the energy criterion applies (the Simulation turns it off while
        #: attached forces act: their work is not accounted for)
        self.energy_check = True
        self._out = np.zeros(_SCAN_SLOTS)
        self._parts = np.zeros((SCAN_CHUNKS, _SCAN_SLOTS))
        self._chooser = (parallel.Chooser() if spring_a.shape[0] >= PARALLEL_MIN_SPRINGS
                         else None)
        self._forces = np.zeros((n, 3), positions.dtype)  # spring forces, for the grab
        # the springs' own stiffness, and the one the check uses under a compliance
        # (follow_compliance): None while the springs act with their own k
        self._own_stiffness = stiffness
        self._compliance: float | None = None
        self._grab_x = np.zeros(3)
        self._grab_start = np.zeros(3)
        self.rebase(positions, velocities)

    @property
    def dt(self) -> float:
        """Time step, s."""
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        value = float(value)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"dt: must be a finite number > 0 s, got {value!r}")
        self._dt = value

    def _take_hold(self, i: int) -> None:
        """A new grab of particle i: find the springs that touch it (once per grab)."""
        touching = np.flatnonzero((self.spring_a == i) | (self.spring_b == i))
        self._grab_springs = (
            touching, self.spring_a[touching], self.spring_b[touching],
            np.empty(touching.size, self.rest_lengths.dtype),
            np.empty(touching.size, self.stiffness.dtype),
            np.empty(touching.size, self.damping.dtype),
        )

    def _grab_force(self, x: np.ndarray, v: np.ndarray, i: int) -> np.ndarray:
        """Spring force (Hooke + damping, N) on the grabbed particle i, from the springs
        that touch it (their live rest lengths, stiffness and damping)."""
        touching, a, b, rest, k, c = self._grab_springs
        np.take(self.rest_lengths, touching, out=rest)
        np.take(self.stiffness, touching, out=k)
        np.take(self.damping, touching, out=c)
        spring_forces(x, v, a, b, rest, k, c, self._forces)
        return self._forces[i].astype(np.float64)

    def _scan(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Both scans of (x, v) into self._out (serial or parallel: the same numbers)."""
        args = (x, v, self.masses, self.gravity, self.spring_a, self.spring_b,
                self.rest_lengths, self.stiffness, self._parts, self._out)
        chooser = self._chooser
        if chooser is None:
            _scan(*args)
            return self._out
        use_parallel = chooser.parallel() and parallel.threads() > 1
        start = time.perf_counter()
        (_scan_parallel if use_parallel else _scan)(*args)
        chooser.record(use_parallel, start)
        return self._out

    def follow_compliance(self, compliance: float | None) -> bool:
        """The springs act with one compliance ``compliance`` (m/N, > 0: XPBD's setting)
        instead of their own 1/k, or again with their own k (None; 0, rigid rods, holds
        every spring at its rest length, where its own k stores no energy either). The
        elastic energy and the stretch check then use k = 1/compliance for every spring
        that has stiffness (a broken or cut one still holds nothing): a different, maybe
        much stiffer, cloth whose energy in the current stretch is not the old one's.
        Returns whether that changed: then :meth:`rebase`, as after a stiffness edit."""
        compliance = float(compliance) if compliance else None
        if compliance == self._compliance:
            return False
        self._compliance = compliance
        self.stiffness = (self._own_stiffness if compliance is None
                          else np.empty_like(self._own_stiffness))
        return True

    def rebase(self, x: np.ndarray, v: np.ndarray) -> None:
        """Make (x, v) the reference state: the energy and the grab's work count from
        here, and the energy scale and the stretch reference are taken from it. Raises
        ValueError for a non-finite state."""
        if self._compliance is not None:  # 1/compliance where the springs' own k > 0
            stiff = min(1.0 / self._compliance, float(np.finfo(self.stiffness.dtype).max))
            np.copyto(self.stiffness, np.where(self._own_stiffness > 0, stiff, 0.0))
        out = self._scan(x, v)
        if out[_NONFINITE] >= 0:
            raise ValueError(f"rebase: the state is not finite at particle {int(out[_NONFINITE])}")
        total_mass = float(self.masses.sum())
        g = float(np.linalg.norm(self.gravity))
        kinetic, elastic = float(out[_KINETIC]), float(out[_ELASTIC])
        #: J: total energy (kinetic + elastic + gravity) of the reference state
        self.reference_energy = kinetic + elastic + float(out[_GRAVITY])
        #: J: kinetic + elastic energy of the reference state + the whole mass dropping
        #: the scene's height along gravity + a floor (every spring at 1 % strain, the mass crossing the
        #: scene in 10 s) for scenes at rest without gravity
        height = float(np.ptp(x @ (self.gravity / g))) if g > 0 and x.shape[0] else 0.0
        self.energy_scale = kinetic + elastic + total_mass * g * height + float(
            np.sum(0.5 * self.stiffness * (FLOOR_STRAIN * self.rest_lengths) ** 2)
        ) + 0.5 * total_mass * (self.size / FLOOR_CROSSING_TIME) ** 2
        lengths = np.linalg.norm(x[self.spring_a] - x[self.spring_b], axis=1)
        loaded = self.rest_lengths > 0
        #: the reference state's longest spring over its rest length (at least 1)
        self.reference_stretch = max(1.0, float(np.max(
            lengths[loaded] / self.rest_lengths[loaded], initial=1.0)))
        #: 1 + the stretch the whole weight M |g| would cause hanging on the softest
        #: spring (smallest k L): a soft cloth (k = 0.6 N/m per spring at 128 x 128)
        #: really sags to tens of rest lengths; the stretch limit is a multiple of this
        k_rest = (self.stiffness * self.rest_lengths)[loaded]
        k_rest = k_rest[k_rest > 0]
        softest = float(k_rest.min()) if k_rest.size else math.inf
        self.weight_stretch = 1.0 + total_mass * g / softest
        #: J: net work of the grab since the reference state, and the sum of its inputs
        self.grab_work = 0.0
        self.grab_input = 0.0
        self._grab_index = -1
        self._grab_energy = 0.0

    def start_grab(self, x: np.ndarray, v: np.ndarray, i: int) -> None:
        """A grab of particle i begins at state (x, v): its work counts from here (else
        from the first check that sees it, missing the steps in between)."""
        self._grab_index = -1
        self._account_grab(x, v, int(i))

    def follow_grab(self, x: np.ndarray, v: np.ndarray, i: int) -> None:
        """Add the grab's work since the last call (or check): the Simulation calls this
        after every step while particle i is held, since the force-times-displacement
        sum is only accurate over short moves. A check right after adds nothing more."""
        self._account_grab(x, v, int(i))

    def _account_grab(self, x: np.ndarray, v: np.ndarray, i: int) -> None:
        """Add the grab's work since the last check: the grabbed particle's own kinetic +
        gravity energy change minus the spring force on it dotted with its displacement."""
        m = float(self.masses[i])
        xi = x[i].astype(np.float64)
        vi = v[i].astype(np.float64)
        energy = 0.5 * m * float(vi @ vi) - m * float(self.gravity @ xi)
        if self._grab_index != i:
            self._grab_start[:] = xi
            self._take_hold(i)
        else:
            force = self._grab_force(x, v, i)
            work = energy - self._grab_energy - float(force @ (xi - self._grab_x))
            self.grab_work += work
            self.grab_input += max(work, 0.0)
        self._grab_index = i
        self._grab_x[:] = xi
        self._grab_energy = energy

    def check(self, x: np.ndarray, v: np.ndarray, grabbed: int | None = None) -> str | None:
        """None if (x, v) is healthy, else the reason (criterion and numbers).

        ``grabbed``: the particle the grab holds; its work on the system is added to the
        energy the scene may have, and the stretch limit grows by its reach. Check every
        :data:`CHECK_EVERY` steps, so that the grab's work is followed.
        """
        out = self._scan(x, v)
        bad = int(out[_NONFINITE])
        if bad >= 0:
            return (f"non-finite state: particle {bad} has position {_triple(x[bad])} m and "
                    f"velocity {_triple(v[bad])} m/s")
        limit = self.stretch_limit * max(self.reference_stretch, self.weight_stretch)
        if grabbed is None:
            self._grab_index = -1
        else:
            self._account_grab(x, v, int(grabbed))
            reach = float(np.linalg.norm(self._grab_x - self._grab_start))
            limit *= 1.0 + reach / self.size  # the grab has no force limit
        if out[_STRETCH] > limit:
            s = int(out[_STRETCHED])
            i, j = int(self.spring_a[s]), int(self.spring_b[s])
            length = float(np.linalg.norm(x[i].astype(np.float64) - x[j]))
            rest = float(self.rest_lengths[s])
            return (f"spring {s} (particles {i}-{j}) is {length / rest:.3g} x its rest length "
                    f"{rest:.3g} m, above the limit of {limit:.3g} x")
        kinetic, elastic = float(out[_KINETIC]), float(out[_ELASTIC])
        energy = kinetic + elastic + float(out[_GRAVITY])
        gain = energy - self.reference_energy
        allowed = self.grab_work + self.energy_factor * (self.energy_scale + self.grab_input)
        if self.energy_check and gain > allowed:
            return (f"energy runaway: the total energy grew by {gain:.3g} J (to {energy:.3g} J), "
                    f"more than the grab's work {self.grab_work:.3g} J + {self.energy_factor:g} x "
                    f"(the scene's energy scale {self.energy_scale:.3g} J + the grab's input "
                    f"{self.grab_input:.3g} J)")
        fastest = int(out[_FASTEST])
        speed = math.sqrt(max(float(out[_SPEED_SQ]), 0.0))
        if speed * self._dt > self.step_fraction * self.size:
            return (f"particle {fastest} moves {speed * self._dt:.3g} m in one step of "
                    f"{self._dt:g} s ({speed:.3g} m/s), more than {self.step_fraction:g} of the "
                    f"scene's size {self.size:.3g} m")
        return None


def _triple(row: np.ndarray) -> str:
    return "(" + ", ".join(f"{float(value):.3g}" for value in row) + ")"


@dataclass(frozen=True)
class Checkpoint:
    """One kept state: views into the ring's arrays (copy them to keep them longer)."""

    positions: np.ndarray  # (n, 3) m
    velocities: np.ndarray  # (n, 3) m/s
    time: float  # s
    step: int
    extra: dict[str, Any]


class CheckpointRing:
    """The last ``size`` healthy states, in preallocated arrays.

    :meth:`save` is meant to be called only right after a passing
    :meth:`HealthCheck.check`, so every checkpoint in the ring is healthy and
    :meth:`newest` is the newest healthy state. ``extra`` holds an integrator's warm
    data (arrays are copied into per-slot buffers allocated on first use, then reused).
    """

    def __init__(self, n_particles: int, dtype: Any = np.float64, size: int = RING_SIZE):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"size: must be an integer >= 1, got {size!r}")
        if isinstance(n_particles, bool) or not isinstance(n_particles, (int, np.integer)) \
                or n_particles < 0:
            raise ValueError(f"n_particles: must be an integer >= 0, got {n_particles!r}")
        self.size = int(size)
        self._x = np.zeros((self.size, int(n_particles), 3), dtype)
        self._v = np.zeros_like(self._x)
        self._time = np.zeros(self.size)
        self._step = np.zeros(self.size, np.int64)
        self._extra: list[dict[str, Any]] = [{} for _ in range(self.size)]
        self._count = 0  # checkpoints saved since the last clear
        self._next = 0  # slot the next save writes

    def __len__(self) -> int:
        return min(self._count, self.size)

    def clear(self) -> None:
        """Forget every checkpoint (after a reset)."""
        self._count = 0
        self._next = 0

    def save(self, x: np.ndarray, v: np.ndarray, time: float, step: int,
             extra: Mapping[str, Any] | None = None) -> None:
        """Keep (x, v) at ``time`` (s) and ``step``, overwriting the oldest checkpoint."""
        slot = self._next
        self._x[slot] = x
        self._v[slot] = v
        self._time[slot] = time
        self._step[slot] = step
        kept = self._extra[slot]
        for key in [key for key in kept if extra is None or key not in extra]:
            del kept[key]
        for key, value in (extra or {}).items():
            buffer = kept.get(key)
            if isinstance(value, np.ndarray):
                if not (isinstance(buffer, np.ndarray) and buffer.shape == value.shape
                        and buffer.dtype == value.dtype):
                    buffer = kept[key] = np.empty_like(value)
                buffer[...] = value
            else:
                kept[key] = value
        self._next = (slot + 1) % self.size
        self._count += 1

    def _slot(self, age: int) -> int:
        return (self._next - 1 - age) % self.size

    def _checkpoint(self, slot: int) -> Checkpoint:
        return Checkpoint(self._x[slot], self._v[slot], float(self._time[slot]),
                          int(self._step[slot]), self._extra[slot])

    def newest(self, before_step: int | None = None) -> Checkpoint | None:
        """The newest checkpoint (taken before step ``before_step`` if given), or None."""
        for age in range(len(self)):
            slot = self._slot(age)
            if before_step is None or self._step[slot] < before_step:
                return self._checkpoint(slot)
        return None

    def newest_healthy(self, failed_step: int, confirm: int = CONFIRM_STEPS) -> Checkpoint | None:
        """The checkpoint to go back to after the check failed at step ``failed_step``:
        the newest one that the checks of ``confirm`` steps after it confirmed (taken at
        or before ``failed_step - confirm``), else the oldest kept; None if empty."""
        kept = self.newest(before_step=failed_step - confirm + 1)
        if kept is None and len(self):
            kept = self._checkpoint(self._slot(len(self) - 1))
        return kept


@dataclass(frozen=True)
class Advice:
    """What to try after a divergence: (integrator, largest dt in s) options, and the text."""

    options: tuple[tuple[str, float], ...]
    text: str

    @property
    def integrators(self) -> tuple[str, ...]:
        """The integrators advised, in order."""
        return tuple(name for name, _ in self.options)

    def __str__(self) -> str:
        return self.text


def advise(
    failed: str,
    dt: float,
    stable_dt: float,
    integrators: Mapping[str, bool],
    always_unstable: frozenset[str] = ALWAYS_UNSTABLE,
) -> Advice:
    """Recovery advice after integrator ``failed`` diverged at time step ``dt`` (s).

    ``integrators`` maps every integrator's name to whether it is unconditionally
    stable; ``stable_dt`` (s) is the explicit integrators' stable-step bound at the
    *current* stiffness and masses (inf when nothing limits it). The advice never
    names ``failed`` nor an integrator in ``always_unstable`` (forward Euler gains
    energy at every dt). Explicit integrators are advised at ``dt <= min(stable_dt,
    dt / 2)``. After an explicit integrator failed, the unconditionally stable ones are
    advised at this dt. After an unconditionally stable one failed, this situation is
    beyond what that kind handles at this dt, so the others of its kind are advised
    only with a quarter of it, and none is called stable at any dt.
    """
    if failed not in integrators:
        raise ValueError(
            f"failed: unknown integrator {failed!r}; allowed: {', '.join(integrators)}")
    for name, value in (("dt", dt), ("stable_dt", stable_dt)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name}: must be a number > 0 s, got {value!r}")
    others = [name for name in integrators if name != failed and name not in always_unstable]
    implicit = [name for name in others if integrators[name]]
    explicit = [name for name in others if not integrators[name]]
    options: list[tuple[str, float]] = []
    parts: list[str] = []
    if integrators[failed]:
        implicit_dt = dt / 4.0
        why = "a smaller step: an implicit integrator diverged at this dt and stiffness"
    else:
        implicit_dt = dt
        why = "unconditionally stable"
    if implicit:
        options += [(name, implicit_dt) for name in implicit]
        parts.append(f"{' or '.join(implicit)} at dt <= {implicit_dt:.3g} s ({why})")
    explicit_dt = min(float(stable_dt), dt / 2.0)
    if explicit:
        substeps = math.ceil(dt / explicit_dt)
        options += [(name, explicit_dt) for name in explicit]
        parts.append(f"{' or '.join(explicit)} at dt <= {explicit_dt:.3g} s ({substeps} substeps "
                     f"per {dt:g} s; the stable-step bound of these springs is {stable_dt:.3g} s)")
    if not parts:
        parts.append(f"a time step of at most {dt / 4.0:.3g} s")
    text = f"{failed} diverged at dt = {dt:g} s. Try " + "; or ".join(parts) + "."
    return Advice(tuple(options), text)


__all__ = [
    "HealthCheck", "CheckpointRing", "Checkpoint", "Advice", "advise",
    "STRETCH_LIMIT", "ENERGY_FACTOR", "STEP_FRACTION",
    "CHECK_EVERY", "CHECKPOINT_EVERY", "CONFIRM_STEPS", "RING_SIZE", "ALWAYS_UNSTABLE",
]
