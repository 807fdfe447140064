"""Issue 13 in the real viewer window under X (Xvfb): hold X and drag across the cloth
(xdotool, or the window's own pyglet handlers without it): the springs the stroke
crossed on screen break, the stroke is drawn while dragging, Ctrl+Z mends them, K
switches the wind and its arrow on.

Runs the viewer in a subprocess, as test_wave_tools_window does: this module is
collected after tests that make an EGL context current, after which a pyglet GLX window
cannot be opened in the same process (see conftest.py).
"""

from __future__ import annotations

from test_viewer_window import display, run_window_script  # noqa: F401  (the Xvfb fixture)

SCRIPT = r"""
import json, subprocess, sys
sys.path.insert(0, "tests")
import numpy as np
import pyglet
from test_viewer_window import Driver
from ropesim.app.cut_tool import crossed_springs
from ropesim.app.viewer import create_viewer

app = create_viewer(["cloth", "--window", "pyglet", "--size", "1024x640", "--paused",
                     "--no-panel"])
d = Driver(app)
c, window = d.controller, d.wnd._window
key = pyglet.window.key


def hold(name, down):
    if d.xdotool:
        subprocess.run([d.xdotool, "keydown" if down else "keyup", "--window", str(d.window_id),
                        name], check=True, timeout=10)
    else:
        window.dispatch_event("on_key_press" if down else "on_key_release",
                              getattr(key, name.upper()), 0)
    d.frame(3)


result = {"xdotool": bool(d.xdotool), "paused": c.paused, "broken_before": int(c.sim.broken.sum())}
pixels, _ = c.camera.project(c.sim.positions, *c.view_size)
lo, hi = np.nanmin(pixels, axis=0), np.nanmax(pixels, axis=0)
y = lo[1] + 0.5 * (hi[1] - lo[1])
path = [d.window_xy((lo[0] + f * (hi[0] - lo[0]), y + 20.0 * np.sin(5.0 * f)))
        for f in np.linspace(-0.1, 0.7, 9)]
seen = {}


def watch():
    seen["stroke"] = c.edit.cut.stroke_points()
    seen["overlay"] = len(c.overlay_lines())


hold("x", True)
d.drag(path, on_each=watch)
hold("x", False)
springs = c.sim.springs
expected = crossed_springs(c.camera, c.view_size, c.sim.positions, springs[:, 0],
                           springs[:, 1], seen["stroke"])
result.update(stroke_points=len(seen["stroke"]), overlay_while_cutting=seen["overlay"],
              expected=expected.tolist(), broken=np.flatnonzero(c.sim.broken).tolist(),
              grabbed=c.sim.grabbed, cut_message=c.message,
              overlay_after=len(c.overlay_lines()))
if d.xdotool:
    d.key("ctrl+z", 0, until=lambda: not c.sim.broken.any())
else:
    window.dispatch_event("on_key_press", key.Z, key.MOD_CTRL)
    d.frame(2)
result.update(broken_after_undo=int(c.sim.broken.sum()), undo_message=c.message)
d.key("k", key.K, until=lambda: c.wind.on)
result.update(wind_on=c.wind.on, overlay_with_wind=len(c.overlay_lines()))
d.wnd.close()
print(json.dumps(result))
"""


def test_x_drag_in_the_window_cuts_the_crossed_springs_ctrl_z_mends_k_blows(display):  # noqa: F811
    result = run_window_script(SCRIPT)
    assert result["paused"] and result["broken_before"] == 0
    assert result["stroke_points"] >= 5 and result["overlay_while_cutting"] == 1
    assert len(result["expected"]) > 10                 # the stroke crossed the cloth
    assert result["broken"] == result["expected"]       # exactly the crossed springs broke
    assert result["grabbed"] is None and "cut" in result["cut_message"]
    assert result["overlay_after"] == 0                 # the stroke is gone after release
    assert result["broken_after_undo"] == 0 and "undo" in result["undo_message"]
    assert result["wind_on"] and result["overlay_with_wind"] == 2   # the arrow: shaft, head
