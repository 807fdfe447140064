"""Every bad value is a clear error where it enters: model, builders, contacts, scenes.

Property tests (hypothesis) throw random values -- floats including nan, inf, huge and
tiny ones, integers, bools, strings, None, lists and nested lists -- at one argument or
key at a time, and check each is either rejected with a ValueError / TypeError that
names that argument, or accepted and then simulated for 10 steps without a non-finite
number in the positions or velocities. Plain tests below check the model and contact
cases of issue 10 one by one.
"""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ropesim as rs
from ropesim.engine.builders import BUILDERS
from ropesim.engine.model import check_fits_dtype, masses_per_particle, spring_coefficients
from ropesim.io.scenes import (
    CAMERA_FIELDS, GROUND_FIELDS, SIMULATION_FIELDS, SPHERE_FIELDS, SceneError, scene_from_dict,
)

PROPERTY = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# --- random values ----------------------------------------------------------------------
EXTREME_FLOATS = [0.0, -0.0, 5e-324, 1e-320, 1e-46, 1e-12, 1e12, 1e39, 1e154, 1e300, -1e300,
                  float("inf"), float("-inf"), float("nan")]
EXTREME_INTS = [-1, 0, 1, 2, 3, 2**31, 2**63, -(2**63), 10**30]
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(EXTREME_FLOATS),
    st.integers(-3, 60),
    st.sampled_from(EXTREME_INTS),
)
small_numbers = st.one_of(st.floats(-5, 5), st.integers(-2, 8), st.sampled_from(EXTREME_FLOATS))
VALUES = st.one_of(
    numbers,
    st.booleans(),
    st.none(),
    st.text(max_size=6),
    st.sampled_from(["xy", "xz", "none", "start", "top", "center", "abc", "1.5", "nan"]),
    st.sampled_from(sorted(rs.INTEGRATORS) + sorted(BUILDERS)),
    st.lists(st.one_of(small_numbers, st.booleans(), st.none()), max_size=4),
    st.lists(st.lists(small_numbers, max_size=3), max_size=4),
)


def names_field(message: str, field: str) -> bool:
    """Whether an error message names `field` as a word (``rope.n``, ``[cloth] nx:``)."""
    return re.search(rf"(^|[^\w]){re.escape(field)}($|[^\w])", message) is not None


def assert_rejected_naming(error: Exception, field: str) -> None:
    assert isinstance(error, (ValueError, TypeError))
    assert names_field(str(error), field), f"{field!r} not named in: {error}"


def safe_dt(system: rs.SpringSystem) -> float:
    """A time step at which symplectic Euler is stable for this system's springs
    (SpringSystem.stable_dt) and damping (the same Gershgorin bound with c for k)."""
    a, b = system.springs[:, 0], system.springs[:, 1]
    m = system.mass
    bound = np.zeros(system.n_particles)
    cross = system.damping / np.sqrt(m[a] * m[b])
    np.add.at(bound, a, system.damping / m[a] + cross)
    np.add.at(bound, b, system.damping / m[b] + cross)
    bound[system.pinned] = 0.0
    damping_dt = 1.0 / bound.max() if bound.size and bound.max() > 0 else np.inf
    return float(min(0.002, 0.5 * system.stable_dt(), damping_dt))


def assert_steps_finitely(sim: rs.Simulation) -> None:
    """Ten steps, after which no position or velocity is inf or NaN. A run-away state is
    allowed to end in SimulationDiverged, which keeps the last finite state."""
    try:
        sim.step(10)
    except rs.SimulationDiverged:
        pass
    assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))


def simulate(system: rs.SpringSystem, contacts=()) -> None:
    assert_steps_finitely(rs.Simulation(system, dt=safe_dt(system), contacts=contacts))


# --- builders -----------------------------------------------------------------------------
#: What every explicit-system example starts from (a hanging pair, one pinned).
EXPLICIT_BASE = {"positions": [[0.0, 0.0], [1.0, 0.0]], "springs": [[0, 1]], "pinned": [0]}


def builder_arguments(name: str) -> list[str]:
    return list(inspect.signature(BUILDERS[name]).parameters)


@pytest.mark.parametrize("builder", sorted(BUILDERS))
@PROPERTY
@given(data=st.data())
def test_any_builder_argument_is_rejected_by_name_or_simulates_finitely(builder, data):
    argument = data.draw(st.sampled_from(builder_arguments(builder)), label="argument")
    value = data.draw(VALUES, label="value")
    kwargs = dict(EXPLICIT_BASE) if builder == "explicit" else {}
    kwargs[argument] = value
    try:
        system = BUILDERS[builder](**kwargs)
    except Exception as error:  # noqa: BLE001 - the assertion checks which kind
        assert_rejected_naming(error, argument)
        return
    simulate(system)


SPRING_SYSTEM_BASE = {
    "positions": [[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, -0.5, 0.0]],
    "springs": [[0, 1], [1, 2], [2, 0]], "pinned": [0],
}


@PROPERTY
@given(
    argument=st.sampled_from([
        "positions", "springs", "rest_lengths", "mass", "stiffness", "damping", "pinned",
        "velocities", "young_modulus", "triangles", "grid_shape", "name", "meta",
    ]),
    value=VALUES,
)
def test_any_spring_system_argument_is_rejected_by_name_or_simulates_finitely(argument, value):
    kwargs = {**SPRING_SYSTEM_BASE, argument: value}
    try:
        system = rs.SpringSystem(**kwargs)
    except Exception as error:  # noqa: BLE001
        assert_rejected_naming(error, argument)
        return
    simulate(system)


@PROPERTY
@given(
    contact=st.sampled_from([("ground", "height"), ("ground", "friction"),
                             ("sphere", "center"), ("sphere", "radius"),
                             ("sphere", "friction")]),
    value=VALUES,
)
def test_any_contact_argument_is_rejected_by_name_or_simulates_finitely(contact, value):
    kind, argument = contact
    try:
        obstacle = (rs.Ground if kind == "ground" else rs.Sphere)(**{argument: value})
    except Exception as error:  # noqa: BLE001
        assert_rejected_naming(error, f"{kind}.{argument}")
        return
    rope = rs.rope(8, 1.0, origin=(-0.5, 0.2, 0.0), pins="none")
    simulate(rope, contacts=[obstacle])


@PROPERTY
@given(
    target=st.sampled_from(["stiffness", "damping", "mass"]),
    value=st.one_of(VALUES, st.lists(numbers, min_size=2, max_size=2)),
)
def test_live_setters_reject_by_name_or_keep_simulating(target, value):
    system = rs.rope(3, 1.0)
    sim = rs.Simulation(system, dt=0.001)
    try:
        getattr(sim, f"set_{target}")(value)
    except Exception as error:  # noqa: BLE001
        assert_rejected_naming(error, target)
        return
    assert_steps_finitely(sim)


#: Simulation keyword arguments and settable attributes (issue 10: every constructor
#: argument and settable attribute is validated where it enters)
SIMULATION_ARGUMENTS = [name for name in inspect.signature(rs.Simulation).parameters
                        if name != "system"]
SIMULATION_ATTRIBUTES = ["dt", "gravity", "drag", "integrator", "substeps", "contacts",
                         "max_speed", "grab_follow_time", "cg_tolerance", "cg_max_iterations",
                         "break_strain", "max_stretch"]


@PROPERTY
@given(argument=st.sampled_from(SIMULATION_ARGUMENTS), value=VALUES)
def test_any_simulation_argument_is_rejected_by_name_or_simulates_finitely(argument, value):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a dt past the stable step warns
        try:
            sim = rs.Simulation(rs.rope(4, 1.0), **{argument: value})
        except Exception as error:  # noqa: BLE001
            assert_rejected_naming(error, argument)
            return
        assert_steps_finitely(sim)


@PROPERTY
@given(attribute=st.sampled_from(SIMULATION_ATTRIBUTES), value=VALUES)
def test_any_settable_simulation_attribute_is_rejected_by_name_or_keeps_simulating(
        attribute, value):
    sim = rs.Simulation(rs.rope(4, 1.0), dt=0.001)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            setattr(sim, attribute, value)
        except Exception as error:  # noqa: BLE001
            assert_rejected_naming(error, attribute)
            return
        assert_steps_finitely(sim)


# --- scene keys -----------------------------------------------------------------------------
#: A small scene per builder; every example replaces one key of it.
SCENE_BASES = {
    "rope": {"n": 6},
    "cloth": {"nx": 4, "ny": 4},
    "ring": {"n": 6},
    "star": {"arms": 3, "per_arm": 2},
    "triangle": {},
    "random_network": {"n": 6, "m": 8},
    "explicit": {"positions": [[0.0, 0.0, 0.0], [0.5, 0.0, 0.0]], "springs": [[0, 1]],
                 "pinned": [0]},
}


def scene_keys(builder: str) -> list[tuple[str | None, str]]:
    """Every key a scene of `builder` can hold, as (section or None, key)."""
    keys: list[tuple[str | None, str]] = [(None, "description"), (None, "max_particles")]
    keys += [(builder, k) for k in builder_arguments(builder)]
    for section, fields in (("simulation", SIMULATION_FIELDS), ("ground", GROUND_FIELDS),
                            ("spheres", SPHERE_FIELDS), ("camera", CAMERA_FIELDS)):
        keys += [(section, k) for k in fields]
    return keys


@pytest.mark.parametrize("builder", sorted(SCENE_BASES))
@PROPERTY
@given(data=st.data())
def test_any_scene_key_is_rejected_by_name_or_simulates_finitely(builder, data):
    section, key = data.draw(st.sampled_from(scene_keys(builder)), label="key")
    value = data.draw(VALUES, label="value")
    scene_data = {
        "builder": builder, builder: dict(SCENE_BASES[builder]),
        "simulation": {"dt": 0.002}, "ground": {"height": -2.0},
        "spheres": [{"center": [0.0, -1.0, 0.0], "radius": 0.2}],
    }
    if section is None:
        scene_data[key] = value
    elif section == "spheres":
        scene_data["spheres"][0][key] = value
    else:
        scene_data.setdefault(section, {})[key] = value
    try:
        scene = scene_from_dict(scene_data, "random")
    except Exception as error:  # noqa: BLE001
        assert isinstance(error, SceneError)
        assert_rejected_naming(error, key)
        return
    assert_steps_finitely(scene.simulation())


@PROPERTY
@given(value=VALUES)
def test_any_builder_name_is_rejected_by_name_or_simulates_finitely(value):
    try:
        scene = scene_from_dict({"builder": value}, "random")
    except Exception as error:  # noqa: BLE001
        assert isinstance(error, SceneError)
        known = isinstance(value, str) and value in BUILDERS  # explicit: its keys are missing
        assert_rejected_naming(error, value if known else "builder")
        return
    assert_steps_finitely(scene.simulation())


# --- plain cases of issue 10: model ------------------------------------------------------------
@pytest.mark.parametrize("values, field, kwargs", [
    ([1e39], "stiffness", {}),
    ([1e-46], "mass", {"inverse": True}),
    ([0.0], "mass", {"inverse": True}),
    ([np.nan], "damping", {}),
])
def test_float32_overflow_is_a_field_naming_error_without_numpy_warnings(values, field, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=rf"^{field}: .*float32|^{field}: must be a finite number"):
            check_fits_dtype(values, np.float32, field, "SI", **kwargs)
        check_fits_dtype(values[:0] + [1.0], np.float32, field, "SI", **kwargs)


@pytest.mark.parametrize("kwargs, field", [
    (dict(stiffness=1e39), "stiffness"),
    (dict(mass=1e-46), "mass"),
    (dict(damping=1e30), "damping"),
    (dict(velocities=[[1e20, 0.0], [0.0, 0.0]]), "velocities"),
])
def test_spring_system_reports_what_does_not_fit_float32(kwargs, field):
    system = rs.SpringSystem([[0.0, 0.0], [1.0, 0.0]], [[0, 1]], **kwargs)
    system.check_fits(np.float64)  # fine in float64
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=rf"^{field}: .* float32"):
            system.check_fits(np.float32)


def test_check_fits_rejects_springs_that_collapse_in_float32():
    system = rs.rope(5, 0.01, origin=(1e6, 0.0, 0.0))  # 2.5 mm segments at 1000 km
    system.check_fits(np.float64)
    with pytest.raises(ValueError, match=r"^positions: spring 0 .* float32"):
        system.check_fits(np.float32)


def test_pin_index_fractions_and_bools_are_not_integers():
    with pytest.raises(ValueError, match=r"^pinned: 0\.7 is not an integer index"):
        rs.SpringSystem([[0, 0], [1, 0]], [[0, 1]], pinned=[0.7])
    with pytest.raises(ValueError, match=r"^pinned: expected integer particle indices"):
        rs.SpringSystem([[0, 0], [1, 0]], [[0, 1]], pinned=[1, True])
    with pytest.raises(ValueError, match=r"^springs: expected integer particle indices"):
        rs.SpringSystem([[0, 0], [1, 0]], [[True, False]])
    mask = rs.SpringSystem([[0, 0], [1, 0]], [[0, 1]], pinned=[False, True]).pinned
    assert mask.tolist() == [False, True]  # a full-length bool list is still a mask
    assert rs.SpringSystem([[0, 0], [1, 0]], [[0, 1]], pinned=[1.0]).pinned.tolist() == [
        False, True
    ]


@pytest.mark.parametrize("value", ["abc", None, np.nan, np.inf, -1.0, [1.0, 2.0, 3.0, 4.0], [[1.0]], True])
@pytest.mark.parametrize("setter, field", [
    ("set_stiffness", "stiffness"), ("set_damping", "damping"), ("set_mass", "mass"),
])
def test_live_setters_name_the_field_for_bad_values(setter, field, value):
    sim = rs.Simulation(rs.rope(3, 1.0))
    with pytest.raises(ValueError, match=rf"^{field}: "):
        getattr(sim, setter)(value)


def test_coefficient_helpers_keep_their_results_for_good_input():
    np.testing.assert_array_equal(spring_coefficients(3.0, 2, "stiffness", "N/m"), [3.0, 3.0])
    np.testing.assert_array_equal(spring_coefficients([1, 2], 2, "damping", "N*s/m"), [1.0, 2.0])
    np.testing.assert_array_equal(masses_per_particle(0.5, 3), [0.5, 0.5, 0.5])
    assert spring_coefficients(3, 2, "stiffness", "N/m").dtype == np.float64
    with pytest.raises(ValueError, match=r"^mass: .* at least"):
        masses_per_particle(1e-200, 2)  # its inverse would not fit float64


@pytest.mark.parametrize("kwargs, message", [
    (dict(positions="abc", springs=[]), r"^positions: expected numbers"),
    (dict(positions=[[0, 0], [1, 0, 0]], springs=[]), r"^positions: expected numbers"),
    (dict(positions=[[0, 0], [1, 0]], springs=[[0, 1.5]]), r"^springs: 1\.5 is not an integer"),
    (dict(positions=[[0, 0], [1, 0]], springs=[[0, 1]], rest_lengths=np.inf),
     r"^rest_lengths: must be a finite number"),
    (dict(positions=[[0, 0], [1, 0]], springs=[[0, 1]], young_modulus="stiff"),
     r"^young_modulus: expected a number"),
    (dict(positions=[[0, 0], [1, 0]], springs=[[0, 1]], triangles=[[0, 1, 0.5]]),
     r"^triangles: 0\.5 is not an integer"),
    (dict(positions=[[0, 0], [1, 0]], springs=[[0, 1]], grid_shape=(True, 2)),
     r"^grid_shape: expected \(rows, cols\) integers"),
    (dict(positions=[[1e200, 0], [1, 0]], springs=[[0, 1]]), r"^positions: 1e\+200 m"),
])
def test_spring_system_errors_name_the_field_and_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        rs.SpringSystem(**kwargs)


# --- plain cases of issue 10: contacts ------------------------------------------------------------
@pytest.mark.parametrize("make, message", [
    (lambda: rs.Sphere(radius=np.inf), r"^sphere\.radius: must be a finite number \(m\), got inf"),
    (lambda: rs.Sphere(radius=-1.0), r"^sphere\.radius: must be > 0 m"),
    (lambda: rs.Sphere(center=(np.nan, 0, 0)), r"^sphere\.center: must be a finite number"),
    (lambda: rs.Sphere(center=(0, np.inf)), r"^sphere\.center: must be a finite number"),
    (lambda: rs.Sphere(center="top"), r"^sphere\.center: expected numbers"),
    (lambda: rs.Sphere(friction=-0.1), r"^sphere\.friction: must be >= 0 and <= 10"),
    (lambda: rs.Ground(height=np.nan), r"^ground\.height: must be a finite number \(m\), got nan"),
    (lambda: rs.Ground(height=None), r"^ground\.height: expected a number"),
    (lambda: rs.Ground(friction=11.0), r"^ground\.friction: must be >= 0 and <= 10, got 11"),
    (lambda: rs.Ground(friction=np.inf), r"^ground\.friction: must be a finite number"),
    (lambda: rs.Ground(friction=True), r"^ground\.friction: expected a number"),
])
def test_contact_values_out_of_range_are_rejected(make, message):
    with pytest.raises(ValueError, match=message):
        make()
