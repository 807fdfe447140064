"""The static model of a mass-spring system: particles and springs as arrays.

A :class:`SpringSystem` holds what a builder made: initial positions and
velocities, per-particle masses and pin flags, and per-spring index pairs, rest
lengths, stiffness and damping. It never changes while a simulation runs; the
:class:`~ropesim.engine.simulation.Simulation` copies what it needs into its own state.

Units: metres (m), seconds (s), kilograms (kg), stiffness in N/m, damping in N*s/m.

Validation helpers shared by the engine (each error names the field, the value and
what is allowed): :func:`as_float_array`, :func:`check_number`, :func:`as_index_array`,
:func:`check_index_range`, and :func:`check_fits_dtype` / :meth:`SpringSystem.check_fits`
for values that must fit the simulation's float32 or float64.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

ArrayLike = Any

#: Most particles a system may have: particle indices are stored as int32.
MAX_PARTICLE_COUNT = 2**31 - 1

#: How many characters of a bad value an error message shows.
SHOWN_CHARS = 60


def show(value: Any) -> str:
    """A short repr of `value` for an error message (long lists are cut)."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def dtype_limit(dtype: Any) -> float:
    """Largest magnitude a stored value may have in `dtype`: sqrt of the largest finite
    number, so that one product (stiffness x stretch, force x inverse mass) still fits."""
    return float(np.sqrt(np.finfo(dtype).max))


def check_fits_dtype(
    values: ArrayLike, dtype: Any, field: str, unit: str, *, inverse: bool = False
) -> None:
    """Raise ValueError unless every value fits `dtype` with room for one product.

    Allowed: finite values with |v| <= :func:`dtype_limit` (1.3e154 for float64, 1.8e19
    for float32); with ``inverse=True`` (masses, whose inverse the step uses) also
    |v| >= 1 / dtype_limit, so 1/v fits too. The check runs in float64, so it never
    emits numpy overflow warnings.
    """
    dtype = np.dtype(dtype)
    arr = np.asarray(values, dtype=np.float64).ravel()
    limit = dtype_limit(dtype)
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(arr)
        bad = ~np.isfinite(arr) | (magnitude > limit)
        if inverse:
            bad |= magnitude < 1.0 / limit
    if not bad.any():
        return
    entry = int(np.flatnonzero(bad)[0])
    value = float(arr[entry])
    where = f" (entry {entry})" if arr.size > 1 else ""
    in_unit = f" {unit}" if unit else ""
    if not np.isfinite(value):
        raise ValueError(
            f"{field}: must be a finite number{f' ({unit})' if unit else ''}, got {value}{where}"
        )
    allowed = f"magnitudes up to {limit:.3g}{in_unit}"
    if inverse:
        allowed += f" and at least {1.0 / limit:.3g}{in_unit}"
    raise ValueError(
        f"{field}: {value:g}{in_unit}{where} does not fit the simulation's {dtype.name}; "
        f"allowed: {allowed}"
    )


def as_float_array(value: ArrayLike, field: str, unit: str) -> np.ndarray:
    """`value` (a number or nested lists / an array of numbers) as a float64 array.

    Rejects, naming `field`: strings, None, bools, ragged lists, non-finite numbers and
    magnitudes beyond :func:`dtype_limit` of float64.
    """
    if isinstance(value, (str, bytes)):
        arr = None
    else:
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError, OverflowError):
            arr = None
    if arr is None or arr.dtype.kind not in "iuf":
        in_unit = f" ({unit})" if unit else ""
        raise ValueError(f"{field}: expected numbers{in_unit}, got {show(value)}")
    arr = arr.astype(np.float64)
    check_fits_dtype(arr, np.float64, field, unit)
    return arr


def check_number(
    value: Any, field: str, unit: str, *, minimum: float | None = None, strict: bool = False,
    maximum: float | None = None,
) -> float:
    """A single finite number (not a bool or a string) as a float, optionally bounded
    below by `minimum` (excluded when `strict`) and above by `maximum`. `unit` may be ""
    for a dimensionless value."""
    in_unit = f" {unit}" if unit else ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"{field}: expected a number{in_unit}, got {show(value)}")
    number = float(as_float_array(value, field, unit))
    low_ok = minimum is None or (number > minimum if strict else number >= minimum)
    high_ok = maximum is None or number <= maximum
    if not (low_ok and high_ok):
        parts = []
        if minimum is not None:
            parts.append(f"{'>' if strict else '>='} {minimum:g}")
        if maximum is not None:
            parts.append(f"<= {maximum:g}")
        raise ValueError(f"{field}: must be {' and '.join(parts)}{in_unit}, got {show(value)}")
    return number


def as_index_array(value: ArrayLike, field: str) -> np.ndarray:
    """Particle indices (integers, or floats with integer values) as an int64 array of
    any shape. Rejects bools, fractions (``0.7``), strings and None, naming `field`; the
    caller checks the range with :func:`check_index_range`."""
    allowed = "integer particle indices"
    items = value if isinstance(value, (list, tuple)) else ()
    if isinstance(value, (str, bytes, bool, np.bool_)) or any(
        isinstance(item, (bool, np.bool_)) for item in items
    ):
        raise ValueError(f"{field}: expected {allowed}, got {show(value)}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        arr = None
    if arr is None or arr.dtype.kind not in "iuf":
        raise ValueError(f"{field}: expected {allowed}, got {show(value)}")
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            fractional = ~np.isfinite(arr) | (arr != np.floor(arr)) | (np.abs(arr) > 2.0**62)
        if fractional.any():
            bad = float(arr.ravel()[int(np.flatnonzero(fractional.ravel())[0])])
            raise ValueError(f"{field}: {bad} is not an integer index; allowed: {allowed}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{field}: index {arr.max()} is too large; allowed: {allowed}")
    return arr.astype(np.int64)


def check_index_range(indices: np.ndarray, field: str, n: int) -> None:
    """Raise ValueError naming `field` unless every index is in 0..n-1."""
    outside = (indices < 0) | (indices >= n)
    if outside.any():
        raise ValueError(
            f"{field}: particle indices must be in 0..{n - 1}, got {show(indices.tolist())}"
        )


def _per_item(value: ArrayLike, count: int, name: str, owner: str, unit: str) -> np.ndarray:
    """Broadcast a scalar or check a length-`count` array of finite numbers; float64."""
    arr = as_float_array(value, name, unit)
    if arr.ndim == 0:
        return np.full(count, float(arr))
    if arr.shape != (count,):
        raise ValueError(
            f"{name}: expected a scalar or an array of shape ({count},) (one per {owner}), "
            f"got shape {arr.shape}"
        )
    return arr.copy()


def masses_per_particle(value: ArrayLike, n: int) -> np.ndarray:
    """Validated (n,) masses in kg from a scalar or an array: finite and > 0, with an
    inverse that fits float64 (see :func:`check_fits_dtype`)."""
    mass = _per_item(value, n, "mass", "particle", "kg")
    bad = np.flatnonzero(~(mass > 0))
    if bad.size:
        raise ValueError(
            f"mass: must be > 0 kg and finite; particle {bad[0]} has {mass[bad[0]]}"
        )
    check_fits_dtype(mass, np.float64, "mass", "kg", inverse=True)
    return mass


def spring_coefficients(value: ArrayLike, m: int, name: str, unit: str) -> np.ndarray:
    """Validated (m,) stiffness (N/m) or damping (N*s/m): finite and >= 0."""
    coeff = _per_item(value, m, name, "spring", unit)
    if np.any(coeff < 0):
        bad = int(np.flatnonzero(coeff < 0)[0])
        raise ValueError(
            f"{name}: must be >= 0 {unit} and finite (allowed: {name} >= 0); "
            f"spring {bad} has {coeff[bad]}"
        )
    return coeff


def pinned_mask(pinned: ArrayLike, n: int) -> np.ndarray:
    """Turn pin indices or a boolean mask of length n into a boolean mask."""
    if isinstance(pinned, np.ndarray) and pinned.dtype == bool or (
        isinstance(pinned, (list, tuple)) and len(pinned) == n and n > 0
        and all(isinstance(p, (bool, np.bool_)) for p in pinned)
    ):
        arr = np.asarray(pinned)
        if arr.shape != (n,):
            raise ValueError(f"pinned: a boolean mask must have shape ({n},), got {arr.shape}")
        return arr.copy()
    idx = as_index_array(pinned, "pinned")
    if idx.ndim != 1:
        raise ValueError(
            f"pinned: expected a list of particle indices in 0..{n - 1} or a boolean mask of "
            f"shape ({n},), got {show(pinned)}"
        )
    check_index_range(idx, "pinned", n)
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
        pos = as_float_array(self.positions, "positions", "m")
        if pos.ndim != 2 or pos.shape[1] not in (2, 3) or pos.shape[0] < 1:
            raise ValueError(
                f"positions: expected shape (n, 2) or (n, 3) with n >= 1, got {pos.shape}"
            )
        n, dim = pos.shape
        if n > MAX_PARTICLE_COUNT:
            raise ValueError(
                f"positions: {n} particles; allowed at most {MAX_PARTICLE_COUNT} "
                "(particle indices are stored as int32)"
            )
        self.positions = pos

        springs = as_index_array(self.springs, "springs")
        if springs.size == 0:
            springs = springs.reshape(0, 2)
        if springs.ndim != 2 or springs.shape[1] != 2:
            raise ValueError(f"springs: expected shape (m, 2) index pairs, got {springs.shape}")
        if springs.size and (springs.min() < 0 or springs.max() >= n):
            bad = int(np.argwhere((springs < 0) | (springs >= n))[0][0])
            raise ValueError(
                f"springs: index out of range in spring {bad} {springs[bad].tolist()}; "
                f"allowed particle indices are 0..{n - 1} (positions has {n} particles)"
            )
        self_loops = np.flatnonzero(springs[:, 0] == springs[:, 1])
        if self_loops.size:
            s = int(self_loops[0])
            raise ValueError(
                f"springs: spring {s} joins particle {springs[s, 0]} to itself; "
                "a spring needs two different particles"
            )
        self.springs = springs
        m = springs.shape[0]

        if self.rest_lengths is None:
            rest = np.linalg.norm(pos[springs[:, 0]] - pos[springs[:, 1]], axis=1)
        else:
            rest = _per_item(self.rest_lengths, m, "rest_lengths", "spring", "m")
            if np.any(rest < 0):
                bad = int(np.flatnonzero(rest < 0)[0])
                raise ValueError(
                    f"rest_lengths: must be >= 0 m; spring {bad} has {rest[bad]}"
                )
        self.rest_lengths = rest
        self.mass = masses_per_particle(self.mass, n)

        if self.young_modulus is not None:
            e_mod = check_number(self.young_modulus, "young_modulus", "N", minimum=0.0)
            if np.any(rest <= 0):
                raise ValueError("young_modulus: every spring needs a rest length > 0 m")
            self.stiffness = e_mod / rest
            check_fits_dtype(self.stiffness, np.float64, "young_modulus / rest length", "N/m")
        else:
            self.stiffness = spring_coefficients(self.stiffness, m, "stiffness", "N/m")
        self.damping = spring_coefficients(self.damping, m, "damping", "N*s/m")

        if self.velocities is None:
            self.velocities = np.zeros_like(pos)
        else:
            vel = as_float_array(self.velocities, "velocities", "m/s")
            if vel.shape != pos.shape:
                raise ValueError(
                    f"velocities: expected shape {pos.shape} like positions, got {vel.shape}"
                )
            self.velocities = vel

        if self.triangles is not None:
            tris = as_index_array(self.triangles, "triangles")
            check_index_range(tris, "triangles", n)
            if tris.size % 3:
                raise ValueError(
                    f"triangles: expected (t, 3) particle indices, got shape {tris.shape}"
                )
            self.triangles = tris.reshape(-1, 3)

        if self.grid_shape is not None:
            shape = self.grid_shape
            if (
                not isinstance(shape, (tuple, list)) or len(shape) != 2
                or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in shape)
            ):
                raise ValueError(f"grid_shape: expected (rows, cols) integers, got {show(shape)}")
            rows, cols = (int(v) for v in shape)
            if rows < 1 or cols < 1 or rows * cols != n:
                raise ValueError(f"grid_shape: {rows}x{cols} does not match {n} particles")
            self.grid_shape = (rows, cols)
        if not isinstance(self.name, str):
            raise ValueError(f"name: expected a string, got {show(self.name)}")
        if not isinstance(self.meta, dict):
            raise ValueError(f"meta: expected a dict, got {show(self.meta)}")
        self.pinned = pinned_mask(self.pinned, n)
        self.check_fits(np.float64)

    def check_fits(self, dtype: Any) -> None:
        """Raise ValueError naming the field unless every array fits `dtype`.

        Each of positions, velocities, rest lengths, masses (and their inverses),
        stiffness and damping must pass :func:`check_fits_dtype`; and no spring may
        collapse to zero length when positions are rounded to `dtype` (a small system
        placed far from 0 in float32 would). The Simulation calls this with its dtype.
        """
        check_fits_dtype(self.positions, dtype, "positions", "m")
        check_fits_dtype(self.velocities, dtype, "velocities", "m/s")
        check_fits_dtype(self.rest_lengths, dtype, "rest_lengths", "m")
        check_fits_dtype(self.mass, dtype, "mass", "kg", inverse=True)
        check_fits_dtype(self.stiffness, dtype, "stiffness", "N/m")
        check_fits_dtype(self.damping, dtype, "damping", "N*s/m")
        rounded = self.positions.astype(dtype)
        a, b = self.springs[:, 0], self.springs[:, 1]
        apart = np.any(self.positions[a] != self.positions[b], axis=1)
        collapsed = np.flatnonzero(apart & np.all(rounded[a] == rounded[b], axis=1))
        if collapsed.size:
            s = int(collapsed[0])
            raise ValueError(
                f"positions: spring {s} ({self.rest_lengths[s]:.3g} m long, at "
                f"{np.abs(self.positions[a[s]]).max():.3g} m from 0) has both ends at the same "
                f"{np.dtype(dtype).name} position; allowed: a system whose springs are long "
                "enough for its distance from the origin (move it closer to 0)"
            )

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
