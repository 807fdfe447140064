"""forces.grid_implicit_blocks, the spring pass of the implicit grid solver, against the
general spring-list kernels (spring_forces, stiffness_blocks, system_product), and the
implicit grid path against the spring-list path with live parameter edits."""

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine.forces import spring_forces, stiffness_blocks, system_product
from ropesim.engine.kernels.grid import grid_layout
from ropesim.engine.kernels.grid_implicit import (
    COMPACT_ROWS, GRID_CHUNK, GRID_PAD, grid_implicit_blocks, grid_implicit_scratch,
    grid_spring_params, padded_edges,
)

ALPHA, BETA = (1 / 60) ** 2, 1 / 60  # backward Euler at dt = 1/60 s


def spring_slots(layout, pblocks):
    """Padded edge slot of every spring, from the layout definitions (GridLayout)."""
    slots = []
    for (dr, dc, first, c0, c1), (base, _, _) in zip(layout.blocks, pblocks):
        r, col = np.divmod(np.arange((layout.rows - dr) * (c1 - c0)), c1 - c0)
        slots.append(base + r * layout.cols + c0 + col)
    return np.concatenate(slots)


class Case:
    """A grid system in a randomly stretched, compressed and moving state."""

    def __init__(self, system, dtype=np.float64, seed=0, jitter=0.3):
        rng = np.random.default_rng(seed)
        spacing = np.median(system.rest_lengths)
        self.x = (system.positions + jitter * spacing * rng.standard_normal(
            system.positions.shape)).astype(dtype)
        self.v = rng.standard_normal(system.positions.shape).astype(dtype)
        self.a = system.springs[:, 0].astype(np.int32)
        self.b = system.springs[:, 1].astype(np.int32)
        m = self.a.shape[0]
        self.k = (system.stiffness * rng.uniform(0.5, 2.0, m)).astype(dtype)
        self.c = (system.damping * rng.uniform(0.5, 2.0, m)).astype(dtype)
        self.rest = system.rest_lengths.astype(dtype)
        self.n = system.n_particles
        self.layout = grid_layout(self.a, self.b, self.n)
        assert self.layout is not None
        self.pblocks = padded_edges(self.layout.rows, self.layout.cols, self.layout.offsets)
        self.slots = spring_slots(self.layout, self.pblocks)
        self.edges = int(self.pblocks[:, 1].sum())
        self.scratch = grid_implicit_scratch(self.layout, self.pblocks)
        op = np.float32 if dtype == np.float32 else np.float64
        self.out = [np.full((3, self.n + GRID_PAD), 7.0) for _ in range(3)]  # zeroed inside
        self.out += [np.zeros((COMPACT_ROWS, self.edges + GRID_PAD), op) for _ in range(2)]

    def run(self):
        # the parameters per edge slot, as the integrator refreshes them after an edit
        grid_spring_params(self.k, self.c, self.rest, self.layout.cols, self.layout.blocks,
                           self.pblocks, self.scratch[2])
        grid_implicit_blocks(self.x, self.v, self.layout.cols, self.layout.blocks,
                             self.pblocks, ALPHA, BETA, *self.scratch, *self.out)
        return self.out

    def reference(self):
        """force, kv, kv_clamped (n, 3) and per-spring blocks (m, 6), general kernels."""
        x, v = self.x.astype(np.float64), self.v.astype(np.float64)
        k, c, rest = (q.astype(np.float64) for q in (self.k, self.c, self.rest))
        force = np.zeros((self.n, 3))
        spring_forces(x, v, self.a, self.b, rest, k, c, force)
        kvs, blocks = [], []
        m = self.a.shape[0]
        for clamp in (False, True):
            ks, normals = np.zeros((m, 6)), np.zeros((m, 3))
            stiffness_blocks(x, self.a, self.b, rest, k, clamp, ks, normals)
            kv = np.zeros((self.n, 3))
            system_product(v, np.zeros(self.n), self.a, self.b, ks, normals, c, 1.0, 0.0,
                           np.zeros(self.n, np.uint8), kv)
            nn = normals[:, [0, 1, 2, 0, 0, 1]] * normals[:, [0, 1, 2, 1, 2, 2]]
            blocks.append(ALPHA * ks + BETA * c[:, None] * nn)
            kvs.append(kv)
        return force, kvs[0], kvs[1], blocks[0], blocks[1]


def expand(compact):
    """(xx, yy, zz, xy, xz, yz) rows of compact (w, h) blocks: w w^T + h I."""
    w, h = compact[:3], compact[3]
    return np.stack([w[0] * w[0] + h, w[1] * w[1] + h, w[2] * w[2] + h,
                     w[0] * w[1], w[0] * w[2], w[1] * w[2]])


def check(case, rtol=1e-12, block_rtol=1e-12):
    """Run the kernel on ``case`` and compare with the general kernels (tolerances relative
    to the largest entry); returns the reference."""
    force, kv, kvc, b_exact, b_clamped = case.run()
    ref = case.reference()
    n, edges = case.n, case.edges
    for got, want in zip((force, kv, kvc), ref[:3]):
        assert np.all(got[:, n:] == 0.0)  # pads
        scale = np.abs(want).max()
        np.testing.assert_allclose(got[:, :n].T, want, rtol=0, atol=rtol * scale)
    unused = np.ones(edges, bool)
    unused[case.slots] = False
    for compact, want in zip((b_exact, b_clamped), ref[3:]):
        assert np.all(np.isfinite(compact))
        assert np.all(compact[:, edges:] == 0.0)  # pads
        got = expand(compact.astype(np.float64))
        assert np.all(got[:, edges:] == 0.0)  # pads
        assert np.all(got[:, :edges][:, unused] == 0.0)  # slots without a spring
        scale = np.abs(want).max()
        np.testing.assert_allclose(got[:, case.slots].T, want, rtol=0, atol=block_rtol * scale)
    return ref


CLOTHS = [
    dict(nx=7, ny=5),
    dict(nx=7, ny=5, bend=False),
    dict(nx=6, ny=9, structural=False, plane="xz"),
    dict(nx=64, ny=64),  # 16 chunks: the ring of T chunks wraps
    dict(nx=300, ny=6, shear=False),  # rows longer than a chunk, shifts > GRID_CHUNK
    dict(nx=33, ny=40),  # chunks that start mid-row
]


@pytest.mark.parametrize("kw", CLOTHS)
def test_matches_the_spring_list_kernels_float64(kw):
    case = Case(rs.cloth(spacing=0.05, **kw))
    force, kv, kv_clamped, _, _ = check(case)
    transverse = 1.0 - case.rest / np.linalg.norm(case.x[case.a] - case.x[case.b], axis=1)
    assert (transverse < 0).any() and (transverse > 0).any()  # compressed and stretched
    assert not np.allclose(kv, kv_clamped)  # so the clamped terms differ


def test_rope_is_a_one_row_grid():
    system = rs.rope(40, 1.0)
    case = Case(system, seed=3)
    assert case.layout.rows == 1
    check(case)


@pytest.mark.parametrize("kw", [CLOTHS[0], CLOTHS[3], CLOTHS[4]])
def test_float32_state(kw):
    case = Case(rs.cloth(spacing=0.05, **kw), dtype=np.float32, seed=1)
    # float32 inputs are widened exactly: force and kv as in float64; the blocks are
    # stored in float32
    check(case, rtol=1e-12, block_rtol=1e-6)
    assert case.out[3].dtype == np.float32


def test_live_parameter_changes_are_seen():
    case = Case(rs.cloth(20, 15, 0.05), seed=2)
    check(case)
    check(case)  # unchanged parameters: the kept per-slot copy is reused
    case.k[:7] *= 0.5
    check(case)
    case.c[-3:] = 0.0
    check(case)
    case.rest[100:140] *= 1.3
    check(case)
    case.k[:] = case.k[::-1].copy()
    check(case)


def test_springs_without_length_contribute_nothing():
    system = rs.cloth(9, 8, 0.05)
    case = Case(system, seed=4)
    case.x[10] = case.x[11]  # a (0, 1) spring of length zero
    case.x[20] = case.x[29] + 1e-14  # a (1, 0) spring shorter than MIN_LENGTH
    force, kv, kvc, be, bc = case.run()
    for out in (force, kv, kvc, be, bc):
        assert np.all(np.isfinite(out))
    slots = case.slots[[s for s in range(case.a.shape[0])
                        if {case.a[s], case.b[s]} in ({10, 11}, {20, 29})]]
    assert slots.size == 2
    assert np.all(be[:, slots] == 0.0) and np.all(bc[:, slots] == 0.0)
    check(case)


def test_chunk_size_is_covered():
    # the 64 x 64 case spans several chunks and wraps the ring; a narrow, tall grid has
    # offset blocks shorter than a chunk
    assert 64 * 64 > 4 * GRID_CHUNK
    check(Case(rs.cloth(3, 50, 0.05), seed=5))


def _simulations(grid_and_general, edit):
    system = rs.cloth(16, 12, 0.05)

    def scenario(grid_kernels):
        sim = rs.Simulation(system, dt=1 / 60, integrator="backward_euler",
                            cg_tolerance=1e-11, cg_max_iterations=5000, grid_kernels=grid_kernels)
        sim.step(4)
        edit(sim)
        sim.step(6)
        return sim

    sims = grid_and_general(scenario)
    assert sims[0].integrator_object.grid_solver() is not None
    assert sims[1].integrator_object.grid_solver() is None
    return sims


def _edit(sim):
    sim.set_stiffness(sim.stiffness * 3.0)
    stiffness, damping, rest = (a.copy() for a in (sim.stiffness, sim.damping,
                                                     sim.rest_lengths))
    stiffness[:7] *= 0.5  # edits of some springs, through the set_* methods
    damping[10:20] = 0.0
    rest[:30] *= 0.9
    sim.set_stiffness(stiffness)
    sim.set_damping(damping)
    sim.set_rest_lengths(rest)
    sim.pin(40)


def test_backward_euler_grid_path_sees_live_edits(grid_and_general):
    a, b = _simulations(grid_and_general, _edit)
    np.testing.assert_allclose(a.positions, b.positions, rtol=0, atol=1e-8)
    np.testing.assert_allclose(a.velocities, b.velocities, rtol=0, atol=1e-6)
    assert a.solver_stats.fallback_steps == b.solver_stats.fallback_steps
