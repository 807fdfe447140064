"""Static obstacles: a ground plane and spheres, enforced after each step.

A particle found inside an obstacle is projected back onto its surface, the inward
part of its velocity is removed, and Coulomb friction takes up to ``friction`` times
that removed normal speed off its tangential speed (so a cloth resting on a ball
sticks, and a flung rope slides to a stop on the floor). The ground is horizontal
(y up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit

from .model import as_float_array, check_number, show


#: Largest Coulomb friction coefficient accepted. Beyond a few the contact already
#: takes off all tangential speed for any landing steeper than atan(1 / friction);
#: real materials stay below about 2.
MAX_FRICTION = 10.0


def _check_friction(friction: float, owner: str) -> float:
    """A Coulomb friction coefficient in 0 (frictionless) .. MAX_FRICTION."""
    return check_number(friction, f"{owner}.friction", "", minimum=0.0, maximum=MAX_FRICTION)


@dataclass(frozen=True)
class Ground:
    """Horizontal floor at y = height (m) with Coulomb friction coefficient (0..10)."""

    height: float = 0.0
    friction: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "height", check_number(self.height, "ground.height", "m"))
        object.__setattr__(self, "friction", _check_friction(self.friction, "ground"))


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
        object.__setattr__(self, "friction", _check_friction(self.friction, "sphere"))


Contact = Ground | Sphere


def pack_contacts(contacts: Sequence[Contact]) -> tuple[np.ndarray, np.ndarray]:
    """Arrays for the kernel: ground (k, 2) [height, friction]; spheres (k, 5) [c, r, mu]."""
    grounds, spheres = [], []
    for contact in contacts:
        if isinstance(contact, Ground):
            grounds.append((contact.height, contact.friction))
        elif isinstance(contact, Sphere):
            spheres.append((*contact.center, contact.radius, contact.friction))
        else:
            raise ValueError(
                f"contacts: expected Ground or Sphere objects, got {type(contact).__name__}"
            )
    return (np.array(grounds, dtype=np.float64).reshape(-1, 2),
            np.array(spheres, dtype=np.float64).reshape(-1, 5))


@njit(cache=True)
def _resolve(v, i, nx, ny, nz, friction):
    """Remove the inward normal velocity of particle i and apply Coulomb friction."""
    vn = v[i, 0] * nx + v[i, 1] * ny + v[i, 2] * nz
    if vn >= 0.0:
        return
    v[i, 0] -= vn * nx
    v[i, 1] -= vn * ny
    v[i, 2] -= vn * nz
    tx = v[i, 0]
    ty = v[i, 1]
    tz = v[i, 2]
    tangential = np.sqrt(tx * tx + ty * ty + tz * tz)
    if tangential > 0.0:
        scale = max(0.0, 1.0 - friction * (-vn) / tangential)
        v[i, 0] = tx * scale
        v[i, 1] = ty * scale
        v[i, 2] = tz * scale


@njit(cache=True)
def project_contacts(x, v, fixed, grounds, spheres, planar):
    """Push free particles out of the ground and spheres; returns how many touched."""
    touching = 0
    for i in range(x.shape[0]):
        if fixed[i]:
            continue
        for g in range(grounds.shape[0]):
            if x[i, 1] < grounds[g, 0]:
                x[i, 1] = grounds[g, 0]
                _resolve(v, i, 0.0, 1.0, 0.0, grounds[g, 1])
                touching += 1
        for s in range(spheres.shape[0]):
            dx = x[i, 0] - spheres[s, 0]
            dy = x[i, 1] - spheres[s, 1]
            dz = 0.0 if planar else x[i, 2] - spheres[s, 2]
            dist = np.sqrt(dx * dx + dy * dy + dz * dz)
            radius = spheres[s, 3]
            if dist >= radius:
                continue
            if dist < 1e-12:  # at the centre: push straight up
                dx, dy, dz, dist = 0.0, 1.0, 0.0, 1.0
            nx = dx / dist
            ny = dy / dist
            nz = dz / dist
            x[i, 0] = spheres[s, 0] + nx * radius
            x[i, 1] = spheres[s, 1] + ny * radius
            if not planar:
                x[i, 2] = spheres[s, 2] + nz * radius
            _resolve(v, i, nx, ny, nz, spheres[s, 4])
            touching += 1
    return touching
