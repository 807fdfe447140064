"""Ctrl+left-drag on a collider: it follows the cursor in the plane through the picked
point that faces the camera (the cloth reacts through the contacts). The cursor's move
since the last frame is carried out over that frame's steps (:meth:`ColliderDrag.spread`),
not in its first step, so friction sees the collider's true speed."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.colliders import COLLIDER_TYPES, offset_fields, posed_at
from ..render.collider_picking import ColliderPicker
from ..render.picking import intersect_plane


class ColliderDrag:
    """Picks a Box, Capsule or Mesh under the cursor and moves it with
    ``Simulation.move_collider``; ``host`` is the mouse's host (sim, camera, view_size)."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.picker = ColliderPicker()
        self.index: int | None = None
        self._point = np.zeros(3)
        self._normal = np.zeros(3)
        self._moved: int | None = None  # the collider moved since the last frame

    def start(self, x: float, y: float) -> bool:
        """Hold the collider under framebuffer pixel (x, y); False if there is none."""
        host = self.host
        origin, direction = host.camera.world_ray(x, y, *host.view_size)
        hit = self.picker.pick(origin, direction, host.sim.contacts, host.sim.time)
        if hit is None:
            return False
        self.index, self._point = hit
        self._normal = np.asarray(host.camera.forward, dtype=np.float64)
        kind = type(host.sim.contacts[self.index]).__name__.lower()
        host.message = f"dragging {kind} {self.index} (contact {self.index})"
        return True

    def follow(self, x: float, y: float) -> None:
        """Move the held collider by the cursor's motion in the drag plane (m)."""
        if self.index is None:
            return
        host = self.host
        origin, direction = host.camera.world_ray(x, y, *host.view_size)
        point = intersect_plane(origin, direction, self._point, self._normal)
        if point is None:
            return
        sim = host.sim
        now = posed_at(sim.contacts[self.index], sim.time)
        sim.move_collider(self.index, **offset_fields(now, point - self._point))
        self._point = point
        self._moved = self.index

    def spread(self, seconds: float) -> None:
        """The frame about to run ``seconds`` (s) of steps: the move made since the last
        frame goes at a constant rate over them (Simulation.move_collider's ``over``)."""
        sim = self.host.sim
        if (self._moved is not None and seconds > 0.0 and self._moved < len(sim.contacts)
                and isinstance(sim.contacts[self._moved], COLLIDER_TYPES)):  # same scene
            sim.move_collider(self._moved, over=seconds)
        self._moved = None

    def stop(self) -> None:
        self.index = None
