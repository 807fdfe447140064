"""Snapshots (issue 15): Simulation.get_state / set_state go back bit-exactly, for every
integrator and both dtypes, with pins, a moving grab, wind, tearing, the strain limit and
a ground contact in play; states of other simulations are refused by field."""

import dataclasses

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine import builders
from ropesim.engine.contacts import Ground
from ropesim.engine.forces import Wind
from ropesim.engine.simulation import INTEGRATORS, Simulation
from ropesim.engine.snapshot import SimState, history_nbytes

DTYPES = (np.float32, np.float64)


def busy_cloth(integrator: str, dtype, size: int = 10) -> Simulation:
    """A pinned cloth with wind, a grab, tearing, the strain limit and a floor."""
    system = builders.cloth(size, size, spacing=0.05, pins="top-corners")
    sim = Simulation(system, dt=2e-4, integrator=integrator, dtype=dtype,
                     contacts=[Ground(height=-0.3, friction=0.5)])
    if integrator == "vbd":  # the initial guess that reads the last step's velocities,
        sim.integrator_object.initialisation = "adaptive"  # with few sweeps to hide it
        sim.integrator_object.iterations = 2
    sim.add_force(Wind(velocity=(0.0, 0.0, 3.0), gust=0.5, seed=3))
    sim.break_strain = 0.5
    sim.max_stretch = 0.3
    sim.grab(size * size - 1, [0.3, -0.2, 0.1])
    return sim


def run(sim: Simulation, steps: int, grab_moves: bool = True) -> None:
    """``steps`` steps in chunks of 10, the grab target moving between chunks (m)."""
    for chunk in range(steps // 10):
        if grab_moves and sim.grabbed is not None:
            sim.grab(sim.grabbed, [0.3 + 0.01 * chunk, -0.2, 0.1 + 0.005 * chunk])
        sim.step(10)


def every_integrator_and_dtype(test):
    """Parametrize ``test(integrator, dtype)`` over INTEGRATORS x DTYPES."""
    test = pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)(test)
    return pytest.mark.parametrize("integrator", list(INTEGRATORS))(test)


def snapshot_after(integrator: str, dtype, steps: int) -> tuple[Simulation, SimState]:
    """A busy cloth run ``steps`` steps, and its state then."""
    sim = busy_cloth(integrator, dtype)
    run(sim, steps)
    return sim, sim.get_state()


def same_arrays(a: Simulation, b: Simulation) -> bool:
    return (np.array_equal(a.positions, b.positions)
            and np.array_equal(a.velocities, b.velocities))


@every_integrator_and_dtype
def test_restore_then_step_equals_never_having_left(integrator, dtype):
    sim, state = snapshot_after(integrator, dtype, 60)
    run(sim, 80)
    expected_x, expected_v = sim.positions.copy(), sim.velocities.copy()
    expected_time, expected_steps = sim.time, sim.step_count

    sim.set_state(state)
    assert sim.step_count == state.step_count and sim.time == state.time
    run(sim, 80)
    assert np.array_equal(sim.positions, expected_x)
    assert np.array_equal(sim.velocities, expected_v)
    assert (sim.time, sim.step_count) == (expected_time, expected_steps)


@every_integrator_and_dtype
def test_state_restored_into_a_fresh_simulation_runs_the_same(integrator, dtype):
    """A fresh simulation of the same system, with other parameters and another
    integrator, continues exactly like the original once given its state (so warm
    data, parameters, pins, grab, forces and tearing all travel with the state)."""
    original, state = snapshot_after(integrator, dtype, 60)

    other = Simulation(original.system, dt=1e-4, dtype=dtype,
                       integrator="backward_euler" if integrator != "backward_euler"
                       else "verlet")
    other.set_stiffness(1.0)
    other.set_mass(3.0)
    other.step(20)
    other.set_state(state)

    run(original, 80)
    run(other, 80)
    assert other.integrator == integrator
    assert same_arrays(original, other)
    assert np.array_equal(original.broken, other.broken)


@every_integrator_and_dtype
def test_round_trip_gives_back_the_same_state(integrator, dtype):
    sim, state = snapshot_after(integrator, dtype, 40)
    run(sim, 30)
    sim.set_stiffness(sim.stiffness * 2)
    sim.pin(3)
    sim.set_state(state)
    again = sim.get_state()
    for field in dataclasses.fields(SimState):
        a, b = getattr(state, field.name), getattr(again, field.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), field.name
        elif field.name == "warm":
            assert a.keys() == b.keys()
            for key in a:
                assert np.array_equal(a[key], b[key]) if isinstance(a[key], np.ndarray) \
                    else a[key] == b[key], key
        elif field.name == "forces":
            assert [f for f, _ in a] == [f for f, _ in b]
        else:
            assert a == b, field.name


def test_live_edits_after_the_snapshot_are_undone():
    """Stiffness, damping, masses, rest lengths, gravity, drag, dt, pins, the grab and
    the integrator changed after get_state all go back with set_state."""
    sim = busy_cloth("symplectic_euler", np.float64)
    run(sim, 50)
    state = sim.get_state()
    reference = busy_cloth("symplectic_euler", np.float64)
    reference.set_state(state)
    run(reference, 60)

    sim.set_stiffness(5.0)
    sim.set_damping(0.3)
    sim.set_mass(0.7)
    sim.set_rest_lengths(0.04)
    sim.gravity = (0.0, -3.0, 0.0)
    sim.drag = 2.0
    sim.dt = 1e-4
    sim.pin(5)
    sim.release()
    sim.max_stretch = None
    sim.integrator = "xpbd"
    sim.step(30)
    sim.set_state(state)
    run(sim, 60)
    assert same_arrays(sim, reference)


def test_vbd_warm_data_carries_the_previous_velocities():
    """VBD's adaptive guess reads the last step's start velocities: the snapshot holds
    them, and without them (a fresh VBD) the next step would differ."""
    sim = busy_cloth("vbd", np.float64)
    run(sim, 40)
    state = sim.get_state()
    assert {"v_start", "last_step"} <= state.warm.keys()
    assert state.warm["last_step"] == state.step_count - 1
    continued = busy_cloth("vbd", np.float64)
    continued.set_state(state)
    continued.step(1)
    cold = busy_cloth("vbd", np.float64)
    cold.set_state(dataclasses.replace(state, warm={**state.warm, "last_step": None}))
    cold.step(1)
    sim.step(1)
    assert same_arrays(sim, continued)
    assert not np.array_equal(sim.positions, cold.positions)


def test_state_of_a_different_size_is_refused_naming_the_field():
    sim = Simulation(builders.rope(10, 1.0), dt=1e-3)
    longer = Simulation(builders.rope(12, 1.0), dt=1e-3).get_state()
    with pytest.raises(ValueError, match=r"state\.positions: the state has 12 particles"):
        sim.set_state(longer)
    # the same particles, more springs: a cloth with and without its shear springs
    plain = Simulation(builders.cloth(4, 4, spacing=0.1, shear=False), dt=1e-3)
    sheared = Simulation(builders.cloth(4, 4, spacing=0.1), dt=1e-3).get_state()
    assert plain.n_particles == sheared.n_particles and plain.n_springs != sheared.n_springs
    with pytest.raises(ValueError, match=r"state\.stiffness: the state has \d+ springs"):
        plain.set_state(sheared)
    # the same counts, other pairs: a chain 0-1-2-3 and a star around 0
    points = [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0]]
    chain = Simulation(rs.SpringSystem(points, [[0, 1], [1, 2], [2, 3]]), dt=1e-3)
    star = Simulation(rs.SpringSystem(points, [[0, 1], [0, 2], [0, 3]]), dt=1e-3)
    with pytest.raises(ValueError, match=r"state\.springs: the state's springs join other"):
        chain.set_state(star.get_state())
    single = Simulation(builders.rope(10, 1.0), dt=1e-3, dtype=np.float32).get_state()
    with pytest.raises(ValueError, match=r"state\.positions: the state is float32"):
        sim.set_state(single)
    with pytest.raises(TypeError, match="state: expected a SimState"):
        sim.set_state({"positions": sim.positions})


def test_refused_state_leaves_the_simulation_untouched():
    sim = Simulation(builders.rope(10, 1.0), dt=1e-3)
    sim.step(20)
    before = sim.get_state()
    with pytest.raises(ValueError):
        sim.set_state(Simulation(builders.rope(12, 1.0), dt=1e-3).get_state())
    unknown = dataclasses.replace(Simulation(builders.rope(10, 1.0), dt=1e-3).get_state(),
                                  integrator="no_such_integrator")
    with pytest.raises(ValueError, match="integrator: unknown name 'no_such_integrator'"):
        sim.set_state(unknown)
    assert np.array_equal(sim.positions, before.positions) and sim.step_count == 20


def test_nbytes_counts_every_array_and_states_are_read_only():
    sim = busy_cloth("vbd", np.float64)
    state = sim.get_state()
    n, m = sim.n_particles, sim.n_springs
    assert state.nbytes == sum(array.nbytes for array in state.arrays())
    # positions, velocities, VBD's v_start: 3 (n, 3) float64; masses, inverse masses
    # (n,) float64; pins (n,) bool; the springs (m, 2) int32; stiffness, damping, rest
    # lengths (m,) float64, break
    # strains (m,) float64, broken (m,) bool; gravity and grab target (3,); the wind's
    # arrays (its air velocity, gust modes and the triangles it is bound to)
    wind = sim.force_parts()[-1]
    wind_bytes = sum(value.nbytes for value in vars(wind).values()
                     if isinstance(value, np.ndarray))
    assert state.nbytes == (3 * n * 24 + 2 * n * 8 + n + m * 8 + 4 * m * 8 + m + 48
                            + wind_bytes)
    with pytest.raises(ValueError):
        state.positions[0, 0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.time = 3.0


def test_unchanged_parameters_are_shared_between_consecutive_states():
    sim = busy_cloth("symplectic_euler", np.float64)
    sim.break_strain = np.inf  # the grab would tear springs (a change of `broken`)
    first = sim.get_state()
    sim.step(10)
    second = sim.get_state()
    assert second.stiffness is first.stiffness and second.mass is first.mass
    assert second.positions is not first.positions
    shared = ("stiffness", "damping", "rest_lengths", "mass", "inv_mass", "break_strain",
              "broken", "pinned", "springs")
    assert all(getattr(second, name) is getattr(first, name) for name in shared)
    shared_bytes = sum(getattr(second, name).nbytes for name in shared)
    wind_first, wind_second = first.forces[0][1], second.forces[0][1]
    assert wind_second["_triangles"] is wind_first["_triangles"]  # the bound topology
    wind_shared = sum(value.nbytes for key, value in wind_second.items()
                      if isinstance(value, np.ndarray) and value is wind_first[key])
    assert history_nbytes([first, second]) == (first.nbytes + second.nbytes - shared_bytes
                                               - wind_shared)
    sim.set_stiffness(sim.stiffness * 1.5)
    third = sim.get_state()
    assert third.stiffness is not second.stiffness
    assert np.array_equal(third.stiffness, second.stiffness * 1.5)
    assert third.damping is second.damping


def test_front_door_exports_simstate():
    assert rs.SimState is SimState
    sim = rs.Simulation(rs.rope(5, 1.0), dt=1e-3)
    assert isinstance(sim.get_state(), rs.SimState)


def test_the_analysis_guide_example_runs_as_written():
    """docs/analysis.md's example (a rewind, bit-exact, and a budget that closes)."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parent.parent / "docs" / "analysis.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    assert len(blocks) == 1
    namespace: dict = {}
    exec(compile(blocks[0], str(doc), "exec"), namespace)
    assert namespace["sim"].step_count == 4000 and namespace["budget"].steps == 4000


def test_contacts_changed_after_the_snapshot_come_back():
    sim = busy_cloth("symplectic_euler", np.float64)
    floor = sim.contacts
    state = sim.get_state()
    sim.contacts = [Ground(height=0.5, friction=0.0)]
    sim.set_state(state)
    assert sim.contacts == floor


def folding_rope(self_collision: bool = True, **settings) -> Simulation:
    """A 30-particle rope falling in a heap onto a floor (self-collision in play)."""
    system = builders.rope(30, 1.2, pins="none", origin=(0.0, 1.25, 0.0),
                           direction=(0.1, -1.0, 0.05))
    return Simulation(system, dt=5e-4, self_collision=self_collision,
                      contacts=[Ground(height=-0.05, friction=0.5)], **settings)


def test_self_collision_settings_changed_after_the_snapshot_come_back():
    """self_collision, thickness (m) and self_friction are live settings: a rewind puts
    them back, and a fresh simulation given the state takes them on."""
    sim = folding_rope(thickness=0.03, self_friction=0.4)
    sim.step(20)
    state = sim.get_state()
    assert (state.self_collision, state.thickness, state.self_friction) == (True, 0.03, 0.4)
    sim.self_collision, sim.thickness, sim.self_friction = False, 0.01, 0.9
    sim.set_state(state)
    assert (sim.self_collision, sim.thickness, sim.self_friction) == (True, 0.03, 0.4)
    fresh = folding_rope(self_collision=False)
    fresh.set_state(state)
    assert (fresh.self_collision, fresh.thickness, fresh.self_friction) == (True, 0.03, 0.4)


def test_rewind_with_self_collision_on_steps_bit_exactly():
    """A rope heaping up on itself (segment contacts every step): going back and on
    gives the same bits, and so does a fresh simulation that had self-collision off."""
    sim = folding_rope(thickness=0.03)
    sim.step(300)
    state = sim.get_state()
    sim.step(300)
    assert sim._self_collision.touching > 0  # the rope lies on itself
    expected = sim.positions.copy(), sim.velocities.copy()
    sim.thickness = 0.05
    sim.step(7)
    sim.set_state(state)
    sim.step(300)
    fresh = folding_rope(self_collision=False)
    fresh.step(3)
    fresh.set_state(state)
    fresh.step(300)
    for restored in (sim, fresh):
        assert np.array_equal(restored.positions, expected[0])
        assert np.array_equal(restored.velocities, expected[1])
