"""Live topology edits (engine/topology.py): springs added and removed, particles removed,
pin groups; every integrator follows without a restart; reset restores the original."""

import numpy as np
import pytest

import ropesim as rs

ALL = list(rs.INTEGRATORS)


def free_cloth(name, n=8, dt=2e-4):
    """An n x n cloth in zero gravity with random velocities (no pins)."""
    sim = rs.Simulation(rs.cloth(n, n, 0.05, pins="none"), dt=dt, gravity=(0, 0, 0),
                        integrator=name, cg_tolerance=1e-13)
    sim.velocities[:] = np.random.default_rng(3).normal(scale=0.1, size=(n * n, 3))
    return sim


@pytest.mark.parametrize("name", ALL)
def test_live_additions_and_removals_conserve_momentum_in_zero_gravity(name):
    sim = free_cloth(name)
    p0 = sim.momentum()
    sim.step(20)
    added = sim.add_spring(0, 63)
    sim.add_spring(5, 40, stiffness=50.0, damping=0.1)
    sim.step(20)
    sim.remove_springs([0, 7, added])
    sim.step(20)
    np.testing.assert_allclose(sim.momentum(), p0, atol=1e-11)
    # a removed particle is held still: it takes exactly its own momentum with it
    lost = sim.masses[10] * sim.velocities[10]
    sim.remove_particle(10)
    sim.step(20)
    np.testing.assert_allclose(sim.momentum(), p0 - lost, atol=1e-11)
    assert np.all(np.isfinite(sim.positions))


def two_free_particles(distance, stiffness=(100.0, 200.0, 400.0)):
    """Particles 0 and 1 at ``distance`` (m) on x with no spring between them, and a
    separate chain 2-3-4-5 whose springs have the given stiffness (N/m)."""
    positions = [(0, 0, 0), (distance, 0, 0), (0, 1, 0), (0.1, 1, 0), (0.2, 1, 0), (0.3, 1, 0)]
    system = rs.explicit(positions, [(2, 3), (3, 4), (4, 5)], stiffness=list(stiffness),
                         damping=[0.0, 0.3, 0.6], mass=0.5, pinned=[2, 3, 4, 5])
    return rs.Simulation(system, dt=1e-3, gravity=(0, 0, 0))


def test_added_spring_has_the_current_distance_as_rest_length_and_median_coefficients():
    sim = two_free_particles(0.3)
    index = sim.add_spring(0, 1)
    assert index == 3 and sim.n_springs == 4
    assert sim.rest_lengths[index] == pytest.approx(0.3, rel=1e-12)
    assert sim.stiffness[index] == 200.0 and sim.damping[index] == pytest.approx(0.3)
    assert sim.springs[index].tolist() == [0, 1]
    np.testing.assert_array_equal(sim.system.springs, sim.springs)
    sim.step(10)  # at its rest length it exerts no force
    np.testing.assert_array_equal(sim.velocities[:2], 0.0)


def test_added_spring_pulls_stretched_particles_back_by_hookes_law():
    d, stretch, k, m = 0.3, 0.05, 80.0, 0.5
    sim = two_free_particles(d)
    sim.add_spring(0, 1, stiffness=k, damping=0.0)
    sim.positions[1, 0] = d + stretch
    sim.step(1)  # symplectic Euler: v = F / m dt, F = k * stretch toward each other
    expected = k * stretch / m * sim.dt
    assert sim.velocities[0, 0] == pytest.approx(expected, rel=1e-9)
    assert sim.velocities[1, 0] == pytest.approx(-expected, rel=1e-9)


def test_spring_given_rest_length_and_coefficients_keeps_them():
    sim = two_free_particles(0.3)
    index = sim.add_spring(1, 0, stiffness=10.0, damping=0.2, rest_length=0.25)
    assert (sim.rest_lengths[index], sim.stiffness[index], sim.damping[index]) == (
        0.25, 10.0, 0.2)
    sim.step(1)  # 0.3 m apart, 0.25 m at rest: stretched, so they pull together
    assert sim.velocities[1, 0] < 0.0 < sim.velocities[0, 0]


@pytest.mark.parametrize("name", ALL)
def test_removal_then_stepping_a_hanging_cloth_stays_finite(name):
    sim = rs.Simulation(rs.cloth(12, 12, 0.05, pins="top-corners"), dt=2e-4, integrator=name)
    sim.step(20)
    m = sim.n_springs
    assert sim.remove_springs(np.arange(0, m, 7)) == len(range(0, m, 7))
    removed = sim.remove_particle(70)
    assert removed > 0 and sim.n_springs == m - len(range(0, m, 7)) - removed
    sim.step(200)
    assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))
    assert not np.any((sim.springs == 70).any(axis=1))


def test_removed_particle_is_inert_hidden_and_cannot_be_grabbed_or_joined():
    sim = rs.Simulation(rs.cloth(6, 6, 0.05, pins="top-corners"), dt=1e-3)
    where = sim.positions[20].copy()
    sim.remove_particle(20)
    assert sim.removed_particles.tolist() == [i == 20 for i in range(36)]
    assert not sim.pinned[20]  # not a pin: removed
    sim.step(100)
    np.testing.assert_array_equal(sim.positions[20], where)
    with pytest.raises(ValueError, match="particle: 20 was removed"):
        sim.grab(20, where)
    with pytest.raises(ValueError, match="j: particle 20 was removed"):
        sim.add_spring(0, 20)
    assert sim.remove_particle(20) == 0  # already removed: nothing more to do
    for triangle in sim.triangles:
        assert 20 not in triangle


def test_removing_springs_drops_the_triangles_that_lost_an_edge():
    sim = rs.Simulation(rs.cloth(4, 4, 0.1, pins="none"), dt=1e-3)
    before = sim.triangles.copy()
    a, b = sim.springs[0]
    sim.remove_springs([0])
    had_edge = [{int(a), int(b)} <= set(t.tolist()) for t in before]
    assert len(sim.triangles) == len(before) - sum(had_edge) and sum(had_edge) > 0
    assert not any({int(a), int(b)} <= set(t.tolist()) for t in sim.triangles)


def test_broken_springs_stay_broken_when_others_are_removed():
    sim = rs.Simulation(rs.cloth(5, 5, 0.1, pins="none"), dt=1e-3)
    sim.break_springs([4, 9])
    pairs = sim.springs[[4, 9]].tolist()
    sim.remove_springs([0, 1])
    assert np.flatnonzero(sim.broken).tolist() == [2, 7]
    assert sim.springs[[2, 7]].tolist() == pairs
    assert sim.stiffness[[2, 7]].tolist() == [0.0, 0.0]
    # re-joining two particles whose spring is broken is allowed (a new intact spring)
    index = sim.add_spring(*pairs[0])
    assert not sim.broken[index] and sim.stiffness[index] > 0


def test_topology_errors_name_the_field():
    sim = two_free_particles(0.3)
    with pytest.raises(ValueError, match=r"i: particle index must be in 0..5, got 6"):
        sim.add_spring(6, 0)
    with pytest.raises(ValueError, match=r"j: particle index must be in 0..5, got -1"):
        sim.add_spring(0, -1)
    with pytest.raises(ValueError, match="i, j: a spring needs two different particles"):
        sim.add_spring(1, 1)
    with pytest.raises(ValueError, match="already joined by spring 0"):
        sim.add_spring(3, 2)
    with pytest.raises(ValueError, match="stiffness: must be >= 0"):
        sim.add_spring(0, 1, stiffness=-1.0)
    with pytest.raises(ValueError, match="rest_length: must be >= 0"):
        sim.add_spring(0, 1, rest_length=-0.1)
    with pytest.raises(ValueError, match=r"indices: spring indices must be in 0..2"):
        sim.remove_springs([3])
    with pytest.raises(ValueError, match=r"indices: particle indices must be in 0..5"):
        sim.pin_many([0, 9])
    with pytest.raises(ValueError, match="indices: 0.5 is not an integer index"):
        sim.remove_springs([0.5])
    assert sim.n_springs == 3 and sim.topology_version == 0  # nothing changed


def test_a_system_without_springs_needs_explicit_coefficients():
    sim = rs.Simulation(rs.explicit([(0, 0, 0), (1, 0, 0)], []), dt=1e-3, gravity=(0, 0, 0))
    with pytest.raises(ValueError, match="stiffness: the system has no springs"):
        sim.add_spring(0, 1)
    assert sim.add_spring(0, 1, stiffness=5.0, damping=0.0) == 0


@pytest.mark.parametrize("name", ALL)
def test_reset_restores_the_original_topology(name):
    cloth = rs.cloth(6, 6, 0.05, pins="top-corners")
    sim = rs.Simulation(cloth, dt=2e-4, integrator=name)
    sim.set_stiffness(np.linspace(100.0, 200.0, cloth.n_springs))
    stiffness = sim.stiffness.copy()
    sim.add_spring(0, 35)
    sim.remove_springs([1, 2, 3])
    sim.remove_particle(14)
    sim.step(10)
    version = sim.topology_version
    sim.reset()
    assert sim.topology_version > version
    np.testing.assert_array_equal(sim.springs, cloth.springs)
    np.testing.assert_array_equal(sim.triangles, cloth.triangles)
    np.testing.assert_array_equal(sim.stiffness, stiffness)  # parameters are kept
    np.testing.assert_allclose(sim.rest_lengths, cloth.rest_lengths)
    assert not sim.removed_particles.any() and not sim.broken.any()
    sim.step(50)
    assert np.all(np.isfinite(sim.positions)) and sim.positions[14, 1] < cloth.positions[14, 1]


def test_grid_fast_paths_fall_back_on_a_changed_topology_and_return_after_reset():
    sim = rs.Simulation(rs.cloth(16, 16, 0.05, pins="top-corners"), dt=1e-3)
    sim.step(1)
    assert type(sim.integrator_object.path()).__name__ == "GridPath"
    sim.add_spring(0, 255)
    sim.step(1)
    assert type(sim.integrator_object.path()).__name__ != "GridPath"
    sim.reset()
    sim.integrator = "backward_euler"
    sim.step(1)
    assert sim.integrator_object.grid_solver() is not None
    sim.remove_springs([3])
    sim.step(1)
    assert sim.integrator_object.grid_solver() is None
    sim.reset()
    sim.integrator = "symplectic_euler"
    sim.step(1)
    assert type(sim.integrator_object.path()).__name__ == "GridPath"


def test_edited_cloth_matches_the_same_cloth_built_with_that_topology():
    """After removing springs live, the step equals a fresh simulation of the edited
    system (same physics on the general path), under an implicit and an explicit method."""
    for name in ("symplectic_euler", "backward_euler", "xpbd"):
        live = rs.Simulation(rs.cloth(8, 8, 0.05, pins="top-corners"), dt=1e-3,
                             integrator=name, cg_tolerance=1e-12)
        live.step(5)
        live.remove_springs([2, 11, 40])
        fresh = rs.Simulation(live.system, dt=1e-3, integrator=name, grid_kernels=False,
                              cg_tolerance=1e-12)
        fresh.positions[:] = live.positions
        fresh.velocities[:] = live.velocities
        live.step(30)
        fresh.step(30)
        np.testing.assert_allclose(live.positions, fresh.positions, atol=1e-9)


def test_pin_group_pins_and_unpins_together():
    sim = rs.Simulation(rs.cloth(6, 6, 0.05, pins="none"), dt=1e-3)
    group = [0, 1, 2, 7, 8]
    sim.pin_many(group)
    assert np.flatnonzero(sim.pinned).tolist() == group
    held = sim.positions[group].copy()
    sim.step(50)
    np.testing.assert_array_equal(sim.positions[group], held)
    sim.unpin_many(np.array(group[:3]))
    assert np.flatnonzero(sim.pinned).tolist() == [7, 8]
    sim.step(20)
    np.testing.assert_array_equal(sim.positions[[7, 8]], held[3:])
    assert np.all(np.linalg.norm(sim.positions[group[:3]] - held[:3], axis=1) > 1e-4)


def test_topology_version_counts_edits():
    sim = rs.Simulation(rs.cloth(4, 4, 0.1, pins="none"), dt=1e-3)
    assert sim.topology_version == 0
    sim.add_spring(0, 15)
    sim.remove_springs([0])
    assert sim.topology_version == 2
    sim.reset()
    assert sim.topology_version == 3
    sim.reset()  # nothing edited since: no change
    assert sim.topology_version == 3
