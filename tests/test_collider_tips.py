"""Sharp points of closed meshes against a cloth's triangles: a spike that is thick
everywhere but at its point (no triangle centroid sees it as thin) still fits between
a cloth's particles; its tip (Mesh.tips) meets the cloth's triangles, so a cloth dropped
on it tents over the point instead of sliding down around it."""

from __future__ import annotations

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine.colliders.bvh import tip_sines
from ropesim.engine.colliders.kernel import P0
from ropesim.engine.colliders.shapes import TIP_SINE

SPACING = 0.05  # the cloth's (m)
HEIGHT, RADIUS = 0.4, 0.15  # the spike: a cone 21 deg from its axis


def _cone(apex_xz=(0.0, 0.0), sections=24):
    """A closed cone standing on y = 0 with its apex at HEIGHT over apex_xz."""
    import trimesh

    cone = trimesh.creation.cone(radius=RADIUS, height=HEIGHT, sections=sections)
    # trimesh's z up to y up: swapping two axes mirrors, so the winding is reversed too
    vertices = np.asarray(cone.vertices)[:, [0, 2, 1]] + [apex_xz[0], 0.0, apex_xz[1]]
    return np.ascontiguousarray(vertices), np.ascontiguousarray(np.asarray(cone.faces)[:, ::-1])


def _cloth():
    return rs.cloth(20, 20, SPACING, plane="xz", pins="none", origin=(0.0, 0.6, 0.0))


def test_tips_are_the_points_sharper_than_a_30_degree_cone():
    """tip_sines: sin of the half angle of the cone that fits in a vertex (a cube's
    corner 1/sqrt(3), the cone's apex about sin 14 deg, a ball's vertices near 1);
    Mesh.tips keeps those below TIP_SINE: the cone's apex alone; none on a box, a ball,
    an open sheet."""
    import trimesh

    vertices, triangles = _cone()
    points, sines = tip_sines(vertices, triangles)
    apex = np.argmax(points[:, 1])
    assert points[apex, 1] == pytest.approx(HEIGHT)
    assert sines[apex] == pytest.approx(np.sin(np.arctan(RADIUS / HEIGHT)), rel=0.02)
    box = trimesh.creation.box(extents=(0.1, 0.2, 0.3))
    assert tip_sines(np.asarray(box.vertices), np.asarray(box.faces))[1] == pytest.approx(
        np.full(8, 1.0 / np.sqrt(3.0)), rel=1e-6)
    ball = trimesh.creation.icosphere(subdivisions=2, radius=0.5)
    assert tip_sines(np.asarray(ball.vertices), np.asarray(ball.faces))[1].min() > 0.95
    spike = rs.Mesh(vertices, triangles)
    assert spike.tips.tolist() == [points[apex].tolist()]
    assert sines[apex] < TIP_SINE < 1.0 / np.sqrt(3.0)
    assert len(rs.Mesh(np.asarray(box.vertices), np.asarray(box.faces)).tips) == 0
    assert len(rs.Mesh(np.asarray(ball.vertices), np.asarray(ball.faces)).tips) == 0
    sheet = rs.Mesh(np.array([[0.0, 0, 0], [1, 0, 0], [0, 0, 1]]), np.array([[0, 1, 2]]))
    assert len(sheet.tips) == 0


def _surface_heights_over(positions, triangles, px, pz):
    """Heights (m) of the cloth's triangles whose xz shadow holds the point (px, pz)."""
    a, b, c = (positions[triangles[:, k]] for k in range(3))
    ux, uz, wx, wz = b[:, 0] - a[:, 0], b[:, 2] - a[:, 2], c[:, 0] - a[:, 0], c[:, 2] - a[:, 2]
    qx, qz = px - a[:, 0], pz - a[:, 2]
    det = ux * wz - uz * wx
    s = (qx * wz - qz * wx) / det
    t = (ux * qz - uz * qx) / det
    over = (s >= 0) & (t >= 0) & (s + t <= 1)
    return (a[:, 1] + s * (b[:, 1] - a[:, 1]) + t * (c[:, 1] - a[:, 1]))[over]


@pytest.mark.parametrize("with_tips", [True, False], ids=["tips", "particles-and-edges-only"])
def test_a_cloth_dropped_on_a_spike_tents_over_its_point(with_tips):
    """A 20 x 20 cloth (5 cm spacing) dropped flat onto a cone whose apex stands under
    the middle of one of its cells. With the tip met by the triangles the cloth hangs
    over the point, every triangle above it at least the contact distance; with
    particles and edges only (the tips taken out) the point goes through the cloth,
    which slides down around it: the test of the tips is what holds it."""
    cloth = _cloth()
    x = cloth.positions3()
    corner = 9 * 20 + 9  # a cell near the middle
    cell = x[[corner, corner + 1, corner + 20, corner + 21]].mean(axis=0)
    spike = rs.Mesh(*_cone((cell[0], cell[2])), friction=0.5)
    sim = rs.Simulation(cloth, dt=1.0 / 600.0, contacts=[spike, rs.Ground(0.0)], drag=0.3)
    contact_set = sim._contact_set
    assert len(contact_set.tips) == 1 and len(contact_set.sheet_triangles) == len(cloth.triangles)
    if not with_tips:
        contact_set.tips = contact_set.tips[:0]
    sim.step(1200)
    p = sim.positions
    assert np.isfinite(p).all()
    heights = _surface_heights_over(p, np.asarray(cloth.triangles), cell[0], cell[2])
    assert len(heights) > 0
    if with_tips:
        gap = contact_set.colliders[0, 9]  # P0: the contact distance
        assert heights.min() > HEIGHT + 0.9 * gap
        assert p[:, 1].max() == pytest.approx(heights.max(), abs=0.02)  # tented on the point
    else:
        assert heights.max() < HEIGHT - 0.02  # pierced: the point stands out of the cloth


@pytest.mark.parametrize("speed", [0.5, 5.0])
def test_a_spike_rising_into_a_cloth_lifts_it_on_its_point(speed):
    """A cone moving up at 0.5 or 5 m/s (8 mm a step: more than the contact distance, so
    the tip goes through a triangle within one step) into a cloth pinned at its four
    corners, its apex under the middle of a cell: the tip is put back on the side it
    came from, every step, and carries the cloth up on its point (the collider's own
    velocity); with the tips taken out it goes through."""
    for with_tips in (True, False):
        cloth = rs.cloth(20, 20, SPACING, plane="xz", pins="four-corners",
                         origin=(0.0, 0.6, 0.0))
        x = cloth.positions3()
        corner = 9 * 20 + 9
        cell = x[[corner, corner + 1, corner + 20, corner + 21]].mean(axis=0)
        vertices, triangles = _cone((cell[0], cell[2]))
        spike = rs.Mesh(vertices - [0.0, 0.3, 0.0], triangles, friction=0.5,
                        velocity=(0.0, speed, 0.0))
        sim = rs.Simulation(cloth, dt=1.0 / 600.0, contacts=[spike], drag=0.3)
        if not with_tips:
            sim._contact_set.tips = sim._contact_set.tips[:0]
        sim.step(round(0.6 / speed * 600))
        tip = HEIGHT - 0.3 + speed * sim.time  # 0.7 m: 10 cm above the pinned corners
        heights = _surface_heights_over(sim.positions, np.asarray(cloth.triangles), cell[0],
                                        cell[2])
        assert np.isfinite(sim.positions).all() and len(heights) > 0
        if with_tips:
            assert heights.min() > tip + 0.9 * sim._contact_set.colliders[0, P0]
        else:
            assert heights.max() < tip - 0.05


def test_the_spikes_scene_rests_its_cloth_on_all_five_points():
    """The spikes scene: a 3 cm cloth dropped on five cones too wide for Mesh.thinnest
    (only their tips stop it) settles on all five points, a triangle over each apex
    within a centimetre of it, none below it, and stays there: after 4 s no particle
    within 5 cm of a point moves more than 2 mm in 100 steps (0.1 s)."""
    scene = rs.load("spikes")
    sim = scene.simulation()
    spikes = [c for c in sim.contacts if isinstance(c, rs.Mesh)]
    assert len(spikes) == 5 and all(len(s.tips) == 1 for s in spikes)
    assert len(sim._contact_set.sheet_segments) == 0  # not thin: the tips alone hold it
    triangles = np.asarray(sim.system.triangles)
    for _ in range(2):
        sim.step(2000)
        assert np.isfinite(sim.positions).all()
        for spike in spikes:
            apex = np.asarray(spike.center) + spike.tips[0]
            heights = _surface_heights_over(sim.positions, triangles, apex[0], apex[2])
            assert len(heights) > 0 and apex[1] < heights.min() < apex[1] + 0.01
    apexes = np.array([np.asarray(spike.center) + spike.tips[0] for spike in spikes])
    near = np.linalg.norm(sim.positions[:, None] - apexes[None], axis=2).min(axis=1) < 0.05
    before = sim.positions.copy()
    sim.step(100)
    assert near.sum() >= 5 * 8  # about 9 particles around each point
    assert np.abs(sim.positions - before)[near].max() < 2e-3  # at rest on the points
