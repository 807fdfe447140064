"""The static model of a mass-spring system: particles and springs as arrays.

A :class:`SpringSystem` holds what a builder made: initial positions and
velocities, per-particle masses and pin flags, and per-spring index pairs, rest
lengths, stiffness and damping. It never changes while a simulation runs; the
:class:`~ropesim.engine.simulation.Simulation` copies what it needs into its own state.

Units: metres (m), seconds (s), kilograms (kg), stiffness in N/m, damping in N*s/m.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

ArrayLike = Any


def _per_item(value: ArrayLike, count: int, name: str, owner: str) -> np.ndarray:
    """Broadcast a scalar or check a length-`count` array; always float64."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        return np.full(count, float(arr))
    if arr.shape != (count,):
        raise ValueError(
            f"{name}: expected a scalar or an array of shape ({count},) (one per {owner}), "
            f"got shape {arr.shape}"
        )
    return arr.copy()


def masses_per_particle(value: ArrayLike, n: int) -> np.ndarray:
    """Validated (n,) masses in kg from a scalar or an array: finite and > 0."""
    mass = _per_item(value, n, "mass", "particle")
    bad = np.flatnonzero(~(mass > 0) | ~np.isfinite(mass))
    if bad.size:
        raise ValueError(f"mass: must be > 0 kg and finite; particle {bad[0]} has {mass[bad[0]]}")
    return mass


def spring_coefficients(value: ArrayLike, m: int, name: str, unit: str) -> np.ndarray:
    """Validated (m,) stiffness (N/m) or damping (N*s/m): finite and >= 0."""
    coeff = _per_item(value, m, name, "spring")
    if not np.all(np.isfinite(coeff)) or np.any(coeff < 0):
        raise ValueError(f"{name}: must be >= 0 {unit} and finite (allowed: {name} >= 0)")
    return coeff


def _check_finite(arr: np.ndarray, name: str) -> None:
    if not np.all(np.isfinite(arr)):
        bad = int(np.argwhere(~np.isfinite(arr))[0][0])
        raise ValueError(f"{name}: values must be finite numbers; entry {bad} is {arr[bad]}")


def pinned_mask(pinned: ArrayLike, n: int) -> np.ndarray:
    """Turn pin indices or a boolean mask of length n into a boolean mask."""
    arr = np.asarray(pinned)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValueError(f"pinned: a boolean mask must have shape ({n},), got {arr.shape}")
        return arr.copy()
    idx = arr.astype(np.int64).ravel() if arr.size else np.zeros(0, np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"pinned: particle indices must be in 0..{n - 1}, got {idx.tolist()}")
    mask = np.zeros(n, dtype=bool)
    mask[idx] = True
    return mask


@dataclass(eq=False)
class SpringSystem:
    """Particles joined by damped Hooke springs.

    Parameters
    ----------
    positions : (n, 2) or (n, 3) array, m. Two columns make a planar system that
        stays in the z = 0 plane.
    springs : (m, 2) integer array of particle index pairs.
    rest_lengths : (m,) m, or None to use the current distances.
    mass : kg per particle, scalar or (n,).
    stiffness : N/m per spring, scalar or (m,). Ignored if ``young_modulus`` is given.
    damping : N*s/m per spring along the spring axis, scalar or (m,).
    pinned : particle indices (or an (n,) bool mask) held fixed in space.
    velocities : (n, dim) initial velocities in m/s, default zero.
    young_modulus : N, stiffness per unit strain; each spring gets k = E / L so a finer
        mesh behaves like a coarser one.
    triangles : (t, 3) particle indices of a surface to draw (cloth), optional.
    grid_shape : (rows, cols) when particles form a structured grid, optional.
    """

    positions: np.ndarray
    springs: np.ndarray
    rest_lengths: np.ndarray | None = None
    mass: ArrayLike = 1.0
    stiffness: ArrayLike = 1.0
    damping: ArrayLike = 0.0
    pinned: ArrayLike = ()
    velocities: np.ndarray | None = None
    young_modulus: float | None = None
    triangles: np.ndarray | None = None
    grid_shape: tuple[int, int] | None = None
    name: str = "system"
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        pos = np.array(self.positions, dtype=np.float64)
        if pos.ndim != 2 or pos.shape[1] not in (2, 3) or pos.shape[0] < 1:
            raise ValueError(
                f"positions: expected shape (n, 2) or (n, 3) with n >= 1, got {pos.shape}"
            )
        _check_finite(pos.ravel(), "positions")
        n, dim = pos.shape

        springs = np.asarray(self.springs)
        if springs.size == 0:
            springs = np.zeros((0, 2), dtype=np.int64)
        if springs.ndim != 2 or springs.shape[1] != 2:
            raise ValueError(f"springs: expected shape (m, 2) index pairs, got {springs.shape}")
        if not np.issubdtype(springs.dtype, np.integer):
            if not np.all(np.equal(np.mod(springs, 1), 0)):
                raise ValueError("springs: indices must be integers")
        springs = springs.astype(np.int64)
        if springs.size and (springs.min() < 0 or springs.max() >= n):
            bad = int(np.argwhere((springs < 0) | (springs >= n))[0][0])
            raise ValueError(
                f"springs: index out of range in spring {bad} {springs[bad].tolist()}; "
                f"allowed particle indices are 0..{n - 1}"
            )
        self_loops = np.flatnonzero(springs[:, 0] == springs[:, 1])
        if self_loops.size:
            s = int(self_loops[0])
            raise ValueError(
                f"springs: spring {s} joins particle {springs[s, 0]} to itself; "
                "a spring needs two different particles"
            )
        m = springs.shape[0]

        if self.rest_lengths is None:
            rest = np.linalg.norm(pos[springs[:, 0]] - pos[springs[:, 1]], axis=1)
        else:
            rest = _per_item(self.rest_lengths, m, "rest_lengths", "spring")
            _check_finite(rest, "rest_lengths")
            if np.any(rest < 0):
                raise ValueError("rest_lengths: must be >= 0 m")

        mass = masses_per_particle(self.mass, n)

        if self.young_modulus is not None:
            e_mod = float(self.young_modulus)
            if not np.isfinite(e_mod) or e_mod < 0:
                raise ValueError(f"young_modulus: must be >= 0 N, got {self.young_modulus}")
            if np.any(rest <= 0):
                raise ValueError("young_modulus: every spring needs a rest length > 0 m")
            stiffness = e_mod / rest
        else:
            stiffness = spring_coefficients(self.stiffness, m, "stiffness", "N/m")
        damping = spring_coefficients(self.damping, m, "damping", "N*s/m")

        if self.velocities is None:
            vel = np.zeros_like(pos)
        else:
            vel = np.array(self.velocities, dtype=np.float64)
            if vel.shape != pos.shape:
                raise ValueError(
                    f"velocities: expected shape {pos.shape} like positions, got {vel.shape}"
                )
            _check_finite(vel.ravel(), "velocities")

        tris = None
        if self.triangles is not None:
            tris = np.asarray(self.triangles, dtype=np.int64).reshape(-1, 3)
            if tris.size and (tris.min() < 0 or tris.max() >= n):
                raise ValueError(f"triangles: indices must be in 0..{n - 1}")

        self.positions = pos
        self.velocities = vel
        self.springs = springs
        self.rest_lengths = rest
        self.mass = mass
        self.stiffness = stiffness
        self.damping = damping
        self.pinned = pinned_mask(self.pinned, n)
        self.triangles = tris
        if self.grid_shape is not None:
            rows, cols = (int(v) for v in self.grid_shape)
            if rows * cols != n:
                raise ValueError(f"grid_shape: {rows}x{cols} does not match {n} particles")
            self.grid_shape = (rows, cols)

    # --- sizes -----------------------------------------------------------------
    @property
    def n_particles(self) -> int:
        return int(self.positions.shape[0])

    @property
    def n_springs(self) -> int:
        return int(self.springs.shape[0])

    @property
    def dim(self) -> int:
        """2 for a planar system (z stays 0), 3 otherwise."""
        return int(self.positions.shape[1])

    @property
    def planar(self) -> bool:
        return self.dim == 2

    def positions3(self) -> np.ndarray:
        """Initial positions as an (n, 3) array (z = 0 for planar systems)."""
        return _to3(self.positions)

    def velocities3(self) -> np.ndarray:
        return _to3(self.velocities)

    def stable_dt(self) -> float:
        """Largest symplectic-Euler time step (s) guaranteed stable for the springs alone.

        Gershgorin's bound on the highest angular frequency of the linearised system,
        w_max^2 <= max_i sum_(springs s at i) k_s (1/m_i + 1/sqrt(m_i m_j)), with the
        stability condition w_max dt < 2. Conservative: the true limit is often 1.5-2x
        larger. Damping and stretched-spring geometry are not counted. inf if nothing moves.
        """
        a, b = self.springs[:, 0], self.springs[:, 1]
        cross = self.stiffness / np.sqrt(self.mass[a] * self.mass[b])
        bound = np.zeros(self.n_particles)
        np.add.at(bound, a, self.stiffness / self.mass[a] + cross)
        np.add.at(bound, b, self.stiffness / self.mass[b] + cross)
        bound[self.pinned] = 0.0
        highest = float(bound.max()) if bound.size else 0.0
        return 2.0 / np.sqrt(highest) if highest > 0 else float("inf")

    def copy(self) -> "SpringSystem":
        return SpringSystem(
            self.positions.copy(), self.springs.copy(), self.rest_lengths.copy(),
            self.mass.copy(), self.stiffness.copy(), self.damping.copy(), self.pinned.copy(),
            self.velocities.copy(), None,
            None if self.triangles is None else self.triangles.copy(),
            self.grid_shape, self.name, dict(self.meta),
        )

    def __repr__(self) -> str:
        kind = "planar" if self.planar else "3-D"
        return (
            f"SpringSystem({self.name!r}: {self.n_particles} particles, {self.n_springs} springs, "
            f"{kind}, {int(self.pinned.sum())} pinned)"
        )


def _to3(arr: np.ndarray) -> np.ndarray:
    out = np.zeros((arr.shape[0], 3), dtype=np.float64)
    out[:, : arr.shape[1]] = arr
    return out


def concatenate(systems: Iterable[SpringSystem], name: str = "system") -> SpringSystem:
    """Join several systems into one (indices of later ones are offset)."""
    systems = list(systems)
    dim = max(s.dim for s in systems)
    pos, vel, springs, tris = [], [], [], []
    offset = 0
    for s in systems:
        pos.append(s.positions3()[:, :dim])
        vel.append(s.velocities3()[:, :dim])
        springs.append(s.springs + offset)
        if s.triangles is not None:
            tris.append(s.triangles + offset)
        offset += s.n_particles
    return SpringSystem(
        np.concatenate(pos), np.concatenate(springs),
        np.concatenate([s.rest_lengths for s in systems]),
        np.concatenate([s.mass for s in systems]),
        np.concatenate([s.stiffness for s in systems]),
        np.concatenate([s.damping for s in systems]),
        np.concatenate([s.pinned for s in systems]),
        np.concatenate(vel), None, np.concatenate(tris) if tris else None, None, name,
    )
