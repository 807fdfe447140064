"""The wave lab: pluck a particle, follow the front through the springs, compare its speed.

A pluck is an impulse J (N*s) on one particle: its velocity jumps by J / m. Delivered at
once it excites every wavelength the network carries (the front then spreads a little
as it runs, lattice dispersion); spread over ``pulse_duration`` tau s as a smooth Hann
(raised-cosine) force, F(t) = J (1 - cos(2 pi t / tau)) / tau, it launches a pulse about
c tau long, a long-wavelength wave when c tau spans many springs.

Arrival rule (the first front at a particle): the particle's speed |v| (m/s) is recorded
after every ``every`` steps. Its first peak is the first local maximum of |v| that
reaches ``PRECURSOR`` (0.1) times the particle's own largest |v| in the record, so a
weak forerunner does not count (the lattice's exponentially small precursor, the
second-order longitudinal stretch that runs ahead of a transverse pluck, rounding
noise); the front arrives when |v| first reaches ``threshold`` (0.5: half) of that first
peak, linearly interpolated between samples. Later, larger lobes (a 2-D wake, echoes,
the second of two fronts) do not move it. No arrival (NaN) where no first peak comes
before the last sample, or where the particle's largest |v| is below ``FLOOR`` times the
largest anywhere (nothing reached it). The source gets a
time by the same rule (the departure), and the speed at a probe is
distance / (arrival - departure), so the pulse's own rise time cancels.

Theory (long wavelength, small amplitude), from the springs at the particle after the
source on the path to the probe, for a wave running along n (unit vector, the path's
direction; the straight direction on a grid):

    Gamma(n) = 1 / (2 m) * sum over its springs of (n . d)^2 [k e e^T + (T / l)(I - e e^T)]

d the spring's vector (m), l = |d|, e = d / l, k its stiffness (N/m), T = k (l - L) its
tension (N), m the particle's mass (kg). The eigenvalues of Gamma are c^2 (m^2/s^2); the
first front is the fastest branch the impulse excites (polarisation within about 75 deg
of the impulse, |e . J| / |J| >= EXCITED_COSINE). For a uniform chain
this is c = a sqrt(k / m) along the chain (a the spacing, = L unstretched), for a taut
string c = sqrt(T / mu) across it (mu = m / a, kg/m), and for a square grid of spacing a
with structural k_s, shear (diagonal) k_d and bend (distance-2) k_b springs, along an
axis: P c = a sqrt((k_s + k_d + 4 k_b) / m), S c = a sqrt(k_d / m) (only the shear
springs resist shear).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from numba import njit

from .impulses import check_impulse, check_particle, check_pluckable, pluck
from .model import SpringSystem
from .simulation import Simulation

#: default arrival threshold: the fraction of a particle's peak speed that marks the front
THRESHOLD = 0.5
#: a particle whose peak speed is below this fraction of the record's largest has no front
FLOOR = 1e-3
#: a local maximum below this fraction of the particle's own largest speed is a precursor
PRECURSOR = 0.1
#: largest number of recorded values (samples x particles) per recorded field
RECORD_BUDGET = 4_000_000
#: |polarisation . direction| at or above which a branch is called longitudinal
LONGITUDINAL_COSINE = 0.7
#: |polarisation . impulse| at or above which an impulse excites a branch
EXCITED_COSINE = 0.25


# --- the network's shape -----------------------------------------------------------------
@njit(cache=True)
def _breadth_first(indptr, neighbours, positions, source, hops, parent, branch, path_length):
    """Hops (springs) from ``source`` to every particle, the BFS tree's parent, the
    source's neighbour each particle is reached through (branch), and the length (m) of
    the path; among paths with the fewest hops the shortest in metres is kept (a whole
    level is expanded before the next, so a later parent of the same level can still
    win). Unreachable particles keep hops = -1."""
    n = hops.shape[0]
    for i in range(n):
        hops[i] = -1
        parent[i] = -1
        branch[i] = -1
        path_length[i] = np.nan
    queue = np.empty(n, np.int64)
    queue[0] = source
    hops[source] = 0
    path_length[source] = 0.0
    head, tail = 0, 1
    while head < tail:
        i = queue[head]
        head += 1
        for slot in range(indptr[i], indptr[i + 1]):
            j = neighbours[slot]
            if hops[j] >= 0 and hops[j] <= hops[i]:
                continue
            step = 0.0
            for axis in range(3):
                delta = positions[j, axis] - positions[i, axis]
                step += delta * delta
            length = path_length[i] + math.sqrt(step)
            if hops[j] < 0:
                queue[tail] = j
                tail += 1
            elif length >= path_length[j]:
                continue
            hops[j] = hops[i] + 1
            parent[j] = i
            branch[j] = j if i == source else branch[i]
            path_length[j] = length


@dataclass(frozen=True)
class Paths:
    """Shortest paths through the springs from one particle (breadth-first).

    ``hops`` (n,) springs on the path (-1: not connected), ``parent`` the previous
    particle on it, ``branch`` the source's neighbour the path leaves through,
    ``length`` (n,) m the path's length at the positions given.
    """

    source: int
    hops: np.ndarray
    parent: np.ndarray
    branch: np.ndarray
    length: np.ndarray

    def path(self, target: int) -> list[int]:
        """Particles from the source to ``target`` (both included); [] if unreachable."""
        if self.hops[target] < 0:
            return []
        chain = [int(target)]
        while chain[-1] != self.source:
            chain.append(int(self.parent[chain[-1]]))
        return chain[::-1]


def _adjacency(springs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR neighbour lists (indptr, neighbours) of the spring graph."""
    ends = np.concatenate([springs[:, 0], springs[:, 1]]).astype(np.int64)
    others = np.concatenate([springs[:, 1], springs[:, 0]]).astype(np.int64)
    order = np.lexsort((others, ends))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(ends, minlength=n), out=indptr[1:])
    return indptr, np.ascontiguousarray(others[order])


def shortest_paths(system: SpringSystem, source: int, positions: np.ndarray | None = None) -> Paths:
    """Breadth-first shortest paths through ``system``'s springs from ``source``;
    lengths measured at ``positions`` ((n, 3) m, default the system's own)."""
    n = system.n_particles
    indptr, neighbours = _adjacency(system.springs, n)
    where = system.positions3() if positions is None else positions
    hops = np.empty(n, np.int64)
    parent = np.empty(n, np.int64)
    branch = np.empty(n, np.int64)
    length = np.empty(n, np.float64)
    _breadth_first(indptr, neighbours, np.ascontiguousarray(where, dtype=np.float64),
                   int(source), hops, parent, branch, length)
    return Paths(int(source), hops, parent, branch, length)


# --- theory --------------------------------------------------------------------------------
def christoffel(sim: Simulation, particle: int, direction: np.ndarray,
                springs: np.ndarray | None = None,
                positions: np.ndarray | None = None) -> np.ndarray:
    """Gamma(n) (3, 3), m^2/s^2, of the springs at ``particle`` for waves along the unit
    vector ``direction`` (see the module docstring), at ``positions`` ((n, 3) m, default
    the current ones); ``springs`` limits it to some spring indices (one family). Its
    eigenvalues are the long-wavelength c^2."""
    a, b = sim.system.springs[:, 0], sim.system.springs[:, 1]
    at = np.flatnonzero((a == particle) | (b == particle))
    if springs is not None:
        at = np.intersect1d(at, springs)
    x = (sim.positions if positions is None else positions).astype(np.float64)
    other = np.where(a[at] == particle, b[at], a[at])
    delta = x[other] - x[particle]
    length = np.linalg.norm(delta, axis=1)
    unit = delta / length[:, None]
    k = sim.stiffness[at].astype(np.float64)
    tension_per_length = k * (length - sim.rest_lengths[at]) / length
    weight = (delta @ direction) ** 2
    outer = unit[:, :, None] * unit[:, None, :]
    blocks = k[:, None, None] * outer + tension_per_length[:, None, None] * (np.eye(3) - outer)
    return (weight[:, None, None] * blocks).sum(axis=0) / (2.0 * float(sim.masses[particle]))


@dataclass(frozen=True)
class WaveBranch:
    """The long-wavelength wave an impulse excites: speed (m/s), polarisation (unit
    vector), whether it is longitudinal (polarised along the direction of travel), and
    each spring family's share of c^2 (cloth grids: structural, shear, bend)."""

    speed: float
    polarisation: np.ndarray
    longitudinal: bool
    shares: dict[str, float] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return "longitudinal" if self.longitudinal else "transverse"


def excited_branch(sim: Simulation, particle: int, direction: np.ndarray,
                   impulse_direction: np.ndarray,
                   positions: np.ndarray | None = None) -> WaveBranch:
    """The fastest branch of Gamma(direction) at ``particle`` (at ``positions``, default
    the current ones) that ``impulse_direction`` excites (both unit vectors; see
    EXCITED_COSINE); planar systems keep to the xy plane."""
    gamma = christoffel(sim, particle, direction, positions=positions)
    dims = 2 if sim.planar else 3
    values, vectors = np.linalg.eigh(gamma[:dims, :dims])
    coupling = np.abs(vectors.T @ impulse_direction[:dims])
    excited = np.flatnonzero(coupling >= EXCITED_COSINE)
    pick = int(excited[np.argmax(values[excited])]) if excited.size else int(np.argmax(coupling))
    polarisation = np.zeros(3)
    polarisation[:dims] = vectors[:, pick]
    c2 = max(float(values[pick]), 0.0)
    shares = {}
    groups = sim.system.meta.get("spring_groups") or {}
    for family, (start, stop) in groups.items():
        part = christoffel(sim, particle, direction, np.arange(start, stop), positions)
        shares[family] = float(polarisation @ part @ polarisation) / c2 if c2 > 0 else math.nan
    return WaveBranch(
        speed=math.sqrt(c2), polarisation=polarisation,
        longitudinal=abs(float(polarisation @ direction)) >= LONGITUDINAL_COSINE,
        shares=shares,
    )


def integrator_response(integrator: str, omega_dt: float) -> tuple[float, float]:
    """How ``integrator`` treats an undamped oscillation of angular frequency w at step
    dt (``omega_dt`` = w dt): (amplitude factor per period, frequency ratio w_numerical / w).
    Measured from one step of the real integrator on a single spring (k = 1 N/m,
    m = 1 kg); a phase speed scales like the frequency ratio. (nan, nan) when the step
    does not oscillate (past the stability limit or overdamped)."""
    system = SpringSystem(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[0, 1]]),
                          mass=1.0, stiffness=1.0, pinned=[0])
    scale = 1e-3  # along the spring: exactly linear, and far above rounding
    columns = []
    for shift, speed in ((scale, 0.0), (0.0, scale)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sim = Simulation(system, dt=float(omega_dt), gravity=(0.0, 0.0, 0.0),
                             integrator=integrator, cg_tolerance=1e-12)
        sim.positions[1, 0] += shift
        sim.velocities[1, 0] = speed
        sim.step(1)
        columns.append([(sim.positions[1, 0] - 1.0) / scale, sim.velocities[1, 0] / scale])
    eigenvalues = np.linalg.eigvals(np.array(columns, dtype=np.float64).T)
    root = eigenvalues[np.argmax(eigenvalues.imag)]
    angle = float(np.angle(root))
    if angle <= 1e-12 or angle >= math.pi - 1e-12:
        return math.nan, math.nan
    return float(abs(root)) ** (2.0 * math.pi / angle), angle / float(omega_dt)


# --- the experiment ------------------------------------------------------------------------
@njit(cache=True)
def _record_sample(x, x0, v, along, displacement_row, speed_row):
    """One sample: displacement (m) along ``along`` and speed (m/s) of every particle."""
    for i in range(x.shape[0]):
        shift = 0.0
        speed = 0.0
        for axis in range(3):
            shift += (x[i, axis] - x0[i, axis]) * along[axis]
            speed += v[i, axis] * v[i, axis]
        displacement_row[i] = shift
        speed_row[i] = math.sqrt(speed)


def hann_impulse_fractions(pulse_duration: float, dt: float) -> np.ndarray:
    """Fractions (summing to 1) of an impulse given at the start of steps 0, 1, ... so
    that it is delivered as a Hann (raised-cosine) force pulse ``pulse_duration`` s long;
    [1.0] (all at once) when the pulse is no longer than one step."""
    steps = math.ceil(pulse_duration / dt - 1e-9)
    if steps <= 1:
        return np.ones(1)
    t = np.minimum(np.arange(steps + 1) * dt, pulse_duration) / pulse_duration
    cumulative = t - np.sin(2.0 * np.pi * t) / (2.0 * np.pi)
    cumulative[-1] = 1.0
    return np.diff(cumulative)


def first_peaks(signal: np.ndarray, floor: float = FLOOR,
                precursor: float = PRECURSOR) -> tuple[np.ndarray, np.ndarray]:
    """Each column's first peak of ``signal`` (samples, n): its first local maximum that
    reaches ``precursor`` x the column's largest value. Returns (sample index, value);
    -1 and NaN where there is none before the last sample, or where the column's largest
    value is below ``floor`` x the largest of all."""
    signal = np.asarray(signal, dtype=np.float64)
    samples, n = signal.shape
    index, value = np.full(n, -1), np.full(n, np.nan)
    if samples < 3:
        return index, value
    largest = signal.max(axis=0)
    middle = signal[1:-1]
    is_peak = (middle >= signal[:-2]) & (middle > signal[2:]) & (middle >= precursor * largest)
    has_peak = is_peak.any(axis=0) & (largest >= floor * largest.max()) & (largest > 0)
    columns = np.flatnonzero(has_peak)
    index[columns] = np.argmax(is_peak[:, columns], axis=0) + 1
    value[columns] = signal[index[columns], columns]
    return index, value


def arrival_times(times: np.ndarray, signal: np.ndarray, threshold: float = THRESHOLD,
                  floor: float = FLOOR, precursor: float = PRECURSOR) -> np.ndarray:
    """First-front arrival (s) of every column of ``signal`` (samples, n) by the module's
    rule: the first time it reaches ``threshold`` x its first peak (:func:`first_peaks`),
    linearly interpolated between samples; NaN where it has no first peak."""
    signal = np.asarray(signal, dtype=np.float64)
    _, peak = first_peaks(signal, floor, precursor)
    arrival = np.full(signal.shape[1], np.nan)
    columns = np.flatnonzero(np.isfinite(peak))
    level = threshold * peak[columns]
    first = np.argmax(signal[:, columns] >= level, axis=0)
    before = np.maximum(first - 1, 0)
    low, high = signal[before, columns], signal[first, columns]
    rise = np.where(high > low, high - low, 1.0)
    fraction = np.where(first > 0, np.clip((level - low) / rise, 0.0, 1.0), 0.0)
    arrival[columns] = times[before] + fraction * (times[first] - times[before])
    return arrival


@dataclass(frozen=True)
class ProbeReading:
    """One probe's numbers: where it is (hops = springs on the shortest path, path and
    straight distance, m), when the front came (arrival, s), the speed measured over
    ``distance`` (m/s; the path on chains and networks, the straight line on grids), the
    theory (m/s) and their ratio, the excited branch and the height of the first peak
    of |v| (m/s; NaN without a front)."""

    particle: int
    hops: int
    path_length: float
    straight_distance: float
    distance: float
    arrival: float
    speed: float
    theory: float
    ratio: float
    mode: str
    peak_speed: float


@dataclass
class WaveResult:
    """What :func:`wave_experiment` measured.

    ``times`` (samples,) s from the pluck; ``speed`` (samples, n) |v| m/s, the signal
    the arrival rule reads; ``displacement`` (samples, n) m, along the impulse;
    ``arrival`` (n,) s for every particle (NaN: no front); ``departure`` the source's
    time by the same rule; ``paths`` the shortest paths from the source; ``probes`` one
    :class:`ProbeReading` each; ``layout`` "chain" (no particle has more than two
    springs: ropes, rings), "grid" (a cloth) or "network"; ``start_positions`` (n, 3) m
    before the pluck; ``model`` the theory's formula with its numbers;
    ``integrator_note`` how the integrator's dispersion and damping shift the speed and
    amplitude at this dt.
    """

    source: int
    impulse: np.ndarray
    integrator: str
    dt: float
    duration: float
    pulse_duration: float
    threshold: float
    times: np.ndarray
    speed: np.ndarray
    displacement: np.ndarray
    departure: float
    arrival: np.ndarray
    paths: Paths
    start_positions: np.ndarray
    grid_shape: tuple[int, int] | None
    layout: str
    probes: list[ProbeReading]
    model: str
    integrator_note: str

    def table(self) -> str:
        """The probes as an aligned text table, one row each."""
        header = ("probe", "hops", "path m", "straight m", "arrival s", "speed m/s",
                  "theory m/s", "ratio", "wave", "peak |v| m/s")
        rows = [header] + [
            (str(p.particle), str(p.hops), f"{p.path_length:.4g}", f"{p.straight_distance:.4g}",
             _number(p.arrival, "{:.5f}"), _number(p.speed, "{:.4g}"), _number(p.theory, "{:.4g}"),
             _number(p.ratio, "{:.3f}"), p.mode, f"{p.peak_speed:.3g}")
            for p in self.probes
        ]
        widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
        return "\n".join("  ".join(cell.rjust(w) if c not in (8,) else cell.ljust(w)
                                   for c, (cell, w) in enumerate(zip(row, widths))).rstrip()
                         for row in rows)


def _number(value: float, pattern: str) -> str:
    return "-" if not math.isfinite(value) else pattern.format(value)


def _simulation_of(scene_or_sim: Any, integrator: str | None, dt: float | None) -> Simulation:
    if isinstance(scene_or_sim, Simulation):
        sim = scene_or_sim
        if integrator is not None:
            sim.integrator = integrator
        if dt is not None:
            sim.dt = dt
        return sim
    make = getattr(scene_or_sim, "simulation", None)
    if not callable(make):
        raise TypeError(f"scene_or_sim: expected a Simulation or a Scene (an object with a "
                        f".simulation() method), got {type(scene_or_sim).__name__}")
    overrides = {key: value for key, value in (("integrator", integrator), ("dt", dt))
                 if value is not None}
    return make(**overrides)


def _check_probes(sim: Simulation, probes: Any, source: int) -> list[int]:
    if isinstance(probes, (int, np.integer)) and not isinstance(probes, bool):
        probes = [probes]
    try:
        listed = list(probes)
    except TypeError:
        raise ValueError(f"probes: expected a list of particle indices, got {probes!r}") from None
    if not listed:
        raise ValueError("probes: give at least one particle index")
    found = []
    for probe in listed:
        index = check_particle(sim, probe, "probes")
        if index == source:
            raise ValueError(f"probes: particle {index} is the source; a probe must be "
                             "another particle")
        if index not in found:
            found.append(index)
    return found


def _positive(value: Any, name: str, unit: str, allow_zero: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}: must be a finite number {bound} {unit}, got {value!r}")
    return number


def network_layout(system: SpringSystem) -> str:
    """"grid" (a structured grid), "chain" (every particle has at most two springs:
    ropes, strings, rings) or "network" (anything else)."""
    if system.grid_shape is not None:
        return "grid"
    degree = np.bincount(system.springs.ravel(), minlength=system.n_particles)
    return "chain" if degree.max(initial=0) <= 2 else "network"


def _theory_direction(sim: Simulation, paths: Paths, probe: int, on_grid: bool,
                      x0: np.ndarray) -> tuple[int, np.ndarray]:
    """(particle whose springs give the theory, unit direction of travel) for a probe."""
    path = paths.path(probe)
    if on_grid or len(path) < 3:
        here, ahead = paths.source, probe
    else:
        here, ahead = path[1], path[2]
    behind = path[0] if len(path) >= 3 and not on_grid else here
    step = x0[ahead] - x0[behind]
    return here, step / np.linalg.norm(step)


def wave_experiment(
    scene_or_sim: Any,
    source: int,
    probes: Sequence[int],
    impulse: Sequence[float],
    duration: float,
    *,
    pulse_duration: float = 0.0,
    threshold: float = THRESHOLD,
    integrator: str | None = None,
    dt: float | None = None,
    every: int | None = None,
) -> WaveResult:
    """Pluck ``source`` with ``impulse`` (2 or 3 numbers, N*s), run ``duration`` s and
    measure the first front at every particle (module docstring: the rule and theory).

    ``scene_or_sim``: a Simulation (run on from its state, with ``integrator`` / ``dt``
    applied to it) or a Scene (anything with ``.simulation(**overrides)``: a fresh one).
    ``pulse_duration`` s: 0 plucks at once; longer delivers the impulse as a Hann force
    pulse. ``every``: steps between samples (default: every step, within RECORD_BUDGET).
    Raises ValueError naming the field for a bad source, probe, impulse or duration.
    """
    sim = _simulation_of(scene_or_sim, integrator, dt)
    source = check_pluckable(sim, source, "source")
    probe_list = _check_probes(sim, probes, source)
    vector = check_impulse(sim, impulse)
    size = float(np.linalg.norm(vector))
    if size == 0.0:
        raise ValueError("impulse: must be non-zero (N*s), got all zeros")
    duration = _positive(duration, "duration", "s")
    pulse_duration = _positive(pulse_duration, "pulse_duration", "s", allow_zero=True)
    if pulse_duration >= duration:
        raise ValueError(f"pulse_duration: must be shorter than duration = {duration:g} s, "
                         f"got {pulse_duration:g} s")
    threshold = _positive(threshold, "threshold", "(fraction of the peak)")
    if threshold >= 1.0:
        raise ValueError(f"threshold: must be between 0 and 1 (a fraction of the peak), "
                         f"got {threshold:g}")
    step_dt = sim.dt
    steps = max(1, round(duration / step_dt))
    n = sim.n_particles
    if every is None:
        every = max(1, math.ceil((steps + 1) * n / RECORD_BUDGET))
    elif isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"every: expected an integer >= 1 (steps between samples), got {every!r}")

    x0 = sim.positions.astype(np.float64)
    paths = shortest_paths(sim.system, source, x0)
    unreachable = [p for p in probe_list if paths.hops[p] < 0]
    if unreachable:
        raise ValueError(f"probes: particle(s) {unreachable} have no spring path to the "
                         f"source {source}; no wave can reach them")

    along = vector / size
    fractions = hann_impulse_fractions(pulse_duration, step_dt)
    samples = steps // every + 1
    times = np.arange(samples) * (every * step_dt)
    displacement = np.zeros((samples, n), np.float32)
    speed = np.zeros((samples, n), np.float32)
    done = 0
    while True:
        if done < fractions.size:
            pluck(sim, source, vector * fractions[done])
        if done % every == 0:
            row = done // every
            _record_sample(sim.positions, x0, sim.velocities, along, displacement[row],
                           speed[row])
        if done == steps:
            break
        upcoming = min(steps, (done // every + 1) * every)
        if done + 1 < fractions.size:
            upcoming = done + 1
        sim.step(upcoming - done)
        done = upcoming

    arrival = arrival_times(times, speed, threshold)
    _, first_peak = first_peaks(speed)
    departure = float(arrival[source])
    layout = network_layout(sim.system)
    on_grid = layout == "grid"
    straight = np.linalg.norm(x0 - x0[source], axis=1)
    readings = []
    for probe in probe_list:
        here, direction = _theory_direction(sim, paths, probe, on_grid, x0)
        branch = excited_branch(sim, here, direction, along, x0)
        distance = float(straight[probe] if on_grid else paths.length[probe])
        flight = float(arrival[probe]) - departure
        measured = distance / flight if flight > 0 else math.nan
        readings.append(ProbeReading(
            particle=probe, hops=int(paths.hops[probe]), path_length=float(paths.length[probe]),
            straight_distance=float(straight[probe]), distance=distance,
            arrival=float(arrival[probe]), speed=measured, theory=branch.speed,
            ratio=measured / branch.speed if branch.speed > 0 else math.nan,
            mode=branch.mode, peak_speed=float(first_peak[probe]),
        ))
    return WaveResult(
        source=source, impulse=vector, integrator=sim.integrator, dt=step_dt,
        duration=steps * step_dt, pulse_duration=pulse_duration, threshold=threshold,
        times=times, speed=speed, displacement=displacement, departure=departure,
        arrival=arrival, paths=paths, start_positions=x0, grid_shape=sim.system.grid_shape,
        layout=layout, probes=readings,
        model=describe_theory(sim, paths, probe_list[0], layout, x0, along),
        integrator_note=describe_integrator(sim, pulse_duration),
    )


# --- what the numbers mean -------------------------------------------------------------
def _springs_at(sim: Simulation, particle: int) -> np.ndarray:
    a, b = sim.system.springs[:, 0], sim.system.springs[:, 1]
    return np.flatnonzero((a == particle) | (b == particle))


def describe_theory(sim: Simulation, paths: Paths, probe: int, layout: str, x0: np.ndarray,
                    along: np.ndarray) -> str:
    """The theory's formulas with this network's numbers (m, N/m, N, kg, m/s), one line each."""
    on_grid = layout == "grid"
    here, direction = _theory_direction(sim, paths, probe, on_grid, x0)
    springs = _springs_at(sim, here)
    mass = float(sim.masses[here])
    a, b = sim.system.springs[springs, 0], sim.system.springs[springs, 1]
    spacing = float(np.linalg.norm(x0[a] - x0[b], axis=1).min())
    if on_grid:
        row_step = x0[min(here + 1, sim.n_particles - 1)] - x0[here]
        column_step = x0[min(here + sim.system.grid_shape[1], sim.n_particles - 1)] - x0[here]
        axis = row_step / np.linalg.norm(row_step)
        normal = np.cross(row_step, column_step)
        normal /= np.linalg.norm(normal)
        lines = [f"square grid, spacing a = {spacing:.4g} m, m = {mass:.4g} kg; long-wavelength "
                 "speeds along a grid axis (structural k_s, shear k_d, bend k_b in N/m):"]
        values, vectors = np.linalg.eigh(christoffel(sim, here, axis, positions=x0))
        for value, vector in sorted(zip(values, vectors.T), key=lambda pair: -pair[0]):
            branch = excited_branch(sim, here, axis, vector, x0)
            shares = ", ".join(f"{family} {share:.0%}" for family, share in branch.shares.items()
                               if math.isfinite(share))
            if abs(float(vector @ normal)) >= LONGITUDINAL_COSINE:
                if sim.planar:
                    continue
                tension = branch.speed if branch.speed > 1e-6 * math.sqrt(values.max()) else 0.0
                lines.append(f"  out of plane (membrane): c = sqrt(T/mu) = {tension:.4g} m/s"
                             + ("" if tension else " (no tension: no linear wave)"))
            elif branch.longitudinal:
                lines.append(f"  P (longitudinal, in plane): c = a*sqrt((k_s + k_d + 4 k_b)/m) = "
                             f"{branch.speed:.4g} m/s (share of c^2: {shares})")
            else:
                lines.append(f"  S (transverse, in plane): c = a*sqrt(k_d/m) = "
                             f"{branch.speed:.4g} m/s (share of c^2: {shares})")
        return "\n".join(lines)
    if layout == "chain":
        k = float(sim.stiffness[springs].mean())
        tension = float(np.mean(sim.stiffness[springs] * (
            np.linalg.norm(x0[a] - x0[b], axis=1) - sim.rest_lengths[springs])))
        longitudinal = spacing * math.sqrt(k / mass)
        lines = [f"chain, spacing a = {spacing:.4g} m, k = {k:.4g} N/m, m = {mass:.4g} kg: "
                 f"longitudinal c = a*sqrt(k/m) = {longitudinal:.4g} m/s"]
        if tension > 0:
            mu = mass / spacing
            lines.append(f"  tension T = {tension:.4g} N, mu = m/a = {mu:.4g} kg/m: transverse "
                         f"c = sqrt(T/mu) = {math.sqrt(tension / mu):.4g} m/s")
        else:
            lines.append("  no tension: no linear transverse wave (c = sqrt(T/mu) = 0)")
        return "\n".join(lines)
    branch = excited_branch(sim, here, direction, along, x0)
    return (f"network: long-wavelength {branch.mode} speed from the springs at particle {here} "
            f"along the path, c = sqrt(eig Gamma) = {branch.speed:.4g} m/s (exact only for a "
            "uniform lattice)")


def describe_integrator(sim: Simulation, pulse_duration: float) -> str:
    """How the integrator's dispersion and damping change speed and amplitude at this dt,
    at the pulse's frequency 2 pi / tau and at the lattice's top frequency."""
    top = 2.0 / sim.system.stable_dt()
    frequencies = [("the lattice's top frequency (Gershgorin bound)", top)]
    if pulse_duration > 0:
        frequencies.insert(0, ("the pulse's frequency 2*pi/tau", 2.0 * math.pi / pulse_duration))
    parts = []
    for label, omega in frequencies:
        if not math.isfinite(omega):
            continue
        gain, ratio = integrator_response(sim.integrator, omega * sim.dt)
        if not math.isfinite(ratio):
            parts.append(f"at {label} {omega:.4g} rad/s (w*dt = {omega * sim.dt:.3g}) the step "
                         "does not oscillate: such waves are lost or blow up")
            continue
        kind = "numerical damping" if gain < 1 else "growth"
        effect = ("no numerical damping" if abs(gain - 1.0) < 1e-3 else
                  f"amplitude x{gain:.3f} per period ({kind})")
        parts.append(f"at {label} {omega:.4g} rad/s (w*dt = {omega * sim.dt:.3g}): frequency and "
                     f"phase speed x{ratio:.4f}, {effect}")
    return f"{sim.integrator}, dt = {sim.dt:g} s: " + "; ".join(parts)
