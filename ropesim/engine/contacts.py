"""Obstacles: a ground plane, spheres, boxes, capsules and triangle meshes, enforced
after each step by one numba call (colliders/kernel.py).

A particle found inside an obstacle is projected back onto its surface, the inward
part of its velocity (relative to the surface) is removed, and Coulomb friction takes up
to ``friction`` times that removed normal speed off its tangential speed (so a cloth
resting on a ball sticks, and a flung rope slides to a stop on the floor). The ground is
horizontal (y up). Boxes, capsules and meshes (colliders/shapes.py) may move, and are
swept: a particle that crosses one during a step is stopped on the side it came from.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .colliders.bvh import STACK_SIZE, TRIANGLE_COLUMNS, build_bvh, distance_grid
from .colliders.kernel import (
    BOX, CAPSULE, CENTER, CLOSED, COLUMNS, FRICTION, KIND, MESH, MESH_INDEX, P0, POSE_TIME,
    ROTATION, SKIN, SPIN, VELOCITY, project_contacts,
)
from .colliders.shapes import (
    COLLIDER_TYPES, MAX_FRICTION, Box, Capsule, Collider, Mesh, check_friction, keyframe_centre,
    posed_at,
)
from .model import as_float_array, check_number, show

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


def collider_row(collider: Collider, mesh_index: int = 0) -> np.ndarray:
    """The kernel's table row (COLUMNS float64) of a Box, Capsule or Mesh."""
    row = np.zeros(COLUMNS)
    row[FRICTION] = collider.friction
    if isinstance(collider, Box):
        row[KIND] = BOX
        row[P0:P0 + 3] = 0.5 * np.asarray(collider.size) + SKIN
        centre, rotation = np.asarray(collider.center), collider.matrix()
    elif isinstance(collider, Capsule):
        row[KIND] = CAPSULE
        centre, rotation, row[P0] = _capsule_frame(collider)
        row[P0 + 1] = collider.radius + SKIN
    else:
        row[KIND] = MESH
        row[P0] = max(0.5 * collider.thickness, SKIN)
        row[MESH_INDEX] = mesh_index
        row[CLOSED] = float(collider.closed)
        centre, rotation = np.asarray(collider.center), collider.matrix()
    row[CENTER:CENTER + 3] = centre
    row[ROTATION:ROTATION + 9] = rotation.ravel()
    row[VELOCITY:VELOCITY + 3] = collider.velocity
    row[SPIN:SPIN + 3] = np.radians(collider.spin)
    row[POSE_TIME] = collider.pose_time
    return row


def keyframe_row(collider: Collider, mesh_index: int, time: float, dt: float) -> np.ndarray:
    """The table row of a collider with keyframes for the step from ``time`` (s) of
    ``dt`` (s): its pose at ``time`` and the velocity (m/s) that reaches the keyframes'
    centre at ``time + dt``."""
    now = posed_at(collider, time)
    row = collider_row(now, mesh_index)
    row[VELOCITY:VELOCITY + 3] = (keyframe_centre(collider.keyframes, time + dt)
                                  - row[CENTER:CENTER + 3]) / dt
    return row


def _reach(collider: Collider) -> float:
    """The largest |coordinate| (m) a collider's surface reaches at its pose."""
    if isinstance(collider, Box):
        return float(np.abs(collider.center).max() + np.linalg.norm(collider.size))
    if isinstance(collider, Capsule):
        return float(max(np.abs(collider.start).max(), np.abs(collider.end).max())
                     + collider.radius)
    return float(np.abs(collider.center).max() + np.abs(collider.vertices).max() * 1.8
                 + collider.thickness)


class ContactSet:
    """The obstacles of a Simulation packed for the kernel: grounds (k, 2) [height,
    friction], spheres (k, 5) [centre, radius, friction], the collider table and the
    meshes' BVHs (built once here), with the scratch the kernel writes."""

    def __init__(self, contacts: Sequence[Contact], n_particles: int, dtype: Any):
        grounds, spheres, rows = [], [], []
        mesh_rows, boxes, links, triangles, grids, distances = [], [], [], [], [], []
        nodes = tris = cells = 0
        for contact in contacts:
            if isinstance(contact, Ground):
                grounds.append((contact.height, contact.friction))
            elif isinstance(contact, Sphere):
                spheres.append((*contact.center, contact.radius, contact.friction))
            elif isinstance(contact, Mesh):
                b, l, t = build_bvh(contact.vertices, contact.triangles)
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
                rows.append(collider_row(contact, len(mesh_rows) - 1))
            elif isinstance(contact, COLLIDER_TYPES):
                rows.append(collider_row(contact))
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
        self.reach = [_reach(c) for c in contacts if isinstance(c, COLLIDER_TYPES)]
        self.swept = len(rows) > 0
        # (table row, collider) of those with keyframes: their rows follow them per step
        self._paths = [(k, c) for k, c in enumerate(c for c in contacts
                                                     if isinstance(c, COLLIDER_TYPES)) if c.keyframes]
        self.x_prev = np.zeros((n_particles if self.swept else 0, 3), dtype=dtype)
        self._poses = np.zeros((len(rows), 2, 12))
        self._scratch = np.zeros(12)
        self._stack = np.zeros(STACK_SIZE, dtype=np.int64)
        # table row of each contact index (-1: a ground or a sphere)
        self._row_of = []
        row = 0
        for contact in contacts:
            self._row_of.append(row if isinstance(contact, COLLIDER_TYPES) else -1)
            row += isinstance(contact, COLLIDER_TYPES)

    @property
    def moving(self) -> bool:
        """Whether any collider has a velocity or a spin (then contacts do work)."""
        return bool(self._paths) or bool(np.any(self.colliders[:, VELOCITY:SPIN + 3] != 0.0))

    def remember(self, x: np.ndarray) -> None:
        """Keep the positions before a step (the start of the swept segments)."""
        if self.swept:
            np.copyto(self.x_prev, x)

    def project(self, x: np.ndarray, v: np.ndarray, fixed: np.ndarray, time: float,
                dt: float, planar: bool) -> int:
        """The contact pass after a step from ``time`` (s) of ``dt`` (s): one kernel call."""
        for row, collider in self._paths:  # this step's piece of the keyframes, at its speed
            self.colliders[row] = keyframe_row(collider, int(self.colliders[row, MESH_INDEX]),
                                           time, dt)
        return project_contacts(x, self.x_prev if self.swept else x, v, fixed, self.grounds,
                                self.spheres, self.colliders, self.meshes, self.boxes,
                                self.links, self.triangles, self.grids, self.distances,
                                self._poses, self._scratch,
                                self._stack, time, dt, planar)

    def repose(self, index: int, collider: Collider) -> None:
        """Write the pose and motion of contact ``index`` (a Box, Capsule or Mesh whose
        shape is unchanged) into the table, keeping its mesh."""
        row = self._row_of[index]
        old = self.colliders[row]
        self.colliders[row] = collider_row(collider, int(old[MESH_INDEX]))
        self._paths = [(k, c) for k, c in self._paths if k != row]
        if collider.keyframes:
            self._paths.append((row, collider))


def moved(collider: Contact, time: float, changes: dict[str, Any]) -> Contact:
    """A collider moved at simulated time ``time`` (s): its current pose (with its motion
    so far) with ``changes`` (any of its fields: center, rotation, start, end, velocity,
    spin, friction, ...) applied, standing there from ``time`` on."""
    if not isinstance(collider, COLLIDER_TYPES):
        raise TypeError(f"move_collider: contact is a {type(collider).__name__}; only Box, "
                        f"Capsule and Mesh colliders move")
    names = {f.name for f in dataclasses.fields(collider) if f.init} - {
        "vertices", "triangles", "source", "pose_time", "size", "radius", "thickness"}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise ValueError(f"move_collider: unknown field(s) {', '.join(unknown)} for a "
                         f"{type(collider).__name__}; allowed: {', '.join(sorted(names))}")
    now = posed_at(collider, time)
    return dataclasses.replace(now, pose_time=time, **changes)
