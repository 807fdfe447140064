"""XPBD: extended position-based dynamics (Macklin, Mueller and Chentanez, "XPBD:
Position-Based Simulation of Compliant Constrained Dynamics", MIG 2016), in the
small-steps scheme (Macklin et al., "Small Steps in Physics Simulation", SCA 2019).

Every spring is a distance constraint C = |x_i - x_j| - L with compliance alpha = 1/k
(m/N), so it models the same spring as the other integrators, and its damper c
(N*s/m) is XPBD's damping term (gamma = alpha c / h). One step of dt is ``substeps``
substeps of h = dt / substeps; each substep

    v += h (g + f_ext / m);  x_prev = x;  x += h v          (prediction)
    ``iterations`` Gauss-Seidel passes over the springs, colour by colour:
        dlambda = -omega (C + alpha~ lambda + gamma grad C . (x - x_prev))
                  / ((1 + gamma) (w_i + w_j) + alpha~),   alpha~ = alpha / h^2
        x_i += w_i dlambda n,  x_j -= w_j dlambda n
    v = (x - x_prev) / h, then drag v *= exp(-drag h)

written in the stiffness form (multiplied through by h^2 k), which also holds a spring
of zero stiffness. f_ext is the attached forces at the step's start, held over the
substeps; w = 1/m, 0 for fixed (pinned or grabbed) particles. ``compliance`` replaces
every spring's 1/k by one value (0: rigid rods, plain PBD projection).

omega is the over-relaxation (successive over-relaxation of the Gauss-Seidel pass):
``relaxation`` (default 1.5; 1 is the papers' plain projection), but at most D = 1 +
(h^2 k + h c)(w_i + w_j), so that a soft spring (D < relaxation) takes exactly its
spring impulse -(h^2 k C + h c n . (dx_i - dx_j)) and no more. Why: one plain projection
per substep from lambda = 0 divides the impulse by D, and on a soft cloth (the standard
128 x 128 one: h^2 k (w_i + w_j) = 0.15 at 6 substeps) the smooth modes keep most of
that, so the cloth acts about 15 % softer than its springs: it sagged further than
symplectic Euler's and its energy, measured with the real k, grew by several J in 2 s
(the Simulation's energy check stopped it after about 60 steps). Capped at D the soft
cloth follows symplectic Euler's stretch (peak strain 403 against 402) and its energy
stays below the start (3 simulated minutes checked); a stiff spring (D >> omega) gets
omega times the plain projection, which brings each substep closer to its converged
solution (the stiff 64 x 64 cloth's error after 1 s: 0.44 m with 5 substeps at omega =
1.5, 0.72 m at omega = 1).

The default is 5 substeps of one iteration each (the small-steps scheme, one projection
per substep), the fewest that keep the error on the stiff 64 x 64 benchmark cloth after
1 s at dt = 1/60 s clearly below backward Euler's (0.44 m against 0.63 m; 4 substeps:
0.62 m; docs/solvers.md). Springs of one edge colour share no particle, so a colour is
projected in parallel; the serial and the parallel pass give identical results. A
structured grid (Model.grid()) runs the grid kernels of kernels/grid_xpbd.py; other
systems the spring-list kernels below, over a greedy edge colouring (the grid's colours
on a grid with grid_kernels=False: then both give the same bits).

``tethers`` (None: off, the default) turns on long-range attachments (kernels/tethers.py):
after each substep's passes, no free particle stays farther from its nearest fixed
particle than (1 + tethers) times their rest distance through the springs. Few passes
carry a load only a few springs far, so a stiff cloth hanging from its corners stretches
there far past what its springs allow; the tethers carry its weight at once. They only
shorten what is stretched past the slack, so with a slack above the springs' own
strain they leave the converged answer as it is.

``projection = "chains"`` (default "springs") makes each pass a block Gauss-Seidel over
chains of springs (kernels/chains.py): every line of springs is solved at once, exactly
for its linearisation, so a load travels a whole line per pass instead of one spring
per colour (a hanging chain settles to its static shape in one pass per substep; the
stiff 64 x 64 cloth with tethers runs at 2-4 substeps without the over-stretched corners
the spring projection leaves). ``relaxation`` does not apply to it. On very soft,
hugely stretched cloth few substeps of chains gain energy (docs/solvers.md): there the
spring projection is the better choice.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..kernels.chains import LANE_BLOCK, chain_cover, chain_lanes, lane_work, project_lanes
from ..kernels.colouring import edge_colouring
from ..kernels.grid import grid_layout
from ..kernels.grid_xpbd import (finish, grid_edge_colouring, predict,
                                 projection_scales, project_spring, weights, xpbd_grid_step,
                                 xpbd_grid_step_parallel)
from ..kernels.particles import MIN_LENGTH, speed_result, spring_vector
from ..kernels.tethers import nearest_anchors, tether
from ..kernels.vertex_colouring import vertex_adjacency
from ..state import Changed, Model, State
from .base import Integrator, SolverStats, register_integrator
from .colour_passes import PARALLEL_MIN_SPRINGS, ColourPasses, CountSetting, number_setting

#: default substeps per step and Gauss-Seidel iterations per substep (small steps)
DEFAULT_SUBSTEPS = 5
DEFAULT_ITERATIONS = 1
#: default over-relaxation of each projection (1: the papers' plain projection)
DEFAULT_RELAXATION = 1.5
#: allowed over-relaxation: [1, 2) (successive over-relaxation converges below 2)
RELAXATION_RANGE = (1.0, 2.0)
#: slices each colour is cut into for the parallel pass (fixed: no thread-count effect)
CHUNKS = 64
#: how each pass projects the springs: one at a time over an edge colouring, or each
#: chain of springs at once (kernels/chains.py)
PROJECTIONS = ("springs", "chains")
#: springs from which the chain kernels are timed in parallel against the serial ones: a
#: chain family is one fork/join region of thousands of springs (6 on a cloth), not the
#: dozen small colours of the spring projection (colour_passes.PARALLEL_MIN_SPRINGS)
CHAIN_PARALLEL_MIN_SPRINGS = 10_000
#: springs from which the grid kernels are timed in parallel against the serial ones: a
#: grid colour is one fork/join region over whole rows (a tenth of the springs), so the
#: 128 x 128 cloth (97,000 springs) pays for its regions: 75 against 60 steps/s on a
#: two-core Zen 1 (2026-12-03), where the spring-list default of 200,000 kept it serial
GRID_PARALLEL_MIN_SPRINGS = 50_000
#: the chain projection runs the tethers after each of the last this many families of a
#: pass (a cloth's columns and rows): after the last family only, the stiff 64 x 64
#: cloth at 2 substeps stretched its corners into an energy runaway at 3.2 s; after every
#: family (6 on a cloth) the tether passes cost a quarter of the pass
TETHERED_FAMILIES = 2


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _predict_chunks(x, v, x_prev, w, gravity, external, has_external, h, chunks):
    """predict over the particle chunks (in parallel in a parallel kernel)."""
    for t in prange(chunks.shape[0] - 1):
        predict(x, v, x_prev, w, gravity, external, has_external, h, chunks[t], chunks[t + 1])


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _tether_chunks(x_by_axis, w, anchor, reach, chunks):
    """The tethers (kernels/tethers.py) over the particle chunks."""
    for t in prange(chunks.shape[0] - 1):
        tether(x_by_axis, w, anchor, reach, chunks[t], chunks[t + 1])


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _finish_chunks(x, v, x_prev, w, h, damp, chunks, results):
    """finish over the particle chunks, each chunk's (max |v|^2, check sum) in results."""
    for t in prange(chunks.shape[0] - 1):
        m, bad_t = finish(x, v, x_prev, w, h, damp, chunks[t], chunks[t + 1])
        results[t, 0] = m
        results[t, 1] = bad_t


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _chunks_speed(results):
    """speed_result of the chunks' results (in chunk order: the same whatever the
    threads)."""
    max_sq, bad = 0.0, 0.0
    for t in range(results.shape[0]):
        max_sq = max(max_sq, results[t, 0])
        bad += results[t, 1]
    return speed_result(max_sq, bad)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _list_substeps(x, v, x_prev, w, lam, inv_mass, fixed, spring_a, spring_b, rest, k, c,
                   gravity, external, has_external, order, starts, h, substeps, iterations,
                   per_k, per_spring, per_c, rigid, relaxation, damp, anchor, reach,
                   chunks, results):
    """The body of both spring-list kernels: prange runs each colour's springs (and the
    particle chunks of the prediction and the velocities) in parallel in
    xpbd_step_parallel and in order in xpbd_step, the same arithmetic either way."""
    x_by_axis = x.T  # the (3, n) view the tether pass reads
    weights(inv_mass, fixed, w)
    for _ in range(substeps):
        _predict_chunks(x, v, x_prev, w, gravity, external, has_external, h, chunks)
        lam[:] = 0.0
        for _ in range(iterations):
            for q in range(starts.shape[0] - 1):
                for e in prange(starts[q], starts[q + 1]):  # a colour shares no particle
                    s = order[e]
                    project_spring(x, x_prev, w, lam, spring_a[s], spring_b[s], s, rest, k,
                                   c, per_k, per_spring, per_c, rigid, relaxation)
        if anchor.shape[0] > 0:  # the tethers after the springs (kernels/tethers.py)
            _tether_chunks(x_by_axis, w, anchor, reach, chunks)
        _finish_chunks(x, v, x_prev, w, h, damp, chunks, results)
    return _chunks_speed(results)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _chain_substeps(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity, external,
                    has_external, lanes, h, substeps, iterations, per_k, per_spring, per_c,
                    rigid, damp, anchor, reach, work, chunks, results):
    """_list_substeps with each pass a chain projection (kernels/chains.py) family by
    family, a family's blocks of lanes in parallel in xpbd_chain_step_parallel. lanes:
    the arrays chain_lanes returns (one tuple: numba inlines no call of over 30
    arguments), work: lane_work's array.

    The families run from the last found to the first, so that a pass ends on the first
    family, the chains of the lowest-numbered springs (a builder's structural springs:
    a grid's rows, then its columns), and the tethers, when on, follow each of the last
    TETHERED_FAMILIES families: with the families in spring order, or the tethers only
    after the pass, the stiff 64 x 64 cloth at 2-3 substeps stretched its corners far
    enough for the divergence check to stop it within 2-4 s (docs/solvers.md)."""
    shapes, slot_particle, row_spring = lanes
    n_families = shapes.shape[0]
    x_by_axis = x.T
    weights(inv_mass, fixed, w)
    for _ in range(substeps):
        _predict_chunks(x, v, x_prev, w, gravity, external, has_external, h, chunks)
        lam[:] = 0.0
        for _ in range(iterations):
            for last in range(n_families):
                f = n_families - 1 - last  # the first family found last (see above)
                for b in prange(shapes[f, 3]):  # a constant width at each call (chains.py)
                    if shapes[f, 2] == LANE_BLOCK:
                        project_lanes(x, x_prev, w, lam, rest, k, c, per_k, per_spring, per_c,
                                      rigid, shapes, slot_particle, row_spring, work, f, b,
                                      LANE_BLOCK)
                    else:
                        project_lanes(x, x_prev, w, lam, rest, k, c, per_k, per_spring, per_c,
                                      rigid, shapes, slot_particle, row_spring, work, f, b, 1)
                if anchor.shape[0] > 0 and last >= n_families - TETHERED_FAMILIES:
                    _tether_chunks(x_by_axis, w, anchor, reach, chunks)
        _finish_chunks(x, v, x_prev, w, h, damp, chunks, results)
    return _chunks_speed(results)


@njit(cache=True, error_model="numpy", boundscheck=False)
def xpbd_chain_step(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity, external,
                    has_external, lanes, h, substeps, iterations, per_k, per_spring, per_c,
                    rigid, damp, anchor, reach, work, chunks, results):
    """``substeps`` XPBD substeps of h s with chain projections (serial); returns the last
    substep's max |v|^2 (NaN if not finite)."""
    return _chain_substeps(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity,
                           external, has_external, lanes, h, substeps, iterations, per_k,
                           per_spring, per_c, rigid, damp, anchor, reach, work,
                           chunks, results)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def xpbd_chain_step_parallel(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity,
                             external, has_external, lanes, h, substeps, iterations, per_k,
                             per_spring, per_c, rigid, damp, anchor, reach, work,
                             chunks, results):
    """xpbd_chain_step with each family's blocks of lanes in parallel (identical
    results)."""
    return _chain_substeps(x, v, x_prev, w, lam, inv_mass, fixed, rest, k, c, gravity,
                           external, has_external, lanes, h, substeps, iterations, per_k,
                           per_spring, per_c, rigid, damp, anchor, reach, work,
                           chunks, results)


@njit(cache=True, error_model="numpy", boundscheck=False)
def xpbd_step(x, v, x_prev, w, lam, inv_mass, fixed, spring_a, spring_b, rest, k, c,
              gravity, external, has_external, order, starts, h, substeps, iterations,
              per_k, per_spring, per_c, rigid, relaxation, damp, anchor, reach,
              chunks, results):
    """``substeps`` XPBD substeps of h s on a spring list (serial), colour by colour
    (order[starts[q]:starts[q + 1]] is colour q), particles in ``chunks`` (their
    per-chunk speeds in ``results``); returns the last substep's max |v|^2 (NaN if
    not finite)."""
    return _list_substeps(x, v, x_prev, w, lam, inv_mass, fixed, spring_a, spring_b, rest,
                          k, c, gravity, external, has_external, order, starts, h,
                          substeps, iterations, per_k, per_spring, per_c, rigid,
                          relaxation, damp, anchor, reach, chunks, results)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def xpbd_step_parallel(x, v, x_prev, w, lam, inv_mass, fixed, spring_a, spring_b, rest, k,
                       c, gravity, external, has_external, order, starts, h, substeps,
                       iterations, per_k, per_spring, per_c, rigid, relaxation, damp,
                       anchor, reach, chunks, results):
    """xpbd_step with each colour's springs in parallel (identical results)."""
    return _list_substeps(x, v, x_prev, w, lam, inv_mass, fixed, spring_a, spring_b, rest,
                          k, c, gravity, external, has_external, order, starts, h,
                          substeps, iterations, per_k, per_spring, per_c, rigid,
                          relaxation, damp, anchor, reach, chunks, results)


@njit(cache=True, error_model="numpy", boundscheck=False)
def constraint_error(x, x_prev, spring_a, spring_b, rest, k, c, inv_mass, fixed, lam, h,
                     compliance):
    """Largest |C + alpha~ lambda + gamma grad C . (x - x_prev)| over the springs, m: the
    residual of XPBD's compliant-constraint equations (springs between two fixed
    particles, broken (stiffness 0, whatever the compliance) or without direction are
    left out)."""
    worst = 0.0
    h2 = h * h
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        if (fixed[i] and fixed[j]) or k[s] == 0.0:
            continue
        dx, dy, dz, length = spring_vector(x, i, j)
        if length < MIN_LENGTH:
            continue
        r = length - rest[s]
        if compliance != 0.0:
            stiff = h2 * k[s] if compliance < 0.0 else h2 / compliance
            damp = h * c[s] if compliance < 0.0 else 0.0
            moved = (dx * (x[i, 0] - x_prev[i, 0] - x[j, 0] + x_prev[j, 0])
                     + dy * (x[i, 1] - x_prev[i, 1] - x[j, 1] + x_prev[j, 1])
                     + dz * (x[i, 2] - x_prev[i, 2] - x[j, 2] + x_prev[j, 2])) / length
            r += (damp * moved + lam[s]) / stiff
        if not abs(r) <= worst:  # NaN propagates
            worst = abs(r)
    return worst


def _none_or_non_negative(value, field: str, allowed: str) -> float | None:
    """None, or ``value`` as a finite float >= 0; else an error naming ``field`` and the
    ``allowed`` values."""
    if value is None:
        return None
    value = number_setting(value, field, allowed)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{field}: expected {allowed}, got {value!r}")
    return value


@register_integrator
class XPBD(Integrator):
    """XPBD in the small-steps scheme (see the module docstring).

    Attributes, editable live: ``substeps`` per step (default 5), ``iterations`` of
    Gauss-Seidel per substep (default 1), ``compliance`` (None: each spring's 1/k, m/N;
    a number >= 0: that compliance for every spring, 0 = rigid rods), ``relaxation``
    (the over-relaxation omega in [1, 2), default 1.5), ``tethers`` (None: off; a slack
    >= 0: long-range attachments, see the module docstring), ``projection`` ("springs",
    the default, or "chains": see the module docstring). ``stats``: ``iterations`` =
    Gauss-Seidel passes of the last step (substeps x iterations), ``residual`` = its
    constraint error (:func:`constraint_error`, m, after the last pass; computed when
    first read, from the step's end positions and multipliers), ``converged`` = that
    error is finite. The kernels read the Params every substep, so parameter edits need
    no notice; a topology edit colours the springs again.
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
        self.relaxation = DEFAULT_RELAXATION
        self.tethers = None
        self.projection = "springs"
        n, dtype = model.n_particles, model.dtype
        self._anchor = np.full(n, -1, np.int64)  # each particle's nearest fixed particle
        self._anchor_distance = np.zeros(n)  # rest distance to it through the springs, m
        self._reach = np.zeros(n, dtype)  # (1 + tethers) x that distance, m
        self._anchors_stale = True
        self._x_prev = np.zeros((n, 3), dtype)
        # the step's end positions (for the residual) where the kernel works on x itself
        self._x_end = np.zeros((n, 3), dtype)
        self._weights = np.zeros(n, dtype)
        self._chunks = np.linspace(0, n, CHUNKS + 1).astype(np.int64)
        self._results = np.zeros((CHUNKS, 2))
        self._set_up_springs()

    def _set_up_springs(self) -> None:
        """The multipliers, the kernel path and the colour order of the model's spring
        list (again after a topology change)."""
        model = self.model
        n, m, dtype = model.n_particles, model.n_springs, model.dtype
        self._lambda = np.zeros(m, np.float64)
        self._grid = model.grid()  # None: the spring-list kernels
        # the grid's colours also on the spring-list path (grid_kernels=False): same results
        layout = self._grid if self._grid is not None or not m else grid_layout(
            model.spring_a, model.spring_b, n, model.grid_shape)
        if layout is not None:
            colouring = grid_edge_colouring(layout)
        else:
            colouring = edge_colouring(model.spring_a, model.spring_b, n) if m else None
        if colouring is None:  # > 128 colours (or no springs): one serial pass in order
            self._order = np.arange(m, dtype=np.int64)
            self._starts = np.array([0, m], np.int64)
        else:
            self._order, self._starts = colouring
        self._passes = ColourPasses(colouring is not None, m, GRID_PARALLEL_MIN_SPRINGS
                                    if self._grid is not None else PARALLEL_MIN_SPRINGS)
        if self._grid is not None:  # structure-of-arrays scratch of the grid kernels
            self._soa = np.zeros((3, 3, n), dtype)  # X, V, P: x, v, x_prev as (3, n)
            # the step's end positions and last substep start, for the residual
            self._ends = (self._soa[0].T, self._soa[2].T)
        else:
            self._ends = (self._x_end, self._x_prev)
        self._residual_h = None  # the residual of the last step is not computed yet
        self._chains = None  # the chain cover (kernels/chains.py), made on first use

    def _chain_cover(self, x: np.ndarray) -> tuple:
        """(cover, lanes, work, passes): the chain cover of the spring list, its lanes
        (kernels/chains.py chain_lanes), the lane solve's work array and the serial /
        parallel choice; made once per topology, along the rest shape (the positions x
        (n, 3) m now where the model has none)."""
        if self._chains is None:
            model = self.model
            n, m = model.n_particles, model.n_springs
            adjacency = vertex_adjacency(model.spring_a, model.spring_b, n)
            rest_x = model.rest_positions
            if rest_x is None:
                rest_x = np.ascontiguousarray(x, dtype=np.float64)
            cover = chain_cover(model.spring_a, model.spring_b, rest_x, *adjacency)
            lanes = chain_lanes(cover)
            self._chains = (cover, lanes, lane_work(lanes[0]),
                            ColourPasses(True, m, CHAIN_PARALLEL_MIN_SPRINGS))
        return self._chains

    def notify_model_changed(self, flags: Changed) -> None:
        if flags & Changed.TOPOLOGY:  # new spring list: coloured (and chained) again
            self._set_up_springs()
        if flags & (Changed.TOPOLOGY | Changed.FIXED | Changed.STIFFNESS
                    | Changed.REST_LENGTHS):  # other anchors or paths to them
            self._anchors_stale = True

    @property
    def tethers(self) -> float | None:
        """None (off) or the tethers' slack: no free particle farther from its nearest
        fixed particle than (1 + slack) times their rest distance through the springs
        (module docstring; 0.1 = 10 %)."""
        return self._tethers

    @tethers.setter
    def tethers(self, value: float | None) -> None:
        self._tethers = _none_or_non_negative(value, "xpbd.tethers",
                                              "None (off) or a finite slack >= 0")
        self._anchors_stale = True  # the reach follows the slack

    def _update_anchors(self) -> None:
        """Each particle's anchor and reach (kernels/tethers.py), for the model now."""
        model, p = self.model, self.model.params
        starts, springs, others = vertex_adjacency(model.spring_a, model.spring_b,
                                                   model.n_particles)
        nearest_anchors(starts, springs, others, p.rest_lengths, p.stiffness, p.fixed,
                        self._anchor, self._anchor_distance)
        np.multiply(self._anchor_distance, 1.0 + self._tethers, out=self._reach,
                    casting="unsafe")
        self._anchors_stale = False

    @property
    def projection(self) -> str:
        """How each pass projects the springs: "springs" (one at a time, colour by
        colour, over-relaxed by ``relaxation``) or "chains" (each chain of springs at
        once, exactly for its linearisation: kernels/chains.py; no over-relaxation)."""
        return self._projection

    @projection.setter
    def projection(self, value: str) -> None:
        if value not in PROJECTIONS:
            raise ValueError(f"xpbd.projection: expected one of {', '.join(PROJECTIONS)}, "
                             f"got {value!r}")
        self._projection = value

    @property
    def compliance(self) -> float | None:
        """None (each spring's 1/k) or one compliance for every spring, m/N (0: rigid)."""
        return self._compliance

    @compliance.setter
    def compliance(self, value: float | None) -> None:
        self._compliance = _none_or_non_negative(value, "xpbd.compliance",
                                                 "None or a finite number >= 0 (m/N)")

    @property
    def relaxation(self) -> float:
        """Over-relaxation omega of each projection, in [1, 2): dlambda is omega times
        the plain XPBD one, but at most the spring's whole impulse (module docstring)."""
        return self._relaxation

    @relaxation.setter
    def relaxation(self, value: float) -> None:
        low, high = RELAXATION_RANGE
        value = number_setting(value, "xpbd.relaxation", f"a number from {low:g} to below "
                               f"{high:g}")
        if not low <= value < high:
            raise ValueError(f"xpbd.relaxation: expected a number from {low:g} to below "
                             f"{high:g}, got {value!r}")
        self._relaxation = value

    @property
    def stats(self) -> SolverStats:
        """The solver figures of the last step; its residual is computed when first read
        (one pass over the springs that a run nobody looks at does not pay)."""
        if self._residual_h is not None:
            self._fill_residual()
        return self._stats

    @stats.setter
    def stats(self, value: SolverStats) -> None:
        self._stats = value
        self._residual_h = None

    def _fill_residual(self) -> None:
        p = self.model.params
        x_end, x_prev = self._step_ends
        h, compliance = self._residual_h
        self._residual_h = None
        residual = float(constraint_error(
            x_end, x_prev, self.model.spring_a, self.model.spring_b, p.rest_lengths,
            p.stiffness, p.damping, p.inv_mass, p.fixed, self._lambda, h, compliance))
        self._stats.residual = residual
        self._stats.converged = math.isfinite(residual)

    def step(self, state: State, dt: float) -> float:
        model, p = self.model, self.model.params
        external, has_external = self.external_forces(state)  # read only if has_external
        h = dt / self._substeps
        compliance = -1.0 if self._compliance is None else self._compliance
        per_k, per_spring, per_c, rigid = projection_scales(h, compliance)
        damp = math.exp(-float(p.drag[0]) * h) if model.drag_on else 1.0
        common = (state.x, state.v, self._x_prev, self._weights, self._lambda, p.inv_mass,
                  p.fixed)
        forces = (p.rest_lengths, p.stiffness, p.damping, model.gravity(), external,
                  has_external)
        if self._tethers is None:  # empty anchors: no tether pass
            anchor, reach = self._anchor[:0], self._reach[:0]
        else:
            if self._anchors_stale:
                self._update_anchors()
            anchor, reach = self._anchor, self._reach
        solver = (h, self._substeps, self._iterations, per_k, per_spring, per_c, rigid,
                  self._relaxation, damp, anchor, reach)
        ends = self._ends
        if self._projection == "chains" and model.n_springs:
            _, lanes, work, passes = self._chain_cover(state.x)
            result = passes.run(xpbd_chain_step, xpbd_chain_step_parallel, *common, *forces,
                                lanes, *solver[:7], damp, anchor, reach, work,
                                self._chunks, self._results)
            np.copyto(self._x_end, state.x)
            ends = (self._x_end, self._x_prev)  # the spring-list path's
        elif self._grid is not None:
            result = self._passes.run(xpbd_grid_step, xpbd_grid_step_parallel, *common,
                                      *forces, *solver, self._grid.cols, self._grid.blocks,
                                      *self._soa)
        else:
            result = self._passes.run(xpbd_step, xpbd_step_parallel, *common, model.spring_a,
                                      model.spring_b, *forces, self._order, self._starts,
                                      *solver, self._chunks, self._results)
            np.copyto(self._x_end, state.x)
        self._step_ends = ends
        stats = self._stats
        stats.iterations = self._substeps * self._iterations
        stats.total_iterations += stats.iterations
        stats.implicit_steps += 1
        self._residual_h = (h, compliance)  # stats.residual: computed when read
        return float(result)

    # --- snapshots (engine/snapshot.py) ---------------------------------------------------
    def save_warm(self) -> dict:
        """The settings (every substep starts from the state: nothing else carries)."""
        return {"substeps": self._substeps, "iterations": self._iterations,
                "compliance": self._compliance, "relaxation": self._relaxation,
                "tethers": self._tethers, "projection": self._projection}

    def load_warm(self, warm: dict) -> None:
        self.substeps = warm["substeps"]
        self.iterations = warm["iterations"]
        self.compliance = warm["compliance"]
        self.relaxation = warm["relaxation"]
        self.tethers = warm.get("tethers")  # snapshots from before tethers: off
        self.projection = warm.get("projection", "springs")
