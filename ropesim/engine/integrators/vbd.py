"""Vertex Block Descent (A. H. Chen, Z. Liu, Y. Yang, C. Yuksel: "Vertex Block Descent",
ACM Transactions on Graphics 43(4), SIGGRAPH 2024).

One backward-Euler step of dt = h is the minimiser of the variational energy

    G(x) = sum_i m_i / (2 h^2) |x_i - y_i|^2 + E_springs(x) + D(x),
    y = x_t + h v_t + h^2 (g + f_ext / m)      (inertia; f_ext at the step's start),

E_springs = sum k/2 (l - L)^2 and D the springs' dampers, f = -c ((v_i - v_j) . n) n
with v = (x - x_t) / h. VBD minimises G by block coordinate descent: particle by
particle, one 3x3 Newton step on G with the neighbours held,

    H_i = m_i / h^2 I + sum_s [k ((1 - t) n n^T + t I) + c / h n n^T],  t = max(0, 1 - L/l)
    f_i = m_i / h^2 (y_i - x_i) + sum_s (-k (l - L) - c n . (dx_i - dx_j) / h) n
    x_i += H_i^-1 f_i

(the transverse term t is clamped at zero, so every block is positive definite; the
fixed point, f_i = 0 for all i, is backward Euler's step with the full nonlinear
springs). Particles of one vertex colour share no spring, so a colour is updated in
parallel; serial and parallel sweeps give identical results. ``iterations`` sweeps
per step (default 10); then v = (x - x_t) / h and drag. The initial guess is the
paper's choice (``initialisation``): "previous" x_t, "inertia" x_t + h v_t,
"inertia_acceleration" y, or "adaptive": x_t + h v_t + h^2 a~, where a~ is the part of
the previous step's acceleration along the external one, clamped to [0, |a_ext|]. The
default is "inertia": there is no line search, and on a stiff cloth at 20x the explicit
step limit the guesses that add h^2 g (y, adaptive while the cloth falls) stretch the
springs at the pins so far that the first Newton steps overshoot and tangle the cloth
(tests/test_vbd.py), while "inertia" stays smooth. ``chebyshev_rho`` in (0, 1) turns on
the Chebyshev semi-iterative acceleration of the sweeps (as in the paper) with
that spectral radius estimate; 0 (default) leaves it off.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..kernels.particles import MIN_LENGTH, hold, speed_result, spring_vector, track_speed
from ..kernels.vertex_colouring import vertex_adjacency, vertex_colouring
from ..linalg.multigrid import _inv3 as inverse_3x3
from ..state import Model, State
from .base import Integrator, register_integrator
from .colour_passes import ColourPasses, CountSetting, number_setting

#: fastmath flags of the sweeps: no 'nnan'/'ninf' (the NaN check on the speed must
#: stay); 'arcp' lets x / l become x * (1 / l)
_FAST = {"nsz", "contract", "arcp"}
#: default sweeps (iterations) per step
DEFAULT_ITERATIONS = 10
#: the initial guesses of the paper, by name (their index is the kernel's mode)
INITIALISATIONS = ("previous", "inertia", "inertia_acceleration", "adaptive")
#: slices each colour is cut into for the parallel sweep (fixed: no thread-count effect)
CHUNKS = 64


@njit(cache=True, error_model="numpy", boundscheck=False)
def vbd_begin(x, v, x_t, y, v_last, inv_mass, fixed, gravity, external, has_external, h,
              mode, have_history):
    """x_t = x; y = inertia target; x = the initial guess (mode: index in
    INITIALISATIONS; "adaptive" is "inertia" without a previous step); v_last holds
    the last step's start velocities on entry and this step's on exit. Returns
    sum |m (y - x_t) / h^2|^2 over free particles, N^2 (the residual's scale)."""
    scale = 0.0
    for i in range(x.shape[0]):
        for d in range(3):
            x_t[i, d] = x[i, d]
            y[i, d] = x[i, d]
        if fixed[i]:
            continue
        a0 = gravity[0] + (inv_mass[i] * external[i, 0] if has_external else 0.0)
        a1 = gravity[1] + (inv_mass[i] * external[i, 1] if has_external else 0.0)
        a2 = gravity[2] + (inv_mass[i] * external[i, 2] if has_external else 0.0)
        y[i, 0] += h * v[i, 0] + h * h * a0
        y[i, 1] += h * v[i, 1] + h * h * a1
        y[i, 2] += h * v[i, 2] + h * h * a2
        m_h2 = 1.0 / (inv_mass[i] * h * h)
        for d in range(3):
            r = m_h2 * (y[i, d] - x_t[i, d])
            scale += r * r
        if mode == 0:
            pass
        elif mode == 1 or mode == 3:
            if mode == 3 and have_history:  # adaptive: the previous acceleration along a_ext, clamped
                size = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
                along = 0.0
                if size > 0.0:
                    along = ((v[i, 0] - v_last[i, 0]) * a0 + (v[i, 1] - v_last[i, 1]) * a1
                             + (v[i, 2] - v_last[i, 2]) * a2) / (h * size)
                    along = min(max(along, 0.0), size) / size
                for d in range(3):
                    a = a0 if d == 0 else (a1 if d == 1 else a2)
                    x[i, d] += h * v[i, d] + h * h * along * a
            else:
                for d in range(3):
                    x[i, d] += h * v[i, d]
        else:
            for d in range(3):
                x[i, d] = y[i, d]
    for i in range(x.shape[0]):
        for d in range(3):
            v_last[i, d] = v[i, d]
    return scale


@njit(cache=True, error_model="numpy", boundscheck=False, fastmath=_FAST)
def _descend(lo, hi, order, x, x_t, y, inv_mass, fixed, adj_starts, adj_springs, adj_others,
             rest, k, c, h, force_sq):
    """One 3x3 Newton step on G for each particle order[lo:hi] (no two share a spring);
    force_sq[i] = |f_i|^2 before the step, N^2."""
    inv_h = 1.0 / h
    for e in range(lo, hi):
        i = order[e]
        if fixed[i]:
            force_sq[i] = 0.0
            continue
        m_h2 = inv_h * inv_h / inv_mass[i]
        fx = m_h2 * (y[i, 0] - x[i, 0])
        fy = m_h2 * (y[i, 1] - x[i, 1])
        fz = m_h2 * (y[i, 2] - x[i, 2])
        hxx = m_h2
        hyy = m_h2
        hzz = m_h2
        hxy = 0.0
        hxz = 0.0
        hyz = 0.0
        for a in range(adj_starts[i], adj_starts[i + 1]):
            s = adj_springs[a]
            j = adj_others[a]
            dx, dy, dz, length = spring_vector(x, i, j)
            if length < MIN_LENGTH:
                continue
            inv = 1.0 / length
            nx = dx * inv
            ny = dy * inv
            nz = dz * inv
            ks = k[s]
            cs = c[s] * inv_h
            moved = (nx * (x[i, 0] - x_t[i, 0] - x[j, 0] + x_t[j, 0])
                     + ny * (x[i, 1] - x_t[i, 1] - x[j, 1] + x_t[j, 1])
                     + nz * (x[i, 2] - x_t[i, 2] - x[j, 2] + x_t[j, 2]))
            mag = -ks * (length - rest[s]) - cs * moved
            fx += mag * nx
            fy += mag * ny
            fz += mag * nz
            transverse = 1.0 - rest[s] * inv
            if transverse < 0.0:
                transverse = 0.0
            iso = ks * transverse
            axial = ks - iso + cs
            hxx += axial * nx * nx + iso
            hyy += axial * ny * ny + iso
            hzz += axial * nz * nz + iso
            hxy += axial * nx * ny
            hxz += axial * nx * nz
            hyz += axial * ny * nz
        force_sq[i] = fx * fx + fy * fy + fz * fz
        # the symmetric positive definite 3x3 solve (zeros if singular: no move)
        ixx, iyy, izz, ixy, ixz, iyz = inverse_3x3(hxx, hyy, hzz, hxy, hxz, hyz)
        x[i, 0] += ixx * fx + ixy * fy + ixz * fz
        x[i, 1] += ixy * fx + iyy * fy + iyz * fz
        x[i, 2] += ixz * fx + iyz * fy + izz * fz


@njit(cache=True, error_model="numpy", boundscheck=False)
def _chebyshev(x, x_1, x_2, fixed, omega, iteration):
    """x = omega (x - x_2) + x_2 (from the second iteration on), then x_2 = x_1, x_1 = x:
    x_1, x_2 are the iterates one and two iterations back."""
    for i in range(x.shape[0]):
        for d in range(3):
            if iteration > 0 and not fixed[i]:
                x[i, d] = omega * (x[i, d] - x_2[i, d]) + x_2[i, d]
            x_2[i, d] = x_1[i, d]
            x_1[i, d] = x[i, d]


@njit(cache=True, inline="always")
def _omega(iteration, rho, omega):
    """The Chebyshev weight of an iteration (0-based) from the previous weight."""
    if iteration == 0:
        return 1.0
    if iteration == 1:
        return 2.0 / (2.0 - rho * rho)
    return 4.0 / (4.0 - rho * rho * omega)


@njit(cache=True, error_model="numpy", boundscheck=False)
def vbd_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, adj_starts, adj_springs, adj_others,
               rest, k, c, h, order, colour_starts, iterations, rho, force_sq):
    """``iterations`` serial sweeps over the colours; returns sum |f|^2 of the last, N^2."""
    omega = 1.0
    if rho > 0.0:
        x_1[:] = x
    for it in range(iterations):
        _descend(0, order.shape[0], order, x, x_t, y, inv_mass, fixed, adj_starts,
                 adj_springs, adj_others, rest, k, c, h, force_sq)
        if rho > 0.0:
            omega = _omega(it, rho, omega)
            _chebyshev(x, x_1, x_2, fixed, omega, it)
    return force_sq.sum()


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def vbd_sweeps_parallel(x, x_t, y, x_1, x_2, inv_mass, fixed, adj_starts, adj_springs,
                        adj_others, rest, k, c, h, order, colour_starts, iterations, rho,
                        force_sq):
    """vbd_sweeps with each colour's particles in parallel (identical results)."""
    omega = 1.0
    if rho > 0.0:
        x_1[:] = x
    for it in range(iterations):
        for q in range(colour_starts.shape[0] - 1):
            lo = colour_starts[q]
            size = colour_starts[q + 1] - lo
            for t in prange(CHUNKS):  # no two particles of a colour share a spring
                _descend(lo + size * t // CHUNKS, lo + size * (t + 1) // CHUNKS, order, x,
                         x_t, y, inv_mass, fixed, adj_starts, adj_springs, adj_others, rest,
                         k, c, h, force_sq)
        if rho > 0.0:
            omega = _omega(it, rho, omega)
            _chebyshev(x, x_1, x_2, fixed, omega, it)
    total = 0.0
    for i in range(force_sq.shape[0]):  # in index order, as the serial sum
        total += force_sq[i]
    return total


@njit(cache=True, error_model="numpy", boundscheck=False)
def vbd_end(x, v, x_t, fixed, h, damp):
    """v = (x - x_t) / h, then drag; fixed particles keep x_t and get v = 0.
    Returns the max |v|^2 (NaN if not finite)."""
    max_sq, bad = 0.0, 0.0
    for i in range(x.shape[0]):
        if fixed[i]:
            for d in range(3):
                x[i, d] = x_t[i, d]
            hold(v, i, 0.0)
            continue
        for d in range(3):
            v[i, d] = (x[i, d] - x_t[i, d]) / h * damp
        max_sq, bad = track_speed(x, v, i, max_sq, bad, 0.0)
    return speed_result(max_sq, bad)


@register_integrator
class VBD(Integrator):
    """Vertex Block Descent on backward Euler's variational energy (module docstring).

    Attributes, editable live: ``iterations`` (sweeps per step, default 10),
    ``initialisation`` (one of INITIALISATIONS, default "inertia"), ``chebyshev_rho``
    (0 = off, default; or the spectral radius estimate in (0, 1)). ``stats``:
    ``iterations`` = sweeps of the last step, ``residual`` = |f| of its last sweep over
    |M (y - x_t) / h^2| (the force imbalance left, relative to the step's inertial
    force), ``converged`` = that residual is finite. The kernels read the Params every
    sweep, so live edits need no notice (the base notify_model_changed).
    """

    name = "vbd"
    description = "vertex block descent: backward Euler by 3x3 Newton sweeps, any dt"
    unconditionally_stable = True
    has_solver_stats = True
    iterations = CountSetting()  # sweeps (block Gauss-Seidel iterations) per step

    def __init__(self, model: Model):
        super().__init__(model)
        self.iterations = DEFAULT_ITERATIONS
        self.initialisation = "inertia"
        self.chebyshev_rho = 0.0
        n, dtype = model.n_particles, model.dtype
        self._adjacency = vertex_adjacency(model.spring_a, model.spring_b, n)
        self._order, self._colour_starts = vertex_colouring(self._adjacency[0],
                                                            self._adjacency[2])
        self._x_t = np.zeros((n, 3), dtype)
        self._y = np.zeros((n, 3), dtype)
        self._x_1 = np.zeros((n, 3), dtype)
        self._x_2 = np.zeros((n, 3), dtype)
        self._v_start = np.zeros((n, 3), dtype)  # the last step's start velocities
        self._force_sq = np.zeros(n, np.float64)
        self._last_step: int | None = None
        self._passes = ColourPasses(True, model.n_springs)

    @property
    def initialisation(self) -> str:
        """The initial guess of each step: one of INITIALISATIONS."""
        return INITIALISATIONS[self._mode]

    @initialisation.setter
    def initialisation(self, value: str) -> None:
        if value not in INITIALISATIONS:
            raise ValueError(f"vbd.initialisation: unknown {value!r}; allowed: "
                             f"{', '.join(INITIALISATIONS)}")
        self._mode = INITIALISATIONS.index(value)

    @property
    def chebyshev_rho(self) -> float:
        """Spectral radius estimate of the Chebyshev acceleration; 0 = off."""
        return self._rho

    @chebyshev_rho.setter
    def chebyshev_rho(self, value: float) -> None:
        rho = number_setting(value, "vbd.chebyshev_rho", "a number in [0, 1)")
        if not 0.0 <= rho < 1.0:
            raise ValueError(f"vbd.chebyshev_rho: expected a number in [0, 1), got {value!r}")
        self._rho = rho

    def step(self, state: State, dt: float) -> float:
        model, p = self.model, self.model.params
        external, has_external = self.external_forces(state)  # read only if has_external
        have_history = self._last_step is not None and state.step_count == self._last_step + 1
        self._last_step = state.step_count
        scale = vbd_begin(state.x, state.v, self._x_t, self._y, self._v_start, p.inv_mass,
                          p.fixed, model.gravity(), external, has_external, dt, self._mode,
                          have_history)
        starts, springs, others = self._adjacency
        force_sq = self._passes.run(
            vbd_sweeps, vbd_sweeps_parallel, state.x, self._x_t, self._y, self._x_1,
            self._x_2, p.inv_mass, p.fixed, starts, springs, others, p.rest_lengths,
            p.stiffness, p.damping, dt, self._order, self._colour_starts, self._iterations,
            self._rho, self._force_sq)
        stats = self.stats
        stats.iterations = self._iterations
        stats.total_iterations += self._iterations
        stats.implicit_steps += 1
        stats.residual = math.sqrt(force_sq / scale) if scale > 0.0 else math.sqrt(force_sq)
        stats.converged = math.isfinite(stats.residual)
        return float(vbd_end(state.x, state.v, self._x_t, p.fixed, dt, model.damp_factor(dt)))

    # --- snapshots (engine/snapshot.py) ---------------------------------------------------
    def save_warm(self) -> dict:
        """The settings, the last step's start velocities and its step number (the
        "adaptive" guess reads them when the next step follows on directly)."""
        return {"iterations": self._iterations, "initialisation": self.initialisation,
                "chebyshev_rho": self._rho, "v_start": self._v_start,
                "last_step": self._last_step}

    def load_warm(self, warm: dict) -> None:
        self.iterations = warm["iterations"]
        self.initialisation = warm["initialisation"]
        self.chebyshev_rho = warm["chebyshev_rho"]
        self._v_start[:] = warm["v_start"]
        self._last_step = warm["last_step"]
