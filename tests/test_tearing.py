"""Tearing and strain limiting (engine/tearing.py through Simulation): break strains
under every integrator, broken springs exert no force and carry no energy or strain,
reset mends them, the Provot stretch limit holds on a hanging cloth at a large dt."""

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine import tearing

INTEGRATORS = ["explicit_euler", "symplectic_euler", "verlet", "implicit_midpoint",
               "backward_euler"]
BREAK = 0.1


def two_springs(integrator, pinned=(0, 1, 2, 3)):
    """Spring 0 (particles 0-1) strained just below BREAK, spring 1 (2-3) just above;
    rest length 1 m, 1000 N/m."""
    positions = [(0, 0, 0), (1.0 + BREAK - 1e-4, 0, 0), (0, 1, 0), (1.0 + BREAK + 1e-4, 1, 0)]
    system = rs.explicit(positions, [(0, 1), (2, 3)], rest_lengths=1.0, stiffness=1000.0,
                         damping=0.5, mass=0.1, pinned=list(pinned))
    sim = rs.Simulation(system, dt=1e-4, gravity=(0, 0, 0), integrator=integrator)
    sim.break_strain = BREAK
    return sim


def spring_energy_closed_form(sim, stiffness):
    x = sim.positions
    a, b = sim.system.springs[:, 0], sim.system.springs[:, 1]
    length = np.linalg.norm(x[b] - x[a], axis=1)
    intact = ~sim.broken
    return float(0.5 * (stiffness * (length - sim.rest_lengths) ** 2)[intact].sum())


@pytest.mark.parametrize("name", INTEGRATORS)
def test_spring_just_below_its_break_strain_survives_and_just_above_breaks(name):
    sim = two_springs(name)
    assert not sim.broken.any()
    sim.step(1)
    assert sim.broken.tolist() == [False, True]
    assert sim.stiffness.tolist() == [1000.0, 0.0] and sim.damping.tolist() == [0.5, 0.0]


@pytest.mark.parametrize("name", INTEGRATORS)
def test_broken_spring_exerts_no_force_and_intact_one_still_pulls(name):
    sim = two_springs(name, pinned=(0, 2))
    sim.step(1)  # spring 1 pulled particle 3 during this step, then broke
    before, speed = sim.positions.copy(), sim.velocities[3].copy()
    sim.step(20)
    np.testing.assert_array_equal(sim.velocities[3], speed)  # no force: no acceleration
    np.testing.assert_allclose(sim.positions[3], before[3] + 20 * sim.dt * speed, rtol=1e-12)
    assert sim.positions[1, 0] < before[1, 0] - 1e-4  # the intact spring pulls it back
    assert sim.broken.tolist() == [False, True]


@pytest.mark.parametrize("grid_kernels", [True, False])
@pytest.mark.parametrize("name", INTEGRATORS)
def test_fully_torn_cloth_falls_freely_with_no_elastic_energy(name, grid_kernels):
    cloth = rs.cloth(12, 12, 0.05, pins="none")
    sim = rs.Simulation(cloth, dt=1e-3, integrator=name, grid_kernels=grid_kernels)
    assert sim.break_springs(np.arange(sim.n_springs)) == sim.n_springs
    sim.step(24)
    assert np.all(np.isfinite(sim.positions))
    assert sim.spring_energy() == 0.0 and sim.max_strain() == 0.0
    np.testing.assert_allclose(sim.velocities[:, 1], -9.81 * sim.time, rtol=1e-9)


@pytest.mark.parametrize("name", INTEGRATORS)
def test_half_torn_cloth_energy_is_the_sum_over_its_intact_springs(name):
    cloth = rs.cloth(12, 12, 0.05, pins="top-edge")
    sim = rs.Simulation(cloth, dt=5e-4, integrator=name)
    y = sim.positions[:, 1]
    a, b = cloth.springs[:, 0], cloth.springs[:, 1]
    middle = 0.5 * (y.min() + y.max())
    across = np.flatnonzero((y[a] - middle) * (y[b] - middle) < 0)
    sim.break_springs(across)
    sim.step(40)
    assert sim.spring_energy() == pytest.approx(
        spring_energy_closed_form(sim, cloth.stiffness), rel=1e-9)
    strain = sim.spring_strain()
    assert np.all(strain[across] == 0.0)
    assert sim.max_strain() == pytest.approx(np.abs(strain[~sim.broken]).max())
    # the torn-off lower half falls freely: no spring holds it to the pinned half, so its
    # momentum grows by m g t
    lower = y < middle
    momentum = (sim.masses[lower] * sim.velocities[lower, 1]).sum()
    assert momentum == pytest.approx(-9.81 * sim.time * sim.masses[lower].sum(), rel=1e-3)


def test_reset_mends_the_springs_and_keeps_the_users_stiffness():
    sim = two_springs("symplectic_euler")
    sim.step(1)
    sim.set_stiffness(500.0)  # while spring 1 is broken: it stays at 0
    assert sim.stiffness.tolist() == [500.0, 0.0]
    sim.reset()
    assert not sim.broken.any()
    assert sim.stiffness.tolist() == [500.0, 500.0] and sim.damping.tolist() == [0.5, 0.5]
    np.testing.assert_array_equal(sim.break_strain, [BREAK, BREAK])  # a setting: kept
    sim.step(1)
    assert sim.broken.tolist() == [False, True]


def test_broken_is_a_read_only_view_and_break_strain_defaults_to_unbreakable():
    sim = rs.Simulation(rs.rope(5, 1.0))
    assert np.all(np.isinf(sim.break_strain))
    view = sim.broken
    with pytest.raises(ValueError):
        view[0] = True
    sim.break_springs([2])
    assert view[2]  # live
    assert sim.break_springs([2]) == 0  # already broken


@pytest.mark.parametrize("value, error", [
    (0.0, ValueError), (-1.0, ValueError), (float("nan"), ValueError),
    ([0.1, 0.2], ValueError), ("strong", TypeError),
])
def test_bad_break_strain_names_the_field(value, error):
    sim = rs.Simulation(rs.rope(5, 1.0))
    with pytest.raises(error, match="break_strain"):
        sim.break_strain = value


@pytest.mark.parametrize("value, error", [
    (0.0, ValueError), (float("inf"), ValueError), ("ten", TypeError), (True, TypeError),
])
def test_bad_max_stretch_names_the_field(value, error):
    sim = rs.Simulation(rs.rope(5, 1.0))
    with pytest.raises(error, match="max_stretch"):
        sim.max_stretch = value


def test_bad_break_springs_indices_name_the_field():
    sim = rs.Simulation(rs.rope(5, 1.0))
    with pytest.raises(ValueError, match="indices"):
        sim.break_springs([sim.n_springs])


def soft_hanging_cloth(name):
    cloth = rs.cloth(16, 16, 0.05, pins="top-edge", stiffness=20.0, damping=0.01)
    return rs.Simulation(cloth, dt=1 / 60, integrator=name)


@pytest.mark.parametrize("name", ["backward_euler", "implicit_midpoint"])
def test_strain_limit_keeps_every_spring_within_max_stretch_on_a_soft_hanging_cloth(name):
    free = soft_hanging_cloth(name)
    free.step(30)
    assert free.spring_strain().max() > 0.2  # soft: it sags like rubber without the limit
    sim = soft_hanging_cloth(name)
    sim.max_stretch = 0.1
    for _ in range(30):
        sim.step(1)
        assert sim.spring_strain().max() <= 1.1 * (1 + tearing.STRETCH_TOLERANCE) - 1 + 1e-9
    assert np.all(np.isfinite(sim.positions))


def test_a_limited_spring_still_breaks_when_a_grab_pulls_it_past_its_break_strain():
    system = rs.rope(3, 2.0, pins="start", stiffness=100.0)
    sim = rs.Simulation(system, dt=1e-3, gravity=(0, 0, 0))
    sim.max_stretch = 0.1
    sim.break_strain = 0.5
    sim.grab(2, (6.0, 0.0, 0.0))  # far: the grabbed end jumps well past 50 % per step
    sim.step(60)
    assert sim.broken.any()
    assert sim.spring_strain()[~sim.broken].max() <= 0.1 + 1e-3


def test_drawn_surface_of_a_half_torn_cloth_loses_the_triangles_along_the_tear():
    from ropesim.render.camera import OrbitCamera
    from ropesim.render.offscreen import create_headless_context, render_frame
    from ropesim.render.renderer import Renderer, RenderOptions

    ctx = create_headless_context()
    cloth = rs.cloth(24, 24, 0.05, pins="top-edge")
    sim = rs.Simulation(cloth, dt=1e-3)
    renderer = Renderer(ctx, sim)
    cam = OrbitCamera()
    cam.frame(sim.positions, aspect=4 / 3)
    opts = RenderOptions(show_grid=False, show_axes=False)
    background = np.round(np.asarray(opts.background[:3]) * 255).astype(int)

    def covered():
        img = render_frame(ctx, renderer, cam, 320, 240, opts)
        return (np.abs(img.astype(int) - background).max(axis=-1) > 6).mean()

    whole = covered()
    assert renderer.n_triangles_drawn == len(cloth.triangles)
    # tear the lower half along the middle column: every spring crossing x = middle there
    x, y = sim.positions[:, 0], sim.positions[:, 1]
    a, b = cloth.springs[:, 0], cloth.springs[:, 1]
    middle = 0.5 * (x.min() + x.max()) + 0.01
    low = 0.5 * (y.min() + y.max())
    tear = np.flatnonzero(((x[a] - middle) * (x[b] - middle) < 0) & (y[a] < low) & (y[b] < low))
    sim.break_springs(tear)
    torn_pairs = {frozenset(p) for p in cloth.springs[tear].tolist()}
    intact = [t for t in cloth.triangles.tolist()
              if not any(frozenset((t[e], t[(e + 1) % 3])) in torn_pairs for e in range(3))]
    torn = covered()
    assert renderer.n_triangles_drawn == len(intact) < len(cloth.triangles)
    assert torn < whole  # the hole shows the background
    sim.reset()
    assert covered() == pytest.approx(whole)
    assert renderer.n_triangles_drawn == len(cloth.triangles)
    renderer.release()
    ctx.release()


def test_scene_keys_set_break_strain_max_stretch_and_wind(tmp_path):
    from ropesim.io.scenes import SceneError, scene_from_dict

    data = {"builder": "cloth", "cloth": {"nx": 6, "ny": 6, "pins": "top-edge"},
            "simulation": {"dt": 0.001, "break_strain": 0.4, "max_stretch": 0.15},
            "wind": {"velocity": [0.0, 0.0, 5.0], "gust": 0.2, "seed": 7}}
    scene = scene_from_dict(data, "torn")
    path = tmp_path / "torn.toml"
    scene.save(path)
    sim = rs.load(path).simulation()
    np.testing.assert_array_equal(sim.break_strain, 0.4)
    assert sim.max_stretch == 0.15
    (wind,) = [f for f in sim.force_parts() if isinstance(f, rs.Wind)]
    assert wind.seed == 7 and wind.gust == 0.2 and wind.velocity.tolist() == [0, 0, 5]
    plain = scene_from_dict({"builder": "cloth", "simulation": {"dt": 0.001}}, "plain").simulation()
    assert np.all(np.isinf(plain.break_strain)) and plain.max_stretch is None
    with pytest.raises(SceneError, match="break_strain"):
        scene_from_dict({**data, "simulation": {"break_strain": -1.0}}, "bad")
    with pytest.raises(SceneError, match="wind.*velocity|velocity"):
        scene_from_dict({**data, "wind": {"gust": 0.1}}, "bad")


def crack_chain(factor=None, tip_time=None):
    """Pinned chain 0-1-2-3 (springs 0, 1, 2; rest 1 m): spring 0 strained just past
    BREAK, springs 1 and 2 at 0.9 BREAK; and a separate pair 4-5 (spring 3) at 0.9 BREAK."""
    x1 = 1.0 + BREAK + 1e-4
    x2, x3 = x1 + 1.0 + 0.9 * BREAK, x1 + 2.0 + 1.8 * BREAK
    positions = [(0, 0, 0), (x1, 0, 0), (x2, 0, 0), (x3, 0, 0), (0, 1, 0),
                 (1.0 + 0.9 * BREAK, 1, 0)]
    system = rs.explicit(positions, [(0, 1), (1, 2), (2, 3), (4, 5)], rest_lengths=1.0,
                         stiffness=1000.0, mass=0.1, pinned=list(range(6)))
    sim = rs.Simulation(system, dt=1e-3, gravity=(0, 0, 0))
    sim.break_strain = BREAK
    if factor is not None:
        sim.crack_tip_factor = factor
    if tip_time is not None:
        sim.crack_tip_time = tip_time
    return sim


def test_crack_tip_weakens_the_neighbours_of_a_fresh_break_so_the_rip_runs():
    plain = crack_chain()
    plain.step(5)
    assert plain.broken.tolist() == [True, False, False, False]  # 0.9 BREAK holds
    sim = crack_chain(factor=0.85)  # 0.9 BREAK > 0.85 BREAK: a weakened spring breaks
    sim.step(1)
    assert sim.broken.tolist() == [True, False, False, False]
    sim.step(1)  # spring 1 shared particle 1 with the fresh break
    assert sim.broken.tolist() == [True, True, False, False]
    sim.step(1)  # the tip moved on: spring 2 shares particle 2 with spring 1
    assert sim.broken.tolist() == [True, True, True, False]
    sim.step(20)  # spring 3 shares no particle with the crack: never weakened
    assert sim.broken.tolist() == [True, True, True, False]
    sim.reset()
    assert not sim.broken.any() and np.all(np.isinf(sim._tearing.weak_until))


def test_crack_tip_weakening_ends_after_crack_tip_time():
    sim = crack_chain(factor=0.85, tip_time=0.5e-3)  # over before the next check (dt 1 ms)
    sim.step(10)
    assert sim.broken.tolist() == [True, False, False, False]
    weak = crack_chain(factor=0.95)  # 0.9 BREAK < 0.95 BREAK: weakened but strong enough
    weak.step(10)
    assert weak.broken.tolist() == [True, False, False, False]


@pytest.mark.parametrize("field, value, error", [
    ("crack_tip_factor", 0.0, ValueError), ("crack_tip_factor", 1.5, ValueError),
    ("crack_tip_factor", "half", TypeError), ("crack_tip_time", 0.0, ValueError),
    ("crack_tip_time", float("inf"), ValueError), ("crack_tip_time", True, TypeError),
])
def test_bad_crack_tip_settings_name_the_field(field, value, error):
    sim = rs.Simulation(rs.rope(5, 1.0))
    with pytest.raises(error, match=field):
        setattr(sim, field, value)


def test_a_torn_off_piece_falling_far_away_is_not_taken_for_divergence():
    """A broken spring's ends may end up any distance apart: the health check's stretch
    criterion (10 x the rest length) looks at intact springs only."""
    sim = rs.Simulation(rs.rope(4, 0.3, pins="start"), dt=1e-2, integrator="backward_euler")
    sim.break_springs([1])
    sim.step(300)  # 3 s of free fall: about 44 m, ~440 x the rest length of 0.1 m
    a, b = sim.springs[1]
    assert np.linalg.norm(sim.positions[a] - sim.positions[b]) > 100 * sim.rest_lengths[1]
    assert sim.velocities[3, 1] == pytest.approx(-9.81 * sim.time, rel=1e-6)
