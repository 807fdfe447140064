"""OrbitCamera: matrices, pixel <-> ray round trips, orbit/pan/zoom/frame, persistence."""

from __future__ import annotations

import numpy as np
import pytest

from ropesim.render.camera import OrbitCamera, parse_camera_arg

VIEWPORTS = [(800, 600), (600, 800), (1920, 1080), (333, 777), (64, 64)]


def random_camera(rng: np.random.Generator) -> OrbitCamera:
    return OrbitCamera(
        target=rng.uniform(-5, 5, 3),
        azimuth=rng.uniform(-180, 180),
        elevation=rng.uniform(-85, 85),
        distance=rng.uniform(0.5, 20),
        fov_y=rng.uniform(20, 90),
    )


def visible_points(
    cam: OrbitCamera, rng: np.random.Generator, k: int, w: int, h: int
) -> np.ndarray:
    """k random world points inside the view frustum (from random pixels and depths)."""
    right, up, forward = cam.basis()
    depth = rng.uniform(0.2, 3.0, k) * cam.distance
    half_h = np.tan(np.radians(cam.fov_y) / 2) * depth
    ndc = rng.uniform(-0.95, 0.95, (k, 2))
    return (
        cam.eye
        + depth[:, None] * forward
        + (ndc[:, :1] * half_h[:, None] * (w / h)) * right
        + (ndc[:, 1:] * half_h[:, None]) * up
    )


def ray_point_distance(origin: np.ndarray, direction: np.ndarray, p: np.ndarray) -> float:
    rel = p - origin
    return float(np.linalg.norm(rel - (rel @ direction) * direction))


def test_matrices_are_float32_row_vector_convention() -> None:
    cam = OrbitCamera(target=(1, 2, 3), azimuth=40, elevation=25, distance=4)
    view, proj = cam.view_matrix(), cam.projection_matrix(1.5)
    vp = cam.view_projection(1.5)
    assert view.dtype == proj.dtype == vp.dtype == np.float32
    assert view.shape == proj.shape == vp.shape == (4, 4)
    np.testing.assert_allclose(vp, view @ proj, rtol=1e-5, atol=1e-6)
    # the target is straight ahead at the view distance: view space (0, 0, -distance)
    t_view = np.append(cam.target, 1.0) @ view
    np.testing.assert_allclose(t_view, [0, 0, -4, 1], atol=1e-5)
    # the eye maps to the view-space origin
    np.testing.assert_allclose(np.append(cam.eye, 1.0) @ view, [0, 0, 0, 1], atol=1e-5)


def test_eye_geometry() -> None:
    cam = OrbitCamera(target=(0, 0, 0), azimuth=0, elevation=0, distance=2)
    np.testing.assert_allclose(cam.eye, [0, 0, 2], atol=1e-12)
    np.testing.assert_allclose(cam.forward, [0, 0, -1], atol=1e-12)
    cam = OrbitCamera(azimuth=90, elevation=0, distance=2)
    np.testing.assert_allclose(cam.eye, [2, 0, 0], atol=1e-12)
    cam = OrbitCamera(azimuth=0, elevation=45, distance=2)
    assert cam.eye[1] > 0
    right, up, forward = cam.basis()
    np.testing.assert_allclose(np.cross(right, up), -forward, atol=1e-12)


@pytest.mark.parametrize("width,height", VIEWPORTS)
def test_project_then_ray_passes_through_point(width: int, height: int) -> None:
    rng = np.random.default_rng(width * 7 + height)
    for _ in range(30):
        cam = random_camera(rng)
        pts = visible_points(cam, rng, 20, width, height)
        pixels, depth = cam.project(pts, width, height)
        assert np.all((depth > -1) & (depth < 1))
        for p, (u, v) in zip(pts, pixels):
            origin, direction = cam.world_ray(u, v, width, height)
            assert abs(np.linalg.norm(direction) - 1) < 1e-12
            assert ray_point_distance(origin, direction, p) < 1e-4


@pytest.mark.parametrize("width,height", VIEWPORTS)
def test_project_matches_float32_view_projection(width: int, height: int) -> None:
    """project() agrees with what the GPU computes from view_projection()."""
    rng = np.random.default_rng(3 + width)
    cam = random_camera(rng)
    pts = visible_points(cam, rng, 50, width, height)
    clip = np.hstack([pts, np.ones((len(pts), 1))]).astype(np.float32) @ cam.view_projection(
        width / height
    )
    ndc = clip[:, :3] / clip[:, 3:]
    gpu_px = np.stack([(ndc[:, 0] + 1) / 2 * width, (1 - ndc[:, 1]) / 2 * height], axis=1)
    pixels, depth = cam.project(pts, width, height)
    np.testing.assert_allclose(pixels, gpu_px, atol=0.01)
    np.testing.assert_allclose(depth, ndc[:, 2], atol=1e-3)


def test_ray_through_pixel_projects_back_to_pixel_after_resize() -> None:
    cam = OrbitCamera(target=(0.3, -0.2, 0.1), azimuth=-35, elevation=50, distance=6)
    for width, height in [(800, 600), (1200, 500), (500, 1200)]:
        for u, v in [(0, 0), (width, height), (0.5, 0.5), (width * 0.3, height * 0.8)]:
            origin, direction = cam.world_ray(u, v, width, height)
            p = origin + 2.5 * direction
            pixels, _ = cam.project(p, width, height)
            np.testing.assert_allclose(pixels[0], [u, v], atol=1e-6)


def test_forward_point_lands_at_centre() -> None:
    rng = np.random.default_rng(1)
    for width, height in VIEWPORTS:
        cam = random_camera(rng)
        k = rng.uniform(0.1, 50)
        pixels, depth = cam.project(cam.eye + k * cam.forward, width, height)
        np.testing.assert_allclose(pixels[0], [width / 2, height / 2], atol=1e-6)
        origin, direction = cam.world_ray(width / 2, height / 2, width, height)
        np.testing.assert_allclose(direction, cam.forward, atol=1e-9)


def test_pixel_axes_top_left_origin_y_down() -> None:
    cam = OrbitCamera(azimuth=0, elevation=0, distance=5)  # looking down -z, y up
    pixels, _ = cam.project(np.array([[1.0, 1.0, 0.0]]), 800, 600)
    assert pixels[0, 0] > 400 and pixels[0, 1] < 300  # +x right, +y up on screen


def test_points_behind_camera_are_marked() -> None:
    cam = OrbitCamera(azimuth=0, elevation=0, distance=5)
    pixels, depth = cam.project(cam.eye - cam.forward * np.array([[1.0], [0.0]]), 640, 480)
    assert np.all(np.isnan(depth)) and np.all(np.isnan(pixels))


def test_orbit_changes_angles_and_keeps_distance() -> None:
    cam = OrbitCamera(target=(1, 0, -1), azimuth=10, elevation=15, distance=3)
    cam.orbit(25, 10)
    assert cam.azimuth == pytest.approx(35)
    assert cam.elevation == pytest.approx(25)
    assert np.linalg.norm(cam.eye - cam.target) == pytest.approx(3)
    np.testing.assert_allclose(cam.target, [1, 0, -1])
    cam.orbit(0, 500)
    assert cam.elevation < 89.0 + 1e-9 and cam.elevation > 80
    cam.orbit(0, -1000)
    assert -89.0 - 1e-9 < cam.elevation < -80
    # still a valid view matrix at the clamp
    assert np.all(np.isfinite(cam.view_matrix()))


@pytest.mark.parametrize("width,height", [(800, 600), (400, 900)])
def test_pan_moves_target_and_eye_together_and_follows_mouse(width: int, height: int) -> None:
    cam = OrbitCamera(target=(0.5, 1, 0), azimuth=40, elevation=30, distance=4)
    x0, y0 = 300.0, 200.0
    origin, direction = cam.world_ray(x0, y0, width, height)
    # the point under the cursor at the target's depth
    t = ((cam.target - origin) @ cam.forward) / (direction @ cam.forward)
    grabbed = origin + t * direction
    target0, eye0 = cam.target.copy(), cam.eye.copy()
    dx, dy = 37.0, -21.0
    cam.pan(dx, dy, height)
    d_target, d_eye = cam.target - target0, cam.eye - eye0
    np.testing.assert_allclose(d_target, d_eye, atol=1e-12)
    assert np.linalg.norm(d_target) > 0
    assert abs(d_target @ cam.forward) < 1e-12
    pixels, _ = cam.project(grabbed, width, height)
    np.testing.assert_allclose(pixels[0], [x0 + dx, y0 + dy], atol=1e-6)


def test_zoom_scales_distance() -> None:
    cam = OrbitCamera(target=(1, 2, 3), azimuth=20, elevation=10, distance=4)
    cam.zoom(0.5)
    assert np.linalg.norm(cam.eye - cam.target) == pytest.approx(2)
    np.testing.assert_allclose(cam.target, [1, 2, 3])
    cam.zoom(0.0)
    assert cam.distance > 0 and np.all(np.isfinite(cam.view_matrix()))


@pytest.mark.parametrize("factor", [0.5, 0.8, 1.25, 3.0])
def test_zoom_toward_point_keeps_its_projection(factor: float) -> None:
    rng = np.random.default_rng(int(factor * 100))
    width, height = 1024, 640
    for _ in range(10):
        cam = random_camera(rng)
        p = visible_points(cam, rng, 1, width, height)[0]
        before, _ = cam.project(p, width, height)
        dist_before = cam.distance
        cam.zoom(factor, toward=p)
        after, _ = cam.project(p, width, height)
        assert cam.distance == pytest.approx(dist_before * factor)
        np.testing.assert_allclose(after, before, atol=1.0)


@pytest.mark.parametrize("planar", [False, True])
@pytest.mark.parametrize("width,height", [(800, 600), (600, 800), (300, 1000)])
def test_frame_fits_all_points(planar: bool, width: int, height: int) -> None:
    rng = np.random.default_rng(5)
    pts = rng.normal(size=(500, 3)) * [3.0, 1.0, 0.5] + [10, -2, 4]
    if planar:
        pts[:, 2] = 0.0
    cam = OrbitCamera(azimuth=123, elevation=-40, distance=0.1)
    cam.frame(pts, planar=planar, aspect=width / height)
    np.testing.assert_allclose(cam.target, (pts.min(0) + pts.max(0)) / 2)
    pixels, depth = cam.project(pts, width, height)
    assert np.all((depth > -1) & (depth < 1))
    assert np.all((pixels >= 0) & (pixels <= [width, height]))
    if planar:
        np.testing.assert_allclose(cam.forward, [0, 0, -1], atol=1e-12)
        assert (cam.azimuth, cam.elevation) == (0.0, 0.0)
    else:
        assert 0 < cam.elevation < 45 and cam.azimuth != 0


def test_frame_single_point_is_finite() -> None:
    cam = OrbitCamera()
    cam.frame(np.array([[1.0, 2.0, 3.0]]))
    assert cam.distance > 0 and np.all(np.isfinite(cam.view_projection(1.0)))


def test_near_far_settable() -> None:
    cam = OrbitCamera(distance=10)
    assert 0 < cam.near < 10 < cam.far
    cam.near, cam.far = 0.5, 50.0
    assert (cam.near, cam.far) == (0.5, 50.0)
    proj = cam.projection_matrix(1.0).astype(np.float64)
    for d, ndc_z in [(0.5, -1.0), (50.0, 1.0)]:
        clip = np.array([0, 0, -d, 1.0]) @ proj
        assert clip[2] / clip[3] == pytest.approx(ndc_z, abs=1e-5)
    cam.near = cam.far = None
    assert cam.near == pytest.approx(0.1)


def test_dict_round_trip_and_cli_spec() -> None:
    cam = OrbitCamera(target=(1, -2, 0.5), azimuth=33, elevation=-12, distance=7, fov_y=60)
    copy = OrbitCamera.from_dict(cam.to_dict())
    np.testing.assert_allclose(copy.view_projection(1.3), cam.view_projection(1.3))
    spec = parse_camera_arg("30,20,5")
    assert spec == {"azimuth": 30.0, "elevation": 20.0, "distance": 5.0}
    cam.update(spec)
    assert (cam.azimuth, cam.elevation, cam.distance) == (30.0, 20.0, 5.0)
    np.testing.assert_allclose(cam.target, [1, -2, 0.5])
    assert parse_camera_arg("0,0,2,1,2,3")["target"] == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError):
        parse_camera_arg("1,2")
    with pytest.raises(ValueError):
        parse_camera_arg("a,b,c")
