"""The contact pass's broad phase: colliders far from a block of particles are not
tested against them, and that changes nothing a collider does."""

from __future__ import annotations

import numpy as np

import ropesim as rs

DT = 1e-3


def test_far_colliders_are_culled_and_change_nothing():
    table = rs.Box(center=(0.0, -0.05, 0.0), size=(1.0, 0.1, 1.0), friction=0.6)
    far = [rs.Box(center=(5.0 + k, 0.0, 0.0), size=(0.5, 0.5, 0.5)) for k in range(6)]
    far += [rs.Capsule((-5.0, 0.0, 0.0), (-5.0, 1.0, 0.0), 0.1),
            rs.Box(center=(0.0, 3.0, 0.0), size=(0.2, 0.2, 0.2), velocity=(0.0, 1.0, 0.0))]
    runs = []
    for contacts in ([table], [table, *far]):
        cloth = rs.cloth(10, 10, 0.05, plane="xz", pins="none", origin=(-0.2, 0.05, -0.2))
        sim = rs.Simulation(cloth, dt=DT, contacts=contacts)
        sim.step(150)
        runs.append(sim)
    np.testing.assert_array_equal(runs[0].positions, runs[1].positions)
    np.testing.assert_array_equal(runs[0].velocities, runs[1].velocities)
    near = runs[1]._contact_set._near  # the last block's verdicts: only the table is near
    assert near.tolist() == [True] + [False] * len(far)


def test_a_far_box_moved_onto_the_cloth_in_one_step_is_not_culled():
    # the box stands 1 m from the cloth before the step; its shift over the step
    # (a move of 1 m) brings it onto the particles, which must be pushed
    cloth = rs.cloth(8, 8, 0.05, plane="xz", pins="none", origin=(0.0, 0.0, 0.0))
    box = rs.Box(center=(0.0, 1.0, 0.0), size=(0.6, 0.2, 0.6), friction=0.0)
    sim = rs.Simulation(cloth, dt=DT, gravity=(0, 0, 0), contacts=[box])
    sim.step(1)
    assert not sim._contact_set._near[0]
    sim.move_collider(0, center=(0.0, 0.05, 0.0))  # down 0.95 m in one step, through the cloth
    sim.step(1)
    # swept: the box's bottom face (y = -0.05) pushed every particle ahead of it
    assert (sim.positions[:, 1] <= -0.05 + 1e-9).all()
    np.testing.assert_allclose(sim.velocities[:, 1], -0.95 / DT)


def test_a_far_spinning_collider_is_culled_and_one_whose_turn_reaches_a_particle_is_not():
    paddle = rs.Box(center=(3.0, 0.0, 0.0), size=(0.1, 0.1, 0.1), spin=(0.0, 90.0, 0.0))
    sim = rs.Simulation(rs.cloth(4, 4, 0.05), dt=DT, contacts=[paddle])
    sim.step(1)
    assert not sim._contact_set._near[0]
    # a 1 m paddle along x turned a quarter turn about z in one step: before the step it
    # is 0.39 m from the particle, after it the particle (0, 0.4, 0) lies inside it
    paddle = rs.Box(center=(0.0, 0.0, 0.0), size=(1.0, 0.02, 0.02), spin=(0.0, 0.0, 90.0 / DT))
    sim = rs.Simulation(rs.explicit(np.array([[0.0, 0.4, 0.0]]), np.zeros((0, 2), dtype=int)),
                        dt=DT, gravity=(0, 0, 0), contacts=[paddle])
    sim.step(1)
    assert sim._contact_set._near[0]
    turned = rs.engine.colliders.posed_at(paddle, sim.time)
    local = (sim.positions[0] - np.asarray(turned.center)) @ turned.matrix()
    assert (np.abs(local) >= 0.5 * np.asarray(turned.size) - 1e-9).any()  # pushed out
