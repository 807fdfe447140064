"""Live topology editing: springs added and removed, particles removed, pin groups.

:class:`TopologyEditing` is a base class of :class:`~ropesim.engine.simulation.Simulation`
(it reads the Simulation's private state; this module imports nothing of simulation.py)::

    k = sim.add_spring(i, j)          # rest length = the current distance, median k and c
    sim.remove_springs([k, 3, 4])     # gone for good (not broken): the list is compacted
    sim.remove_particle(i)            # its springs removed; the particle stays, inert
    sim.pin_many(indices)             # a pin group (unpin_many frees it)
    sim.topology_version              # bumped by every edit: a renderer compares it
    sim.springs, sim.triangles        # the current spring pairs and surface triangles

Indices. A spring added gets the next index (m); removing springs compacts the list, so
the springs after a removed one move down (their order is kept): re-read ``sim.springs``
after ``topology_version`` changes. Particle indices never change: a removed particle
stays in the arrays as an isolated, inert point (its springs removed, held fixed with
zero velocity, so it drops out of the momentum; no force moves it) and
``sim.removed_particles`` marks it so that a viewer hides it and does not pick it.
It cannot be grabbed or get new springs.

What follows an edit: the Params arrays are replaced by arrays of the new length (the
read-only views ``stiffness``, ``damping``, ``rest_lengths`` and ``broken`` are taken
again on access), ``sim.system`` becomes a SpringSystem of the current topology (initial
positions, current spring values, the triangles that kept every edge spring), attached
Wind forces are bound to it again, and every integrator is told ``Changed.TOPOLOGY``: the
Euler kernel path, the implicit solvers (multigrid / CG), the XPBD edge colouring and the
VBD adjacency are set up once more on the next step; the grid kernels are kept only if the
new spring list still is a grid (else the spring-list paths run). Broken springs stay
broken (their entries are kept); a triangle that lost an edge spring to a removal is no
longer part of the surface.

``sim.reset()`` restores the original topology: every original spring comes back with
its current stiffness, damping, rest length and break strain (a removed one with those it
had when it was removed), added springs go, removed particles return.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .forces import Wind
from .impulses import check_particle
from .model import SpringSystem, as_index_array, check_fits_dtype, check_number, show
from .state import Changed
from .tearing import triangle_edge_springs


class Topology:
    """The topology bookkeeping of one simulation: the initial system, the original spring
    index of each current spring (``origin``, -1 for an added one), the removed
    particles, the values of removed original springs (for reset) and the version."""

    def __init__(self, system: SpringSystem):
        self.initial = system
        m = system.n_springs
        self.origin = np.arange(m, dtype=np.int64)
        self.removed = np.zeros(system.n_particles, dtype=np.bool_)
        self.version = 0
        self.edited = False
        # the values an original spring had when it was removed: rest m, stiffness N/m,
        # damping N*s/m, break strain
        self.archive = {"rest": system.rest_lengths.astype(np.float64),
                        "stiffness": system.stiffness.astype(np.float64),
                        "damping": system.damping.astype(np.float64),
                        "break_strain": np.full(m, np.inf)}


def _index_array(indices: Any, count: int, what: str) -> np.ndarray:
    """Validated ``what`` ("spring" or "particle") indices in 0..count-1 (int64, flat)."""
    index = as_index_array(indices, "indices").ravel()
    outside = (index < 0) | (index >= count)
    if outside.any():
        raise ValueError(f"indices: {what} indices must be in 0..{count - 1}, got "
                         f"{show(index.tolist())}")
    return index


def _coefficient(value: Any, field: str, unit: str, dtype: np.dtype) -> float:
    number = check_number(value, field, unit, minimum=0.0)
    check_fits_dtype(number, dtype, field, unit)
    return number


def _median(values: np.ndarray, field: str) -> float:
    if not values.size:
        raise ValueError(f"{field}: the system has no springs to take the median {field} "
                         f"of; allowed: give {field}= explicitly")
    return float(np.median(values))


def sew_weight(system: SpringSystem, mass: float) -> SpringSystem:
    """The system with ``mass`` kg more, spread evenly over its lowest particles (those
    within 1e-9 m of the smallest y: a hanging cloth's bottom row), like a weight sewn
    into a hem (a scene's [weight] table)."""
    mass = check_number(mass, "weight.mass", "kg", minimum=0.0, strict=True)
    y = system.positions[:, 1]
    hem = y <= y.min() + 1e-9
    masses = system.mass.copy()
    masses[hem] += mass / np.count_nonzero(hem)
    return dataclasses.replace(system, mass=masses, young_modulus=None,
                               stiffness=system.stiffness, rest_lengths=system.rest_lengths)


class TopologyEditing:
    """Live topology edits of a Simulation (module docstring). Mixed into Simulation."""

    # --- what a renderer reads -------------------------------------------------------------
    @property
    def topology_version(self) -> int:
        """Counts topology edits (add / remove / reset after edits): compare it to know
        when to re-read ``springs``, ``triangles`` and ``removed_particles``."""
        return self._topology.version

    @property
    def springs(self) -> np.ndarray:
        """(m, 2) int32 particle pairs of the current springs (a read-only view)."""
        pairs = np.stack([self._model.spring_a, self._model.spring_b], axis=1)
        pairs.flags.writeable = False
        return pairs

    @property
    def triangles(self) -> np.ndarray | None:
        """(t, 3) surface triangles of the current topology (those that lost an edge
        spring to a removal are gone; torn ones are still listed: see ``broken``), or
        None for a system without a surface."""
        return self.system.triangles

    @property
    def removed_particles(self) -> np.ndarray:
        """(n,) bool: particles removed by remove_particle (inert, to hide; a read-only
        view; reset() brings them back)."""
        view = self._topology.removed.view()
        view.flags.writeable = False
        return view

    # --- edits -----------------------------------------------------------------------------
    def add_spring(self, i: int, j: int, stiffness: float | None = None,
                   damping: float | None = None, rest_length: float | None = None) -> int:
        """Join particles i and j with a new spring; returns its index (the last one).

        Defaults: rest_length the current distance |x_j - x_i| (m), stiffness (N/m) and
        damping (N*s/m) the median over the current springs; its break strain is the
        median of the current break strains. Two particles already joined by an intact
        spring, i == j, a removed particle or an index out of range raise ValueError.
        """
        i, j = check_particle(self, i, "i"), check_particle(self, j, "j")
        if i == j:
            raise ValueError(f"i, j: a spring needs two different particles, got i = j = {i}")
        for field, p in (("i", i), ("j", j)):
            if self._topology.removed[p]:
                raise ValueError(f"{field}: particle {p} was removed (sim.removed_particles); "
                                 "allowed: a particle that is not removed")
        a, b = self._model.spring_a, self._model.spring_b
        same = np.flatnonzero(((a == i) & (b == j)) | ((a == j) & (b == i)))
        intact = same[~self._tearing.broken[same]]
        if intact.size:
            raise ValueError(f"i, j: particles {i} and {j} are already joined by spring "
                             f"{int(intact[0])}; allowed: two particles without a spring")
        tear = self._tearing
        k = (_median(tear.stiffness, "stiffness") if stiffness is None
             else _coefficient(stiffness, "stiffness", "N/m", self.dtype))
        c = (_median(tear.damping, "damping") if damping is None
             else _coefficient(damping, "damping", "N*s/m", self.dtype))
        rest = (float(np.linalg.norm(self._x[j].astype(np.float64) - self._x[i]))
                if rest_length is None
                else _coefficient(rest_length, "rest_length", "m", self.dtype))
        strain = float(np.median(tear.break_strain)) if tear.break_strain.size else np.inf
        springs = np.concatenate([self.springs, [[i, j]]]).astype(np.int64)
        self._install_springs(
            springs, np.append(self._params.rest_lengths, rest),
            np.append(tear.stiffness, k), np.append(tear.damping, c),
            np.append(tear.break_strain, strain), np.append(tear.broken, False),
            np.append(self._topology.origin, -1), self.system.triangles)
        return self.n_springs - 1

    def remove_springs(self, indices: Any) -> int:
        """Remove the springs at ``indices`` for good (not broken: they leave the list,
        which is compacted; reset() restores them); returns how many were removed."""
        index = np.unique(_index_array(indices, self.n_springs, "spring"))
        if not index.size:
            return 0
        keep = np.ones(self.n_springs, dtype=np.bool_)
        keep[index] = False
        topology, tear = self._topology, self._tearing
        original = index[topology.origin[index] >= 0]
        archive, at = topology.archive, topology.origin[original]
        archive["rest"][at] = self._params.rest_lengths[original]
        archive["stiffness"][at] = tear.stiffness[original]
        archive["damping"][at] = tear.damping[original]
        archive["break_strain"][at] = tear.break_strain[original]
        triangles = self.system.triangles
        if triangles is not None:
            edges = triangle_edge_springs(triangles, self._model.spring_a,
                                          self._model.spring_b, self.n_particles)
            lost = np.isin(edges, index).any(axis=1)
            triangles = triangles[~lost]
        self._install_springs(
            self.springs[keep].astype(np.int64), self._params.rest_lengths[keep],
            tear.stiffness[keep], tear.damping[keep], tear.break_strain[keep],
            tear.broken[keep], topology.origin[keep], triangles)
        return int(index.size)

    def remove_particle(self, i: int) -> int:
        """Remove particle i: its springs go (remove_springs) and it stays as an inert,
        hidden point (module docstring); returns how many springs were removed. A
        particle already removed is left as it is (returns 0)."""
        i = check_particle(self, i, "i")
        if self._topology.removed[i]:
            return 0
        if self._grabbed == i:
            self.release()
        a, b = self._model.spring_a, self._model.spring_b
        removed = self.remove_springs(np.flatnonzero((a == i) | (b == i)))
        self._topology.removed[i] = True
        self._topology.edited = True
        self._topology.version += 1
        self._v[i] = 0.0
        self._refresh_fixed()
        return removed

    def pin_many(self, indices: Any) -> None:
        """Pin every particle in ``indices`` where it is now (a pin group)."""
        index = _index_array(indices, self.n_particles, "particle")
        self._pinned[index] = True
        self._v[index] = 0.0
        self._refresh_fixed()

    def unpin_many(self, indices: Any) -> None:
        """Unpin every particle in ``indices``."""
        index = _index_array(indices, self.n_particles, "particle")
        self._pinned[index] = False
        self._refresh_fixed()

    # --- the hooks the Simulation calls ----------------------------------------------------
    def _check_not_removed(self, i: int) -> None:
        if self._topology.removed[i]:
            raise ValueError(f"particle: {i} was removed (sim.removed_particles); allowed: "
                             "a particle that is not removed")

    def _mark_removed_fixed(self) -> None:
        """Removed particles are fixed (not moved by any integrator)."""
        self._fixed[self._topology.removed] = 1

    def _reset_topology(self) -> None:
        """Back to the original springs and particles (reset); nothing if never edited."""
        topology, tear = self._topology, self._tearing
        if not topology.edited:
            return
        values = {name: array.copy() for name, array in topology.archive.items()}
        survivors = topology.origin >= 0
        at = topology.origin[survivors]
        values["rest"][at] = self._params.rest_lengths[survivors]
        values["stiffness"][at] = tear.stiffness[survivors]
        values["damping"][at] = tear.damping[survivors]
        values["break_strain"][at] = tear.break_strain[survivors]
        initial = topology.initial
        m = initial.n_springs
        topology.removed[:] = False
        self._install_springs(initial.springs, values["rest"], values["stiffness"],
                              values["damping"], values["break_strain"],
                              np.zeros(m, dtype=np.bool_), np.arange(m, dtype=np.int64),
                              initial.triangles)
        topology.edited = False

    def _install_springs(self, springs: np.ndarray, rest: np.ndarray, stiffness: np.ndarray,
                         damping: np.ndarray, break_strain: np.ndarray, broken: np.ndarray,
                         origin: np.ndarray, triangles: np.ndarray | None) -> None:
        """Make (m, 2) ``springs`` with these per-spring values the simulation's spring
        list: Params, views, tearing, health check, system, wind, integrators."""
        dtype, m = self.dtype, springs.shape[0]
        springs = np.asarray(springs, dtype=np.int64).reshape(m, 2)
        spring_a = np.ascontiguousarray(springs[:, 0], dtype=np.int32)
        spring_b = np.ascontiguousarray(springs[:, 1], dtype=np.int32)
        params = self._params._replace(rest_lengths=np.ascontiguousarray(rest, dtype=dtype),
                                       stiffness=np.zeros(m, dtype), damping=np.zeros(m, dtype))
        tear = self._tearing
        tear.set_springs(np.ascontiguousarray(stiffness, dtype=dtype),
                         np.ascontiguousarray(damping, dtype=dtype),
                         np.ascontiguousarray(break_strain, dtype=np.float64),
                         np.ascontiguousarray(broken, dtype=np.bool_))
        tear.write(params)  # broken springs at 0
        self._params = params
        self._model.set_springs(spring_a, spring_b, params)
        self._springs.spring_a, self._springs.spring_b = spring_a, spring_b
        for name in ("stiffness", "damping", "rest_lengths"):
            view = getattr(params, name).view()
            view.flags.writeable = False
            self._views[name] = view
        self._strain = np.zeros(m, dtype)
        health = self._health  # it skips broken springs (stiffness 0) itself
        health.spring_a, health.spring_b = spring_a, spring_b
        health.rest_lengths, health.stiffness = params.rest_lengths, params.stiffness
        health.damping = params.damping
        if self._grabbed is not None:  # the springs on the grabbed particle, found again
            health.start_grab(self._x, self._v, self._grabbed)
        self._topology.origin = np.asarray(origin, dtype=np.int64)
        self.system = dataclasses.replace(
            self._topology.initial, springs=springs, rest_lengths=params.rest_lengths.astype(
                np.float64), stiffness=tear.stiffness.astype(np.float64),
            damping=tear.damping.astype(np.float64), young_modulus=None,
            triangles=triangles, pinned=self._topology.initial.pinned)
        for force in self._model.forces:
            if isinstance(force, Wind):
                force.bind(self.system.triangles, spring_a, spring_b, self.planar,
                           tear.broken)
        self._topology.version += 1
        self._topology.edited = True
        self._changed(Changed.TOPOLOGY | Changed.SPRINGS)


__all__ = ["Topology", "TopologyEditing", "sew_weight"]
