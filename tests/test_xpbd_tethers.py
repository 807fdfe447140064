"""XPBD's tethers (long-range attachments, kernels/tethers.py): each free particle stays
within (1 + slack) times its rest distance through the springs from the nearest fixed
particle."""

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine.kernels.tethers import nearest_anchors
from ropesim.engine.kernels.vertex_colouring import vertex_adjacency
from solver_checks import (STIFF_K, STIFF_MASS, chain_static_error,
                           check_grid_kernel_equals_spring_list, settled_chain)


def anchors(n, springs, rest, k, fixed):
    springs = np.asarray(springs)
    starts, ids, others = vertex_adjacency(springs[:, 0], springs[:, 1], n)
    anchor, distance = np.zeros(n, np.int64), np.zeros(n)
    nearest_anchors(starts, ids, others, np.asarray(rest, float), np.asarray(k, float),
                    np.asarray(fixed, bool), anchor, distance)
    return anchor, distance


def test_the_nearest_fixed_particle_through_unbroken_springs():
    """A rope of 9 particles pinned at both ends: each half hangs from its own end; with
    spring 5 broken, particles 6 and 7 can only reach the far pin; a piece no fixed
    particle reaches has no anchor."""
    springs = [[i, i + 1] for i in range(8)]
    rest = np.full(8, 0.5)
    fixed = np.zeros(9, bool)
    fixed[[0, 8]] = True
    anchor, distance = anchors(9, springs, rest, np.ones(8), fixed)
    np.testing.assert_array_equal(anchor, [0, 0, 0, 0, 0, 8, 8, 8, 8])
    np.testing.assert_allclose(distance, 0.5 * np.array([0, 1, 2, 3, 4, 3, 2, 1, 0]))

    k = np.ones(8)
    k[5] = 0.0  # spring 5 joins particles 5 and 6: broken
    anchor, distance = anchors(9, springs, rest, k, fixed)
    np.testing.assert_array_equal(anchor, [0, 0, 0, 0, 0, 0, 8, 8, 8])
    np.testing.assert_allclose(distance, 0.5 * np.array([0, 1, 2, 3, 4, 5, 2, 1, 0]))

    fixed[8] = False
    anchor, distance = anchors(9, springs, rest, k, fixed)
    assert (anchor[6:] == -1).all() and np.isinf(distance[6:]).all()


def stiff_hanging_cloth(n=16):
    """The tests' stiff cloth (h^2 k / m = 22 per substep at 2 substeps of dt = 1/60 s)."""
    return rs.cloth(n, n, 0.05, mass=STIFF_MASS, stiffness=STIFF_K, damping=0.0,
                    pins="top-corners")


def tether_excess(sim, slack=0.05):
    """Largest |x_i - x_anchor| / ((1 + slack) d_i) - 1 over the tethered particles."""
    xpbd = sim.integrator_object
    x = sim.positions
    tethered = (xpbd._anchor >= 0) & (xpbd._anchor_distance > 0.0)
    reach = (1.0 + slack) * xpbd._anchor_distance[tethered]
    far = np.linalg.norm(x[tethered] - x[xpbd._anchor[tethered]], axis=1)
    return float((far / reach - 1.0).max())


@pytest.mark.parametrize("grid", [True, False])
def test_no_free_particle_ends_a_step_beyond_its_tether(grid):
    """2 substeps on the stiff cloth: without tethers some particle hangs more than 30 %
    beyond its rest distance from the pin; with a slack of 0.05, none goes past 1.05
    times it at any step."""
    loose = rs.Simulation(stiff_hanging_cloth(), dt=1 / 60, integrator="xpbd",
                          grid_kernels=grid)
    loose.integrator_object.substeps = 2
    loose.integrator_object.tethers = 0.05  # for the anchors ...
    loose.step(1)
    loose.integrator_object.tethers = None  # ... then off
    tied = rs.Simulation(stiff_hanging_cloth(), dt=1 / 60, integrator="xpbd",
                         grid_kernels=grid)
    tied.integrator_object.substeps = 2
    tied.integrator_object.tethers = 0.05
    worst_loose = worst_tied = -np.inf
    for _ in range(60):
        loose.step()
        tied.step()
        worst_loose = max(worst_loose, tether_excess(loose))
        worst_tied = max(worst_tied, tether_excess(tied))
    assert worst_loose > 0.3
    assert worst_tied < 1e-9
    assert tied.max_strain() < loose.max_strain()


def test_a_slack_above_the_springs_strain_leaves_the_converged_chain_bit_for_bit():
    """The hanging chain converged (20 substeps x 4 iterations) stretches by 27 % at the
    top at most; tethers with a slack of 0.5 never pull, so they change no bit, and the
    chain keeps the closed-form static shape."""
    def converged(xpbd, tethers=None):
        xpbd.substeps = 20
        xpbd.iterations = 4
        xpbd.tethers = tethers

    free = settled_chain("xpbd", converged)
    tied = settled_chain("xpbd", lambda xpbd: converged(xpbd, 0.5))
    assert tied.integrator_object._anchor[-1] == 0  # the tethers were on
    np.testing.assert_array_equal(free.positions, tied.positions)
    assert chain_static_error(tied) < 1e-3


def test_grid_kernel_equals_the_spring_list_kernel_with_tethers():
    """Both paths pull the same particles by the same arithmetic; the grab mid-run makes
    the grabbed particle an anchor (the anchors follow the fixed particles)."""
    check_grid_kernel_equals_spring_list("xpbd", [{"tethers": 0.0, "substeps": 2}])


def test_a_grabbed_particle_becomes_the_anchor_of_its_neighbours():
    sim = rs.Simulation(stiff_hanging_cloth(8), dt=1 / 60, integrator="xpbd")
    sim.integrator_object.tethers = 0.1
    sim.step()
    middle = 4 * 8 + 4
    assert sim.integrator_object._anchor[middle + 1] in (0, 7)
    sim.grab(middle, sim.positions[middle])
    sim.step()
    assert sim.integrator_object._anchor[middle + 1] == middle
    sim.release()
    sim.step()
    assert sim.integrator_object._anchor[middle + 1] in (0, 7)


@pytest.mark.parametrize("value, error", [(-0.1, ValueError), (float("inf"), ValueError),
                                          ("tight", TypeError)])
def test_bad_tethers_name_the_field(value, error):
    sim = rs.Simulation(rs.rope(4, 1.0), integrator="xpbd")
    with pytest.raises(error, match="xpbd.tethers"):
        sim.integrator_object.tethers = value


def test_tethers_in_a_scene_file_and_through_a_snapshot():
    """``[xpbd] tethers = 0.1`` sets them; a bad value is refused by name with the allowed
    values; a snapshot and a switch away and back keep them."""
    from ropesim.io.scenes import SceneError, scene_from_dict

    rope = {"builder": "rope", "rope": {"n": 8, "length": 1.0},
            "simulation": {"integrator": "xpbd"}}
    sim = scene_from_dict({**rope, "xpbd": {"tethers": 0.1}}, "tethers").simulation()
    assert sim.integrator_object.tethers == 0.1
    with pytest.raises(SceneError, match=r"xpbd.tethers.*slack >= 0"):
        scene_from_dict({**rope, "xpbd": {"tethers": -1.0}}, "tethers").simulation()

    saved = sim.get_state()
    sim.integrator_object.tethers = None
    sim.set_state(saved)
    assert sim.integrator_object.tethers == 0.1
    sim.integrator = "vbd"
    sim.integrator = "xpbd"
    assert sim.integrator_object.tethers == 0.1
