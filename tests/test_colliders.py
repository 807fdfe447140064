"""Boxes, capsules and triangle meshes as colliders: containment, swept tests against
tunnelling, moving colliders whose surface velocity carries friction, mesh files and
scene tables, and the errors of bad parameters."""

from __future__ import annotations

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine.colliders import posed_at, rotation_matrix
from ropesim.io.scenes import parse_value

trimesh = pytest.importorskip("trimesh")

DT = 1e-3


def _particles(positions, velocities=None):
    """Free particles with no springs between them (a spring system of isolated points)."""
    positions = np.asarray(positions, dtype=float)
    system = rs.explicit(positions, np.zeros((0, 2), dtype=int))
    if velocities is not None:
        system.velocities[:] = velocities
    return system


def _octahedron(radius):
    """A closed convex mesh: vertices, triangles (outward winding) and its face planes."""
    v = radius * np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]],
                          dtype=float)
    t = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4],
                  [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    return v, t


def _inside_convex(points, vertices, triangles, tolerance):
    """Which points are deeper than `tolerance` (m) inside a convex mesh (behind every
    face plane)."""
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    normals = np.cross(b - a, c - a)
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    centre = vertices.mean(axis=0)
    normals *= np.sign(np.einsum("ij,ij->i", a - centre, normals))[:, None]  # outward
    depth = np.einsum("pj,fj->pf", points, normals) - np.einsum("fj,fj->f", a, normals)
    return np.all(depth < -tolerance, axis=1)


def _inside_box(points, box, tolerance):
    local = (points - np.asarray(box.center)) @ box.matrix()
    return np.all(np.abs(local) < 0.5 * np.asarray(box.size) - tolerance, axis=1)


def _capsule_distance(points, capsule):
    a, b = np.asarray(capsule.start), np.asarray(capsule.end)
    ab = b - a
    s = np.clip((points - a) @ ab / (ab @ ab), 0.0, 1.0)
    return np.linalg.norm(points - (a + s[:, None] * ab), axis=1)


# --- containment: a cloth dropped on each collider ---------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cloth_dropped_on_box_capsule_and_closed_mesh_never_inside_them(dtype):
    vertices, triangles = _octahedron(0.25)
    box = rs.Box(center=(-0.55, -0.2, 0.0), size=(0.4, 0.3, 0.5), rotation=(10, 35, 5))
    capsule = rs.Capsule((0.0, -0.2, -0.3), (0.1, -0.15, 0.3), 0.12)
    mesh = rs.Mesh(vertices, triangles, center=(0.55, -0.2, 0.0), rotation=(0, 20, 0))
    assert mesh.closed
    cloth = rs.cloth(40, 16, spacing=0.04, plane="xz", pins="none", origin=(0.0, 0.3, 0.0),
                     stiffness=800.0, mass=0.01)
    sim = rs.Simulation(cloth, dt=DT, dtype=dtype, contacts=[rs.Ground(-0.6), box, capsule, mesh])
    world = (vertices @ mesh.matrix().T) + np.asarray(mesh.center)
    touched = np.zeros(sim.n_particles, bool)
    tol = 1e-6 if dtype == np.float64 else 1e-5
    for _ in range(60):
        sim.step(10)
        x = sim.positions.astype(float)
        assert not _inside_box(x, box, tol).any()
        assert (_capsule_distance(x, capsule) > capsule.radius - tol).all()
        assert not _inside_convex(x, world, triangles, tol).any()
        touched |= _inside_box(x, box, -0.01) | (_capsule_distance(x, capsule) < 0.13)
        touched |= _inside_convex(x, world, triangles, -0.01)
    assert touched.sum() > 50  # the cloth did land on them


def test_cloth_on_a_box_comes_to_rest_on_its_top_face():
    box = rs.Box(center=(0.0, -0.5, 0.0), size=(1.0, 1.0, 1.0))
    cloth = rs.cloth(10, 10, spacing=0.05, plane="xz", pins="none", origin=(0.0, 0.2, 0.0))
    sim = rs.Simulation(cloth, dt=DT, contacts=[box], drag=1.0)
    sim.step(2000)
    np.testing.assert_allclose(sim.positions[:, 1], 1e-5, atol=1e-4)  # the face plus the skin
    assert np.abs(sim.velocities).max() < 1e-3


# --- no tunnelling ------------------------------------------------------------------------
@pytest.mark.parametrize("integrator", list(rs.INTEGRATORS))
def test_a_particle_at_100_m_per_s_does_not_pass_a_1_cm_box(integrator):
    # 10 cm a step against a 1 cm wall: without the swept test it would jump over it
    box = rs.Box(center=(0.5, 0.0, 0.0), size=(0.01, 1.0, 1.0))
    system = _particles([[0.0, 0.0, 0.0], [0.0, 0.3, 0.1]], [[100.0, 0.0, 0.0]] * 2)
    sim = rs.Simulation(system, dt=DT, gravity=(0, 0, 0), integrator=integrator, contacts=[box])
    sim.step(20)
    assert (sim.positions[:, 0] < 0.495).all()
    assert (sim.velocities[:, 0] <= 1e-9).all()  # the normal speed was taken


@pytest.mark.parametrize("rotation", [(0, 0, 0), (0, 45, 0), (30, 60, 10)])
def test_a_fast_particle_is_stopped_on_the_side_it_came_from_of_a_turned_thin_box(rotation):
    box = rs.Box(center=(0.0, 0.0, 0.0), size=(0.01, 2.0, 2.0), rotation=rotation)
    normal = rotation_matrix(rotation)[:, 0]
    start = -0.3 * normal
    system = _particles([start], [120.0 * normal])
    sim = rs.Simulation(system, dt=DT, gravity=(0, 0, 0), contacts=[box])
    sim.step(10)
    assert sim.positions[0] @ normal < -0.005


def test_a_fast_particle_does_not_pass_a_thin_capsule():
    # 15 cm a step against an 8 mm rod, slightly off its axis; friction 10 stops it there
    capsule = rs.Capsule((0.0, -1.0, 0.0), (0.0, 1.0, 0.0), 0.004, friction=10.0)
    system = _particles([[-0.3, 0.0, 0.001]], [[150.0, 0.0, 0.0]])
    sim = rs.Simulation(system, dt=DT, gravity=(0, 0, 0), contacts=[capsule])
    sim.step(10)
    x = sim.positions[0]
    assert x[0] < -0.003
    assert np.hypot(x[0], x[2]) == pytest.approx(0.004 + 1e-5, abs=1e-9)


@pytest.mark.parametrize("integrator", ["symplectic_euler", "verlet", "xpbd"])
def test_a_particle_at_100_m_per_s_does_not_pass_a_1_cm_sphere(integrator):
    # 10 cm a step against a ball 2 cm across: without the swept test it lands beyond it;
    # friction 10 stops the one that hits off the centre line where it hits
    ball = rs.Sphere(center=(0.5, 0.0, 0.0), radius=0.01, friction=10.0)
    system = _particles([[0.03, 0.0, 0.0], [0.03, 0.004, -0.003]], [[100.0, 0.0, 0.0]] * 2)
    sim = rs.Simulation(system, dt=DT, gravity=(0, 0, 0), integrator=integrator,
                        contacts=[ball])
    sim.step(20)
    assert (sim.positions[:, 0] < 0.5).all()  # on the side it came from
    distance = np.linalg.norm(sim.positions - np.asarray(ball.center), axis=1)
    np.testing.assert_allclose(distance, 0.01, atol=1e-6)  # on its surface
    assert np.abs(sim.velocities).max() <= 1e-9  # the speed into it was taken


def test_a_particle_at_100_m_per_s_into_the_ground_stays_on_it():
    # the ground is a half-space: a step that ends below it is put back on it
    system = _particles([[0.0, 0.05, 0.0]], [[3.0, -100.0, 0.0]])
    sim = rs.Simulation(system, dt=DT, gravity=(0, 0, 0), contacts=[rs.Ground(0.0, 0.0)])
    sim.step(5)
    assert sim.positions[0, 1] == 0.0
    assert sim.velocities[0, 1] == 0.0 and sim.velocities[0, 0] == pytest.approx(3.0)


# --- moves from Python: motion over the next step -----------------------------------------
def test_a_box_moved_by_move_collider_each_step_drags_a_cloth_lying_on_it():
    # Coulomb friction accelerates the cloth at up to friction g until it moves with the box
    box = rs.Box(center=(0.0, -0.5, 0.0), size=(3.0, 1.0, 3.0), friction=1.0)
    cloth = rs.cloth(8, 8, 0.05, plane="xz", pins="none", origin=(0.0, 0.002, 0.0))
    sim = rs.Simulation(cloth, dt=DT, contacts=[box])
    sim.step(200)  # at rest on the top face
    speed = 0.4  # m/s
    start = sim.positions.copy()
    for k in range(1, 401):
        sim.move_collider(0, center=(speed * k * DT, -0.5, 0.0))
        sim.step(1)
    np.testing.assert_allclose(sim.velocities[:, 0], speed, rtol=0.02)
    assert np.abs(sim.velocities[:, 2]).max() < 0.01 * speed
    # it reaches the box's speed after speed / (friction g) s and rides along with it
    shift = sim.positions[:, 0] - start[:, 0]
    assert shift.min() > speed * (0.4 - speed / 9.81) - 0.01
    assert (sim.positions[:, 1] > -1e-4).all()


def test_a_box_moved_10_cm_in_one_step_across_a_resting_particle_pushes_it():
    # the box (4 cm wide) jumps from x = -5 cm to x = +5 cm over a particle at x = 0; as a
    # teleport it would land beyond the particle, which would stay where it was
    box = rs.Box(center=(-0.05, 0.0, 0.0), size=(0.04, 0.2, 0.2), friction=0.0)
    sim = rs.Simulation(_particles([[0.0, 0.0, 0.0]]), dt=DT, gravity=(0, 0, 0),
                        contacts=[box])
    sim.move_collider(0, center=(0.05, 0.0, 0.0))
    sim.step(1)
    assert sim.positions[0, 0] >= 0.07  # on the box's leading face, not inside or behind
    assert sim.velocities[0, 0] == pytest.approx(0.1 / DT)  # the face's speed, 100 m/s
    sim.step(1)  # the box stands still again: the particle flies on ahead of it
    assert sim.positions[0, 0] > 0.07 + 0.09


def test_a_box_turned_by_move_collider_carries_a_particle_at_its_surface_speed():
    # a turntable turned about its vertical axis a little each step: friction brings a
    # particle resting on it 0.3 m from the axis to the surface speed, omega x r
    table = rs.Box(center=(0.0, -0.05, 0.0), size=(2.0, 0.1, 2.0), friction=1.0)
    sim = rs.Simulation(_particles([[0.3, 1e-4, 0.0]]), dt=DT, contacts=[table])
    sim.step(50)
    omega = 1.0  # rad/s about +y
    for k in range(1, 301):
        sim.move_collider(0, rotation=(0.0, np.degrees(omega * k * DT), 0.0))
        sim.step(1)
    surface = np.cross([0.0, omega, 0.0], sim.positions[0])
    np.testing.assert_allclose(sim.velocities[0], surface, atol=0.02 * omega * 0.3)
    assert np.linalg.norm(sim.positions[0]) == pytest.approx(0.3, abs=0.01)


# --- rope segments against thin colliders -------------------------------------------------
def _segment_points(positions, samples=101):
    s = np.linspace(0.0, 1.0, samples)[:, None, None]
    return (positions[:-1][None] * (1 - s) + positions[1:][None] * s).reshape(-1, 3)


@pytest.mark.parametrize("kind", ["capsule", "box-edge"])
def test_a_sparse_rope_dropped_on_a_thin_pole_stays_on_top_of_it(kind):
    # 10 cm between particles, a pole 2 cm thick across the rope's middle, midway between
    # two particles: as particles only, the rope would fall past it to the ground
    if kind == "capsule":
        pole = rs.Capsule((0.55, 1.0, -0.3), (0.55, 1.0, 0.3), 0.01, friction=0.5)
    else:  # a square bar turned 45 degrees: an edge up
        pole = rs.Box(center=(0.55, 1.0, 0.0), size=(0.02, 0.02, 0.6), rotation=(0, 0, 45),
                      friction=0.5)
    rope = rs.rope(12, 1.1, pins="none", origin=(0.0, 1.05, 0.0))
    sim = rs.Simulation(rope, dt=DT, contacts=[rs.Ground(0.0), pole])
    for _ in range(20):
        sim.step(100)
        points = _segment_points(sim.positions)
        if kind == "capsule":
            assert _capsule_distance(points, pole).min() > 0.01 - 1e-3
        else:
            assert not _inside_box(points, pole, 1e-3).any()
    # it hangs from the pole, both halves (fallen off, it would lie on the ground)
    assert sim.positions[:, 1].min() > 0.3
    assert sim.positions[:, 1].max() > 1.0


def test_rope_segments_are_tested_and_a_cloth_has_none():
    rope = rs.rope(12, 1.1, pins="none", bend=True)
    pole = rs.Capsule((0.5, -1.0, 0.0), (0.5, 1.0, 0.0), 0.01)
    sim = rs.Simulation(rope, dt=DT, contacts=[pole])
    # the structural springs only, not the bend springs over two segments
    assert sorted(map(tuple, sim._contact_set.segments.tolist())) == [
        (i, i + 1) for i in range(11)]
    cloth = rs.Simulation(rs.cloth(4, 4, 0.1), dt=DT, contacts=[pole])
    assert len(cloth._contact_set.segments) == 0
    # a cloth's edges instead, against a pole that fits between its particles only
    sheet = cloth._contact_set
    assert len(sheet.sheet_segments) == 33  # 12 + 12 grid edges, 9 diagonals
    assert sheet.sheet_ranges.tolist() == [[0, 33]]
    thick = rs.Capsule((0.5, -1.0, 0.0), (0.5, 1.0, 0.0), 0.2)
    thick_set = rs.Simulation(rs.cloth(4, 4, 0.1), dt=DT, contacts=[thick])._contact_set
    assert len(thick_set.sheet_segments) == 0 and thick_set.sheet_ranges.tolist() == [[0, 0]]


@pytest.mark.parametrize("collider", [
    rs.Capsule((-1.0, 0.0, 0.0), (1.0, 0.0, 0.0), 0.01),
    rs.Box((0.0, -0.1, 0.0), (2.0, 0.2, 0.01), rotation=(0.0, 0.0, 0.0))])
def test_a_cloth_hangs_on_a_rod_or_a_plank_thinner_than_its_spacing(collider):
    """A 20 x 20 cloth (spacing 5 cm) dropped flat across a 2 cm rod (or a 1 cm plank on
    its edge) that lies midway between two of its rows: its particles alone would let
    it through (it fell to y = -19 m before its edges met thin colliders); it hangs over
    it, and no edge passes through it."""
    cloth = rs.cloth(20, 20, 0.05, plane="xz", pins="none", origin=(0.0, 0.1, 0.0))
    sim = rs.Simulation(cloth, dt=1.0 / 600.0, contacts=[collider])
    sim.step(1200)
    y = sim.positions[:, 1]
    assert np.isfinite(sim.positions).all()
    assert y.max() > -0.01 and y.min() > -0.7  # hanging over it, both halves down
    x = sim.positions
    edges = sim._contact_set.sheet_segments
    a, b = x[edges[:, 0]], x[edges[:, 1]]
    samples = a[:, None, :] + np.linspace(0.0, 1.0, 21)[None, :, None] * (b - a)[:, None, :]
    points = samples.reshape(-1, 3)
    if isinstance(collider, rs.Capsule):
        inside = np.hypot(points[:, 1], points[:, 2]) < 0.01 - 1e-3
    else:
        inside = _inside_box(points, collider, 1e-3)
    assert not inside.any()


def test_a_cloth_threaded_onto_a_blade_keeps_the_edges_through_it():
    """The edges that a thin collider already passes through when it is added (a cloth
    threaded onto a blade, the windmill scene) are left out of its segments; all others
    stay in, and the cloth is not torn off it."""
    cloth = rs.cloth(10, 10, 0.05, plane="xz", pins="none", origin=(0.0, 0.5, 0.0))
    blade = rs.Box((0.0, 0.5, 0.0), (0.9, 0.3, 0.02))  # between the rows at z = -+0.025
    sim = rs.Simulation(cloth, dt=1e-3, contacts=[blade])
    contact_set = sim._contact_set
    tri = np.sort(np.asarray(cloth.triangles), axis=1)
    every = {tuple(e) for t in tri.tolist() for e in ((t[0], t[1]), (t[1], t[2]), (t[0], t[2]))}
    assert len(every) == 9 * 10 * 2 + 81  # grid edges and one diagonal per cell
    z = sim.positions[:, 2]
    crossing = {(i, j) for i, j in every if z[i] * z[j] < 0.0}
    assert len(crossing) == 10 + 9  # the grid edges and diagonals across the blade
    kept = set(map(tuple, contact_set.sheet_segments.tolist()))
    assert kept == every - crossing
    sim.step(100)
    assert np.isfinite(sim.positions).all() and sim.max_strain() < 0.2


def _sheet(half=1.0, n=4):
    """An open square sheet in the plane y = 0: (vertices, triangles)."""
    g = np.linspace(-half, half, n + 1)
    xx, zz = np.meshgrid(g, g)
    vertices = np.column_stack([xx.ravel(), np.zeros(xx.size), zz.ravel()])
    tris = []
    for i in range(n):
        for j in range(n):
            a = i * (n + 1) + j
            tris += [[a, a + 1, a + n + 2], [a, a + n + 2, a + n + 1]]
    return vertices, np.array(tris)


def test_a_thin_open_mesh_is_not_tunnelled_from_either_side():
    vertices, triangles = _sheet()
    sheet = rs.Mesh(vertices, triangles, thickness=0.002)
    assert not sheet.closed
    rng = np.random.default_rng(3)
    above = np.column_stack([rng.uniform(-0.9, 0.9, 50), np.full(50, 0.2),
                             rng.uniform(-0.9, 0.9, 50)])
    below = above * [1, -1, 1]
    # 80 m/s: 8 cm a step against a 2 mm sheet; some hit edges and vertices of triangles
    velocities = np.vstack([[[0, -80.0, 0]] * 50, [[0, 80.0, 0]] * 50])
    sim = rs.Simulation(_particles(np.vstack([above, below]), velocities), dt=DT,
                        gravity=(0, 0, 0), contacts=[sheet])
    sim.step(10)
    y = sim.positions[:, 1]
    assert (y[:50] >= 0.001 - 1e-9).all() and (y[50:] <= -0.001 + 1e-9).all()


def test_a_cloth_dropped_fast_on_an_open_sheet_stays_above_it():
    vertices, triangles = _sheet(half=0.6, n=3)
    sheet = rs.Mesh(vertices, triangles, thickness=0.004, rotation=(0, 15, 0))
    cloth = rs.cloth(12, 12, spacing=0.04, plane="xz", pins="none", origin=(0.0, 0.3, 0.0))
    cloth.velocities[:] = (0.0, -30.0, 0.0)
    sim = rs.Simulation(cloth, dt=DT, contacts=[sheet])
    sim.step(300)
    assert (sim.positions[:, 1] > 0.0).all()


def test_closed_mesh_pushes_out_whatever_the_triangle_winding():
    vertices, triangles = _octahedron(0.3)
    for tris in (triangles, triangles[:, ::-1]):
        mesh = rs.Mesh(vertices, tris, thickness=0.0)
        inside = [[0.05, 0.02, 0.01], [-0.1, 0.05, 0.02], [0.0, -0.12, 0.03]]
        sim = rs.Simulation(_particles(inside), dt=DT, gravity=(0, 0, 0), contacts=[mesh])
        sim.step(1)
        assert not _inside_convex(sim.positions, vertices, triangles, 1e-9).any()


# --- moving colliders ---------------------------------------------------------------------
def test_a_spinning_capsule_carries_a_particle_on_it_at_its_surface_speed():
    # spin w about x; the surface at the top moves at w x r = (0, 0, w r)
    w_deg, radius = 120.0, 0.1
    capsule = rs.Capsule((-0.5, 0.0, 0.0), (0.5, 0.0, 0.0), radius, friction=10.0,
                         spin=(w_deg, 0.0, 0.0))
    sim = rs.Simulation(_particles([[0.0, radius + 1e-4, 0.0]]), dt=DT, contacts=[capsule])
    sim.step(20)  # 2.4 degrees of turn
    surface_speed = np.radians(w_deg) * radius
    x, v = sim.positions[0], sim.velocities[0]
    angle = np.arctan2(x[2], x[1])
    np.testing.assert_allclose(v[2], surface_speed * np.cos(angle), rtol=0.05)
    np.testing.assert_allclose(np.linalg.norm(x[1:]), radius + 1e-5, atol=2e-5)


def test_a_spinning_capsule_drags_a_draped_cloth_and_a_still_one_does_not():
    speeds = {}
    for spin in (0.0, 180.0):
        capsule = rs.Capsule((-0.4, 0.0, 0.0), (0.4, 0.0, 0.0), 0.1, friction=2.0,
                             spin=(spin, 0.0, 0.0))
        cloth = rs.cloth(10, 20, spacing=0.03, plane="xz", pins="none",
                         origin=(0.0, 0.12, 0.0), stiffness=400.0, mass=0.005)
        sim = rs.Simulation(cloth, dt=DT, contacts=[capsule])
        sim.step(150)
        x, v = sim.positions, sim.velocities
        r = np.hypot(x[:, 1], x[:, 2])
        on = r < 0.1 + 2e-3
        assert on.sum() > 10
        # tangential speed about the axis, positive in the spin's sense
        tangential = (x[on, 1] * v[on, 2] - x[on, 2] * v[on, 1]) / r[on]
        speeds[spin] = float(np.median(tangential))
    assert abs(speeds[0.0]) < 0.02
    surface = np.radians(180.0) * 0.1
    assert 0.5 * surface < speeds[180.0] < 1.2 * surface


def test_a_moving_box_drags_a_particle_resting_on_it():
    box = rs.Box(center=(0.0, -0.5, 0.0), size=(4.0, 1.0, 4.0), velocity=(0.5, 0.0, 0.0),
                 friction=1.0)
    sim = rs.Simulation(_particles([[0.0, 1e-4, 0.0]]), dt=DT, contacts=[box])
    sim.step(200)
    np.testing.assert_allclose(sim.velocities[0], [0.5, 0.0, 0.0], atol=1e-6)
    assert abs(sim.positions[0, 1]) < 1e-3


def test_a_box_rising_fast_lifts_particles_instead_of_passing_them():
    # the box moves 5 cm a step up through particles resting 1 cm above it
    box = rs.Box(center=(0.0, -0.5, 0.0), size=(1.0, 1.0, 1.0), velocity=(0.0, 50.0, 0.0))
    system = _particles([[0.1, 0.01, 0.1], [-0.2, 0.01, 0.3]])
    sim = rs.Simulation(system, dt=DT, gravity=(0, 0, 0), contacts=[box])
    for _ in range(10):
        sim.step(1)
        top = posed_at(box, sim.time).center[1] + 0.5
        assert (sim.positions[:, 1] >= top).all()
    assert (sim.velocities[:, 1] > 49.0).all()


def test_move_collider_sets_the_pose_and_keeps_the_motion_so_far():
    capsule = rs.Capsule((-0.5, 0.0, 0.0), (0.5, 0.0, 0.0), 0.1, spin=(0.0, 90.0, 0.0))
    box = rs.Box(center=(0, 0, 0), size=(0.2, 0.2, 0.2))
    sim = rs.Simulation(_particles([[5.0, 5.0, 5.0]]), dt=DT, contacts=[rs.Ground(-9), capsule,
                                                                          box])
    sim.step(1000)  # a quarter turn about y: the axis now along -z... or +z
    turned = posed_at(capsule, sim.time)
    np.testing.assert_allclose(np.abs(turned.start), [0.0, 0.0, 0.5], atol=1e-9)
    sim.move_collider(1, velocity=(1.0, 0.0, 0.0))
    assert sim.contacts[1].pose_time == pytest.approx(1.0)
    np.testing.assert_allclose(sim.contacts[1].start, turned.start, atol=1e-12)
    sim.move_collider(2, center=(0.0, -1.0, 0.0), rotation=(0, 0, 45))
    assert sim.contacts[2].center == (0.0, -1.0, 0.0)
    # the moved box pushes a particle that was inside its new place out of it
    sim.positions[0] = (0.0, -1.0 + 0.05, 0.01)
    sim.step(1)
    assert not _inside_box(sim.positions, sim.contacts[2], 0.0).any()
    with pytest.raises(ValueError, match="move_collider: unknown field.*radius"):
        sim.move_collider(2, radius=3.0)
    with pytest.raises(TypeError, match="only Box, Capsule and Mesh"):
        sim.move_collider(0, center=(0, 0, 0))
    with pytest.raises(ValueError, match="collider index"):
        sim.move_collider(3, center=(0, 0, 0))
    with pytest.raises(ValueError, match="box.center"):
        sim.move_collider(2, center=(0.0, np.nan, 0.0))


# --- mesh files ---------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".obj", ".stl", ".ply", ".gltf", ".glb"])
def test_mesh_from_file_reads_every_format(tmp_path, suffix):
    shape = trimesh.creation.box(extents=(0.4, 0.2, 0.6))
    path = tmp_path / f"box{suffix}"
    shape.export(path)
    mesh = rs.Mesh.from_file(path, scale=2.0, friction=0.2)
    assert len(mesh.triangles) == 12 and mesh.closed
    np.testing.assert_allclose(np.ptp(mesh.vertices, axis=0), [0.8, 0.4, 1.2], atol=1e-6)
    sim = rs.Simulation(_particles([[0.05, 0.3, 0.02]]), dt=DT, contacts=[mesh])
    sim.step(400)
    assert sim.positions[0, 1] == pytest.approx(0.2 + 0.005, abs=1e-4)  # top + thickness / 2


def test_shipped_mesh_is_closed_and_loads():
    from ropesim.io.paths import resource_dir

    mesh = rs.Mesh.from_file(resource_dir() / "meshes" / "torus-knot.obj")
    assert mesh.closed and len(mesh.triangles) > 500


# --- errors -------------------------------------------------------------------------------
@pytest.mark.parametrize("make, field", [
    (lambda: rs.Box(size=(1.0, 0.0, 1.0)), "box.size"),
    (lambda: rs.Box(size=(1.0, 1.0)), "box.size"),
    (lambda: rs.Box(center=(0.0, np.inf, 0.0)), "box.center"),
    (lambda: rs.Box(rotation=(np.nan, 0, 0)), "box.rotation"),
    (lambda: rs.Box(friction=11.0), "box.friction"),
    (lambda: rs.Box(velocity=(1.0, "a", 0)), "box.velocity"),
    (lambda: rs.Capsule(radius=0.0), "capsule.radius"),
    (lambda: rs.Capsule(start=(np.nan, 0, 0)), "capsule.start"),
    (lambda: rs.Capsule(spin=(0, 0, np.inf)), "capsule.spin"),
    (lambda: rs.Mesh(np.zeros((3, 3)), np.zeros((0, 3), int)), "mesh.triangles"),
    (lambda: rs.Mesh(np.eye(3), [[0, 1, 5]]), "mesh.triangles"),
    (lambda: rs.Mesh(np.zeros((3, 3)), [[0, 1, 2]]), "mesh.triangles"),
    (lambda: rs.Mesh([[0, 0, np.nan], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]), "mesh.vertices"),
    (lambda: rs.Mesh(np.eye(3), [[0, 1, 2]], thickness=-1.0), "mesh.thickness"),
    (lambda: rs.Mesh(np.eye(3), [[0, 1, 2]], center=(0, 0, np.nan)), "mesh.center"),
])
def test_bad_collider_parameters_name_the_field(make, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        make()


def test_bad_mesh_files_name_the_path(tmp_path):
    empty = tmp_path / "empty.obj"
    empty.write_bytes(b"")
    garbage = tmp_path / "garbage.stl"
    garbage.write_bytes(b"\x00\x01 this is not an STL file" * 3)
    no_faces = tmp_path / "points.obj"
    no_faces.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    for path, what in [(tmp_path / "missing.obj", "no such mesh file"), (empty, "is empty"),
                       (garbage, "mesh.path"), (no_faces, "no triangles"),
                       (tmp_path / "x.fbx", "unknown file type")]:
        with pytest.raises(ValueError, match=f"mesh.path.*{what}|{what}"):
            rs.Mesh.from_file(path)
    with pytest.raises(TypeError, match="mesh.path"):
        rs.Mesh.from_file(3)
    with pytest.raises(ValueError, match="mesh.scale"):
        rs.Mesh.from_file(no_faces, scale=0.0)


def test_contacts_refuse_other_objects():
    with pytest.raises(ValueError, match="Box, Capsule or Mesh"):
        rs.Simulation(rs.rope(3, 1.0), contacts=[rs.Ground(), "box"])


# --- scene files --------------------------------------------------------------------------
def _scene_text(mesh_path):
    return f'''
builder = "cloth"
[cloth]
nx = 6
ny = 6
spacing = 0.05
plane = "xz"
pins = "none"
[simulation]
dt = 0.001
[[boxes]]
center = [0.0, -0.3, 0.0]
size = [0.5, 0.2, 0.5]
rotation = [0.0, 30.0, 0.0]
friction = 0.8
[[capsules]]
start = [-0.3, -0.5, 0.0]
end = [0.3, -0.5, 0.0]
radius = 0.05
spin = [90.0, 0.0, 0.0]
[[boxes]]
center = [0.0, 0.0, 0.0]
size = [0.1, 0.1, 0.1]
keyframes = [[0.0, 0.0, -2.0, 0.0], [1.0, 0.5, -2.0, 0.0]]
[[meshes]]
path = "{mesh_path}"
center = [0.0, -1.0, 0.0]
scale = 0.5
thickness = 0.004
velocity = [0.0, 0.0, 0.1]
'''


def test_scene_tables_make_colliders_and_mesh_paths_are_relative_to_the_scene(tmp_path):
    trimesh.creation.box(extents=(1.0, 1.0, 1.0)).export(tmp_path / "block.stl")
    path = tmp_path / "scene.toml"
    path.write_text(_scene_text("block.stl"))
    scene = rs.load(path)
    box, moving, capsule, mesh = scene.contacts()
    assert moving.keyframes == ((0.0, 0.0, -2.0, 0.0), (1.0, 0.5, -2.0, 0.0))
    assert isinstance(box, rs.Box) and box.rotation == (0.0, 30.0, 0.0) and box.friction == 0.8
    assert isinstance(capsule, rs.Capsule) and capsule.spin == (90.0, 0.0, 0.0)
    assert isinstance(mesh, rs.Mesh) and mesh.thickness == 0.004
    np.testing.assert_allclose(np.ptp(mesh.vertices, axis=0), 0.5)
    sim = scene.simulation()
    sim.step(50)
    saved = tmp_path / "again.toml"
    scene.save(saved)
    assert rs.load(saved).to_dict() == scene.to_dict()


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("size = [0.5, 0.2, 0.5]", "size = [0.5, 0.0, 0.5]"), "box.size"),
    (lambda t: t.replace("radius = 0.05", "radius = -1.0"), "capsules.radius"),
    (lambda t: t.replace('path = "block.stl"', 'path = "nowhere.obj"'), "no such mesh file"),
    (lambda t: t.replace("friction = 0.8", "friction = 20.0"), "boxes.friction"),
    (lambda t: t.replace("spin = [90.0, 0.0, 0.0]", "spin = [90.0, 0.0]"), "capsules.spin"),
    (lambda t: t.replace("[[capsules]]", "[[capsules]]\nwidth = 3"), "capsules.width"),
    (lambda t: t.replace("[[boxes]]", "boxes = 3\n[[other]]"), "boxes"),
])
def test_bad_scene_colliders_name_the_key(tmp_path, edit, message):
    trimesh.creation.box(extents=(1.0, 1.0, 1.0)).export(tmp_path / "block.stl")
    path = tmp_path / "scene.toml"
    path.write_text(edit(_scene_text("block.stl")))
    with pytest.raises(rs.SceneError, match=message):
        rs.load(path)


# --- viewer: picking, Ctrl+drag, drawing ----------------------------------------------------
def test_a_ray_picks_the_nearest_collider_it_hits():
    from ropesim.render.collider_picking import ColliderPicker

    vertices, triangles = _octahedron(0.2)
    contacts = [rs.Ground(), rs.Box(center=(0, 0, -2.0), size=(0.5, 0.5, 0.5)),
                rs.Capsule((-1, 0, 0), (1, 0, 0), 0.1), rs.Mesh(vertices, triangles,
                                                                center=(3, 0, 0))]
    picker = ColliderPicker()
    index, point = picker.pick((0, 0, 5), (0, 0, -1), contacts, 0.0)
    assert index == 2 and point[2] == pytest.approx(0.0, abs=1e-9)  # the capsule's axis
    index, point = picker.pick((0.2, 0.2, 5), (0, 0, -1), contacts, 0.0)  # misses the rod
    assert index == 1
    assert point[2] == pytest.approx(-1.75)  # the box's front face
    index, point = picker.pick((3, 5, 0), (0, -1, 0), contacts, 0.0)
    assert index == 3 and point[1] == pytest.approx(0.2)
    assert picker.pick((10, 10, 10), (1, 0, 0), contacts, 0.0) is None


def test_ctrl_drag_moves_a_collider_in_the_camera_plane_and_the_cloth_follows():
    from ropesim.app.controller import ViewerController
    from ropesim.app.hotkeys import LEFT
    from ropesim.io.scenes import scene_from_dict

    scene = scene_from_dict({
        "builder": "cloth",
        "cloth": {"nx": 8, "ny": 8, "spacing": 0.05, "plane": "xz", "pins": "none",
                  "origin": [0.0, 0.05, 0.0]},
        "simulation": {"dt": 0.001, "substeps": 16},
        "boxes": [{"center": [0.0, -0.2, 0.0], "size": [0.6, 0.4, 0.6]}],
    }, "drag-box")
    c = ViewerController(scene, (800, 600), clock=lambda: 0.0)
    c.sim.step(300)  # the cloth lies on the box
    top = np.array([[0.1, 0.0, 0.1]])
    x, y = c.camera.project(top, *c.view_size)[0][0]
    before = np.asarray(c.sim.contacts[0].center)
    c.press(x, y, LEFT, ctrl=True)
    assert c.mouse.interaction.kind == "collider" and c.sim.grabbed is None
    for k in range(1, 11):
        c.drag(x, y - 6.0 * k)  # up the screen
        c.sim.step(16)
    c.release(x, y - 60.0, LEFT)
    moved = np.asarray(c.sim.contacts[0].center) - before
    assert moved[1] > 0.05  # up, in the plane facing the camera
    assert abs(moved @ c.camera.forward) < 1e-9
    assert c.sim.positions[:, 1].min() > moved[1] - 1e-4  # the cloth was lifted with it
    c.press(5.0, 5.0, LEFT, ctrl=True)  # Ctrl on empty space orbits as before
    assert c.mouse.interaction.kind == "orbit"


def test_a_ctrl_drag_is_motion_over_the_next_step_that_lifts_the_cloth_at_its_speed():
    from ropesim.app.controller import ViewerController
    from ropesim.app.hotkeys import LEFT
    from ropesim.io.scenes import scene_from_dict

    scene = scene_from_dict({
        "builder": "cloth",
        "cloth": {"nx": 6, "ny": 6, "spacing": 0.05, "plane": "xz", "pins": "none",
                  "origin": [0.0, 0.002, 0.0]},
        "simulation": {"dt": 0.001},
        "boxes": [{"center": [0.0, -0.2, 0.0], "size": [0.6, 0.4, 0.6]}],
    }, "drag-lift")
    c = ViewerController(scene, (800, 600), clock=lambda: 0.0)
    c.sim.step(100)  # resting on the box
    x, y = c.camera.project(np.array([[0.1, 0.0, 0.1]]), *c.view_size)[0][0]
    c.press(x, y, LEFT, ctrl=True)
    before = np.asarray(c.sim.contacts[0].center)
    c.drag(x, y - 20.0)
    lift = np.asarray(c.sim.contacts[0].center) - before
    assert lift[1] > 0.005
    c.sim.step(1)
    # the top face moved by lift in that step: the cloth leaves it at lift / dt (a teleport
    # would push it out with no speed)
    np.testing.assert_allclose(c.sim.velocities[:, 1], lift[1] / 0.001, rtol=0.02)
    c.release(x, y - 20.0, LEFT)


def test_collider_meshes_for_drawing_have_outward_normals():
    from ropesim.render.colliders import box_mesh, capsule_mesh

    for rows, tris in (box_mesh((0.4, 0.2, 0.6)), capsule_mesh(0.3, 0.1)):
        p, n = rows[:, :3].astype(float), rows[:, 3:].astype(float)
        np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-6)
        a, b, cc = p[tris[:, 0]], p[tris[:, 1]], p[tris[:, 2]]
        face = np.cross(b - a, cc - a)
        centre = (a + b + cc) / 3
        keep = np.linalg.norm(face, axis=1) > 1e-12
        assert (np.einsum("ij,ij->i", face[keep], centre[keep]) > 0).all()  # wound outward
        assert (np.einsum("ij,ij->i", n, p) > 0).all()
    rows, _ = capsule_mesh(0.3, 0.1)
    r = np.hypot(rows[:, 1], rows[:, 2])
    assert np.abs(rows[:, 0]).max() == pytest.approx(0.4, abs=1e-6) and r.max() <= 0.1 + 1e-6


def test_a_box_with_keyframes_is_where_they_put_it_and_carries_a_particle():
    path = [(0.0, 0.0, -0.5, 0.0), (0.2, 0.4, -0.5, 0.0), (0.4, 0.4, -0.2, 0.0)]
    box = rs.Box(center=(9.0, 9.0, 9.0), size=(2.0, 1.0, 2.0), friction=5.0, keyframes=path)
    np.testing.assert_allclose(posed_at(box, 0.1).center, (0.2, -0.5, 0.0))
    np.testing.assert_allclose(posed_at(box, 0.3).center, (0.4, -0.35, 0.0))
    np.testing.assert_allclose(posed_at(box, 5.0).center, (0.4, -0.2, 0.0))  # rests at the end
    sim = rs.Simulation(_particles([[0.0, 1e-4, 0.0]]), dt=DT, contacts=[box])
    sim.step(150)  # on the first piece: 2 m/s along x
    np.testing.assert_allclose(sim.velocities[0], [2.0, 0.0, 0.0], atol=1e-6)
    sim.step(150)  # the second piece lifts it at 1.5 m/s
    assert sim.velocities[0, 1] == pytest.approx(1.5, abs=1e-6)
    assert sim.positions[0, 1] >= posed_at(box, sim.time).center[1] + 0.5


@pytest.mark.parametrize("path, message", [
    ([(0.0, 0, 0, 0), (0.0, 1, 0, 0)], "times must increase"),
    ([(0.0, 0, 0)], "keyframes"),
    ([(0.0, 0, np.nan, 0)], "box.keyframes"),
])
def test_bad_keyframes_name_the_field(path, message):
    with pytest.raises(ValueError, match=f"box.keyframes.*{message}|{message}"):
        rs.Box(keyframes=path)
    with pytest.raises(ValueError, match="box.velocity: give a velocity or keyframes"):
        rs.Box(velocity=(1, 0, 0), keyframes=[(0.0, 0, 0, 0)])


@pytest.mark.parametrize("name, covered", [("table", 0.005), ("mesh-drape", 0.005),
                                           ("windmill", 0.005), ("towel-rail", 0.001),
                                           ("spikes", 0.005)])
def test_collider_scenes_load_step_and_draw_their_colliders(name, covered):
    scene = rs.load(name)
    with_colliders = scene.simulation()
    with_colliders.step(100)
    assert np.isfinite(with_colliders.positions).all() and with_colliders.max_strain() < 0.5
    without = scene.simulation(contacts=[c for c in scene.contacts() if isinstance(c, rs.Ground)])
    drawn = []
    for sim in (with_colliders, without):  # the cloth far out of the view: only colliders differ
        sim.positions[:] = with_colliders.positions + [100.0, 0.0, 0.0]
        frame = rs.render(sim, frames=1, size=(320, 180), camera=dict(scene.camera))[0]
        drawn.append(np.asarray(frame, dtype=float))
    changed = np.abs(drawn[0] - drawn[1]).max(axis=-1) > 30
    assert changed.mean() > covered  # the colliders cover part of the picture (the rail 0.24 %)


# --- rope segments: swept against thin colliders, and their broad phase ------------------
def _thin_collider(kind):
    """A collider 1 cm thick across x = 0, narrower than a 10 cm rope spacing."""
    if kind == "box":
        return rs.Box(center=(0.0, 0.0, 0.0), size=(0.01, 0.01, 0.6), friction=0.3)
    if kind == "capsule":
        return rs.Capsule((0.0, 0.0, -0.3), (0.0, 0.0, 0.3), 0.005, friction=0.3)
    vertices = np.array([[-0.005, 0.0, -0.3], [0.005, 0.0, -0.3], [0.005, 0.0, 0.3],
                         [-0.005, 0.0, 0.3]])  # an open ribbon 1 cm wide, 1 cm thick
    return rs.Mesh(vertices, np.array([[0, 1, 2], [0, 2, 3]]), thickness=0.01, friction=0.3)


@pytest.mark.parametrize("kind", ["box", "capsule", "mesh"])
def test_a_rope_flung_at_30_m_per_s_does_not_pass_a_thin_collider_between_its_particles(kind):
    # particles at x = +-0.05, +-0.15: the collider lies between the middle two, which
    # pass beside it; 3 cm a step, so the segment's end positions never meet the 1 cm
    # collider (the test at the end of the step alone lets it through)
    rope = rs.rope(4, 0.3, pins="none", origin=(-0.15, 0.1, 0.0))
    rope.velocities[:] = (0.0, -30.0, 0.0)
    sim = rs.Simulation(rope, dt=DT, gravity=(0, 0, 0), contacts=[_thin_collider(kind)])
    for _ in range(10):
        sim.step(1)
        middle = 0.5 * (sim.positions[1] + sim.positions[2])  # the segment's point at x = 0
        assert middle[1] > 0.005 - 1e-4, (sim.step_count, middle)
    # stopped on the side it came from: the middle segment rests on the collider, the
    # ends fold on past it
    assert abs(sim.velocities[1:3, 1]).max() < 30.0 * 0.6
    assert sim.positions[[0, 3], 1].max() < middle[1]


def test_rope_segments_broad_phase_changes_nothing_and_culls_far_colliders():
    """A rope heaped on a box among colliders far from it: the same bits with the broad
    phase on and off, and the far colliders are culled for every segment."""
    from ropesim.engine.colliders.kernel import _segment_near

    table = rs.Box(center=(0.0, -0.05, 0.0), size=(0.6, 0.1, 0.6), friction=0.6)
    far = [rs.Box(center=(2.0 + k, 0.0, 0.0), size=(0.3, 0.3, 0.3)) for k in range(3)]
    far += [rs.Capsule((-2.0, 0.0, 0.0), (-2.0, 1.0, 0.0), 0.1),
            rs.Mesh(*_sheet(half=0.5, n=2), thickness=0.02, center=(0.0, 2.0, 0.0))]
    runs = []
    for broad_phase in (True, False):
        rope = rs.rope(40, 1.0, pins="none", origin=(0.0, 1.1, 0.0),
                       direction=(0.1, -1.0, 0.05))
        sim = rs.Simulation(rope, dt=DT, contacts=[table, *far])
        sim._contact_set.broad_phase = broad_phase
        sim.step(600)
        runs.append(sim)
    y = runs[0].positions[:, 1]
    assert y.max() < 0.3 and y.min() > -0.01  # heaped on the table
    np.testing.assert_array_equal(runs[0].positions, runs[1].positions)
    np.testing.assert_array_equal(runs[0].velocities, runs[1].velocities)
    contact_set = runs[0]._contact_set
    x, x_prev = runs[0]._x, contact_set.x_prev  # the last step's motion and bounds
    verdicts = [[_segment_near(x, x_prev, i, j, contact_set._bounds, c)
                 for i, j in contact_set.segments] for c in range(1 + len(far))]
    assert any(verdicts[0]) and not any(any(v) for v in verdicts[1:])


# --- collider margins: a cloth keeps off a box by a contact offset -------------------------
def test_a_cloth_rests_a_margin_above_a_box_and_auto_is_a_share_of_its_spacing():
    from ropesim.engine.colliders.shapes import MARGIN_SHARE

    for margin, expected in ((0.01, 0.01), ("auto", MARGIN_SHARE * 0.05)):
        box = rs.Box(center=(0.0, -0.5, 0.0), size=(1.0, 1.0, 1.0), margin=margin)
        cloth = rs.cloth(10, 10, spacing=0.05, plane="xz", pins="none",
                         origin=(0.0, 0.2, 0.0))
        sim = rs.Simulation(cloth, dt=DT, contacts=[box], drag=1.0)
        sim.step(2000)
        # the face, the margin and the skin
        np.testing.assert_allclose(sim.positions[:, 1], expected + 1e-5, atol=1e-4)
    rope = rs.Simulation(rs.rope(5, 0.4), dt=DT, contacts=[box])  # no triangles: no margin
    assert rope._contact_set.colliders[0, 2] == pytest.approx(0.5 + 1e-5)


def _cloth_points(sim):
    """The cloth's particles, edge midpoints and triangle centroids (m)."""
    x = sim.positions.astype(float)
    tri = np.asarray(sim.system.triangles)
    a, b, c = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
    return np.vstack([x, 0.5 * (a + b), 0.5 * (b + c), 0.5 * (c + a), (a + b + c) / 3.0])


def test_box_edges_stay_under_a_draped_cloth_with_an_auto_margin():
    """A cloth dropped over a small table top: with margin = "auto" no point of its
    triangles is inside the box as drawn (a particle radius, 0.2 x the spacing, smaller);
    with no margin the edges poke through between particles. (The table is 5 spacings
    thick: a thinner one, which fits between two particles, meets the cloth's edges.)"""
    spacing = 0.04
    poked = []
    for margin in (0.0, "auto"):
        top = rs.Box(center=(0.0, -0.08, 0.0), size=(0.36, 0.2, 0.36), margin=margin)
        cloth = rs.cloth(16, 16, spacing=spacing, plane="xz", pins="none",
                         origin=(0.0, 0.1, 0.0))
        sim = rs.Simulation(cloth, dt=DT, contacts=[top], drag=0.3)
        sim.step(800)
        assert sim.positions[:, 1].min() < -0.05  # it drapes over the edges
        drawn = rs.Box(center=top.center, size=np.asarray(top.size) - 2 * 0.2 * spacing)
        poked.append(_inside_box(_cloth_points(sim), drawn, 0.0).sum())
    assert poked[0] > 0 and poked[1] == 0


@pytest.mark.parametrize("margin", [-0.01, np.nan, "wide", True])
def test_bad_margins_name_the_field(margin):
    for make, field in ((lambda: rs.Box(margin=margin), "box.margin"),
                        (lambda: rs.Capsule(margin=margin), "capsule.margin")):
        with pytest.raises(ValueError, match=field):
            make()


@pytest.mark.parametrize("value, error", [("0.01", None), ('"auto"', None),
                                          ("-0.01", "boxes.margin"), ('"wide"', "boxes.margin")])
def test_scene_margins_are_numbers_or_auto_and_bad_ones_name_the_key(tmp_path, value, error):
    trimesh.creation.box(extents=(1.0, 1.0, 1.0)).export(tmp_path / "block.stl")
    path = tmp_path / "scene.toml"
    path.write_text(_scene_text("block.stl").replace("friction = 0.8",
                                                     f"friction = 0.8\nmargin = {value}"))
    if error is not None:
        with pytest.raises(rs.SceneError, match=error):
            rs.load(path)
        return
    scene = rs.load(path)
    box = scene.contacts()[0]
    assert box.margin == parse_value(value)
    row = scene.simulation()._contact_set.colliders[0]  # half extents grown by the margin
    grown = 0.01 if value == "0.01" else 0.2 * 0.05
    np.testing.assert_allclose(row[2:5], [0.25 + grown + 1e-5, 0.1 + grown + 1e-5,
                                          0.25 + grown + 1e-5])
    assert rs.load(path).to_dict() == scene.to_dict()


def test_the_towel_rail_scene_keeps_its_towel_for_20_seconds():
    """The towel-rail scene's towel settles over the rail and stays there (with no drag
    and friction 0.5 it swung on and slid off after about 20 s in the viewer)."""
    sim = rs.load("towel-rail").simulation()
    sim.step(20_000)
    y = sim.positions[:, 1]
    assert np.isfinite(sim.positions).all()
    assert y.max() > 0.99 and y.min() > 0.45  # both halves hang from the rail at y = 1
    assert np.abs(sim.velocities).max() < 0.2  # settled: a slow sway at most
