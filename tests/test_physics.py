"""Physics checked against closed forms and invariants, not against our own output."""

import math

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine.forces import spring_forces, stiffness_blocks, system_product

ALL = list(rs.INTEGRATORS)


def oscillator(stiffness=40.0, mass=0.5, stretch=0.1):
    """One free particle on a spring to a pinned anchor, stretched along x."""
    return rs.SpringSystem(
        [[0.0, 0.0, 0.0], [1.0 + stretch, 0.0, 0.0]], [[0, 1]], rest_lengths=[1.0],
        mass=mass, stiffness=stiffness, pinned=[0],
    )


def grid_net(nx=8, ny=8, spacing=0.1, stiffness=100.0, mass=0.01, seed=3, pinned=()):
    """A free 8x8 cloth-like net (structural + shear), jittered so it starts out of rest."""
    ids = np.arange(nx * ny).reshape(ny, nx)
    pairs = [(ids[r, c], ids[r, c + 1]) for r in range(ny) for c in range(nx - 1)]
    pairs += [(ids[r, c], ids[r + 1, c]) for r in range(ny - 1) for c in range(nx)]
    pairs += [(ids[r, c], ids[r + 1, c + 1]) for r in range(ny - 1) for c in range(nx - 1)]
    pairs += [(ids[r, c + 1], ids[r + 1, c]) for r in range(ny - 1) for c in range(nx - 1)]
    gx, gy = np.meshgrid(np.arange(nx) * spacing, np.arange(ny) * spacing)
    flat = np.stack([gx.ravel(), gy.ravel(), np.zeros(nx * ny)], axis=1)
    system = rs.SpringSystem(flat, pairs, mass=mass, stiffness=stiffness, pinned=pinned)
    rng = np.random.default_rng(seed)
    jittered = flat + rng.normal(scale=0.1 * spacing, size=flat.shape)
    return rs.SpringSystem(jittered, pairs, rest_lengths=system.rest_lengths, mass=mass,
                           stiffness=stiffness, pinned=pinned)


def crossings_period(sim, steps):
    """Oscillation period from upward zero crossings of particle 1's x displacement."""
    times, values = [], []
    for _ in range(steps):
        sim.step()
        times.append(sim.time)
        values.append(sim.positions[1, 0] - 1.0)
    values = np.array(values)
    up = np.flatnonzero((values[:-1] < 0) & (values[1:] >= 0))
    # linear interpolation of each crossing time
    t = [times[i] + (times[i + 1] - times[i]) * (-values[i]) / (values[i + 1] - values[i])
         for i in up]
    return np.diff(t).mean()


@pytest.mark.parametrize("name", ["symplectic_euler", "verlet", "implicit_midpoint"])
def test_mass_on_spring_period_matches_closed_form(name):
    k, m = 40.0, 0.5
    period = 2 * math.pi * math.sqrt(m / k)
    sim = rs.Simulation(oscillator(k, m), dt=period / 400, gravity=(0, 0, 0), integrator=name)
    measured = crossings_period(sim, 400 * 6)
    assert measured == pytest.approx(period, rel=2e-3)


def test_hanging_chain_matches_closed_form():
    """Static chain: spring i carries the weight of the particles below it, so it is
    stretched by (particles below) * m * g / k."""
    n, rest, k, m, g = 12, 0.1, 200.0, 0.05, 9.81
    positions = [[0.0, -i * rest, 0.0] for i in range(n)]
    springs = [[i, i + 1] for i in range(n - 1)]
    chain = rs.SpringSystem(positions, springs, mass=m, stiffness=k, damping=2.0, pinned=[0])
    sim = rs.Simulation(chain, dt=0.01, gravity=(0, -g, 0), integrator="backward_euler")
    sim.step(3000)
    lengths = -np.diff(sim.positions[:, 1])
    below = np.arange(n - 1, 0, -1)
    expected = rest + below * m * g / k
    np.testing.assert_allclose(lengths, expected, rtol=1e-6)
    np.testing.assert_allclose(sim.positions[:, [0, 2]], 0.0, atol=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_free_system_conserves_momentum(name):
    system = grid_net()
    rng = np.random.default_rng(1)
    free = rs.SpringSystem(system.positions, system.springs, system.rest_lengths,
                           mass=rng.uniform(0.005, 0.02, system.n_particles),
                           stiffness=100.0, damping=0.05,
                           velocities=rng.normal(size=system.positions.shape))
    sim = rs.Simulation(free, dt=1e-3, gravity=(0, 0, 0), integrator=name, cg_tolerance=1e-13)
    p0 = sim.momentum()
    # explicit Euler gains energy here (2x in 44 steps, a spring at 18x its rest length
    # by step 272): the divergence check stops it, so it runs only while healthy
    sim.step(40 if name == "explicit_euler" else 300)
    np.testing.assert_allclose(sim.momentum(), p0, atol=1e-10)


def energy_ratio(name, steps, dt_fraction=0.05):
    system = grid_net()
    dt = dt_fraction * math.sqrt(0.01 / 100.0)
    sim = rs.Simulation(system, dt=dt, gravity=(0, 0, 0), integrator=name)
    e0 = sim.energy()
    history = []
    for _ in range(steps // 100):
        sim.step(100)
        history.append(sim.energy() / e0)
    return np.array(history)


def test_energy_signature_explicit_euler_gains():
    # at 1/80 of the limit step: the gain reaches 1.8x in 1000 steps. At 1/20 it reached
    # 18000x (springs 30x their rest length) by step 800, which the divergence check stops
    ratios = energy_ratio("explicit_euler", 1000, dt_fraction=0.0125)
    assert ratios[-1] > 1.5
    assert np.all(np.diff(ratios) > 0)


@pytest.mark.parametrize("name", ["symplectic_euler", "verlet"])
def test_energy_signature_symplectic_methods_stay_bounded(name):
    ratios = energy_ratio(name, 8000)
    assert np.all(np.abs(ratios - 1.0) < 0.05)
    # no secular drift: the last quarter averages like the first quarter
    q = len(ratios) // 4
    assert abs(ratios[-q:].mean() - ratios[:q].mean()) < 0.01


def test_energy_signature_backward_euler_loses():
    ratios = energy_ratio("backward_euler", 4000)
    assert ratios[-1] < 0.8
    assert np.all(np.diff(ratios) < 1e-9)


def test_energy_signature_implicit_midpoint_nearly_conserves():
    """The exact Jacobian matters: 8,000 small steps of an undamped 8x8 cloth keep
    the energy within 0.5% (a clamped Jacobian loses most of it)."""
    ratios = energy_ratio("implicit_midpoint", 8000)
    assert np.all(np.abs(ratios - 1.0) < 0.005)


def test_verlet_is_second_order():
    """Halving dt cuts the Stormer-Verlet position error about 4x."""
    k, m = 40.0, 0.5
    omega = math.sqrt(k / m)
    errors = []
    for dt in (0.02, 0.01):
        sim = rs.Simulation(oscillator(k, m), dt=dt, gravity=(0, 0, 0), integrator="verlet")
        steps = int(round(1.0 / dt))
        sim.step(steps)
        exact = 1.0 + 0.1 * math.cos(omega * steps * dt)
        errors.append(abs(sim.positions[1, 0] - exact))
    assert 3.0 < errors[0] / errors[1] < 5.0


def stiff_cloth():
    """16x16 hanging cloth, 10 g particles, 1000 N/m springs: explicit limit sqrt(m/k) = 3.2 ms."""
    return rs.cloth(16, 16, 0.05, mass=0.01, stiffness=1000.0, damping=0.0, pins="top-corners")


EXPLICIT_LIMIT = math.sqrt(0.01 / 1000.0)


@pytest.mark.parametrize("name", ["implicit_midpoint", "backward_euler"])
@pytest.mark.parametrize("multiple", [10, 30])
def test_implicit_stable_far_past_explicit_limit(name, multiple):
    cloth = stiff_cloth()
    sim = rs.Simulation(cloth, dt=multiple * EXPLICIT_LIMIT, integrator=name)
    e0 = sim.energy()
    largest_sag = 0.0
    for _ in range(30):
        sim.step(10)
        largest_sag = max(largest_sag, np.abs(sim.positions - cloth.positions3()).max())
        assert sim.energy() <= e0 + 1e-3 * abs(e0)  # undamped: no energy is created
        assert sim.max_strain() < 0.3
    assert np.all(np.isfinite(sim.positions))
    assert largest_sag > 0.005  # it moved under gravity, it did not freeze
    assert sim.solver_stats.iterations > 0 and sim.solver_stats.converged


@pytest.mark.parametrize("name", ["implicit_midpoint", "backward_euler"])
def test_default_cg_tolerance_error_is_far_below_the_integrators_own(name):
    # the stopping rule only has to make the linear solve's error small next to the
    # time discretisation's: compare both after 0.5 s of the stiff cloth at dt = 1/60
    cloth = stiff_cloth()
    runs = {}
    for key, dt, tol in (("default", 1 / 60, None), ("tight", 1 / 60, 1e-11),
                         ("reference", 1 / 3000, 1e-11)):
        options = {} if tol is None else {"cg_tolerance": tol}
        sim = rs.Simulation(cloth, dt=dt, integrator=name, **options)
        sim.step(round(0.5 / dt))
        runs[key] = sim.positions
    solver_error = np.abs(runs["default"] - runs["tight"]).max()
    time_step_error = np.abs(runs["tight"] - runs["reference"]).max()
    assert time_step_error > 1e-5  # a real difference (midpoint ~8e-5 m, BE ~1e-2 m)
    assert solver_error < 0.01 * time_step_error


def test_explicit_euler_caught_diverging_at_ten_times_the_limit():
    sim = rs.Simulation(stiff_cloth(), dt=10 * EXPLICIT_LIMIT, integrator="explicit_euler")
    with pytest.raises(rs.SimulationDiverged) as info:
        sim.step(1000)
    err = info.value
    assert err.integrator == "explicit_euler" and err.dt == pytest.approx(10 * EXPLICIT_LIMIT)
    assert "explicit_euler" in str(err) and "smaller dt" in str(err)
    # the last finite state stays in place: the step before the failing one
    assert sim.step_count == err.step - 1
    assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))
    assert sim.time == pytest.approx(sim.step_count * sim.dt)
    assert np.abs(sim.velocities).max() <= sim.max_speed


@pytest.mark.parametrize("name", ALL)
def test_planar_systems_stay_planar(name):
    n = 10
    angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring2 = rs.SpringSystem(np.stack([np.cos(angles), np.sin(angles)], axis=1),
                            [[i, (i + 1) % n] for i in range(n)] + [[0, 5], [2, 7]],
                            mass=0.1, stiffness=50.0, damping=0.1, pinned=[0])
    assert ring2.dim == 2
    sim = rs.Simulation(ring2, dt=2e-3, integrator=name,
                        contacts=[rs.Ground(-1.2), rs.Sphere((0, -1.0, 0.5), 0.3)])
    sim.step(500)
    assert sim.positions.shape == (n, 3)
    assert np.all(sim.positions[:, 2] == 0.0) and np.all(sim.velocities[:, 2] == 0.0)
    assert np.ptp(sim.positions[:, 1]) > 0  # it moved


def test_spring_jacobian_is_exact():
    """Ks (with its negative transverse term for compressed springs) equals -df/dx and
    the damping block equals -df/dv, by central finite differences of the force kernel."""
    rng = np.random.default_rng(7)
    n = 6
    a = np.array([0, 1, 2, 3, 4, 5, 0, 1, 2], np.int32)
    b = np.array([1, 2, 3, 4, 5, 0, 3, 4, 5], np.int32)
    x, v, p = rng.normal(size=(3, n, 3))
    rest = np.linalg.norm(x[a] - x[b], axis=1) * rng.uniform(0.5, 1.5, a.size)
    k, c = rng.uniform(1, 10, a.size), rng.uniform(0.1, 1, a.size)
    assert np.any(rest > np.linalg.norm(x[a] - x[b], axis=1))  # some springs compressed

    def force(xx, vv, kk, cc):
        out = np.zeros((n, 3))
        spring_forces(xx, vv, a, b, rest, kk, cc, out)
        return out

    blocks, normals = np.zeros((a.size, 6)), np.zeros((a.size, 3))
    stiffness_blocks(x, a, b, rest, k, False, blocks, normals)
    zero_mass, free = np.zeros(n), np.zeros(n, np.uint8)
    ks_p, c_p = np.zeros((n, 3)), np.zeros((n, 3))
    system_product(p, zero_mass, a, b, blocks, normals, c, 1.0, 0.0, free, ks_p)
    system_product(p, zero_mass, a, b, blocks, normals, c, 0.0, 1.0, free, c_p)

    eps = 1e-6
    no_damping = np.zeros_like(c)
    dfdx_p = (force(x + eps * p, v, k, no_damping) - force(x - eps * p, v, k, no_damping)) / (2 * eps)
    dfdv_p = (force(x, v + eps * p, k, c) - force(x, v - eps * p, k, c)) / (2 * eps)
    np.testing.assert_allclose(-ks_p, dfdx_p, atol=1e-6)
    np.testing.assert_allclose(-c_p, dfdv_p, atol=1e-6)


def test_indefinite_system_falls_back_and_counts():
    """A strongly compressed net at a huge dt makes the exact implicit matrix indefinite;
    the step falls back to the clamped form, counts it, and stays finite."""
    system = grid_net(stiffness=1000.0)
    squeezed = rs.SpringSystem(system.positions * 0.3, system.springs, system.rest_lengths,
                               mass=0.01, stiffness=1000.0)
    sim = rs.Simulation(squeezed, dt=0.05, gravity=(0, 0, 0), integrator="backward_euler")
    sim.step(5)
    assert sim.solver_stats.fallback_steps >= 1
    assert np.all(np.isfinite(sim.positions))


def test_coincident_spring_ends_give_no_nan():
    system = rs.SpringSystem([[0, 0, 0], [0, 0, 0], [1, 0, 0]], [[0, 1], [1, 2]],
                             rest_lengths=[0.5, 1.0], stiffness=10.0, damping=1.0)
    for name in ALL:
        sim = rs.Simulation(system, dt=1e-3, integrator=name, gravity=(0, 0, 0))
        assert np.all(np.isfinite(sim.forces()))
        sim.step(10)
        assert np.all(np.isfinite(sim.positions))


def test_drag_decays_velocity_exponentially():
    single = rs.SpringSystem([[0, 0, 0]], np.zeros((0, 2), int), velocities=[[2.0, 0, 0]])
    sim = rs.Simulation(single, dt=0.01, gravity=(0, 0, 0), drag=0.5)
    sim.step(100)
    assert sim.velocities[0, 0] == pytest.approx(2.0 * math.exp(-0.5 * 1.0), rel=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_free_fall_matches_kinematics(name):
    """No springs: every integrator reproduces the parabola up to its own order."""
    single = rs.SpringSystem([[0, 10.0, 0]], np.zeros((0, 2), int), velocities=[[1.0, 0, 0]])
    sim = rs.Simulation(single, dt=1e-3, integrator=name)
    sim.step(1000)
    assert sim.positions[0, 0] == pytest.approx(1.0, rel=1e-9)
    assert sim.positions[0, 1] == pytest.approx(10.0 - 0.5 * 9.81, abs=0.01)
    assert sim.velocities[0, 1] == pytest.approx(-9.81, rel=1e-9)
