"""The viewer's editing gestures: cut strokes (X+drag, or the cut tool), Ctrl+Z.

:class:`EditTool` sits in front of :class:`~ropesim.app.mouse.Mouse`: the controller
offers it every press first (:meth:`EditTool.press` returns True when the gesture is
its own) and passes every drag and release to it as well. A cut stroke breaks the
springs it crosses as it grows (:mod:`ropesim.app.cut_tool`).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..engine.simulation import Simulation
from ..render.camera import OrbitCamera
from .cut_tool import TOOLS, CutTool
from .hotkeys import LEFT
from .mouse import Mouse

#: the overlay's colour of a cut stroke (RGBA)
STROKE_COLOUR = (1.0, 0.35, 0.3, 0.95)
STROKE_WIDTH_PX = 2.5


class EditHost(Protocol):
    """What the editing gestures read and change: the controller's scene and view."""

    sim: Simulation
    camera: OrbitCamera
    view_size: tuple[int, int]
    mouse: Mouse
    message: str


class EditTool:
    """Cut strokes and their undo, on the host's simulation (see the module docstring)."""

    def __init__(self, host: EditHost) -> None:
        self.host = host
        self.cut = CutTool()

    def attach(self, sim: Simulation) -> None:
        """A new simulation or a reset: no gesture, nothing to undo."""
        self.cut.attach(sim)

    @property
    def active(self) -> bool:
        """Whether a gesture of this tool is in progress."""
        return self.cut.active

    def press(self, x: float, y: float, button: int, *, cut: bool = False) -> bool:
        """A press at framebuffer pixel (x, y); ``cut``: X is held. Returns whether the
        press started a gesture of this tool (then the mouse ignores it)."""
        if button != LEFT or self.host.mouse.dragging:
            return False
        if cut or self.cut.tool == "cut":
            self.cut.begin(x, y)
            return True
        return False

    def drag(self, x: float, y: float) -> None:
        """The cursor moved with the button held: a cut stroke cuts as it grows."""
        host = self.host
        if self.cut.active:
            self.cut.extend(host.sim, host.camera, host.view_size, x, y)

    def release(self, x: float, y: float, button: int) -> None:
        """The button was released: a cut stroke ends (and can be undone)."""
        if button != LEFT or not self.cut.active:
            return
        self.drag(x, y)
        self.host.message = self.cut.finish()

    def undo(self) -> None:
        """Ctrl+Z: mend the springs of the last cut."""
        self.host.message = self.cut.undo(self.host.sim)

    def draw_panel_section(self, imgui: Any) -> None:
        """The panel's tool selector, the undo button and the broken-spring count
        (``imgui`` is imgui_bundle's module)."""
        changed, index = imgui.combo("left-drag tool", TOOLS.index(self.cut.tool), list(TOOLS))
        if changed:
            self.cut.set_tool(TOOLS[index])
        imgui.text(f"{int(np.count_nonzero(self.host.sim.broken))} springs broken")
        imgui.same_line()
        if imgui.small_button(f"undo cut ({self.cut.undo_depth})"):
            self.undo()
        imgui.text("hold X + drag: cut; Ctrl+Z: undo")

    def overlay_lines(self) -> list[tuple[np.ndarray, tuple[float, ...], float]]:
        """2-D lines to draw over the scene: (points (k, 2) px, RGBA, width px)."""
        lines = []
        if self.cut.active and len(self.cut.stroke) >= 2:
            lines.append((self.cut.stroke_points(), STROKE_COLOUR, STROKE_WIDTH_PX))
        return lines


__all__ = ["EditHost", "EditTool", "STROKE_COLOUR"]
