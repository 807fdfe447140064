"""The wave tools in the real window (Xvfb): holding Q while clicking plucks and Alt+click
marks a probe, through the window's own pyglet event handlers.

Runs the viewer in a subprocess: this test module is collected after tests that make an
EGL context current, after which a pyglet GLX window cannot be opened in the same
process (see conftest.py).
"""

from __future__ import annotations

from test_viewer_window import display, run_window_script  # noqa: F401  (the Xvfb fixture)

SCRIPT = r"""
import json
import numpy as np
import pyglet
from ropesim.app.viewer import create_viewer

app = create_viewer(["string", "--window", "pyglet", "--size", "900x500", "--paused"])
wnd, c = app.wnd, app.controller
window = wnd._window
left, height = pyglet.window.mouse.LEFT, wnd.height

def frame(count=2):
    for _ in range(count):
        wnd.use(); wnd.render(0.0, 1.0 / 60.0); wnd.swap_buffers()

def click(i, modifiers=0):
    pixels, _ = c.camera.project(c.sim.positions[i:i + 1], *c.view_size)
    scale = wnd.buffer_size[0] / wnd.size[0]
    x, y = int(pixels[0, 0] / scale), height - 1 - int(pixels[0, 1] / scale)
    window.dispatch_event("on_mouse_motion", x, y, 0, 0); frame()
    window.dispatch_event("on_mouse_press", x, y, left, modifiers); frame(1)
    held = c.dragging or c.sim.grabbed is not None
    window.dispatch_event("on_mouse_release", x, y, left, modifiers); frame()
    return held

frame(3)
result = {}
result["alt_held"] = click(70, pyglet.window.key.MOD_ALT)
result["probes"] = c.waves.probes
before = c.sim.momentum().copy()
window.dispatch_event("on_key_press", pyglet.window.key.Q, 0); frame()
result["q_held"] = click(40)
window.dispatch_event("on_key_release", pyglet.window.key.Q, 0); frame()
result["momentum_change"] = (c.sim.momentum() - before).tolist()
result["up"] = c.camera.basis()[1].tolist()
result["strength"] = c.waves.strength
result["source"] = c.waves.source
result["plain_held"] = click(50)      # Q released: a plain click grabs again
wnd.close()
print(json.dumps(result))
"""


def test_q_held_click_plucks_and_alt_click_marks_a_probe_in_the_window(display):  # noqa: F811
    result = run_window_script(SCRIPT)
    assert result["probes"] == [70] and result["alt_held"] is False
    assert result["source"] == 40 and result["q_held"] is False
    expected = [result["strength"] * component for component in result["up"]]
    for got, want in zip(result["momentum_change"], expected):
        assert abs(got - want) < 1e-12
    assert result["plain_held"] is True
