"""Checks shared by the XPBD and VBD tests (tests/test_xpbd.py, tests/test_vbd.py): each
takes the integrator's name and a ``configure(integrator_object)`` that sets the solver
attributes the test states (substeps, iterations)."""

import math

import numpy as np

import ropesim as rs
from test_physics import grid_net

#: the stiff 16x16 cloth of test_physics: 10 g particles, 1000 N/m springs
STIFF_MASS, STIFF_K = 0.01, 1000.0
EXPLICIT_LIMIT = math.sqrt(STIFF_MASS / STIFF_K)


def keep_defaults(integrator):
    """configure() that leaves the integrator's defaults."""


def hanging_chain(stiffness=200.0, mass=0.05, rest=0.1, n=12, damping=2.0):
    positions = [[0.0, -i * rest, 0.0] for i in range(n)]
    springs = [[i, i + 1] for i in range(n - 1)]
    return rs.SpringSystem(positions, springs, mass=mass, stiffness=stiffness,
                           damping=damping, pinned=[0])


def chain_static_error(sim, stiffness=200.0, mass=0.05, rest=0.1, g=9.81):
    """Largest relative difference of the spring lengths from the closed form: spring i
    carries the weight of the particles below it, l_i = L + (below) m g / k."""
    n = sim.n_particles
    lengths = -np.diff(sim.positions[:, 1])
    expected = rest + np.arange(n - 1, 0, -1) * mass * g / stiffness
    return float(np.abs(lengths / expected - 1.0).max())


def settled_chain(name, configure, seconds=30.0):
    sim = rs.Simulation(hanging_chain(), dt=1 / 60, gravity=(0, -9.81, 0), integrator=name)
    configure(sim.integrator_object)
    sim.step(round(seconds * 60))
    return sim


def stiff_cloth():
    return rs.cloth(16, 16, 0.05, mass=STIFF_MASS, stiffness=STIFF_K, damping=0.0,
                    pins="top-corners")


def check_stable_at_twenty_times_the_explicit_limit(name, configure, energy_slack):
    """The undamped stiff cloth for 300 steps of 20 sqrt(m/k): finite, springs within 30%
    strain, and the energy never above the start by more than energy_slack |E0|."""
    cloth = stiff_cloth()
    sim = rs.Simulation(cloth, dt=20 * EXPLICIT_LIMIT, integrator=name)
    configure(sim.integrator_object)
    e0 = sim.energy()
    largest_sag = 0.0
    for _ in range(30):
        sim.step(10)
        largest_sag = max(largest_sag, np.abs(sim.positions - cloth.positions3()).max())
        assert sim.energy() <= e0 + energy_slack * abs(e0)
        assert sim.max_strain() < 0.3
    assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))
    assert largest_sag > 0.005  # it moved under gravity, it did not freeze
    assert sim.solver_stats.iterations > 0 and sim.solver_stats.converged


def jittered_net(nx=4, ny=4, stiffness=100.0, pinned=(0,)):
    """test_physics' jittered cloth-like net (structural + shear), here 4x4 from one pin."""
    return grid_net(nx=nx, ny=ny, stiffness=stiffness, pinned=pinned)


def check_undamped_energy_never_grows(name, configure, steps=10_000):
    """A 4x4 net swinging from one pin, no damper, no drag, gravity on, dt = 1/60 s:
    the total energy after every step is at most the starting energy."""
    sim = rs.Simulation(jittered_net(), dt=1 / 60, integrator=name)
    configure(sim.integrator_object)
    e0 = sim.energy()
    worst = -math.inf
    for _ in range(steps):
        sim.step()
        worst = max(worst, sim.energy() - e0)
    assert worst <= 1e-9 * abs(e0)
    assert sim.energy() < e0 - 0.1 * abs(e0)  # it moved: gravity did work on it


def free_net():
    rng = np.random.default_rng(1)
    net = jittered_net(nx=6, ny=6, pinned=())
    return rs.SpringSystem(net.positions, net.springs, net.rest_lengths,
                           mass=rng.uniform(0.005, 0.02, net.n_particles), stiffness=100.0,
                           damping=0.05, velocities=rng.normal(size=net.positions.shape))


def momentum_drift(name, configure, dt, steps=300):
    sim = rs.Simulation(free_net(), dt=dt, gravity=(0, 0, 0), integrator=name)
    configure(sim.integrator_object)
    p0 = sim.momentum()
    sim.step(steps)
    assert np.all(np.isfinite(sim.positions))
    return float(np.abs(sim.momentum() - p0).max())


def check_deterministic(name, configure):
    """Two runs give the same bits; so do the serial and the parallel kernels (a 40x40
    cloth is above the parallel threshold)."""
    from ropesim.engine import parallel

    results = []
    for mode in ("serial", "serial", "parallel"):
        parallel.set_mode(mode)
        try:
            sim = rs.Simulation(rs.cloth(40, 40, 0.025, mass=0.002, stiffness=500.0,
                                         damping=0.01), dt=1 / 60, integrator=name)
            configure(sim.integrator_object)
            sim.step(20)
        finally:
            parallel.set_mode("auto")
        results.append(sim.positions.copy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


def check_switching_in_and_out(name, configure):
    """Switching in mid-run is the same as starting a fresh simulation from the state it
    finds; switching out hands the state on unchanged."""
    rope = rs.rope(16, 1.0, pins="start")
    sim = rs.Simulation(rope, dt=2e-3, integrator="symplectic_euler")
    sim.step(100)
    x, v = sim.positions.copy(), sim.velocities.copy()
    sim.integrator = name
    configure(sim.integrator_object)
    np.testing.assert_array_equal(sim.positions, x)
    fresh = rs.Simulation(rs.SpringSystem(x, rope.springs, rope.rest_lengths, mass=rope.mass,
                                          stiffness=rope.stiffness, damping=rope.damping,
                                          pinned=rope.pinned, velocities=v),
                          dt=2e-3, integrator=name)
    configure(fresh.integrator_object)
    sim.step(50)
    fresh.step(50)
    np.testing.assert_array_equal(sim.positions, fresh.positions)
    np.testing.assert_array_equal(sim.velocities, fresh.velocities)
    for other in rs.INTEGRATORS:  # out to every other one and back in
        sim.integrator = other
        x = sim.positions.copy()
        assert sim.integrator == other and np.array_equal(sim.positions, x)
        sim.step(5)
        sim.integrator = name
        sim.step(5)
    assert sim.step_count == 150 + 10 * len(rs.INTEGRATORS)
    assert np.all(np.isfinite(sim.positions)) and sim.solver_stats.iterations > 0


def check_live_stiffness_edit(name, configure):
    """After set_stiffness the chain settles to the new closed-form shape."""
    sim = settled_chain(name, configure, seconds=20.0)
    sim.set_stiffness(400.0)
    sim.step(20 * 60)
    return chain_static_error(sim, stiffness=400.0)


def check_grab_and_pins(name, configure):
    """A grabbed particle follows its target, the pinned one stays put."""
    rope = rs.rope(10, 1.0, pins="start")
    sim = rs.Simulation(rope, dt=1 / 60, integrator=name)
    configure(sim.integrator_object)
    anchor = sim.positions[0].copy()
    target = sim.positions[9] + [0.0, 0.3, 0.0]
    sim.grab(9, target)
    sim.step(120)
    np.testing.assert_array_equal(sim.positions[0], anchor)
    assert np.linalg.norm(sim.positions[9] - target) < 0.01
    sim.release()
    sim.step(10)
    assert sim.positions[9, 1] < target[1]  # falls once released


def check_grid_kernel_equals_spring_list(name, settings_list):
    """A float64 13 x 11 cloth with dampers, wind and a grab mid-run, for each settings
    dict: the grid kernels and the spring-list kernels (grid_kernels=False) give the
    same positions, velocities and residual, bit for bit, and the cloth moved."""
    cloth = rs.cloth(13, 11, 0.05, mass=0.01, stiffness=800.0, damping=0.05,
                     pins="top-corners")
    for settings in settings_list:
        runs = []
        for grid_kernels in (True, False):
            sim = rs.Simulation(cloth, dt=1 / 60, integrator=name, grid_kernels=grid_kernels)
            sim.add_force(rs.Wind((3.0, 0.0, 1.0)))
            for key, value in settings.items():
                setattr(sim.integrator_object, key, value)
            assert (sim.integrator_object._grid is not None) == grid_kernels
            sim.step(10)
            sim.grab(40, sim.positions[40] + [0.0, 0.0, 0.05])
            sim.step(10)
            runs.append((sim.positions.copy(), sim.velocities.copy(),
                         sim.solver_stats.residual))
        np.testing.assert_array_equal(runs[0][0], runs[1][0])
        np.testing.assert_array_equal(runs[0][1], runs[1][1])
        assert runs[0][2] == runs[1][2]
        assert np.abs(runs[0][0] - cloth.positions3()).max() > 0.01  # it moved
