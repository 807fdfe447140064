"""[xpbd] and [vbd] scene tables (io/scenes.py, engine/solver_settings.py): validated
with errors naming the key and the allowed values, set on the Simulation's integrators,
kept through live switches, written back by save."""

import numpy as np
import pytest

import ropesim as rs
from ropesim.io.scenes import SceneError, load, scene_from_dict

ROPE = {"builder": "rope", "rope": {"n": 8, "length": 1.0}}


def scene(**tables):
    return scene_from_dict({**ROPE, **tables}, "solver-settings")


def test_tables_set_the_integrators_and_survive_switching():
    sim = scene(simulation={"integrator": "symplectic_euler"},
                xpbd={"substeps": 12, "iterations": 2, "compliance": 1e-3},
                vbd={"iterations": 4, "chebyshev_rho": 0.5,
                     "initialisation": "previous"}).simulation()
    assert sim.integrator == "symplectic_euler"  # the scene's integrator stays current
    sim.integrator = "xpbd"
    xpbd = sim.integrator_object
    assert (xpbd.substeps, xpbd.iterations, xpbd.compliance) == (12, 2, 1e-3)
    sim.step(3)
    assert sim.solver_stats.iterations == 24  # substeps x iterations ran
    sim.integrator = "vbd"
    vbd = sim.integrator_object
    assert (vbd.iterations, vbd.chebyshev_rho, vbd.initialisation) == (4, 0.5, "previous")
    sim.step()
    assert sim.solver_stats.iterations == 4
    sim.integrator = "xpbd"
    assert sim.integrator_object.substeps == 12  # still there after switching away


def test_absent_tables_leave_the_defaults():
    sim = scene(simulation={"integrator": "xpbd"}).simulation()
    defaults = rs.Simulation(rs.rope(8, 1.0), integrator="xpbd").integrator_object
    assert sim.integrator_object.substeps == defaults.substeps
    assert sim.integrator_object.compliance is None


@pytest.mark.parametrize("table, key, value, allowed", [
    ("xpbd", "substeps", 0, "an integer from 1 to 1000"),
    ("xpbd", "iterations", 5000, "an integer from 1 to 1000"),
    ("xpbd", "compliance", -1.0, "a compliance >= 0 m/N"),
    ("xpbd", "relaxation", 2.0, "a number from 1 to below 2"),
    ("xpbd", "relaxation", 0.9, "a number from 1 to below 2"),
    ("vbd", "iterations", 0, "an integer from 1 to 1000"),
    ("vbd", "chebyshev_rho", 1.0, "a number from 0 (off) to below 1"),
    ("vbd", "initialisation", "guess", "one of previous, inertia"),
])
def test_bad_values_name_the_key_and_the_allowed_values(table, key, value, allowed):
    with pytest.raises(SceneError) as error:
        scene(**{table: {key: value}})
    message = str(error.value)
    assert f"{table}.{key}" in message and allowed in message and repr(value) in message


def test_unknown_keys_and_wrong_types_are_named():
    with pytest.raises(SceneError, match=r"unknown key 'vbd.sweeps'.*vbd.iterations"):
        scene(vbd={"sweeps": 3})
    with pytest.raises(SceneError, match=r"xpbd.substeps"):
        scene(xpbd={"substeps": "many"})


def test_save_and_load_round_trip_and_overrides(tmp_path):
    original = scene(xpbd={"substeps": 9}, vbd={"chebyshev_rho": 0.3})
    path = tmp_path / "s.toml"
    original.save(path)
    again = load(path)
    assert again.solvers == {"xpbd": {"substeps": 9}, "vbd": {"chebyshev_rho": 0.3}}
    changed = again.with_overrides({"xpbd.substeps": "14", "vbd.iterations": "3"})
    assert changed.solvers["xpbd"]["substeps"] == 14 and changed.solvers["vbd"]["iterations"] == 3
    with pytest.raises(SceneError, match="xpbd.substeps"):
        again.with_overrides({"xpbd.substeps": "0"})


def test_xpbd_relaxation_from_a_scene_file_is_the_integrators_over_relaxation():
    """[xpbd] relaxation reaches the projections: the same end positions as setting
    XPBD.relaxation directly, and other ones than the default 1.5."""
    def end_positions(table, relaxation_attribute=None):
        sim = scene(simulation={"integrator": "xpbd", "dt": 1 / 60},
                    xpbd={"substeps": 5, **table}).simulation()
        if relaxation_attribute is not None:
            sim.integrator_object.relaxation = relaxation_attribute
        sim.step(5)
        return sim.integrator_object.relaxation, sim.state.x.copy()

    relaxation, from_scene = end_positions({"relaxation": 1.0})
    assert relaxation == 1.0
    assert np.array_equal(from_scene, end_positions({}, 1.0)[1])
    default, with_default = end_positions({})
    assert default == 1.5 and not np.allclose(from_scene, with_default)


def test_xpbd_relaxation_round_trips_and_overrides(tmp_path):
    path = tmp_path / "relaxed.toml"
    scene(xpbd={"relaxation": 1.25}).save(path)
    again = load(path)
    assert again.solvers == {"xpbd": {"relaxation": 1.25}}
    changed = again.with_overrides({"xpbd.relaxation": "1.75"})
    assert changed.solvers["xpbd"]["relaxation"] == 1.75
    with pytest.raises(SceneError, match=r"xpbd.relaxation: allowed a number from 1 to below 2"):
        again.with_overrides({"xpbd.relaxation": "2"})
