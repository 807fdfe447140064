"""The energy budget: where the energy of a run went, accumulated step by step (J).

With ``sim.track_energy = True`` every step is followed through its stages (the order
of Simulation._advance): S0 its start, S1 after the integrator and the grab, S2 after
tearing and the strain limit, S3 after the contacts (its end). Between them:

- S0 -> S1: the dampers' loss is minus their work along the particles' displacement,
  the trapezoid of the damper forces at S0 and S1 (``damping``); drag (v *= exp(-drag
  dt) at the end of the integrator) took KE_free (1 / exp(-drag dt)^2 - 1) (``drag``,
  KE_free the free particles' kinetic energy at S1); the grab did the grabbed particle's
  kinetic + gravity energy change minus the work of the spring and damper forces on it
  (trapezoid) (``grab``); attached forces without a potential did the trapezoid of their
  force on the free particles along their displacement (``forces``; forces with a
  potential are in ``attached`` instead). What the integrator itself gains or loses
  (its numerical error) is left over in ``balance``.
- S1 -> S2: springs that broke take their elastic energy with them and the strain limit
  removes stretch and stretching speed: the measured energy drop (``tearing``).
- S2 -> S3: the contacts' measured energy drop, split into friction (the kinetic energy
  of the tangential velocity the contacts removed, tangential to the direction each
  particle was pushed out along, ``friction``) and the rest: the inward normal velocity
  removed and the energy of pushing particles out (``contact``).
- Between steps, whatever changed the energy outside a step (a pinned or any particle
  moved by hand, a pluck, a parameter edit, a reset of gravity) is ``user``.

``balance = initial + grab + forces + user - (damping + drag + friction + contact +
tearing) - total``: ~0 up to the integrator's error (docs/analysis.md gives it per
integrator). ``scale`` (J) is the energy that moved through the budget plus the current
kinetic and elastic energy: the yardstick of ``balance``. Losses are >= 0 for real
dissipation; inputs are signed (a grab can take energy out).

Cost: a particle pass, a spring pass (both states' geometry) and copies of x and v per
step, the attached forces once more, a pass per stage used (tearing, contacts) and a
measurement per ``step(n)`` call; nothing when ``track_energy`` is off
(docs/analysis.md has the measured cost).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from . import parallel
from .integrators.euler import PARALLEL_MIN_SPRINGS

from .kernels.particles import MIN_LENGTH
from .state import State

#: the loss terms and the input terms of an EnergyBudget, in CSV order
LOSSES = ("damping", "drag", "friction", "contact", "tearing")
INPUTS = ("grab", "forces", "user")
#: the current energies
CURRENT = ("kinetic", "gravity", "elastic", "attached", "total")


@njit(cache=True)
def particle_energies(x, v, mass, fixed, gravity, out):
    """out[0] = kinetic energy, out[1] = the free particles' kinetic energy, out[2] =
    gravity energy -sum m g.x (J), accumulated in float64."""
    kinetic = 0.0
    free = 0.0
    potential = 0.0
    for i in range(x.shape[0]):
        m = np.float64(mass[i])
        e = 0.5 * m * (np.float64(v[i, 0]) ** 2 + np.float64(v[i, 1]) ** 2
                       + np.float64(v[i, 2]) ** 2)
        kinetic += e
        if not fixed[i]:
            free += e
        potential -= m * (gravity[0] * np.float64(x[i, 0]) + gravity[1] * np.float64(x[i, 1])
                          + gravity[2] * np.float64(x[i, 2]))
    out[0] = kinetic
    out[1] = free
    out[2] = potential


@njit(cache=True)
def elastic_energy(x, spring_a, spring_b, rest, k):
    """sum k/2 (l - L)^2 over the springs, J, in float64."""
    total = 0.0
    for s in range(spring_a.shape[0]):
        a, b = spring_a[s], spring_b[s]
        dx = np.float64(x[a, 0]) - x[b, 0]
        dy = np.float64(x[a, 1]) - x[b, 1]
        dz = np.float64(x[a, 2]) - x[b, 2]
        stretch = math.sqrt(dx * dx + dy * dy + dz * dz) - rest[s]
        total += 0.5 * k[s] * stretch * stretch
    return total


#: slices the springs are cut into for the motion pass (fixed: the sums, taken slice by
#: slice in order, do not depend on the thread count; the serial pass sums the same way)
CHUNKS = 64


@njit(cache=True, error_model="numpy", inline="always")
def _motion_chunk(lo, hi, x0, v0, x1, v1, spring_a, spring_b, rest, k, c, out):
    """out[0:2] = (elastic energy at S1, the dampers' loss) of springs lo..hi-1, J
    (motion_terms)."""
    elastic = 0.0
    loss = 0.0
    tiny = MIN_LENGTH * MIN_LENGTH
    for s in range(lo, hi):
        a, b = spring_a[s], spring_b[s]
        d0x = np.float64(x0[a, 0]) - x0[b, 0]
        d0y = np.float64(x0[a, 1]) - x0[b, 1]
        d0z = np.float64(x0[a, 2]) - x0[b, 2]
        d1x = np.float64(x1[a, 0]) - x1[b, 0]
        d1y = np.float64(x1[a, 1]) - x1[b, 1]
        d1z = np.float64(x1[a, 2]) - x1[b, 2]
        sq0 = d0x * d0x + d0y * d0y + d0z * d0z
        sq1 = d1x * d1x + d1y * d1y + d1z * d1z
        stretch = math.sqrt(sq1) - rest[s]
        elastic += 0.5 * k[s] * stretch * stretch
        ex, ey, ez = d1x - d0x, d1y - d0y, d1z - d0z
        # (v_a - v_b).d / l^2: the relative normal speed over the length, 1/s
        r0 = r1 = 0.0
        if sq0 >= tiny:
            r0 = ((np.float64(v0[a, 0]) - v0[b, 0]) * d0x + (np.float64(v0[a, 1]) - v0[b, 1]) * d0y
                  + (np.float64(v0[a, 2]) - v0[b, 2]) * d0z) / sq0
        if sq1 >= tiny:
            r1 = ((np.float64(v1[a, 0]) - v1[b, 0]) * d1x + (np.float64(v1[a, 1]) - v1[b, 1]) * d1y
                  + (np.float64(v1[a, 2]) - v1[b, 2]) * d1z) / sq1
        loss += 0.5 * c[s] * (r0 * (d0x * ex + d0y * ey + d0z * ez)
                              + r1 * (d1x * ex + d1y * ey + d1z * ez))
    out[0] = elastic
    out[1] = loss


@njit(cache=True, inline="always")
def _total(partial, out):
    """out[0:2] = the column sums of partial (CHUNKS, 2), in slice order."""
    out[0] = 0.0
    out[1] = 0.0
    for t in range(CHUNKS):
        out[0] += partial[t, 0]
        out[1] += partial[t, 1]


@njit(cache=True, error_model="numpy")
def motion_terms(x0, v0, x1, v1, spring_a, spring_b, rest, k, c, partial, out):
    """Over the springs, from S0 = (x0, v0) to S1 = (x1, v1): out[0] = elastic energy at
    S1 (J); out[1] = the dampers' loss, J (minus the trapezoid of their work along the
    displacement: c ((v_a - v_b).n) (n.delta) at S0 and S1, delta the change of x_a - x_b).
    Springs shorter than MIN_LENGTH have no direction and no damper force. Summed in
    CHUNKS slices (partial (CHUNKS, 2) scratch), as motion_terms_parallel."""
    m = spring_a.shape[0]
    for t in range(CHUNKS):  # serial
        _motion_chunk(m * t // CHUNKS, m * (t + 1) // CHUNKS, x0, v0, x1, v1, spring_a,
                      spring_b, rest, k, c, partial[t])
    _total(partial, out)


@njit(cache=True, error_model="numpy", parallel=True)
def motion_terms_parallel(x0, v0, x1, v1, spring_a, spring_b, rest, k, c, partial, out):
    """motion_terms with the slices in parallel (identical results)."""
    m = spring_a.shape[0]
    for t in prange(CHUNKS):
        _motion_chunk(m * t // CHUNKS, m * (t + 1) // CHUNKS, x0, v0, x1, v1, spring_a,
                      spring_b, rest, k, c, partial[t])
    _total(partial, out)


@njit(cache=True, error_model="numpy")
def grab_forces(x0, v0, x1, v1, spring_a, spring_b, rest, k, c, touching, grabbed, out):
    """out[0:3], out[3:6] = the spring + damper force on particle ``grabbed`` at S0 and
    at S1, N, from the springs ``touching`` it: -k (l - L) n - c ((v_a - v_b).n) n on
    end a, the opposite on end b (none for a spring shorter than MIN_LENGTH)."""
    for d in range(6):
        out[d] = 0.0
    for e in range(touching.shape[0]):
        s = touching[e]
        a, b = spring_a[s], spring_b[s]
        sign = 1.0 if a == grabbed else -1.0
        for state in range(2):
            x = x0 if state == 0 else x1
            v = v0 if state == 0 else v1
            dx = np.float64(x[a, 0]) - x[b, 0]
            dy = np.float64(x[a, 1]) - x[b, 1]
            dz = np.float64(x[a, 2]) - x[b, 2]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            if length < MIN_LENGTH:
                continue
            nx, ny, nz = dx / length, dy / length, dz / length
            speed = ((np.float64(v[a, 0]) - v[b, 0]) * nx + (np.float64(v[a, 1]) - v[b, 1]) * ny
                     + (np.float64(v[a, 2]) - v[b, 2]) * nz)
            magnitude = sign * (-k[s] * (length - rest[s]) - c[s] * speed)
            out[3 * state] += magnitude * nx
            out[3 * state + 1] += magnitude * ny
            out[3 * state + 2] += magnitude * nz


@njit(cache=True)
def force_work(f0, f1, x0, x1, fixed):
    """Trapezoid work of forces f0 (at S0) and f1 (at S1) on the free particles along
    their displacement x1 - x0, J."""
    work = 0.0
    for i in range(x0.shape[0]):
        if fixed[i]:
            continue
        for d in range(3):
            work += 0.5 * (np.float64(f0[i, d]) + f1[i, d]) * (np.float64(x1[i, d]) - x0[i, d])
    return work


@njit(cache=True)
def friction_loss(x, v, x_before, v_before, mass, fixed):
    """Kinetic energy of the tangential velocity the contacts took, J: for each free
    particle whose velocity changed, the direction the contact pushed it out along (its
    position change, the obstacle's normal there) splits the kinetic energy change into
    the normal part (removed inward speed) and the tangential rest (friction). A
    particle whose velocity changed without a push counts wholly as normal."""
    total = 0.0
    for i in range(x.shape[0]):
        if fixed[i]:
            continue
        if v[i, 0] == v_before[i, 0] and v[i, 1] == v_before[i, 1] and v[i, 2] == v_before[i, 2]:
            continue
        nx = np.float64(x[i, 0]) - x_before[i, 0]
        ny = np.float64(x[i, 1]) - x_before[i, 1]
        nz = np.float64(x[i, 2]) - x_before[i, 2]
        push = math.sqrt(nx * nx + ny * ny + nz * nz)
        if push == 0.0:
            continue
        nx, ny, nz = nx / push, ny / push, nz / push
        before = (np.float64(v_before[i, 0]) ** 2 + np.float64(v_before[i, 1]) ** 2
                  + np.float64(v_before[i, 2]) ** 2)
        after = np.float64(v[i, 0]) ** 2 + np.float64(v[i, 1]) ** 2 + np.float64(v[i, 2]) ** 2
        normal_before = v_before[i, 0] * nx + v_before[i, 1] * ny + v_before[i, 2] * nz
        normal_after = v[i, 0] * nx + v[i, 1] * ny + v[i, 2] * nz
        total += 0.5 * np.float64(mass[i]) * ((before - normal_before * normal_before)
                                              - (after - normal_after * normal_after))
    return total


@dataclass(frozen=True)
class EnergyBudget:
    """Where the energy went since tracking began (J; see the module docstring).

    Current: ``kinetic``, ``gravity``, ``elastic``, ``attached`` (potentials of attached
    forces), ``total``; ``initial`` (total when tracking began). Losses: ``damping``,
    ``drag``, ``friction``, ``contact``, ``tearing``. Inputs: ``grab``, ``forces``
    (attached forces without a potential), ``user`` (changes between steps). ``balance``
    = initial + inputs - losses - total; ``scale`` = the yardstick of balance.
    ``time`` (s) and ``steps`` tracked.
    """

    kinetic: float
    gravity: float
    elastic: float
    attached: float
    total: float
    initial: float
    damping: float
    drag: float
    friction: float
    contact: float
    tearing: float
    grab: float
    forces: float
    user: float
    balance: float
    scale: float
    time: float
    steps: int

    def as_dict(self) -> dict[str, float]:
        """The terms by name (J; time in s, steps), in the order of the fields."""
        return dataclasses.asdict(self)

    @property
    def relative_balance(self) -> float:
        """|balance| / scale (0 when nothing moved)."""
        return abs(self.balance) / self.scale if self.scale > 0.0 else 0.0


class EnergyLedger:
    """The accumulators of one simulation's budget and the scratch its stages use
    (Simulation.step calls between_steps before its steps; Simulation._advance calls
    begin, after_motion, after_tearing and end in each step). ``accounts``: go on from
    those of :meth:`accounts` (a snapshot) instead of starting from the current state."""

    def __init__(self, sim: Any, accounts: dict[str, Any] | None = None):
        n = sim.n_particles
        self._x0 = np.zeros((n, 3), sim.dtype)
        self._v0 = np.zeros((n, 3), sim.dtype)
        self._x2 = np.zeros((n, 3), sim.dtype)
        self._v2 = np.zeros((n, 3), sim.dtype)
        self._f0 = np.zeros((n, 3))
        self._f1 = np.zeros((n, 3))
        self._particles = np.zeros(3)
        self._motion = np.zeros(2)
        self._partial = np.zeros((CHUNKS, 2))
        self._grab_force = np.zeros(6)
        self._touching = (-1, np.zeros(0, np.int64))  # (grabbed particle, its springs)
        self._chooser = parallel.Chooser()
        self._large = sim.n_springs >= PARALLEL_MIN_SPRINGS  # the parallel pass may pay
        self._end_state = State(sim._x, sim._v)
        self._working_forces: list[Any] = []
        if accounts is None:
            accounts = {"terms": dict.fromkeys(LOSSES + INPUTS, 0.0), "steps": 0,
                        "time": 0.0, "initial": self._measure(sim)}
            accounts["energy"] = accounts["initial"]
        self.terms = dict(accounts["terms"])
        self.steps = int(accounts["steps"])
        self.time = float(accounts["time"])
        self.initial = float(accounts["initial"])
        self._energy = float(accounts["energy"])  # J, the total as the last stage left it

    def accounts(self) -> dict[str, Any]:
        """The accumulators (J; steps, time s), for snapshots: EnergyLedger(sim, accounts)
        goes on from them."""
        return {"terms": dict(self.terms), "steps": self.steps, "time": self.time,
                "initial": self.initial, "energy": self._energy}

    # --- measurements ---------------------------------------------------------------------
    def _particle_terms(self, sim: Any) -> np.ndarray:
        p = sim._params
        particle_energies(sim._x, sim._v, p.mass, p.fixed, sim._model.gravity(),
                          self._particles)
        return self._particles

    def _elastic(self, sim: Any) -> float:
        p, model = sim._params, sim._model
        return float(elastic_energy(sim._x, model.spring_a, model.spring_b, p.rest_lengths,
                                    p.stiffness))

    def _measure(self, sim: Any, elastic: float | None = None) -> float:
        """The total energy now (kinetic + gravity + elastic + attached potentials), J."""
        kinetic, _, gravity = self._particle_terms(sim)
        elastic = self._elastic(sim) if elastic is None else elastic
        return float(kinetic + gravity + elastic + sim.attached_energy())

    def _attached_forces(self, sim: Any, time: float, out: np.ndarray) -> bool:
        """out = the attached forces without a potential at (x, v, time), N; False if none."""
        forces = self._working_forces
        if not forces:
            return False
        state = self._end_state
        state.x, state.v, state.time = sim._x, sim._v, time
        out[:] = 0.0
        for force in forces:
            force.accumulate(state, sim._params, out)
        return True

    # --- the stages of a step ---------------------------------------------------------------
    def between_steps(self, sim: Any) -> None:
        """Before a run of steps (Simulation.step): what changed the energy since the last
        step (nothing can within a run) is the user's."""
        energy = self._measure(sim)
        self.terms["user"] += energy - self._energy
        self._energy = energy

    def begin(self, sim: Any) -> None:
        """S0: keep x0, v0 and the attached forces without a potential."""
        self._x0[:] = sim._x
        self._v0[:] = sim._v
        state = sim._state
        self._working_forces = [force for force in sim._model.forces
                                if force.potential_energy(state, sim._params) is None]
        self._attached_forces(sim, state.time, self._f0)

    def after_motion(self, sim: Any) -> None:
        """S1 (after the integrator and the grab): dampers, drag, grab and forces' work."""
        p, model, dt = sim._params, sim._model, sim._dt
        grabbed = -1 if sim._grabbed is None else sim._grabbed
        motion = self._motion
        args = (self._x0, self._v0, sim._x, sim._v, model.spring_a, model.spring_b,
                p.rest_lengths, p.stiffness, p.damping)
        use_parallel = (self._large and self._chooser.parallel() and parallel.threads() > 1)
        start = time.perf_counter()
        (motion_terms_parallel if use_parallel else motion_terms)(*args, self._partial, motion)
        if self._large:
            self._chooser.record(use_parallel, start)
        kinetic, free, gravity = self._particle_terms(sim)
        terms = self.terms
        terms["damping"] += float(motion[1])
        factor = float(model.damp_factor(dt))
        terms["drag"] += float(free) * (1.0 / (factor * factor) - 1.0)
        if grabbed >= 0:
            g = model.gravity().astype(np.float64)
            m = float(p.mass[grabbed])
            x0, x1 = self._x0[grabbed].astype(np.float64), sim._x[grabbed].astype(np.float64)
            v0, v1 = self._v0[grabbed].astype(np.float64), sim._v[grabbed].astype(np.float64)
            own = 0.5 * m * (v1 @ v1 - v0 @ v0) - m * float(g @ (x1 - x0))
            if self._touching[0] != grabbed:
                touching = np.flatnonzero((model.spring_a == grabbed)
                                          | (model.spring_b == grabbed))
                self._touching = (grabbed, touching.astype(np.int64))
            force = self._grab_force
            grab_forces(*args, self._touching[1], grabbed, force)
            terms["grab"] += own - 0.5 * float((force[:3] + force[3:]) @ (x1 - x0))
        if self._attached_forces(sim, sim._state.time + dt, self._f1):
            terms["forces"] += float(force_work(self._f0, self._f1, self._x0, sim._x, p.fixed))
        self._energy = float(kinetic + gravity + motion[0]) + sim.attached_energy()

    def after_tearing(self, sim: Any) -> None:
        """S2: the energy tearing and the strain limit removed; keep v for the contacts."""
        if sim._tearing.breakable or sim._max_stretch is not None:
            energy = self._measure(sim)
            self.terms["tearing"] += self._energy - energy
            self._energy = energy
        if sim._contacts:
            self._x2[:] = sim._x
            self._v2[:] = sim._v

    def end(self, sim: Any) -> None:
        """S3 (the step's end): the contacts' loss, split into friction and the rest."""
        if sim._contacts:
            energy = self._measure(sim)
            friction = float(friction_loss(sim._x, sim._v, self._x2, self._v2,
                                           sim._params.mass, sim._params.fixed))
            self.terms["friction"] += friction
            self.terms["contact"] += self._energy - energy - friction
            self._energy = energy
        self.steps += 1
        self.time += sim._dt

    # --- the result -------------------------------------------------------------------------
    def budget(self, sim: Any) -> EnergyBudget:
        """The budget now (the current energies measured afresh)."""
        kinetic, _, gravity = (float(value) for value in self._particle_terms(sim))
        elastic = self._elastic(sim)
        attached = float(sim.attached_energy())
        total = kinetic + gravity + elastic + attached
        terms = dict(self.terms)
        # changes since the last step (a hand-moved pin, a pluck) are the user's
        terms["user"] += total - self._energy
        losses = sum(terms[name] for name in LOSSES)
        inputs = sum(terms[name] for name in INPUTS)
        balance = self.initial + inputs - losses - total
        scale = sum(abs(value) for value in terms.values()) + kinetic + elastic
        return EnergyBudget(kinetic=kinetic, gravity=gravity, elastic=elastic,
                            attached=attached, total=total, initial=self.initial,
                            balance=balance, scale=scale, time=self.time, steps=self.steps,
                            **terms)


def ledger_for(sim: Any, on: Any) -> EnergyLedger | None:
    """A fresh EnergyLedger for ``sim`` (tracking from its current state) if ``on``, None
    if not; TypeError for anything but True or False."""
    if not isinstance(on, (bool, np.bool_)):
        raise TypeError(f"track_energy: expected True or False, got {on!r}")
    return EnergyLedger(sim) if on else None


__all__ = ["EnergyBudget", "EnergyLedger", "ledger_for", "LOSSES", "INPUTS", "CURRENT"]
