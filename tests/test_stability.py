"""The stability gauge (issue 15): the estimated explicit stability limit against the
closed form on one spring and against the dt at which symplectic Euler really diverges."""

import math
import warnings

import numpy as np
import pytest

from ropesim.engine import builders
from ropesim.engine.simulation import Simulation, SimulationDiverged
from ropesim.engine.stability import (
    StabilityGauge, guaranteed_limit, stability_limit, stability_margin,
)
from ropesim.io.scenes import load


def one_spring(stiffness: float, damping: float, mass: float) -> Simulation:
    """A particle of `mass` kg on one spring (k N/m, c N*s/m) to a pinned particle."""
    system = builders.rope(n=2, length=0.5, mass=mass, stiffness=stiffness, damping=damping)
    return Simulation(system, dt=1e-3, gravity=(0.0, 0.0, 0.0), integrator="symplectic_euler")


def test_undamped_spring_limit_is_two_over_omega():
    sim = one_spring(stiffness=400.0, damping=0.0, mass=0.25)
    assert stability_limit(sim) == pytest.approx(2.0 * math.sqrt(0.25 / 400.0), rel=1e-9)


def test_damped_spring_limit_solves_w2_dt2_plus_2b_dt_equals_4():
    k, c, m = 400.0, 2.0, 0.25
    dt = stability_limit(one_spring(k, c, m))
    assert (k / m) * dt * dt + 2.0 * (c / m) * dt == pytest.approx(4.0, rel=1e-9)
    assert dt < 2.0 * math.sqrt(m / k)  # explicit damping lowers the limit


def test_nothing_free_has_no_limit():
    system = builders.rope(n=3, length=1.0, pins=[0, 1, 2])
    sim = Simulation(system, dt=1e-3)
    assert stability_limit(sim) == math.inf
    assert stability_margin(sim) == 0.0


def diverges(scene, dt: float, duration: float = 0.5) -> bool:
    """Symplectic Euler at dt for `duration` s: blown up (a SimulationDiverged, or kinetic
    energy ten times the largest a falling system could gain from gravity)?"""
    sim = scene.simulation(dt=dt, integrator="symplectic_euler")
    scale = sim.masses.sum() * 9.81 * (np.ptp(sim.positions, axis=0).max() + 1.0)
    try:
        for _ in range(int(duration / dt) // 10):
            sim.step(10)
            if sim.kinetic_energy() > 10.0 * scale:
                return True
    except SimulationDiverged:
        return True
    return False


def divergence_dt(scene, low: float, high: float, halvings: int = 7) -> float:
    """The dt (s) at which symplectic Euler starts to diverge, by bisection (geometric)."""
    assert not diverges(scene, low) and diverges(scene, high)
    for _ in range(halvings):
        middle = math.sqrt(low * high)
        low, high = (low, middle) if diverges(scene, middle) else (middle, high)
    return math.sqrt(low * high)


@pytest.mark.parametrize("name, overrides", [
    ("rope", {"rope.n": 16}),
    ("cloth", {"cloth.nx": 10, "cloth.ny": 10}),
])
def test_gauge_limit_matches_where_symplectic_euler_diverges(name, overrides):
    scene = load(name).with_overrides(overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the dt warning past stable_dt
        limit = stability_limit(scene.simulation())
        measured = divergence_dt(scene, limit / 2.0, limit * 2.0)
    assert limit == pytest.approx(measured, rel=0.2)


def test_gauge_refreshes_when_parameters_change():
    sim = one_spring(stiffness=400.0, damping=0.0, mass=0.25)
    gauge = StabilityGauge(sim)
    first = gauge.limit()
    assert gauge.margin() == pytest.approx(sim.dt / first)
    assert gauge.omega_max == pytest.approx(math.sqrt(400.0 / 0.25))
    sim.set_stiffness(1600.0)  # four times stiffer: omega doubles, the limit halves
    assert gauge.limit() == pytest.approx(first / 2.0, rel=1e-9)
    sim.set_mass(1.0)  # four times heavier: back to the first limit
    assert gauge.limit() == pytest.approx(first, rel=1e-9)


def test_gauge_does_not_recompute_while_nothing_changed(monkeypatch):
    from ropesim.engine import stability

    sim = one_spring(stiffness=400.0, damping=0.5, mass=0.25)
    gauge = StabilityGauge(sim)
    first = gauge.limit()
    sim.step(20)  # moving alone does not count as a change

    def recompute(_sim):
        raise AssertionError("recomputed without a parameter change")

    monkeypatch.setattr(stability, "_limit", recompute)
    assert gauge.limit() == first and gauge.margin(2e-3) == 2e-3 / first
    sim.set_damping(1.0)
    with pytest.raises(AssertionError, match="recomputed"):
        gauge.limit()


def test_dt_warning_comes_exactly_past_the_gauges_limit():
    """The warning for an explicit integrator uses the gauge's estimate, not the
    conservative Gershgorin bound (stable_dt) it replaced: 0.9 x the limit is quiet
    although it is past the bound, 1.1 x warns and names the limit."""
    cloth = builders.cloth(10, 10, 0.05, mass=0.01, stiffness=1000.0)
    limit = stability_limit(Simulation(cloth, dt=1e-5))
    assert limit > 1.3 * cloth.stable_dt()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Simulation(cloth, dt=0.9 * limit)
    with pytest.warns(RuntimeWarning, match=rf"stable step .* gauge puts it at {limit:.3g} s"):
        Simulation(cloth, dt=1.1 * limit)


def test_switching_to_an_explicit_integrator_past_the_limit_warns():
    cloth = builders.cloth(10, 10, 0.05, mass=0.01, stiffness=1000.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim = Simulation(cloth, dt=1e-5)
        limit = stability_limit(sim)
        sim.integrator = "backward_euler"
        sim.dt = 1.5 * limit  # implicit: quiet
    with pytest.warns(RuntimeWarning, match="stable step"):
        sim.integrator = "verlet"


def test_heavy_damping_lowers_the_limit_below_the_undamped_bound_and_still_warns():
    """Damping c enters the limit (w^2 dt^2 + 2 b dt = 4): with heavy dampers the limit
    falls below the undamped Gershgorin bound, and the quick check before the gauge
    (guaranteed_limit) counts the dampers, so a dt between the two still warns."""
    rope = builders.rope(16, 1.0, stiffness=200.0, damping=20.0)
    sim = Simulation(rope, dt=1e-5)
    limit = stability_limit(sim)
    assert guaranteed_limit(sim) <= limit < rope.stable_dt()
    with pytest.warns(RuntimeWarning, match="stable step"):
        Simulation(rope, dt=0.5 * (limit + rope.stable_dt()))


@pytest.mark.parametrize("damping", [0.0, 0.5, 5.0])
def test_guaranteed_limit_never_exceeds_the_gauge(damping):
    for system in (builders.rope(20, 1.0, damping=damping),
                   builders.cloth(8, 8, 0.05, damping=damping)):
        sim = Simulation(system, dt=1e-5)
        assert 0.0 < guaranteed_limit(sim) <= stability_limit(sim) * (1 + 1e-9)
