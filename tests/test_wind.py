"""Wind (forces/wind.py): the pressure force of a flat plate against closed forms, the
segment form of a rope, the relative-velocity rule, reproducible gusts and validation."""

import numpy as np
import pytest

import ropesim as rs

INTEGRATORS = ["explicit_euler", "symplectic_euler", "verlet", "implicit_midpoint",
               "backward_euler"]
RHO, CD, CL = 1.2, 1.1, 0.3
SIDE = 0.8  # m: an 9 x 9 particle plate at 0.1 m spacing


def plate_sim(**kw):
    cloth = rs.cloth(9, 9, SIDE / 8, plane="xy", pins="none")
    return rs.Simulation(cloth, dt=1e-4, gravity=(0, 0, 0), **kw)


def wind_force(sim, wind):
    f = np.zeros((sim.n_particles, 3))
    wind.accumulate(sim.state, sim.params, f)
    return f


def test_normal_force_on_a_plate_across_the_wind_is_half_rho_cd_area_speed_squared():
    sim = plate_sim()
    wind = sim.add_force(rs.Wind(velocity=(0, 0, 7.0), density=RHO, drag=CD, lift=CL))
    total = wind_force(sim, wind).sum(axis=0)
    expected = 0.5 * RHO * CD * SIDE ** 2 * 7.0 ** 2
    assert total[2] == pytest.approx(expected, rel=0.01)
    assert np.abs(total[:2]).max() < 1e-9 * expected


def test_plate_at_an_angle_gets_pressure_along_its_normal_and_lift_along_the_wind():
    sim = plate_sim()
    w = np.array([3.0, 0.0, 4.0])  # |w| = 5, u.n = 4 on the xy plate
    wind = sim.add_force(rs.Wind(velocity=w, density=RHO, drag=CD, lift=CL))
    total = wind_force(sim, wind).sum(axis=0)
    area = SIDE ** 2
    np.testing.assert_allclose(total, [0.5 * RHO * area * 4.0 * CL * 3.0, 0.0,
                                       0.5 * RHO * area * 4.0 * CD * 4.0], rtol=1e-9, atol=1e-12)


def test_no_force_on_a_plate_parallel_to_the_wind():
    sim = plate_sim()
    wind = sim.add_force(rs.Wind(velocity=(6.0, 2.0, 0.0), density=RHO, drag=CD, lift=CL))
    assert np.abs(wind_force(sim, wind)).max() < 1e-12


def test_no_force_on_a_plate_moving_with_the_wind():
    sim = plate_sim()
    sim.velocities[:] = (1.0, -2.0, 5.0)
    wind = sim.add_force(rs.Wind(velocity=(1.0, -2.0, 5.0), density=RHO, drag=CD, lift=CL))
    assert np.abs(wind_force(sim, wind)).max() < 1e-12


def test_rope_across_the_wind_gets_the_cylinder_drag_half_rho_cd_d_length_speed_squared():
    rope = rs.rope(11, 2.0, pins="none")
    sim = rs.Simulation(rope, gravity=(0, 0, 0))
    wind = sim.add_force(rs.Wind(velocity=(0, 0, 5.0), density=RHO, drag=CD, lift=CL,
                                 thickness=0.02))
    total = wind_force(sim, wind).sum(axis=0)
    assert total[2] == pytest.approx(0.5 * RHO * CD * 0.02 * 2.0 * 25.0, rel=1e-9)
    along = rs.Wind(velocity=(5.0, 0, 0), density=RHO, drag=CD, lift=CL)
    sim.add_force(along)
    assert np.abs(wind_force(sim, along)).max() < 1e-12  # no cross flow: no force


@pytest.mark.parametrize("name", INTEGRATORS)
def test_wind_changes_the_momentum_of_a_free_plate_by_its_force_times_dt(name):
    sim = plate_sim(integrator=name)
    sim.add_force(rs.Wind(velocity=(0, 0, 7.0), density=RHO, drag=CD, lift=CL))
    sim.step(1)
    expected = 0.5 * RHO * CD * SIDE ** 2 * 49.0 * sim.dt
    assert sim.momentum()[2] == pytest.approx(expected, rel=0.01)


def test_the_same_seed_gives_the_same_gusts_and_another_seed_other_gusts():
    def history(seed):
        wind = rs.Wind(velocity=(4.0, 0.0, 1.0), gust=0.3, seed=seed)
        return np.array([wind.air_velocity(t).copy() for t in np.linspace(0, 10, 200)])

    first, again, other = history(3), history(3), history(4)
    np.testing.assert_array_equal(first, again)
    assert np.abs(first - other).max() > 0.1
    # the gusts vary around the mean wind with about the asked relative RMS per axis
    speed = np.linalg.norm([4.0, 0.0, 1.0])
    deviation = (history(3) - [4.0, 0.0, 1.0]) / speed
    assert 0.1 < deviation.std() < 0.6
    assert np.abs(np.diff(first, axis=0)).max() < 0.2 * speed  # smooth over 0.05 s


def test_steady_wind_without_gust_is_constant():
    wind = rs.Wind(velocity=(2.0, 1.0, 0.0))
    np.testing.assert_array_equal(wind.air_velocity(0.0), wind.air_velocity(12.3))


@pytest.mark.parametrize("field, value, error", [
    ("velocity", (1.0, float("nan"), 0.0), ValueError),
    ("velocity", (1.0,), ValueError),
    ("density", -1.0, ValueError),
    ("drag", float("inf"), ValueError),
    ("lift", "big", TypeError),
    ("gust", -0.1, ValueError),
    ("thickness", -0.01, ValueError),
    ("seed", 1.5, TypeError),
])
def test_bad_wind_settings_name_the_field(field, value, error):
    with pytest.raises(error, match=field):
        rs.Wind(**{field: value})


def test_torn_triangles_feel_no_wind_so_a_hole_lets_the_air_through():
    sim = plate_sim()
    wind = sim.add_force(rs.Wind(velocity=(0, 0, 7.0), density=RHO, drag=CD, lift=CL))
    whole = wind_force(sim, wind).sum(axis=0)[2]
    # break every spring touching the centre particle: the 6 triangles around it (and
    # those that share one of those springs as an edge) lose an edge
    x = sim.positions
    centre = int(np.argmin(np.linalg.norm(x - x.mean(axis=0), axis=1)))
    springs = sim.springs
    cut = np.flatnonzero((springs == centre).any(axis=1))
    sim.break_springs(cut)
    pairs = {frozenset(p) for p in springs[cut].tolist()}
    area = 0.0
    for t in sim.triangles.tolist():
        if not any(frozenset((t[e], t[(e + 1) % 3])) in pairs for e in range(3)):
            p, q, r = x[t]
            area += 0.5 * np.linalg.norm(np.cross(q - p, r - p))
    torn = wind_force(sim, wind).sum(axis=0)[2]
    assert area < SIDE ** 2
    assert torn == pytest.approx(whole * area / SIDE ** 2, rel=1e-9)


def test_wind_follows_live_topology_edits_and_reset():
    sim = plate_sim()
    wind = sim.add_force(rs.Wind(velocity=(0, 0, 7.0), density=RHO, drag=CD, lift=CL))
    whole = wind_force(sim, wind).sum(axis=0)[2]
    sim.remove_particle(40)  # the centre: its triangles go with its springs
    lost = wind_force(sim, wind)
    assert lost[40].tolist() == [0.0, 0.0, 0.0] and lost.sum(axis=0)[2] < whole
    sim.break_springs([0])
    assert wind_force(sim, wind).sum(axis=0)[2] < lost.sum(axis=0)[2]
    sim.reset()
    assert wind_force(sim, wind).sum(axis=0)[2] == pytest.approx(whole, rel=1e-12)


def test_a_broken_rope_segment_feels_no_wind():
    rope = rs.rope(11, 2.0, pins="none")
    sim = rs.Simulation(rope, gravity=(0, 0, 0))
    wind = sim.add_force(rs.Wind(velocity=(0, 0, 5.0), density=RHO, drag=CD, thickness=0.02))
    whole = wind_force(sim, wind).sum(axis=0)[2]
    sim.break_springs([3])
    assert wind_force(sim, wind).sum(axis=0)[2] == pytest.approx(whole * 0.9, rel=1e-9)
