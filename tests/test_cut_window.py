"""Issue 13 in the real viewer window under X (Xvfb): hold X and drag across the cloth
(xdotool, or the window's own event handlers without it): the springs the stroke
crossed on screen break, the stroke is drawn while dragging, Ctrl+Z mends them, K
switches the wind on.

Uses $DISPLAY if set; otherwise starts ``Xvfb`` itself (test_viewer_window's fixture).
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from ropesim.app.cut_tool import crossed_springs
from test_viewer_window import Driver, display  # noqa: F401  (display is a fixture)

SIZE = (1024, 640)


@pytest.fixture(scope="module")
def driver(display, tmp_path_factory):  # noqa: F811
    from ropesim.app.viewer import create_viewer

    out = tmp_path_factory.mktemp("cut-window")
    app = create_viewer(["cloth", "--window", "pyglet", "--size", f"{SIZE[0]}x{SIZE[1]}",
                         "--paused", "--no-panel", "--output-dir", str(out)])
    drv = Driver(app)
    yield drv
    if not drv.wnd.is_closing:
        drv.wnd.close()


def hold_key(driver: Driver, xdo_name: str, down: bool) -> None:
    """Press (``down``) or release a key and leave it so: through X with xdotool, else
    through the window's own handler."""
    import pyglet

    if driver.xdotool:
        subprocess.run([driver.xdotool, "keydown" if down else "keyup", "--window",
                        str(driver.window_id), xdo_name], check=True, timeout=10)
    else:
        symbol = getattr(pyglet.window.key, xdo_name.upper())
        driver.wnd._window.dispatch_event("on_key_press" if down else "on_key_release",
                                          symbol, 0)
    driver.frame(3)


def test_x_drag_in_the_window_cuts_the_crossed_springs_and_ctrl_z_mends_them(driver):
    import pyglet

    c = driver.controller
    assert c.paused and not c.sim.broken.any()
    pixels, _ = c.camera.project(c.sim.positions, *c.view_size)
    lo, hi = np.nanmin(pixels, axis=0), np.nanmax(pixels, axis=0)
    y = lo[1] + 0.5 * (hi[1] - lo[1])
    path = [driver.window_xy((lo[0] + f * (hi[0] - lo[0]), y + 20.0 * np.sin(5.0 * f)))
            for f in np.linspace(-0.1, 0.7, 9)]
    seen: dict[str, object] = {}

    def watch() -> None:
        seen["stroke"] = c.edit.cut.stroke_points()
        seen["overlay"] = len(c.overlay_lines())

    hold_key(driver, "x", True)
    try:
        driver.drag(path, on_each=watch)
    finally:
        hold_key(driver, "x", False)
    stroke = seen["stroke"]
    assert len(stroke) >= 5 and seen["overlay"] == 1      # the stroke was drawn meanwhile
    springs = c.sim.system.springs
    expected = crossed_springs(c.camera, c.view_size, c.sim.positions, springs[:, 0],
                               springs[:, 1], stroke)
    assert expected.size > 10
    assert np.array_equal(np.flatnonzero(c.sim.broken), expected)
    assert c.sim.grabbed is None and "cut" in c.message
    assert not c.edit.cut.active and c.overlay_lines() == []

    ctrl_z = "ctrl+z" if driver.xdotool else None
    if ctrl_z:
        driver.key(ctrl_z, 0, until=lambda: not c.sim.broken.any())
    else:
        driver.wnd._window.dispatch_event("on_key_press", pyglet.window.key.Z,
                                          pyglet.window.key.MOD_CTRL)
        driver.frame(2)
    assert not c.sim.broken.any() and "undo" in c.message


def test_k_in_the_window_switches_the_wind_on_and_the_arrow_appears(driver):
    import pyglet

    c = driver.controller
    assert not c.wind.on
    driver.key("k", pyglet.window.key.K, until=lambda: c.wind.on)
    assert len(c.overlay_lines()) == 2                      # the arrow's shaft and head
    driver.key("k", pyglet.window.key.K, until=lambda: not c.wind.on)
