"""The real viewer window under X (Xvfb): bound 3.x handlers, keys and mouse drags sent
through X (xdotool) or the window's own event handlers, exact picking after a resize,
the panel capturing the mouse, a lit cloth on screen, and a clean close.

Uses $DISPLAY if set; otherwise starts ``Xvfb`` itself (skips only without the binary).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SIZE = (1024, 640)


def _start_xvfb() -> tuple[subprocess.Popen, str]:
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("no display and no Xvfb binary (apt install xvfb)")
    for number in range(90, 140):
        if Path(f"/tmp/.X11-unix/X{number}").exists() or Path(f"/tmp/.X{number}-lock").exists():
            continue
        proc = subprocess.Popen([xvfb, f":{number}", "-screen", "0", "1280x800x24",
                                 "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if Path(f"/tmp/.X11-unix/X{number}").exists():
                return proc, f":{number}"
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        proc.kill()
    pytest.skip("could not start Xvfb")


def run_window_script(script: str) -> dict:
    """Run ``script`` (a window test written as a program: it prints one JSON line last)
    in a fresh Python process on the current display; returns that line's dict."""
    import json

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def display():
    """A DISPLAY for this module: the current one or a fresh Xvfb."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    proc, name = _start_xvfb()
    os.environ["DISPLAY"] = name
    try:
        yield name
    finally:
        del os.environ["DISPLAY"]
        proc.terminate()
        proc.wait(timeout=10)


class Driver:
    """Runs frames of a RopesimViewer and sends it input: through X with xdotool when
    available, else by dispatching pyglet events to the window's own handlers."""

    def __init__(self, app) -> None:
        self.app = app
        self.wnd = app.wnd
        self.controller = app.controller
        self.xdotool = shutil.which("xdotool")
        self.frame(3)
        if self.xdotool:
            self._xdo("windowfocus", "--sync", str(self.window_id))

    @property
    def window_id(self) -> int:
        return self.wnd._window._window

    def frame(self, count: int = 1) -> None:
        for _ in range(count):   # as moderngl_window.run_window_config_instance does
            if self.wnd.is_closing:
                return
            self.wnd.use()
            self.wnd.render(0.0, 1.0 / 60.0)
            if not self.wnd.is_closing:
                self.wnd.swap_buffers()   # also dispatches pending window events

    def _xdo(self, *args: str) -> None:
        subprocess.run([self.xdotool, *args], check=True, timeout=10)
        time.sleep(0.05)
        self.frame(2)

    def until(self, condition, timeout: float = 5.0) -> bool:
        """Run frames until condition() holds (X events may take a few frames)."""
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end or self.wnd.is_closing:
                return bool(condition())
            self.frame(1)
            time.sleep(0.01)
        return True

    def key(self, xdo_name: str, pyglet_symbol: int, until=None) -> None:
        """Press and release a key; then run frames until ``until()`` if given."""
        if self.xdotool:
            self._xdo("key", "--window", str(self.window_id), xdo_name)
        else:
            self.wnd._window.dispatch_event("on_key_press", pyglet_symbol, 0)
            self.wnd._window.dispatch_event("on_key_release", pyglet_symbol, 0)
            self.frame(2)
        if until is not None:
            assert self.until(until), f"key {xdo_name}: the state did not change"

    def window_xy(self, pixel: tuple[float, float]) -> tuple[int, int]:
        """Framebuffer pixel -> X11 window coordinates (top-left origin)."""
        scale = self.wnd.buffer_size[0] / self.wnd.size[0]
        return int(pixel[0] / scale), int(pixel[1] / scale)

    def move(self, xy: tuple[int, int], until=None) -> None:
        x, y = xy
        if self.xdotool:
            self._xdo("mousemove", "--window", str(self.window_id), str(x), str(y))
        else:
            self.wnd._window.dispatch_event("on_mouse_motion", x, self.wnd.height - 1 - y, 0, 0)
            self.frame(2)
        if until is not None:
            assert self.until(until), f"mouse move to {xy}: the state did not change"

    def drag(self, path: list[tuple[int, int]], on_each=None) -> None:
        """Press the left button at path[0], move through path, release at the end."""
        import pyglet

        left = pyglet.window.mouse.LEFT
        height = self.wnd.height
        self.move(path[0])
        if self.xdotool:
            self._xdo("mousedown", "1")   # XTEST at the pointer (--window would send a synthetic event)
        else:
            x, y = path[0]
            self.wnd._window.dispatch_event("on_mouse_press", x, height - 1 - y, left, 0)
            self.frame(1)
        for x, y in path[1:]:
            if self.xdotool:
                self._xdo("mousemove", "--window", str(self.window_id), str(x), str(y))
            else:
                self.wnd._window.dispatch_event("on_mouse_drag", x, height - 1 - y, 0, 0, left, 0)
                self.frame(1)
            if on_each is not None:
                on_each()
        if self.xdotool:
            self._xdo("mouseup", "1")
        else:
            x, y = path[-1]
            self.wnd._window.dispatch_event("on_mouse_release", x, height - 1 - y, left, 0)
            self.frame(2)


@pytest.fixture(scope="module")
def driver(display, tmp_path_factory):
    from ropesim.app.viewer import create_viewer

    out = tmp_path_factory.mktemp("viewer-output")
    app = create_viewer(["cloth", "--window", "pyglet", "--size", f"{SIZE[0]}x{SIZE[1]}",
                         "--output-dir", str(out)])
    drv = Driver(app)
    yield drv
    if not drv.wnd.is_closing:
        drv.wnd.close()


def particle_pixel(controller, i: int) -> tuple[float, float]:
    pixels, _ = controller.camera.project(controller.sim.positions[i:i + 1],
                                          *controller.view_size)
    return float(pixels[0, 0]), float(pixels[0, 1])


def clearly_pickable_particle(controller) -> int:
    """A free particle near the middle of the view that picking finds at its own pixel
    and at every pixel around it (so whole-pixel window coordinates still hit it)."""
    return clearly_pickable_particle_at(controller, np.array(controller.view_size) / 2)


def clearly_pickable_particle_at(controller, centre) -> int:
    """As clearly_pickable_particle, the nearest such particle to pixel ``centre``."""
    c = controller
    centre = np.asarray(centre, dtype=float)
    free = np.flatnonzero(~c.sim.pinned)
    for j in sorted(free, key=lambda j: np.linalg.norm(np.array(particle_pixel(c, j)) - centre)):
        u, v = particle_pixel(c, j)
        if all(c.pick(u + du, v + dv) == j for du in (-1.5, 0, 1.5) for dv in (-1.5, 0, 1.5)):
            return int(j)
    raise AssertionError("no particle is clearly pickable in this view")


def test_handlers_are_bound_under_their_3x_names(driver):
    app, wnd = driver.app, driver.wnd
    bound = {
        "render_func": "on_render", "resize_func": "on_resize", "close_func": "on_close",
        "key_event_func": "on_key_event", "unicode_char_entered_func": "on_unicode_char_entered",
        "mouse_position_event_func": "on_mouse_position_event",
        "mouse_press_event_func": "on_mouse_press_event",
        "mouse_release_event_func": "on_mouse_release_event",
        "mouse_drag_event_func": "on_mouse_drag_event",
        "mouse_scroll_event_func": "on_mouse_scroll_event",
    }
    for slot, method in bound.items():
        assert getattr(wnd, slot) == getattr(app, method), slot
    for old_name in ("render", "resize", "key_event", "mouse_press_event", "mouse_drag_event"):
        assert not hasattr(app, old_name), old_name   # 2.x names would be silently ignored
    assert wnd.fixed_aspect_ratio is None


def test_the_screen_shows_a_lit_cloth(driver):
    driver.frame(10)
    c = driver.controller
    w, h = driver.wnd.buffer_size
    pixels = np.frombuffer(driver.app.ctx.screen.read(components=3), np.uint8).reshape(h, w, 3)
    pixels = pixels[::-1]
    x, y = particle_pixel(c, c.sim.n_particles // 2 + 12)   # the middle of the cloth
    patch = pixels[int(y) - 6:int(y) + 6, int(x) - 6:int(x) + 6].reshape(-1, 3).astype(int)
    red, green, blue = patch.mean(axis=0)
    assert red > green + 30 and red > blue + 30, (red, green, blue)   # the orange cloth front
    background = np.array(pixels[h // 2, 3], dtype=int)
    assert abs(red - background[0]) > 60


def test_space_and_i_keys_through_the_window(driver):
    import pyglet

    c = driver.controller
    key = pyglet.window.key
    integrator = c.sim.integrator
    driver.key("space", key.SPACE, until=lambda: c.paused)
    time_paused = c.sim.time
    driver.frame(3)
    assert c.sim.time == time_paused
    driver.key("period", key.PERIOD, until=lambda: c.sim.time > time_paused)
    assert c.sim.time == pytest.approx(time_paused + c.sim.dt)
    driver.key("i", key.I, until=lambda: c.sim.integrator != integrator)
    driver.key("space", key.SPACE, until=lambda: not c.paused)
    driver.frame(5)
    driver.key("r", key.R, until=lambda: c.sim.time < 0.05)


def test_a_new_integrator_says_compiling_kernels_before_its_first_step(driver):
    import pyglet

    c = driver.controller
    seen = []
    warm_up = c.warm_up

    def spy() -> None:   # what the window showed when the (possibly long) first step began
        seen.append((driver.wnd.title, c.sim.step_count))
        warm_up()

    c.warm_up = spy
    try:
        integrator = c.sim.integrator
        driver.key("i", pyglet.window.key.I, until=lambda: c.sim.integrator != integrator)
        driver.until(lambda: seen)
    finally:
        del c.warm_up
    assert seen and "compiling kernels" in seen[0][0]
    assert driver.until(lambda: "compiling" not in driver.wnd.title) and not c.needs_warm_up
    c.set_integrator(integrator)   # as the other tests expect it
    c.reset()


def test_panel_keeps_the_mouse_it_is_over(driver):
    c = driver.controller
    assert c.show_ui
    azimuth = c.camera.azimuth
    driver.drag([(60, 60), (120, 80), (200, 90)])   # on the panel: no orbit
    assert c.camera.azimuth == azimuth
    assert driver.app.imgui.io.want_capture_mouse


def test_a_particle_under_the_hotkey_overlay_can_be_hovered(driver):
    """The overlay is translucent and lets the mouse through to the scene."""
    from ropesim.app.layout import HELP_WIDTH, MARGIN

    c = driver.controller
    assert c.ui_layout.help_shown
    c.reset()
    driver.frame(90)   # the cloth swings down and faces the camera
    driver.key("space", __import__("pyglet").window.key.SPACE, until=lambda: c.paused)
    scale = driver.wnd.buffer_size[0] / driver.wnd.size[0]
    width = c.view_size[0]
    # move the view so that a particle sits in the middle of the overlay
    i = clearly_pickable_particle(c)
    overlay = ((width - (MARGIN + HELP_WIDTH / 2) * scale), 120 * scale)
    u, v = particle_pixel(c, i)
    c.camera.pan(overlay[0] - u, overlay[1] - v, c.view_size[1])
    driver.frame(2)
    u, v = particle_pixel(c, i)
    assert u > width - (MARGIN + HELP_WIDTH) * scale      # under the overlay
    j = clearly_pickable_particle_at(c, (u, v))
    driver.move(driver.window_xy(particle_pixel(c, j)), until=lambda: c.hovered == j)
    assert not driver.app.imgui.io.want_capture_mouse
    driver.move((5, driver.wnd.size[1] - 5))
    c.reset_camera(use_hints=True)
    driver.key("space", __import__("pyglet").window.key.SPACE, until=lambda: not c.paused)


def test_mouse_drag_moves_a_cloth_particle_and_flings_it(driver):
    import pyglet

    c = driver.controller
    driver.key("h", pyglet.window.key.H, until=lambda: not c.show_ui)   # hide the panel
    driver.key("r", pyglet.window.key.R, until=lambda: c.sim.time < 0.05)
    # gravity off: the level cloth keeps still, so the particle stays under the cursor
    driver.key("g", pyglet.window.key.G, until=lambda: not c.gravity_on)
    c.camera.elevation = 70.0  # look down on the level cloth so its particles are spread out
    driver.frame(2)
    i = clearly_pickable_particle(c)
    start = c.sim.positions[i].copy()
    x, y = driver.window_xy(particle_pixel(c, i))
    grabbed = []
    driver.drag([(x, y)] + [(x + 12 * k, y - 6 * k) for k in range(1, 8)],
                on_each=lambda: grabbed.append(c.sim.grabbed))
    assert grabbed.count(i) >= len(grabbed) - 2    # held from (about) the first move on
    assert driver.until(lambda: c.sim.grabbed is None)
    moved = c.sim.positions[i] - start
    assert np.linalg.norm(moved) > 0.05
    right, up, _ = c.camera.basis()
    assert moved @ right > 0 and moved @ up > 0    # it followed the cursor right and up
    assert np.linalg.norm(c.sim.velocities[i]) > 0.1  # released with the drag's velocity
    driver.key("g", pyglet.window.key.G, until=lambda: c.gravity_on)
    driver.key("f", pyglet.window.key.F, until=lambda: c.camera.elevation < 70.0)
    driver.key("h", pyglet.window.key.H, until=lambda: c.show_ui)


def test_picking_is_exact_after_a_resize(driver):
    c = driver.controller
    driver.wnd.size = (820, 700)
    for _ in range(20):
        driver.frame(1)
        if driver.wnd.buffer_size == (820, 700):
            break
    assert driver.wnd.buffer_size == (820, 700) and c.view_size == (820, 700)
    space = __import__("pyglet").window.key.SPACE
    driver.key("space", space, until=lambda: c.paused)   # hold the cloth still
    i = clearly_pickable_particle(c)
    xy = driver.window_xy(particle_pixel(c, i))
    driver.move(xy, until=lambda: c.hovered == i)
    driver.key("space", space, until=lambda: not c.paused)


def test_divergence_pauses_and_titles_the_window(driver):
    c = driver.controller
    c.set_integrator("explicit_euler")
    c.set_parameter("dt", 0.02)
    for _ in range(100):
        driver.frame(1)
        if c.error:
            break
    assert c.paused and "diverged" in driver.wnd.title and "R reset" in driver.wnd.title
    assert not driver.wnd.is_closing
    import pyglet

    driver.key("r", pyglet.window.key.R, until=lambda: c.error is None)
    c.set_parameter("dt", 0.001)
    c.set_integrator("symplectic_euler")
    driver.frame(1)
    assert "diverged" not in driver.wnd.title


def test_p_key_saves_a_fixed_size_screenshot(driver):
    import pyglet
    from PIL import Image

    c = driver.controller
    driver.key("p", pyglet.window.key.P, until=lambda: "screenshot" in c.message)
    path = Path(driver.controller.message.split(": ", 1)[1])
    assert path.suffix == ".png" and path.is_file()
    with Image.open(path) as image:
        assert image.size == (1280, 720)


def _focused_window() -> int:
    found = subprocess.run(["xdotool", "getwindowfocus"], capture_output=True, text=True,
                           timeout=10)
    return int(found.stdout.strip() or 0)


def test_f11_keeps_the_keyboard_focus(driver):
    """F11 into fullscreen and back (pyglet re-creates its X window each time): the new
    window has the keyboard focus, so a hotkey typed to whatever window has the focus
    (xdotool key without --window, as a user types) still reaches the viewer."""
    import pyglet

    if not driver.xdotool:
        pytest.skip("needs xdotool to type to the focused window")
    c = driver.controller
    for fullscreen in (True, False):
        driver.key("F11", pyglet.window.key.F11,
                   until=lambda: bool(driver.wnd.fullscreen) == fullscreen)
        assert driver.until(lambda: _focused_window() == driver.window_id), (
            f"fullscreen={fullscreen}: the focus is on {_focused_window()}, "
            f"not the viewer's window {driver.window_id}")
        axes = c.options.show_axes
        subprocess.run(["xdotool", "key", "a"], check=True, timeout=10)
        assert driver.until(lambda: c.options.show_axes != axes), (
            f"fullscreen={fullscreen}: the A key typed after F11 did not reach the viewer")
    assert not driver.wnd.fullscreen


def test_escape_closes_the_window_cleanly(driver):
    import pyglet

    driver.key("Escape", pyglet.window.key.ESCAPE, until=lambda: driver.wnd.is_closing)


def _start_viewer(argv: list[str]) -> subprocess.Popen:
    """``ropesim view ARGV`` as a separate process (its own event loop and clock)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from ropesim.app.viewer import main; "
         f"sys.exit(main({argv!r}))"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _windows_named(name: str) -> list[str]:
    found = subprocess.run(["xdotool", "search", "--name", name], capture_output=True, text=True)
    return found.stdout.split()


def _find_window(proc: subprocess.Popen, name: str, other: Sequence[str] = ()) -> str:
    """The X window id of the process's window titled ``name...``, not one of ``other``
    (the windows of that name from before it started); waits up to 30 s."""
    window = ""
    for _ in range(300):
        new = [w for w in _windows_named(name) if w not in other]
        window = new[0] if new else ""
        if window or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert window, proc.stderr.read() if proc.poll() is not None else "no window"
    return window


def test_ropesim_view_runs_and_quits_with_escape(display):
    """The whole program: open, receive Esc through X, exit 0 without output on stderr."""
    if shutil.which("xdotool") is None:
        pytest.skip("needs xdotool to send Esc to a separate process")
    proc = _start_viewer(['rope', '--size', '640x400'])
    try:
        window = _find_window(proc, "ropesim - rope")
        time.sleep(0.5)
        subprocess.run(["xdotool", "windowfocus", "--sync", window], check=True, timeout=10)
        subprocess.run(["xdotool", "key", "--window", window, "Escape"], check=True, timeout=10)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def _window_title(window: str) -> str:
    found = subprocess.run(["xdotool", "getwindowname", window], capture_output=True, text=True,
                           timeout=10)
    return found.stdout.strip()


def test_the_default_cloth_runs_in_real_time_as_the_title_says(display):
    """The real program and its real clock: after a few seconds of warm-up the title's
    real-time factor (simulated s per real s over the last second) is >= 0.95."""
    import re

    if shutil.which("xdotool") is None:
        pytest.skip("needs xdotool to read another process's window title")
    pattern = re.compile(r"ropesim - cloth - t ([\d.]+) s - (\d+) fps - ([\d.]+)x real time")
    other = _windows_named("ropesim - cloth")   # this module's own window, say
    proc = _start_viewer(['--size', '1024x640'])
    try:
        window = _find_window(proc, "ropesim - cloth", other)
        factors, times = [], []
        deadline = time.monotonic() + 60
        while len(factors) < 3 and time.monotonic() < deadline:
            time.sleep(1.0)
            match = pattern.fullmatch(_window_title(window))
            if match and float(match[1]) >= 4.0:   # past the warm-up
                times.append(float(match[1]))
                factors.append(float(match[3]))
        subprocess.run(["xdotool", "windowfocus", "--sync", window], timeout=10)
        subprocess.run(["xdotool", "key", "--window", window, "Escape"], timeout=10)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(factors) == 3, f"titles never showed the factor: {_window_title(window)!r}"
    assert times == sorted(times) and times[-1] > times[0]   # the simulation moves on
    assert min(factors) >= 0.95, factors


def _run_viewer_subprocess(extra_env: dict[str, str], argv: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-c", f"import sys; from ropesim.app.viewer import main; sys.exit(main({argv!r}))"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )


def test_without_opengl_33_is_a_one_line_error(display):
    import moderngl

    ctx = moderngl.create_standalone_context()
    mesa = "mesa" in ctx.info["GL_VERSION"].lower()
    ctx.release()
    if not mesa:
        pytest.skip("MESA_GL_VERSION_OVERRIDE needs a Mesa driver")
    result = _run_viewer_subprocess({"MESA_GL_VERSION_OVERRIDE": "3.0"}, ["cloth"])
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1, result.stderr
    assert "OpenGL 3.3" in result.stderr and "Traceback" not in result.stderr


def test_unreachable_display_is_a_one_line_error(display):
    result = _run_viewer_subprocess({"DISPLAY": ":1999"}, ["cloth"])
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1, result.stderr
    assert "no display" in result.stderr and "ropesim render" in result.stderr
