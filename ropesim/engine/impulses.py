"""Plucks: an impulse on one particle of a running simulation.

Only the Simulation's public state is used (``velocities``, ``masses``, ``pinned``,
``grabbed``, ``planar``, ``n_particles``), so ``Simulation.pluck`` can delegate here
without an import cycle.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def check_particle(sim: Any, i: Any, name: str) -> int:
    """``i`` as a particle index of ``sim``; ValueError naming ``name`` otherwise."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise ValueError(f"{name}: expected a particle index (an integer), got {i!r}")
    if not 0 <= int(i) < sim.n_particles:
        raise ValueError(f"{name}: particle index must be in 0..{sim.n_particles - 1}, got {i}")
    return int(i)


def check_impulse(sim: Any, impulse: Any) -> np.ndarray:
    """An impulse as a (3,) float64 vector, N*s: 2 or 3 finite numbers, z = 0 if planar."""
    try:
        vector = np.asarray(impulse, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        vector = np.zeros(0)
    if vector.shape not in ((2,), (3,)) or not np.all(np.isfinite(vector)):
        raise ValueError(f"impulse: expected 2 or 3 finite numbers (N*s), got {impulse!r}")
    vector = np.append(vector, 0.0) if vector.size == 2 else vector
    if sim.planar and vector[2] != 0.0:
        raise ValueError(f"impulse: a planar (2-D) system needs z = 0, got {impulse!r}")
    return vector


def check_pluckable(sim: Any, i: Any, name: str) -> int:
    """``i`` as the index of a particle that may be plucked: neither pinned nor grabbed."""
    i = check_particle(sim, i, name)
    if sim.pinned[i]:
        raise ValueError(f"{name}: particle {i} is pinned and cannot be plucked; "
                         "choose a free particle (or unpin it first)")
    if sim.grabbed == i:
        raise ValueError(f"{name}: particle {i} is held by a grab; release it first")
    return i


def pluck(sim: Any, i: int, impulse: Sequence[float]) -> None:
    """Give particle ``i`` an impulse (2 or 3 numbers, N*s): its velocity changes by
    impulse / mass (m/s), so the momentum changes by exactly the impulse. Works while
    paused: the next step starts the wave. A pinned or grabbed particle cannot be plucked.
    """
    i = check_pluckable(sim, i, "particle")
    vector = check_impulse(sim, impulse)
    sim.velocities[i] += vector / float(sim.masses[i])
