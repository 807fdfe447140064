"""Rope segments against triangle meshes: a sparse rope (10 cm between particles) dropped
on a mesh ridge or fin thinner than its spacing hangs from it instead of slipping
between its particles through the triangles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ropesim as rs

ROOT = Path(__file__).resolve().parent.parent

DT = 1e-3
RIDGE_X = 0.55  # midway between the rope's particles at 0.5 and 0.6 m
TOP = 1.0       # the ridge's top edge (m)


def _fin():
    """An open vertical sheet in the plane x = RIDGE_X, y 0.5..TOP, z -0.3..0.3."""
    v = np.array([[RIDGE_X, 0.5, -0.3], [RIDGE_X, 0.5, 0.3], [RIDGE_X, TOP, 0.3],
                  [RIDGE_X, TOP, -0.3]])
    return rs.Mesh(v, np.array([[0, 1, 2], [0, 2, 3]]), thickness=0.004, friction=0.5)


def _prism():
    """A closed triangular prism along z, 2 cm wide at its base y = 0.5, apex edge at TOP."""
    w = 0.01
    v = np.array([[RIDGE_X - w, 0.5, -0.3], [RIDGE_X + w, 0.5, -0.3], [RIDGE_X, TOP, -0.3],
                  [RIDGE_X - w, 0.5, 0.3], [RIDGE_X + w, 0.5, 0.3], [RIDGE_X, TOP, 0.3]])
    t = np.array([[0, 2, 1], [3, 4, 5], [0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4],
                  [2, 0, 3], [2, 3, 5]])
    return rs.Mesh(v, t, thickness=0.004, friction=0.5)


def _segment_points(positions, samples=101):
    s = np.linspace(0.0, 1.0, samples)[:, None, None]
    return (positions[:-1][None] * (1 - s) + positions[1:][None] * s).reshape(-1, 3)


def _crossings_below_top(positions):
    """Heights (m) at which rope segments cross the plane x = RIDGE_X below the top edge."""
    a, b = positions[:-1], positions[1:]
    crossing = (a[:, 0] - RIDGE_X) * (b[:, 0] - RIDGE_X) < 0.0
    w = (RIDGE_X - a[crossing, 0]) / (b[crossing, 0] - a[crossing, 0])
    y = a[crossing, 1] + w * (b[crossing, 1] - a[crossing, 1])
    return y[y < TOP]


@pytest.mark.parametrize("make", [_fin, _prism], ids=["open-fin", "closed-prism"])
def test_a_sparse_rope_dropped_on_a_mesh_ridge_thinner_than_its_spacing_hangs_from_it(make):
    ridge = make()
    rope = rs.rope(12, 1.1, pins="none", origin=(0.0, 1.03, 0.0))
    sim = rs.Simulation(rope, dt=DT, contacts=[rs.Ground(0.0), ridge])
    assert len(sim._contact_set.segments) == 11
    for _ in range(15):
        sim.step(100)
        # no segment passes below the top edge through the ridge's plane...
        assert len(_crossings_below_top(sim.positions)) == 0
        # ...and every point of the rope keeps about thickness / 2 off the apex edge
        points = _segment_points(sim.positions)
        near = np.abs(points[:, 2]) < 0.29
        apex = np.hypot(points[near, 0] - RIDGE_X, points[near, 1] - TOP)
        assert apex.min() > 0.002 - 2e-4
    # it hangs from the ridge, both halves (slipped through, it would lie on the ground)
    assert sim.positions[:, 1].min() > 0.3
    assert sim.positions[:, 1].max() > TOP - 0.01
    left, right = sim.positions[:6, 0], sim.positions[6:, 0]
    assert (left < RIDGE_X).all() and (right > RIDGE_X).all()


def test_a_cloth_meets_thin_meshes_open_or_closed_with_its_edges_and_thick_ones_not():
    """A 4 x 4 cloth, 10 cm spacing (24 grid edges, 9 diagonals): the 4 mm fin and the
    2 cm prism fit between its rows, so its edges meet them; a closed box 20 cm thick
    (as a mesh) meets its particles only. The shipped torus knot (a 9 cm tube) is thin
    for that cloth, not for the mesh-drape scene's (3 cm spacing)."""
    import trimesh

    block = trimesh.creation.box(extents=(0.2, 0.3, 0.3))
    knot = rs.Mesh.from_file(ROOT / "resources" / "meshes" / "torus-knot.obj",
                             center=(0.0, -1.0, 0.0))  # away from the cloth
    for mesh, spacing, edges in ((_fin(), 0.1, 33), (_prism(), 0.1, 33),
                                 (rs.Mesh(block.vertices, block.faces), 0.1, 0),
                                 (knot, 0.1, 33), (knot, 0.03, 0)):
        contact_set = rs.Simulation(rs.cloth(4, 4, spacing), dt=DT,
                                    contacts=[mesh])._contact_set
        assert len(contact_set.segments) == 0  # no rope segments
        assert len(contact_set.sheet_segments) == edges


def test_a_closed_meshs_thinnest_width_is_its_smallest_inscribed_ball():
    """Mesh.thinnest: a ball touching a triangle at its centroid from inside, as large
    as fits: 2/3 of a box's thinnest side (a centroid is a third of the way to the
    corners), near a sphere's diameter, 0 for an open sheet; kept across a move."""
    import dataclasses

    import trimesh

    box = trimesh.creation.box(extents=(0.1, 0.2, 0.3))
    assert rs.Mesh(box.vertices, box.faces).thinnest == pytest.approx(0.2 / 3, rel=1e-6)
    ball = trimesh.creation.icosphere(subdivisions=3, radius=0.5)
    assert 0.8 < rs.Mesh(ball.vertices, ball.faces).thinnest <= 1.0  # facets: below 1
    assert _fin().thinnest == 0.0
    prism = _prism()
    moved = dataclasses.replace(prism, center=(0.3, 0.0, 0.0))
    assert moved.thinnest == prism.thinnest > 0.0
    assert prism._checked[3] is moved._checked[3]  # worked out once


@pytest.mark.parametrize("make", [_fin, _prism], ids=["open-fin", "closed-prism"])
def test_a_cloth_hangs_on_the_edge_of_a_fin_between_two_of_its_rows(make):
    """A 20 x 20 cloth (5 cm spacing) dropped flat onto the top edge of a 4 mm open sheet
    or of a closed prism (2 cm at its base, a sharp ridge on top) that lies midway
    between two of its rows: its particles alone let it through (it fell to the floor);
    its edges meet the mesh, so it hangs on it, no edge through."""
    cloth = rs.cloth(20, 20, 0.05, plane="xz", pins="none", origin=(RIDGE_X, TOP + 0.1, 0.0))
    fin = make()
    sim = rs.Simulation(cloth, dt=1.0 / 600.0, contacts=[fin, rs.Ground(0.0)], drag=0.3)
    x0 = sim.positions[:, 0]
    assert np.abs(x0 - RIDGE_X).min() > 0.02  # the fin's plane lies between two rows
    sim.step(1200)
    y = sim.positions[:, 1]
    assert np.isfinite(sim.positions).all()
    assert y.max() > TOP - 0.01 and y.min() > 0.3  # hanging on the fin, not on the floor
    edges = sim._contact_set.sheet_segments
    a, b = sim.positions[edges[:, 0]], sim.positions[edges[:, 1]]
    across = (a[:, 0] - RIDGE_X) * (b[:, 0] - RIDGE_X) < 0.0
    u = (RIDGE_X - a[across, 0]) / (b[across, 0] - a[across, 0])
    point = a[across] + u[:, None] * (b[across] - a[across])  # where it meets x = RIDGE_X
    through = (point[:, 1] < TOP - 1e-3) & (point[:, 1] > 0.5) & (np.abs(point[:, 2]) < 0.3)
    assert across.any() and not through.any()  # over the top edge, none through the sheet


def test_closest_points_of_a_segment_and_a_mesh_match_a_dense_sampling():
    from ropesim.engine.colliders.bvh import STACK_SIZE, build_bvh, closest_to_segment

    rng = np.random.default_rng(7)
    vertices, triangles = (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.3]], float),
                           np.array([[0, 1, 2], [1, 3, 2]]))
    boxes, links, rows = build_bvh(vertices, triangles)
    stack = np.zeros(STACK_SIZE, dtype=np.int64)
    # the surface sampled densely (barycentric grid) and the segment too
    w = np.linspace(0.0, 1.0, 41)
    u, v = np.meshgrid(w, w)
    keep = u + v <= 1.0
    bary = np.column_stack([1 - u[keep] - v[keep], u[keep], v[keep]])
    surface = np.concatenate([bary @ vertices[t] for t in triangles])
    for _ in range(20):
        a, b = rng.uniform(-0.5, 1.5, 3), rng.uniform(-0.5, 1.5, 3)
        d2, s, qx, qy, qz, tri, _f = closest_to_segment(*a, *(b - a), np.inf, boxes, links,
                                                        rows, stack)
        on_segment = a + np.linspace(0.0, 1.0, 201)[:, None] * (b - a)
        sampled = np.sqrt(((on_segment[:, None] - surface[None]) ** 2).sum(-1)).min()
        assert tri >= 0
        # the sampling only overestimates, by at most its spacing
        assert np.sqrt(d2) <= sampled + 1e-12
        assert np.sqrt(d2) >= sampled - 0.03
        p = a + s * (b - a)  # the points returned are that far apart
        assert np.linalg.norm(p - [qx, qy, qz]) == pytest.approx(np.sqrt(d2), abs=1e-12)
