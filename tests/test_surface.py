"""surface: area-weighted vertex normals (numba kernel and wrapper)."""

from __future__ import annotations

import numpy as np
import pytest

from ropesim.engine.builders import cloth
from ropesim.render.surface import compute_normals, vertex_normals


def reference_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Plain numpy: sum of face cross products per corner, then normalise."""
    p = positions.astype(np.float64)
    a, b, c = (p[triangles[:, k]] for k in range(3))
    face = np.cross(b - a, c - a)
    acc = np.zeros_like(p)
    for k in range(3):
        np.add.at(acc, triangles[:, k], face)
    length = np.linalg.norm(acc, axis=1, keepdims=True)
    return np.divide(acc, length, out=np.zeros_like(acc), where=length > 0)


@pytest.mark.parametrize("plane, axis", [("xy", 2), ("xz", 1)])
def test_flat_grid_normals_are_the_plane_normal(plane: str, axis: int) -> None:
    system = cloth(7, 5, 0.1, plane=plane)
    normals = compute_normals(system.positions3(), system.triangles)
    expected = np.zeros(3)
    expected[axis] = 1.0
    assert normals.dtype == np.float32 and normals.shape == (35, 3)
    # every vertex points along the plane normal, all to the same side
    assert np.allclose(np.abs(normals @ expected), 1.0, atol=1e-6)
    assert np.allclose(normals, normals[0], atol=1e-6)


def test_xy_cloth_faces_plus_z() -> None:
    """The builder winds xy cloth counter-clockwise seen from +z, so normals are +z."""
    system = cloth(4, 4, 0.2)
    normals = compute_normals(system.positions3(), system.triangles)
    assert np.allclose(normals, [0.0, 0.0, 1.0], atol=1e-6)


def test_reversed_winding_flips_normals() -> None:
    system = cloth(4, 3, 0.2)
    front = compute_normals(system.positions3(), system.triangles)
    back = compute_normals(system.positions3(), system.triangles[:, ::-1])
    assert np.allclose(front, -back)


def test_matches_numpy_reference_on_random_mesh() -> None:
    rng = np.random.default_rng(7)
    positions = rng.normal(size=(60, 3))
    triangles = rng.integers(0, 60, size=(150, 3))
    got = compute_normals(positions, triangles)
    assert np.allclose(got, reference_normals(positions, triangles), atol=1e-5)
    got32 = compute_normals(positions.astype(np.float32), triangles.astype(np.int32))
    assert np.allclose(got32, reference_normals(positions, triangles), atol=1e-4)


def test_area_weighting() -> None:
    """A vertex shared by a large triangle in the xy plane and a small one in the
    xz plane gets a normal leaning towards the large one's, by their areas."""
    positions = np.array([[0, 0, 0], [10, 0, 0], [0, 10, 0], [0, 0, 1], [1, 0, 0]], float)
    triangles = np.array([[0, 1, 2], [0, 3, 4]])   # normals +z (area 50) and +y (area 0.5)
    n = compute_normals(positions, triangles)[0]
    assert np.allclose(n, np.array([0.0, 1.0, 100.0]) / np.hypot(1.0, 100.0), atol=1e-6)


def test_degenerate_triangles_give_finite_normals() -> None:
    positions = np.array(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0],     # a proper triangle
         [2, 2, 2], [3, 3, 3], [4, 4, 4],     # collinear
         [5, 5, 5]], float,                   # used only by a triangle with repeated corners
    )
    triangles = np.array([[0, 1, 2], [3, 4, 5], [6, 6, 6], [0, 0, 1]])
    normals = compute_normals(positions, triangles)
    assert np.all(np.isfinite(normals))
    assert np.allclose(normals[:3], [0.0, 0.0, 1.0])
    assert np.allclose(normals[3:], 0.0)   # no area: zero, not NaN


def test_unreferenced_vertices_get_zero() -> None:
    positions = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [9, 9, 9]], float)
    normals = compute_normals(positions, np.array([[0, 1, 2]]))
    assert np.allclose(normals[3], 0.0)
    assert np.allclose(compute_normals(positions, np.zeros((0, 3), int)), 0.0)


def test_writes_into_out_and_overwrites_stale_values() -> None:
    system = cloth(5, 5, 0.1)
    out = np.full((25, 3), np.nan, dtype=np.float32)
    result = compute_normals(system.positions3(), system.triangles, out=out)
    assert result is out
    assert np.allclose(out, [0.0, 0.0, 1.0])
    # the kernel itself takes the caller's array, without a wrapper
    out[:] = 123.0
    vertex_normals(system.positions3(), system.triangles, out)
    assert np.allclose(out, [0.0, 0.0, 1.0])


@pytest.mark.parametrize(
    "positions, triangles, out, match",
    [
        (np.zeros((3, 2)), np.array([[0, 1, 2]]), None, "positions"),
        (np.zeros((3, 3)), np.array([[0, 1, 3]]), None, "triangles"),
        (np.zeros((3, 3)), np.array([[0.0, 1.0, 2.0]]), None, "triangles"),
        (np.zeros((3, 3)), np.array([[0, 1, 2]]), np.zeros((3, 3)), "out"),
        (np.zeros((3, 3)), np.array([[0, 1, 2]]), np.zeros((4, 3), np.float32), "out"),
    ],
)
def test_bad_input_names_the_argument(positions, triangles, out, match) -> None:
    with pytest.raises(ValueError, match=match):
        compute_normals(positions, triangles, out=out)
