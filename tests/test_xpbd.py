"""XPBD (integrators/xpbd.py) against closed forms and invariants. Unless a test says
otherwise it runs the defaults: 5 substeps of one over-relaxed Gauss-Seidel iteration
per step of dt (the fewest that keep the stiff benchmark cloth's error below backward
Euler's); the static-shape and the 20x-limit tests state their 20 substeps (the
small-steps scheme)."""

import math

import numpy as np
import pytest

import ropesim as rs
from solver_checks import (
    chain_static_error, check_deterministic, check_grab_and_pins,
    check_grid_kernel_equals_spring_list, check_live_stiffness_edit,
    check_stable_at_twenty_times_the_explicit_limit, check_switching_in_and_out,
    check_undamped_energy_never_grows, hanging_chain, keep_defaults, momentum_drift,
    settled_chain,
)


def test_registered_as_unconditionally_stable_with_solver_stats():
    cls = rs.INTEGRATORS["xpbd"]
    assert cls.unconditionally_stable and cls.has_solver_stats


def twenty_substeps(xpbd):
    """configure(): the small-steps scheme of 20 substeps x 1 iteration."""
    xpbd.substeps = 20


def test_hanging_chain_settles_to_the_closed_form_static_shape_at_dt_60th():
    """20 substeps x 1 iteration: within 2% (the dampers' term bends the small-steps fixed
    point by about c h / k); 20 substeps x 4 iterations converge each substep: 0.1%."""
    assert chain_static_error(settled_chain("xpbd", twenty_substeps)) < 0.02

    def four_iterations(xpbd):
        xpbd.substeps = 20
        xpbd.iterations = 4

    assert chain_static_error(settled_chain("xpbd", four_iterations)) < 1e-3


def test_stable_and_finite_at_twenty_times_the_explicit_limit():
    """Each substep is then 1x the explicit limit; the energy swings by a few percent
    (like symplectic Euler's, bounded), within 10%."""
    check_stable_at_twenty_times_the_explicit_limit("xpbd", twenty_substeps, energy_slack=0.1)


def test_undamped_energy_never_grows_over_ten_thousand_steps():
    check_undamped_energy_never_grows("xpbd", keep_defaults)


@pytest.mark.parametrize("dt", [1e-3, 1 / 60])
def test_free_system_conserves_momentum(dt):
    # every projection moves the two ends by equal and opposite impulses
    assert momentum_drift("xpbd", keep_defaults, dt) < 1e-11


def test_deterministic_and_serial_equals_parallel():
    check_deterministic("xpbd", keep_defaults)


def test_switching_in_and_out_mid_run():
    check_switching_in_and_out("xpbd", keep_defaults)


def test_live_stiffness_edit_moves_the_static_shape():
    assert check_live_stiffness_edit("xpbd", twenty_substeps) < 0.02


def test_grab_and_pins():
    check_grab_and_pins("xpbd", keep_defaults)


def test_zero_compliance_keeps_rest_lengths_after_convergence():
    """Rigid rods (compliance 0, plain PBD projection): a swinging chain keeps every
    rod's length to 1e-6 m once each substep has converged (20 substeps of 200
    iterations: Gauss-Seidel along a chain converges slowly)."""
    chain = hanging_chain()
    swinging = rs.SpringSystem(chain.positions, chain.springs, mass=0.05, stiffness=200.0,
                               pinned=[0], velocities=np.tile([1.0, 0.0, 0.0], (12, 1)))
    sim = rs.Simulation(swinging, dt=1 / 60, integrator="xpbd")
    xpbd = sim.integrator_object
    xpbd.compliance = 0.0
    xpbd.substeps = 20
    xpbd.iterations = 200
    for _ in range(60):
        sim.step()
        lengths = np.linalg.norm(np.diff(sim.positions, axis=0), axis=1)
        assert np.abs(lengths - 0.1).max() < 1e-6
    assert np.abs(sim.positions[-1, 0]) > 0.05  # it swung
    assert sim.solver_stats.residual < 1e-6 and sim.solver_stats.iterations == 4000


def test_compliance_is_the_inverse_stiffness():
    """compliance = 1/k for every spring is the same spring as the default."""
    runs = []
    for compliance in (None, 1 / 200.0):
        sim = rs.Simulation(hanging_chain(damping=0.0), dt=1 / 60, integrator="xpbd")
        sim.integrator_object.compliance = compliance
        sim.step(30)
        runs.append(sim.positions.copy())
    np.testing.assert_allclose(runs[0], runs[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("field, value, error", [
    ("substeps", 0, ValueError), ("substeps", 2.5, ValueError),
    ("iterations", -1, ValueError), ("compliance", -1.0, ValueError),
    ("compliance", float("nan"), ValueError), ("compliance", "soft", TypeError),
])
def test_bad_settings_name_the_field(field, value, error):
    sim = rs.Simulation(rs.rope(4, 1.0), integrator="xpbd")
    with pytest.raises(error, match=f"xpbd.{field}"):
        setattr(sim.integrator_object, field, value)


def test_grid_kernel_equals_the_spring_list_kernel_bit_for_bit():
    """The structured-grid kernel (structure-of-arrays rows, no index arrays) and the
    spring-list kernel project the same colours with the same arithmetic, so the same
    bits; 3 iterations per substep exercise the multipliers, compliance 1e-4 m/N the
    one-compliance form."""
    check_grid_kernel_equals_spring_list("xpbd", [
        {}, {"iterations": 3}, {"compliance": 1e-4, "substeps": 4}])


@pytest.mark.parametrize("value, error", [
    (0.5, ValueError), (2.0, ValueError), (float("nan"), ValueError), ("fast", TypeError),
    (True, TypeError),
])
def test_bad_relaxation_names_the_field(value, error):
    sim = rs.Simulation(rs.rope(4, 1.0), integrator="xpbd")
    with pytest.raises(error, match="xpbd.relaxation"):
        sim.integrator_object.relaxation = value


def soft_flat_cloth(n=32):
    """The standard workload's cloth, unjittered: n x n over 1 m, flat, 1 kg in all,
    k / m = 1e4 1/s^2 and c / m = 10 1/s per spring, hanging from two corners (at 6
    substeps of dt = 1/60 s h^2 k (w_i + w_j) = 0.15: soft)."""
    m = 1.0 / (n * n)
    return rs.cloth(n, n, 1.0 / (n - 1), plane="xz", mass=m, stiffness=1e4 * m,
                    damping=10.0 * m, pins="top-corners")


def fall(sim, steps, every=1):
    """(largest energy gain over the start, J; peak strain) over ``steps`` x ``every``."""
    sim._health.energy_check = False  # the gain is what is measured here
    e0 = sim.energy()
    gain, peak = -math.inf, 0.0
    for _ in range(steps):
        sim.step(every)
        gain = max(gain, sim.energy() - e0)
        peak = max(peak, sim.max_strain())
    return gain, peak


def test_soft_cloth_stretches_as_symplectic_euler_and_gains_no_energy():
    """One plain projection per substep acts softer than the springs on a soft cloth
    (relaxation 1: 10% more peak strain than symplectic Euler at dt = 1/600 s, and an
    energy gain of 0.3 J measured with the real k); the capped over-relaxation of the
    default follows symplectic Euler's peak strain within 5% and never gains energy."""
    cloth = soft_flat_cloth()
    _, reference_peak = fall(rs.Simulation(cloth, dt=1 / 600), 150, every=10)
    gain, peak = fall(rs.Simulation(cloth, dt=1 / 60, integrator="xpbd"), 150)
    assert gain <= 0.0
    assert abs(peak / reference_peak - 1.0) < 0.05


def test_residual_is_computed_when_read_from_the_last_step():
    """solver_stats.residual is the constraint error of the last step's end positions
    and multipliers, whenever it is read (reading it again gives the same number)."""
    from ropesim.engine.integrators.xpbd import constraint_error

    sim = rs.Simulation(rs.cloth(8, 8, 0.05, mass=0.01, stiffness=800.0, damping=0.05),
                        dt=1 / 60, integrator="xpbd", grid_kernels=False)
    xpbd, p = sim.integrator_object, sim.integrator_object.model.params
    sim.step(3)
    expected = constraint_error(sim.positions.copy(), xpbd._x_prev, xpbd.model.spring_a,
                                xpbd.model.spring_b, p.rest_lengths, p.stiffness,
                                p.damping, p.inv_mass, p.fixed, xpbd._lambda,
                                1 / 60 / xpbd.substeps, -1.0)
    assert expected > 0.0
    assert sim.solver_stats.residual == expected == sim.solver_stats.residual
    assert sim.solver_stats.converged and sim.solver_stats.iterations == xpbd.substeps


@pytest.mark.parametrize("compliance", [None, 1e-4, 0.0])
@pytest.mark.parametrize("grid", [True, False])
def test_a_broken_spring_stays_broken_with_any_compliance(compliance, grid):
    """A broken spring has stiffness 0 and exerts no force (Simulation.broken): with each
    spring's own compliance 1/k, a fixed compliance or rigid rods (0), a cloth whose
    middle column of springs is broken falls apart into two halves."""
    cloth = rs.cloth(nx=6, ny=4, spacing=0.1, pins="none")
    sim = rs.Simulation(cloth, dt=1 / 60, gravity=(0.0, 0.0, 0.0), integrator="xpbd",
                        grid_kernels=grid)
    sim.integrator_object.compliance = compliance
    x = cloth.positions3()[:, 0]
    springs = np.asarray(cloth.springs)
    left = x < 0.25
    crossing = left[springs[:, 0]] != left[springs[:, 1]]
    sim.break_springs(np.flatnonzero(crossing))
    sim.velocities[left, 0] = -1.0
    sim.step(30)
    gap = sim.positions[~left, 0].min() - sim.positions[left, 0].max()
    assert gap > 0.1 + 0.4  # the halves parted at 1 m/s for 0.5 s
    assert sim.solver_stats.residual < 1e-3  # the broken springs are not constraints
