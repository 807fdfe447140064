"""Issue 10 at the Simulation level: every bad value a field-naming error, no NaN or inf
ever returned in the state, divergence caught early with a healthy state kept, and
advice that never names the integrator that failed."""

import math
import warnings

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine.health import CHECKPOINT_EVERY
from ropesim.engine.simulation import GRAB_REACH, MAX_STEPS_PER_CALL

INTEGRATORS = list(rs.INTEGRATORS)
DTYPES = [np.float32, np.float64]


def small_cloth(dt=1e-3, **kwargs):
    return rs.Simulation(rs.cloth(8, 8, 0.1), dt=dt, **kwargs)


def assert_finite(sim):
    assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))


# --- no public call returns with a NaN or inf in the state ---------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("array, value", [("positions", np.nan), ("velocities", np.inf)])
def test_a_written_nan_is_caught_and_the_last_checkpoint_restored(integrator, dtype, array,
                                                                  value):
    # dt = 0.1 ms: explicit Euler stays healthy past the first checkpoints here
    sim = small_cloth(dt=1e-4, integrator=integrator, dtype=dtype)
    sim.step(CHECKPOINT_EVERY + 5)  # checkpoints at steps 0 and CHECKPOINT_EVERY
    getattr(sim, array)[2, 0] = value
    with pytest.raises(rs.SimulationDiverged) as info:
        sim.step(500)
    assert "non-finite" in info.value.reason and "particle 2" in info.value.reason
    assert_finite(sim)
    assert sim.step_count == CHECKPOINT_EVERY and info.value.step == CHECKPOINT_EVERY + 1
    assert sim.time == pytest.approx(CHECKPOINT_EVERY * sim.dt)
    sim.step(10)  # and it carries on from there
    assert_finite(sim)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_nan_in_a_pinned_particle_is_caught_too(integrator):
    sim = small_cloth(integrator=integrator)
    sim.step(8)
    x = sim.positions
    sim.step(1)
    pinned = int(np.flatnonzero(sim.pinned)[0])
    x[pinned, 1] = np.nan  # through a held view: the step's own report must see it
    with pytest.raises(rs.SimulationDiverged, match="non-finite"):
        sim.step(3)
    assert_finite(sim)
    assert sim.step_count == 0


def test_a_nan_written_before_the_first_step_says_the_initial_state_is_kept():
    sim = small_cloth(integrator="backward_euler")
    start = sim.positions.copy()
    sim.positions[5] = np.nan
    with pytest.raises(rs.SimulationDiverged, match="the initial state is kept") as info:
        sim.step(500)
    assert info.value.advice is None  # a write is not the integrator's fault: no advice
    np.testing.assert_array_equal(sim.positions, start)
    assert sim.step_count == 0


@pytest.mark.parametrize("integrator", ["backward_euler", "implicit_midpoint"])
def test_implicit_integrators_report_a_non_finite_position(integrator):
    """The theta update's speed result turns NaN for a non-finite position as well (a
    NaN position leaves CG nothing to do: the velocities stayed finite before)."""
    sim = small_cloth(integrator=integrator)
    sim.step(2)
    sim.state.x[3, 0] = np.nan  # straight into the integrator, past Simulation.step
    assert math.isnan(sim.integrator_object.step(sim.state, sim.dt))


def test_a_held_view_is_watched_as_well():
    sim = small_cloth()
    x = sim.positions  # kept and written later
    sim.step(16)
    x[7, 2] = np.inf  # not seen before the step: the step's own report catches it
    with pytest.raises(rs.SimulationDiverged, match="non-finite state after the step"):
        sim.step(1)
    assert_finite(sim)


def test_writes_that_stay_finite_become_the_health_reference():
    """Lifting the whole cloth 50 m adds 50 m x m g of energy: a write, not a runaway."""
    sim = small_cloth(gravity=(0, -9.81, 0))
    sim.step(40)
    sim.positions[:, 1] += 50.0
    sim.step(400)
    assert_finite(sim)


# --- each Simulation-level bad value is a field-naming error -------------------------------
@pytest.mark.parametrize("kwargs, field", [
    (dict(dt=None), "dt"), (dict(dt="0.01"), "dt"), (dict(dt=math.inf), "dt"),
    (dict(dt=1e30), "dt"),  # beyond float32
    (dict(drag="x"), "drag"), (dict(drag=math.inf), "drag"),
    (dict(gravity="abc"), "gravity"), (dict(gravity=(0, math.nan, 0)), "gravity"),
    (dict(gravity=None), "gravity"),
    (dict(max_speed=-1), "max_speed"), (dict(max_speed=None), "max_speed"),
    (dict(grab_follow_time=math.nan), "grab_follow_time"),
    (dict(substeps="x"), "substeps"), (dict(substeps=1e30), "substeps"),
    (dict(substeps=2.5), "substeps"),
    (dict(cg_tolerance=math.nan), "cg_tolerance"), (dict(cg_tolerance=5.0), "cg_tolerance"),
    (dict(cg_max_iterations=math.inf), "cg_max_iterations"),
    (dict(dtype="abc"), "dtype"), (dict(grid_kernels="yes"), "grid_kernels"),
    (dict(contacts=5), "contacts"), (dict(contacts=["ground"]), "contacts"),
    (dict(contacts=rs.Sphere(radius=1e30)), "contacts"),  # beyond float32
    (dict(integrator=None), "integrator"),
])
def test_bad_constructor_values_name_the_field(kwargs, field):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises((ValueError, TypeError), match=rf"^{field}"):
            rs.Simulation(rs.rope(4, 1.0), dtype=kwargs.pop("dtype", np.float32), **kwargs)


@pytest.mark.parametrize("attribute, value", [
    ("dt", None), ("dt", -1.0), ("drag", "x"), ("gravity", "abc"), ("gravity", [1, 2, 3, 4]),
    ("max_speed", -1), ("max_speed", math.inf), ("grab_follow_time", math.nan),
    ("substeps", True), ("cg_tolerance", "tight"), ("cg_max_iterations", 0),
    ("contacts", "ground"), ("integrator", 3),
])
def test_bad_settings_on_a_running_simulation_name_the_field(attribute, value):
    sim = small_cloth()
    sim.step(2)
    before = getattr(sim, attribute)
    with pytest.raises((ValueError, TypeError), match=rf"^{attribute}"):
        setattr(sim, attribute, value)
    np.testing.assert_array_equal(getattr(sim, attribute), before)  # left unchanged


def test_a_single_contact_is_accepted_as_well_as_a_sequence():
    sim = small_cloth()
    sim.contacts = rs.Ground(height=-0.5)
    assert sim.contacts == (rs.Ground(height=-0.5),)
    sim.contacts = [rs.Ground(), rs.Sphere()]
    assert len(sim.contacts) == 2


@pytest.mark.parametrize("n", [math.inf, 1e30, MAX_STEPS_PER_CALL + 1, -1, 2.5, "10", None,
                               True, math.nan])
def test_bad_step_counts_are_clear_errors(n):
    sim = small_cloth()
    with pytest.raises((ValueError, TypeError), match=r"^n \(number of steps\)"):
        sim.step(n)
    assert sim.step_count == 0


def test_integral_float_step_counts_still_work():
    sim = small_cloth()
    sim.step(3.0)
    assert sim.step_count == 3


@pytest.mark.parametrize("setter, value, field", [
    ("set_stiffness", 1e39, "stiffness"), ("set_damping", 1e30, "damping"),
    ("set_mass", 1e-46, "mass"), ("set_mass", 1e30, "mass"),
    ("set_rest_lengths", 1e25, "rest_lengths"),
])
def test_float32_overflow_in_live_setters_is_a_field_error_without_warnings(setter, value,
                                                                            field):
    sim = small_cloth(dtype=np.float32)
    before = sim.params._asdict()
    before = {key: np.copy(array) for key, array in before.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning on the way
        with pytest.raises(ValueError, match=rf"^{field}: .*float32"):
            getattr(sim, setter)(value)
        sim.step(5)
    for key, array in before.items():
        if key not in ("fixed",):
            np.testing.assert_array_equal(getattr(sim.params, key), array)


def test_float32_overflow_in_the_system_is_caught_by_the_constructor():
    system = rs.SpringSystem([[0.0, 0.0], [1.0, 0.0]], [[0, 1]], stiffness=1e39)
    rs.Simulation(system)  # fine in float64
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^stiffness: .* float32"):
            rs.Simulation(system, dtype=np.float32)


def test_absurd_grab_targets_are_rejected_and_far_ones_pulled_back():
    sim = rs.Simulation(rs.rope(40, 1.0, pins="start"), dt=1e-3)
    with pytest.raises(ValueError, match=r"^target: "):
        sim.grab(39, [1e308, 0, 0])  # beyond what float64 can multiply
    with pytest.raises(ValueError, match=r"^target: "):
        sim.grab(39, [math.nan, 0, 0])
    with pytest.raises(ValueError, match=r"^target: "):
        sim.grab(39, "here")
    assert sim.grabbed is None
    sim.grab(39, [1e100, 0.0, 0.0])  # a pointer ray at a grazing angle
    centre, reach = sim.grab_reach()
    assert reach == GRAB_REACH * max(1.0, float(np.linalg.norm(np.ptp(
        sim.system.positions3(), axis=0))))
    try:
        sim.step(50)
    except rs.SimulationDiverged:
        pass  # pulling a rope 1 km in 50 ms may be caught as a runaway; never a NaN
    assert_finite(sim)
    assert np.linalg.norm(sim.positions[39] - centre) <= reach * (1 + 1e-12)


def test_release_velocity_must_be_finite_and_below_max_speed():
    sim = rs.Simulation(rs.rope(5, 1.0), dt=1e-3)
    sim.grab(4, sim.positions[4])
    with pytest.raises(ValueError, match=r"^velocity: .* max_speed"):
        sim.release(velocity=[1e6, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"^velocity: "):
        sim.release(velocity=[math.inf, 0.0, 0.0])
    assert sim.grabbed == 4  # still held
    sim.release(velocity=[3.0, 0.0, 0.0])
    assert sim.grabbed is None


@pytest.mark.parametrize("index", [1.5, "3", None, True, -1, 10**20])
def test_bad_particle_indices_name_the_particle(index):
    sim = rs.Simulation(rs.rope(5, 1.0), dt=1e-3)
    for call in (lambda: sim.grab(index, [0, 0, 0]), lambda: sim.pin(index),
                 lambda: sim.unpin(index)):
        with pytest.raises(ValueError, match=r"^particle: index must be in 0..4"):
            call()


def test_read_only_views_and_writable_state():
    sim = small_cloth()
    for name in ("masses", "stiffness", "damping", "rest_lengths"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(sim, name)[:] = 1.0
    assert sim.positions.flags.writeable and sim.velocities.flags.writeable


def test_a_pluck_that_would_overflow_float32_is_refused():
    sim = rs.Simulation(rs.rope(5, 1.0), dt=1e-3, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^impulse: .* max_speed"):
            sim.pluck(4, [1e100, 0.0, 0.0])
    assert_finite(sim)
    sim.pluck(4, [0.0, 0.01, 0.0])
    assert sim.velocities[4, 1] > 0
