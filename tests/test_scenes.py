"""Scene files: shipped scenes run, round trips, explicit scenes, overrides, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ropesim.io import scenes
from ropesim.engine.contacts import Ground, Sphere
from ropesim.io.scenes import DEFAULT_SCENE, SceneError, load, scene_from_dict, scene_names

SHIPPED = {
    "cloth", "rope", "curtain-40x30", "chain-wave", "ring", "star", "random-network",
    "tablecloth",
}
SYSTEM_ARRAYS = ("positions", "velocities", "springs", "rest_lengths", "mass", "stiffness",
                 "damping", "pinned")


def assert_same_system(a, b) -> None:
    for name in SYSTEM_ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def write(tmp_path: Path, text: str, name: str = "scene.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- shipped scenes -------------------------------------------------------------------
def test_scene_names_lists_the_shipped_scenes_default_first():
    names = scene_names()
    assert names[0] == DEFAULT_SCENE == "cloth"
    assert set(names) == SHIPPED


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_scene_loads_and_steps_stably(name):
    scene = load(name)
    assert scene.name == name and scene.source.name == f"{name}.toml"
    assert scene.description and "\n" not in scene.description
    system = scene.build()
    assert system.n_particles <= 5000
    frame_time = scene.settings["dt"] * scene.settings["substeps"]
    assert 1 / 120 <= frame_time <= 1 / 30  # about one rendered frame at 60 Hz
    sim = scene.simulation()
    assert sim.integrator == scene.settings["integrator"]
    sim.step(200)
    assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))
    assert sim.max_strain() < 1.0 or name == "curtain-40x30"  # the demo's curtain is stretchy
    np.testing.assert_allclose(sim.positions[system.pinned], system.positions3()[system.pinned])


def test_default_cloth_hangs_from_two_top_corners():
    system = load(DEFAULT_SCENE).build()
    nx = system.grid_shape[1]
    assert np.flatnonzero(system.pinned).tolist() == [0, nx - 1]
    assert system.positions[0, 1] == system.positions[:, 1].max()


def test_curtain_is_the_browser_demo_grid():
    scene = load("curtain-40x30")
    system = scene.build()
    assert system.grid_shape == (30, 40)
    assert system.meta["spacing"] == 0.2
    np.testing.assert_allclose(system.mass, 0.5)
    np.testing.assert_allclose(system.stiffness, 5000.0)
    np.testing.assert_allclose(system.damping, 10.0)
    assert scene.settings["dt"] == 0.005
    assert np.flatnonzero(system.pinned).tolist() == [0, 39]


def test_tablecloth_drapes_over_the_ball():
    scene = load("tablecloth")
    sim = scene.simulation()
    assert any(isinstance(c, Sphere) for c in sim.contacts)
    assert any(isinstance(c, Ground) for c in sim.contacts)
    sim.step(int(2.0 / sim.dt))
    ball = scene.spheres[0]
    ny, nx = scene.build().grid_shape
    centre = sim.positions[(ny // 2) * nx + nx // 2]
    top_of_ball = ball["center"][1] + ball["radius"]
    assert centre[1] == pytest.approx(top_of_ball, abs=0.03)  # resting on the ball
    corners = sim.positions[[0, nx - 1, nx * (ny - 1), nx * ny - 1]]
    assert np.all(corners[:, 1] < ball["center"][1])  # edges hang below the equator
    assert np.all(sim.positions[:, 1] >= scene.ground["height"] - 1e-6)


# --- round trip -----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_save_then_load_round_trips(name, tmp_path):
    scene = load(name)
    path = tmp_path / "copy.toml"
    scene.save(path)
    again = load(path)
    assert again.source == path and again.name == "copy"
    for field in ("description", "builder", "params", "settings", "ground", "spheres", "camera"):
        assert getattr(again, field) == getattr(scene, field), field
    assert_same_system(again.build(), scene.build())


# --- explicit scenes ------------------------------------------------------------------
EXPLICIT = """
description = "two particles and a spring"
builder = "explicit"
[explicit]
positions = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]
springs = [[0, 1], [1, 2]]
rest_lengths = [0.8, 1.5]
mass = [1.0, 2.0, 3.0]
stiffness = 40
damping = 0.5
pinned = [0]
[simulation]
dt = 0.001
"""


def test_explicit_scene_builds_the_given_arrays(tmp_path):
    scene = load(write(tmp_path, EXPLICIT))
    system = scene.build()
    np.testing.assert_array_equal(system.positions, [[0, 0, 0], [1, 0, 0], [0, -1, 0]])
    np.testing.assert_array_equal(system.springs, [[0, 1], [1, 2]])
    np.testing.assert_array_equal(system.rest_lengths, [0.8, 1.5])
    np.testing.assert_array_equal(system.mass, [1, 2, 3])
    np.testing.assert_array_equal(system.stiffness, [40, 40])
    assert np.flatnonzero(system.pinned).tolist() == [0]
    assert scene.settings["dt"] == 0.001
    assert scene.settings["integrator"] == "symplectic_euler"  # defaults filled in
    sim = scene.simulation()
    sim.step(100)
    assert np.all(np.isfinite(sim.positions))


def test_explicit_scene_from_dict_planar():
    scene = scene_from_dict(
        {"builder": "explicit", "explicit": {"positions": [[0, 0], [1, 0]], "springs": [[0, 1]]}},
        name="pair",
    )
    system = scene.build()
    assert system.planar and system.name == "pair"
    np.testing.assert_allclose(system.rest_lengths, [1.0])


# --- overrides ------------------------------------------------------------------------
def test_overrides_change_the_built_system_and_settings():
    base = load("cloth")
    changed = base.with_overrides(
        {"cloth.nx": "10", "stiffness": "2000", "dt": "0.0005", "gravity": "[0, -1, 0]",
         "integrator": "verlet", "bend": "false", "simulation.substeps": 4}
    )
    system = changed.build()
    ny = base.params["ny"]
    assert system.grid_shape == (ny, 10)
    np.testing.assert_allclose(system.stiffness, 2000.0)
    assert "bend" not in system.meta["spring_groups"]
    assert changed.settings["dt"] == 0.0005
    assert changed.settings["gravity"] == [0.0, -1.0, 0.0]
    assert changed.settings["substeps"] == 4
    sim = changed.simulation()
    assert sim.dt == 0.0005 and sim.integrator == "verlet"
    # the original scene is untouched
    assert base.build().grid_shape == (ny, base.params["nx"])
    assert base.settings["dt"] != 0.0005


def test_override_adds_a_ground_and_types_are_coerced():
    scene = load("chain-wave").with_overrides({"ground.height": "-2", "young_modulus": 80})
    assert scene.ground == {"height": -2.0, "friction": 0.5}
    system = scene.build()
    np.testing.assert_allclose(system.stiffness, 80.0 / system.rest_lengths)


def test_simulation_keyword_overrides():
    sim = load("rope").simulation(integrator="backward_euler", substeps=2)
    assert sim.integrator == "backward_euler" and sim.substeps == 2


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"cloth.nxx": 3}, r"^override: unknown key 'cloth\.nxx'; allowed: cloth\.nx, "),
        ({"wobble": 3}, r"^override: unknown key 'wobble'; allowed: nx, ny, .*dt, gravity"),
        ({"rope.n": 3}, r"^override: 'rope\.n': unknown section 'rope'; allowed sections: cloth"),
        ({"cloth.nx": "abc"}, r"^override: cloth\.nx: expected an integer, got 'abc'"),
        ({"nx": "1"}, r"^override: \[cloth\] nx: must be >= 2"),
        ({"stiffness": "[1, 2]"}, r"^override: cloth\.stiffness: expected a number"),
        ({"dt": "0"}, r"^override: simulation\.dt: allowed a time step > 0 s"),
        ({"gravity": "[0, 1]"}, r"^override: simulation\.gravity: expected a list of 3 numbers"),
        ({"integrator": "rk4"},
         r"^override: simulation\.integrator: allowed one of explicit_euler, symplectic_euler, "
         r"verlet, implicit_midpoint, backward_euler, got 'rk4'"),
        ({"plane": "yz"}, r"^override: \[cloth\] plane: allowed 'xy' or 'xz'"),
        ({"pins": "top"}, r"^override: \[cloth\] pins: unknown name 'top'"),
    ],
)
def test_bad_overrides_raise_scene_error_naming_the_key(overrides, message):
    with pytest.raises(SceneError, match=message):
        load("cloth").with_overrides(overrides)


def test_parse_value_reads_toml_values_and_keeps_plain_text():
    assert scenes.parse_value("2000") == 2000
    assert scenes.parse_value("0.001") == 0.001
    assert scenes.parse_value("[0,-9.81,0]") == [0, -9.81, 0]
    assert scenes.parse_value("true") is True
    assert scenes.parse_value("top-corners") == "top-corners"


# --- bad files ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, message",
    [
        ('builder = "cloth"\n[cloth]\nnxx = 3\n',
         r"unknown key 'cloth\.nxx'; allowed: cloth\.nx, cloth\.ny"),
        ('builder = "cloth"\n[simulation]\nsteps = 3\n',
         r"unknown key 'simulation\.steps'; allowed: simulation\.dt"),
        ('builder = "cloth"\n[rope]\nn = 3\n', r"unknown key 'rope'; allowed: description, builder"),
        ('builder = "cloth"\n[simulation]\ndt = "fast"\n', r"simulation\.dt: expected a number"),
        ('builder = "cloth"\n[simulation]\nintegrator = "rk4"\n',
         r"simulation\.integrator: allowed one of explicit_euler"),
        ('builder = "cloth"\n[cloth]\nplane = "yz"\n', r"plane: allowed 'xy' or 'xz'"),
        ('builder = "blob"\n', r"builder: unknown builder 'blob'; allowed: rope, cloth"),
        ('description = "no builder"\n', r"missing required key 'builder'"),
        ('builder = "explicit"\n[explicit]\npositions = [[0, 0], [1, 0]]\n',
         r"missing required key\(s\) explicit\.springs"),
        ('builder = "explicit"\n[explicit]\npositions = [[0, 0], [1, 0]]\nsprings = [[0, 2]]\n',
         r"springs: index out of range"),
        ('builder = "cloth"\n[[spheres]]\nradius = 1.0\n', r"spheres: missing required key\(s\) center"),
        ('builder = "cloth"\n[[spheres]]\ncenter = [0, 0, 0]\nradius = -1.0\n',
         r"spheres\.radius: allowed a radius > 0 m"),
        ('builder = "cloth"\n[ground]\nheight = "low"\n', r"ground\.height: expected a number"),
        ('builder = "cloth"\n[camera]\nzoom = 2\n', r"unknown key 'camera\.zoom'"),
        ('builder = "triangle"\n[simulation]\ngravity = [0, 0, -9.81]\n',
         r"simulation\.gravity: a planar system needs gz = 0"),
    ],
)
def test_bad_scene_file_names_the_file_and_the_key(tmp_path, text, message):
    path = write(tmp_path, text, "broken.toml")
    with pytest.raises(SceneError, match=message) as error:
        load(path)
    assert str(error.value).startswith(f"{path}: ")


def test_toml_syntax_error_names_the_file(tmp_path):
    path = write(tmp_path, 'builder = "cloth"\n[cloth\nnx = 3\n', "typo.toml")
    with pytest.raises(SceneError, match=r"TOML syntax error") as error:
        load(path)
    assert str(error.value).startswith(f"{path}: ")


def test_unknown_scene_name_lists_the_shipped_scenes(tmp_path):
    with pytest.raises(SceneError, match=r"unknown scene 'nope'; shipped scenes: cloth, "):
        load("nope")
    with pytest.raises(SceneError, match=r"no such scene file"):
        load(tmp_path / "missing.toml")
