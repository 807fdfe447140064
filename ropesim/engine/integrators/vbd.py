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
parallel; serial and parallel sweeps give identical results. A structured grid
(Model.grid()) runs the grid sweeps of kernels/grid_vbd.py (five colours on a cloth,
no index arrays); other systems the spring-list sweeps below over a greedy vertex
colouring (the grid's colours on a grid with grid_kernels=False: then both give the
same bits). ``iterations`` sweeps
per step (default 10); then v = (x - x_t) / h and drag. The initial guess
(``initialisation``): the paper's "previous" x_t, "inertia" x_t + h v_t,
"inertia_acceleration" y, "adaptive" x_t + h v_t + h^2 a~ (a~ the part of the previous
step's acceleration along the external one, clamped to [0, |a_ext|]), and the default
"extrapolated": x_t + h v_t + beta_i h (v_t - v_last), the particle's whole last
acceleration, weighted by beta_i = min(1, EXTRAPOLATION_RATIO iterations / W_i),
W_i = h^2 sum(k) / m_i of its springs. Why: ten sweeps leave a soft cloth's long
waves unconverged (the standard 128 x 128 cloth, W = 33: a sweep removes a few
percent of a long wave's error), and what the sweeps leave of the guess moves on
unforced. From "inertia" a decelerating wave keeps its speed, the force left over
(the residual r) does the work -r . (x - x_t) on the cloth (measured: the energy
gained step by step), and the cloth gained 15 J over its first fall and was stopped as
diverged (every local Newton step lowered its local energy; damping, serial or
parallel, the sweep order, 30 sweeps and Chebyshev did not change it). The last
acceleration predicts a slow wave to O(h^3), so "extrapolated" leaves the sweeps a far
smaller error (a tenth of the residual there) and the energy only decays. On stiff
particles (W large) it mispredicts the unconverged stiff waves: in a modal model of k
sweeps (x_{n+1} = x* + e (x0 - x*), e the sweeps' error factor of the mode, x* the
implicit step) the whole acceleration grows a mode up to 1.15x a step where the mode is
stiff and e large, a weight of 1/2 never; with the ratio 4 the weight min(1, 4 k / W_i)
keeps every mode's growth below 1.6% a step undamped in that model (2 k: none, but too
little extrapolation for the soft cloth: it then gained 5 J), and the measured runs
decay (the soft cloth; the stiff cloth at 20x the explicit limit of tests/test_vbd.py,
W = 2000-4800). "inertia_acceleration" and "adaptive" add h^2 g while the cloth
falls; on that stiff cloth this stretches the springs at the pins so far that the first
Newton steps overshoot. ``chebyshev_rho`` in (0, 1) turns on the Chebyshev
semi-iterative acceleration of the sweeps (as in the paper) with that spectral radius
estimate; 0 (default) leaves it off.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .. import parallel
from ..kernels.grid import grid_layout
from ..kernels.grid_vbd import (add_spring, band_schedule, chebyshev_accelerate,
                                grid_colour_pattern, grid_scratch, grid_vertex_colouring,
                                inertia_block, newton_move, summed, vbd_grid_step,
                                vbd_grid_step_parallel)
from ..kernels.particles import hold, speed_result, track_speed
from ..kernels.vbd_guess import particle_guess
from ..kernels.vertex_colouring import vertex_adjacency, vertex_colouring
from ..state import Changed, Model, State
from .base import Integrator, register_integrator
from .colour_passes import ColourPasses, CountSetting, number_setting

#: default sweeps (iterations) per step
DEFAULT_ITERATIONS = 10
#: the initial guesses of the paper, by name (their index is the kernel's mode)
INITIALISATIONS = ("previous", "inertia", "inertia_acceleration", "adaptive", "extrapolated")
#: slices each colour is cut into for the parallel sweep (fixed: no thread-count effect)
CHUNKS = 64
#: a VBD colour is a big fork/join region: a grid's five colours each update a fifth of
#: the particles with all their springs (2 n_springs / 5 spring terms), an XPBD edge
#: colour projects about n_springs / 12 springs; ColourPasses, whose threshold counts
#: springs per pass, is given n_springs times this factor (the 128 x 128 cloth then
#: times the parallel sweeps against the serial ones and runs the faster)
REGION_WORK_FACTOR = 5
#: the grid sweeps' band schedule has at least this many tasks a region (or one per
#: thread): the same run order on any machine with up to two threads
MIN_BAND_TASKS = 2


@njit(cache=True, error_model="numpy", boundscheck=False)
def stiffness_sums(adj_starts, adj_springs, k, sums):
    """sums[i] = the sum of k (N/m) over particle i's springs, in adjacency order (the
    "extrapolated" guess's weight; integrators keep it until a stiffness or topology
    edit)."""
    for i in range(sums.shape[0]):
        stiffness = 0.0
        for a in range(adj_starts[i], adj_starts[i + 1]):
            stiffness += k[adj_springs[a]]
        sums[i] = stiffness


@njit(cache=True, error_model="numpy", boundscheck=False)
def vbd_begin(x, v, x_t, y, v_last, inv_mass, fixed, gravity, external, has_external, h,
              mode, have_history, stiffness, iterations):
    """x_t = x; y = inertia target; x = the initial guess (mode: index in
    INITIALISATIONS; "adaptive" and "extrapolated" are "inertia" without a previous
    step; "extrapolated" weighs particle i's last acceleration by extrapolation_weight
    of stiffness[i], the sum of its springs' k, N/m: stiffness_sums); v_last holds the
    last step's start velocities on entry and this step's on exit. Returns sum |m (y -
    x_t) / h^2|^2 over free particles, N^2 (the residual's scale)."""
    scale = 0.0
    for i in range(x.shape[0]):
        for d in range(3):
            x_t[i, d] = x[i, d]
            y[i, d] = x[i, d]
        if fixed[i]:
            continue
        y[i, 0], y[i, 1], y[i, 2], x[i, 0], x[i, 1], x[i, 2] = particle_guess(
            x[i, 0], x[i, 1], x[i, 2], v[i, 0], v[i, 1], v[i, 2], v_last[i, 0], v_last[i, 1],
            v_last[i, 2], inv_mass[i], gravity[0], gravity[1], gravity[2],
            inv_mass[i] * external[i, 0] if has_external else 0.0,
            inv_mass[i] * external[i, 1] if has_external else 0.0,
            inv_mass[i] * external[i, 2] if has_external else 0.0, h, mode, have_history,
            stiffness[i], iterations)
        m_h2 = 1.0 / (inv_mass[i] * h * h)
        for d in range(3):
            r = m_h2 * (y[i, d] - x_t[i, d])
            scale += r * r
    for i in range(x.shape[0]):
        for d in range(3):
            v_last[i, d] = v[i, d]
    return scale


@njit(cache=True, error_model="numpy", boundscheck=False)
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
        block = inertia_block(x, y, i, inv_mass, inv_h)
        for a in range(adj_starts[i], adj_starts[i + 1]):
            s = adj_springs[a]
            block = add_spring(block, x, x_t, i, adj_others[a], rest[s], k[s], c[s], inv_h)
        force_sq[i] = newton_move(x, i, block)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _list_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, adj_starts, adj_springs, adj_others,
                 rest, k, c, h, order, colour_starts, iterations, rho, force_sq):
    """The body of both spring-list sweep kernels: prange runs the CHUNKS slices of a
    colour in parallel in vbd_sweeps_parallel and in order in vbd_sweeps (no two
    particles of a colour share a spring: the same bits); returns sum |f|^2 of the last
    sweep, N^2, summed in index order in both."""
    omega = 1.0
    if rho > 0.0:
        x_1[:] = x
    for it in range(iterations):
        for q in range(colour_starts.shape[0] - 1):
            lo = colour_starts[q]
            size = colour_starts[q + 1] - lo
            for t in prange(CHUNKS):
                _descend(lo + size * t // CHUNKS, lo + size * (t + 1) // CHUNKS, order, x,
                         x_t, y, inv_mass, fixed, adj_starts, adj_springs, adj_others, rest,
                         k, c, h, force_sq)
        omega = chebyshev_accelerate(x, x_1, x_2, fixed, it, rho, omega)
    return summed(force_sq)


@njit(cache=True, error_model="numpy", boundscheck=False)
def vbd_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, adj_starts, adj_springs, adj_others,
               rest, k, c, h, order, colour_starts, iterations, rho, force_sq):
    """``iterations`` serial sweeps over the colours; returns sum |f|^2 of the last, N^2."""
    return _list_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, adj_starts, adj_springs,
                        adj_others, rest, k, c, h, order, colour_starts, iterations, rho,
                        force_sq)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def vbd_sweeps_parallel(x, x_t, y, x_1, x_2, inv_mass, fixed, adj_starts, adj_springs,
                        adj_others, rest, k, c, h, order, colour_starts, iterations, rho,
                        force_sq):
    """vbd_sweeps with each colour's particles in parallel (identical results)."""
    return _list_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, adj_starts, adj_springs,
                        adj_others, rest, k, c, h, order, colour_starts, iterations, rho,
                        force_sq)


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
    ``initialisation`` (one of INITIALISATIONS, default "extrapolated"), ``chebyshev_rho``
    (0 = off, default; or the spectral radius estimate in (0, 1)). ``stats``:
    ``iterations`` = sweeps of the last step, ``residual`` = |f| of its last sweep over
    |M (y - x_t) / h^2| (the force imbalance left, relative to the step's inertial
    force), ``converged`` = that residual is finite. The kernels read the Params every
    step, but the grid kernels' copy of the springs' rest lengths, k and c/h is kept
    until a spring edit (notify_model_changed) or a new dt, and each particle's sum of
    its springs' k (the "extrapolated" guess's weight) until a stiffness edit; a
    topology edit rebuilds the adjacency.
    """

    name = "vbd"
    description = "vertex block descent: backward Euler by 3x3 Newton sweeps, any dt"
    unconditionally_stable = True
    has_solver_stats = True
    iterations = CountSetting()  # sweeps (block Gauss-Seidel iterations) per step

    def __init__(self, model: Model):
        super().__init__(model)
        self.iterations = DEFAULT_ITERATIONS
        self.initialisation = "extrapolated"
        self.chebyshev_rho = 0.0
        n, dtype = model.n_particles, model.dtype
        self._set_up_springs()
        self._x_t = np.zeros((n, 3), dtype)
        self._y = np.zeros((n, 3), dtype)
        self._x_1 = np.zeros((n, 3), dtype)
        self._x_2 = np.zeros((n, 3), dtype)
        self._v_start = np.zeros((n, 3), dtype)  # the last step's start velocities
        self._force_sq = np.zeros(n, np.float64)
        self._last_step: int | None = None

    def _set_up_springs(self) -> None:
        """The particle adjacency, the kernel path and the colouring of the model's spring
        list (again after a topology change)."""
        model = self.model
        n = model.n_particles
        self._adjacency = vertex_adjacency(model.spring_a, model.spring_b, n)
        # a grid: the grid kernels and their (a r + c) mod p colours, which the
        # spring-list kernels also use on a grid with grid_kernels=False (same bits)
        grid = model.grid()
        layout = grid if grid is not None or not model.n_springs else grid_layout(
            model.spring_a, model.spring_b, n, model.grid_shape)
        self._pattern = None if layout is None else grid_colour_pattern(layout)
        self._grid = grid if self._pattern is not None else None
        self._springs_dt: float | None = None  # the dt the grid layout's coefficients are for
        self._stiffness: np.ndarray | None = None  # stiffness_sums, until a k edit
        self._schedule_key: tuple | None = None  # what self._schedules were built for
        if self._grid is not None:  # the grid sweeps' layout and work arrays
            p = model.params
            self._grid_scratch = grid_scratch(grid.rows, grid.cols, grid.blocks,
                                              self._pattern,
                                              max(MIN_BAND_TASKS, parallel.max_threads()),
                                              model.dtype,
                                              p.rest_lengths.dtype, p.stiffness.dtype)
        if self._pattern is not None:
            self._order, self._colour_starts = grid_vertex_colouring(layout, self._pattern)
        else:
            self._order, self._colour_starts = vertex_colouring(self._adjacency[0],
                                                                self._adjacency[2])
        self._passes = ColourPasses(True, model.n_springs * REGION_WORK_FACTOR)

    def notify_model_changed(self, flags: Changed) -> None:
        if flags & Changed.TOPOLOGY:  # new spring list: adjacency and colours again
            self._set_up_springs()
        if flags & Changed.SPRINGS:  # the grid layout's spring coefficients again
            self._springs_dt = None
        if flags & Changed.STIFFNESS:  # each particle's sum of k again
            self._stiffness = None

    def _band_schedules(self) -> tuple:
        """The grid step's band_schedules (serial: one task; parallel: one per thread, at
        least MIN_BAND_TASKS) for the sweeps per step, Chebyshev on or off and the thread
        count (built again when one of them changes)."""
        key = (self._iterations, self._rho > 0.0, max(MIN_BAND_TASKS, parallel.threads()))
        if key != self._schedule_key:
            self._schedules = tuple(band_schedule(self._grid.rows, self._grid.max_dr, tasks,
                                                  self._pattern[1], key[0], key[1])
                                    for tasks in (1, key[2]))
            self._schedule_key = key
        return self._schedules

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
        if self._stiffness is None:
            self._stiffness = np.zeros(model.n_particles)
            stiffness_sums(self._adjacency[0], self._adjacency[1], p.stiffness,
                           self._stiffness)
        gravity, damp = model.gravity(), model.damp_factor(dt)
        if self._grid is not None:  # the whole step in one call (kernels/grid_vbd.py)
            force_sq, scale, speed = self._passes.run(
                vbd_grid_step, vbd_grid_step_parallel, state.x, state.v, self._v_start,
                p.inv_mass, p.fixed, p.rest_lengths, p.stiffness, p.damping,
                self._stiffness, (gravity, external, has_external),
                (self._mode, have_history, self._iterations), dt, damp, self._grid.cols,
                self._grid.blocks, *self._pattern, self._band_schedules(), self._rho,
                self._force_sq, self._grid_scratch, self._springs_dt != dt)
            self._springs_dt = dt
        else:
            scale = vbd_begin(state.x, state.v, self._x_t, self._y, self._v_start,
                              p.inv_mass, p.fixed, gravity, external, has_external, dt,
                              self._mode, have_history, self._stiffness, self._iterations)
            force_sq = self._passes.run(
                vbd_sweeps, vbd_sweeps_parallel, state.x, self._x_t, self._y, self._x_1,
                self._x_2, p.inv_mass, p.fixed, *self._adjacency, p.rest_lengths,
                p.stiffness, p.damping, dt, self._order, self._colour_starts,
                self._iterations, self._rho, self._force_sq)
            speed = vbd_end(state.x, state.v, self._x_t, p.fixed, dt, damp)
        stats = self.stats
        stats.iterations = self._iterations
        stats.total_iterations += self._iterations
        stats.implicit_steps += 1
        stats.residual = math.sqrt(force_sq / scale) if scale > 0.0 else math.sqrt(force_sq)
        stats.converged = math.isfinite(stats.residual)
        return float(speed)

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
