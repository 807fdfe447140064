"""Scene files: shipped scenes run, round trips, explicit scenes, overrides, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ropesim.io import scenes
from ropesim.engine.builders import BUILDERS
from ropesim.engine.contacts import Ground, Sphere
from ropesim.io.scenes import DEFAULT_SCENE, SceneError, load, scene_from_dict, scene_names

SHIPPED = {
    "cloth", "rope", "curtain-40x30", "chain-wave", "ring", "star", "random-network",
    "tablecloth", "drum", "ring-wave", "string",
    "cloth-pile", "rope-pile", "table", "mesh-drape", "windmill", "towel-rail", "spikes",  # 11
    "flag", "tear", "sail",  # issue 13
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
         r"verlet, implicit_midpoint, backward_euler, xpbd, vbd, got 'rk4'"),
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
        ('builder = "cloth"\n[simulation]\ndt = inf\n', r"simulation\.dt: inf is not a usable"),
        ('builder = "cloth"\n[simulation]\ndt = 1e300\n', r"simulation\.dt: 1e\+300 is not"),
        ('builder = "cloth"\n[simulation]\ndrag = inf\n', r"simulation\.drag: inf is not"),
        ('builder = "cloth"\n[simulation]\ngravity = [0, nan, 0]\n',
         r"simulation\.gravity: nan is not a usable number; allowed: finite numbers"),
        ('builder = "cloth"\n[simulation]\nsubsteps = 100000\n',
         r"simulation\.substeps: allowed an integer from 1 to 1000, got 100000"),
        ('builder = "cloth"\n[simulation]\nsubsteps = true\n',
         r"simulation\.substeps: expected an integer, got True"),
        ('builder = "cloth"\n[ground]\nheight = nan\n', r"ground\.height: nan is not"),
        ('builder = "cloth"\n[ground]\nfriction = 20.0\n',
         r"ground\.friction: allowed a friction coefficient from 0 to 10, got 20\.0"),
        ('builder = "cloth"\n[[spheres]]\ncenter = [nan, 0, 0]\nradius = 1.0\n',
         r"spheres\.center: nan is not"),
        ('builder = "cloth"\n[[spheres]]\ncenter = [0, 0, 0]\nradius = inf\n',
         r"spheres\.radius: inf is not"),
        ('builder = "cloth"\n[camera]\ndistance = inf\n', r"camera\.distance: inf is not"),
        ('builder = "cloth"\n[camera]\nazimuth = nan\n', r"camera\.azimuth: nan is not"),
        ('[cloth]\nnx = 3\n', r": missing required key 'builder' \(which builder makes the "
                              r"system\); allowed: rope, cloth"),
        ('builder = 3\n', r"builder: expected a string, got 3"),
        ('builder = "rope"\n[rope]\nbend = true\nbend_stiffness = -1.0\n',
         r"\[rope\] bend_stiffness: must be >= 0 N/m, got -1\.0"),
        ('builder = "rope"\n[rope]\npins = [0.7]\n', r"rope\.pins: expected a string or a list"),
        ('builder = "rope"\n[rope]\nn = true\n', r"rope\.n: expected an integer, got True"),
        ('builder = "cloth"\n[cloth]\nnx = 10000\nny = 10000\n',
         r"\[cloth\] nx = 10000, ny = 10000 build 100000000 particles .* allowed: at most "
         r"max_particles = 1000000 particles"),
        ('builder = "cloth"\nmax_particles = 10\n[cloth]\nnx = 4\nny = 4\n',
         r"build 16 particles .* max_particles = 10 particles"),
        ('builder = "cloth"\nmax_particles = 0\n', r"max_particles: allowed an integer >= 1"),
        ('builder = "random_network"\n[random_network]\nn = 100\nm = 4950\nseed = 1\n'
         'max_particles = 10\n', r"unknown key 'random_network\.max_particles'"),
        ('builder = "cloth"\n[cloth]\norigin = ' + "[" * 40 + "]" * 40 + "\n",
         r"cloth\.origin: nested too deeply \(at 'cloth\.origin\[0\]\[0\]"),
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


# --- validation: issue 10 cases ------------------------------------------------------------
def test_a_huge_cloth_is_refused_before_anything_is_allocated(tmp_path):
    path = write(tmp_path, 'builder = "cloth"\n[cloth]\nnx = 100000\nny = 100000\n')
    with pytest.raises(SceneError, match=r"10000000000 particles"):
        load(path)  # 1e10 particles would need ~ 240 GB: it must fail before building


def test_max_particles_key_raises_the_limit_and_round_trips(tmp_path):
    text = 'builder = "cloth"\nmax_particles = 2000\n[cloth]\nnx = 40\nny = 40\n'
    scene = load(write(tmp_path, text))
    assert scene.max_particles == 2000 and scene.build().n_particles == 1600
    scene.save(tmp_path / "again.toml")
    assert load(tmp_path / "again.toml").max_particles == 2000
    assert scenes.MAX_PARTICLES == 1_000_000 and load("cloth").max_particles == 1_000_000
    assert "max_particles" not in load("cloth").to_dict()
    with pytest.raises(SceneError, match=r"^override: \[cloth\] nx = 2000, ny = 2000 build"):
        load("cloth").with_overrides({"nx": 2000, "ny": 2000})
    assert load("cloth").with_overrides({"nx": 30, "max_particles": 5000}).max_particles == 5000


def test_non_utf8_file_is_a_scene_error_naming_the_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('description = "caf\xe9"\nbuilder = "cloth"\n'.encode("latin-1"))
    with pytest.raises(SceneError, match=r"not UTF-8 text \(byte 18, line 1\)") as error:
        load(path)
    assert str(error.value).startswith(f"{path}: ")


def test_deep_nesting_is_one_line_error_not_a_recursion_error(tmp_path):
    path = write(tmp_path, 'builder = "cloth"\nx = ' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(SceneError, match=r"nested too deeply; allowed: at most 32 levels") as err:
        load(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(SceneError, match=r"^scene 'deep': rope\.origin: nested too deeply"):
        scene_from_dict({"builder": "rope", "rope": {"origin": deep}}, "deep")
    with pytest.raises(SceneError, match=r"nested too deeply"):
        scenes.parse_value("[" * 100_000 + "]" * 100_000)


def test_oversized_file_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.toml"
    with open(path, "wb") as handle:
        handle.truncate(scenes.MAX_SCENE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(SceneError, match=r"bytes; allowed: scene files up to 67108864 bytes"):
        load(path)


def test_shipped_name_wins_over_a_folder_or_file_of_that_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cloth").mkdir()
    (tmp_path / "rope").write_text('builder = "ring"\n', encoding="utf-8")
    assert load("cloth").source == scenes.scene_dir() / "cloth.toml"
    assert load("rope").builder == "rope"  # the shipped rope, not ./rope
    with pytest.raises(SceneError, match=r"^cloth: is a folder, not a scene file"):
        load("./cloth")
    assert load("./rope").builder == "ring"  # a path is a path
    (tmp_path / "mine").write_text('builder = "star"\n', encoding="utf-8")
    assert load("mine").builder == "star"  # not shipped: a local file of that name
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(SceneError, match=r"dir\.toml: is a folder, not a scene file"):
        load("dir.toml")
    with pytest.raises(SceneError, match=r"^scene: expected a scene name or a path, got 3"):
        load(3)


def test_tear_scene_weight_is_sewn_into_the_hem_and_the_cloth_rips_within_seconds():
    scene = load("tear")
    system = scene.build()
    plain = BUILDERS["cloth"](**scene.params)
    y = system.positions[:, 1]
    hem = y == y.min()
    extra = system.mass - plain.mass
    assert extra[hem].sum() == pytest.approx(scene.weight["mass"])
    assert np.all(extra[~hem] == 0.0) and np.count_nonzero(hem) == scene.params["nx"]
    sim = scene.simulation()
    assert sim.crack_tip_factor == scene.settings["crack_tip_factor"] < 1.0
    sim.step(round(1.0 / sim.dt))
    assert sim.broken.sum() > 100  # a rip, not a few springs
    assert np.all(np.isfinite(sim.positions))


def test_flag_flaps_in_its_gusty_wind():
    sim = load("flag").simulation()
    free = sim.positions[:, 0] > sim.positions[:, 0].max() - 1e-9  # the fly end
    sides = []
    for _ in range(30):
        sim.step(round(0.1 / sim.dt))
        sides.append(sim.positions[free, 2].mean())
    assert np.ptp(sides) > 0.1  # m: the free end swings across the wind, back and forth


def test_sail_fills_with_wind_into_a_belly():
    sim = load("sail").simulation()
    sim.step(round(2.0 / sim.dt))
    z = sim.positions[:, 2]
    assert np.median(z) > 0.1  # m downwind: the middle of the sail bellies out
    assert np.all(np.isfinite(sim.positions))


def test_weight_section_is_validated_and_round_trips(tmp_path):
    with pytest.raises(SceneError, match="weight.*mass"):
        scene_from_dict({"builder": "cloth", "weight": {"mass": -1.0}}, "bad")
    with pytest.raises(SceneError, match="weight"):
        scene_from_dict({"builder": "cloth", "weight": {"kg": 1.0}}, "bad")
    scene = load("tear")
    scene.save(tmp_path / "t.toml")
    assert load(tmp_path / "t.toml").weight == scene.weight
