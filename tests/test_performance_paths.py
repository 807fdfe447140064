"""The fast kernel paths (issue 5) give the physics of the plain kernels.

Structured-grid explicit sweep, its parallel row bands, the edge-coloured scatter, the
multigrid-preconditioned implicit solver and the serial/parallel chooser: each is
checked against the plain spring-list kernels or against itself, never timed.
"""

import os

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine import parallel
from ropesim.engine.integrators import euler
from ropesim.engine.kernels import sweeps
from ropesim.engine.kernels.colouring import edge_colouring
from ropesim.engine.kernels.grid import grid_layout
from ropesim.engine.model import SpringSystem
from ropesim.engine.linalg.multigrid import GridMultigrid, mg_cycle


def standard_cloth(n, stiffness_scale=1.0):
    """The benchmark workload (benchmarks/workload.py), built here without the benchmarks."""
    h = 1.0 / (n - 1)
    i = np.arange(n * n)
    r, c = np.divmod(i, n)
    pos = np.stack([c * h, np.zeros(n * n), r * h], axis=1)
    pos += 0.05 * h * np.stack([np.sin(1.7 * i), np.sin(2.3 * i + 1), np.sin(3.1 * i + 2)], 1)
    ids = i.reshape(n, n)
    pairs, rest = [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1), (0, 2), (2, 0)):
        c0, c1 = max(0, -dc), n - max(0, dc)
        a, b = ids[: n - dr, c0:c1], ids[dr:, c0 + dc : c1 + dc]
        pairs.append(np.column_stack([a.ravel(), b.ravel()]))
        rest.append(np.full(a.size, h * np.hypot(dr, dc)))
    m = 1.0 / (n * n)
    return SpringSystem(pos, np.concatenate(pairs), np.concatenate(rest), mass=m,
                        stiffness=1e4 * m * stiffness_scale, damping=10 * m,
                        pinned=[0, n - 1], grid_shape=(n, n))


def run(system, steps, grid=True, mode="auto", **kw):
    old_mode = parallel.get_mode()
    parallel.set_mode(mode)
    try:
        sim = rs.Simulation(system, grid_kernels=grid, **kw)
        sim.step(steps)
    finally:
        parallel.set_mode(old_mode)
    return sim


# --- recognising grids ------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [dict(), dict(plane="xz"), dict(bend=False),
                                dict(shear=False, bend=False), dict(structural=False)])
def test_builder_cloths_are_grids(kw):
    system = rs.cloth(7, 5, 0.1, **kw)
    layout = grid_layout(system.springs[:, 0], system.springs[:, 1], system.n_particles)
    assert layout is not None and (layout.rows, layout.cols) == (5, 7)
    assert sum((b[4] - b[3]) * (layout.rows - b[0]) for b in layout.blocks) == system.n_springs


def test_large_grids_are_recognised_without_a_shape_hint():
    system = rs.cloth(300, 250, 0.01)  # its first spring block alone is > 65536 springs
    layout = grid_layout(system.springs[:, 0], system.springs[:, 1], system.n_particles)
    assert layout is not None and (layout.rows, layout.cols) == (250, 300)


def test_rope_is_a_one_row_grid_and_shuffled_springs_are_not():
    rope = rs.rope(20, 1.0)
    layout = grid_layout(rope.springs[:, 0], rope.springs[:, 1], rope.n_particles)
    assert layout is not None and layout.rows == 1
    cloth = standard_cloth(8)
    order = np.random.default_rng(1).permutation(cloth.n_springs)
    springs = cloth.springs[order]
    assert grid_layout(springs[:, 0], springs[:, 1], cloth.n_particles) is None
    flipped = cloth.springs[:, ::-1]  # either end first is fine
    assert grid_layout(flipped[:, 0], flipped[:, 1], cloth.n_particles) is not None
    net = rs.random_network(30, seed=3) if "random_network" in dir(rs) else None
    if net is not None:
        assert grid_layout(net.springs[:, 0], net.springs[:, 1], net.n_particles) is None


def test_paths_are_chosen_by_structure():
    sim = rs.Simulation(standard_cloth(16), dt=1 / 600)
    assert sim.integrator_object.path().kind == "grid"
    shuffled = standard_cloth(16)
    order = np.random.default_rng(0).permutation(shuffled.n_springs)
    shuffled = SpringSystem(shuffled.positions, shuffled.springs[order],
                            shuffled.rest_lengths[order], mass=shuffled.mass,
                            stiffness=shuffled.stiffness[order], damping=shuffled.damping[order],
                            pinned=shuffled.pinned)
    assert rs.Simulation(shuffled, dt=1 / 600).integrator_object.path().kind == "plain"


# --- explicit grid sweep ----------------------------------------------------------------------


@pytest.mark.parametrize("integrator", ["symplectic_euler", "explicit_euler"])
def test_grid_sweep_matches_plain_scatter(integrator):
    system = rs.cloth(12, 9, 0.05, plane="xz")
    kw = dict(dt=2e-4, integrator=integrator, drag=0.3)
    a = run(system, 200, grid=True, **kw)
    b = run(system, 200, grid=False, **kw)
    assert a.integrator_object.path().kind == "grid" and b.integrator_object.path().kind == "plain"
    np.testing.assert_allclose(a.positions, b.positions, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.velocities, b.velocities, rtol=0, atol=1e-8)


def test_grid_sweep_sees_live_edits_pins_and_grabs(grid_and_general):
    system = rs.cloth(10, 10, 0.05)

    def scenario(grid_kernels):
        sim = rs.Simulation(system, dt=2e-4, grid_kernels=grid_kernels)
        sim.step(20)
        sim.set_stiffness(sim.stiffness * 1.5)
        stiffness = sim.stiffness.copy()
        stiffness[:7] *= 0.5  # an edit of some springs
        sim.set_stiffness(stiffness)
        sim.pin(55)
        sim.grab(33, sim.positions[33] + [0.0, 0.05, 0.02])
        sim.step(50)
        sim.release()
        sim.step(20)
        return sim

    grid, general = grid_and_general(scenario)
    np.testing.assert_allclose(grid.positions, general.positions, rtol=0, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parallel_bands_give_identical_bits(dtype):
    system = standard_cloth(48)
    serial = run(system, 30, mode="serial", dt=1 / 600, dtype=dtype)
    par = run(system, 30, mode="parallel", dt=1 / 600, dtype=dtype)
    assert np.array_equal(serial.positions, par.positions)
    assert np.array_equal(serial.velocities, par.velocities)


@pytest.mark.parametrize("bands", [[0, 48], [0, 24, 48], [0, 9, 30, 48], [0, 3, 6, 9, 12, 48]])
def test_any_band_split_gives_the_serial_bits(bands):
    sim = rs.Simulation(standard_cloth(48), dt=1 / 600, dtype=np.float32)
    sim.step(5)
    path = sim.integrator_object.path()
    d = sim.params
    x, v = sim.positions, sim.velocities
    t = np.float32
    x0, v0 = x.copy(), v.copy()
    path.bands(8)
    none = np.zeros((0, 3), np.float32)  # no attached forces
    step = sweeps.StepScalars(t(1 / 600), t(1.0), t(1e-12), t(1.0), True)
    params = (d.stiffness, d.damping, d.rest_lengths, d.inv_mass, d.fixed, d.gravity)
    common = (*params, *step, *path.sweep, none, False)
    ref = sweeps.grid_euler(x, v, *common)
    x1, v1 = x.copy(), v.copy()
    x[:], v[:] = x0, v0
    b = np.array(bands, np.int64)
    got = sweeps.grid_euler_parallel(x, v, path.gx, path.gv, *common, b,
                                     np.zeros((b.size - 1, 2), np.float32))
    assert got == ref
    assert np.array_equal(x, x1) and np.array_equal(v, v1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_grid_sweep_reports_non_finite_speeds(dtype, bad):
    sim = rs.Simulation(standard_cloth(20), dt=1 / 600, dtype=dtype)
    sim.step(2)
    sim.velocities[123, 0] = bad
    with pytest.raises(rs.SimulationDiverged, match="non-finite"):
        sim.step(1)


def test_max_speed_of_the_grid_sweep_is_exact():
    sim = rs.Simulation(standard_cloth(20), dt=1 / 600)
    sim.step(3)
    speed_sq = sim.integrator_object.step(sim.state, 1 / 600)
    assert speed_sq == pytest.approx(float((sim.velocities ** 2).sum(axis=1).max()), rel=1e-12)


# --- edge-coloured scatter --------------------------------------------------------------------


def test_edge_colouring_is_proper_and_complete():
    system = standard_cloth(12)
    order, starts = edge_colouring(system.springs[:, 0], system.springs[:, 1], system.n_particles)
    assert np.array_equal(np.sort(order), np.arange(system.n_springs))
    for q in range(starts.size - 1):
        members = order[starts[q]:starts[q + 1]]
        ends = system.springs[members].ravel()
        assert np.unique(ends).size == ends.size  # no particle twice in a colour


def test_coloured_path_serial_equals_parallel_and_matches_plain(monkeypatch):
    monkeypatch.setattr(euler, "COLOURED_MIN_SPRINGS", 100)
    system = standard_cloth(24)
    kw = dict(dt=1 / 600, grid=False)
    serial = run(system, 40, mode="serial", **kw)
    par = run(system, 40, mode="parallel", **kw)
    assert serial.integrator_object.path().kind == "coloured"
    assert np.array_equal(serial.positions, par.positions)
    monkeypatch.setattr(euler, "COLOURED_MIN_SPRINGS", 10 ** 9)
    plain = run(system, 40, **kw)
    assert plain.integrator_object.path().kind == "plain"
    np.testing.assert_allclose(serial.positions, plain.positions, rtol=0, atol=1e-10)


# --- implicit: multigrid-preconditioned CG ----------------------------------------------------


@pytest.mark.parametrize("integrator", ["backward_euler", "implicit_midpoint"])
def test_multigrid_solver_matches_jacobi_cg(integrator):
    system = standard_cloth(24, stiffness_scale=50.0)
    kw = dict(dt=1 / 60, integrator=integrator, cg_tolerance=1e-10, cg_max_iterations=5000)
    a = run(system, 12, grid=True, **kw)
    b = run(system, 12, grid=False, **kw)
    assert a.integrator_object.grid_solver() is not None and b.integrator_object.grid_solver() is None
    np.testing.assert_allclose(a.positions, b.positions, rtol=0, atol=1e-7)
    assert a.solver_stats.converged
    assert a.solver_stats.total_iterations < b.solver_stats.total_iterations / 4
    assert a.solver_stats.fallback_steps == b.solver_stats.fallback_steps


def test_multigrid_implicit_with_edits_pins_grab_and_float32(grid_and_general):
    system = rs.cloth(20, 14, 0.05)

    def scenario(grid_kernels):
        sim = rs.Simulation(system, dt=1 / 60, integrator="backward_euler",
                            dtype=np.float32, cg_tolerance=1e-9, grid_kernels=grid_kernels)
        sim.step(3)
        sim.set_stiffness(sim.stiffness * 2.0)
        sim.pin(100)
        sim.grab(47, sim.positions[47] + [0.1, 0.1, 0.0])
        sim.step(5)
        return sim

    grid, general = grid_and_general(scenario)
    assert grid.integrator_object.grid_solver() is not None
    np.testing.assert_allclose(grid.positions, general.positions, rtol=0, atol=2e-4)
    assert np.all(np.isfinite(grid.positions))


def _preconditioner_matrix(sim):
    """The multigrid cycle of a simulation's grid solver as a dense matrix (free rows)."""
    mg = sim.integrator_object.grid_solver().mg
    operators, work = mg.arrays(), mg.workspace(0)
    X0, B0 = work[0][0], work[1][0]
    n = mg.nodes[0]
    size = 3 * n
    M = np.zeros((size, size))
    for k in range(size):
        B0[:] = 0.0
        B0[k % 3, k // 3] = 1.0
        mg_cycle(operators, work)
        M[:, k] = X0[:, :n].T.ravel()
    keep = np.repeat(sim.params.fixed == 0, 3)
    return M[keep][:, keep]


def test_multigrid_v_cycle_is_symmetric_positive_definite():
    sim = rs.Simulation(standard_cloth(12, 100.0), dt=1 / 60, integrator="backward_euler")
    sim.step(3)
    sim.integrator_object.grid_solver().mg.set_kcycle_levels(0)
    M = _preconditioner_matrix(sim)
    np.testing.assert_allclose(M, M.T, atol=1e-6 * np.abs(M).max())
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0


def test_k_cycle_is_positive_and_needs_fewer_iterations_than_the_v_cycle():
    system = standard_cloth(32, 400.0)
    iterations, positions = {}, {}
    for kcycle_levels in (0, 2):
        sim = rs.Simulation(system, dt=1 / 60, integrator="backward_euler",
                            cg_tolerance=1e-6)
        sim.integrator_object.grid_solver().mg.set_kcycle_levels(kcycle_levels)
        sim.step(20)
        assert sim.solver_stats.converged
        iterations[kcycle_levels] = sim.solver_stats.total_iterations
        positions[kcycle_levels] = sim.positions
    # the K-cycle is not a linear map, but it is a positive one: r.M(r) > 0
    M = _preconditioner_matrix(sim)
    rng = np.random.default_rng(3)
    for _ in range(5):
        r = rng.standard_normal(M.shape[0])
        assert r @ M @ r > 0
    # the same answer, both to the CG tolerance
    np.testing.assert_allclose(positions[2], positions[0], rtol=0, atol=1e-5)
    assert iterations[2] < 0.8 * iterations[0]


def test_concurrent_implicit_attempts_give_the_sequential_answer_bit_for_bit(monkeypatch):
    # the exact and the clamped CG attempt on two threads, or one after the other
    system = standard_cloth(32, 400.0)
    runs = []
    for mode in ("serial", "parallel"):
        monkeypatch.setattr(parallel, "_mode", mode)
        monkeypatch.setattr(parallel, "threads", lambda: 2)
        sim = rs.Simulation(system, dt=1 / 60, integrator="backward_euler")
        sim.step(15)
        stats = sim.solver_stats
        runs.append((sim.positions, stats.total_iterations, stats.fallback_steps))
        concurrent = sim.integrator_object.grid_solver().concurrent_steps
        assert (concurrent > 0) == (mode == "parallel")
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1:] == runs[1][1:]
    assert runs[0][2] > 0  # the clamped attempt was needed in some steps


def test_multigrid_levels_halve_the_grid():
    mg = GridMultigrid(64, 48, [(0, 1), (1, 0), (1, 1), (1, -1), (0, 2), (2, 0)])
    assert mg.dims[0] == (64, 48) and mg.dims[1] == (32, 24)
    assert mg.dims[-1][0] * mg.dims[-1][1] <= 16 or min(mg.dims[-1]) < 4


def test_rope_and_cloth_strip_coarsen_along_their_length():
    # a side shorter than 4 nodes is kept, the other halved, so the dense coarsest level
    # stays small: a 150-link rope solved densely cost 20 ms a step (the 450 x 450 Cholesky)
    rope = GridMultigrid(1, 150, [(0, 1), (0, 2)])
    assert [d[1] for d in rope.dims] == [150, 75, 38, 19, 10] and rope.dims[-1][0] == 1
    strip = GridMultigrid(3, 200, [(0, 1), (1, 0), (1, 1), (1, -1), (0, 2), (2, 0)])
    assert strip.dims[1] == (3, 100) and strip.dims[-1][0] * strip.dims[-1][1] <= 16


def test_rope_multigrid_matches_jacobi_cg():
    system = rs.rope(150, length=6.0, pins="start", stiffness=8000.0, damping=0.2, mass=0.02)
    kw = dict(dt=1 / 200, integrator="backward_euler", cg_tolerance=1e-10,
              cg_max_iterations=5000)
    a = run(system, 20, grid=True, **kw)
    b = run(system, 20, grid=False, **kw)
    assert a.integrator_object.grid_solver().mg.levels > 1
    np.testing.assert_allclose(a.positions, b.positions, rtol=0, atol=1e-7)
    assert a.solver_stats.total_iterations < b.solver_stats.total_iterations / 4


# --- threading --------------------------------------------------------------------------------


def test_threading_is_configured_before_any_parallel_launch():
    info = parallel.info()
    assert info["mode"] in parallel.MODES
    assert info["threads"] >= 1
    if "OMP_WAIT_POLICY" not in os.environ:
        assert os.environ.get("GOMP_SPINCOUNT") is not None


def test_interleaved_chooser_sees_through_costs_that_come_in_runs(monkeypatch):
    # parallel: 0.7x the serial time on "hard" calls, 1.1x on "easy" ones, which come in
    # runs of 11. Timing each version on its own stretch of calls (serial on easy ones,
    # then parallel on hard ones) would pick serial; alternating sees the same mix.
    monkeypatch.setattr(parallel, "_mode", "auto")
    clock = [0.0]
    monkeypatch.setattr(parallel.time, "perf_counter", lambda: clock[0])
    picks = {}
    for interleave in (False, True):
        chooser = parallel.Chooser(probe=10, statistic="mean", interleave=interleave)
        for call in range(22):
            use = chooser.parallel()
            hard = call >= 11
            start = clock[0]
            clock[0] += (1.0e-3 if hard else 0.5e-3) * ((0.7 if hard else 1.1) if use else 1.0)
            chooser.record(use, start)
        picks[interleave] = chooser.best
    assert picks == {False: 0, True: 1}


def test_chooser_follows_the_faster_version(monkeypatch):
    monkeypatch.setattr(parallel, "_mode", "auto")
    clock = [0.0]
    monkeypatch.setattr(parallel.time, "perf_counter", lambda: clock[0])
    chooser = parallel.Chooser(probe=3, interval=1.0)
    cost = {False: 1.0e-3, True: 0.4e-3}
    picks = []
    for _ in range(40):
        use = chooser.parallel()
        picks.append(use)
        start = clock[0]
        clock[0] += cost[use]
        chooser.record(use, start)
    assert chooser.best == 1 and all(picks[-10:])
    cost[True] = 5e-3  # the machine got busy: parallel is now slower
    for _ in range(600):
        use = chooser.parallel()
        start = clock[0]
        clock[0] += cost[use]
        chooser.record(use, start)
    assert chooser.best == 0


def test_forced_modes(monkeypatch):
    chooser = parallel.Chooser()
    monkeypatch.setattr(parallel, "_mode", "serial")
    assert chooser.parallel() is False
    monkeypatch.setattr(parallel, "_mode", "parallel")
    assert chooser.parallel() is True
    with pytest.raises(ValueError, match="mode"):
        parallel.set_mode("fast")
