"""Boxes, capsules and triangle meshes drawn shaded, and cast into the shadow map.

Each collider's triangles are made once in its own frame (:func:`box_mesh`,
:func:`capsule_mesh`, :func:`mesh_surface`: float32 positions in m and unit normals) and
moved to its pose at the simulation's time (``colliders.posed_at``) every frame, on the
CPU (colliders have few vertices), into one vertex buffer drawn with the surface program
(offset 0, scale 1) and its depth twin for the shadow pass.
"""

from __future__ import annotations

from typing import Any, Sequence

import moderngl
import numpy as np

from ..engine.colliders import Box, Capsule, Mesh, posed_at
from ..engine.contacts import collider_frame

COLLIDER_COLOR = (0.60, 0.52, 0.44)   # oak
MESH_COLOR = (0.62, 0.66, 0.72)       # the spheres' grey
CAPSULE_SEGMENTS = 32


def box_mesh(size: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(24, 6) float32 [position m, flat normal] rows and (12, 3) uint32 triangles of a
    box of full edge lengths ``size`` centred on the origin."""
    half = 0.5 * np.asarray(size, dtype=np.float64)
    rows, tris = [], []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        for sign in (1.0, -1.0):
            base = len(rows)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = np.zeros(3)
                p[axis], p[u], p[v] = sign * half[axis], a * half[u], b * half[v]
                n = np.zeros(3)
                n[axis] = sign
                rows.append(np.concatenate([p, n]))
            quad = [[0, 1, 2], [0, 2, 3]] if sign > 0 else [[0, 2, 1], [0, 3, 2]]
            tris += [[base + i for i in t] for t in quad]
    return np.array(rows, dtype=np.float32), np.array(tris, dtype=np.uint32)


def capsule_mesh(half_length: float, radius: float,
                 segments: int = CAPSULE_SEGMENTS) -> tuple[np.ndarray, np.ndarray]:
    """Rows [position m, normal] and triangles of a capsule along x from -half_length to
    half_length: a UV sphere of ``radius`` split at x = 0 and pulled apart."""
    rings = segments // 2 + 1  # an odd count of latitudes: one ring sits on x = 0, doubled
    lat = np.linspace(0.0, np.pi, rings)
    lat = np.concatenate([lat[lat <= np.pi / 2], lat[lat >= np.pi / 2]])
    lon = np.linspace(0.0, 2 * np.pi, segments + 1)
    la, lo = np.meshgrid(lat, lon, indexing="ij")
    normal = np.stack([np.cos(la), np.sin(la) * np.cos(lo), np.sin(la) * np.sin(lo)], -1)
    shift = np.where(np.arange(len(lat)) < (len(lat) // 2), half_length, -half_length)
    position = radius * normal + np.array([1.0, 0.0, 0.0]) * shift[:, None, None]
    rows = np.concatenate([position, normal], -1).reshape(-1, 6)
    cols = segments + 1
    i, j = np.meshgrid(np.arange(len(lat) - 1), np.arange(segments), indexing="ij")
    a, b = i * cols + j, i * cols + j + 1
    c, d = (i + 1) * cols + j + 1, (i + 1) * cols + j
    tris = np.concatenate([np.stack([a, d, c], -1).reshape(-1, 3),
                           np.stack([a, c, b], -1).reshape(-1, 3)])
    return rows.astype(np.float32), tris.astype(np.uint32)


def mesh_surface(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """Rows [position m, area-weighted vertex normal] and triangles of a Mesh collider."""
    v = np.asarray(mesh.vertices, dtype=np.float64)
    t = np.asarray(mesh.triangles)
    face = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    normals = np.zeros_like(v)
    for k in range(3):
        np.add.at(normals, t[:, k], face)
    normals /= np.maximum(np.linalg.norm(normals, axis=1), 1e-30)[:, None]
    return np.concatenate([v, normals], 1).astype(np.float32), t.astype(np.uint32)


def _local_mesh(collider: Any, inset: float) -> tuple[np.ndarray, np.ndarray] | None:
    if isinstance(collider, Box):
        size = np.asarray(collider.size)
        return box_mesh(np.maximum(size - 2.0 * inset, 0.5 * size))
    if isinstance(collider, Capsule):
        _, _, half = collider_frame(collider)
        return capsule_mesh(half, max(collider.radius - inset, 0.5 * collider.radius))
    if isinstance(collider, Mesh):
        return mesh_surface(collider)
    return None


class ColliderDrawing:
    """The GL buffers of a simulation's Box, Capsule and Mesh colliders.

    ``inset`` (m): boxes and capsules are drawn that much smaller on every side (as the
    renderer draws spheres), so that a cloth lying on them is not hidden in their faces
    and its chords do not cut into the drawn surface.
    """

    def __init__(self, ctx: moderngl.Context, surface: moderngl.Program,
                 depth: moderngl.Program, inset: float = 0.0) -> None:
        self.ctx = ctx
        self._programs = (surface, depth)
        self._inset = float(inset)
        self._key: tuple = ()
        self._local: list[tuple[np.ndarray, np.ndarray]] = []
        self._rows = np.zeros((0, 6), np.float32)
        self._gl: list[Any] = []
        self._vaos: tuple[Any, Any] | None = None
        self.lo = self.hi = None  # m, the bounds of the drawn colliders (None: none)

    def update(self, contacts: Sequence[Any], time: float) -> None:
        """Pose every collider at ``time`` (s) and upload the vertices."""
        colliders = [c for c in contacts if isinstance(c, (Box, Capsule, Mesh))]
        key = tuple((type(c), getattr(c, "size", None), getattr(c, "radius", None),
                     np.linalg.norm(np.subtract(c.end, c.start)) if isinstance(c, Capsule)
                     else None, id(getattr(c, "vertices", None))) for c in colliders)
        if key != self._key:
            self._build(colliders)
            self._key = key
        if not colliders:
            return
        offset = 0
        for collider, (local, _) in zip(colliders, self._local):
            centre, rotation = collider_frame(posed_at(collider, time))[:2]
            block = self._rows[offset:offset + len(local)]
            block[:, :3] = local[:, :3] @ rotation.T.astype(np.float32) + centre
            block[:, 3:] = local[:, 3:] @ rotation.T.astype(np.float32)
            offset += len(local)
        self._vbo.write(self._rows)
        self.lo = self._rows[:, :3].min(axis=0)
        self.hi = self._rows[:, :3].max(axis=0)

    def _build(self, colliders: list[Any]) -> None:
        self.release()
        self._local = [_local_mesh(c, self._inset) for c in colliders]
        if not colliders:
            self.lo = self.hi = None
            return
        starts = np.cumsum([0] + [len(rows) for rows, _ in self._local])
        tris = np.concatenate([t + s for (_, t), s in zip(self._local, starts)])
        self._rows = np.zeros((int(starts[-1]), 6), np.float32)
        self._vbo = self.ctx.buffer(reserve=self._rows.nbytes)
        self._ibo = self.ctx.buffer(tris.astype(np.uint32).tobytes())
        surface, depth = self._programs
        self._vaos = (
            self.ctx.vertex_array(surface, [(self._vbo, "3f 3f", "in_position", "in_normal")],
                                  index_buffer=self._ibo, index_element_size=4),
            self.ctx.vertex_array(depth, [(self._vbo, "3f 12x", "in_position")],
                                  index_buffer=self._ibo, index_element_size=4),
        )
        self._gl = [*self._vaos, self._vbo, self._ibo]

    def draw(self, color: tuple[float, float, float] = COLLIDER_COLOR) -> None:
        """Draw shaded with the surface program (its frame uniforms already set)."""
        if self._vaos is None:
            return
        prog = self._programs[0]
        for name, value in (("u_front_color", color), ("u_back_color", color),
                            ("u_offset_scale", (0.0, 0.0, 0.0, 1.0)), ("u_spec", 0.25),
                            ("u_fabric", False), ("u_strain", False), ("u_contact_m", 0.0)):
            if name in prog:
                prog[name].value = value
        self._vaos[0].render(moderngl.TRIANGLES)

    def draw_depth(self) -> None:
        """Draw into the bound shadow map (the depth program's light matrix already set)."""
        if self._vaos is None:
            return
        prog = self._programs[1]
        if "u_offset_scale" in prog:
            prog["u_offset_scale"].value = (0.0, 0.0, 0.0, 1.0)
        self._vaos[1].render(moderngl.TRIANGLES)

    @property
    def vertices(self) -> np.ndarray:
        """(v, 6) float32 posed vertices and normals of every collider (m; empty without)."""
        return self._rows

    def extend(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The bounds (m) lo..hi grown to hold the drawn colliders."""
        if self.lo is None:
            return lo, hi
        return np.minimum(lo, self.lo), np.maximum(hi, self.hi)

    def release(self) -> None:
        for obj in self._gl:
            obj.release()
        self._gl = []
        self._vaos = None
