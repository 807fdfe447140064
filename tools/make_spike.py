"""Write resources/meshes/spike.obj: a closed cone standing on its base, point up.

    python tools/make_spike.py [OUT.obj]

Base radius ``RADIUS`` (m) on y = 0 around the origin, apex at y = ``HEIGHT`` (m): a
point 15 deg from its axis, sharper than Mesh.tips' 30 deg, on a base too wide for
Mesh.thinnest to call it thin for a 3 cm cloth. ``SIDES`` side triangles and a fan of
as many for the base, wound outward; every edge is shared by two triangles.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from make_torus_knot import write_obj  # noqa: E402 (tools/ is the script's path)

RADIUS, HEIGHT = 0.08, 0.30  # m
SIDES = 24


def spike() -> tuple[np.ndarray, np.ndarray]:
    """(vertices (SIDES + 2, 3) m, triangles (2 SIDES, 3)) of the closed cone."""
    angle = np.linspace(0.0, 2 * np.pi, SIDES, endpoint=False)
    ring = np.column_stack([RADIUS * np.cos(angle), np.zeros(SIDES), RADIUS * np.sin(angle)])
    apex, centre = SIDES, SIDES + 1
    vertices = np.vstack([ring, [[0.0, HEIGHT, 0.0], [0.0, 0.0, 0.0]]])
    k = np.arange(SIDES)
    following = (k + 1) % SIDES
    # seen from outside, counter-clockwise: the sides go ring k, apex, ring k + 1 (the
    # ring runs counter-clockwise seen from above), the base ring k, ring k + 1, centre
    sides = np.column_stack([k, np.full(SIDES, apex), following])
    base = np.column_stack([k, following, np.full(SIDES, centre)])
    return vertices, np.vstack([sides, base])


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        Path(__file__).resolve().parents[1] / "resources" / "meshes" / "spike.obj")
    write_obj(out, *spike(), title="spike: a closed cone, written by tools/make_spike.py")
    print(f"wrote {out}")
