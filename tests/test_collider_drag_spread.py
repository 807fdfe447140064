"""A collider moved over several steps (Simulation.move_collider's ``over``, the viewer's
Ctrl+drag spread over a frame's steps): each step carries its share of the move, so the
surface moves at the true speed and a cloth resting on it is carried, not flung."""

from __future__ import annotations

import numpy as np
import pytest

import ropesim as rs
from ropesim.app.controller import ViewerController
from ropesim.app.hotkeys import LEFT
from ropesim.io.scenes import scene_from_dict

DT = 1e-3


def _resting_particle_on_a_box():
    box = rs.Box(center=(0.0, -0.1, 0.0), size=(1.0, 0.2, 1.0), friction=1.0)
    system = rs.explicit(np.array([[0.0, 1e-4, 0.0]]), np.zeros((0, 2), dtype=int))
    sim = rs.Simulation(system, dt=DT, contacts=[box])
    sim.step(50)  # at rest on the top face, y = 0
    return sim


def test_a_move_over_k_steps_moves_the_box_u_dt_each_step_and_lifts_at_u():
    sim = _resting_particle_on_a_box()
    k, lift = 10, 0.01  # 1 cm over 10 steps: u = 1 m/s
    u = lift / (k * DT)
    start = np.asarray(sim.contacts[0].center)
    sim.move_collider(0, over=k * DT, center=tuple(start + [0.0, lift, 0.0]))
    np.testing.assert_allclose(sim.contacts[0].center, start + [0.0, lift, 0.0])  # the target
    for n in range(1, k + 1):
        sim.step(1)
        # the pose the step ended at: n shares of the move
        np.testing.assert_allclose(sim._contact_set._poses[0, 1, :3],
                                   start + [0.0, n * u * DT, 0.0], atol=1e-12)
        assert sim.velocities[0, 1] == pytest.approx(u, rel=1e-6)  # carried at u, each step
        assert sim.positions[0, 1] == pytest.approx(n * u * DT, abs=2e-5)
    sim.step(1)  # the move is over: the box rests at the target, the particle flies on
    np.testing.assert_allclose(sim._contact_set._poses[0, 1, :3], start + [0.0, lift, 0.0])
    assert sim.velocities[0, 1] == pytest.approx(u - 9.81 * DT, rel=1e-3)


def test_a_move_over_a_duration_drags_a_resting_particle_at_the_surface_speed():
    # Coulomb friction (friction g) brings the particle to the box's true speed, u
    sim = _resting_particle_on_a_box()
    u, seconds = 0.4, 0.3
    start = np.asarray(sim.contacts[0].center)
    sim.move_collider(0, over=seconds, center=tuple(start + [u * seconds, 0.0, 0.0]))
    sim.step(200)
    assert sim.velocities[0, 0] == pytest.approx(u, rel=1e-6)
    np.testing.assert_allclose(sim._contact_set._poses[0, 1, :3],
                               start + [u * 200 * DT, 0.0, 0.0], atol=1e-9)


def test_a_move_made_during_another_goes_on_from_where_the_collider_stands():
    sim = _resting_particle_on_a_box()
    start = np.asarray(sim.contacts[0].center)
    sim.move_collider(0, over=10 * DT, center=tuple(start + [0.0, 0.01, 0.0]))
    sim.step(4)  # 4 mm up
    sim.move_collider(0, over=2 * DT, center=tuple(start + [0.0, 0.002, 0.0]))  # back down
    sim.step(1)
    np.testing.assert_allclose(sim._contact_set._poses[0, 1, :3], start + [0.0, 0.003, 0.0],
                               atol=1e-12)
    sim.step(1)
    np.testing.assert_allclose(sim._contact_set._poses[0, 1, :3], start + [0.0, 0.002, 0.0],
                               atol=1e-12)
    # re-timed: no fields carries the rest of a move under way over a new duration
    sim.move_collider(0, over=10 * DT, center=tuple(start + [0.0, 0.012, 0.0]))
    sim.step(5)
    sim.move_collider(0, over=DT)
    sim.step(1)
    np.testing.assert_allclose(sim._contact_set._poses[0, 1, :3], start + [0.0, 0.012, 0.0],
                               atol=1e-12)
    with pytest.raises(ValueError, match="move_collider.over"):
        sim.move_collider(0, over=-1.0)


def test_a_turn_over_k_steps_turns_a_share_each_step():
    table = rs.Box(center=(0.0, -0.05, 0.0), size=(2.0, 0.1, 2.0), friction=1.0)
    sim = rs.Simulation(rs.explicit(np.array([[0.3, 1e-4, 0.0]]), np.zeros((0, 2), dtype=int)),
                        dt=DT, contacts=[table])
    sim.step(20)
    sim.move_collider(0, over=4 * DT, rotation=(0.0, 4.0, 0.0))  # 1 degree a step
    for n in range(1, 5):
        sim.step(1)
        r = sim._contact_set._poses[0, 1, 3:12].reshape(3, 3)
        np.testing.assert_allclose(r, rs.engine.colliders.rotation_matrix((0.0, n, 0.0)),
                                   atol=1e-12)
    # the surface at the particle moves at omega x r (17 m/s along -z, far faster than
    # friction can follow): Coulomb friction accelerates it at friction g along it each step
    np.testing.assert_allclose(sim.velocities[0], [0.0, 0.0, -1.0 * 9.81 * 4 * DT], atol=1e-5)


def test_a_ctrl_drag_is_spread_over_the_frames_steps_and_carries_the_cloth_at_its_speed():
    box = {"center": [0.0, -0.2, 0.0], "size": [0.6, 0.4, 0.6], "friction": 1.0}
    scene = scene_from_dict({
        "builder": "cloth",
        "cloth": {"nx": 6, "ny": 6, "spacing": 0.05, "plane": "xz", "pins": "none",
                  "origin": [0.0, 0.002, 0.0]},
        "simulation": {"dt": 0.001},
        "boxes": [box],
    }, "drag-frames")
    c = ViewerController(scene, (800, 600), clock=lambda: 0.0)
    c.sim.step(100)  # resting on the box
    c.frame_clock.max_steps_per_frame = 16
    x, y = c.camera.project(np.array([[0.1, 0.0, 0.1]]), *c.view_size)[0][0]
    c.press(x, y, LEFT, ctrl=True)
    for frame in range(1, 4):  # three frames of 16 steps, the cursor up 4 px each
        before = np.asarray(c.sim.contacts[0].center)
        c.drag(x, y - 4.0 * frame)
        lift = np.asarray(c.sim.contacts[0].center) - before
        steps = c.advance(0.016)
        assert steps == 16 and lift[1] > 0.001
        u = lift[1] / (steps * c.sim.dt)
        # carried at the box's speed and lying on its top face (a frame's whole move in
        # its first step would fling the cloth up at 16 u)
        np.testing.assert_allclose(c.sim.velocities[:, 1], u, rtol=0.02)
        top = c.sim.contacts[0].center[1] + 0.2
        assert np.abs(c.sim.positions[:, 1] - top).max() < 2e-3
    c.release(x, y - 12.0, LEFT)
