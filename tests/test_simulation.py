"""Simulation behaviour: validation, interaction (grab, fling, pins), contacts, state."""

import math

import numpy as np
import pytest

import ropesim as rs


def two_particles(**kw):
    return rs.SpringSystem([[0, 0, 0], [1, 0, 0]], [[0, 1]], **kw)


# --- validation: every error names the field and what is allowed ----------------------------
@pytest.mark.parametrize("kwargs, field", [
    (dict(mass=0.0), "mass"),
    (dict(mass=-1.0), "mass"),
    (dict(stiffness=-5.0), "stiffness"),
    (dict(damping=-0.1), "damping"),
    (dict(mass=[1.0, 2.0, 3.0]), "mass"),
    (dict(stiffness=[1.0, 2.0]), "stiffness"),
    (dict(rest_lengths=[1.0, 2.0]), "rest_lengths"),
    (dict(velocities=np.zeros((3, 3))), "velocities"),
    (dict(pinned=[5]), "pinned"),
])
def test_bad_system_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        two_particles(**kwargs)


def test_bad_positions_and_springs_are_rejected():
    with pytest.raises(ValueError, match=r"positions.*finite"):
        rs.SpringSystem([[0, 0, 0], [np.nan, 0, 0]], [[0, 1]])
    with pytest.raises(ValueError, match=r"positions.*\(n, 2\) or \(n, 3\)"):
        rs.SpringSystem([[0, 0, 0, 0]], np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"springs: index out of range.*0\.\.1"):
        rs.SpringSystem([[0, 0], [1, 0]], [[0, 2]])
    with pytest.raises(ValueError, match=r"springs: spring 0 joins particle 1 to itself"):
        rs.SpringSystem([[0, 0], [1, 0]], [[1, 1]])
    with pytest.raises(ValueError, match=r"springs: expected shape \(m, 2\)"):
        rs.SpringSystem([[0, 0], [1, 0]], [[0, 1, 1]])


@pytest.mark.parametrize("kwargs, message", [
    (dict(dt=0.0), r"dt: must be a finite number > 0"),
    (dict(dt=-1e-3), r"dt: must be a finite number > 0"),
    (dict(dt=float("nan")), r"dt"),
    (dict(integrator="rk4"), r"integrator: unknown name 'rk4'; allowed: explicit_euler, "
                             r"symplectic_euler, verlet, implicit_midpoint, backward_euler"),
    (dict(gravity=(0, 1)), None),  # 2 numbers are fine for gravity: z = 0
    (dict(gravity=(0, 1, 2, 3)), r"gravity"),
    (dict(drag=-1.0), r"drag"),
    (dict(substeps=0), r"substeps"),
    (dict(dtype=np.int32), r"dtype: allowed float32 or float64"),
    (dict(dtype="zz"), r"dtype: allowed float32 or float64"),  # numpy: TypeError
    (dict(dtype="0\x08"), r"dtype: allowed float32 or float64"),  # numpy: ValueError
    (dict(dtype="01"), r"dtype: allowed float32 or float64"),  # numpy: SyntaxError
])
def test_bad_simulation_settings_name_the_field(kwargs, message):
    if message is None:
        rs.Simulation(two_particles(), **kwargs)
        return
    with pytest.raises(ValueError, match=message):
        rs.Simulation(two_particles(), **kwargs)


def test_settings_are_validated_on_a_running_simulation_too():
    sim = rs.Simulation(two_particles())
    with pytest.raises(ValueError, match="dt"):
        sim.dt = 0
    with pytest.raises(ValueError, match="allowed: explicit_euler"):
        sim.integrator = "leapfrog"
    with pytest.raises(ValueError, match="stiffness"):
        sim.set_stiffness(-1)
    with pytest.raises(ValueError, match="particle: index must be in 0..1"):
        sim.grab(7, (0, 0, 0))
    assert sim.integrator == "symplectic_euler" and sim.dt == 0.005


def test_planar_system_rejects_out_of_plane_gravity():
    planar = rs.SpringSystem([[0, 0], [1, 0]], [[0, 1]])
    with pytest.raises(ValueError, match="gravity.*planar"):
        rs.Simulation(planar, gravity=(0, -9.81, 1.0))


def test_young_modulus_gives_stiffness_per_unit_strain():
    system = rs.SpringSystem([[0, 0], [0.5, 0], [0.5, 2.0]], [[0, 1], [1, 2]], young_modulus=100.0)
    np.testing.assert_allclose(system.stiffness, [200.0, 50.0])


# --- state and settings ---------------------------------------------------------------------
def test_positions_are_writable_views_and_planar_has_zero_z():
    planar = rs.SpringSystem([[0, 0], [1, 0]], [[0, 1]])
    sim = rs.Simulation(planar)
    assert sim.positions.shape == (2, 3) and np.all(sim.positions[:, 2] == 0)
    sim.positions[1, 0] = 1.5  # stretch through the view
    assert sim.spring_energy() == pytest.approx(0.5 * 1.0 * 0.25)
    assert sim.positions is sim.positions


def test_switching_integrator_keeps_state():
    sim = rs.Simulation(rs.rope(10, 1.0), dt=1e-3)
    sim.step(100)
    x, v, t = sim.positions.copy(), sim.velocities.copy(), sim.time
    for name in rs.INTEGRATORS:
        sim.integrator = name
        assert sim.integrator == name
        np.testing.assert_array_equal(sim.positions, x)
        np.testing.assert_array_equal(sim.velocities, v)
        assert sim.time == t
    sim.step(10)
    assert sim.step_count == 110


def test_forces_exclude_gravity_and_balance():
    sim = rs.Simulation(two_particles(rest_lengths=[0.5], stiffness=10.0))
    f = sim.forces()
    np.testing.assert_allclose(f[0], [5.0, 0, 0])
    np.testing.assert_allclose(f[1], [-5.0, 0, 0])


def test_energy_parts_add_up():
    sim = rs.Simulation(two_particles(rest_lengths=[0.5], stiffness=10.0, mass=2.0,
                                      velocities=[[0, 1, 0], [0, 0, 0]]))
    sim.positions[:, 1] += 1.0
    assert sim.kinetic_energy() == pytest.approx(1.0)
    assert sim.spring_energy() == pytest.approx(0.5 * 10 * 0.25)
    assert sim.gravity_energy() == pytest.approx(2 * 2.0 * 9.81 * 1.0)
    assert sim.energy() == pytest.approx(sim.kinetic_energy() + sim.potential_energy())
    np.testing.assert_allclose(sim.momentum(), [0, 2.0, 0])
    assert sim.max_strain() == pytest.approx(1.0)


def test_same_seed_same_result():
    def run(seed):
        sim = rs.Simulation(rs.random_network(40, 90, seed=seed), dt=1e-3)
        sim.step(200)
        return sim.positions.copy()

    np.testing.assert_array_equal(run(4), run(4))
    assert not np.array_equal(run(4), run(5))


def test_reset_restores_initial_state():
    sim = rs.Simulation(rs.cloth(6, 6, 0.1), dt=5e-4)
    sim.pin(20)
    sim.step(50)
    sim.reset()
    np.testing.assert_array_equal(sim.positions, sim.system.positions3())
    assert sim.time == 0 and sim.step_count == 0
    np.testing.assert_array_equal(sim.pinned, sim.system.pinned)


def test_float32_state_tracks_float64():
    system = rs.cloth(8, 8, 0.1)
    a = rs.Simulation(system, dt=5e-4)
    b = rs.Simulation(system, dt=5e-4, dtype=np.float32)
    a.step(200)
    b.step(200)
    assert b.positions.dtype == np.float32
    np.testing.assert_allclose(b.positions, a.positions, atol=1e-4)


def test_divergence_recovers_the_last_finite_state_exactly():
    """The recovered state equals a clean run to the step before the failure."""
    system = rs.cloth(10, 10, 0.05, mass=0.01, stiffness=1000.0)
    sim = rs.Simulation(system, dt=0.03, integrator="explicit_euler")
    with pytest.raises(rs.SimulationDiverged) as info:
        sim.step(10_000)
    good = info.value.step - 1
    replay = rs.Simulation(system, dt=0.03, integrator="explicit_euler")
    replay.step(good)
    np.testing.assert_array_equal(sim.positions, replay.positions)
    assert math.isfinite(sim.energy())
    sim.integrator = "backward_euler"  # the user can carry on from there
    sim.step(20)
    assert np.all(np.isfinite(sim.positions))


# --- interaction ----------------------------------------------------------------------------
def test_grab_follows_target_and_release_flings_with_drag_velocity():
    sim = rs.Simulation(rs.rope(20, 2.0, pins="start"), dt=1e-3)
    end = 19
    start = sim.positions[end].copy()
    drag_velocity = np.array([0.0, 3.0, 1.0])
    sim.grab(end, start)
    for k in range(1, 301):  # a fast drag: 3 m/s up, 1 m/s toward the viewer, for 0.3 s
        sim.grab(end, start + drag_velocity * k * 1e-3)
        sim.step()
    sim.release()
    assert sim.grabbed is None
    np.testing.assert_allclose(sim.velocities[end], drag_velocity, rtol=0.03)
    # the particle trails the target by about v * follow_time
    target = start + drag_velocity * 0.3
    assert np.linalg.norm(sim.positions[end] - target) < 1.2 * 3.2 / 60


def test_release_with_explicit_velocity():
    sim = rs.Simulation(rs.rope(5, 1.0), dt=1e-3)
    sim.grab(4, sim.positions[4])
    sim.step(5)
    sim.release(velocity=(1.0, 2.0, 3.0))
    np.testing.assert_allclose(sim.velocities[4], [1, 2, 3])


def test_fling_sends_a_wave_down_the_rope():
    sim = rs.Simulation(rs.rope(40, 4.0, pins="start", damping=0.0), dt=5e-4, gravity=(0, 0, 0))
    end = 39
    p = sim.positions[end].copy()
    for k in range(1, 101):
        sim.grab(end, p + np.array([0, 5.0, 0]) * k * 5e-4)
        sim.step()
    sim.release()
    middle = sim.positions[20, 1]
    sim.step(2000)
    assert abs(sim.positions[20, 1] - middle) > 0.05  # the disturbance reached the middle


def test_pinned_particle_dragged_stays_where_dropped():
    sim = rs.Simulation(rs.cloth(6, 6, 0.1, pins="top-corners"), dt=1e-3)
    corner = int(np.flatnonzero(sim.pinned)[0])
    goal = sim.positions[corner] + np.array([0.3, 0.2, 0.0])
    for _ in range(300):
        sim.grab(corner, goal)
        sim.step()
    sim.release()
    dropped = sim.positions[corner].copy()
    np.testing.assert_allclose(dropped, goal, atol=1e-3)
    sim.step(200)
    np.testing.assert_array_equal(sim.positions[corner], dropped)
    assert np.all(sim.velocities[corner] == 0)


def test_pin_and_unpin_at_run_time():
    sim = rs.Simulation(rs.rope(10, 1.0, pins="none"), dt=1e-3)
    sim.pin(3)
    held = sim.positions[3].copy()
    sim.step(100)
    np.testing.assert_array_equal(sim.positions[3], held)
    sim.unpin(3)
    sim.step(100)
    assert sim.positions[3, 1] < held[1]  # falls once unpinned
    assert sim.toggle_pin(3) is True and sim.pinned[3]


def test_grab_in_a_planar_system_stays_in_plane():
    sim = rs.Simulation(rs.rope(8, 1.0, dim=2), dt=1e-3)
    sim.grab(7, (0.5, 0.5, 0.9))
    sim.step(100)
    sim.release()
    sim.step(100)
    assert np.all(sim.positions[:, 2] == 0)


# --- contacts -------------------------------------------------------------------------------
def test_particle_lands_on_the_ground_and_stops_with_friction():
    single = rs.SpringSystem([[0, 1.0, 0]], np.zeros((0, 2), int), velocities=[[2.0, 0, 0]])
    sim = rs.Simulation(single, dt=1e-3, contacts=[rs.Ground(height=0.0, friction=0.5)])
    sim.step(3000)
    assert sim.positions[0, 1] == pytest.approx(0.0, abs=1e-9)
    assert abs(sim.velocities[0, 1]) < 1e-9
    assert abs(sim.velocities[0, 0]) < 1e-9  # friction brought it to rest


def test_frictionless_ground_keeps_tangential_speed():
    single = rs.SpringSystem([[0, 0.5, 0]], np.zeros((0, 2), int), velocities=[[2.0, 0, 0]])
    sim = rs.Simulation(single, dt=1e-3, contacts=[rs.Ground(0.0, friction=0.0)])
    sim.step(2000)
    assert sim.velocities[0, 0] == pytest.approx(2.0)


def test_cloth_drapes_over_a_sphere():
    cloth = rs.cloth(12, 12, 0.1, plane="xz", pins="none", origin=(0, 0.5, 0))
    ball = rs.Sphere(center=(0, 0, 0), radius=0.3, friction=0.5)
    sim = rs.Simulation(cloth, dt=1e-3, contacts=[ball, rs.Ground(-1.0)], drag=0.5)
    sim.step(3000)
    distance = np.linalg.norm(sim.positions - np.array(ball.center), axis=1)
    assert distance.min() >= 0.3 - 1e-9
    assert sim.positions[:, 1].max() > 0.25  # resting on top of the ball
    assert sim.positions[:, 1].min() < 0.0  # edges hang down the sides


def test_bad_contacts_name_the_field():
    with pytest.raises(ValueError, match="sphere.radius"):
        rs.Sphere((0, 0, 0), radius=0)
    with pytest.raises(ValueError, match="ground.friction"):
        rs.Ground(0.0, friction=-1)
    with pytest.raises(ValueError, match="contacts: expected Ground or Sphere"):
        rs.Simulation(two_particles(), contacts=["floor"])


def test_solver_stats_exposed_for_implicit_integrators():
    sim = rs.Simulation(rs.cloth(8, 8, 0.1), dt=0.01, integrator="backward_euler")
    sim.step(3)
    stats = sim.solver_stats
    assert stats.iterations > 0 and stats.residual <= sim.cg_tolerance
    assert stats.implicit_steps == 3 and stats.fallback_steps >= 0


def test_stable_dt_is_a_safe_bound_for_symplectic_euler():
    cloth = rs.cloth(10, 10, 0.05, mass=0.01, stiffness=1000.0, damping=0.0)
    limit = cloth.stable_dt()
    assert 0 < limit < 1
    safe = rs.Simulation(cloth, dt=0.95 * limit, gravity=(0, 0, 0))
    safe.positions[:] += np.random.default_rng(0).normal(scale=1e-3, size=safe.positions.shape)
    safe.positions[cloth.pinned] = cloth.positions3()[cloth.pinned]
    e0 = safe.energy()
    safe.step(3000)
    assert np.isfinite(safe.energy()) and safe.energy() < 3 * e0  # bounded, no blow-up
    with pytest.raises(rs.SimulationDiverged):  # far above the bound it does blow up
        rs.Simulation(cloth, dt=4 * limit).step(3000)


def test_warns_when_explicit_dt_is_far_above_the_stable_step():
    cloth = rs.cloth(10, 10, 0.05, mass=0.01, stiffness=1000.0)
    with pytest.warns(RuntimeWarning, match="stable step"):
        rs.Simulation(cloth, dt=0.005)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rs.Simulation(cloth, dt=0.005, integrator="backward_euler")  # implicit: no warning
        rs.Simulation(cloth, dt=0.5 * cloth.stable_dt())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(rs.INTEGRATORS))
@pytest.mark.parametrize("builder", ["cloth", "rope"])
def test_a_nan_anywhere_is_caught_as_divergence(builder, name, dtype):
    system = rs.cloth(16, 16, 0.05) if builder == "cloth" else rs.rope(30, 1.0)
    sim = rs.Simulation(system, dt=2e-4, integrator=name, dtype=dtype)
    sim.step(3)
    sim.velocities[5, 1] = np.nan  # e.g. a bad value written through the view
    with pytest.raises(rs.SimulationDiverged, match="non-finite"):
        sim.step(10)
