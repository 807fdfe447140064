"""Rigid colliders: Box, Capsule and triangle Mesh, each with a pose that may move.

Every collider has a pose (a centre, m, and a rotation) and an optional constant motion:
``velocity`` (m/s) moves the centre and ``spin`` (deg/s, an angular-velocity vector: its
direction is the axis through the centre, its length the rate) turns it. ``pose_time``
(s) is the simulated time at which the collider stands at its given pose; at time t it
stands at ``center + velocity (t - pose_time)`` turned by ``spin (t - pose_time)``
(:func:`posed_at`). Instead of a velocity, ``keyframes`` may list keyframes [t (s), x, y, z
(m)] of the centre (a capsule's axis midpoint): the centre moves along straight lines
between them and rests at the first before it and at the last after it. Rotations are
Euler angles in degrees, applied about x, then y, then z (fixed axes): R = Rz Ry Rx.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..model import as_float_array, check_number, show

#: The margin (``margin="auto"``) chosen from the cloth's spacing, as a share of it.
#: A box edge between two particles of a cloth draped over it cuts at most half the
#: spacing deep into the straight triangles between them (a right-angle fold, the edge
#: midway); the viewer draws boxes and capsules a particle radius (0.2 x the spacing)
#: smaller, and a margin of MARGIN_SHARE x the spacing covers the rest.
MARGIN_SHARE = 0.2
AUTO_MARGIN = "auto"

#: A closed mesh's vertex is a tip (Mesh.tips) when the cone that fits in it has a half
#: angle below asin(TIP_SINE) = 30 deg: a cloth dropped on such a point lets it through
#: between its particles (a 21 deg cone did); a cube's corners (35 deg) and a cylinder's
#: rim (42 deg) stop it.
TIP_SINE = 0.5

#: Largest Coulomb friction coefficient accepted. Beyond a few the contact already
#: takes off all tangential speed for any landing steeper than atan(1 / friction);
#: real materials stay below about 2.
MAX_FRICTION = 10.0


def check_friction(friction: float, owner: str) -> float:
    """A Coulomb friction coefficient in 0 (frictionless) .. MAX_FRICTION."""
    return check_number(friction, f"{owner}.friction", "", minimum=0.0, maximum=MAX_FRICTION)


def vector3(value: Any, field_name: str, unit: str) -> tuple[float, float, float]:
    """Three finite numbers as a tuple of floats; the error names ``field_name``."""
    arr = as_float_array(value, field_name, unit)
    if arr.shape != (3,):
        raise ValueError(f"{field_name}: expected 3 finite numbers ({unit}), got {show(value)}")
    return tuple(float(v) for v in arr)


def rotation_matrix(degrees: Sequence[float]) -> np.ndarray:
    """R = Rz Ry Rx for Euler angles (deg) about the fixed x, y and z axes."""
    ax, ay, az = np.radians(np.asarray(degrees, dtype=np.float64))
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def euler_degrees(r: np.ndarray) -> tuple[float, float, float]:
    """The Euler angles (deg, about x then y then z) of a rotation matrix R = Rz Ry Rx."""
    sy = -float(np.clip(r[2, 0], -1.0, 1.0))
    ay = np.arcsin(sy)
    if abs(sy) < 1.0 - 1e-12:
        ax = np.arctan2(r[2, 1], r[2, 2])
        az = np.arctan2(r[1, 0], r[0, 0])
    else:  # gimbal lock: put the whole turn about x
        ax = np.arctan2(-r[1, 2], r[1, 1])
        az = 0.0
    return tuple(float(np.degrees(a)) for a in (ax, ay, az))


def axis_angle_matrix(spin_deg: Sequence[float], seconds: float) -> np.ndarray:
    """The rotation of an angular velocity ``spin_deg`` (deg/s vector) over ``seconds``."""
    omega = np.radians(np.asarray(spin_deg, dtype=np.float64))
    angle = float(np.linalg.norm(omega)) * seconds
    if angle == 0.0:
        return np.eye(3)
    k = omega / np.linalg.norm(omega)
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross


def check_keyframes(path: Any, field_name: str) -> tuple[tuple[float, float, float, float], ...]:
    """Keyframes [t (s), x, y, z (m)] with strictly increasing times, as a tuple."""
    if isinstance(path, (tuple, list)) and len(path) == 0:
        return ()
    arr = as_float_array(path, field_name, "s, m")
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{field_name}: expected keyframes [t, x, y, z] (s, m), got "
                         f"{show(path)}")
    if np.any(np.diff(arr[:, 0]) <= 0.0):
        raise ValueError(f"{field_name}: keyframe times must increase, got "
                         f"{arr[:, 0].tolist()} s")
    return tuple(tuple(float(v) for v in row) for row in arr)


def keyframe_centre(path: Sequence[Sequence[float]], time: float) -> np.ndarray:
    """The centre (m) keyframes [t, x, y, z] put a collider at, at ``time`` (s)."""
    keys = np.asarray(path, dtype=np.float64)
    return np.array([np.interp(time, keys[:, 0], keys[:, k]) for k in (1, 2, 3)])


@dataclass(frozen=True, kw_only=True)
class _Surface:
    """What every collider has (keyword-only): Coulomb ``friction`` (0..10), a contact
    ``margin`` (m >= 0, or "auto": MARGIN_SHARE x the simulated cloth's spacing; see
    contacts.collider_margin) that particles keep off the surface, and a motion,
    ``velocity`` (m/s) and ``spin`` (deg/s vector) from ``pose_time`` (s)."""

    friction: float = 0.5
    margin: float | str = 0.0
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    spin: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pose_time: float = 0.0
    keyframes: tuple[tuple[float, float, float, float], ...] = ()

    def _check_surface(self, owner: str) -> None:
        object.__setattr__(self, "keyframes",
                           check_keyframes(self.keyframes, f"{owner}.keyframes"))
        if self.keyframes and any(self.velocity):
            raise ValueError(f"{owner}.velocity: give a velocity or keyframes, not both; got "
                             f"velocity {show(self.velocity)} and keyframes")
        object.__setattr__(self, "velocity", vector3(self.velocity, f"{owner}.velocity", "m/s"))
        object.__setattr__(self, "spin", vector3(self.spin, f"{owner}.spin", "deg/s"))
        object.__setattr__(self, "pose_time",
                           check_number(self.pose_time, f"{owner}.pose_time", "s"))
        object.__setattr__(self, "friction", check_friction(self.friction, owner))
        if not (isinstance(self.margin, str) and self.margin == AUTO_MARGIN):
            if isinstance(self.margin, str):
                raise ValueError(f"{owner}.margin: expected a margin >= 0 m or "
                                 f"{AUTO_MARGIN!r}, got {show(self.margin)}")
            object.__setattr__(self, "margin", check_number(self.margin, f"{owner}.margin",
                                                            "m", minimum=0.0))


@dataclass(frozen=True)
class Box(_Surface):
    """A solid box: centre (m), full edge lengths ``size`` (m, each > 0), ``rotation``
    (deg about x, y, z), Coulomb ``friction`` (0..10), and an optional motion
    (``velocity`` m/s, ``spin`` deg/s vector, ``pose_time`` s; see the module docstring)."""

    center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    size: tuple[float, float, float] = (1.0, 1.0, 1.0)
    rotation: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", vector3(self.center, "box.center", "m"))
        size = vector3(self.size, "box.size", "m")
        if min(size) <= 0.0:
            raise ValueError(f"box.size: every edge length must be > 0 m, got {show(self.size)}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "rotation", vector3(self.rotation, "box.rotation", "deg"))
        self._check_surface("box")

    def matrix(self) -> np.ndarray:
        """The rotation matrix of ``rotation``."""
        return rotation_matrix(self.rotation)


@dataclass(frozen=True)
class Capsule(_Surface):
    """A capsule (a rod with round ends): the axis from ``start`` to ``end`` (m), radius
    (m, > 0), Coulomb ``friction`` (0..10) and an optional motion about the axis midpoint
    (``velocity`` m/s, ``spin`` deg/s vector, ``pose_time`` s)."""

    start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    end: tuple[float, float, float] = (1.0, 0.0, 0.0)
    radius: float = 0.1

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", vector3(self.start, "capsule.start", "m"))
        object.__setattr__(self, "end", vector3(self.end, "capsule.end", "m"))
        object.__setattr__(self, "radius", check_number(self.radius, "capsule.radius", "m",
                                                        minimum=0.0, strict=True))
        self._check_surface("capsule")

    def midpoint(self) -> np.ndarray:
        """The axis midpoint (m), the centre the capsule spins about."""
        return 0.5 * (np.asarray(self.start) + np.asarray(self.end))



def _edge_counts(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """How many triangles share each undirected edge (vertices at the same place count as
    one: STL files repeat them per triangle)."""
    _, welded = np.unique(vertices, axis=0, return_inverse=True)
    edges = np.sort(welded.ravel()[triangles][:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return counts


def _oriented_outward(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """The triangles of a closed mesh wound consistently (a flood fill over shared edges
    turns over any triangle that runs an edge the same way as its neighbour) and outward
    (positive signed volume for each connected part)."""
    _, welded = np.unique(vertices, axis=0, return_inverse=True)
    ids = welded.ravel()[triangles].tolist()
    faces_of: dict[tuple[int, int], list[int]] = {}
    for f, (a, b, c) in enumerate(ids):
        for u, w in ((a, b), (b, c), (c, a)):
            faces_of.setdefault((min(u, w), max(u, w)), []).append(f)
    flip = np.zeros(len(ids), dtype=bool)
    part = np.full(len(ids), -1, dtype=np.int64)
    parts = 0
    for seed in range(len(ids)):
        if part[seed] >= 0:
            continue
        part[seed] = parts
        queue = [seed]
        while queue:
            f = queue.pop()
            loop = ids[f][::-1] if flip[f] else ids[f]
            for k in range(3):
                a, b = loop[k], loop[(k + 1) % 3]
                for g in faces_of[(min(a, b), max(a, b))]:
                    if part[g] < 0:
                        part[g] = parts
                        # g runs a -> b as well: turn it over
                        flip[g] = any(ids[g][j] == a and ids[g][(j + 1) % 3] == b
                                      for j in range(3))
                        queue.append(g)
        parts += 1
    tris = triangles.copy()
    tris[flip] = tris[flip][:, ::-1]
    corners = vertices[tris]
    volume = np.einsum("ij,ij->i", corners[:, 0], np.cross(corners[:, 1], corners[:, 2]))
    for k in range(parts):
        if volume[part == k].sum() < 0.0:
            tris[part == k] = tris[part == k][:, ::-1]
    return tris


def _checked_geometry(vertices: Any, triangles: Any, source: str | None
                      ) -> tuple[np.ndarray, np.ndarray, bool]:
    """(vertices (v, 3) float64, triangles (t, 3) int64 without zero-area ones, closed),
    read-only; a closed mesh's triangles wound outward. Errors name the field."""
    vertices = as_float_array(vertices, "mesh.vertices", "m")
    if vertices.ndim != 2 or vertices.shape[1] != 3 or len(vertices) < 3:
        raise ValueError(f"mesh.vertices: expected a (v, 3) array with v >= 3, got shape "
                         f"{vertices.shape}")
    shown = triangles
    triangles = np.asarray(triangles)
    if triangles.size == 0:
        raise ValueError(f"mesh.triangles: the mesh has no triangles"
                         f"{f' ({source})' if source else ''}")
    if triangles.dtype.kind not in "iu" or triangles.ndim != 2 or triangles.shape[1] != 3:
        raise ValueError(f"mesh.triangles: expected a (t, 3) array of vertex indices, got "
                         f"{show(shown)}")
    if triangles.min() < 0 or triangles.max() >= len(vertices):
        raise ValueError(f"mesh.triangles: vertex indices must be in 0..{len(vertices) - 1}, "
                         f"got {int(triangles.min())}..{int(triangles.max())}")
    triangles = triangles.astype(np.int64)
    corners = vertices[triangles]
    area2 = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0],
                                    corners[:, 2] - corners[:, 0]), axis=1)
    triangles = triangles[area2 > 1e-14 * max(1.0, float(np.ptp(vertices, axis=0).max())) ** 2]
    if len(triangles) == 0:
        raise ValueError("mesh.triangles: every triangle has zero area")
    closed = bool(np.all(_edge_counts(vertices, triangles) == 2))
    if closed:
        triangles = _oriented_outward(vertices, triangles)
    vertices.setflags(write=False)
    triangles.setflags(write=False)
    return vertices, triangles, closed


@dataclass(frozen=True, eq=False)
class Mesh(_Surface):
    """A triangle mesh collider: ``vertices`` (v, 3) in m in the mesh's own frame,
    ``triangles`` (t, 3) vertex indices, placed at ``center`` (m) with ``rotation`` (deg
    about x, y, z). A closed mesh (every edge shared by two triangles) pushes particles
    out of its inside; an open one is a two-sided sheet. Particles keep ``thickness`` / 2
    (m) off the surface on either side. Coulomb ``friction`` (0..10), optional motion
    (``velocity`` m/s, ``spin`` deg/s vector about ``center``, ``pose_time`` s)."""

    vertices: Any
    triangles: Any
    thickness: float = 0.01
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    #: where the mesh was read from (Mesh.from_file), for messages and scene files
    source: str | None = None
    closed: bool = field(init=False)
    #: (vertices, triangles, closed, derived) as checked; a copy made with
    #: dataclasses.replace (a move) hands it on, so the same arrays are not checked and
    #: oriented again, nor ``derived`` (bvh, thinnest, tips) worked out again
    _checked: tuple | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        checked = self._checked
        if checked is None or checked[0] is not self.vertices or checked[1] is not self.triangles:
            # the checked arrays, and what is derived from them once (bvh, thinnest, tips)
            checked = (*_checked_geometry(self.vertices, self.triangles, self.source), {})
        object.__setattr__(self, "_checked", checked)
        object.__setattr__(self, "vertices", checked[0])
        object.__setattr__(self, "triangles", checked[1])
        object.__setattr__(self, "closed", checked[2])
        object.__setattr__(self, "thickness", check_number(self.thickness, "mesh.thickness", "m",
                                                           minimum=0.0))
        object.__setattr__(self, "center", vector3(self.center, "mesh.center", "m"))
        object.__setattr__(self, "rotation", vector3(self.rotation, "mesh.rotation", "deg"))
        self._check_surface("mesh")

    @classmethod
    def from_file(cls, path: Any, scale: float = 1.0, **kwargs: Any) -> "Mesh":
        """Read an OBJ, STL, PLY, glTF or GLB file (with trimesh; vertices times ``scale``);
        the other keywords are Mesh's (friction, thickness, center, rotation, motion)."""
        from .mesh_files import read_mesh

        scale = check_number(scale, "mesh.scale", "", minimum=0.0, strict=True)
        vertices, triangles = read_mesh(path)
        return cls(vertices * scale, triangles, source=str(path), **kwargs)

    def matrix(self) -> np.ndarray:
        """The rotation matrix of ``rotation``."""
        return rotation_matrix(self.rotation)

    @property
    def bvh(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(boxes, links, triangle rows) of the bounding-volume hierarchy over the mesh
        in its own frame (bvh.build_bvh), built once per geometry and kept across moves:
        the contact kernel, the viewer's picking, thinnest and tips share it."""
        derived = self._checked[3]
        if "bvh" not in derived:
            from .bvh import build_bvh

            derived["bvh"] = build_bvh(self.vertices, self.triangles)
        return derived["bvh"]

    @property
    def thinnest(self) -> float:
        """A closed mesh's smallest local width (m): the smallest ball diameter that
        fits inside touching a triangle at its centroid (bvh.inscribed_widths; a box's
        comes out at 2/3 of its thinnest side, since a centroid lies a third of the way
        to the corners), worked out once per geometry and kept across moves; 0 for an
        open mesh (a sheet, as wide as its thickness)."""
        if not self.closed:
            return 0.0
        derived = self._checked[3]
        if "thinnest" not in derived:
            from .bvh import inscribed_widths

            derived["thinnest"] = float(
                inscribed_widths(self.vertices, self.triangles, self.bvh).min())
        return derived["thinnest"]

    @property
    def tips(self) -> np.ndarray:
        """(k, 3) m, in the mesh's frame: the vertices of a closed mesh sharper than a cone
        of half angle asin(TIP_SINE) (bvh.tip_sines: a spike's or a needle's point, a
        blade's corner; not a cube's corners), which could poke through a cloth between
        its particles and are met by its triangles; worked out once per geometry. Empty
        for an open mesh (a sheet's edges meet a cloth's edges)."""
        if not self.closed:
            return np.zeros((0, 3))
        derived = self._checked[3]
        if "tips" not in derived:
            from .bvh import tip_sines

            points, sines = tip_sines(self.vertices, self.triangles, self.bvh)
            derived["tips"] = np.ascontiguousarray(points[sines < TIP_SINE])
        return derived["tips"]

    def __repr__(self) -> str:
        kind = "closed" if self.closed else "open"
        return (f"Mesh({len(self.vertices)} vertices, {len(self.triangles)} triangles, {kind}, "
                f"center={self.center}, rotation={self.rotation}, friction={self.friction}, "
                f"thickness={self.thickness})")


Collider = Box | Capsule | Mesh
COLLIDER_TYPES = (Box, Capsule, Mesh)


def is_moving(collider: Collider) -> bool:
    """Whether a collider has a motion (a velocity, a spin or keyframes)."""
    return any(collider.velocity) or any(collider.spin) or bool(collider.keyframes)


def offset_fields(collider: Collider, offset: Sequence[float]) -> dict[str, tuple]:
    """The pose fields that put ``collider`` ``offset`` (m) away from where it stands
    (``center``; a capsule's ``start`` and ``end``), for Simulation.move_collider."""
    if isinstance(collider, Capsule):
        return {"start": tuple(np.add(collider.start, offset)),
                "end": tuple(np.add(collider.end, offset))}
    return {"center": tuple(np.add(collider.center, offset))}


def posed_at(collider: Any, time: float) -> Any:
    """The collider as it stands at simulated time ``time`` (s): the same object when it
    does not move, else a copy with its pose advanced and ``pose_time = time``."""
    if not hasattr(collider, "spin") or not is_moving(collider) or (
            time == collider.pose_time and not collider.keyframes):
        return collider
    elapsed = time - collider.pose_time
    shift = np.asarray(collider.velocity) * elapsed
    turn = axis_angle_matrix(collider.spin, elapsed)
    own = collider.midpoint() if isinstance(collider, Capsule) else np.asarray(collider.center)
    if collider.keyframes:
        shift = keyframe_centre(collider.keyframes, time) - own
    if isinstance(collider, Capsule):
        mid = collider.midpoint()
        start = mid + shift + turn @ (np.asarray(collider.start) - mid)
        end = mid + shift + turn @ (np.asarray(collider.end) - mid)
        return dataclasses.replace(collider, start=tuple(start), end=tuple(end), pose_time=time)
    rotation = euler_degrees(turn @ collider.matrix())
    return dataclasses.replace(collider, center=tuple(np.add(collider.center, shift)),
                               rotation=rotation, pose_time=time)
