"""Picking: ray/sphere picks, screen picks, drag planes, fling velocity."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ropesim.render.camera import OrbitCamera
from ropesim.render.picking import (
    FlingTracker,
    drag_plane,
    intersect_plane,
    pick_particle,
    pick_particle_screen,
)


@pytest.mark.parametrize("width,height", [(800, 600), (600, 800), (1920, 1080), (257, 911)])
def test_projected_particle_is_picked_by_ray_through_its_pixel(width: int, height: int) -> None:
    rng = np.random.default_rng(width + height)
    for _ in range(25):
        cam = OrbitCamera(
            target=rng.uniform(-3, 3, 3),
            azimuth=rng.uniform(-180, 180),
            elevation=rng.uniform(-80, 80),
            distance=rng.uniform(1, 15),
            fov_y=rng.uniform(30, 80),
        )
        positions = cam.target + rng.uniform(-1, 1, (200, 3)) * cam.distance * 0.3
        # project with the float32 matrix the renderer uploads
        vp = cam.view_projection(width / height)
        clip = np.hstack([positions, np.ones((200, 1))]).astype(np.float32) @ vp
        ndc = clip[:, :2] / clip[:, 3:]
        pixels = np.stack([(ndc[:, 0] + 1) / 2 * width, (1 - ndc[:, 1]) / 2 * height], 1)
        for i in rng.choice(200, 5, replace=False):
            origin, direction = cam.world_ray(*pixels[i], width, height)
            assert pick_particle(origin, direction, positions, 1e-4 * cam.distance) == i
            picked = pick_particle_screen(
                cam, *pixels[i], width, height, positions, radius_px=1e-3
            )
            assert picked == i


def test_picking_after_resize() -> None:
    cam = OrbitCamera(target=(0, 0.5, 0), azimuth=25, elevation=35, distance=5)
    positions = np.array([[0.3, 0.4, -0.2], [-0.6, 1.2, 0.4], [0.0, 0.0, 0.9]])
    for width, height in [(640, 480), (1280, 480), (480, 1280)]:
        pixels, _ = cam.project(positions, width, height)
        for i, (u, v) in enumerate(pixels):
            origin, direction = cam.world_ray(u, v, width, height)
            assert pick_particle(origin, direction, positions, 0.01) == i
    # the pixel from the old viewport size no longer hits after a resize
    origin, direction = cam.world_ray(*cam.project(positions[0], 640, 480)[0][0], 1280, 480)
    assert pick_particle(origin, direction, positions[:1], 0.01) is None


def test_pick_nearest_of_two_on_ray_and_miss_and_mask() -> None:
    origin, direction = np.zeros(3), np.array([0.0, 0.0, -2.0])  # not normalised on purpose
    positions = np.array([[0.0, 0.0, -5.0], [0.02, 0.0, -2.0], [5.0, 5.0, -1.0]])
    assert pick_particle(origin, direction, positions, 0.05) == 1
    mask = np.array([True, False, True])
    assert pick_particle(origin, direction, positions, 0.05, mask=mask) == 0
    assert pick_particle(origin, direction, positions, 0.05, mask=np.zeros(3, bool)) is None
    assert pick_particle(origin, -direction, positions, 0.05) is None  # all behind the ray
    assert pick_particle(origin, np.array([1.0, 0, 0]), positions, 0.05) is None
    assert pick_particle(origin, direction, np.empty((0, 3)), 0.05) is None
    # per-particle radii: a fat far particle is still behind a thin near one
    assert pick_particle(origin, direction, positions, np.array([1.0, 0.05, 0.05])) == 1


def test_pick_among_100k_particles_is_one_vectorised_pass() -> None:
    """The pick among 100,000 particles is the nearest hit a brute-force search finds,
    and costs a few whole-array NumPy passes, not a Python loop: timed against one such
    pass over the same positions in the same run (the ratio, not the machine's speed, is
    checked; a plain loop over the particles takes 30-50 times the pass)."""
    rng = np.random.default_rng(0)
    positions = rng.uniform(-1, 1, (100_000, 3)).astype(np.float32)
    origin, direction = np.array([0.0, 0.0, 5.0]), np.array([0.0, 0.0, -1.0])
    radius = 0.01

    def pick():
        return pick_particle(origin, direction, positions, radius)

    off_axis = np.hypot(positions[:, 0], positions[:, 1])
    hits = np.flatnonzero(off_axis <= radius)
    assert pick() == hits[positions[hits, 2].argmax()]  # the hit nearest the camera

    def one_pass():
        offset = positions - origin
        return np.einsum("ij,ij->i", offset, offset).argmin()

    pick_times, pass_times = [], []
    for _ in range(7):  # interleaved: a slow moment slows both
        for call, times in ((pick, pick_times), (one_pass, pass_times)):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
    assert np.median(pick_times) < 15 * np.median(pass_times)


def test_screen_pick_tolerates_pixels_and_prefers_nearest_to_camera() -> None:
    cam = OrbitCamera(target=(0, 0, 0), azimuth=0, elevation=0, distance=10)
    width, height = 800, 600
    far_small = np.array([0.0, 0.0, -20.0])
    near = np.array([0.0, 0.0, 3.0])
    positions = np.array([far_small, [4.0, 2.0, 0.0]])
    u, v = cam.project(far_small, width, height)[0][0]
    # 5 px off: the world-space sphere misses but the pixel tolerance catches it
    assert pick_particle_screen(cam, u + 5, v, width, height, positions, radius_world=0.001) == 0
    assert pick_particle_screen(cam, u + 5, v, width, height, positions, radius_px=2.0) is None
    both = np.array([far_small, near])
    assert pick_particle_screen(cam, u + 3, v, width, height, both) == 1
    assert pick_particle_screen(cam, u, v, width, height, both, mask=np.array([True, False])) == 0
    # behind the camera never counts
    behind = np.array([[0.0, 0.0, 20.0]])
    assert pick_particle_screen(cam, u, v, width, height, behind) is None


def test_intersect_plane() -> None:
    up, origin = np.array([0.0, 1.0, 0.0]), np.zeros(3)
    np.testing.assert_allclose(intersect_plane(up, -up, origin, up), [0, 0, 0])
    diagonal = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    p = intersect_plane(np.array([1.0, 2.0, 3.0]), diagonal, 5 * up, -up)
    np.testing.assert_allclose(p, [4, 5, 3])
    assert intersect_plane(origin, np.array([1.0, 0, 0]), up, up) is None  # parallel
    assert intersect_plane(origin, -up, up, up) is None  # plane behind the ray


def test_drag_plane_faces_camera_and_keeps_cursor_point() -> None:
    cam = OrbitCamera(target=(0.2, 0.1, 0), azimuth=50, elevation=30, distance=4)
    width, height = 900, 700
    grabbed = np.array([0.5, 0.3, -0.4])
    point, normal = drag_plane(cam, grabbed)
    np.testing.assert_allclose(point, grabbed)
    np.testing.assert_allclose(normal, cam.forward, atol=1e-12)
    # the ray through the grabbed particle's pixel hits the plane at that particle
    u, v = cam.project(grabbed, width, height)[0][0]
    hit = intersect_plane(*cam.world_ray(u, v, width, height), point, normal)
    np.testing.assert_allclose(hit, grabbed, atol=1e-6)
    # moving the cursor keeps the hit in the plane and under the cursor
    hit2 = intersect_plane(*cam.world_ray(u + 40, v - 15, width, height), point, normal)
    assert abs((hit2 - grabbed) @ normal) < 1e-9
    np.testing.assert_allclose(cam.project(hit2, width, height)[0][0], [u + 40, v - 15], atol=1e-6)


def test_drag_plane_planar_is_z0() -> None:
    cam = OrbitCamera(azimuth=20, elevation=10)
    point, normal = drag_plane(cam, np.array([1.0, 2.0, 0.0]), planar=True)
    np.testing.assert_allclose(normal, [0, 0, 1])
    assert point[2] == 0.0


def test_fling_recovers_constant_velocity() -> None:
    tracker = FlingTracker()
    v = np.array([1.5, -2.0, 0.25])
    x0 = np.array([0.1, 0.2, 0.3])
    for k in range(8):
        t = 10.0 + 0.01 * k
        tracker.add(t, x0 + v * (t - 10.0))
    np.testing.assert_allclose(tracker.velocity(), v, rtol=1e-9)


def test_fling_ignores_old_samples_and_needs_two() -> None:
    tracker = FlingTracker(window=0.08, max_samples=8)
    np.testing.assert_array_equal(tracker.velocity(), np.zeros(3))
    tracker.add(0.0, np.zeros(3))
    np.testing.assert_array_equal(tracker.velocity(), np.zeros(3))
    # a fast old movement, then a pause, then a slow recent movement
    tracker.add(0.01, np.array([5.0, 0, 0]))
    v = np.array([0.0, 1.0, 0.0])
    for k in range(3):
        t = 0.5 + 0.02 * k
        tracker.add(t, np.array([5.0, 0, 0]) + v * (t - 0.5))
    np.testing.assert_allclose(tracker.velocity(), v, rtol=1e-9)
    # a single recent sample after a long pause: no fling
    tracker.add(2.0, np.zeros(3))
    np.testing.assert_array_equal(tracker.velocity(), np.zeros(3))
    tracker.reset()
    np.testing.assert_array_equal(tracker.velocity(), np.zeros(3))
