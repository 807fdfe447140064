"""The stability gauge: the explicit integrators' largest stable time step, estimated.

Symplectic Euler on one mode with angular frequency w and damping rate b (the mode's
x'' = -w^2 x - b x', with M^-1 K -> w^2 and M^-1 D -> b) is stable while

    w^2 dt^2 + 2 b dt < 4          (dt < 2 / w without damping)

so the limit of a whole system is the dt at which the largest eigenvalue of
M^-1/2 (dt^2 K + 2 dt D) M^-1/2 reaches 4, where K is the springs' stiffness Jacobian
(ropesim.engine.forces.springs.stiffness_blocks, transverse part clamped >= 0) and D
their dampers' c n n^T at the current positions. The eigenvalues come from a short
Lanczos run (a few power iterations whose Krylov space is kept), matrix-free through
``system_product``; the dt is found by a fixed-point iteration on the Rayleigh
quotients of the top Ritz vector. Drag (which only helps) is not counted.

:func:`stability_limit` gives the limit (s), :func:`stability_margin` dt / limit
(< 1 is stable); :class:`StabilityGauge` keeps the estimate and refreshes it only when
the stiffness, damping, masses, rest lengths or pins change.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from .forces.springs import stiffness_blocks, system_product

#: Lanczos steps per eigenvalue estimate; the top Ritz value of a chain or cloth is
#: within ~1% of the true largest eigenvalue after this many
LANCZOS_STEPS = 40
#: fixed-point iterations of the damped limit, and their relative stopping change
LIMIT_ITERATIONS = 6
LIMIT_TOLERANCE = 1e-3


@njit(cache=True)
def _scaled_operator(z, inv_sqrt_mass, mass, spring_a, spring_b, blocks, normals, c,
                     alpha, beta, fixed, work, scaled, out):
    """out = M^-1/2 (alpha K + beta D) M^-1/2 z for the free particles (fixed rows 0)."""
    n = z.shape[0]
    for i in range(n):
        s = 0.0 if fixed[i] else inv_sqrt_mass[i]
        for d in range(3):
            scaled[i, d] = s * z[i, d]
    system_product(scaled, mass, spring_a, spring_b, blocks, normals, c, alpha, beta, fixed,
                   work)
    for i in range(n):
        s = 0.0 if fixed[i] else inv_sqrt_mass[i]
        for d in range(3):
            # system_product adds M p: take it off again, leaving (alpha K + beta D) p
            out[i, d] = s * (work[i, d] - mass[i] * scaled[i, d])


class _Operator:
    """The mass-scaled spring operators of one simulation at its current positions."""

    def __init__(self, sim: Any):
        p = sim.params
        self.spring_a = np.ascontiguousarray(sim.system.springs[:, 0], dtype=np.int32)
        self.spring_b = np.ascontiguousarray(sim.system.springs[:, 1], dtype=np.int32)
        self.mass = p.mass.astype(np.float64)
        self.inv_sqrt_mass = 1.0 / np.sqrt(self.mass)
        self.fixed = np.ascontiguousarray(p.fixed, dtype=np.uint8)
        self.c = p.damping.astype(np.float64)
        m, n = self.spring_a.shape[0], self.mass.shape[0]
        self.blocks = np.zeros((m, 6))
        self.normals = np.zeros((m, 3))
        stiffness_blocks(sim.positions.astype(np.float64), self.spring_a, self.spring_b,
                         p.rest_lengths.astype(np.float64), p.stiffness.astype(np.float64),
                         True, self.blocks, self.normals)
        self.work = np.zeros((n, 3))
        self.scaled = np.zeros((n, 3))
        self.free = int(n - np.count_nonzero(self.fixed))

    def apply(self, z: np.ndarray, alpha: float, beta: float) -> np.ndarray:
        out = np.empty_like(z)
        _scaled_operator(z, self.inv_sqrt_mass, self.mass, self.spring_a, self.spring_b,
                         self.blocks, self.normals, self.c, alpha, beta, self.fixed,
                         self.work, self.scaled, out)
        return out

    def start_vector(self) -> np.ndarray:
        """A fixed pseudo-random start (the same estimate every time), zero on fixed rows."""
        z = np.random.default_rng(12345).standard_normal((self.mass.shape[0], 3))
        z[self.fixed.astype(bool)] = 0.0
        return z

    def top_eigenpair(self, alpha: float, beta: float,
                      steps: int = LANCZOS_STEPS) -> tuple[float, np.ndarray]:
        """Largest eigenvalue of M^-1/2 (alpha K + beta D) M^-1/2 and its Ritz vector."""
        q = self.start_vector()
        norm = np.linalg.norm(q)
        if norm == 0.0:
            return 0.0, q
        q /= norm
        basis, diagonal, off = [q], [], []
        previous = np.zeros_like(q)
        beta_prev = 0.0
        scale = 0.0  # the run works on the operator / scale (extreme stiffness: no overflow)
        for _ in range(min(steps, 3 * self.free)):
            w = self.apply(basis[-1], alpha, beta)
            if scale == 0.0:
                scale = float(np.abs(w).max())
                if not math.isfinite(scale):
                    return math.inf, q
                if scale == 0.0:
                    return 0.0, q
            w /= scale
            a = float(np.vdot(w, basis[-1]))
            w -= a * basis[-1] + beta_prev * previous
            diagonal.append(a)
            b = float(np.linalg.norm(w))
            if b < 1e-12 * max(abs(a), 1e-300):
                break
            off.append(b)
            previous, beta_prev = basis[-1], b
            basis.append(w / b)
        k = len(diagonal)
        tri = np.diag(diagonal) + np.diag(off[:k - 1], 1) + np.diag(off[:k - 1], -1)
        values, vectors = np.linalg.eigh(tri)
        ritz = sum(vectors[i, -1] * basis[i] for i in range(k))
        return float(values[-1]) * scale, ritz

    def rayleigh(self, z: np.ndarray, alpha: float, beta: float) -> float:
        return float(np.vdot(z, self.apply(z, alpha, beta)) / np.vdot(z, z))


def _damped_limit(stiffness_eigen: float, damping_eigen: float) -> float:
    """The dt (s) solving w^2 dt^2 + 2 b dt = 4 (w^2 = stiffness_eigen 1/s^2, b 1/s)."""
    if math.isinf(stiffness_eigen) or math.isinf(damping_eigen):
        return 0.0
    if stiffness_eigen <= 0.0:
        return 2.0 / damping_eigen if damping_eigen > 0.0 else math.inf
    b = damping_eigen
    return (-b + math.sqrt(b * b + 4.0 * stiffness_eigen)) / stiffness_eigen


def _limit(sim: Any) -> tuple[float, float, float]:
    """(limit s, w_max^2 1/s^2, damping rate b 1/s of the limiting mode)."""
    if sim.n_springs == 0:
        return math.inf, 0.0, 0.0
    op = _Operator(sim)
    if op.free == 0:
        return math.inf, 0.0, 0.0
    stiffness_eigen, _ = op.top_eigenpair(1.0, 0.0)
    damping_eigen, _ = op.top_eigenpair(0.0, 1.0)
    dt = _damped_limit(stiffness_eigen, damping_eigen)  # both maxima: a lower bound
    omega_sq, rate = stiffness_eigen, damping_eigen
    if damping_eigen > 0.0 and 0.0 < dt < math.inf:
        for _ in range(LIMIT_ITERATIONS):
            _, mode = op.top_eigenpair(dt * dt, 2.0 * dt)
            omega_sq, rate = op.rayleigh(mode, 1.0, 0.0), op.rayleigh(mode, 0.0, 1.0)
            new_dt = _damped_limit(omega_sq, rate)
            done = abs(new_dt - dt) <= LIMIT_TOLERANCE * dt
            dt = new_dt
            if done:
                break
    return dt, omega_sq, rate


def stability_limit(sim: Any) -> float:
    """Largest stable symplectic-Euler time step of ``sim`` now, s (2 / w_max undamped);
    inf when nothing can move. Estimated (see the module docstring), about 1% accurate."""
    return _limit(sim)[0]


def stability_margin(sim: Any, dt: float | None = None) -> float:
    """dt / stability_limit(sim): below 1 the explicit integrators are stable; ``dt``
    (s) defaults to the simulation's."""
    limit = stability_limit(sim)
    return (sim.dt if dt is None else float(dt)) / limit


def guaranteed_limit(sim: Any) -> float:
    """A time step (s) at or below the stability limit, without an eigenvalue estimate:
    the dt solving w^2 dt^2 + 2 b dt = 4 with Gershgorin's bounds on the free particles
    for w^2 (M^-1 K: 2 / sim.stable_dt(), squared) and for b (M^-1 D: max_i sum_s c_s
    (1/m_i + 1/sqrt(m_i m_j)), 1/s). inf when nothing limits it."""
    stable = sim.stable_dt()
    p = sim.params
    a = np.asarray(sim.system.springs[:, 0])
    b = np.asarray(sim.system.springs[:, 1])
    with np.errstate(all="ignore"):  # extreme parameters overflow: then no guarantee
        omega_sq = 0.0 if math.isinf(stable) else (2.0 / stable) ** 2 if stable > 0 else math.inf
        mass = p.mass.astype(np.float64)
        c = p.damping.astype(np.float64)
        cross = c / np.sqrt(mass[a] * mass[b])
        bound = np.zeros(mass.shape[0])
        np.add.at(bound, a, c / mass[a] + cross)
        np.add.at(bound, b, c / mass[b] + cross)
        bound[p.fixed.astype(bool)] = 0.0
        rate = float(bound.max()) if bound.size else 0.0
        limit = _damped_limit(omega_sq, rate)
    return limit if limit >= 0.0 else 0.0  # NaN (inf / inf): no guarantee


def dt_warning(sim: Any, gauge: "StabilityGauge") -> str | None:
    """The warning for an explicit integrator at ``sim.dt`` past the stability limit
    (the gauge's estimate), or None when the dt is within it (checked first against
    :func:`guaranteed_limit`, so a safe dt needs no eigenvalue estimate)."""
    dt = sim.dt
    if dt <= guaranteed_limit(sim):
        return None
    limit = gauge.limit()
    if dt <= limit:
        return None
    ratio = f"{dt / limit:.3g}" if limit > 0.0 else "inf"
    return (f"dt = {dt:g} s is above the stable step of this system for explicit "
            f"integrators: the stability gauge puts it at {limit:.3g} s (dt / limit = "
            f"{ratio}), so it will likely diverge")


class StabilityGauge:
    """The stability limit of one simulation, kept up to date cheaply: :meth:`limit`
    recomputes only after the stiffness, damping, masses, rest lengths or pins changed
    (or after :meth:`refresh`)."""

    def __init__(self, sim: Any):
        self.sim = sim
        self._key: tuple[bytes, ...] | None = None
        self._limit = math.inf
        self.omega_max = 0.0  # rad/s of the limiting mode
        self.damping_rate = 0.0  # 1/s of the limiting mode

    def _parameters_key(self) -> tuple[bytes, ...]:
        p = self.sim.params
        return tuple(np.ascontiguousarray(a).tobytes() for a in
                     (p.stiffness, p.damping, p.mass, p.rest_lengths, p.fixed))

    def refresh(self) -> float:
        """Recompute now (e.g. after a large change of shape); returns the limit, s."""
        self._limit, omega_sq, self.damping_rate = _limit(self.sim)
        self.omega_max = math.sqrt(max(omega_sq, 0.0))
        self._key = self._parameters_key()
        return self._limit

    def limit(self) -> float:
        """The symplectic-Euler stability limit, s."""
        if self._key is None or self._key != self._parameters_key():
            return self.refresh()
        return self._limit

    def margin(self, dt: float | None = None) -> float:
        """dt / limit (dt defaults to the simulation's, s); >= 1 means it will diverge."""
        return (self.sim.dt if dt is None else float(dt)) / self.limit()


__all__ = ["stability_limit", "stability_margin", "StabilityGauge", "guaranteed_limit",
           "dt_warning"]
