"""What a view of a simulation should keep in frame: the particles and where they will go.

:func:`reach_points` adds to the particles the places gravity will take them, so a
cloth released level and a chain pinned at one end stay in view as they swing down:
each free particle hanging straight below its nearest pin at its current distance
from it (the lowest it can swing), or, without pins, dropped onto the ground. Points
never go below a ground; ball obstacles add their extremes.
"""

from __future__ import annotations

import numpy as np

from ..engine.contacts import Ground, Sphere
from ..engine.simulation import Simulation

MAX_PIN_PAIRS = 4_000_000    # particle x pin distances computed at most (pins subsampled)


def reach_points(sim: Simulation) -> np.ndarray:
    """The particles, their hanging or landing places and the balls' extremes, (k, 3) m."""
    positions = np.asarray(sim.positions, dtype=np.float64)
    points = [positions]
    gravity = np.asarray(sim.gravity, dtype=np.float64)
    g_norm = float(np.linalg.norm(gravity))
    grounds = [c.height for c in sim.contacts if isinstance(c, Ground)]
    floor = max(grounds) if grounds else None
    pinned = np.asarray(sim.pinned, dtype=bool)
    if g_norm > 0 and len(positions):
        down = gravity / g_norm
        pins = positions[pinned]
        free = positions[~pinned]
        if len(pins) and len(free):
            stride = max(1, int(np.ceil(len(pins) * len(free) / MAX_PIN_PAIRS)))
            pins = pins[::stride]
            distance = np.sqrt(((free[:, None, :] - pins[None, :, :]) ** 2).sum(axis=2))
            nearest = distance.argmin(axis=1)
            points.append(pins[nearest] + distance[np.arange(len(free)), nearest, None] * down)
        elif floor is not None and len(free):
            landed = free.copy()
            landed[:, 1] = floor
            points.append(landed)
    for contact in sim.contacts:
        if isinstance(contact, Sphere):
            centre = np.asarray(contact.center, dtype=np.float64)
            points.append(centre + float(contact.radius) * np.vstack([np.eye(3), -np.eye(3)]))
    out = np.vstack(points)
    if floor is not None:
        out[:, 1] = np.maximum(out[:, 1], floor)
    return out


__all__ = ["reach_points"]
