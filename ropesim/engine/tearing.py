"""Tearing and strain limiting: per-spring break strains, the broken mask and the
Provot stretch limit, as numba kernels and the small state object a Simulation keeps.

Tearing: a spring whose strain (l - L) / L exceeds its break strain at the end of a step
breaks. A broken spring keeps its place in the spring list but gets stiffness and damping
0 (written into the Params through the Simulation, which notifies the integrators), so
every integrator and kernel path runs unchanged and a broken spring exerts no force; the
user's stiffness and damping are kept here and come back on reset.

Strain limiting (Provot 1995): after the tearing check, every intact spring longer than
(1 + max_stretch) L is shortened back to that length by moving its two ends along it,
in inverse-mass proportion (fixed ends do not move), in Gauss-Seidel passes over the
springs until none is longer than (1 + max_stretch)(1 + STRETCH_TOLERANCE) L or
MAX_STRETCH_PASSES passes ran. Each move dx also changes the velocity by dx / dt, so the
velocities stay consistent with the corrected positions (the stretching speed is removed).

Crack tips (``crack_tip_factor`` f < 1, ``crack_tip_time`` T s): when a spring breaks
by strain at the end of a step at time t, every intact spring that shares a particle
with it is weakened until t + T: while weakened its break strain is f times its own.
The next steps' checks use the weakened threshold, so a rip runs along the cloth the way
fabric tears (the stress concentrates at the tip of a crack) instead of stopping at the
first broken spring. f = 1 (the default) is off. Springs broken by ``break_springs`` (a
cut) do not weaken their neighbours; the crack starts at the first strain break.

Order in a step: integrator, grab, tearing check (on the unlimited strain), strain
limiting, contacts. So a limited spring still breaks when a grab or a collider pulls it
past its break strain within one step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from .model import as_index_array, check_index_range, show
from .state import Params

#: Gauss-Seidel passes of the stretch limit, at most, per step
MAX_STRETCH_PASSES = 100
#: relative slack in the stretch limit at which the passes stop early
STRETCH_TOLERANCE = 1e-3


@njit(cache=True)
def break_overstrained(x, spring_a, spring_b, rest, break_strain, broken, weak_until, time,
                       factor, fresh):
    """Mark every intact spring whose strain (l - L) / L exceeds its break strain (times
    ``factor`` while weak_until[s] > time, s) as broken, listing it in ``fresh``; returns
    how many broke."""
    count = 0
    for s in range(spring_a.shape[0]):
        if broken[s] or rest[s] <= 0.0:
            continue
        a, b = spring_a[s], spring_b[s]
        dx, dy, dz = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
        limit = break_strain[s] * factor if weak_until[s] > time else break_strain[s]
        if (math.sqrt(dx * dx + dy * dy + dz * dz) - rest[s]) / rest[s] > limit:
            broken[s] = True
            fresh[count] = s
            count += 1
    return count


@njit(cache=True)
def weaken_neighbours(fresh, count, spring_a, spring_b, starts, incident, broken, weak_until,
                      until):
    """weak_until = until (s) for every intact spring sharing a particle with one of the
    first ``count`` springs in ``fresh`` (``starts``, ``incident``: the springs of each
    particle, CSR)."""
    for k in range(count):
        s = fresh[k]
        for p in (spring_a[s], spring_b[s]):
            for e in range(starts[p], starts[p + 1]):
                other = incident[e]
                if not broken[other]:
                    weak_until[other] = until


def incident_springs(spring_a: np.ndarray, spring_b: np.ndarray,
                     n_particles: int) -> tuple[np.ndarray, np.ndarray]:
    """The springs of each particle as CSR (starts (n + 1,), incident (2 m,)) int64."""
    ends = np.concatenate([spring_a, spring_b]).astype(np.int64)
    order = np.argsort(ends, kind="stable")
    m = spring_a.shape[0]
    incident = np.where(order < m, order, order - m).astype(np.int64)
    starts = np.zeros(n_particles + 1, dtype=np.int64)
    np.cumsum(np.bincount(ends, minlength=n_particles), out=starts[1:])
    return starts, incident


@njit(cache=True)
def masked_coefficients(values, broken, out):
    """out = values, 0 where broken (stiffness N/m or damping N*s/m)."""
    for s in range(values.shape[0]):
        out[s] = 0.0 if broken[s] else values[s]


@njit(cache=True)
def zero_broken(strain, broken):
    """Set the strain of broken springs to 0 (they carry none)."""
    for s in range(strain.shape[0]):
        if broken[s]:
            strain[s] = 0.0


@njit(cache=True)
def limit_stretch(x, v, spring_a, spring_b, rest, inv_mass, fixed, broken, max_stretch, dt,
                  max_passes, tolerance):
    """Provot strain limiting in Gauss-Seidel passes (module docstring); returns the
    number of passes run."""
    inv_dt = 1.0 / dt
    slack = (1.0 + max_stretch) * (1.0 + tolerance)
    for sweep in range(max_passes):
        worst = 0.0
        for s in range(spring_a.shape[0]):
            if broken[s] or rest[s] <= 0.0:
                continue
            a, b = spring_a[s], spring_b[s]
            wa = 0.0 if fixed[a] else inv_mass[a]
            wb = 0.0 if fixed[b] else inv_mass[b]
            if wa + wb <= 0.0:
                continue
            dx, dy, dz = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            limit = (1.0 + max_stretch) * rest[s]
            if length <= limit:
                continue
            worst = max(worst, length / rest[s])
            excess = (length - limit) / (length * (wa + wb))
            for d, delta in ((0, dx), (1, dy), (2, dz)):
                move = excess * delta
                x[a, d] += wa * move
                x[b, d] -= wb * move
                v[a, d] += wa * move * inv_dt
                v[b, d] -= wb * move * inv_dt
        if worst <= slack:
            return sweep + 1
    return max_passes


@njit(cache=True, inline="always")
def triangle_torn(edge_springs, broken, t):
    """Whether triangle t has lost a spring along an edge (edge_springs (t, 3), -1 = no
    spring on that edge)."""
    torn = False
    for e in range(3):
        s = edge_springs[t, e]
        if s >= 0 and broken[s]:
            torn = True
    return torn


@njit(cache=True)
def intact_triangles(triangles, edge_springs, broken, out):
    """Copy into out (t, 3) the triangles none of whose edge springs (t, 3; -1 = no
    spring on that edge) is broken; returns how many."""
    count = 0
    for t in range(triangles.shape[0]):
        if not triangle_torn(edge_springs, broken, t):
            for e in range(3):
                out[count, e] = triangles[t, e]
            count += 1
    return count


def triangle_edge_springs(triangles: np.ndarray, spring_a: np.ndarray,
                          spring_b: np.ndarray, n_particles: int) -> np.ndarray:
    """(t, 3) int64: the spring along each triangle edge (corners 0-1, 1-2, 2-0), -1 where
    no spring joins those corners."""
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    lo = np.minimum(spring_a, spring_b).astype(np.int64)
    hi = np.maximum(spring_a, spring_b).astype(np.int64)
    keys = lo * n_particles + hi
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    out = np.full(tris.shape, -1, dtype=np.int64)
    if not len(keys):
        return out
    for e in range(3):
        p, q = tris[:, e], tris[:, (e + 1) % 3]
        edge = np.minimum(p, q) * n_particles + np.maximum(p, q)
        at = np.minimum(np.searchsorted(sorted_keys, edge), len(keys) - 1)
        out[:, e] = np.where(sorted_keys[at] == edge, order[at], -1)
    return out


def break_strains(value: Any, m: int) -> np.ndarray:
    """Validated (m,) break strains (dimensionless, > 0; inf = unbreakable) from a scalar
    or a per-spring sequence."""
    try:
        strain = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"break_strain: expected a number or {m} numbers (strain, "
                        f"dimensionless), got {show(value)}") from None
    if strain.ndim == 0:
        strain = np.full(m, float(strain))
    if strain.shape != (m,):
        raise ValueError(f"break_strain: expected a scalar or one value per spring ({m}), "
                         f"got shape {strain.shape}")
    bad = np.flatnonzero(~(strain > 0))
    if bad.size:
        raise ValueError(f"break_strain: must be > 0 (inf = unbreakable); spring "
                         f"{int(bad[0])} has {strain[bad[0]]}")
    return strain


def crack_tip_setting(value: Any, field: str) -> float:
    """Validated crack_tip_factor (in (0, 1], 1 = off) or crack_tip_time (> 0 s)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{field}: expected a number, got {show(value)}")
    value = float(value)
    if field == "crack_tip_factor" and not 0.0 < value <= 1.0:
        raise ValueError(f"crack_tip_factor: must be in (0, 1] (1 = off), got {value}")
    if field == "crack_tip_time" and not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"crack_tip_time: must be a finite number > 0 s, got {value}")
    return value


def stretch_limit(value: Any) -> float | None:
    """Validated max_stretch: None (off) or a finite number > 0 (0.1 = 10 %)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"max_stretch: expected None (off) or a number > 0, got {show(value)}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"max_stretch: must be None (off) or a finite number > 0 "
                         f"(0.1 = 10 %), got {value}")
    return value


class Tearing:
    """The tearing state of one simulation: break_strain (m,), the broken mask (m,) bool,
    the user's stiffness (N/m) and damping (N*s/m) that broken springs lose, and the
    crack tips: weak_until (m,) s, crack_tip_factor, crack_tip_time (s)."""

    def __init__(self, params: Params):
        m = params.stiffness.shape[0]
        self.break_strain = np.full(m, np.inf)
        self.broken = np.zeros(m, dtype=np.bool_)
        self.stiffness = params.stiffness.copy()
        self.damping = params.damping.copy()
        self.breakable = False  # any finite break strain
        self.n_broken = 0
        self.crack_tip_factor = 1.0  # off
        self.crack_tip_time = 0.05
        self._crack_arrays(m)

    def _crack_arrays(self, m: int) -> None:
        self.weak_until = np.full(m, -np.inf)
        self._fresh = np.zeros(m, dtype=np.int64)
        self._incident: tuple[np.ndarray, np.ndarray] | None = None  # made on first use

    def set_springs(self, stiffness: np.ndarray, damping: np.ndarray,
                    break_strain: np.ndarray, broken: np.ndarray) -> None:
        """A live topology edit (engine/topology.py): the per-spring arrays of the new
        spring list (user stiffness N/m, damping N*s/m, break strains, broken mask)."""
        self.stiffness, self.damping = stiffness, damping
        self.break_strain, self.broken = break_strain, broken
        self.breakable = bool(np.isfinite(break_strain).any())
        self.n_broken = int(np.count_nonzero(broken))
        self._crack_arrays(broken.shape[0])

    def set_break_strain(self, value: Any) -> None:
        self.break_strain[:] = break_strains(value, self.broken.shape[0])
        self.breakable = bool(np.isfinite(self.break_strain).any())

    def check(self, x: np.ndarray, spring_a: np.ndarray, spring_b: np.ndarray,
              rest: np.ndarray, time: float) -> int:
        """Break the springs strained past their break strain at ``time`` (s, the end of
        the step), weakening the neighbours of the fresh breaks; returns how many broke."""
        count = break_overstrained(x, spring_a, spring_b, rest, self.break_strain, self.broken,
                                   self.weak_until, time, self.crack_tip_factor, self._fresh)
        if count and self.crack_tip_factor < 1.0:
            if self._incident is None:
                self._incident = incident_springs(spring_a, spring_b, x.shape[0])
            weaken_neighbours(self._fresh, count, spring_a, spring_b, *self._incident,
                              self.broken, self.weak_until, time + self.crack_tip_time)
        self.n_broken += count
        return count

    def break_indices(self, indices: Any) -> int:
        """Break springs by index; returns how many were intact before."""
        index = as_index_array(indices, "indices").ravel()
        check_index_range(index, "indices", self.broken.shape[0])
        fresh = int(np.count_nonzero(~self.broken[index]))
        self.broken[index] = True
        self.n_broken = int(np.count_nonzero(self.broken))
        return fresh

    def restore(self) -> bool:
        """Mend every spring; returns whether any was broken."""
        had = self.n_broken > 0
        self.broken[:] = False
        self.n_broken = 0
        self.weak_until[:] = -np.inf
        return had

    def write(self, params: Params) -> None:
        """params.stiffness and damping = the user's values, 0 on broken springs."""
        masked_coefficients(self.stiffness, self.broken, params.stiffness)
        masked_coefficients(self.damping, self.broken, params.damping)


def mend_springs(tearing: Tearing, indices: Any) -> int:
    """Mend the springs at ``indices`` (undo of a cut); returns how many were broken.
    The Simulation writes their stiffness and damping back (Simulation.restore_springs)."""
    index = as_index_array(indices, "indices").ravel()
    check_index_range(index, "indices", tearing.broken.shape[0])
    mended = int(np.count_nonzero(tearing.broken[index]))
    tearing.broken[index] = False
    tearing.n_broken = int(np.count_nonzero(tearing.broken))
    return mended
