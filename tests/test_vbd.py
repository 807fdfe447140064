"""Vertex Block Descent (integrators/vbd.py) against closed forms, invariants and
backward Euler. Unless a test says otherwise it runs the defaults: 10 sweeps per step,
the "inertia" initial guess, no Chebyshev acceleration."""

import numpy as np
import pytest

import ropesim as rs
from solver_checks import (
    chain_static_error, check_deterministic, check_grab_and_pins,
    check_grid_kernel_equals_spring_list, check_live_stiffness_edit,
    check_stable_at_twenty_times_the_explicit_limit, check_switching_in_and_out,
    check_undamped_energy_never_grows, jittered_net, keep_defaults, momentum_drift,
    settled_chain,
)


def sweeps(count, rho=0.0, initialisation="inertia"):
    """configure(): ``count`` sweeps per step, Chebyshev rho, initial guess."""

    def configure(vbd):
        vbd.iterations = count
        vbd.chebyshev_rho = rho
        vbd.initialisation = initialisation

    return configure


def test_registered_as_unconditionally_stable_with_solver_stats():
    cls = rs.INTEGRATORS["vbd"]
    assert cls.unconditionally_stable and cls.has_solver_stats


def test_hanging_chain_settles_to_the_closed_form_static_shape_at_dt_60th():
    """10 sweeps per step: the fixed point of the sweeps is the static shape itself."""
    sim = settled_chain("vbd", keep_defaults)
    assert chain_static_error(sim) < 1e-3
    assert sim.solver_stats.iterations == 10 and sim.solver_stats.residual < 1e-4


def test_stable_and_finite_at_twenty_times_the_explicit_limit():
    """Backward Euler dissipates: the energy never rises above the start (0.1%)."""
    check_stable_at_twenty_times_the_explicit_limit("vbd", keep_defaults, energy_slack=1e-3)


def test_undamped_energy_never_grows_over_ten_thousand_steps():
    check_undamped_energy_never_grows("vbd", keep_defaults)


def test_free_system_conserves_momentum():
    """The internal forces cancel once the sweeps converge: at dt = 1e-3 s 10 sweeps
    reach rounding; at dt = 1/60 s 120 sweeps do (10 leave ~6e-3 kg m/s over 300 steps,
    60 ~2e-8)."""
    assert momentum_drift("vbd", keep_defaults, 1e-3) < 1e-11
    assert momentum_drift("vbd", sweeps(120), 1 / 60) < 1e-11


def test_deterministic_and_serial_equals_parallel():
    check_deterministic("vbd", keep_defaults)
    check_deterministic("vbd", sweeps(10, rho=0.9, initialisation="adaptive"))


def test_switching_in_and_out_mid_run():
    check_switching_in_and_out("vbd", keep_defaults)
    check_switching_in_and_out("vbd", sweeps(10, initialisation="adaptive"))


def test_live_stiffness_edit_moves_the_static_shape():
    assert check_live_stiffness_edit("vbd", keep_defaults) < 1e-3


def test_grab_and_pins():
    check_grab_and_pins("vbd", keep_defaults)


def one_step(name, system, dt, configure=keep_defaults, **options):
    sim = rs.Simulation(system, dt=dt, integrator=name, **options)
    configure(sim.integrator_object)
    sim.step()
    return sim


def test_converges_to_the_backward_euler_step_on_linear_springs():
    """A chain moving along its own axis has linear springs and dampers, so backward
    Euler's one linearised solve is the exact implicit step: 200 sweeps agree to 1e-9 m."""
    n = 8
    positions = [[0.1 * i + 0.01 * np.sin(i), 0.0, 0.0] for i in range(n)]
    velocities = [[np.cos(3 * i), 0.0, 0.0] for i in range(n)]
    chain = rs.SpringSystem(positions, [[i, i + 1] for i in range(n - 1)], rest_lengths=0.1,
                            mass=0.05, stiffness=200.0, damping=0.5, pinned=[0],
                            velocities=velocities)
    options = {"gravity": (0.0, 0.0, 0.0)}
    vbd = one_step("vbd", chain, 1 / 60, sweeps(200), **options)
    be = one_step("backward_euler", chain, 1 / 60, cg_tolerance=1e-10, **options)
    assert np.abs(be.positions - chain.positions3()).max() > 1e-3  # a real step
    np.testing.assert_allclose(vbd.positions, be.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(vbd.velocities, be.velocities, rtol=0, atol=1e-7)


def test_converges_to_the_backward_euler_step_of_a_net():
    """On a jittered 4x4 net the springs turn within the step: VBD's converged step is the
    nonlinear implicit step, backward Euler's the linearised one. Their gap shrinks like
    dt^2 or faster (the linearisation error), far below the step's own displacement."""
    net = jittered_net()
    gaps = []
    for dt in (1 / 120, 1 / 480):
        vbd = one_step("vbd", net, dt, sweeps(300))
        be = one_step("backward_euler", net, dt, cg_tolerance=1e-10)
        moved = np.abs(be.positions - net.positions3()).max()
        gaps.append(np.abs(vbd.positions - be.positions).max())
        assert gaps[-1] < 0.05 * moved
        assert vbd.solver_stats.residual < 1e-10
    assert gaps[1] < gaps[0] / 16  # dt / 4: 16x for a dt^2 gap (measured ~150x)


def test_chebyshev_acceleration_converges_faster():
    """20 sweeps on a stiff net at dt = 1/240 s leave a 10x smaller residual with
    Chebyshev at rho = 0.7 (measured 30x; rho >= 0.9 overshoots there)."""
    net = jittered_net(stiffness=1000.0)
    plain = one_step("vbd", net, 1 / 240, sweeps(20))
    fast = one_step("vbd", net, 1 / 240, sweeps(20, rho=0.7))
    assert fast.solver_stats.residual < 0.1 * plain.solver_stats.residual


def test_initial_guesses_all_reach_the_same_step():
    results = []
    for guess in ("previous", "inertia", "inertia_acceleration", "adaptive"):
        results.append(one_step("vbd", jittered_net(), 1 / 60, sweeps(200, initialisation=guess))
                       .positions)
    for other in results[1:]:
        np.testing.assert_allclose(other, results[0], rtol=0, atol=1e-10)


@pytest.mark.parametrize("field, value, error", [
    ("iterations", 0, ValueError), ("iterations", 1.5, ValueError),
    ("initialisation", "guess", ValueError), ("chebyshev_rho", 1.0, ValueError),
    ("chebyshev_rho", -0.1, ValueError), ("chebyshev_rho", "fast", TypeError),
])
def test_bad_settings_name_the_field(field, value, error):
    sim = rs.Simulation(rs.rope(4, 1.0), integrator="vbd")
    with pytest.raises(error, match=f"vbd.{field}"):
        setattr(sim.integrator_object, field, value)


def test_grid_kernel_equals_the_spring_list_kernel_bit_for_bit():
    """The grid sweeps (springs found from the grid blocks, five (r + 2c) mod 5 colours)
    and the spring-list sweeps (CSR adjacency) visit the same colours and springs in
    the same order with the same arithmetic, so the same bits (Chebyshev too)."""
    check_grid_kernel_equals_spring_list("vbd", [{}, {"chebyshev_rho": 0.5, "iterations": 6}])


def test_grid_colouring_separates_the_ends_of_every_spring():
    """(a r + c) mod p: no spring of the cloth (bend springs two apart included) joins
    two particles of one colour; a layout with offsets that no pattern up to 16 colours
    separates falls back to the greedy colouring."""
    from ropesim.engine.kernels.grid import grid_layout
    from ropesim.engine.kernels.grid_vbd import grid_colour_pattern, grid_vertex_colouring

    cloth = rs.cloth(9, 7, 0.05)
    layout = grid_layout(cloth.springs[:, 0], cloth.springs[:, 1], cloth.n_particles)
    pattern = grid_colour_pattern(layout)
    assert pattern == (2, 5)
    order, starts = grid_vertex_colouring(layout, pattern)
    colour = np.empty(cloth.n_particles, int)
    for q in range(len(starts) - 1):
        colour[order[starts[q]:starts[q + 1]]] = q
    assert np.all(colour[cloth.springs[:, 0]] != colour[cloth.springs[:, 1]])
    assert sorted(order) == list(range(cloth.n_particles))


def test_sweep_layout_finds_the_other_end_of_every_spring():
    """The grid sweeps' layout (kernels/grid_vbd.py sweep_layout: each colour's particles
    row after row, with padding) and its neighbour offsets: the particles get distinct
    entries inside their colour's rows; for every particle, block and direction, the
    entry plus the offset is the other end of that spring where the spring exists, and
    where it does not, the coefficients the sweep reads there are zero (it adds
    nothing), on a grid whose width is no multiple of p."""
    from ropesim.engine.kernels.grid import grid_layout
    from ropesim.engine.kernels.grid_vbd import (grid_colour_pattern, grid_soa_springs,
                                                 layout_entry, row_start, sweep_layout)

    cloth = rs.cloth(13, 11, 0.05)
    layout = grid_layout(cloth.springs[:, 0], cloth.springs[:, 1], cloth.n_particles)
    a, p = grid_colour_pattern(layout)
    rows, cols = layout.rows, layout.cols
    width, base, near = sweep_layout(rows, cols, layout.blocks, (a, p))
    assert cols % p
    entries = {}
    for r in range(rows):
        for c in range(cols):
            q = (a * r + c) % p
            e = layout_entry(base, width, a, p, r, c)
            assert row_start(base, width, a, p, q, r) <= e < row_start(base, width, a, p, q,
                                                                        r + 1)
            entries[r, c] = e
    assert len(set(entries.values())) == cloth.n_particles
    n_blocks, slots = len(layout.blocks), int(base[-1])
    labels = np.zeros((n_blocks, slots))  # spring index + 1 at its first end's entry
    grid_soa_springs(np.arange(cloth.n_springs, dtype=float), np.arange(cloth.n_springs)
                     + 1.0, np.zeros(cloth.n_springs), 60.0, rows, cols, layout.blocks, a,
                     p, base, width, np.zeros_like(labels), labels, np.zeros_like(labels))
    springs = {tuple(sorted(ends)): s for s, ends in enumerate(cloth.springs.tolist())}
    checked = 0
    for (r, c), e in entries.items():
        q = (a * r + c) % p
        for b, (dr, dc) in enumerate(layout.blocks[:, :2].tolist()):
            for end, sign in ((0, -1), (1, 1)):
                other = (r + sign * dr, c + sign * dc)
                at = e + near[b, q, end]
                label = labels[b, at if end == 0 else e]
                if other in entries:
                    key = tuple(sorted((r * cols + c, other[0] * cols + other[1])))
                    assert at == entries[other] and label == springs[key] + 1
                    checked += 1
                else:
                    assert 0 <= at < slots and label == 0.0
    assert checked == 2 * cloth.n_springs


def test_vectorised_grid_sweeps_equal_the_spring_list_kernel_bit_for_bit():
    """The vectorised grid sweeps (kernels/grid_vbd.py) with dampers, wind, interior and
    corner pins and Chebyshev: the same bits as the spring-list sweeps, and the pins
    kept."""
    cols = 67  # no multiple of the 5 colours
    pins = [0, cols - 1, 2 * cols + 7, 3 * cols + cols // 2]
    cloth = rs.cloth(cols, 6, 0.05, mass=0.01, stiffness=800.0, damping=0.05, pins=pins)
    runs = []
    for grid_kernels in (True, False):
        sim = rs.Simulation(cloth, dt=1 / 60, integrator="vbd", grid_kernels=grid_kernels)
        assert (sim.integrator_object._grid is not None) == grid_kernels
        sim.integrator_object.chebyshev_rho = 0.5
        sim.add_force(rs.Wind((3.0, 0.0, 1.0)))
        sim.step(8)
        runs.append((sim.positions.copy(), sim.solver_stats.residual))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    np.testing.assert_array_equal(runs[0][0][pins], cloth.positions3()[pins])
    assert np.abs(runs[0][0] - cloth.positions3()).max() > 0.01  # the rest moved


def test_grid_kernel_equals_the_spring_list_kernel_with_interior_pins():
    """Pinned particles inside a small grid (13 x 11: a colour's rows a few entries
    long, with padding between them) keep their place, and the grid and spring-list
    sweeps still give the same bits."""
    cloth = rs.cloth(13, 11, 0.05, mass=0.01, stiffness=800.0, damping=0.05,
                     pins=[0, 12, 5 * 13 + 4, 6 * 13 + 6, 7 * 13 + 9])
    runs = []
    for grid_kernels in (True, False):
        sim = rs.Simulation(cloth, dt=1 / 60, integrator="vbd", grid_kernels=grid_kernels)
        assert (sim.integrator_object._grid is not None) == grid_kernels
        sim.add_force(rs.Wind((3.0, 0.0, 1.0)))
        sim.step(15)
        runs.append(sim.positions.copy())
    np.testing.assert_array_equal(runs[0], runs[1])
    pinned = [5 * 13 + 4, 6 * 13 + 6, 7 * 13 + 9]
    np.testing.assert_array_equal(runs[0][pinned], cloth.positions3()[pinned])
    assert np.abs(runs[0] - cloth.positions3()).max() > 0.01  # the rest moved


def test_grid_sweeps_follow_spring_edits_and_a_new_dt_bit_for_bit():
    """The vectorised grid sweeps keep the springs' rest lengths, k and c/h between steps
    (kernels/grid_vbd.py): after edits of k, c and rest lengths and a new dt they still
    give the spring-list sweeps' bits, and the edits change the motion."""
    cloth = rs.cloth(64, 4, 0.05, mass=0.01, stiffness=800.0, damping=0.05,
                     pins="top-corners")
    runs = []
    for grid_kernels, edit in ((True, True), (False, True), (True, False)):
        sim = rs.Simulation(cloth, dt=1 / 60, integrator="vbd", grid_kernels=grid_kernels)
        assert (sim.integrator_object._grid is not None) == grid_kernels
        sim.step(3)
        if edit:
            sim.set_stiffness(sim.stiffness * 3.0)
            sim.step(2)
            sim.set_damping(sim.damping * 0.5)
            sim.set_rest_lengths(sim.rest_lengths * 1.1)
            sim.step(2)
            sim.dt = 1 / 120
        sim.step(3)
        runs.append(sim.positions.copy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.abs(runs[0] - runs[2]).max() > 1e-3


def test_extrapolated_guess_follows_a_stiffness_edit_like_a_fresh_simulation():
    """The "extrapolated" guess weighs each particle's last acceleration by the sum of
    its springs' k (kept between steps): after one spring is made 400x stiffer mid-run
    (so its particles' weight falls below 1), both kernel paths step on exactly like a
    fresh Simulation given the same state and the same edit."""
    cloth = rs.cloth(9, 7, 0.05, mass=0.01, stiffness=800.0, damping=0.05,
                     pins="top-corners")
    for grid_kernels in (True, False):
        runs = []
        for fresh in (False, True):
            sim = rs.Simulation(cloth, dt=1 / 60, integrator="vbd", grid_kernels=grid_kernels)
            sim.step(4)
            if fresh:
                state = sim.get_state()
                sim = rs.Simulation(cloth, dt=1 / 60, integrator="vbd",
                                    grid_kernels=grid_kernels)
                sim.set_state(state)
            stiffness = sim.stiffness.copy()
            stiffness[20] *= 400.0
            sim.set_stiffness(stiffness)
            sim.step(4)
            runs.append(sim.positions.copy())
        np.testing.assert_array_equal(runs[0], runs[1])


def test_band_schedule_keeps_colour_by_colour_order_and_tasks_apart():
    """The grid sweeps' band schedule (kernels/grid_vbd.py band_schedule): every colour
    update of every row runs exactly once; of two updates u < w of rows within the
    springs' reach, u runs first (an earlier region, or earlier in the same task), so
    no two tasks of a region touch neighbouring rows and each row sees colour-by-colour
    order; Chebyshev steps follow whole sweeps; the 128 x 128 cloth's 50 colour updates
    run in 8 regions."""
    from ropesim.engine.kernels.grid_vbd import band_schedule

    colours = 5
    cases = ((128, 2, 2, 10, False), (40, 2, 2, 10, True), (57, 2, 3, 4, False),
             (6, 2, 2, 3, False), (30, 1, 4, 5, True), (20, 0, 2, 3, False))
    for rows, reach, tasks, iterations, chebyshev in cases:
        steps, starts, sweeps_done = band_schedule(rows, reach, tasks, colours, iterations,
                                                   chebyshev)
        updates = iterations * colours
        count = np.zeros((updates, rows), int)
        region, task, order = (np.full((updates, rows), -1) for _ in range(3))
        for g in range(len(sweeps_done)):
            for t in range(tasks):
                for e in range(starts[g * tasks + t], starts[g * tasks + t + 1]):
                    u, lo, hi = steps[e]
                    count[u, lo:hi] += 1
                    region[u, lo:hi], task[u, lo:hi], order[u, lo:hi] = g, t, e
        assert (count == 1).all(), (rows, reach, tasks)
        later = np.arange(updates)[:, None] < np.arange(updates)[None, :]  # u < w
        for d in range(-reach, reach + 1):
            r = np.arange(max(0, -d), min(rows, rows - d))
            ru, rw = region[:, None, r], region[None, :, r + d]
            first = (ru < rw) | ((ru == rw) & (task[:, None, r] == task[None, :, r + d])
                                 & (order[:, None, r] < order[None, :, r + d]))
            assert first[later].all(), (rows, reach, tasks, d)
        done = [g for g in range(len(sweeps_done)) if sweeps_done[g] >= 0]
        if chebyshev:
            assert list(sweeps_done[done]) == list(range(iterations))
            for it, g in enumerate(done):  # sweep it ends in region g, the next starts after
                assert region[it * colours:(it + 1) * colours].max() == g
                assert region[(it + 1) * colours:].min(initial=len(sweeps_done)) > g
        else:
            assert not done
    assert len(band_schedule(128, 2, 2, colours, 10, False)[2]) == 8


def test_banded_grid_sweeps_equal_the_spring_list_kernel_serial_and_parallel():
    """A cloth tall enough for band_schedule's multi-update regions (64 x 24 with two
    tasks a region: groups of three colour updates, rows growing around the seams): the
    vectorised grid sweeps, serial and parallel, give the spring-list sweeps' bits. The
    parallel sweeps run on two threads (two tasks; one on a one-thread machine) and,
    where the machine has more, on all of them (more seams, shorter groups: the same
    bits)."""
    import numba

    from ropesim.engine import parallel

    cloth = rs.cloth(64, 24, 0.02, mass=0.01, stiffness=800.0, damping=0.05,
                     pins="top-corners")
    most = parallel.max_threads()
    runs, regions = [], {}
    before = numba.get_num_threads()
    parallel_runs = [(True, "parallel", n) for n in sorted({min(2, most), most})]
    for grid_kernels, mode, threads in [(False, "serial", before), (True, "serial", before),
                                        *parallel_runs]:
        parallel.set_mode(mode)
        numba.set_num_threads(threads)
        try:
            sim = rs.Simulation(cloth, dt=1 / 60, integrator="vbd", grid_kernels=grid_kernels)
            sim.add_force(rs.Wind((3.0, 0.0, 1.0)))
            sim.step(6)
        finally:
            parallel.set_mode("auto")
            numba.set_num_threads(before)
        runs.append((sim.positions.copy(), sim.solver_stats.residual))
        if mode == "parallel":
            regions[threads] = len(sim.integrator_object._schedules[1][2])
    # two tasks a region (one on a one-thread machine): 10 sweeps x 5 colours in groups of
    # three updates, two regions each
    assert regions[min(2, most)] < 2 * 10 * 5 // 3 + 10
    for positions, residual in runs[1:]:
        np.testing.assert_array_equal(positions, runs[0][0])
        assert residual == runs[0][1]
    assert np.abs(runs[0][0] - cloth.positions3()).max() > 0.005  # the cloth moved
