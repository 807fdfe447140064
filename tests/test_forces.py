"""Force parts: attached forces act under every integrator (live switches included), on
every kernel path, explicitly or implicitly as they say, and the fast paths give the
general path's bits. Closed forms throughout."""

import math

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine.integrators import euler

BUILT_IN = ["explicit_euler", "symplectic_euler", "verlet", "implicit_midpoint",
            "backward_euler"]
IMPLICIT = ["implicit_midpoint", "backward_euler"]

#: per integrator, c in x1 = x0 + dt v0 + (1/2 + c) a dt^2 for a constant acceleration a
#: (v1 = v0 + a dt for all five): after steps of integrators c_1, c_2, ..., the position is
#: x0 + v0 T + a T^2 / 2 + a dt^2 sum(c_n)
POSITION_TERM = {"explicit_euler": -0.5, "symplectic_euler": 0.5, "verlet": 0.0,
                 "implicit_midpoint": 0.0, "backward_euler": 0.5}


class ConstantForce(rs.Force):
    """The same force F (N) on every particle; potential -F.x per particle."""

    def __init__(self, force):
        self.force = np.asarray(force, dtype=float)

    def accumulate(self, state, params, f):
        f += self.force

    def potential_energy(self, state, params):
        return -float((state.x @ self.force).sum())


class Anchor(rs.Force):
    """A linear spring of stiffness kappa (N/m) from every particle to the origin,
    f = -kappa x; with ``jacobian`` it gives df/dx = -kappa I (then it is implicit)."""

    def __init__(self, kappa):
        self.kappa = kappa

    def accumulate(self, state, params, f):
        f -= self.kappa * state.x

    def potential_energy(self, state, params):
        return 0.5 * self.kappa * float((state.x ** 2).sum())


class ImplicitAnchor(Anchor):
    def jacobian_product(self, state, params, p, dfdx_scale, dfdv_scale, out):
        out -= dfdx_scale * self.kappa * p

    def jacobian_diagonal(self, state, params, dfdx_scale, dfdv_scale, out):
        out -= dfdx_scale * self.kappa


class ZeroForce(rs.Force):
    def accumulate(self, state, params, f):
        f += 0.0


class ZeroImplicitForce(ZeroForce):
    """No force, but with (zero) Jacobian products: the general implicit path."""

    def jacobian_product(self, state, params, p, dfdx_scale, dfdv_scale, out):
        out += 0.0

    def jacobian_diagonal(self, state, params, dfdx_scale, dfdv_scale, out):
        out += 0.0


def free_particle(velocity=(1.0, 0.5, -0.25), mass=2.0):
    return rs.SpringSystem([[0.1, 0.2, 0.3]], np.zeros((0, 2), int), mass=mass,
                           velocities=[velocity])


# --- the constant-force criterion -------------------------------------------------------------


@pytest.mark.parametrize("name", BUILT_IN)
def test_constant_force_accelerates_a_free_particle_by_f_over_m(name):
    force, mass, dt, steps = np.array([3.0, -1.0, 0.5]), 2.0, 1e-3, 500
    sim = rs.Simulation(free_particle(mass=mass), dt=dt, gravity=(0, 0, 0), integrator=name)
    x0, v0 = sim.positions[0].copy(), sim.velocities[0].copy()
    sim.add_force(ConstantForce(force))
    sim.step(steps)
    a, t = force / mass, steps * dt
    np.testing.assert_allclose(sim.velocities[0], v0 + a * t, rtol=1e-12, atol=1e-12)
    expected = x0 + v0 * t + 0.5 * a * t * t + a * dt * dt * steps * POSITION_TERM[name]
    np.testing.assert_allclose(sim.positions[0], expected, rtol=1e-12, atol=1e-12)


def test_constant_force_acts_through_live_integrator_switches():
    force, mass, dt = np.array([0.0, 4.0, -2.0]), 0.5, 2e-3
    sim = rs.Simulation(free_particle(mass=mass), dt=dt, gravity=(0, 0, 0))
    x0, v0 = sim.positions[0].copy(), sim.velocities[0].copy()
    sim.add_force(ConstantForce(force))
    position_terms = 0.0
    for name in BUILT_IN + BUILT_IN[::-1]:
        sim.integrator = name
        sim.step(37)
        position_terms += 37 * POSITION_TERM[name]
    a, t = force / mass, sim.time
    np.testing.assert_allclose(sim.velocities[0], v0 + a * t, rtol=1e-12, atol=1e-12)
    expected = x0 + v0 * t + 0.5 * a * t * t + a * dt * dt * position_terms
    np.testing.assert_allclose(sim.positions[0], expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("grid_kernels", [True, False])
@pytest.mark.parametrize("name", BUILT_IN)
def test_uniform_force_accelerates_the_centre_of_mass_of_a_free_cloth(name, grid_kernels):
    """Internal spring forces cancel: momentum grows by N F t on every kernel path."""
    cloth = rs.cloth(9, 7, 0.05, pins="none", mass=0.01, damping=0.05)
    force = np.array([0.02, 0.01, -0.03])
    sim = rs.Simulation(cloth, dt=2e-4, gravity=(0, 0, 0), integrator=name,
                        grid_kernels=grid_kernels, cg_tolerance=1e-12)
    sim.positions[:] += np.random.default_rng(2).normal(scale=2e-3, size=sim.positions.shape)
    sim.add_force(ConstantForce(force))
    sim.step(200)
    path = sim.integrator_object
    if grid_kernels and name in IMPLICIT:
        assert path.grid_solver() is not None  # explicit attached force: multigrid path
    elif grid_kernels:
        assert name == "verlet" or path.path().kind == "grid"
    expected = cloth.n_particles * force * sim.time
    np.testing.assert_allclose(sim.momentum(), expected, rtol=1e-9, atol=1e-12)


# --- fast paths and the general path: the same bits --------------------------------------------


def _edited_run(system, name, attach, **kw):
    sim = rs.Simulation(system, integrator=name, **kw)
    for force in attach:
        sim.add_force(force)
    sim.step(15)
    sim.set_stiffness(sim.stiffness * 1.3)
    sim.pin(3)
    sim.grab(5, sim.positions[5] + 0.01)
    sim.step(15)
    return sim


@pytest.mark.parametrize("system", ["cloth", "network"])
@pytest.mark.parametrize("name", BUILT_IN)
def test_fast_path_equals_general_path_bit_for_bit(name, system):
    """An attached zero force sends every step through the attached-force input of the
    kernels (and the general implicit CG for one with Jacobian products): float64 bits
    equal those of the default force list's fast path."""
    grid = system == "cloth"
    system = rs.cloth(12, 10, 0.05) if grid else rs.random_network(50, seed=4)
    kw = dict(dt=1 / 240 if name in IMPLICIT else 2e-4, drag=0.2)
    fast = _edited_run(system, name, [], **kw)
    general = _edited_run(system, name, [ZeroForce()], **kw)
    assert general.integrator_object.external_forces(general.state)[1]  # it did run
    np.testing.assert_array_equal(fast.positions, general.positions)
    np.testing.assert_array_equal(fast.velocities, general.velocities)
    if name in IMPLICIT:  # the operator CG with Jacobian products = the spring-list CG
        spring_list = _edited_run(system, name, [], grid_kernels=False, **kw)
        implicit = _edited_run(system, name, [ZeroImplicitForce()], **kw)
        # on the cloth the multigrid solver exists but is not used: the general path runs
        assert (implicit.integrator_object.grid_solver() is not None) == grid
        np.testing.assert_array_equal(spring_list.positions, implicit.positions)
        np.testing.assert_array_equal(spring_list.velocities, implicit.velocities)


@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_coloured_and_banded_paths_take_attached_forces(monkeypatch, mode):
    from ropesim.engine import parallel

    monkeypatch.setattr(euler, "COLOURED_MIN_SPRINGS", 100)
    monkeypatch.setattr(euler, "PARALLEL_MIN_SPRINGS", 100)
    monkeypatch.setattr(parallel, "_mode", mode)
    force = np.array([0.0, 0.0, 0.05])
    moments = []
    for system in (rs.random_network(200, 600, seed=1), rs.cloth(24, 24, 0.03, pins="none")):
        sim = rs.Simulation(system, dt=1e-4, gravity=(0, 0, 0))
        kind = sim.integrator_object.path().kind
        assert kind == ("coloured" if system.grid_shape is None else "grid")
        fast = rs.Simulation(system, dt=1e-4, gravity=(0, 0, 0))
        fast.add_force(ZeroForce())
        sim.add_force(ConstantForce(force))
        sim.step(50)
        fast.step(50)
        moments.append(sim.momentum() - fast.momentum())
        np.testing.assert_allclose(moments[-1], system.n_particles * force * sim.time,
                                   rtol=1e-9, atol=1e-12)


# --- implicit or explicit inside the implicit step ----------------------------------------------


@pytest.mark.parametrize("name", IMPLICIT)
@pytest.mark.parametrize("with_jacobian", [True, False])
def test_anchor_force_follows_the_theta_method_closed_form(name, with_jacobian):
    """f = -kappa x on a free particle: with its Jacobian the theta-method solves
    (m + theta^2 dt^2 kappa) dv = -dt kappa (x0 + theta dt v0); without it the force is
    explicit inside the implicit step, dv = -dt kappa x0 / m."""
    kappa, mass, dt, theta = 50.0, 2.0, 0.05, 0.5 if name == "implicit_midpoint" else 1.0
    sim = rs.Simulation(free_particle(mass=mass), dt=dt, gravity=(0, 0, 0), integrator=name,
                        cg_tolerance=1e-14)
    sim.add_force(ImplicitAnchor(kappa) if with_jacobian else Anchor(kappa))
    assert sim.force_parts()[-1].has_jacobian is with_jacobian
    x, v = sim.positions[0].copy(), sim.velocities[0].copy()
    for _ in range(40):
        if with_jacobian:
            dv = -dt * kappa * (x + theta * dt * v) / (mass + theta ** 2 * dt ** 2 * kappa)
        else:
            dv = -dt * kappa * x / mass
        x, v = x + dt * (v + theta * dv), v + dv
        sim.step()
        np.testing.assert_allclose(sim.positions[0], x, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(sim.velocities[0], v, rtol=1e-10, atol=1e-12)


def test_implicit_attached_force_is_stable_where_its_explicit_form_diverges():
    """omega dt = 10 for the anchor: backward Euler with the force's Jacobian damps,
    the same force without Jacobian (explicit inside the step) blows up."""
    kappa, mass = 400.0, 1.0
    dt = 10.0 / math.sqrt(kappa / mass)
    runs = {}
    for force in (ImplicitAnchor(kappa), Anchor(kappa)):
        sim = rs.Simulation(free_particle(mass=mass), dt=dt, gravity=(0, 0, 0),
                            integrator="backward_euler", max_speed=1e6)
        sim.add_force(force)
        e0 = sim.energy()
        try:
            sim.step(30)
            runs[force.has_jacobian] = sim.energy() / e0
        except rs.SimulationDiverged:
            runs[force.has_jacobian] = math.inf
    assert runs[True] < 1e-3 and runs[False] == math.inf


# --- energy, time and the part list ------------------------------------------------------------


def test_attached_potential_enters_the_energy_and_is_conserved():
    """A particle on a linear anchor (omega = 5 rad/s) under Verlet: energy() includes
    kappa/2 |x|^2 and stays within the integrator's O(dt^2) error."""
    kappa, mass = 50.0, 2.0
    sim = rs.Simulation(free_particle(mass=mass), dt=1e-3, gravity=(0, 0, 0),
                        integrator="verlet")
    anchor = sim.add_force(Anchor(kappa))
    x = sim.positions[0]
    assert sim.attached_energy() == pytest.approx(0.5 * kappa * float(x @ x))
    assert sim.energy() == pytest.approx(sim.kinetic_energy() + 0.5 * kappa * float(x @ x))
    e0 = sim.energy()
    energies = []
    for _ in range(20):
        sim.step(100)
        energies.append(sim.energy())
    assert np.max(np.abs(np.array(energies) / e0 - 1.0)) < 1e-4
    assert sim.diagnostics()["attached"] == pytest.approx(sim.attached_energy())
    sim.remove_force(anchor)
    assert sim.attached_energy() == 0.0


class Ramp(rs.Force):
    """F(t) = c t (N) along x: a force that reads the state's time."""

    def __init__(self, rate):
        self.rate = rate

    def accumulate(self, state, params, f):
        f[:, 0] += self.rate * state.time


@pytest.mark.parametrize("name", ["symplectic_euler", "verlet"])
def test_time_dependent_force_is_evaluated_at_the_right_times(name):
    """a(t) = c t / m: Verlet's trapezoid kick (forces at t0 and t0 + dt) is exact,
    v(T) = c T^2 / (2 m); symplectic Euler's left sums give c T (T - dt) / (2 m)."""
    rate, mass, dt, steps = 3.0, 2.0, 1e-3, 400
    sim = rs.Simulation(free_particle(velocity=(0, 0, 0), mass=mass), dt=dt,
                        gravity=(0, 0, 0), integrator=name)
    sim.add_force(Ramp(rate))
    sim.step(steps)
    t = steps * dt
    expected = rate * t * t / (2 * mass) if name == "verlet" else rate * t * (t - dt) / (2 * mass)
    assert sim.velocities[0, 0] == pytest.approx(expected, rel=1e-12)


def test_removing_gravity_and_drag_parts_and_adding_them_back():
    sim = rs.Simulation(free_particle(velocity=(2.0, 0, 0)), dt=0.01, drag=0.5)
    parts = sim.force_parts()
    assert [type(p) for p in parts] == [rs.SpringForces, rs.Gravity, rs.Drag]
    springs, gravity, drag = parts
    sim.remove_force(gravity)
    sim.remove_force(drag)
    assert sim.force_parts() == (springs,)
    y0 = sim.positions[0, 1]
    sim.step(100)
    assert sim.positions[0, 1] == y0 and sim.velocities[0, 0] == 2.0  # no fall, no decay
    assert sim.gravity_energy() == 0.0
    sim.add_force(gravity)
    sim.add_force(drag)
    sim.step(100)
    assert sim.velocities[0, 1] == pytest.approx(-9.81 * 1.0, rel=0.3)
    assert sim.velocities[0, 0] == pytest.approx(2.0 * math.exp(-0.5 * 1.0), rel=1e-12)


def test_bad_force_edits_name_the_field_and_what_is_allowed():
    sim = rs.Simulation(free_particle())
    with pytest.raises(TypeError, match="force: expected a ropesim Force, got str"):
        sim.add_force("wind")
    wind = sim.add_force(ConstantForce([1.0, 0, 0]))
    with pytest.raises(ValueError, match="already attached"):
        sim.add_force(wind)
    with pytest.raises(ValueError, match=r"force: .*not a removable part.*allowed: Gravity"):
        sim.remove_force(ConstantForce([0, 0, 0]))
    with pytest.raises(ValueError, match="not a removable part"):
        sim.remove_force(sim.force_parts()[0])  # the springs stay
    other = rs.Simulation(free_particle())
    with pytest.raises(ValueError, match="default part of another simulation"):
        sim.add_force(other.force_parts()[1])


def test_force_base_class_needs_accumulate():
    class Nothing(rs.Force):
        pass

    sim = rs.Simulation(free_particle(), integrator="verlet")
    sim.add_force(Nothing())
    with pytest.raises(NotImplementedError, match="Nothing.accumulate"):
        sim.step()
    assert not Nothing().has_jacobian and ImplicitAnchor(1.0).has_jacobian


# --- parameters: read-only views, edits through set_* ----------------------------------------------


def test_parameter_views_are_read_only_and_set_methods_drive_the_dynamics():
    """Mass on a spring: set_mass(4 m) doubles the period 2 pi sqrt(m / k)."""
    system = rs.SpringSystem([[0, 0, 0], [1.1, 0, 0]], [[0, 1]], rest_lengths=[1.0],
                             mass=0.5, stiffness=40.0, pinned=[0])
    sim = rs.Simulation(system, dt=1e-3, gravity=(0, 0, 0))
    for view in (sim.masses, sim.stiffness, sim.damping, sim.rest_lengths):
        with pytest.raises(ValueError, match="read-only"):
            view[:] = 100.0
    sim.set_mass(2.0)
    assert sim.masses[1] == 2.0  # the view shows the edit
    sim.set_rest_lengths(0.9)
    assert sim.rest_lengths[0] == 0.9
    with pytest.raises(ValueError, match=r"rest_lengths: must be >= 0 m"):
        sim.set_rest_lengths(-1.0)
    sim.set_rest_lengths(1.0)
    period = 2 * math.pi * math.sqrt(2.0 / 40.0)
    crossings, previous = [], sim.positions[1, 0] - 1.0
    for _ in range(int(2.2 * period / 1e-3)):
        sim.step()
        value = sim.positions[1, 0] - 1.0
        if previous < 0 <= value:
            crossings.append(sim.time)
        previous = value
    assert np.diff(crossings).mean() == pytest.approx(period, rel=5e-3)
