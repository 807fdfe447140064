"""Builders: ready-made mass-spring systems (rope, cloth, ring, star, triangle, network).

Every builder returns a :class:`~ropesim.engine.model.SpringSystem` and takes the same
material arguments:

- ``mass``: kg per particle,
- ``stiffness``: N/m per spring,
- ``damping``: N*s/m per spring, along the spring axis,
- ``young_modulus``: N, optional; when given every spring gets k = E / L (L its rest
  length) instead of ``stiffness``, so a finer mesh behaves like a coarser one,
- ``pins``: a pin-set name (each builder lists its own) or explicit particle indices.

Lengths are in metres. Bad arguments raise ``ValueError`` naming the argument, the
value and what is allowed: counts are integers (not bools) up to MAX_PARTICLE_COUNT
particles in all, flags are bools, numbers are finite, pins are names or integer
indices (``[0.7]`` is refused), and a system must sit close enough to 0 for float64
to keep its springs' lengths (MIN_RELATIVE_SPRING_LENGTH). :func:`planned_size`
gives the particle and spring counts of a call without building it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import numpy as np

from ropesim.engine.forces import MIN_LENGTH
from ropesim.engine.model import (
    MAX_PARTICLE_COUNT, SpringSystem, as_float_array, as_index_array, check_fits_dtype,
    check_index_range, check_number, show,
)

Pins = str | Sequence[int]
Vector = Sequence[float]

# Material defaults for the line-like builders (rope, ring, star, random_network).
DEFAULT_MASS = 0.05  # kg per particle
DEFAULT_STIFFNESS = 2000.0  # N/m
DEFAULT_DAMPING = 0.5  # N*s/m

# Cloth defaults: a light cloth of ~1.2 m x 1.2 m at the default 24 x 24 grid.
CLOTH_MASS = 0.01  # kg per particle
CLOTH_STIFFNESS = 1000.0  # N/m
CLOTH_DAMPING = 0.1  # N*s/m

CLOTH_PLANES = ("xy", "xz")


#: Smallest spring length, relative to the system's distance from 0, that builders
#: accept: float64 keeps 16 digits, so this leaves 7 for the spring itself.
MIN_RELATIVE_SPRING_LENGTH = 1e-9


# --- argument checks ------------------------------------------------------------------
def _check_count(name: str, value: int, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {show(value)}")
    if value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    if value > MAX_PARTICLE_COUNT:
        raise ValueError(f"{name}: must be <= {MAX_PARTICLE_COUNT}, got {value}")
    return int(value)


def _check_total(names: str, total: int) -> None:
    """Reject a particle count that does not fit the int32 particle indices."""
    if total > MAX_PARTICLE_COUNT:
        raise ValueError(
            f"{names}: {total} particles in all; allowed at most {MAX_PARTICLE_COUNT}"
        )


def _check_positive(name: str, value: float, unit: str) -> float:
    return check_number(value, name, unit, minimum=0.0, strict=True)


def _check_flag(name: str, value: bool) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}: expected true or false, got {show(value)}")
    return bool(value)


def _check_materials(
    mass: float, stiffness: float, damping: float, young_modulus: float | None,
    **extra_stiffness: float | None,
) -> None:
    """Scalar material arguments, each named in its own error (``bend_stiffness=-1``
    names ``bend_stiffness``); None is allowed for young_modulus and the extras."""
    check_number(mass, "mass", "kg", minimum=0.0, strict=True)
    check_number(stiffness, "stiffness", "N/m", minimum=0.0)
    check_number(damping, "damping", "N*s/m", minimum=0.0)
    if young_modulus is not None:
        check_number(young_modulus, "young_modulus", "N", minimum=0.0)
    for name, value in extra_stiffness.items():
        if value is not None:
            check_number(value, name, "N/m", minimum=0.0)


def _check_dim(dim: int) -> int:
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)) or dim not in (
        2, 3
    ):
        raise ValueError(f"dim: allowed 2 (planar) or 3, got {show(dim)}")
    return int(dim)


def _vector(name: str, value: Vector, dim: int) -> np.ndarray:
    """A 2- or 3-component vector as a length-`dim` array; planar systems need z = 0."""
    vec = as_float_array(value, name, "m").ravel()
    if vec.shape not in ((2,), (3,)):
        raise ValueError(f"{name}: expected 2 or 3 finite numbers, got {show(value)}")
    full = np.zeros(3)
    full[: vec.size] = vec
    if dim == 2 and full[2] != 0.0:
        raise ValueError(f"{name}: a planar system (dim=2) needs z = 0, got {show(value)}")
    return full[:dim]


def _unit_vector(name: str, value: Vector, dim: int) -> np.ndarray:
    """A non-zero direction scaled to length 1 (scaled by its largest component first,
    so huge and tiny components neither overflow nor vanish)."""
    vec = _vector(name, value, dim)
    largest = np.abs(vec).max()
    if largest == 0:
        raise ValueError(f"{name}: must be a non-zero vector, got {show(value)}")
    vec = vec / largest
    return vec / np.linalg.norm(vec)


def _pin_indices(pins: Pins, named: dict[str, Callable[[], list[int]]], n: int) -> list[int]:
    """Resolve a pin-set name (from `named`) or an explicit list of indices."""
    allowed = ", ".join(named) + ", or a list of indices"
    if isinstance(pins, str):
        if pins not in named:
            raise ValueError(f"pins: unknown name {pins!r}; allowed: {allowed}")
        return sorted(set(named[pins]()))
    try:
        indices = as_index_array(pins, "pins")
    except ValueError:
        raise ValueError(
            f"pins: expected a name or a list of indices ({allowed}), got {show(pins)}"
        ) from None
    if indices.ndim != 1:
        raise ValueError(f"pins: expected a flat list of indices ({allowed}), got {show(pins)}")
    check_index_range(indices, "pins", n)
    return sorted(set(indices.tolist()))


def _check_precision(
    size_name: str, shift_name: str, positions: np.ndarray, springs: np.ndarray
) -> None:
    """Reject springs shorter than forces.MIN_LENGTH (they would exert no force), and a
    system placed so far from 0 that float64 cannot tell its springs' ends apart to
    :data:`MIN_RELATIVE_SPRING_LENGTH`; first, particles too far out for float64 (named
    by the arguments that put them there)."""
    check_fits_dtype(positions, np.float64, f"{size_name}, {shift_name}", "m")
    lengths = np.linalg.norm(positions[springs[:, 0]] - positions[springs[:, 1]], axis=1)
    if not lengths.size:
        return
    distance = float(np.abs(positions).max())
    if lengths.min() < MIN_RELATIVE_SPRING_LENGTH * distance:
        raise ValueError(
            f"{shift_name}, {size_name}: springs of {lengths.min():.3g} m at {distance:.3g} m "
            f"from 0 lose their length to rounding; allowed: springs at least "
            f"{MIN_RELATIVE_SPRING_LENGTH:g} times the distance from 0 (move {shift_name} "
            "closer to 0 or make the system larger)"
        )
    if lengths.min() < MIN_LENGTH:
        raise ValueError(
            f"{size_name}: makes springs of {lengths.min():.3g} m, too short; "
            f"allowed: springs of at least {MIN_LENGTH:g} m, below which a spring has no "
            "direction and exerts no force"
        )


def _finish(
    name: str,
    positions: np.ndarray,
    springs: Sequence[np.ndarray],
    stiffness: Sequence[np.ndarray],
    *,
    mass: float,
    damping: float,
    young_modulus: float | None,
    pinned: list[int],
    meta: dict,
    rest_lengths: np.ndarray | float | None = None,
    triangles: np.ndarray | None = None,
    grid_shape: tuple[int, int] | None = None,
    placed_by: tuple[str, str] | None = None,
) -> SpringSystem:
    """Concatenate spring groups (with their per-spring stiffness) into one system;
    `placed_by` names the arguments that sized and placed it (:func:`_check_precision`)."""
    pairs = np.concatenate([np.asarray(s, dtype=np.int64).reshape(-1, 2) for s in springs])
    k = np.concatenate([np.asarray(s, dtype=np.float64) for s in stiffness])
    if placed_by is not None:
        _check_precision(*placed_by, positions, pairs)
    return SpringSystem(
        positions,
        pairs,
        rest_lengths=rest_lengths,
        mass=mass,
        stiffness=k,
        damping=damping,
        pinned=pinned,
        young_modulus=young_modulus,
        triangles=triangles,
        grid_shape=grid_shape,
        name=name,
        meta={"builder": name, **meta},
    )


def _chain(indices: np.ndarray, closed: bool = False) -> np.ndarray:
    """Spring pairs joining consecutive indices (and the last to the first if closed)."""
    nxt = np.roll(indices, -1) if closed else indices[1:]
    return np.column_stack([indices[: len(nxt)], nxt])


# --- builders -------------------------------------------------------------------------
def rope(
    n: int = 30,
    length: float = 3.0,
    dim: int = 3,
    *,
    mass: float = DEFAULT_MASS,
    stiffness: float = DEFAULT_STIFFNESS,
    damping: float = DEFAULT_DAMPING,
    bend: bool = False,
    bend_stiffness: float | None = None,
    pins: Pins = "start",
    origin: Vector = (0.0, 0.0, 0.0),
    direction: Vector = (1.0, 0.0, 0.0),
    young_modulus: float | None = None,
    tension: float = 0.0,
) -> SpringSystem:
    """A straight chain of ``n`` particles, ``length`` m long, from ``origin`` along ``direction``.

    Springs join neighbours (i, i+1); ``bend=True`` adds springs (i, i+2) with
    ``bend_stiffness`` N/m (default: ``stiffness``). ``dim=2`` makes a planar system.
    ``tension`` (N, default 0): the neighbour springs get a rest length shorter than
    the spacing a = length / (n - 1), L = a - T / k (L = a E / (E + T) with
    ``young_modulus``), so each pulls with T N at the start; pin both ends ("both")
    to hold it, a taut string. Bend springs start unstretched.
    Pins: "none", "start", "end", "both" or indices.
    """
    n = _check_count("n", n, 2)
    length = _check_positive("length", length, "m")
    dim = _check_dim(dim)
    start = _vector("origin", origin, dim)
    axis = _unit_vector("direction", direction, dim)
    bend = _check_flag("bend", bend)
    _check_materials(mass, stiffness, damping, young_modulus, bend_stiffness=bend_stiffness)
    if bend and n < 3:
        raise ValueError(f"bend: bend springs need n >= 3 particles, got n = {n}")
    positions = start + np.linspace(0.0, length, n)[:, None] * axis

    ids = np.arange(n)
    spacing = length / (n - 1)
    rest_lengths = _tensioned_rest_length(tension, spacing, stiffness, young_modulus)
    groups = [_chain(ids)]
    k = [np.full(n - 1, float(stiffness))]
    rest = [np.full(n - 1, rest_lengths)]
    if bend:
        groups.append(np.column_stack([ids[:-2], ids[2:]]))
        k.append(np.full(n - 2, float(stiffness if bend_stiffness is None else bend_stiffness)))
        rest.append(np.full(n - 2, 2.0 * spacing))
    pinned = _pin_indices(
        pins,
        {"none": lambda: [], "start": lambda: [0], "end": lambda: [n - 1],
         "both": lambda: [0, n - 1]},
        n,
    )
    return _finish(
        "rope", positions, groups, k, mass=mass, damping=damping,
        young_modulus=young_modulus, pinned=pinned, placed_by=("length, n", "origin"),
        rest_lengths=np.concatenate(rest) if tension else None,
        meta={"segment_length": spacing, "bend": bool(bend), "tension": float(tension)},
    )


def _tensioned_rest_length(tension: float, spacing: float, stiffness: float,
                           young_modulus: float | None) -> float:
    """Rest length (m) of a spring ``spacing`` m long that pulls with ``tension`` N."""
    try:
        value = float(tension)
    except (TypeError, ValueError):
        value = float("nan")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"tension: must be a finite number >= 0 N, got {tension!r}")
    if value == 0:
        return spacing
    if young_modulus is not None:
        return spacing * float(young_modulus) / (float(young_modulus) + value)
    most = float(stiffness) * spacing
    if value >= most:
        raise ValueError(
            f"tension: must be below stiffness * spacing = {most:g} N (a rest length "
            f"> 0 m), got {value:g} N"
        )
    return spacing - value / float(stiffness)


def cloth(
    nx: int = 24,
    ny: int = 24,
    spacing: float = 0.05,
    *,
    plane: str = "xy",
    pins: Pins = "top-corners",
    mass: float = CLOTH_MASS,
    stiffness: float = CLOTH_STIFFNESS,
    damping: float = CLOTH_DAMPING,
    structural: bool = True,
    shear: bool = True,
    bend: bool = True,
    young_modulus: float | None = None,
    origin: Vector | None = None,
) -> SpringSystem:
    """A rectangular grid of ``ny`` rows by ``nx`` columns, ``spacing`` m apart.

    Particle id = row * nx + col; row 0 is the "top" row. ``plane="xy"`` hangs like a
    curtain: x is centred on 0 and rows go down in -y from y = 0. ``plane="xz"`` lies
    flat (horizontal) at y = 0, centred on x = z = 0, with row 0 at the far edge (-z).
    ``origin`` (m, default 0) shifts the whole cloth.

    Spring families, each switchable and stored in this order (see
    ``meta["spring_groups"]``): structural (1,0),(0,1); shear, both diagonals; bend,
    distance-2 neighbours along rows and columns. Triangles: two per cell, wound
    counter-clockwise seen from +z (xy) or +y (xz).
    Pins: "none", "corner", "top-corners", "four-corners", "top-edge", "edges" (the
    whole border, like a drum skin) or indices.
    """
    nx = _check_count("nx", nx, 2)
    ny = _check_count("ny", ny, 2)
    _check_total("nx, ny", nx * ny)
    spacing = _check_positive("spacing", spacing, "m")
    if not isinstance(plane, str) or plane not in CLOTH_PLANES:
        raise ValueError(f"plane: allowed 'xy' or 'xz', got {show(plane)}")
    structural = _check_flag("structural", structural)
    shear = _check_flag("shear", shear)
    bend = _check_flag("bend", bend)
    _check_materials(mass, stiffness, damping, young_modulus)
    shift = _vector("origin", (0.0, 0.0, 0.0) if origin is None else origin, 3)

    rows, cols = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    x = (cols - (nx - 1) / 2) * spacing
    positions = np.zeros((ny, nx, 3))
    positions[..., 0] = x
    if plane == "xy":
        positions[..., 1] = -rows * spacing
    else:
        positions[..., 2] = (rows - (ny - 1) / 2) * spacing
    positions = positions.reshape(-1, 3) + shift

    ids = np.arange(nx * ny).reshape(ny, nx)

    def offsets(*steps: tuple[int, int]) -> np.ndarray:
        """Pairs (r, c) -> (r + dr, c + dc) for every step that stays inside the grid."""
        pairs = []
        for dr, dc in steps:
            c0, c1 = max(0, -dc), nx - max(0, dc)
            a = ids[: ny - dr, c0:c1]
            b = ids[dr:, c0 + dc : c1 + dc]
            pairs.append(np.column_stack([a.ravel(), b.ravel()]))
        return np.concatenate(pairs)

    families = {
        "structural": (structural, ((0, 1), (1, 0))),
        "shear": (shear, ((1, 1), (1, -1))),
        "bend": (bend, ((0, 2), (2, 0))),
    }
    groups, spring_groups, start = [], {}, 0
    for family, (enabled, steps) in families.items():
        if enabled:
            pairs = offsets(*steps)
            groups.append(pairs)
            spring_groups[family] = (start, start + len(pairs))
            start += len(pairs)
    if not groups:
        raise ValueError("structural, shear, bend: at least one spring family must be enabled")

    a = ids[:-1, :-1].ravel()
    b, d = a + 1, a + nx
    triangles = np.concatenate([np.column_stack([a, d, b]), np.column_stack([b, d, d + 1])])

    last = nx * ny - 1
    pinned = _pin_indices(
        pins,
        {"none": lambda: [], "corner": lambda: [0], "top-corners": lambda: [0, nx - 1],
         "four-corners": lambda: [0, nx - 1, last - nx + 1, last],
         "top-edge": lambda: list(range(nx)),
         "edges": lambda: ids[[0, -1], :].ravel().tolist() + ids[:, [0, -1]].ravel().tolist()},
        nx * ny,
    )
    return _finish(
        "cloth", positions, groups, [np.full(len(g), float(stiffness)) for g in groups],
        mass=mass, damping=damping, young_modulus=young_modulus, pinned=pinned,
        triangles=triangles, grid_shape=(ny, nx), placed_by=("spacing", "origin"),
        meta={"spacing": spacing, "plane": plane, "spring_groups": spring_groups},
    )


def ring(
    n: int = 24,
    radius: float = 1.0,
    spokes: bool = False,
    dim: int = 2,
    *,
    mass: float = DEFAULT_MASS,
    stiffness: float = DEFAULT_STIFFNESS,
    damping: float = DEFAULT_DAMPING,
    pins: Pins = "none",
    center: Vector = (0.0, 0.0, 0.0),
    young_modulus: float | None = None,
) -> SpringSystem:
    """A closed loop of ``n`` particles on a circle of ``radius`` m in the xy plane.

    Particle 0 is at the top; ``spokes=True`` adds a centre particle (the last one,
    id n) joined to every rim particle, like a wheel. Planar by default (``dim=2``);
    ``dim=3`` makes the same ring free to leave its plane.
    Pins: "none", "top", "center" (needs spokes) or indices.
    """
    n = _check_count("n", n, 3)
    radius = _check_positive("radius", radius, "m")
    spokes = _check_flag("spokes", spokes)
    _check_total("n, spokes", n + spokes)
    dim = _check_dim(dim)
    middle = _vector("center", center, dim)
    _check_materials(mass, stiffness, damping, young_modulus)
    angle = np.pi / 2 + 2 * np.pi * np.arange(n) / n
    rim = np.zeros((n, dim))
    rim[:, 0], rim[:, 1] = radius * np.cos(angle), radius * np.sin(angle)
    positions = middle + (np.vstack([rim, np.zeros((1, dim))]) if spokes else rim)

    rim_ids = np.arange(n)
    groups = [_chain(rim_ids, closed=True)]
    if spokes:
        groups.append(np.column_stack([np.full(n, n), rim_ids]))
    named = {"none": lambda: [], "top": lambda: [0]}
    if spokes:
        named["center"] = lambda: [n]
    pinned = _pin_indices(pins, named, len(positions))
    return _finish(
        "ring", positions, groups, [np.full(len(g), float(stiffness)) for g in groups],
        mass=mass, damping=damping, young_modulus=young_modulus, pinned=pinned,
        placed_by=("radius", "center"),
        meta={"radius": radius, "spokes": bool(spokes)},
    )


def star(
    arms: int = 5,
    per_arm: int = 6,
    rim: bool = False,
    dim: int = 2,
    *,
    arm_length: float = 1.0,
    mass: float = DEFAULT_MASS,
    stiffness: float = DEFAULT_STIFFNESS,
    damping: float = DEFAULT_DAMPING,
    pins: Pins = "center",
    center: Vector = (0.0, 0.0, 0.0),
    young_modulus: float | None = None,
) -> SpringSystem:
    """A centre particle (id 0) with ``arms`` radial chains of ``per_arm`` particles.

    Arms are ``arm_length`` m long, evenly spaced in the xy plane, the first pointing up
    (+y). Arm a, step j (1..per_arm) is particle 1 + a * per_arm + (j - 1).
    ``rim=True`` joins each ring of equal-radius arm particles in a closed loop (a
    spider web). Planar by default (``dim=2``).
    Pins: "none", "center", "tips" (every arm's outer end) or indices.
    """
    arms = _check_count("arms", arms, 2)
    per_arm = _check_count("per_arm", per_arm, 1)
    _check_total("arms, per_arm", 1 + arms * per_arm)
    rim = _check_flag("rim", rim)
    _check_materials(mass, stiffness, damping, young_modulus)
    if rim and arms < 3:
        raise ValueError(f"rim: joining the arms in a loop needs arms >= 3, got {arms}")
    arm_length = _check_positive("arm_length", arm_length, "m")
    dim = _check_dim(dim)
    middle = _vector("center", center, dim)

    angle = np.pi / 2 + 2 * np.pi * np.arange(arms) / arms
    radius = arm_length * np.arange(1, per_arm + 1) / per_arm
    arm_xy = np.zeros((arms, per_arm, dim))
    arm_xy[..., 0] = np.cos(angle)[:, None] * radius
    arm_xy[..., 1] = np.sin(angle)[:, None] * radius
    positions = middle + np.vstack([np.zeros((1, dim)), arm_xy.reshape(-1, dim)])

    arm_ids = 1 + np.arange(arms * per_arm).reshape(arms, per_arm)
    with_center = np.hstack([np.zeros((arms, 1), dtype=np.int64), arm_ids])
    groups = [np.concatenate([_chain(chain) for chain in with_center])]
    if rim:
        groups.append(np.concatenate([_chain(ring_ids, closed=True) for ring_ids in arm_ids.T]))
    pinned = _pin_indices(
        pins,
        {"none": lambda: [], "center": lambda: [0], "tips": lambda: arm_ids[:, -1].tolist()},
        len(positions),
    )
    return _finish(
        "star", positions, groups, [np.full(len(g), float(stiffness)) for g in groups],
        mass=mass, damping=damping, young_modulus=young_modulus, pinned=pinned,
        placed_by=("arm_length, per_arm", "center"),
        meta={"arms": arms, "per_arm": per_arm, "rim": bool(rim)},
    )


def triangle(
    *,
    mass: float = 1.0,
    stiffness: float = 2.0,
    damping: float = 0.0,
    rest_length: float = 0.5,
    pins: Pins = "none",
    young_modulus: float | None = None,
) -> SpringSystem:
    """The notebook's planar triangle: particles (0,0), (1,0), (0,-1) m, springs
    (0,1), (1,2), (2,0), every rest length ``rest_length`` m (0.5: the springs start
    stretched), k = 2 N/m. Pins: "none" or indices.
    """
    rest_length = _check_positive("rest_length", rest_length, "m")
    _check_materials(mass, stiffness, damping, young_modulus)
    positions = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, -1.0]])
    springs = np.array([[0, 1], [1, 2], [2, 0]])
    pinned = _pin_indices(pins, {"none": lambda: []}, 3)
    return _finish(
        "triangle", positions, [springs], [np.full(3, float(stiffness))], mass=mass,
        damping=damping, young_modulus=young_modulus, pinned=pinned,
        rest_lengths=rest_length, meta={},
    )


def random_network(
    n: int = 30,
    m: int = 60,
    seed: int = 0,
    dim: int = 3,
    *,
    box: float = 2.0,
    mass: float = DEFAULT_MASS,
    stiffness: float = DEFAULT_STIFFNESS,
    damping: float = DEFAULT_DAMPING,
    pins: Pins = "none",
    center: Vector = (0.0, 0.0, 0.0),
    young_modulus: float | None = None,
) -> SpringSystem:
    """``n`` particles at random in a cube (square if ``dim=2``) of side ``box`` m around
    ``center``, joined by ``m`` distinct springs that start at rest.

    Always connected: a random spanning tree (n - 1 springs) comes first, then random
    extra pairs. Reproducible for a given ``seed``. Needs n - 1 <= m <= n(n-1)/2.
    Pins: "none", "top" (the highest particle) or indices.
    """
    n = _check_count("n", n, 2)
    m = _check_count("m", m, 1)
    most = n * (n - 1) // 2
    if not n - 1 <= m <= most:
        raise ValueError(
            f"m: a connected network of n = {n} particles needs {n - 1} <= m <= {most} "
            f"springs, got m = {m}"
        )
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {show(seed)}")
    box = _check_positive("box", box, "m")
    dim = _check_dim(dim)
    middle = _vector("center", center, dim)
    _check_materials(mass, stiffness, damping, young_modulus)

    rng = np.random.default_rng(seed)
    positions = middle + rng.uniform(-box / 2, box / 2, size=(n, dim))
    order = rng.permutation(n)
    edges = {
        tuple(sorted((int(order[i]), int(order[rng.integers(i)])))) for i in range(1, n)
    }
    while len(edges) < m:
        a, b = (int(v) for v in rng.integers(n, size=2))
        if a != b:
            edges.add((min(a, b), max(a, b)))
    springs = np.array(sorted(edges), dtype=np.int64)
    pinned = _pin_indices(
        pins, {"none": lambda: [], "top": lambda: [int(np.argmax(positions[:, 1]))]}, n
    )
    return _finish(
        "random_network", positions, [springs], [np.full(m, float(stiffness))], mass=mass,
        damping=damping, young_modulus=young_modulus, pinned=pinned,
        placed_by=("box", "center"),
        meta={"seed": seed, "box": box},
    )


def explicit(
    positions: Sequence[Vector],
    springs: Sequence[Sequence[int]],
    *,
    rest_lengths: float | Sequence[float] | None = None,
    mass: float | Sequence[float] = 1.0,
    stiffness: float | Sequence[float] = 1.0,
    damping: float | Sequence[float] = 0.0,
    pinned: Sequence[int] = (),
    velocities: Sequence[Vector] | None = None,
    young_modulus: float | None = None,
) -> SpringSystem:
    """A system given particle by particle: ``positions`` ([x, y] or [x, y, z], m),
    ``springs`` (index pairs), optional per-spring or scalar rest lengths (m, default:
    the initial distances), mass (kg), stiffness (N/m), damping (N*s/m), pinned
    indices and initial velocities (m/s). Used by scene files with builder "explicit".
    """
    return SpringSystem(
        positions, springs, rest_lengths=rest_lengths, mass=mass, stiffness=stiffness,
        damping=damping, pinned=pinned, velocities=velocities, young_modulus=young_modulus,
        name="explicit", meta={"builder": "explicit"},
    )


BUILDERS: dict[str, Callable[..., SpringSystem]] = {
    "rope": rope,
    "cloth": cloth,
    "ring": ring,
    "star": star,
    "triangle": triangle,
    "random_network": random_network,
    "explicit": explicit,
}
"""Builder name -> function; scene files name their builder by these keys."""


def planned_size(builder: str, params: dict) -> tuple[int, int] | None:
    """(particles, springs) that ``BUILDERS[builder](**params)`` would make, computed
    from the parameters without building anything (so a size limit can be checked
    before a huge allocation). None when a count is not a valid integer: the builder
    itself reports that."""
    defaults = {
        name: p.default for name, p in inspect.signature(BUILDERS[builder]).parameters.items()
    }
    args = {**defaults, **params}

    def count(name: str) -> int:
        value = args[name]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise _NotACount
        return max(int(value), 0)

    def flag(name: str) -> bool:
        return args[name] is True

    try:
        if builder == "rope":
            n = count("n")
            return n, max(n - 1, 0) + (max(n - 2, 0) if flag("bend") else 0)
        if builder == "cloth":
            nx, ny = count("nx"), count("ny")
            springs = (
                flag("structural") * (ny * max(nx - 1, 0) + nx * max(ny - 1, 0))
                + flag("shear") * 2 * max(nx - 1, 0) * max(ny - 1, 0)
                + flag("bend") * (ny * max(nx - 2, 0) + nx * max(ny - 2, 0))
            )
            return nx * ny, springs
        if builder == "ring":
            n = count("n")
            return n + flag("spokes"), n * (1 + flag("spokes"))
        if builder == "star":
            arm_particles = count("arms") * count("per_arm")
            return 1 + arm_particles, arm_particles * (1 + flag("rim"))
        if builder == "random_network":
            return count("n"), count("m")
        if builder == "triangle":
            return 3, 3
        if builder == "explicit":
            return len(args["positions"]), len(args["springs"])
    except (_NotACount, TypeError, KeyError):
        return None
    return None


class _NotACount(Exception):
    pass
