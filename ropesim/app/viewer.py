"""The interactive viewer: a moderngl-window 3.x app on top of a window-free controller.

Two layers:

* :class:`ViewerController` owns the simulation, the camera, the render options and
  every piece of interaction logic: frame stepping (fixed dt, an accumulator, a cap
  of ``sim.substeps`` steps per frame), pause / single step, divergence handling, the
  hotkey table, the grab / drag / fling state machine, orbit / pan / zoom, panel
  parameter edits, screenshots and video recording. It needs no window and no GL,
  so it is tested directly (tests/test_viewer.py).
* :class:`RopesimViewer` is a thin ``moderngl_window.WindowConfig``: it turns window
  events into controller calls (mouse positions converted to framebuffer pixels),
  draws with :class:`ropesim.render.renderer.Renderer` and the imgui panel (panel.py).

Coordinates: mouse positions handed to the controller are framebuffer pixels with a
top-left origin (y down), the convention of camera.py and picking.py.

Entry point: :func:`main` (``ropesim``, ``ropesim view SCENE``).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..render.camera import OrbitCamera, parse_camera_arg
from ..engine.integrators import INTEGRATORS
from ..render.picking import FlingTracker, drag_plane, intersect_plane, pick_particle_screen
from ..render.renderer import WIREFRAME_MODES, RenderOptions
from ..io.scenes import DEFAULT_SCENE, Scene, SceneError, load, scene_names
from ..engine.simulation import Simulation, SimulationDiverged

# --- tunables ------------------------------------------------------------------------
MAX_SUBSTEPS = 4096          # upper limit of the "=" key (steps per frame)
MAX_FRAME_TIME = 0.25        # s; a longer frame (window dragged, debugger) counts as this
ORBIT_DEG_PER_PX = 0.3       # camera orbit per dragged pixel
ZOOM_PER_WHEEL_STEP = 0.88   # distance factor per wheel notch (towards the cursor)
PICK_RADIUS_PX = 10.0        # cursor distance to a particle's centre that still picks it
RECORD_SIZE = (1280, 720)    # px; offscreen screenshot / video size (multiples of 16)
RECORD_FPS = 30              # frames per second of recorded videos
ENERGY_HISTORY = 600         # energy samples kept for the panel's plot
STAT_SMOOTHING = 0.1         # weight of the newest frame in the ms-per-step average
FPS_WINDOW = 1.0             # s of recent frames the frame rate is averaged over
FLING_SAMPLES = 5            # frames of drag samples the release velocity is fitted to
FLING_HOLD = 0.1             # s without cursor motion (at least 1.5 frames) = no fling
PIN_PRESETS = {1: "corner", 2: "top-corners", 4: "four-corners"}  # panel "pins 1/2/4"

LEFT, RIGHT, MIDDLE = 1, 2, 3  # moderngl-window mouse button ids


# --- hotkeys ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Hotkey:
    """One line of the hotkey table: key names (see :func:`key_names`), the label the
    help overlay shows, the controller method it calls and what it does."""

    keys: tuple[str, ...]
    label: str
    action: str
    help: str


DIGITS = tuple("123456789")
HOTKEYS: tuple[Hotkey, ...] = (
    Hotkey(("space",), "Space", "toggle_pause", "pause / resume"),
    Hotkey(("right", "period"), "Right or .", "single_step", "one step while paused"),
    Hotkey(("r", "backspace"), "R or Backspace", "reset", "reset the scene"),
    Hotkey(("i",), "I", "next_integrator", "next integrator (live, no reset)"),
    Hotkey(("w",), "W", "cycle_render_mode", "draw surface / +springs / springs+particles"),
    Hotkey(("s",), "S", "toggle_strain", "strain colouring on / off"),
    Hotkey(("g",), "G", "toggle_gravity", "gravity on / off"),
    Hotkey(("equal",), "=", "more_substeps", "substeps per frame x2"),
    Hotkey(("minus",), "-", "fewer_substeps", "substeps per frame /2"),
    Hotkey(DIGITS, "1 ... 9", "select_scene_key", "shipped scenes"),
    Hotkey(("f",), "F", "frame_scene", "frame the scene (reset camera)"),
    Hotkey(("p",), "P", "screenshot", "screenshot PNG"),
    Hotkey(("v",), "V", "toggle_recording", "start / stop video recording"),
    Hotkey(("h", "f1"), "H or F1", "toggle_ui", "help overlay and panel"),
    Hotkey(("escape",), "Esc", "request_quit", "quit"),
    Hotkey(("f11",), "F11", "toggle_fullscreen", "fullscreen"),
)
#: mouse bindings, for the help overlay and docs (label, what it does)
MOUSE_HELP: tuple[tuple[str, str], ...] = (
    ("Left-drag particle", "grab, drag, release to fling"),
    ("Shift+click particle", "pin / unpin"),
    ("Left-drag empty space", "orbit"),
    ("Right- or middle-drag", "pan"),
    ("Wheel", "zoom toward the cursor"),
)
_KEY_TO_HOTKEY = {name: hotkey for hotkey in HOTKEYS for name in hotkey.keys}

_NAMED_KEYS = {
    "SPACE": "space", "RIGHT": "right", "PERIOD": "period", "BACKSPACE": "backspace",
    "EQUAL": "equal", "MINUS": "minus", "ESCAPE": "escape", "F1": "f1", "F11": "f11",
}


def key_names(keys: Any) -> dict[Any, str]:
    """Backend key code -> our key name ("space", "r", "1", "f11", ...), built from a
    moderngl-window ``wnd.keys`` namespace. Modifier keys are deliberately absent."""
    table: dict[Any, str] = {}

    def add(attr: str, name: str) -> None:
        code = getattr(keys, attr, "undefined")
        if code != "undefined":
            table[code] = name

    for attr, name in _NAMED_KEYS.items():
        add(attr, name)
    for digit in DIGITS:
        add(f"NUMBER_{digit}", digit)
        add(f"NUMPAD_{digit}", digit)
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        add(letter, letter.lower())
    return table


# --- small state holders ------------------------------------------------------------------
class EnergyHistory:
    """Rolling record of (sim time, kinetic, potential, total) energy, J."""

    def __init__(self, capacity: int = ENERGY_HISTORY) -> None:
        self.capacity = int(capacity)
        self._data = np.zeros((4, self.capacity))
        self._count = 0

    def clear(self) -> None:
        self._count = 0

    def add(self, t: float, kinetic: float, potential: float) -> None:
        """Append one sample; the oldest is dropped when full."""
        if self._count == self.capacity:
            self._data[:, :-1] = self._data[:, 1:]
            self._count -= 1
        self._data[:, self._count] = (t, kinetic, potential, kinetic + potential)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def series(self) -> dict[str, np.ndarray]:
        """Chronological arrays: "time", "kinetic", "potential", "total"."""
        d = self._data[:, : self._count]
        return {"time": d[0], "kinetic": d[1], "potential": d[2], "total": d[3]}


@dataclass
class _Interaction:
    """What the held mouse button is doing: grabbing a particle, orbiting or panning."""

    kind: str                      # "grab", "orbit" or "pan"
    button: int
    last_xy: tuple[float, float]
    particle: int | None = None
    plane_point: np.ndarray | None = None
    plane_normal: np.ndarray | None = None
    last_point: np.ndarray | None = None     # latest grab target, m
    last_move_time: float = 0.0              # s (controller clock) of the last target change
    moved_since_sample: bool = False


@dataclass
class LiveParameters:
    """Panel edits kept across resets and "restart" rebuilds (not across scene switches).

    Scales multiply the scene's own per-spring / per-particle values, so mixed values
    (a rope's weaker bend springs) keep their ratios.
    """

    stiffness_scale: float = 1.0
    damping_scale: float = 1.0
    mass_scale: float = 1.0


def _reference_value(scene_value: Any, values: np.ndarray) -> float:
    """The number the panel shows for a per-item parameter: the scene's scalar if it
    has one, else the largest value (0 when there are none)."""
    if isinstance(scene_value, (int, float)) and not isinstance(scene_value, bool) and scene_value > 0:
        return float(scene_value)
    return float(values.max()) if values.size else 0.0


def _default_particle_radius(sim: Simulation) -> float:
    """Picking sphere radius, m: a fifth of the short springs' rest length (the
    renderer's default sprite size; the window replaces it with the renderer's value)."""
    rest = np.asarray(sim.rest_lengths)
    rest = rest[rest > 0]
    return 0.2 * float(np.percentile(rest, 10)) if rest.size else 0.01


# --- the controller ---------------------------------------------------------------------
class ViewerController:
    """Simulation + camera + render options + interaction logic, without a window.

    Parameters
    ----------
    scene : the scene to open.
    view_size : framebuffer (width, height), px.
    clock : monotonic time source, s (for fling velocities; injectable for tests).
    frame_source : returns the current view as (h, w, 3) uint8 RGB from a fixed-size
        offscreen target; used by screenshots and video. None: P and V report that
        no renderer is attached.
    output_dir : where screenshots and videos are written.
    settings : simulation overrides (dt, integrator, substeps, ...) for the first scene.
    """

    def __init__(
        self,
        scene: Scene,
        view_size: tuple[int, int] = (1280, 720),
        *,
        clock: Callable[[], float] = time.perf_counter,
        frame_source: Callable[[], np.ndarray] | None = None,
        output_dir: str | Path = ".",
        settings: dict[str, Any] | None = None,
        camera: dict[str, Any] | None = None,
        paused: bool = False,
    ) -> None:
        self.clock = clock
        self.frame_source = frame_source
        self.output_dir = Path(output_dir)
        self.view_size = (max(int(view_size[0]), 1), max(int(view_size[1]), 1))
        self.options = RenderOptions(mode="surface+springs")
        self.pick_radius_px = PICK_RADIUS_PX
        self.show_ui = True
        self.quit_requested = False
        self.fullscreen_requested = False
        self.message = ""          # last status line (screenshot saved, ...)
        self.recorder: Any = None  # an open video writer while recording
        self.recording_path: Path | None = None
        self.recorded_frames = 0
        self.fps = 0.0
        self._frame_times: deque[float] = deque()
        self.ms_per_step = 0.0
        self.steps_last_frame = 0
        self.energy = EnergyHistory()
        self.live = LiveParameters()
        self.mouse_xy: tuple[float, float] | None = None
        self._interaction: _Interaction | None = None
        self._tracker = FlingTracker(window=math.inf, max_samples=FLING_SAMPLES)
        self.load_scene(scene, settings=settings, camera=camera)
        self.paused = bool(paused)

    # -- scene ---------------------------------------------------------------------------
    def load_scene(self, scene: Scene, *, keep_live: bool = False,
                   settings: dict[str, Any] | None = None,
                   camera: dict[str, Any] | None = None) -> None:
        """Open ``scene`` (a new Simulation); ``keep_live`` re-applies the panel's
        live edits (dt, substeps, integrator, gravity, parameter scales)."""
        previous = self.sim if keep_live and hasattr(self, "sim") else None
        overrides = dict(settings or {})
        if previous is not None:
            overrides.update(dt=previous.dt, substeps=previous.substeps,
                             integrator=previous.integrator)
        self.scene = scene
        self.sim: Simulation = scene.simulation(**overrides)
        if previous is None:
            self.gravity_on = True
            self.gravity_vector = self.sim.gravity
            self.live = LiveParameters()
        self._apply_gravity()
        self._apply_scales()
        self.particle_radius = _default_particle_radius(self.sim)
        self.reference = {
            "stiffness": _reference_value(scene.params.get("stiffness"), self.sim.system.stiffness),
            "damping": _reference_value(scene.params.get("damping"), self.sim.system.damping),
            "mass": _reference_value(scene.params.get("mass"), self.sim.system.mass),
        }
        self._interaction = None
        self.options.hovered = None
        self.paused = False
        self.error: str | None = None
        self._accumulator = 0.0
        self.energy.clear()
        self._record_energy()
        self.camera = OrbitCamera()
        self._initial_camera = camera
        self.reset_camera(use_hints=True)

    def reset(self) -> None:
        """Back to the scene's initial state; settings and live edits are kept."""
        self._release_interaction()
        self.sim.reset()
        self.error = None
        self._accumulator = 0.0
        self.energy.clear()
        self._record_energy()
        self.message = "reset"

    def select_scene(self, number: int) -> None:
        """Open the number-th shipped scene (1-based, the order of scene_names())."""
        names = scene_names()
        if not 1 <= number <= len(names):
            self.message = f"no scene {number}: {len(names)} shipped scenes (keys 1-{len(names)})"
            return
        self.load_scene(load(names[number - 1]))
        self.message = f"scene {number}: {names[number - 1]}"

    def select_scene_key(self, key: str) -> None:
        self.select_scene(int(key))

    # -- camera ------------------------------------------------------------------------------
    @property
    def aspect(self) -> float:
        return self.view_size[0] / self.view_size[1]

    def _framing_points(self) -> np.ndarray:
        """Particle positions plus the extremes of spherical obstacles, m."""
        points = [np.asarray(self.sim.positions, dtype=np.float64)]
        for contact in self.sim.contacts:
            if hasattr(contact, "center") and hasattr(contact, "radius"):
                centre = np.asarray(contact.center, dtype=np.float64)
                points.append(centre + float(contact.radius) * np.vstack([np.eye(3), -np.eye(3)]))
        return np.vstack(points)

    def reset_camera(self, use_hints: bool = False) -> None:
        """Frame the whole scene: planar scenes face-on, others from the scene's
        viewing angles. With ``use_hints`` the scene's full camera hints (and any
        --camera values) are applied on top: the initial view."""
        self.camera.frame(self._framing_points(), planar=self.sim.planar, aspect=self.aspect)
        hints = dict(self.scene.camera)
        if use_hints:
            hints.update(self._initial_camera or {})
        else:   # keep the scene's viewing angles, except that 2-D scenes are seen face-on
            keep = ("fov_y",) if self.sim.planar else ("azimuth", "elevation", "fov_y")
            hints = {k: v for k, v in hints.items() if k in keep}
        self.camera.update(hints)

    def frame_scene(self) -> None:
        self.reset_camera(use_hints=False)
        self.message = "camera reset"

    def set_view_size(self, width: int, height: int) -> None:
        """Framebuffer size in px (after a resize)."""
        self.view_size = (max(int(width), 1), max(int(height), 1))

    # -- stepping ---------------------------------------------------------------------------------
    def advance(self, frame_time: float) -> int:
        """Advance the simulation for one displayed frame that took ``frame_time`` s.

        Running: real time is added to an accumulator and ``min(floor(acc / dt),
        sim.substeps)`` steps of the fixed dt are run; the leftover is kept up to one
        frame's worth of steps, so a slow machine slows down instead of spiralling.
        Recording: exactly ``steps_per_frame(dt, RECORD_FPS)`` steps, then one video
        frame, so the video plays at true speed. Returns the number of steps run.
        """
        frame_time = min(max(float(frame_time), 0.0), MAX_FRAME_TIME)
        self._frame_times.append(frame_time)
        total = sum(self._frame_times)
        while len(self._frame_times) > 1 and total - self._frame_times[0] >= FPS_WINDOW:
            total -= self._frame_times.popleft()
        self.fps = len(self._frame_times) / total if total > 0 else 0.0
        self._sample_fling()
        if self.paused:
            self._accumulator = 0.0
            self.steps_last_frame = 0
            return 0
        dt = self.sim.dt
        if self.recorder is not None:
            from ..io.recording import steps_per_frame

            steps = steps_per_frame(dt, RECORD_FPS)
        else:
            self._accumulator += frame_time
            steps = min(int(self._accumulator / dt + 1e-9), self.sim.substeps)
            self._accumulator = min(self._accumulator - steps * dt, self.sim.substeps * dt)
        done = self._run_steps(steps)
        if self.recorder is not None and done and not self.paused:
            self._append_video_frame()
        return done

    @property
    def frame_interval(self) -> float:
        """Mean recent frame time, s (1/60 before the first frames)."""
        return 1.0 / self.fps if self.fps > 0 else 1.0 / 60.0

    def _sample_fling(self) -> None:
        """Record the grab target once per frame, against simulation time.

        The fling velocity is the grabbed particle's speed in the simulated world:
        target displacement per simulated second over the last FLING_SAMPLES frames.
        (Sampling per frame, not per mouse event: window systems hand over a frame's
        events in one batch. Simulated, not wall time: the particle then flies on as
        fast as it was moving, even when a slow machine runs the simulation slower
        than real time; dragging while paused flings nothing.)"""
        act = self._interaction
        if act is None or act.kind != "grab":
            return
        self._tracker.add(self.sim.time, act.last_point)
        act.moved_since_sample = False

    def _run_steps(self, steps: int) -> int:
        """Run ``steps`` steps, timing them; a divergence pauses with a message."""
        self.steps_last_frame = 0
        if steps <= 0:
            return 0
        start_count = self.sim.step_count
        start = time.perf_counter()
        try:
            self.sim.step(steps)
        except SimulationDiverged as exc:
            self._accumulator = 0.0
            self.paused = True
            self.error = (
                f"simulation diverged at t = {exc.time:.4g} s (step {exc.step}, "
                f"{exc.integrator}, dt = {exc.dt:g} s): {exc.reason}. Paused at the last "
                "finite state. To recover: R resets; lower dt in the panel; I switches "
                "integrator (backward_euler and implicit_midpoint are stable).")
        done = self.sim.step_count - start_count
        if done > 0:
            ms = 1000.0 * (time.perf_counter() - start) / done
            self.ms_per_step = ms if self.ms_per_step == 0 else (
                self.ms_per_step + STAT_SMOOTHING * (ms - self.ms_per_step))
        self.steps_last_frame = done
        self._record_energy()
        return done

    def _record_energy(self) -> None:
        self.energy.add(self.sim.time, self.sim.kinetic_energy(), self.sim.potential_energy())

    # -- hotkey actions --------------------------------------------------------------------------
    def handle_key(self, name: str) -> bool:
        """Run the hotkey bound to key ``name``; False if the key is not bound."""
        hotkey = _KEY_TO_HOTKEY.get(name)
        if hotkey is None:
            return False
        action = getattr(self, hotkey.action)
        if hotkey.keys == DIGITS:
            action(name)
        else:
            action()
        return True

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self._accumulator = 0.0
        if not self.paused:
            self.error = None

    def single_step(self) -> None:
        """Pause (if running) and advance exactly one step of dt."""
        self.paused = True
        self._run_steps(1)

    def next_integrator(self) -> None:
        """Switch to the next integrator of INTEGRATORS, keeping the state."""
        names = list(INTEGRATORS)
        self.set_integrator(names[(names.index(self.sim.integrator) + 1) % len(names)])

    def set_integrator(self, name: str) -> None:
        self.sim.integrator = name
        self.message = f"integrator: {name}"

    def cycle_render_mode(self) -> None:
        modes = list(WIREFRAME_MODES)
        self.options.mode = modes[(modes.index(self.options.mode) + 1) % len(modes)]
        self.message = f"draw: {self.options.mode}"

    def toggle_strain(self) -> None:
        self.options.strain_colors = not self.options.strain_colors

    def toggle_gravity(self) -> None:
        self.gravity_on = not self.gravity_on
        self._apply_gravity()
        self.message = "gravity on" if self.gravity_on else "gravity off"

    def more_substeps(self) -> None:
        self.set_substeps(self.sim.substeps * 2)

    def fewer_substeps(self) -> None:
        self.set_substeps(self.sim.substeps // 2)

    def set_substeps(self, value: int) -> None:
        self.sim.substeps = int(min(max(int(value), 1), MAX_SUBSTEPS))
        self.message = f"substeps per frame: {self.sim.substeps}"

    def toggle_ui(self) -> None:
        self.show_ui = not self.show_ui

    def request_quit(self) -> None:
        self.quit_requested = True

    def toggle_fullscreen(self) -> None:
        self.fullscreen_requested = not self.fullscreen_requested

    # -- recording -------------------------------------------------------------------------------
    def _output_path(self, suffix: str) -> Path:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = self.output_dir / f"ropesim-{self.scene.name}-{stamp}{suffix}"
        counter = 1
        while path.exists():
            path = self.output_dir / f"ropesim-{self.scene.name}-{stamp}-{counter}{suffix}"
            counter += 1
        return path

    def screenshot(self) -> Path | None:
        """Save the current view (fixed-size offscreen render) as a PNG."""
        if self.frame_source is None:
            self.message = "screenshot: no renderer attached"
            return None
        from ..io.recording import save_png

        path = self._output_path(".png")
        try:
            save_png(path, self.frame_source())
        except (OSError, ValueError, RuntimeError) as exc:
            self.message = f"screenshot failed: {exc}"
            return None
        self.message = f"screenshot saved: {path}"
        return path

    def toggle_recording(self) -> None:
        """Start or stop an mp4 recording of fixed-dt frames."""
        if self.recorder is not None:
            self.stop_recording()
            return
        if self.frame_source is None:
            self.message = "video: no renderer attached"
            return
        from ..io.recording import open_video_writer

        path = self._output_path(".mp4")
        try:
            self.recorder = open_video_writer(path, RECORD_FPS)
        except (OSError, ValueError, RuntimeError) as exc:
            self.message = f"video failed: {exc}"
            return
        self.recording_path = path
        self.recorded_frames = 0
        self.message = f"recording: {path}"

    def stop_recording(self) -> None:
        if self.recorder is None:
            return
        recorder, self.recorder = self.recorder, None
        recorder.close()
        self.message = f"video saved: {self.recording_path} ({self.recorded_frames} frames)"

    def _append_video_frame(self) -> None:
        try:
            self.recorder.append(self.frame_source())
            self.recorded_frames += 1
        except (OSError, ValueError, RuntimeError, BrokenPipeError) as exc:
            self.recorder = None
            self.message = f"video stopped: {exc}"

    # -- live parameters (panel) -----------------------------------------------------------------
    def _apply_gravity(self) -> None:
        self.sim.gravity = self.gravity_vector if self.gravity_on else np.zeros(3)

    def _apply_scales(self) -> None:
        system = self.sim.system
        self.sim.set_stiffness(system.stiffness * self.live.stiffness_scale)
        self.sim.set_damping(system.damping * self.live.damping_scale)
        self.sim.set_mass(system.mass * self.live.mass_scale)

    def parameter(self, name: str) -> float:
        """Current value of a panel parameter: dt (s), stiffness (N/m), damping
        (N s/m), mass (kg) or gravity (the y component, m/s^2)."""
        if name == "dt":
            return self.sim.dt
        if name == "gravity":
            return float(self.gravity_vector[1])
        scale = getattr(self.live, f"{name}_scale")
        return self.reference[name] * scale

    def set_parameter(self, name: str, value: float) -> None:
        """Apply a panel edit live (no restart). Invalid values are reported in
        ``message`` and ignored."""
        try:
            value = float(value)
            if name == "dt":
                self.sim.dt = value
                self._accumulator = 0.0
            elif name == "gravity":
                if not math.isfinite(value):
                    raise ValueError("gravity: must be finite")
                self.gravity_vector = np.array([self.gravity_vector[0], value, self.gravity_vector[2]])
                self._apply_gravity()
            elif name in ("stiffness", "damping", "mass"):
                reference = self.reference[name]
                if not (math.isfinite(value) and value >= 0 and (value > 0 or name != "mass")):
                    raise ValueError(f"{name}: must be {'> 0' if name == 'mass' else '>= 0'}")
                if reference <= 0:
                    raise ValueError(f"{name}: the scene has no {name} to scale")
                setattr(self.live, f"{name}_scale", value / reference)
                self._apply_scales()
            else:
                raise ValueError(f"unknown parameter {name!r}")
        except ValueError as exc:
            self.message = str(exc)

    @property
    def is_cloth(self) -> bool:
        return self.scene.builder == "cloth"

    def cloth_shape(self) -> tuple[int, int, int | None]:
        """(nx, ny, pins preset 1/2/4 or None) of a cloth scene."""
        params = self.scene.params
        preset = next((k for k, v in PIN_PRESETS.items() if v == params.get("pins")), None)
        return int(params.get("nx", 24)), int(params.get("ny", 24)), preset

    def restart_cloth(self, nx: int, ny: int, pins: int | None) -> None:
        """Rebuild a cloth scene with another size or pin preset (1, 2 or 4 pins),
        keeping the live edits."""
        if not self.is_cloth:
            self.message = "width / height / pins apply to cloth scenes"
            return
        overrides: dict[str, object] = {"cloth.nx": int(nx), "cloth.ny": int(ny)}
        if pins is not None:
            overrides["cloth.pins"] = PIN_PRESETS[pins]
        try:
            scene = self.scene.with_overrides(overrides)
        except SceneError as exc:
            self.message = str(exc)
            return
        self.load_scene(scene, keep_live=True)
        self.message = f"restarted: {nx} x {ny} cloth"

    # -- mouse ----------------------------------------------------------------------------------
    def _ray(self, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
        return self.camera.world_ray(x, y, *self.view_size)

    def pick(self, x: float, y: float) -> int | None:
        """Particle under framebuffer pixel (x, y): the nearest one to the camera whose
        sphere the cursor ray hits; else the one drawn closest to the cursor within
        ``pick_radius_px``; else None."""
        positions = self.sim.positions
        hit = pick_particle_screen(self.camera, x, y, *self.view_size, positions,
                                   radius_px=0.0, radius_world=self.particle_radius)
        if hit is not None:
            return hit
        pixels, depth = self.camera.project(positions, *self.view_size)
        with np.errstate(invalid="ignore"):
            distance_sq = ((pixels - np.array([x, y])) ** 2).sum(axis=1)
            distance_sq[~((depth >= -1.0) & (depth <= 1.0))] = np.inf
        if distance_sq.size == 0:
            return None
        best = int(np.argmin(distance_sq))
        return best if distance_sq[best] <= self.pick_radius_px ** 2 else None

    @property
    def hovered(self) -> int | None:
        return self.options.hovered

    @property
    def dragging(self) -> bool:
        return self._interaction is not None

    def refresh_hover(self) -> None:
        """Re-pick under the last mouse position (the scene moves under a still cursor)."""
        if self._interaction is not None and self._interaction.kind == "grab":
            self.options.hovered = self._interaction.particle
        elif self.mouse_xy is None:
            self.options.hovered = None
        else:
            self.options.hovered = self.pick(*self.mouse_xy)

    def mouse_leave(self) -> None:
        """The cursor is over the panel or left the window: nothing is hovered."""
        self.mouse_xy = None
        if self._interaction is None:
            self.options.hovered = None

    def mouse_move(self, x: float, y: float) -> None:
        """Cursor moved with no button held."""
        self.mouse_xy = (x, y)
        self.refresh_hover()

    def press(self, x: float, y: float, button: int, shift: bool = False) -> None:
        """Mouse button pressed at framebuffer pixel (x, y)."""
        self.mouse_xy = (x, y)
        if self._interaction is not None:
            return
        particle = self.pick(x, y) if button == LEFT else None
        if particle is not None and shift:
            pinned = self.sim.toggle_pin(particle)
            self.message = f"particle {particle} {'pinned' if pinned else 'unpinned'}"
            return
        if particle is not None:
            point = np.array(self.sim.positions[particle], dtype=np.float64)
            plane_point, normal = drag_plane(self.camera, point, self.sim.planar)
            self._interaction = _Interaction("grab", button, (x, y), particle, plane_point,
                                             normal, point, self.clock())
            self.sim.grab(particle, point)
            self._tracker.reset()
            self.options.hovered = particle
        elif button == LEFT:
            self._interaction = _Interaction("orbit", button, (x, y))
        elif button in (RIGHT, MIDDLE):
            self._interaction = _Interaction("pan", button, (x, y))

    def drag(self, x: float, y: float) -> None:
        """Cursor moved with a button held."""
        self.mouse_xy = (x, y)
        act = self._interaction
        if act is None:
            return
        dx, dy = x - act.last_xy[0], y - act.last_xy[1]
        act.last_xy = (x, y)
        if act.kind == "orbit":
            self.camera.orbit(-dx * ORBIT_DEG_PER_PX, dy * ORBIT_DEG_PER_PX)
        elif act.kind == "pan":
            self.camera.pan(dx, dy, self.view_size[1])
        else:
            point = self._drag_point(x, y)
            if point is None:
                return
            self.sim.grab(act.particle, point)
            if self.paused:   # no steps to carry it there: pose it directly
                self.sim.positions[act.particle] = point
            act.last_point, act.last_move_time = point, self.clock()
            act.moved_since_sample = True

    def _drag_point(self, x: float, y: float) -> np.ndarray | None:
        act = self._interaction
        origin, direction = self._ray(x, y)
        return intersect_plane(origin, direction, act.plane_point, act.plane_normal)

    def release(self, x: float, y: float, button: int) -> None:
        """Mouse button released: a grabbed particle is let go with the velocity of the
        last drag samples (none if the cursor stood still); a pinned one stays put."""
        act = self._interaction
        if act is None or act.button != button:
            return
        if act.kind == "grab" and (x, y) != act.last_xy:
            self.drag(x, y)
        self._release_interaction()
        self.mouse_move(x, y)

    def _release_interaction(self) -> None:
        act, self._interaction = self._interaction, None
        if act is None or act.kind != "grab":
            return
        i = act.particle
        if self.sim.pinned[i]:
            self.sim.positions[i] = act.last_point
            self.sim.release()
            return
        if act.moved_since_sample:   # the events since the last frame's steps
            self._tracker.add(self.sim.time, act.last_point)
        hold = max(FLING_HOLD, 1.5 * self.frame_interval)
        still = self.clock() - act.last_move_time > hold
        velocity = np.zeros(3) if still else self._tracker.velocity()
        self.sim.release(velocity=velocity)

    def scroll(self, steps: float) -> None:
        """Mouse wheel: zoom toward the point under the cursor (else the target)."""
        if steps == 0:
            return
        toward = None
        if self.mouse_xy is not None:
            hovered = self.pick(*self.mouse_xy)
            if hovered is not None:
                toward = np.array(self.sim.positions[hovered], dtype=np.float64)
            else:
                origin, direction = self._ray(*self.mouse_xy)
                toward = intersect_plane(origin, direction, self.camera.target, self.camera.forward)
        self.camera.zoom(ZOOM_PER_WHEEL_STEP ** float(steps), toward=toward)

    # -- text -----------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """"running", "paused", "diverged" or "recording"."""
        if self.error:
            return "diverged"
        if self.paused:
            return "paused"
        return "recording" if self.recorder is not None else "running"

    def window_title(self) -> str:
        """Window title: scene, integrator, state; says why and what to do after a divergence."""
        base = f"ropesim - {self.scene.name} - {self.sim.integrator}"
        if self.error:
            return (f"{base} - PAUSED: simulation diverged (R reset, I next integrator, "
                    "smaller dt in the panel)")
        if self.paused:
            return f"{base} - paused"
        if self.recorder is not None:
            return f"{base} - recording"
        return base

    def close(self) -> None:
        """Finish an open recording (called when the window closes)."""
        self.stop_recording()


# --- the window --------------------------------------------------------------------------
def _mglw():
    import moderngl_window

    return moderngl_window


def _scene_from_args(args: argparse.Namespace) -> Scene:
    """Load the scene named on the command line and apply ``--set`` overrides."""
    scene = load(args.scene)
    if args.set:
        overrides = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep:
                raise SceneError(f"--set {item!r}: expected KEY=VALUE (e.g. cloth.nx=30)")
            overrides[key.strip()] = value.strip()
        scene = scene.with_overrides(overrides)
    return scene


def _settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if args.integrator:
        settings["integrator"] = args.integrator
    if args.dt is not None:
        settings["dt"] = args.dt
    if args.substeps is not None:
        settings["substeps"] = args.substeps
    return settings


def add_viewer_arguments(parser: argparse.ArgumentParser) -> None:
    """Our arguments, added to moderngl-window's parser (which rejects unknown flags)."""
    parser.add_argument("scene", nargs="?", default=DEFAULT_SCENE,
                        help=f"shipped scene name or .toml file (default: {DEFAULT_SCENE})")
    parser.add_argument("--integrator", choices=list(INTEGRATORS), help="integrator to start with")
    parser.add_argument("--dt", type=float, help="time step, s")
    parser.add_argument("--substeps", type=int, help="steps per frame (at most)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="scene override, e.g. cloth.nx=30 (repeatable)")
    parser.add_argument("--camera", metavar="AZ,EL,DIST[,TX,TY,TZ]",
                        help="initial camera: degrees, m")
    parser.add_argument("--paused", action="store_true", help="start paused")
    parser.add_argument("--no-panel", action="store_true", help="start with the panel hidden")
    parser.add_argument("--output-dir", default=".", help="folder for screenshots and videos")


def _nothing() -> None:
    """An empty imgui frame."""


def _make_viewer_class() -> type:
    """Build RopesimViewer on moderngl-window's WindowConfig (imported lazily)."""
    mglw = _mglw()

    class RopesimViewer(mglw.WindowConfig):
        """The ropesim window: events -> ViewerController, drawing via Renderer + panel."""

        gl_version = (3, 3)
        title = "ropesim"
        window_size = (1280, 720)
        aspect_ratio = None
        resizable = True
        vsync = True
        samples = 4
        clear_color = None
        log_level = logging.WARNING

        @classmethod
        def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
            add_viewer_arguments(parser)

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            from .panel import ImguiRenderer, Panel
            from ..render.renderer import Renderer

            args = self.argv
            self.wnd.exit_key = None          # Esc and F11 go through our hotkey table
            self.wnd.fullscreen_key = None
            self.key_names = key_names(self.wnd.keys)
            camera = parse_camera_arg(args.camera) if args.camera else None
            self.controller = ViewerController(
                _scene_from_args(args), self.wnd.buffer_size,
                settings=_settings_from_args(args), camera=camera, paused=args.paused,
                output_dir=args.output_dir,
            )
            self.controller.show_ui = not args.no_panel
            self.controller.frame_source = self.capture_frame
            self.renderer = Renderer(self.ctx, self.controller.sim)
            self.controller.particle_radius = self.renderer.particle_radius
            self.imgui = ImguiRenderer(self.wnd)
            self.panel = Panel(self.controller)
            self._title = ""
            self._cursor: tuple[float, float] | None = None  # last cursor, framebuffer px
            self._fullscreen = bool(self.wnd.fullscreen)
            self._update_pixel_scale()

        # -- helpers -------------------------------------------------------------------
        def _update_pixel_scale(self) -> None:
            """Window -> framebuffer pixel factors, per axis (HiDPI, after resizes)."""
            (w, h), (bw, bh) = self.wnd.size, self.wnd.buffer_size
            self._scale = (bw / max(w, 1), bh / max(h, 1))
            self.controller.set_view_size(bw, bh)
            self.controller.pick_radius_px = PICK_RADIUS_PX * self._scale[0]

        def to_pixels(self, x: float, y: float) -> tuple[float, float]:
            """Window event coordinates -> framebuffer pixel centre (top-left origin).

            pyglet reports y as ``height - y_x11`` (one more than the X11 row)."""
            row_offset = -0.5 if self.wnd.name == "pyglet" else 0.5
            return (x + 0.5) * self._scale[0], (y + row_offset) * self._scale[1]

        def _ui_wants_mouse(self) -> bool:
            return self.controller.show_ui and self.imgui.io.want_capture_mouse

        def _ui_wants_keyboard(self) -> bool:
            return self.controller.show_ui and self.imgui.io.want_capture_keyboard

        def _sync_renderer(self) -> None:
            """Rebuild the GL buffers after the controller opened another scene."""
            c = self.controller
            if self.renderer.sim is not c.sim:
                self.renderer.rebuild(c.sim)
                c.particle_radius = self.renderer.particle_radius

        def capture_frame(self) -> np.ndarray:
            """The current view rendered offscreen at RECORD_SIZE, (h, w, 3) uint8."""
            c = self.controller
            self._sync_renderer()
            grabber = self.renderer.frame_grabber(*RECORD_SIZE)
            return grabber.grab(self.renderer, c.camera, c.options)

        # -- moderngl-window 3.x callbacks -------------------------------------------------
        def on_render(self, time: float, frame_time: float) -> None:
            c = self.controller
            c.advance(frame_time)
            self._sync_renderer()
            self._hover_at_cursor()
            width, height = self.wnd.buffer_size
            if width < 1 or height < 1:   # minimised
                return
            self.wnd.use()
            self.renderer.draw(c.camera, width, height, c.options)
            # an empty imgui frame while hidden keeps its input queue and flags current
            self.imgui.render_frame(self.panel.draw if c.show_ui else _nothing, frame_time)
            title = c.window_title()
            if title != self._title:
                self.wnd.title = self._title = title
            if c.fullscreen_requested != self._fullscreen:
                self._fullscreen = c.fullscreen_requested
                self.wnd.fullscreen = self._fullscreen
            if c.quit_requested:
                self.wnd.close()

        def on_resize(self, width: int, height: int) -> None:
            self.imgui.resize(width, height)
            self._update_pixel_scale()

        def on_key_event(self, key: Any, action: Any, modifiers: Any) -> None:
            self.imgui.key_event(key, action, modifiers)
            if action != self.wnd.keys.ACTION_PRESS or self._ui_wants_keyboard():
                return
            name = self.key_names.get(key)
            if name is not None:
                self.controller.handle_key(name)

        def on_unicode_char_entered(self, char: str) -> None:
            self.imgui.unicode_char_entered(char)

        def on_mouse_position_event(self, x: int, y: int, dx: int, dy: int) -> None:
            self.imgui.mouse_position_event(x, y, dx, dy)
            self._cursor = self.to_pixels(x, y)
            self._hover_at_cursor()

        def _hover_at_cursor(self) -> None:
            """Hover what is under the last known cursor, unless the panel has the mouse.

            Run on every mouse move and every frame: imgui decides whether it wants the
            mouse a frame late, and particles move under a still cursor."""
            c = self.controller
            if self._ui_wants_mouse():
                c.mouse_leave()
            elif self._cursor is not None and not c.dragging:
                c.mouse_move(*self._cursor)

        def on_mouse_press_event(self, x: int, y: int, button: int) -> None:
            self.imgui.mouse_press_event(x, y, button)
            if self._ui_wants_mouse():
                return
            shift = bool(self.wnd.modifiers.shift)
            self.controller.press(*self.to_pixels(x, y), button, shift=shift)

        def on_mouse_drag_event(self, x: int, y: int, dx: int, dy: int) -> None:
            self.imgui.mouse_drag_event(x, y, dx, dy)
            self.controller.drag(*self.to_pixels(x, y))   # ignored unless a drag began here

        def on_mouse_release_event(self, x: int, y: int, button: int) -> None:
            self.imgui.mouse_release_event(x, y, button)
            self.controller.release(*self.to_pixels(x, y), button)  # never leave a grab stuck

        def on_mouse_scroll_event(self, x_offset: float, y_offset: float) -> None:
            self.imgui.mouse_scroll_event(x_offset, y_offset)
            if not self._ui_wants_mouse():
                self.controller.scroll(y_offset)

        def on_close(self) -> None:
            self.controller.close()

    return RopesimViewer


_VIEWER_CLASS: type | None = None


def viewer_class() -> type:
    """The RopesimViewer WindowConfig class (moderngl-window is imported on first use)."""
    global _VIEWER_CLASS
    if _VIEWER_CLASS is None:
        _VIEWER_CLASS = _make_viewer_class()
    return _VIEWER_CLASS


# --- entry point -----------------------------------------------------------------------------
HEADLESS_HINT = "ropesim render SCENE --out out.mp4"


class ViewerError(RuntimeError):
    """A startup failure with a one-line message for the user."""


def build_parser() -> argparse.ArgumentParser:
    """moderngl-window's parser (--window, --size, --fullscreen, --vsync, ...) plus ours."""
    parser = _mglw().create_parser()
    parser.prog = "ropesim view"
    parser.description = "Open the interactive ropesim viewer."
    add_viewer_arguments(parser)
    return parser


def _check_display(window: str | None) -> None:
    """Fail early, with the headless alternative, when no display can be reached."""
    backend = os.environ.get("MODERNGL_WINDOW") or window or "pyglet"
    if backend == "headless":
        raise ViewerError("the viewer needs a window (--window headless has none); for "
                          f"offscreen output use: {HEADLESS_HINT}")
    if sys.platform in ("win32", "darwin"):
        return
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise ViewerError(
            "no display: DISPLAY is not set, so no window can open. Run it on a desktop, "
            f"under Xvfb (xvfb-run ropesim), or render headless: {HEADLESS_HINT}"
        )


def _explain_window_failure(exc: BaseException) -> str:
    """One line naming why the window could not be created and what to do."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    lowered = f"{type(exc).__name__} {text}".lower()
    if "display" in lowered:
        name = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or "(unset)"
        return (f"no display: cannot connect to display {name} ({text}). Start an X server "
                f"or Xvfb (xvfb-run ropesim), or render headless: {HEADLESS_HINT}")
    if any(word in lowered for word in ("config", "version", "opengl", "context", "glx", "330")):
        return (f"could not create an OpenGL 3.3 core context ({text}). Update the graphics "
                "driver, try another backend (--window glfw), or use software GL "
                f"(LIBGL_ALWAYS_SOFTWARE=1); headless: {HEADLESS_HINT}")
    return f"could not open the window: {text}"


SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "swiftshader")


def _software_gl() -> bool:
    """Whether this display's OpenGL is a software rasteriser (probed with a small
    standalone context). Multisampling costs such renderers most of their frame rate."""
    try:
        import moderngl

        ctx = moderngl.create_standalone_context()
    except Exception:  # no usable context: the window creation reports it properly
        return False
    try:
        renderer = str(ctx.info.get("GL_RENDERER", "")).lower()
    finally:
        ctx.release()
    return any(name in renderer for name in SOFTWARE_RENDERERS)


def create_viewer(argv: Sequence[str]) -> Any:
    """Parse ``argv``, check the display and scene, and open the window; returns the
    RopesimViewer instance (not yet running). Raises ViewerError or SystemExit."""
    argv = list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        _scene_from_args(args)
        if args.dt is not None and not args.dt > 0:
            raise SceneError(f"--dt: must be > 0 s, got {args.dt}")
        if args.substeps is not None and args.substeps < 1:
            raise SceneError(f"--substeps: must be >= 1, got {args.substeps}")
        if args.camera:
            parse_camera_arg(args.camera)
    except (SceneError, ValueError) as exc:
        raise ViewerError(str(exc)) from None
    _check_display(args.window)
    if args.samples is None and _software_gl():
        argv += ["--samples", "0"]   # MSAA would cut a software renderer's frame rate ~3x
    mglw = _mglw()
    try:
        # an empty list would make moderngl-window read sys.argv instead
        return mglw.create_window_config_instance(viewer_class(), args=argv or [args.scene])
    except ViewerError:
        raise
    except Exception as exc:  # window backends raise many unrelated types
        raise ViewerError(_explain_window_failure(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the viewer; returns the exit code (0 after the window is closed).

    ``argv`` excludes the program name and the word ``view``.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        config = create_viewer(argv)
    except ViewerError as exc:
        print(f"ropesim: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, already printed)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        _mglw().run_window_config_instance(config)
    except KeyboardInterrupt:   # Ctrl-C in the terminal: finish a recording, no traceback
        config.controller.close()
        return 130
    return 0


__all__ = [
    "HOTKEYS", "MOUSE_HELP", "Hotkey", "ViewerController", "EnergyHistory", "key_names",
    "viewer_class", "create_viewer", "build_parser", "main",
]
