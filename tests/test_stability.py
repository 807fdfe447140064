"""The stability gauge (issue 15): the estimated explicit stability limit against the
closed form on one spring and against the dt at which symplectic Euler really diverges."""

import math
import warnings

import numpy as np
import pytest

from ropesim.engine import builders
from ropesim.engine.simulation import Simulation, SimulationDiverged
from ropesim.engine.stability import StabilityGauge, stability_limit, stability_margin
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
