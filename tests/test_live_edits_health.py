"""Live edits that move a contact surface or change the springs' model are not a
divergence (issues 11, 14): a collider margin grown under a resting cloth, the
self-collision thickness tripled under two layers, XPBD's compliance set in place of
each spring's 1/k. Each edit's energy counts as the edit's work (the health check's
reference follows it), and a real divergence right after one is still caught."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ropesim as rs
from ropesim.app.collision_panel import set_collider_margin
from ropesim.app.solver_panel import first_value, set_solver_setting
from ropesim.engine.health import CHECK_EVERY, HealthCheck
from ropesim.engine.solver_settings import SOLVER_SETTING_TABLE

DT = 0.001  # s
TABLE_TOP = 1  # contact index of the table top (after the ground)


def table_sim() -> rs.Simulation:
    """A 16 x 16 tablecloth (0.6 m, 1 kg, 600 N/m) over a 0.4 x 0.3 m table top with
    margin "auto" (0.2 x the 0.04 m spacing: 0.008 m), like the `table` scene."""
    cloth = rs.cloth(16, 16, spacing=0.04, plane="xz", pins="none", origin=(0.0, 0.53, 0.0),
                     mass=0.004, stiffness=600.0, damping=0.05)
    top = rs.Box(center=(0.0, 0.49, 0.0), size=(0.4, 0.04, 0.3), friction=0.6, margin="auto")
    return rs.Simulation(cloth, dt=DT, drag=0.3, contacts=[rs.Ground(0.0, 0.6), top])


def two_layers_sim() -> rs.Simulation:
    """Two 10 x 10 cloths (0.04 m spacing) on the floor, the upper one half over the
    lower one, with self-collision at its default thickness (0.032 m)."""
    lower = rs.cloth(10, 10, spacing=0.04, plane="xz", pins="none", origin=(0.0, 0.01, 0.0),
                     mass=0.01, stiffness=1000.0, damping=0.1)
    upper = rs.cloth(10, 10, spacing=0.04, plane="xz", pins="none", origin=(0.2, 0.045, 0.0),
                     mass=0.01, stiffness=1000.0, damping=0.1)
    return rs.Simulation(rs.concatenate([lower, upper]), dt=DT, drag=0.2,
                         contacts=[rs.Ground(0.0, 0.8)], self_collision=True)


def hanging_cloth_xpbd() -> rs.Simulation:
    """The `cloth` scene's cloth (1000 N/m, 0.01 kg particles, two corners pinned) at
    12 x 12, with xpbd, 0.3 s into its swing."""
    cloth = rs.cloth(12, 12, spacing=0.05, plane="xz", pins="top-corners", mass=0.01,
                     stiffness=1000.0, damping=0.1)
    sim = rs.Simulation(cloth, dt=DT, integrator="xpbd", drag=0.05)
    sim.step(300)
    return sim


@pytest.fixture(scope="module")
def settled_table() -> tuple[np.ndarray, np.ndarray]:
    """(x, v) of the tablecloth 0.6 s after it was let go: resting on the top."""
    sim = table_sim()
    sim.step(600)
    return sim.positions.copy(), sim.velocities.copy()


@pytest.fixture(scope="module")
def settled_layers() -> tuple[np.ndarray, np.ndarray]:
    sim = two_layers_sim()
    sim.step(300)
    return sim.positions.copy(), sim.velocities.copy()


def resting(make, state) -> rs.Simulation:
    sim = make()
    sim.positions[:] = state[0]
    sim.velocities[:] = state[1]
    sim.step(1)
    return sim


def energies_after(sim: rs.Simulation, steps: int, every: int = 100) -> list[float]:
    """Total energy (J) every ``every`` steps over ``steps`` steps."""
    return [sim.energy() for _ in sim.step_chunks(steps, every)]


def test_margin_jump_under_a_resting_cloth_counts_as_the_edits_work(settled_table):
    sim = resting(table_sim, settled_table)
    before, scale = sim.energy(), sim._health.energy_scale
    assert set_collider_margin(sim, TABLE_TOP, 0.04) is None  # auto (0.008 m) -> 0.04 m
    sim.step(1)
    pushed = sim.energy()
    # the push-out's work is far beyond what the resting scene may gain (so the check
    # would stop the run if it did not count it as the edit's)
    assert pushed - before > 5.0 * scale
    later = energies_after(sim, 1000)
    # no input after the edit: the energy it gave only decays (drag, dampers, friction)
    assert max(later) <= pushed + 1e-9 * abs(pushed)
    assert sim.energy_checked
    on_top = (np.abs(sim.positions[:, 0]) < 0.15) & (np.abs(sim.positions[:, 2]) < 0.1)
    assert np.median(sim.positions[on_top, 1]) == pytest.approx(0.51 + 0.04, abs=2e-4)


def test_small_margin_step_and_back_to_auto_stay_healthy(settled_table):
    sim = resting(table_sim, settled_table)
    for margin in (0.02, 0.04, "auto"):
        assert set_collider_margin(sim, TABLE_TOP, margin) is None
        sim.step(300)
    assert np.isfinite(sim.positions).all()


def stale_view_kick(sim: rs.Simulation, speed: float) -> None:
    """Every particle gets ``speed`` m/s upwards through a view kept from before the
    last step, one step before a health check: motion the check must judge (a write
    through a fresh view is a new reference), before contacts take it up."""
    sim.step((-sim.step_count - 2) % CHECK_EVERY)
    velocities = sim.velocities
    sim.step(1)
    velocities[:, 1] += speed


def test_a_runaway_right_after_a_margin_jump_is_still_caught(settled_table):
    sim = resting(table_sim, settled_table)
    set_collider_margin(sim, TABLE_TOP, 0.04)
    sim.step(1)
    stale_view_kick(sim, 20.0)  # 200 J into a 1 kg cloth whose scale is now about 43 J
    with pytest.raises(rs.SimulationDiverged, match="energy runaway"):
        sim.step(1)


def test_an_unstable_dt_right_after_a_margin_jump_is_caught(settled_table):
    sim = resting(table_sim, settled_table)
    set_collider_margin(sim, TABLE_TOP, 0.04)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the dt warning
        sim.dt = 3.0 * sim.stable_dt()
    with pytest.raises(rs.SimulationDiverged):
        sim.step(2000)
    assert np.isfinite(sim.positions).all()


def test_thickness_tripled_under_two_layers_counts_as_the_edits_work(settled_layers):
    sim = resting(two_layers_sim, settled_layers)
    before, scale = sim.energy(), sim._health.energy_scale
    sim.thickness = 3.0 * sim.thickness
    sim.step(1)
    pushed = sim.energy()
    assert pushed - before > 5.0 * scale
    later = energies_after(sim, 1000)
    assert max(later) <= pushed
    stale_view_kick(sim, 30.0)
    with pytest.raises(rs.SimulationDiverged, match="energy runaway"):
        sim.step(1)


def test_unticking_compliance_sets_the_springs_median_inverse_stiffness():
    sim = hanging_cloth_xpbd()
    setting = SOLVER_SETTING_TABLE["xpbd"]["compliance"]
    assert first_value(sim, setting) == pytest.approx(1e-3, rel=1e-12)  # 1 / (1000 N/m)
    stiffness = np.where(np.arange(sim.n_springs) % 3 == 0, 250.0, 1000.0)
    sim.set_stiffness(stiffness)  # one spring in three at 250 N/m: the median stays 1/1000
    assert first_value(sim, setting) == pytest.approx(1e-3, rel=1e-12)
    sim.set_stiffness(1000.0)
    x_default = sim.positions.copy()
    assert set_solver_setting(sim, "compliance", first_value(sim, setting)) is None
    sim.step(2000)  # 2 s: undamped now, the same springs
    assert np.isfinite(sim.positions).all()
    assert abs(float(sim.positions[:, 1].min() - x_default[:, 1].min())) < 0.3


def test_a_stiffer_compliance_is_judged_under_its_own_model():
    sim = hanging_cloth_xpbd()
    assert set_solver_setting(sim, "compliance", 1e-6) is None  # 1000 x stiffer
    sim.step(2000)  # the stretch the soft cloth had is energy under the stiff one
    assert np.isfinite(sim.positions).all()
    assert sim.max_strain() < 0.05  # it is the stiffer cloth now
    sim.integrator = "symplectic_euler"  # its own springs again, judged with their k
    sim.step(300)


def test_a_diverging_xpbd_setting_is_still_caught():
    sim = hanging_cloth_xpbd()
    set_solver_setting(sim, "compliance", 1e-6)
    set_solver_setting(sim, "relaxation", 1.99)  # over-relaxed stiff constraints blow up
    with pytest.raises(rs.SimulationDiverged):
        sim.step(1000)
    assert np.isfinite(sim.positions).all()


def test_health_check_follows_a_compliance():
    cloth = rs.cloth(4, 4, spacing=0.1, stiffness=500.0)
    sim = rs.Simulation(cloth, dt=DT, gravity=(0.0, 0.0, 0.0))  # energy: elastic only
    stiffness = sim.params.stiffness.copy()
    stiffness[0] = 0.0  # a broken spring holds nothing under any compliance
    x = sim.positions.copy()
    x[:, 0] *= 1.1  # 10 % stretched along x
    check = HealthCheck(x, sim.velocities, sim._model.spring_a, sim._model.spring_b,
                        sim.params.rest_lengths, stiffness, sim.params.damping, sim.params.mass,
                        sim.params.gravity, sim.dt)
    own = check.reference_energy
    assert check.follow_compliance(1e-4) and not check.follow_compliance(1e-4)
    check.rebase(x, sim.velocities)
    assert np.array_equal(check.stiffness, np.where(stiffness > 0, 1e4, 0.0))
    assert check.reference_energy == pytest.approx(own * 1e4 / 500.0, rel=1e-9)
    for unchanged in (None, 0.0):  # the springs' own k (0: rigid rods at rest length)
        check.follow_compliance(unchanged)
        assert check.stiffness is stiffness
