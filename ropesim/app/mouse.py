"""The viewer's mouse state machine: hover, grab / drag / fling, pin, orbit, pan, zoom.

:class:`Mouse` reads and changes the scene through a :class:`MouseHost` (the
controller): its simulation, camera, view size and pause state. Positions are
framebuffer pixels with a top-left origin (y down), the convention of camera.py and
picking.py.

Fling: the release velocity is the grabbed particle's speed in the simulated world,
the grab target's displacement per simulated second over the last FLING_SAMPLES
frames. (Sampled per frame, not per mouse event: window systems hand over a frame's
events in one batch. Simulated, not wall time: the particle then flies on as fast as
it was moving, even when a slow machine runs the simulation slower than real time;
dragging while paused flings nothing.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from ..engine.simulation import Simulation
from ..render.camera import OrbitCamera
from ..render.picking import FlingTracker, drag_plane, intersect_plane, pick_particle_screen
from ..render.renderer import RenderOptions
from .collider_drag import ColliderDrag
from .hotkeys import LEFT, MIDDLE, RIGHT
from .wave_tools import WaveTools

ORBIT_DEG_PER_PX = 0.3       # camera orbit per dragged pixel
ZOOM_PER_WHEEL_STEP = 0.88   # distance factor per wheel notch (towards the cursor)
PICK_RADIUS_PX = 10.0        # cursor distance to a particle's centre that still picks it
DRAG_THRESHOLD_PX = 4.0      # cursor travel before a press on empty space orbits or pans
FLING_SAMPLES = 5            # frames of drag samples the release velocity is fitted to
FLING_HOLD = 0.1             # s without cursor motion (at least 1.5 frames) = no fling


class MouseHost(Protocol):
    """What the mouse reads and changes: the controller's scene and view."""

    sim: Simulation
    camera: OrbitCamera
    view_size: tuple[int, int]
    options: RenderOptions
    paused: bool
    message: str
    clock: Callable[[], float]
    waves: WaveTools
    ui_scale: float                 # framebuffer px per window px

    @property
    def frame_interval(self) -> float: ...


@dataclass
class Interaction:
    """What the held mouse button is doing: grabbing a particle, orbiting or panning."""

    kind: str                      # "grab", "orbit", "pan" or "collider" (Ctrl+drag)
    button: int
    last_xy: tuple[float, float]
    particle: int | None = None
    plane_point: np.ndarray | None = None
    plane_normal: np.ndarray | None = None
    last_point: np.ndarray | None = None     # latest grab target, m
    last_move_time: float = 0.0              # s (host clock) of the last target change
    moved_since_sample: bool = False
    started: bool = True                     # orbit / pan: the cursor passed the threshold


def default_particle_radius(sim: Simulation) -> float:
    """Picking sphere radius, m: a fifth of the short springs' rest length (the
    renderer's default sprite size; the window replaces it with the renderer's value)."""
    rest = np.asarray(sim.rest_lengths)
    rest = rest[rest > 0]
    return 0.2 * float(np.percentile(rest, 10)) if rest.size else 0.01


class Mouse:
    """Hover, grab / drag / fling, shift-click pins, orbit, pan and wheel zoom.

    ``particle_radius`` (m) is the picking sphere, ``pick_radius_px`` the screen
    distance that still picks a particle; ``interaction`` is what the held button
    does (None without one); ``xy`` the last cursor position (None: outside).
    """

    def __init__(self, host: MouseHost) -> None:
        self.host = host
        self.pick_radius_px = PICK_RADIUS_PX
        self.particle_radius = 0.01
        self.xy: tuple[float, float] | None = None
        self.interaction: Interaction | None = None
        self._tracker = FlingTracker(window=math.inf, max_samples=FLING_SAMPLES)
        self.collider_drag = ColliderDrag(host)

    def attach(self, sim: Simulation) -> None:
        """A new simulation: nothing held, nothing hovered, the default picking radius."""
        self.interaction = None
        self.host.options.hovered = None
        self.particle_radius = default_particle_radius(sim)

    def _ray(self, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
        return self.host.camera.world_ray(x, y, *self.host.view_size)

    def pick(self, x: float, y: float) -> int | None:
        """Particle under framebuffer pixel (x, y): the nearest one to the camera whose
        sphere the cursor ray hits; else the one drawn closest to the cursor within
        ``pick_radius_px``; else None."""
        camera, view_size = self.host.camera, self.host.view_size
        positions = self.host.sim.positions
        removed = self.host.sim.removed_particles      # issue 13: deleted ones are hidden
        hit = pick_particle_screen(camera, x, y, *view_size, positions,
                                   radius_px=0.0, radius_world=self.particle_radius,
                                   mask=~removed if removed.any() else None)
        if hit is not None:
            return hit
        pixels, depth = camera.project(positions, *view_size)
        with np.errstate(invalid="ignore"):
            distance_sq = ((pixels - np.array([x, y])) ** 2).sum(axis=1)
            distance_sq[~((depth >= -1.0) & (depth <= 1.0)) | removed] = np.inf
        if distance_sq.size == 0:
            return None
        best = int(np.argmin(distance_sq))
        return best if distance_sq[best] <= self.pick_radius_px ** 2 else None

    @property
    def dragging(self) -> bool:
        return self.interaction is not None

    def refresh_hover(self) -> None:
        """Re-pick under the last mouse position (the scene moves under a still cursor)."""
        options = self.host.options
        if self.interaction is not None and self.interaction.kind == "grab":
            options.hovered = self.interaction.particle
        elif self.xy is None:
            options.hovered = None
        else:
            options.hovered = self.pick(*self.xy)

    def leave(self) -> None:
        """The cursor is over the panel or left the window: nothing is hovered."""
        self.xy = None
        if self.interaction is None:
            self.host.options.hovered = None

    def move(self, x: float, y: float) -> None:
        """Cursor moved with no button held."""
        self.xy = (x, y)
        self.refresh_hover()

    def press(self, x: float, y: float, button: int, shift: bool = False, *,
              alt: bool = False, pluck: bool = False, ctrl: bool = False) -> None:
        """Mouse button pressed at framebuffer pixel (x, y); with ``pluck`` (Q held) a
        left press plucks, with ``alt`` it toggles a probe (neither grabs nor orbits);
        with ``ctrl`` a left press on a collider drags it (app/collider_drag.py)."""
        host, sim = self.host, self.host.sim
        self.xy = (x, y)
        if self.interaction is not None:
            return
        if ctrl and button == LEFT and self.collider_drag.start(x, y):
            self.interaction = Interaction("collider", button, (x, y))
            return
        particle = self.pick(x, y) if button == LEFT else None
        if button == LEFT and (pluck or alt):   # wave tools (issue 16)
            waves = host.waves
            host.message = (waves.pluck_at(sim, particle, host.camera) if pluck
                            else waves.toggle_probe(sim, particle))
            return
        if particle is not None and shift:
            pinned = sim.toggle_pin(particle)
            host.message = f"particle {particle} {'pinned' if pinned else 'unpinned'}"
            return
        if particle is not None:
            point = np.array(sim.positions[particle], dtype=np.float64)
            plane_point, normal = drag_plane(host.camera, point, sim.planar)
            self.interaction = Interaction("grab", button, (x, y), particle, plane_point,
                                           normal, point, host.clock())
            sim.grab(particle, point)
            self._tracker.reset()
            host.options.hovered = particle
        elif button == LEFT:
            self.interaction = Interaction("orbit", button, (x, y), started=False)
        elif button in (RIGHT, MIDDLE):
            self.interaction = Interaction("pan", button, (x, y), started=False)

    def drag(self, x: float, y: float) -> None:
        """Cursor moved with a button held."""
        host = self.host
        self.xy = (x, y)
        act = self.interaction
        if act is None:
            return
        dx, dy = x - act.last_xy[0], y - act.last_xy[1]
        if not act.started:   # a press that just missed a particle does not turn the view
            if math.hypot(dx, dy) < DRAG_THRESHOLD_PX * host.ui_scale:
                return
            act.started = True   # from here on the view follows the cursor from the press
        act.last_xy = (x, y)
        if act.kind == "orbit":
            host.camera.orbit(-dx * ORBIT_DEG_PER_PX, dy * ORBIT_DEG_PER_PX)
        elif act.kind == "pan":
            host.camera.pan(dx, dy, host.view_size[1])
        elif act.kind == "collider":
            self.collider_drag.follow(x, y)
        else:
            origin, direction = self._ray(x, y)
            point = intersect_plane(origin, direction, act.plane_point, act.plane_normal)
            if point is None:
                return
            host.sim.grab(act.particle, point)
            if host.paused:   # no steps to carry it there: pose it directly
                host.sim.positions[act.particle] = point
            act.last_point, act.last_move_time = point, host.clock()
            act.moved_since_sample = True

    def release(self, x: float, y: float, button: int) -> None:
        """Mouse button released: a grabbed particle is let go with the velocity of the
        last drag samples (none if the cursor stood still); a pinned one stays put."""
        act = self.interaction
        if act is None or act.button != button:
            return
        if act.kind == "grab" and (x, y) != act.last_xy:
            self.drag(x, y)
        self.let_go()
        self.move(x, y)

    def let_go(self) -> None:
        """End the current interaction (a grabbed particle is released, see :meth:`release`)."""
        act, self.interaction = self.interaction, None
        self.collider_drag.stop()
        if act is None or act.kind != "grab":
            return
        sim, i = self.host.sim, act.particle
        if sim.pinned[i]:
            sim.positions[i] = act.last_point
            sim.release()
            return
        if act.moved_since_sample:   # the events since the last frame's steps
            self._tracker.add(sim.time, act.last_point)
        hold = max(FLING_HOLD, 1.5 * self.host.frame_interval)
        still = self.host.clock() - act.last_move_time > hold
        velocity = np.zeros(3) if still else self._tracker.velocity()
        sim.release(velocity=velocity)

    def sample_fling(self) -> None:
        """Record the grab target once per frame, against simulation time."""
        act = self.interaction
        if act is None or act.kind != "grab":
            return
        self._tracker.add(self.host.sim.time, act.last_point)
        act.moved_since_sample = False

    def scroll(self, steps: float) -> None:
        """Mouse wheel: zoom toward the point under the cursor (else the target)."""
        if steps == 0:
            return
        camera = self.host.camera
        toward = None
        if self.xy is not None:
            hovered = self.pick(*self.xy)
            if hovered is not None:
                toward = np.array(self.host.sim.positions[hovered], dtype=np.float64)
            else:
                origin, direction = self._ray(*self.xy)
                toward = intersect_plane(origin, direction, camera.target, camera.forward)
        camera.zoom(ZOOM_PER_WHEEL_STEP ** float(steps), toward=toward)


__all__ = ["DRAG_THRESHOLD_PX", "Interaction", "Mouse", "MouseHost", "PICK_RADIUS_PX",
           "default_particle_radius"]
