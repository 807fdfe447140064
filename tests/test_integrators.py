"""Integrators as objects: the registry, an integrator added from outside the package, and
the change notices that replace per-step comparisons."""

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine.forces import add_spring_forces
from ropesim.io.scenes import scene_from_dict

BUILT_IN = ["explicit_euler", "symplectic_euler", "verlet", "implicit_midpoint",
            "backward_euler", "xpbd", "vbd"]


class NumpySymplecticEuler(rs.Integrator):
    """Symplectic Euler written with numpy, outside the package: v += dt a, x += dt v,
    then drag, with the springs, gravity and attached forces of the model."""

    name = "numpy_symplectic_euler"
    description = "symplectic Euler in numpy (a test integrator)"

    def __init__(self, model):
        super().__init__(model)
        self.force = np.zeros((model.n_particles, 3), model.dtype)
        self.notices = []

    def notify_model_changed(self, flags):
        self.notices.append(flags)

    def step(self, state, dt):
        m, p = self.model, self.model.params
        external, has_external = self.external_forces(state)
        self.force[:] = external if has_external else 0.0
        add_spring_forces(state.x, state.v, m.spring_a, m.spring_b, p.rest_lengths,
                          p.stiffness, p.damping, self.force)
        free = p.fixed == 0
        accel = self.force * p.inv_mass[:, None] + m.gravity()
        state.v[free] += dt * accel[free]
        state.x[free] += dt * state.v[free]
        state.v[~free] = 0.0
        state.v *= m.damp_factor(dt)
        return float((state.v ** 2).sum(axis=1).max())


@pytest.fixture
def registered():
    """NumpySymplecticEuler in the registry for one test, removed afterwards."""
    rs.register_integrator(NumpySymplecticEuler)
    yield NumpySymplecticEuler.name
    del rs.INTEGRATORS[NumpySymplecticEuler.name]


def test_the_registry_lists_the_seven_in_order():
    assert list(rs.INTEGRATORS) == BUILT_IN
    assert rs.DEFAULT_INTEGRATOR in rs.INTEGRATORS
    for name, cls in rs.INTEGRATORS.items():
        assert issubclass(cls, rs.Integrator) and cls.name == name and cls.description
        assert cls.unconditionally_stable == (
            name in ("implicit_midpoint", "backward_euler", "xpbd", "vbd"))
        assert cls.has_solver_stats == cls.unconditionally_stable


def test_an_integrator_from_outside_the_package_works_like_a_built_in_one(registered):
    assert list(rs.INTEGRATORS)[-1] == registered
    rope = rs.rope(12, 1.0, pins="start")
    ours = rs.Simulation(rope, dt=1e-3, integrator=registered, drag=0.1)
    builtin = rs.Simulation(rope, dt=1e-3, integrator="symplectic_euler", drag=0.1)
    for sim in (ours, builtin):
        sim.step(100)
        sim.grab(11, sim.positions[11] + [0.0, 0.05, 0.0])
        sim.step(100)
    assert ours.integrator == registered and not ours.unconditionally_stable
    assert not ours.has_solver_stats
    np.testing.assert_allclose(ours.positions, builtin.positions, rtol=0, atol=1e-12)
    # live switching to and from it keeps the state
    ours.integrator = "backward_euler"
    ours.step(5)
    ours.integrator = registered
    ours.step(5)
    assert ours.step_count == 210 and np.all(np.isfinite(ours.positions))


def test_an_integrator_from_outside_the_package_loads_from_a_scene(registered, tmp_path):
    scene = scene_from_dict({"builder": "rope", "rope": {"n": 8},
                             "simulation": {"integrator": registered, "dt": 0.001}}, "probe")
    assert scene.simulation().integrator == registered
    path = tmp_path / "probe.toml"
    path.write_text(f'builder = "rope"\n[simulation]\nintegrator = "{registered}"\n')
    sim = rs.load(path).simulation()
    assert sim.integrator == registered
    sim.step(10)
    assert rs.load(rs.DEFAULT_SCENE).simulation(integrator=registered).integrator == registered


def test_the_test_integrator_is_gone_after_its_test():
    assert list(rs.INTEGRATORS) == BUILT_IN
    with pytest.raises(rs.SceneError, match="integrator"):
        scene_from_dict({"builder": "rope", "simulation": {"integrator":
                                                           NumpySymplecticEuler.name}}, "x")


def test_integrators_are_told_what_changed(registered):
    sim = rs.Simulation(rs.rope(6, 1.0), integrator=registered)
    notices = sim.integrator_object.notices
    sim.set_stiffness(5.0)
    sim.set_damping(0.1)
    sim.set_rest_lengths(0.2)
    sim.set_mass(0.3)
    sim.pin(2)
    sim.remove_force(sim.force_parts()[1])  # gravity
    assert notices == [rs.Changed.STIFFNESS, rs.Changed.DAMPING, rs.Changed.REST_LENGTHS,
                       rs.Changed.MASS, rs.Changed.FIXED, rs.Changed.FORCES]


def test_registering_checks_the_class():
    with pytest.raises(TypeError, match="expected an Integrator subclass"):
        rs.register_integrator(object)

    class Nameless(rs.Integrator):
        description = "no name"

    with pytest.raises(ValueError, match="integrator.name: expected an identifier"):
        rs.register_integrator(Nameless)

    class Impostor(rs.Integrator):
        name = "verlet"
        description = "a second verlet"

    with pytest.raises(ValueError, match="'verlet' is already registered"):
        rs.register_integrator(Impostor)
    assert list(rs.INTEGRATORS) == BUILT_IN


def test_each_integrator_keeps_its_own_solver_stats_and_scratch():
    sim = rs.Simulation(rs.cloth(8, 8, 0.1), dt=0.01, integrator="backward_euler")
    sim.step(3)
    backward = sim.integrator_object
    sim.integrator = "implicit_midpoint"
    sim.step(2)
    assert sim.solver_stats.implicit_steps == 2
    sim.integrator = "backward_euler"
    assert sim.integrator_object is backward and sim.solver_stats.implicit_steps == 3
    sim.reset()
    assert sim.solver_stats.implicit_steps == 0


def test_grid_implicit_parameters_refresh_on_notice_only():
    """The multigrid path copies stiffness, damping and rest lengths into its edge slots
    when told of an edit, not by comparing arrays every step."""
    sim = rs.Simulation(rs.cloth(10, 10, 0.05), dt=1 / 60, integrator="backward_euler")
    sim.step(1)
    solver = sim.integrator_object.grid_solver()
    assert solver is not None and not solver.params_stale
    sim.step(1)
    assert not solver.params_stale
    sim.set_stiffness(sim.stiffness * 2)
    assert solver.params_stale
    sim.step(1)
    assert not solver.params_stale
