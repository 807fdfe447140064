"""Obstacles: a ground plane, spheres, boxes, capsules and triangle meshes, enforced
after each step by one numba call (colliders/kernel.py).

A particle found inside an obstacle is projected back onto its surface, the inward
part of its velocity (relative to the surface) is removed, and Coulomb friction takes up
to ``friction`` times that removed normal speed off its tangential speed (so a cloth
resting on a ball sticks, and a flung rope slides to a stop on the floor). The ground is
horizontal (y up). Spheres, boxes, capsules and meshes (colliders/shapes.py) are swept: a
particle that crosses one during a step is stopped on the side it came from. Colliders may
move, with a motion of their own or by a move from Python between steps, which counts as
motion over the next step(s). A rope's segments are capsules against every collider.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .colliders.bvh import STACK_SIZE, TRIANGLE_COLUMNS, distance_grid
from .colliders.kernel import (
    BOX, CAPSULE, CENTER, CLOSED, COLUMNS, FRICTION, JUMP_COLUMNS, JUMP_END, JUMP_PENDING,
    JUMP_SHIFT, JUMP_TIME, JUMP_TURN, KIND, MESH, MESH_INDEX, P0, POSE_TIME, ROTATION, SKIN,
    SPIN, VELOCITY, jump_shares, project_contacts, threaded_segments,
)
from .colliders.shapes import (
    AUTO_MARGIN, COLLIDER_TYPES, MARGIN_SHARE, MAX_FRICTION, Box, Capsule, Collider, Mesh,
    axis_angle_matrix, check_friction, keyframe_centre, posed_at,
)
from .collisions.primitives import build_primitives
from .collisions.self_contact import median_triangle_edge
from .model import SpringSystem, as_float_array, check_number, show

@dataclass(frozen=True)
class Ground:
    """Horizontal floor at y = height (m) with Coulomb friction coefficient (0..10)."""

    height: float = 0.0
    friction: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "height", check_number(self.height, "ground.height", "m"))
        object.__setattr__(self, "friction", check_friction(self.friction, "ground"))


@dataclass(frozen=True)
class Sphere:
    """Static ball obstacle: centre (m, 2 or 3 numbers; z = 0 if 2), radius (m, > 0),
    Coulomb friction coefficient (0..10)."""

    center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    radius: float = 0.5
    friction: float = 0.3

    def __post_init__(self) -> None:
        center = as_float_array(self.center, "sphere.center", "m").ravel()
        if center.shape not in ((2,), (3,)):
            raise ValueError(
                f"sphere.center: expected 2 or 3 finite numbers, got {show(self.center)}"
            )
        center3 = tuple(float(v) for v in np.pad(center, (0, 3 - center.size)))
        radius = check_number(self.radius, "sphere.radius", "m", minimum=0.0, strict=True)
        object.__setattr__(self, "center", center3)
        object.__setattr__(self, "radius", radius)
        object.__setattr__(self, "friction", check_friction(self.friction, "sphere"))


Contact = Ground | Sphere | Box | Capsule | Mesh
CONTACT_TYPES = (Ground, Sphere, *COLLIDER_TYPES)


def collider_frame(collider: Collider) -> tuple[np.ndarray, np.ndarray, float]:
    """(centre m, rotation matrix, capsule half length m or 0) of a collider at its pose:
    a capsule's frame takes x to its axis, about its midpoint."""
    if not isinstance(collider, Capsule):
        return np.asarray(collider.center, dtype=np.float64), collider.matrix(), 0.0
    return _capsule_frame(collider)


def _capsule_frame(capsule: Capsule) -> tuple[np.ndarray, np.ndarray, float]:
    """(midpoint, rotation taking x to the axis, half length) of a capsule."""
    start, end = np.asarray(capsule.start), np.asarray(capsule.end)
    axis = end - start
    half = 0.5 * float(np.linalg.norm(axis))
    if half == 0.0:
        return 0.5 * (start + end), np.eye(3), 0.0
    ux = axis / (2.0 * half)
    helper = np.array([0.0, 1.0, 0.0]) if abs(ux[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
    uz = np.cross(ux, helper)
    uz /= np.linalg.norm(uz)
    uy = np.cross(uz, ux)
    return 0.5 * (start + end), np.column_stack([ux, uy, uz]), half


def collider_margin(collider: Collider, system: SpringSystem | None) -> float:
    """A collider's contact margin (m): its ``margin``, or for "auto" MARGIN_SHARE x the
    spacing of ``system`` (the median edge of its triangles in the rest shape; 0 for a
    system without triangles, such as a rope, whose segments meet colliders themselves)."""
    if collider.margin != AUTO_MARGIN:
        return float(collider.margin)
    return 0.0 if system is None else MARGIN_SHARE * median_triangle_edge(system)


def collider_row(collider: Collider, mesh_index: int = 0, margin: float = 0.0) -> np.ndarray:
    """The kernel's table row (COLUMNS float64) of a Box, Capsule or Mesh whose surface is
    grown by ``margin`` (m; collider_margin)."""
    row = np.zeros(COLUMNS)
    row[FRICTION] = collider.friction
    if isinstance(collider, Box):
        row[KIND] = BOX
        row[P0:P0 + 3] = 0.5 * np.asarray(collider.size) + SKIN + margin
        centre, rotation = np.asarray(collider.center), collider.matrix()
    elif isinstance(collider, Capsule):
        row[KIND] = CAPSULE
        centre, rotation, row[P0] = _capsule_frame(collider)
        row[P0 + 1] = collider.radius + SKIN + margin
    else:
        row[KIND] = MESH
        row[P0] = max(0.5 * collider.thickness, SKIN) + margin
        row[MESH_INDEX] = mesh_index
        row[CLOSED] = float(collider.closed)
        centre, rotation = np.asarray(collider.center), collider.matrix()
    row[CENTER:CENTER + 3] = centre
    row[ROTATION:ROTATION + 9] = rotation.ravel()
    row[VELOCITY:VELOCITY + 3] = collider.velocity
    row[SPIN:SPIN + 3] = np.radians(collider.spin)
    row[POSE_TIME] = collider.pose_time
    return row


def keyframe_row(collider: Collider, mesh_index: int, time: float, dt: float,
                 margin: float = 0.0) -> np.ndarray:
    """The table row of a collider with keyframes for the step from ``time`` (s) of
    ``dt`` (s): its pose at ``time`` and the velocity (m/s) that reaches the keyframes'
    centre at ``time + dt`` (``margin``: m, collider_row)."""
    now = posed_at(collider, time)
    row = collider_row(now, mesh_index, margin)
    row[VELOCITY:VELOCITY + 3] = (keyframe_centre(collider.keyframes, time + dt)
                                  - row[CENTER:CENTER + 3]) / dt
    return row


def _reach(collider: Collider, margin: float) -> float:
    """The largest |coordinate| (m) a collider's surface, grown by ``margin`` (m),
    reaches at its pose."""
    if isinstance(collider, Box):
        return float(np.abs(collider.center).max() + np.linalg.norm(collider.size) + margin)
    if isinstance(collider, Capsule):
        return float(max(np.abs(collider.start).max(), np.abs(collider.end).max())
                     + collider.radius + margin)
    return float(np.abs(collider.center).max() + np.abs(collider.vertices).max() * 1.8
                 + collider.thickness + margin)


class ContactSet:
    """The obstacles of a Simulation packed for the kernel: grounds (k, 2) [height,
    friction], spheres (k, 5) [centre, radius, friction], the collider table and the
    meshes' BVHs (built once here), the rope segments of ``system`` (tested against the
    colliders) and its cloth edges (tested against the thin ones: sheet_segments, from
    ``positions`` at ``time``) and triangles (against the tips of closed meshes: tips),
    the jumps of moves made between steps, with the scratch the kernel writes."""

    def __init__(self, contacts: Sequence[Contact], n_particles: int, dtype: Any,
                 system: SpringSystem | None = None, positions: np.ndarray | None = None,
                 time: float = 0.0):
        grounds, spheres, rows = [], [], []
        mesh_rows, boxes, links, triangles, grids, distances = [], [], [], [], [], []
        nodes = tris = cells = 0
        # per table row: the collider's margin (m), resolved once (collider_margin)
        self._margins = [collider_margin(c, system) for c in contacts
                         if isinstance(c, COLLIDER_TYPES)]
        for contact in contacts:
            if isinstance(contact, Ground):
                grounds.append((contact.height, contact.friction))
            elif isinstance(contact, Sphere):
                spheres.append((*contact.center, contact.radius, contact.friction))
            elif isinstance(contact, Mesh):
                b, l, t = contact.bvh
                info, dist = distance_grid(b, l, t, contact.closed,
                                           pad=2.0 * max(0.5 * contact.thickness, SKIN))
                mesh_rows.append((nodes, len(b), tris, len(t), cells))
                grids.append(info)
                distances.append(dist)
                cells += len(dist)
                boxes.append(b)
                links.append(l)
                triangles.append(t)
                nodes += len(b)
                tris += len(t)
                rows.append(collider_row(contact, len(mesh_rows) - 1,
                                         self._margins[len(rows)]))
            elif isinstance(contact, COLLIDER_TYPES):
                rows.append(collider_row(contact, 0, self._margins[len(rows)]))
            else:
                raise ValueError(
                    f"contacts: expected Ground or Sphere obstacles or Box, Capsule or Mesh "
                    f"colliders, got {type(contact).__name__}"
                )
        self.grounds = np.array(grounds, dtype=np.float64).reshape(-1, 2)
        self.spheres = np.array(spheres, dtype=np.float64).reshape(-1, 5)
        self.colliders = np.array(rows, dtype=np.float64).reshape(-1, COLUMNS)
        self.meshes = np.array(mesh_rows, dtype=np.int64).reshape(-1, 5)
        self.grids = np.array(grids, dtype=np.float64).reshape(-1, 8)
        self.distances = np.concatenate(distances) if distances else np.zeros(0)
        self.boxes = np.concatenate(boxes) if boxes else np.zeros((0, 6))
        self.links = np.concatenate(links) if links else np.zeros((0, 3), dtype=np.int64)
        self.triangles = (np.concatenate(triangles) if triangles
                          else np.zeros((0, TRIANGLE_COLUMNS)))
        self.reach = [_reach(c, m) for c, m in zip(
            (c for c in contacts if isinstance(c, COLLIDER_TYPES)), self._margins)]
        self.swept = len(rows) + len(spheres) > 0
        self.segments = (rope_segments(system) if rows and system is not None
                         else np.zeros((0, 2), dtype=np.int64))
        self.segment_ranges = np.zeros((len(rows), 2), dtype=np.int64)
        self.segment_ranges[:, 1] = len(self.segments)  # a rope's meet every collider
        # (table row, collider) of those with keyframes: their rows follow them per step
        self._paths = [(k, c) for k, c in enumerate(c for c in contacts
                                                     if isinstance(c, COLLIDER_TYPES)) if c.keyframes]
        self.x_prev = np.zeros((n_particles if self.swept else 0, 3), dtype=dtype)
        self._poses = np.zeros((len(rows), 2, 12))
        self._motion = np.zeros((len(rows), 6))
        # per table row: the move made between steps that the next step carries out
        self.jumps = np.zeros((len(rows), JUMP_COLUMNS))
        self._driven = False  # moved from Python at least once
        self._scratch = np.zeros(24)
        self._segment_scratch = np.zeros(15)
        self._bounds = np.zeros((len(rows), 13))  # the broad phase's collider boxes
        self._near = np.zeros(len(rows), dtype=np.bool_)
        self._stack = np.zeros(STACK_SIZE, dtype=np.int64)
        self.sheet_segments, self.sheet_ranges = self._sheet_segments(
            [c for c in contacts if isinstance(c, COLLIDER_TYPES)], system, positions, time)
        self.tips, self.tip_ranges, self.sheet_triangles = self._tips(
            [c for c in contacts if isinstance(c, COLLIDER_TYPES)], system)
        #: whether the kernel skips colliders far from a block of particles or a rope
        #: segment (off: every one is tested, with the same results, slower)
        self.broad_phase = True
        # table row of each contact index (-1: a ground or a sphere)
        self._row_of = []
        row = 0
        for contact in contacts:
            self._row_of.append(row if isinstance(contact, COLLIDER_TYPES) else -1)
            row += isinstance(contact, COLLIDER_TYPES)

    def _sheet_segments(self, colliders: Sequence[Collider], system: SpringSystem | None,
                        positions: np.ndarray | None, time: float
                        ) -> tuple[np.ndarray, np.ndarray]:
        """(segments (s, 2) int64, ranges (k, 2) int64): for each collider (table row)
        that fits between a cloth's particles (fits_between), the cloth's edges it meets,
        as the rows ranges[c, 0] .. ranges[c, 1] - 1 of segments: all of them but those
        it already passes through at ``positions`` (m; default the system's) and ``time``
        (s), when the collider is added (threaded_segments: a cloth threaded onto a rod or
        a blade, as in the windmill scene, hangs from it instead of being torn off)."""
        ranges = np.zeros((len(colliders), 2), dtype=np.int64)
        spacing = 0.0 if system is None else median_triangle_edge(system)
        thin = [fits_between(c, m, spacing) for c, m in zip(colliders, self._margins)]
        if not any(thin):
            return np.zeros((0, 2), dtype=np.int64), ranges
        x = np.ascontiguousarray(system.positions3() if positions is None else positions,
                                 dtype=np.float64)
        edges = sheet_edges(system)
        parts, count = [], 0
        for c, is_thin in enumerate(thin):
            if not is_thin:
                continue
            row = self.colliders[c]
            n0, nn, t0, tn = self.meshes[int(row[MESH_INDEX])][:4] if isinstance(
                colliders[c], Mesh) else (0, 0, 0, 0)
            part = edges[~threaded_segments(
                x, edges, row, time, np.zeros(12), self.boxes[n0:n0 + nn],
                self.links[n0:n0 + nn], self.triangles[t0:t0 + tn], self._stack)]
            parts.append(part)
            ranges[c] = count, count + len(part)
            count += len(part)
        return np.ascontiguousarray(np.concatenate(parts)), ranges

    @staticmethod
    def _tips(colliders: Sequence[Collider], system: SpringSystem | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tips (q, 3) m, ranges (k, 2) int64, triangles (t, 3) int64): the tips of the
        closed meshes (Mesh.tips, in their frames; collider c's the rows ranges[c, 0] ..
        ranges[c, 1] - 1) and the cloth's triangles they meet; none without triangles or
        tips."""
        ranges = np.zeros((len(colliders), 2), dtype=np.int64)
        none = np.zeros((0, 3)), ranges, np.zeros((0, 3), dtype=np.int64)
        if system is None or system.triangles is None or not len(system.triangles):
            return none
        parts, count = [], 0
        for c, collider in enumerate(colliders):
            if isinstance(collider, Mesh) and len(collider.tips):
                parts.append(collider.tips)
                ranges[c] = count, count + len(collider.tips)
                count += len(collider.tips)
        if not parts:
            return none
        return (np.ascontiguousarray(np.concatenate(parts)), ranges,
                np.ascontiguousarray(np.asarray(system.triangles, dtype=np.int64).reshape(-1, 3)))

    @property
    def moving(self) -> bool:
        """Whether contacts may do work: a collider has a velocity, a spin or keyframes,
        or was moved from Python, or rope segments, a cloth's edges or its triangles meet
        colliders (keeping a sparse rope's straight segments off a thin rod lifts the
        particles between which it passes)."""
        return (self._driven or bool(self._paths) or len(self.segments) > 0
                or len(self.sheet_segments) > 0 or len(self.tips) > 0
                or bool(np.any(self.colliders[:, VELOCITY:SPIN + 3] != 0.0)))

    def remember(self, x: np.ndarray) -> None:
        """Keep the positions before a step (the start of the swept segments)."""
        if self.swept:
            np.copyto(self.x_prev, x)

    def project(self, x: np.ndarray, v: np.ndarray, inv_mass: np.ndarray, fixed: np.ndarray,
                time: float, dt: float, planar: bool) -> int:
        """The contact pass after a step from ``time`` (s) of ``dt`` (s): one kernel call
        (``inv_mass`` 1/kg per particle shares a rope segment's push)."""
        for row, collider in self._paths:  # this step's piece of the keyframes, at its speed
            self.colliders[row] = keyframe_row(collider, int(self.colliders[row, MESH_INDEX]),
                                               time, dt, self._margins[row])
        return project_contacts(x, self.x_prev if self.swept else x, v, inv_mass, fixed,
                                self.grounds, self.spheres, self.colliders, self.meshes,
                                self.boxes, self.links, self.triangles, self.grids,
                                self.distances, self.segments, self.segment_ranges,
                                self.sheet_segments, self.sheet_ranges,
                                self.sheet_triangles, self.tips, self.tip_ranges, self.jumps,
                                self._poses, self._motion, self._scratch,
                                self._segment_scratch, self._bounds, self._near,
                                self._stack, time, dt, planar, self.broad_phase)

    def repose(self, index: int, old: Collider, collider: Collider, time: float,
               over: float = 0.0) -> None:
        """Write the pose and motion of contact ``index`` (a Box, Capsule or Mesh whose
        shape is unchanged), moved at ``time`` (s) from ``old``, into the table, keeping
        its mesh. The pose change counts as motion: its jump (shift and turn from where
        the collider stands now: ``old`` less the share of an earlier jump still to go,
        so several moves before one step add up) is carried out over the next step
        (``over`` = 0) or at a constant rate over the steps of the next ``over`` s, and
        the surface velocity and swept test of each step see its share."""
        row = self._row_of[index]
        jump = self.jumps[row]
        centre, rotation, _ = collider_frame(posed_at(old, time))
        to_go, _ = jump_shares(jump, time, 0.0)
        if to_go > 0.0:  # where an earlier move under way has brought it so far
            centre = centre - to_go * jump[JUMP_SHIFT:JUMP_SHIFT + 3]
            rotation = axis_angle_matrix(np.degrees(-to_go * jump[JUMP_TURN:JUMP_TURN + 3]),
                                         1.0) @ rotation
        jump[JUMP_PENDING], jump[JUMP_TIME], jump[JUMP_END] = 1.0, time, time + over
        jump[JUMP_SHIFT:JUMP_SHIFT + 3], jump[JUMP_TURN:JUMP_TURN + 3] = frame_jump(
            centre, rotation, *collider_frame(posed_at(collider, time))[:2],
            isinstance(collider, Capsule))
        self._driven = True
        self.colliders[row] = collider_row(collider, int(self.colliders[row, MESH_INDEX]),
                                           self._margins[row])
        self._paths = [(k, c) for k, c in self._paths if k != row]
        if collider.keyframes:
            self._paths.append((row, collider))


def rope_segments(system: SpringSystem) -> np.ndarray:
    """(s, 2) int64: the particle pairs of a system's rope segments, the springs that
    self-collision treats as capsules (collisions/primitives.py); none for a cloth."""
    prims = build_primitives(system).prims
    capsules = prims[(prims[:, 0] != prims[:, 1]) & (prims[:, 1] == prims[:, 2])]
    return np.ascontiguousarray(capsules[:, :2], dtype=np.int64)


#: full width (margin included), in spacings of a cloth, below which a box or a capsule
#: can pass between two rows of its particles (one spacing apart at rest; the factor
#: covers a cloth stretched by a quarter), so the cloth's edges are tested against it as
#: segments (fits_between): a rod or a blade, not the table scene's top or legs (1.4
#: and 1.5 spacings wide, margin included)
THIN_WIDTH = 1.25


def fits_between(collider: Collider, margin: float, spacing: float) -> bool:
    """Whether a Box's thinnest side, a Capsule's diameter, an open Mesh's thickness (a
    two-sided sheet) or a closed Mesh's thinnest local width (Mesh.thinnest: a blade, a
    ridge, a limb), each grown by ``margin`` (m) on both sides, is narrower than
    THIN_WIDTH x ``spacing`` (m; a cloth's median edge, 0 for a system without
    triangles): a rod, a plank or a fin that a cloth's particles alone would let
    through."""
    if spacing <= 0.0:
        return False
    if isinstance(collider, Capsule):
        width = 2.0 * (collider.radius + margin)
    elif isinstance(collider, Box):
        width = min(collider.size) + 2.0 * margin
    elif not collider.closed:
        width = collider.thickness + 2.0 * margin
    else:
        width = collider.thinnest + 2.0 * margin
    return width < THIN_WIDTH * spacing


def sheet_edges(system: SpringSystem) -> np.ndarray:
    """(s, 2) int64: the distinct edges of a system's triangles (a cloth's structural
    and diagonal springs), lower index first."""
    tri = np.asarray(system.triangles, dtype=np.int64).reshape(-1, 3)
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    return np.ascontiguousarray(np.unique(np.sort(edges, axis=1), axis=0))


def rotation_vector(r: np.ndarray) -> np.ndarray:
    """The rotation vector (rad; axis times angle, the angle in 0..pi) of a rotation
    matrix."""
    angle = float(np.arccos(np.clip(0.5 * (np.trace(r) - 1.0), -1.0, 1.0)))
    skew = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    if angle < 1e-12:
        return np.zeros(3)
    if np.sin(angle) > 1e-6:
        return skew * (angle / (2.0 * np.sin(angle)))
    half = 0.5 * (r + np.eye(3))  # a half turn: the axis is a column of (R + I) / 2
    k = int(np.argmax(np.diag(half)))
    return half[:, k] / np.sqrt(half[k, k]) * angle


def frame_jump(c_old: np.ndarray, r_old: np.ndarray, c_new: np.ndarray, r_new: np.ndarray,
               capsule: bool) -> tuple[np.ndarray, np.ndarray]:
    """(shift m, rotation vector rad) from the frame (centre m, rotation) ``c_old, r_old``
    to ``c_new, r_new``. A capsule's turn is the smallest one between the two axes (the
    frames' x; a turn about its own axis, or end for end, leaves its surface where it
    was)."""
    if not capsule:
        return c_new - c_old, rotation_vector(r_new @ r_old.T)
    u_old, u_new = r_old[:, 0], r_new[:, 0]
    if u_old @ u_new < 0.0:
        u_old = -u_old
    axis = np.cross(u_old, u_new)
    sine = float(np.linalg.norm(axis))
    if sine < 1e-15:
        return c_new - c_old, np.zeros(3)
    return c_new - c_old, axis / sine * float(np.arctan2(sine, u_old @ u_new))


def moved(collider: Contact, time: float, changes: dict[str, Any]) -> Contact:
    """A collider moved at simulated time ``time`` (s): its current pose (with its motion
    so far) with ``changes`` (any of its fields: center, rotation, start, end, velocity,
    spin, friction, ...) applied, standing there from ``time`` on."""
    if not isinstance(collider, COLLIDER_TYPES):
        raise TypeError(f"move_collider: contact is a {type(collider).__name__}; only Box, "
                        f"Capsule and Mesh colliders move")
    names = {f.name for f in dataclasses.fields(collider) if f.init} - {
        "vertices", "triangles", "source", "pose_time", "size", "radius", "thickness",
        "margin"}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise ValueError(f"move_collider: unknown field(s) {', '.join(unknown)} for a "
                         f"{type(collider).__name__}; allowed: {', '.join(sorted(names))}")
    now = posed_at(collider, time)
    return dataclasses.replace(now, pose_time=time, **changes)
