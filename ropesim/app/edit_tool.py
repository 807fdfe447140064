"""The viewer's editing gestures: cut strokes, springs drawn between particles, pin groups
and removing particles.

:class:`EditTool` sits in front of :class:`~ropesim.app.mouse.Mouse`: the controller
offers it every press first (:meth:`EditTool.press` returns True when the press is its
own, then the mouse does not see it) and passes every drag and release to it as well.

* hold X + left-drag (or the cut tool): the stroke breaks the springs it crosses as it
  grows (:mod:`ropesim.app.cut_tool`); Ctrl+Z mends the last cut;
* Alt+drag from one particle to another: a new spring at their current distance
  (``sim.add_spring``); a rubber band follows the cursor. An Alt+click without a second
  particle stays what it was, a probe toggle (the wave tools);
* Shift+drag a rectangle: every particle drawn inside is pinned (``sim.pin_many``), or
  unpinned when all of them already were (``sim.unpin_many``). A Shift+click on a
  particle stays a pin toggle; a rectangle begun on a particle undoes that toggle;
* Delete: the hovered particle goes with its springs (``sim.remove_particle``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..engine.simulation import Simulation
from ..render.camera import OrbitCamera
from ..render.overlay import Line
from ..render.renderer import RenderOptions
from .cut_tool import TOOLS, CutTool
from .hotkeys import LEFT
from .mouse import DRAG_THRESHOLD_PX, Mouse
from .wave_tools import WaveTools

#: the overlay's colours (RGBA) and line widths (px)
STROKE_COLOUR = (1.0, 0.35, 0.3, 0.95)
STROKE_WIDTH_PX = 2.5
LINK_COLOUR = (0.5, 1.0, 0.55, 0.95)
LINK_WIDTH_PX = 2.0
BOX_COLOUR = (1.0, 0.75, 0.3, 0.9)
BOX_WIDTH_PX = 1.5


class EditHost(Protocol):
    """What the editing gestures read and change: the controller's scene and view."""

    sim: Simulation
    camera: OrbitCamera
    view_size: tuple[int, int]
    mouse: Mouse
    waves: WaveTools
    options: RenderOptions
    message: str
    ui_scale: float


@dataclass
class Gesture:
    """A held Alt+drag ("link", from ``particle``) or Shift+drag ("box"; ``particle``:
    the one the press toggled the pin of, if any)."""

    kind: str
    start: tuple[float, float]
    end: tuple[float, float]
    particle: int | None = None


def particles_in_box(camera: OrbitCamera, view_size: tuple[int, int], positions: np.ndarray,
                     corner_a: tuple[float, float], corner_b: tuple[float, float],
                     hidden: np.ndarray | None = None) -> np.ndarray:
    """Indices of the particles drawn inside the screen rectangle with corners a and b
    (framebuffer px), in front of the camera; ``hidden`` (n,) bool ones never count."""
    pixels, depth = camera.project(positions, *view_size)
    lo, hi = np.minimum(corner_a, corner_b), np.maximum(corner_a, corner_b)
    with np.errstate(invalid="ignore"):
        inside = np.all((pixels >= lo) & (pixels <= hi), axis=1) & (np.abs(depth) <= 1.0)
    if hidden is not None:
        inside &= ~hidden
    return np.flatnonzero(inside)


class EditTool:
    """The editing gestures on the host's simulation (see the module docstring)."""

    def __init__(self, host: EditHost) -> None:
        self.host = host
        self.cut = CutTool()
        self.gesture: Gesture | None = None

    def attach(self, sim: Simulation) -> None:
        """A new simulation or a reset: no gesture, nothing to undo."""
        self.cut.attach(sim)
        self.gesture = None

    @property
    def active(self) -> bool:
        """Whether a gesture of this tool is in progress."""
        return self.cut.active or self.gesture is not None

    def press(self, x: float, y: float, button: int, *, shift: bool = False,
              alt: bool = False, pluck: bool = False, cut: bool = False) -> bool:
        """A press at framebuffer pixel (x, y); ``cut``: X is held. Returns whether the
        press is this tool's alone (a cut, or a Shift+drag begun on empty space)."""
        self.gesture = None
        if button != LEFT or self.host.mouse.dragging:
            return False
        if cut or self.cut.tool == "cut":
            self.cut.begin(x, y)
            return True
        if pluck or not (shift or alt):
            return False
        particle = self.host.mouse.pick(x, y)
        if shift:
            self.gesture = Gesture("box", (x, y), (x, y), particle)
            return particle is None        # on a particle the mouse toggles its pin
        if particle is not None:           # the mouse toggles the probe
            self.gesture = Gesture("link", (x, y), (x, y), particle)
        return False

    def drag(self, x: float, y: float) -> None:
        """The cursor moved with the button held."""
        host = self.host
        if self.cut.active:
            self.cut.extend(host.sim, host.camera, host.view_size, x, y)
        elif self.gesture is not None:
            self.gesture.end = (x, y)

    def release(self, x: float, y: float, button: int) -> None:
        """The button was released: the gesture applies."""
        if button != LEFT:
            return
        if self.cut.active:
            self.drag(x, y)
            self.host.message = self.cut.finish(self.host.sim)
            return
        gesture, self.gesture = self.gesture, None
        if gesture is None:
            return
        gesture.end = (x, y)
        moved = math.dist(gesture.start, gesture.end)
        if moved < DRAG_THRESHOLD_PX * self.host.ui_scale:
            return                          # a click: the mouse's pin or probe toggle stays
        if gesture.kind == "box":
            self._pin_group(gesture)
        else:
            self._link(gesture)

    def _pin_group(self, gesture: Gesture) -> None:
        """Pin every particle drawn inside the rectangle, or unpin them all when every
        one already was pinned."""
        host, sim = self.host, self.host.sim
        if gesture.particle is not None:    # the press toggled it: a rectangle undoes that
            sim.toggle_pin(gesture.particle)
        inside = particles_in_box(host.camera, host.view_size, sim.positions, gesture.start,
                                  gesture.end, sim.removed_particles)
        if not inside.size:
            host.message = "Shift+drag: no particle inside the rectangle"
        elif sim.pinned[inside].all():
            sim.unpin_many(inside)
            host.message = f"unpinned {inside.size} particles"
        else:
            sim.pin_many(inside)
            host.message = f"pinned {inside.size} particles (Shift+drag over them unpins)"

    def _link(self, gesture: Gesture) -> None:
        """A new spring from the gesture's particle to the one under its end."""
        host, sim = self.host, self.host.sim
        start, target = gesture.particle, host.mouse.pick(*gesture.end)
        if target is None or target == start:
            host.message = "Alt+drag: end on another particle to add a spring"
            return
        host.waves.toggle_probe(sim, start)   # the press toggled a probe: a link undoes it
        try:
            k = sim.add_spring(start, target)
        except ValueError as exc:
            host.message = str(exc)
            return
        host.message = (f"spring {k} added: particles {start}-{target}, rest length "
                        f"{sim.rest_lengths[k]:.3g} m")

    def delete_hovered(self) -> None:
        """Delete: remove the hovered particle and its springs."""
        host = self.host
        particle = host.options.hovered
        if particle is None:
            host.message = "Delete: hover a particle to remove it"
            return
        removed = host.sim.remove_particle(particle)
        host.options.hovered = None
        host.message = f"particle {particle} removed with {removed} springs"

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
        imgui.text("X+drag cut, Alt+drag spring, Shift+drag pins")

    def overlay_lines(self) -> list[Line]:
        """2-D lines to draw over the scene (px): the cut stroke, the rubber band of an
        Alt+drag, the rectangle of a Shift+drag."""
        if self.cut.active:
            points = self.cut.stroke_points()
            return [(points, STROKE_COLOUR, STROKE_WIDTH_PX)] if len(points) >= 2 else []
        gesture = self.gesture
        if gesture is None or gesture.start == gesture.end:
            return []
        if gesture.kind == "link":
            host = self.host
            pixels, _ = host.camera.project(host.sim.positions[gesture.particle][None],
                                            *host.view_size)
            band = np.array([pixels[0], gesture.end])
            return [(band, LINK_COLOUR, LINK_WIDTH_PX)] if np.isfinite(band).all() else []
        (x0, y0), (x1, y1) = gesture.start, gesture.end
        box = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]])
        return [(box, BOX_COLOUR, BOX_WIDTH_PX)]


__all__ = ["EditHost", "EditTool", "Gesture", "STROKE_COLOUR", "particles_in_box"]
