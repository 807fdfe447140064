"""Write resources/meshes/torus-knot.obj: a closed tube around a (2, 3) torus knot.

    python tools/make_torus_knot.py [OUT.obj]

The knot curve is ((R + r cos 3u) cos 2u, r sin 3u, (R + r cos 3u) sin 2u) for u in
0..2 pi (a trefoil lying in the xz plane, y up); a tube of radius ``TUBE`` (m) follows it
with rotation-minimising frames, ``RINGS`` rings of ``SIDES`` vertices, faces wound
outward. Every edge is shared by two triangles, so the mesh is closed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

R, r, TUBE = 0.30, 0.12, 0.07  # m
RINGS, SIDES = 240, 12


def knot(u: np.ndarray) -> np.ndarray:
    return np.column_stack([(R + r * np.cos(3 * u)) * np.cos(2 * u), r * np.sin(3 * u),
                            (R + r * np.cos(3 * u)) * np.sin(2 * u)])


def torus_knot() -> tuple[np.ndarray, np.ndarray]:
    """(vertices (RINGS * SIDES, 3) m, triangles (2 RINGS SIDES, 3)) of the closed tube."""
    u = np.linspace(0.0, 2 * np.pi, RINGS, endpoint=False)
    centre = knot(u)
    tangent = np.roll(centre, -1, axis=0) - np.roll(centre, 1, axis=0)
    tangent /= np.linalg.norm(tangent, axis=1)[:, None]
    normal = np.empty_like(tangent)
    normal[0] = np.cross(tangent[0], [0.0, 1.0, 0.0])
    normal[0] /= np.linalg.norm(normal[0])
    for k in range(1, RINGS):  # parallel transport of the first normal
        n = normal[k - 1] - tangent[k] * (normal[k - 1] @ tangent[k])
        normal[k] = n / np.linalg.norm(n)
    # the transported frame comes back turned: spread the closing twist along the tube
    binormal = np.cross(tangent, normal)
    twist = np.arctan2(normal[-1] @ binormal[0], normal[-1] @ normal[0])
    phase = twist * np.arange(RINGS) / RINGS
    angles = 2 * np.pi * np.arange(SIDES) / SIDES
    theta = angles[None, :] - phase[:, None]
    ring = (np.cos(theta)[..., None] * normal[:, None, :]
            + np.sin(theta)[..., None] * binormal[:, None, :])
    vertices = (centre[:, None, :] + TUBE * ring).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(RINGS), np.arange(SIDES), indexing="ij")
    a = i * SIDES + j
    b = ((i + 1) % RINGS) * SIDES + j
    c = ((i + 1) % RINGS) * SIDES + (j + 1) % SIDES
    d = i * SIDES + (j + 1) % SIDES
    triangles = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3),
                                np.stack([a, c, d], -1).reshape(-1, 3)])
    # wind outward: the normal of each face points away from its ring's centre
    corners = vertices[triangles]
    face_normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    ring_centre = centre[triangles[:, 0] // SIDES]
    inward = np.einsum("ij,ij->i", face_normal, corners[:, 0] - ring_centre) < 0
    triangles[inward] = triangles[inward][:, ::-1]
    return vertices, triangles


def write_obj(path: Path, vertices: np.ndarray, triangles: np.ndarray,
              title: str = "(2, 3) torus knot tube, written by tools/make_torus_knot.py") -> None:
    """An OBJ file of the mesh (vertices m, triangles 0-based), ``title`` in its header."""
    lines = [f"# {title}; units m, y up"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in vertices]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in triangles]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        Path(__file__).resolve().parents[1] / "resources" / "meshes" / "torus-knot.obj")
    write_obj(out, *torus_knot())
    print(f"wrote {out}")
