"""XPBD: extended position-based dynamics (Macklin, Mueller and Chentanez, "XPBD:
Position-Based Simulation of Compliant Constrained Dynamics", MIG 2016), in the
small-steps scheme (Macklin et al., "Small Steps in Physics Simulation", SCA 2019).

Every spring is a distance constraint C = |x_i - x_j| - L with compliance alpha = 1/k
(m/N), so it models the same spring as the other integrators, and its damper c
(N*s/m) is XPBD's damping term (gamma = alpha c / h). One step of dt is ``substeps``
substeps of h = dt / substeps; each substep

    v += h (g + f_ext / m);  x_prev = x;  x += h v          (prediction)
    ``iterations`` Gauss-Seidel passes over the springs, colour by colour:
        dlambda = -(C + alpha~ lambda + gamma grad C . (x - x_prev))
                  / ((1 + gamma) (w_i + w_j) + alpha~),   alpha~ = alpha / h^2
        x_i += w_i dlambda n,  x_j -= w_j dlambda n
    v = (x - x_prev) / h, then drag v *= exp(-drag h)

written in the stiffness form (multiplied through by h^2 k), which also holds a spring
of zero stiffness. f_ext is the attached forces at the step's start, held over the
substeps; w = 1/m, 0 for fixed (pinned or grabbed) particles. ``compliance`` replaces
every spring's 1/k by one value (0: rigid rods, plain PBD projection).

The default is the small-steps scheme: 20 substeps of one iteration each. Springs of
one edge colour share no particle, so a colour is projected in parallel; the serial
and the parallel pass give identical results (the same order within every colour).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..kernels.colouring import edge_colouring
from ..kernels.particles import MIN_LENGTH, hold, speed_result, spring_vector, track_speed
from ..state import Model, State
from .base import Integrator, register_integrator
from .colour_passes import ColourPasses, CountSetting, number_setting

#: fastmath flags of the projection: no 'nnan'/'ninf' (the NaN check on the speed must
#: stay); 'arcp' lets x / l become x * (1 / l)
_FAST = {"nsz", "contract", "arcp"}
#: default substeps per step and Gauss-Seidel iterations per substep (small steps)
DEFAULT_SUBSTEPS = 20
DEFAULT_ITERATIONS = 1
#: slices each colour is cut into for the parallel pass (fixed: no thread-count effect)
CHUNKS = 64


@njit(cache=True, error_model="numpy", boundscheck=False)
def _predict(x, v, x_prev, inv_mass, fixed, gravity, external, has_external, h, lo, hi):
    """x_prev = x; v += h (g + w f_ext); x += h v for free particles [lo, hi)."""
    for i in range(lo, hi):
        for d in range(3):
            x_prev[i, d] = x[i, d]
        if fixed[i]:
            continue
        for d in range(3):
            a = gravity[d] + (inv_mass[i] * external[i, d] if has_external else 0.0)
            v[i, d] += h * a
            x[i, d] += h * v[i, d]


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath=_FAST)
def _project(lo, hi, order, x, x_prev, spring_a, spring_b, rest, k, c, inv_mass, fixed,
             lam, h, compliance):
    """One Gauss-Seidel projection of springs order[lo:hi] (compliance < 0: each
    spring's 1/k; 0: rigid; > 0: that compliance, m/N)."""
    h2 = h * h
    for e in range(lo, hi):
        s = order[e]
        i = spring_a[s]
        j = spring_b[s]
        wi = 0.0 if fixed[i] else inv_mass[i]
        wj = 0.0 if fixed[j] else inv_mass[j]
        wsum = wi + wj
        if wsum == 0.0:
            continue
        dx, dy, dz, length = spring_vector(x, i, j)
        if length < MIN_LENGTH:
            continue
        inv = 1.0 / length
        nx = dx * inv
        ny = dy * inv
        nz = dz * inv
        C = length - rest[s]
        if compliance == 0.0:
            dlam = -C / wsum
        else:
            stiff = h2 * k[s] if compliance < 0.0 else h2 / compliance  # h^2 / alpha
            damp = h * c[s] if compliance < 0.0 else 0.0
            moved = (nx * (x[i, 0] - x_prev[i, 0] - x[j, 0] + x_prev[j, 0])
                     + ny * (x[i, 1] - x_prev[i, 1] - x[j, 1] + x_prev[j, 1])
                     + nz * (x[i, 2] - x_prev[i, 2] - x[j, 2] + x_prev[j, 2]))
            dlam = -(stiff * C + damp * moved + lam[s]) / (1.0 + (stiff + damp) * wsum)
        lam[s] += dlam
        x[i, 0] += wi * dlam * nx
        x[i, 1] += wi * dlam * ny
        x[i, 2] += wi * dlam * nz
        x[j, 0] -= wj * dlam * nx
        x[j, 1] -= wj * dlam * ny
        x[j, 2] -= wj * dlam * nz


@njit(cache=True, error_model="numpy", boundscheck=False)
def _finish(x, v, x_prev, fixed, h, damp, lo, hi):
    """v = (x - x_prev) / h, then drag, for particles [lo, hi); (max |v|^2, check sum).

    Written as v + (x - x_predicted) / h, x_predicted recomputed as _predict made it (the
    same bits): a particle no constraint moved keeps its velocity exactly, where
    (x - x_prev) / h would lose digits of x at every substep."""
    max_sq, bad = 0.0, 0.0
    for i in range(lo, hi):
        if fixed[i]:
            hold(v, i, 0.0)
            continue
        for d in range(3):
            predicted = x_prev[i, d] + h * v[i, d]
            v[i, d] = (v[i, d] + (x[i, d] - predicted) / h) * damp
        max_sq, bad = track_speed(x, v, i, max_sq, bad, 0.0)
    return max_sq, bad


@njit(cache=True, error_model="numpy", boundscheck=False)
def xpbd_substep(x, v, x_prev, spring_a, spring_b, rest, k, c, inv_mass, fixed, gravity,
                 external, has_external, order, starts, lam, h, iterations, compliance,
                 damp, chunks, results):
    """One XPBD substep of h s, serial; returns the max |v|^2 (NaN if not finite).
    chunks, results: the parallel version's particle split (unused here)."""
    n = x.shape[0]
    _predict(x, v, x_prev, inv_mass, fixed, gravity, external, has_external, h, 0, n)
    lam[:] = 0.0
    for _ in range(iterations):
        _project(0, order.shape[0], order, x, x_prev, spring_a, spring_b, rest, k, c,
                 inv_mass, fixed, lam, h, compliance)
    max_sq, bad = _finish(x, v, x_prev, fixed, h, damp, 0, n)
    return speed_result(max_sq, bad)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def xpbd_substep_parallel(x, v, x_prev, spring_a, spring_b, rest, k, c, inv_mass, fixed,
                          gravity, external, has_external, order, starts, lam, h, iterations,
                          compliance, damp, chunks, results):
    """xpbd_substep with each colour's springs in parallel (identical results)."""
    n_chunks = chunks.shape[0] - 1
    for t in prange(n_chunks):
        _predict(x, v, x_prev, inv_mass, fixed, gravity, external, has_external, h,
                 chunks[t], chunks[t + 1])
    lam[:] = 0.0
    for _ in range(iterations):
        for q in range(starts.shape[0] - 1):
            lo = starts[q]
            size = starts[q + 1] - lo
            for t in prange(CHUNKS):  # no two springs of a colour share a particle
                _project(lo + size * t // CHUNKS, lo + size * (t + 1) // CHUNKS, order, x,
                         x_prev, spring_a, spring_b, rest, k, c, inv_mass, fixed, lam, h,
                         compliance)
    for t in prange(n_chunks):
        m, b = _finish(x, v, x_prev, fixed, h, damp, chunks[t], chunks[t + 1])
        results[t, 0] = m
        results[t, 1] = b
    max_sq, bad = 0.0, 0.0
    for t in range(n_chunks):
        max_sq = max(max_sq, results[t, 0])
        bad += results[t, 1]
    return speed_result(max_sq, bad)


@njit(cache=True, error_model="numpy", boundscheck=False)
def constraint_error(x, x_prev, spring_a, spring_b, rest, k, c, inv_mass, fixed, lam, h,
                     compliance):
    """Largest |C + alpha~ lambda + gamma grad C . (x - x_prev)| over the springs, m: the
    residual of XPBD's compliant-constraint equations (springs between two fixed
    particles, of zero stiffness or without direction are left out)."""
    worst = 0.0
    h2 = h * h
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        if fixed[i] and fixed[j]:
            continue
        dx, dy, dz, length = spring_vector(x, i, j)
        if length < MIN_LENGTH:
            continue
        r = length - rest[s]
        if compliance != 0.0:
            stiff = h2 * k[s] if compliance < 0.0 else h2 / compliance
            if stiff == 0.0:
                continue
            damp = h * c[s] if compliance < 0.0 else 0.0
            moved = (dx * (x[i, 0] - x_prev[i, 0] - x[j, 0] + x_prev[j, 0])
                     + dy * (x[i, 1] - x_prev[i, 1] - x[j, 1] + x_prev[j, 1])
                     + dz * (x[i, 2] - x_prev[i, 2] - x[j, 2] + x_prev[j, 2])) / length
            r += (damp * moved + lam[s]) / stiff
        if not abs(r) <= worst:  # NaN propagates
            worst = abs(r)
    return worst


@register_integrator
class XPBD(Integrator):
    """XPBD in the small-steps scheme (see the module docstring).

    Attributes, editable live: ``substeps`` per step (default 20), ``iterations`` of
    Gauss-Seidel per substep (default 1), ``compliance`` (None: each spring's 1/k, m/N;
    a number >= 0: that compliance for every spring, 0 = rigid rods). ``stats``:
    ``iterations`` = Gauss-Seidel passes of the last step (substeps x iterations),
    ``residual`` = its constraint error (:func:`constraint_error`, m, after the last
    pass), ``converged`` = that error is finite. The kernels read the Params every
    substep, so live edits need no notice (the base notify_model_changed).
    """

    name = "xpbd"
    description = "XPBD, small steps: springs as compliant constraints, any dt"
    unconditionally_stable = True
    has_solver_stats = True
    substeps = CountSetting()  # substeps per step, each of dt / substeps s
    iterations = CountSetting()  # Gauss-Seidel iterations per substep

    def __init__(self, model: Model):
        super().__init__(model)
        self.substeps = DEFAULT_SUBSTEPS
        self.iterations = DEFAULT_ITERATIONS
        self.compliance = None
        n, m, dtype = model.n_particles, model.n_springs, model.dtype
        self._x_prev = np.zeros((n, 3), dtype)
        self._lambda = np.zeros(m, np.float64)
        colouring = edge_colouring(model.spring_a, model.spring_b, n) if m else None
        if colouring is None:  # > 128 colours (or no springs): one serial pass in order
            self._order = np.arange(m, dtype=np.int64)
            self._starts = np.array([0, m], np.int64)
        else:
            self._order, self._starts = colouring
        self._passes = ColourPasses(colouring is not None, m)
        self._chunks = np.linspace(0, n, CHUNKS + 1).astype(np.int64)
        self._results = np.zeros((CHUNKS, 2))

    @property
    def compliance(self) -> float | None:
        """None (each spring's 1/k) or one compliance for every spring, m/N (0: rigid)."""
        return self._compliance

    @compliance.setter
    def compliance(self, value: float | None) -> None:
        if value is not None:
            value = number_setting(value, "xpbd.compliance", "None or a number >= 0 (m/N)")
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"xpbd.compliance: expected None or a finite number >= 0 "
                                 f"(m/N), got {value!r}")
        self._compliance = value

    def step(self, state: State, dt: float) -> float:
        model, p = self.model, self.model.params
        external, has_external = self.external_forces(state)  # read only if has_external
        h = dt / self._substeps
        compliance = -1.0 if self._compliance is None else self._compliance
        damp = math.exp(-float(p.drag[0]) * h) if model.drag_on else 1.0
        gravity = model.gravity()
        result = 0.0
        for _ in range(self._substeps):
            result = self._passes.run(
                xpbd_substep, xpbd_substep_parallel, state.x, state.v, self._x_prev,
                model.spring_a, model.spring_b, p.rest_lengths, p.stiffness, p.damping,
                p.inv_mass, p.fixed, gravity, external, has_external, self._order,
                self._starts, self._lambda, h, self._iterations, compliance, damp,
                self._chunks, self._results)
        stats = self.stats
        stats.iterations = self._substeps * self._iterations
        stats.total_iterations += stats.iterations
        stats.implicit_steps += 1
        stats.residual = float(constraint_error(
            state.x, self._x_prev, model.spring_a, model.spring_b, p.rest_lengths,
            p.stiffness, p.damping, p.inv_mass, p.fixed, self._lambda, h, compliance))
        stats.converged = math.isfinite(stats.residual)
        return float(result)

    # --- snapshots (engine/snapshot.py) ---------------------------------------------------
    def save_warm(self) -> dict:
        """The settings (every substep starts from the state: nothing else carries)."""
        return {"substeps": self._substeps, "iterations": self._iterations,
                "compliance": self._compliance}

    def load_warm(self, warm: dict) -> None:
        self.substeps = warm["substeps"]
        self.iterations = warm["iterations"]
        self.compliance = warm["compliance"]
