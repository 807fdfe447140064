"""XPBD's chain projection (``projection = "chains"``: kernels/chains.py): the cover of
the springs by chains, and the solver against closed forms, invariants and the spring
projection. Unless a test says otherwise it runs XPBD's defaults (5 substeps of one
pass) with chains."""

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine import parallel
from ropesim.engine.kernels.chains import LANE_BLOCK, chain_cover, chain_lanes
from ropesim.engine.kernels.vertex_colouring import vertex_adjacency
from solver_checks import (
    chain_static_error, check_deterministic, check_grab_and_pins, check_switching_in_and_out,
    check_stable_at_twenty_times_the_explicit_limit, check_undamped_energy_never_grows,
    hanging_chain, momentum_drift, settled_chain, stiff_cloth,
)


def chains(xpbd):
    """configure(): chain projection, XPBD's other defaults."""
    xpbd.projection = "chains"


def cover_of(system: rs.SpringSystem):
    springs = np.asarray(system.springs, np.int64)
    a, b = springs[:, 0], springs[:, 1]
    n = system.n_particles
    rest_x = np.ascontiguousarray(system.positions3(), dtype=np.float64)
    return chain_cover(a, b, rest_x, *vertex_adjacency(a, b, n)), springs


def check_cover(system: rs.SpringSystem):
    """Every spring on exactly one chain; a chain's springs join its particles in turn;
    the chains of one family share no particle. Returns (families, chains)."""
    (family_start, chain_start, chain_springs, part_start, chain_parts), springs = (
        cover_of(system))
    assert sorted(chain_springs.tolist()) == list(range(len(springs)))
    for f in range(family_start.size - 1):
        seen: set[int] = set()
        for c in range(family_start[f], family_start[f + 1]):
            parts = chain_parts[part_start[c]:part_start[c + 1]].tolist()
            members = chain_springs[chain_start[c]:chain_start[c + 1]]
            assert len(parts) == len(members) + 1
            for t, s in enumerate(members):
                assert sorted(springs[s].tolist()) == sorted(parts[t:t + 2])
            assert not seen & set(parts) and len(set(parts)) == len(parts)
            seen |= set(parts)
    return family_start.size - 1, chain_start.size - 1


def test_a_cloth_is_covered_by_its_six_families_of_grid_lines():
    """Rows, columns, both diagonals and both bending lines: 8 x 8 particles give
    8 + 8 + 13 + 13 + 16 + 16 straight chains."""
    cloth = rs.cloth(8, 8, 0.1)
    assert check_cover(cloth) == (6, 74)
    (_, _, _, part_start, chain_parts), _ = cover_of(cloth)
    x = cloth.positions3()
    for c in range(part_start.size - 1):
        steps = np.diff(x[chain_parts[part_start[c]:part_start[c + 1]]], axis=0)
        np.testing.assert_allclose(steps, np.broadcast_to(steps[0], steps.shape), atol=1e-12)


def test_a_rope_is_one_chain_and_a_ring_two():
    assert check_cover(rs.rope(30, 2.0)) == (1, 1)
    assert check_cover(rs.ring(24, 0.5))[1] <= 2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_random_network_is_covered_exactly_once(seed):
    check_cover(rs.random_network(60, 150, seed=seed))


@pytest.mark.parametrize("system, widths", [
    (rs.cloth(40, 40, 0.02), {LANE_BLOCK}), (rs.rope(300, 3.0), {1}),
    (rs.random_network(60, 150, seed=1), None)])
def test_the_lanes_hold_every_chain_whole(system, widths):
    """chain_lanes: every spring in exactly one row, a row's spring joining the
    particles of its slot and the next, each family's particles once; the wide blocks
    (LANE_BLOCK lanes, vectorised) on a cloth's many chains, blocks of one lane on a
    rope's single chain (16 lanes, 15 of them empty, would solve it 16 times over)."""
    cover, springs = cover_of(system)
    shapes, slot_particle, row_spring = chain_lanes(cover)
    assert sorted(row_spring[row_spring >= 0].tolist()) == list(range(len(springs)))
    for first, capacity, width, blocks in shapes.tolist():
        size = capacity * width * blocks
        parts = slot_particle[first:first + size].reshape(blocks, capacity, width)
        rows = row_spring[first:first + size].reshape(blocks, capacity, width)
        placed = parts[parts >= 0]
        assert len(set(placed.tolist())) == placed.size  # a family's particles once
        for b, t, lane in zip(*np.nonzero(rows >= 0)):
            assert t + 1 < capacity
            ends = sorted((parts[b, t, lane], parts[b, t + 1, lane]))
            assert ends == sorted(springs[rows[b, t, lane]].tolist())
        assert rows[:, -1].max() < 0  # the last slot's row joins nothing
    if widths is not None:
        assert set(shapes[:, 2].tolist()) == widths


def test_a_lone_spring_is_projected_as_the_spring_projection_does():
    """A one-spring chain is XPBD's projection of that spring (relaxation 1: the plain
    projection the chain solve is)."""
    runs = []
    for projection in ("springs", "chains"):
        system = rs.SpringSystem([[0, 0, 0], [0.12, 0.03, 0.0]], [[0, 1]], mass=0.1,
                                 stiffness=300.0, damping=0.5, rest_lengths=[0.1],
                                 pinned=[0])
        sim = rs.Simulation(system, dt=1 / 60, integrator="xpbd")
        sim.integrator_object.projection = projection
        sim.integrator_object.relaxation = 1.0
        sim.step(40)
        runs.append(sim.positions.copy())
    np.testing.assert_allclose(runs[1], runs[0], rtol=0, atol=1e-12)


def test_hanging_chain_is_solved_in_one_pass_per_substep():
    """A hanging chain is one chain: XPBD's defaults (5 substeps x 1 pass) settle it to
    the closed-form static shape within 1e-6, where the spring projection's defaults are
    several percent off."""
    assert chain_static_error(settled_chain("xpbd", chains)) < 1e-6
    assert chain_static_error(settled_chain("xpbd", lambda xpbd: None)) > 0.02


def test_rigid_rods_keep_their_length_after_two_passes():
    """Zero compliance: a swinging chain of rigid rods keeps every rod's length to 1e-12 m
    with 20 substeps of 2 passes (the spring projection needs 200 passes for 1e-6)."""
    chain = hanging_chain()
    swinging = rs.SpringSystem(chain.positions, chain.springs, mass=0.05, stiffness=200.0,
                               pinned=[0], velocities=np.tile([1.0, 0.0, 0.0], (12, 1)))
    sim = rs.Simulation(swinging, dt=1 / 60, integrator="xpbd")
    xpbd = sim.integrator_object
    xpbd.projection, xpbd.compliance, xpbd.substeps, xpbd.iterations = "chains", 0.0, 20, 2
    for _ in range(60):
        sim.step()
        lengths = np.linalg.norm(np.diff(sim.positions, axis=0), axis=1)
        assert np.abs(lengths - 0.1).max() < 1e-12
    assert abs(sim.positions[-1, 0]) > 0.05  # it swung
    assert sim.solver_stats.residual < 1e-12


def test_rigid_chain_between_two_pins_hangs_at_its_rod_lengths():
    """Rigid rods hung between two pins 0.5 m apart (0.7 m of rods): every rod keeps its
    length to 1e-9 m at 2 passes per substep while the chain swings down and settles."""
    springs = [[i, i + 1] for i in range(7)]
    positions = [[0.5 / 7 * i, 0.0, 0.0] for i in range(8)]
    system = rs.SpringSystem(positions, springs, mass=0.05, stiffness=200.0,
                             rest_lengths=[0.1] * 7, pinned=[0, 7])
    sim = rs.Simulation(system, dt=1 / 60, integrator="xpbd")
    xpbd = sim.integrator_object
    xpbd.projection, xpbd.compliance, xpbd.iterations = "chains", 0.0, 2
    for _ in range(12):
        sim.step(10)
        lengths = np.linalg.norm(np.diff(sim.positions, axis=0), axis=1)
        assert np.abs(lengths - 0.1).max() < 1e-9
    assert sim.positions[:, 1].min() < -0.1  # it hangs


def test_float32_follows_float64():
    runs = []
    for dtype in (np.float64, np.float32):
        sim = rs.Simulation(rs.cloth(12, 12, 0.05, pins="top-corners"), dt=1 / 60,
                            integrator="xpbd", dtype=dtype)
        sim.integrator_object.projection = "chains"
        sim.integrator_object.tethers = 0.1
        sim.step(30)
        runs.append(sim.positions.astype(np.float64))
    assert np.isfinite(runs[1]).all()
    assert np.abs(runs[1] - runs[0]).max() < 1e-3


def test_stiff_cloth_stretches_far_less_than_with_the_spring_projection():
    """The stiff 16 x 16 cloth hanging from two corners, 2 substeps at dt = 1/60 s: after
    1 s its most stretched spring is under half the spring projection's."""
    strain = {}
    cloth = stiff_cloth()
    for projection in ("springs", "chains"):
        sim = rs.Simulation(cloth, dt=1 / 60, integrator="xpbd")
        sim.integrator_object.projection = projection
        sim.integrator_object.substeps = 2
        sim.step(60)
        x = sim.positions
        lengths = np.linalg.norm(x[cloth.springs[:, 0]] - x[cloth.springs[:, 1]], axis=1)
        strain[projection] = float((lengths / cloth.rest_lengths - 1.0).max())
    assert strain["chains"] < 0.5 * strain["springs"]


def test_stable_and_finite_at_twenty_times_the_explicit_limit():
    def chains_twenty_substeps(xpbd):
        xpbd.projection, xpbd.substeps = "chains", 20

    check_stable_at_twenty_times_the_explicit_limit("xpbd", chains_twenty_substeps,
                                                    energy_slack=0.1)


def test_undamped_energy_never_grows_over_ten_thousand_steps():
    check_undamped_energy_never_grows("xpbd", chains)


@pytest.mark.parametrize("dt", [1e-3, 1 / 60])
def test_free_system_conserves_momentum(dt):
    # every row's multiplier moves the spring's two ends by equal and opposite impulses
    assert momentum_drift("xpbd", chains, dt) < 1e-11


def test_deterministic_and_serial_equals_parallel():
    check_deterministic("xpbd", chains)


def test_serial_equals_parallel_on_a_cloth_with_tethers():
    """Above CHAIN_PARALLEL_MIN_SPRINGS the parallel kernel is timed against the serial
    one: both give the same bits (a family's chains share no particle)."""
    runs = []
    for mode in ("serial", "parallel"):
        parallel.set_mode(mode)
        try:
            sim = rs.Simulation(rs.cloth(48, 48, 0.02, pins="top-corners"), dt=1 / 60,
                                integrator="xpbd")
            sim.integrator_object.projection = "chains"
            sim.integrator_object.tethers = 0.05
            sim.step(10)
            runs.append(sim.positions.copy())
        finally:
            parallel.set_mode("auto")
    np.testing.assert_array_equal(runs[0], runs[1])


def test_switching_in_and_out_mid_run():
    check_switching_in_and_out("xpbd", chains)


def test_switching_the_projection_live_keeps_the_state():
    sim = rs.Simulation(rs.cloth(10, 10, 0.1, pins="top-corners"), dt=1 / 60,
                        integrator="xpbd")
    sim.step(20)
    for projection in ("chains", "springs", "chains"):
        before = sim.positions.copy()
        sim.integrator_object.projection = projection
        sim.step()
        assert np.isfinite(sim.positions).all()
        assert np.abs(sim.positions - before).max() < 0.05  # one step on, no jump


def test_grab_and_pins():
    check_grab_and_pins("xpbd", chains)


def test_a_removed_spring_covers_the_springs_again():
    sim = rs.Simulation(rs.cloth(6, 6, 0.1, pins="top-corners"), dt=1 / 60,
                        integrator="xpbd")
    sim.integrator_object.projection = "chains"
    sim.step(5)
    sim.remove_springs([0, 7])
    sim.step(5)
    cover = sim.integrator_object._chain_cover(sim.positions)[0]
    assert sorted(cover[2].tolist()) == list(range(sim.n_springs))
    assert np.isfinite(sim.positions).all()


def test_bad_projection_names_the_field():
    sim = rs.Simulation(rs.rope(4, 1.0), integrator="xpbd")
    with pytest.raises(ValueError, match="xpbd.projection: expected one of springs, chains"):
        sim.integrator_object.projection = "lines"


def test_projection_in_a_scene_file_and_through_a_snapshot():
    """``[xpbd] projection = "chains"`` sets it; a bad value is refused by name with the
    allowed values; a snapshot and a switch away and back keep it."""
    from ropesim.io.scenes import SceneError, scene_from_dict

    rope = {"builder": "rope", "rope": {"n": 8, "length": 1.0},
            "simulation": {"integrator": "xpbd"}}
    sim = scene_from_dict({**rope, "xpbd": {"projection": "chains"}}, "chains").simulation()
    assert sim.integrator_object.projection == "chains"
    with pytest.raises(SceneError, match=r"xpbd.projection.*one of springs, chains"):
        scene_from_dict({**rope, "xpbd": {"projection": "lines"}}, "chains").simulation()

    sim.step(3)
    saved = sim.get_state()
    sim.step(2)
    after = sim.positions.copy()
    sim.integrator_object.projection = "springs"
    sim.set_state(saved)
    assert sim.integrator_object.projection == "chains"
    sim.step(2)
    np.testing.assert_array_equal(sim.positions, after)
    sim.integrator = "vbd"
    sim.integrator = "xpbd"
    assert sim.integrator_object.projection == "chains"
