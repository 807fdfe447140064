"""The viewer without a window: simulation, camera, render options and every command.

:class:`ViewerController` needs no window and no GL, so it is tested directly
(tests/test_viewer.py). It composes four small helpers:

* :class:`~ropesim.app.frame_clock.FrameClock`: real frame times -> fixed-dt steps
  within a time budget per frame, frame rate and real-time factor;
* :class:`~ropesim.app.mouse.Mouse`: hover, grab / drag / fling, pins, orbit, pan, zoom;
* :class:`~ropesim.app.capture.Capture`: screenshots and video recording;
* :class:`~ropesim.app.parameters.ParameterEditor`: live parameters and cloth restarts.

The window (:mod:`ropesim.app.window`) turns events into the calls below: key names
into :meth:`ViewerController.handle_key` (the table in :mod:`ropesim.app.hotkeys`),
mouse events in framebuffer pixels (top-left origin, y down) into :meth:`press`,
:meth:`drag`, :meth:`release`, :meth:`mouse_move`, :meth:`mouse_leave` and
:meth:`scroll`, and each displayed frame into :meth:`advance`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..engine.integrators import INTEGRATORS
from ..engine.simulation import Simulation
from ..io.scenes import Scene, SceneError, load, scene_names
from ..io.video import VideoWriter, steps_per_frame
from ..render.camera import OrbitCamera
from ..render.frame_loop import advance_frame
from ..render.framing import reach_points
from ..render.renderer import WIREFRAME_MODES, RenderOptions
from .capture import RECORD_FPS, Capture
from .edit_tool import EditTool
from .frame_clock import FrameClock
from .hotkeys import DIGITS, hotkey_for
from .layout import UiLayout, collapsed_by_width
from .mouse import Mouse
from .history import DEFAULT_HISTORY_MB
from .replay import Replay
from .timeline import Timeline
from .parameters import LiveParameters, ParameterEditor, cloth_overrides, cloth_shape
from .wave_tools import WaveTools
from .wind_panel import WindControls

ENERGY_HISTORY = 600         # energy samples kept for the panel's plot
TIME_SCALE_STEP = 2.0        # factor of the = (faster) and - (slow motion) keys


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

    def truncate_after(self, t: float) -> None:
        """Drop the samples later than sim time ``t`` (s): resuming from a rewound moment."""
        while self._count and self._data[0, self._count - 1] > t:
            self._count -= 1

    def __len__(self) -> int:
        return self._count

    def series(self) -> dict[str, np.ndarray]:
        """Chronological arrays: "time", "kinetic", "potential", "total"."""
        d = self._data[:, : self._count]
        return {"time": d[0], "kinetic": d[1], "potential": d[2], "total": d[3]}


class ViewerController:
    """Simulation + camera + render options + interaction logic, without a window.

    Parameters
    ----------
    scene : the scene to open (``--set``, ``--dt`` ... already applied).
    view_size : framebuffer (width, height), px.
    ui_scale : framebuffer px per window px (HiDPI); the panels' sizes are window px.
    clock : monotonic time source, s (for fling velocities; injectable for tests).
    frame_source : returns the current view as (h, w, 3) uint8 RGB from a fixed-size
        offscreen target; used by screenshots and video. None: P and V report that
        no renderer is attached.
    output_dir : where screenshots and videos are written.
    camera : camera values (as from ``parse_camera_arg``) applied over the scene's hints.
    paused : start paused.
    history_mb : memory budget of the rewind history, MB (see :mod:`ropesim.app.timeline`).
    replay : a saved Trajectory to show instead of simulating (``--replay``), or None.
    """

    def __init__(
        self,
        scene: Scene,
        view_size: tuple[int, int] = (1280, 720),
        *,
        ui_scale: float = 1.0,
        clock: Callable[[], float] = time.perf_counter,
        frame_source: Callable[[], np.ndarray] | None = None,
        output_dir: str | Path = ".",
        camera: dict[str, Any] | None = None,
        paused: bool = False,
        history_mb: float = DEFAULT_HISTORY_MB,
        replay: Any = None,
    ) -> None:
        self.clock = clock
        self.view_size = (max(int(view_size[0]), 1), max(int(view_size[1]), 1))
        self.ui_scale = float(ui_scale)
        self.options = RenderOptions()
        self.show_ui = True
        self.panel_collapsed = collapsed_by_width(self.view_size[0] / self.ui_scale)
        self.warm_up_pending = True    # the next step is a new scene's or integrator's first
        self.compiling = False         # a frame saying "compiling kernels" is being drawn
        self.quit_requested = False
        self.fullscreen_requested = False
        self.message = ""          # last status line (screenshot saved, ...)
        self.error: str | None = None
        self.recorder: VideoWriter | None = None   # the open video while recording
        self.recorded_frames = 0                   # frames in the current or last video
        self.live = LiveParameters()               # panel edits kept across resets
        self.gravity_on = True                     # the G key's switch
        self.frame_clock = FrameClock()
        self.mouse = Mouse(self)
        self.capture = Capture(self, output_dir, frame_source)
        self.params = ParameterEditor(self)
        self.energy = EnergyHistory()
        self.waves = WaveTools()                   # issue 16: pluck, probes, probe plots
        self.edit = EditTool(self)                 # issue 13: cut strokes, undo
        self.wind = WindControls()                 # issue 13: K, the panel's Wind section
        self.timeline = Timeline(self, history_mb)  # issue 15: rewind, branches, replay
        self._initial_camera = camera
        self.sim: Simulation | None = None
        self.load_scene(scene)
        self.paused = bool(paused)
        if replay is not None:
            self.timeline.open_replay(Replay(replay, self.sim))

    # -- scene ---------------------------------------------------------------------------
    def load_scene(self, scene: Scene, *, keep_live: bool = False) -> str:
        """Open ``scene`` (a new Simulation); ``keep_live`` keeps the live edits (dt,
        substeps, integrator, self-collision on/off and its friction, gravity, parameter
        scales) of the current one. A
        recording stops and is saved first (its file is named after the old scene);
        returns the line saying so ("" when nothing was recording)."""
        saved = ""
        if self.recorder is not None:
            self.capture.stop()
            saved = self.message
        previous = self.sim if keep_live else None
        overrides: dict[str, Any] = {}
        if previous is not None:  # thickness: the new scene's (its default follows the spacing)
            overrides.update(dt=previous.dt, substeps=previous.substeps,
                             integrator=previous.integrator,
                             self_collision=previous.self_collision,
                             self_friction=previous.self_friction)
        else:
            self.live = LiveParameters()
            self.gravity_on = True
        self.scene = scene
        self.sim = scene.simulation(**overrides)
        self.params.attach()
        self.mouse.attach(self.sim)
        self.waves.attach(self.sim)
        self.edit.attach(self.sim)
        self.wind.attach(self.sim)
        self.paused = False
        self.error = None
        self.frame_clock.clear()
        self.frame_clock.forget_step_cost()
        self.warm_up_pending = True
        self.energy.clear()
        self._record_energy()
        self.timeline.attach()
        self.camera = OrbitCamera()
        self.reset_camera(use_hints=True)
        return saved

    def reset(self) -> None:
        """Back to the scene's initial state; settings and live edits are kept."""
        self.mouse.let_go()
        self.sim.reset()
        self.waves.restart(self.sim)
        self.edit.attach(self.sim)    # the reset mended every cut
        self.error = None
        self.frame_clock.clear()
        self.energy.clear()
        self._record_energy()
        self.timeline.restart()
        self.message = "reset"

    def select_scene(self, number: int) -> None:
        """Open the number-th shipped scene (1-based, the order of scene_names())."""
        names = scene_names()
        if not 1 <= number <= len(names):
            self.message = f"no scene {number}: {len(names)} shipped scenes (keys 1-{len(names)})"
            return
        saved = self.load_scene(load(names[number - 1]))
        self.message = "; ".join(filter(None, [f"scene {number}: {names[number - 1]}", saved]))

    def select_scene_key(self, key: str) -> None:
        self.select_scene(int(key))

    # -- camera ------------------------------------------------------------------------------
    @property
    def aspect(self) -> float:
        return self.view_size[0] / self.view_size[1]

    @property
    def ui_layout(self) -> UiLayout:
        """What the panels cover now (window px)."""
        width, height = (v / self.ui_scale for v in self.view_size)
        return UiLayout((width, height), self.show_ui, self.panel_collapsed)

    def free_viewport(self) -> tuple[float, float, float, float]:
        """(left, top, right, bottom) of the view the panels leave free, fractions."""
        return self.ui_layout.free_viewport()

    def reset_camera(self, use_hints: bool = False) -> None:
        """Frame the scene's reach (see :func:`~ropesim.render.framing.reach_points`) in
        the part of the view the panels leave free, seen from the scene's camera
        direction (its azimuth, elevation and fov_y; its distance and target are for
        the scene's default size, so the box sets them). Without ``use_hints`` (the F
        key) 2-D scenes are seen face-on; with it (the initial view) any --camera
        values are applied on top."""
        hints = self.scene.camera
        if "fov_y" in hints:
            self.camera.fov_y = float(hints["fov_y"])
        face_on = self.sim.planar and not use_hints
        self.camera.frame(reach_points(self.sim), planar=self.sim.planar, aspect=self.aspect,
                          viewport=self.free_viewport(),
                          azimuth=None if face_on else hints.get("azimuth"),
                          elevation=None if face_on else hints.get("elevation"))
        if use_hints:
            self.camera.update(self._initial_camera or {})

    def frame_scene(self) -> None:
        self.reset_camera(use_hints=False)
        self.message = "camera reset"

    def set_view_size(self, width: int, height: int, ui_scale: float | None = None) -> None:
        """Framebuffer size in px (after a resize) and, if given, framebuffer px per
        window px; the scene stays centred in the free part of the view."""
        self.view_size = (max(int(width), 1), max(int(height), 1))
        if ui_scale is not None:
            self.ui_scale = float(ui_scale)
        self.camera.center_in(self.free_viewport())

    def set_panel_collapsed(self, collapsed: bool) -> None:
        """The panel was collapsed to its strip or expanded (by the panel or a click)."""
        if bool(collapsed) != self.panel_collapsed:
            self.panel_collapsed = bool(collapsed)
            self.camera.center_in(self.free_viewport())

    # -- stepping ---------------------------------------------------------------------------------
    def advance(self, frame_time: float) -> int:
        """Advance the simulation for one displayed frame that took ``frame_time`` s.

        Running: the frame clock turns the real time (times the time scale) into steps
        of the fixed dt, as many as fit in the frame's time budget. Recording: exactly
        ``steps_per_frame(dt, RECORD_FPS)`` steps, then one video frame, so the video
        plays at true speed. Returns the number of steps run.
        """
        frame_time = self.frame_clock.tick(frame_time)
        self.mouse.sample_fling()
        if self.paused:
            self.frame_clock.clear()
            return self._run_steps(0)
        if self.timeline.replaying:
            return self.timeline.play(frame_time)
        if self.recorder is not None:
            steps = steps_per_frame(self.sim.dt, RECORD_FPS)
        else:
            steps = self.frame_clock.steps_for(frame_time, self.sim.dt)
        done = self._run_steps(steps)
        if self.recorder is not None and done and not self.paused:
            self.capture.add_frame()
        return done

    @property
    def needs_warm_up(self) -> bool:
        """Whether the window should show "compiling kernels" and call :meth:`warm_up`
        before the next frame: a new scene or integrator, running, not recording."""
        return self.warm_up_pending and not self.paused and self.recorder is None

    def warm_up(self) -> None:
        """Run the first step of a new scene or integrator, in which numba compiles (or
        loads) its kernels, outside the frame timing: its wall time neither sets the
        step budget nor counts as real time owed by the next frame. A second step
        measures the cost, so the next frame is budgeted already."""
        self.warm_up_pending = False
        if self._run_steps(1, measure=False):
            self.frame_clock.compiled()
            self._run_steps(1)
            self.frame_clock.skip_next_frame()

    @property
    def frame_interval(self) -> float:
        """Mean recent frame time, s (1/60 before the first frames)."""
        return self.frame_clock.frame_interval

    def _run_steps(self, steps: int, measure: bool = True) -> int:
        """Run ``steps`` steps (none if <= 0) through the shared frame loop; a divergence
        pauses with a message that says how to recover. ``measure=False`` keeps their
        wall time out of the step cost."""
        if steps <= 0 or self.timeline.replaying:   # a replay simulates nothing
            self.frame_clock.steps_last_frame = 0
            return 0
        self.warm_up_pending = False
        self.mouse.collider_drag.spread(steps * self.sim.dt)  # a Ctrl+drag: over the frame
        result = advance_frame(self.sim, steps)
        exc = result.diverged
        if exc is not None:
            self.frame_clock.clear()
            self.paused = True
            self.error = (
                f"simulation diverged at t = {exc.time:.4g} s (step {exc.step}, "
                f"{exc.integrator}, dt = {exc.dt:g} s): {exc.reason}. Paused at the last "
                "healthy state. To recover: R resets; lower dt in the panel; I switches "
                "integrator" + (f" ({exc.advice.text})." if exc.advice is not None else "."))
        self.frame_clock.count(result, self.sim.dt, measure=measure)
        self._record_energy()
        self.waves.sample(self.sim)
        self.timeline.record()
        return result.steps

    def _record_energy(self) -> None:
        self.energy.add(self.sim.time, self.sim.kinetic_energy(), self.sim.potential_energy())

    # -- hotkey actions --------------------------------------------------------------------------
    def handle_key(self, name: str) -> bool:
        """Run the hotkey bound to key ``name``; False if the key is not bound."""
        hotkey = hotkey_for(name)
        if hotkey is None:
            return False
        action = getattr(self, hotkey.action)
        if hotkey.keys == DIGITS:
            action(name)
        else:
            action()
        return True

    def toggle_pause(self) -> None:
        """Pause or resume; resuming after a divergence starts the energy plot afresh
        (its scale would otherwise stay at the blow-up's)."""
        self.paused = not self.paused
        self.frame_clock.clear()
        if not self.paused:
            self.timeline.resume()
        if not self.paused and self.error:
            self.error = None
            self.energy.clear()
            self._record_energy()

    def single_step(self) -> None:
        """Pause (if running) and advance exactly one step of dt."""
        self.paused = True
        self._run_steps(1)

    # issue 15: the timeline's keys (ropesim.app.timeline does the work)
    def step_back(self) -> None:
        self.timeline.step_back()

    def step_forward(self) -> None:
        self.timeline.step_forward()

    def branch_here(self) -> None:
        self.timeline.branch_here()

    def drop_branch(self) -> None:
        self.timeline.drop_branch()

    def next_integrator(self) -> None:
        """Switch to the next integrator of INTEGRATORS, keeping the state."""
        names = list(INTEGRATORS)
        self.set_integrator(names[(names.index(self.sim.integrator) + 1) % len(names)])

    def set_integrator(self, name: str) -> None:
        self.sim.integrator = name
        self.frame_clock.forget_step_cost()
        self.warm_up_pending = True
        self.message = f"integrator: {name}"

    def cycle_render_mode(self) -> None:
        modes = list(WIREFRAME_MODES)
        self.options.mode = modes[(modes.index(self.options.mode) + 1) % len(modes)]
        self.message = f"draw: {self.options.mode}"

    def toggle_strain(self) -> None:
        self.options.strain_colors = not self.options.strain_colors

    def toggle_axes(self) -> None:
        self.options.show_axes = not self.options.show_axes
        self.message = "axes shown" if self.options.show_axes else "axes hidden"

    def toggle_gravity(self) -> None:
        self.gravity_on = not self.gravity_on
        self.params.apply_gravity()
        self.message = "gravity on" if self.gravity_on else "gravity off"

    def toggle_self_collision(self) -> None:
        self.sim.self_collision = not self.sim.self_collision
        self.message = f"self-collision {'on' if self.sim.self_collision else 'off'}"

    @property
    def time_scale(self) -> float:
        """Simulated s per real s asked for (1: real time, below 1: slow motion)."""
        return self.frame_clock.time_scale

    def faster(self) -> None:
        self.set_time_scale(self.time_scale * TIME_SCALE_STEP)

    def slower(self) -> None:
        self.set_time_scale(self.time_scale / TIME_SCALE_STEP)

    def set_time_scale(self, value: float) -> None:
        """Slow motion / fast forward: simulated s per real s, clamped to TIME_SCALES."""
        scale = self.frame_clock.set_time_scale(value)
        self.message = "real time" if scale == 1 else f"time scale {scale:g}x real time"

    def toggle_ui(self) -> None:
        self.show_ui = not self.show_ui
        self.camera.center_in(self.free_viewport())

    def request_quit(self) -> None:
        self.quit_requested = True

    def toggle_fullscreen(self) -> None:
        self.fullscreen_requested = not self.fullscreen_requested

    def screenshot(self) -> Path | None:
        """Save the current view (fixed-size offscreen render) as a PNG."""
        return self.capture.screenshot()

    def toggle_recording(self) -> None:
        """Start or stop an mp4 recording of fixed-dt frames."""
        if self.recorder is not None:
            self.capture.stop()
        else:
            self.capture.start()

    # -- live parameters (panel) -----------------------------------------------------------------
    def parameter(self, name: str) -> float:
        """Current value of a panel parameter: dt (s), stiffness (N/m), damping
        (N s/m), mass (kg) or gravity (the y component, m/s^2)."""
        return self.params.value(name)

    def set_parameter(self, name: str, value: float) -> None:
        """Apply a panel edit live (no restart). A value beyond the parameter's limits
        is clamped and ``message`` says so and why; an invalid one is reported there
        and ignored."""
        try:
            note = self.params.set(name, value)
        except ValueError as exc:
            self.message = str(exc)
            return
        self.message = note or ""
        if name == "dt":
            self.frame_clock.clear()

    @property
    def is_cloth(self) -> bool:
        return self.scene.builder == "cloth"

    def cloth_shape(self) -> tuple[int, int, int | None]:
        """(nx, ny, pins preset 1/2/4 or None) of a cloth scene."""
        return cloth_shape(self.scene)

    def restart_cloth(self, nx: int, ny: int, pins: int | None) -> None:
        """Rebuild a cloth scene with another size or pin preset (1, 2 or 4 pins),
        keeping the live edits."""
        if not self.is_cloth:
            self.message = "width / height / pins apply to cloth scenes"
            return
        try:
            scene = self.scene.with_overrides(cloth_overrides(nx, ny, pins))
        except SceneError as exc:
            self.message = str(exc)
            return
        saved = self.load_scene(scene, keep_live=True)
        self.message = "; ".join(filter(None, [f"restarted: {nx} x {ny} cloth", saved]))

    # -- mouse (the window's calls; the state machine is self.mouse) ------------------------
    def pick(self, x: float, y: float) -> int | None:
        """Particle under framebuffer pixel (x, y), or None (see Mouse.pick)."""
        return self.mouse.pick(x, y)

    @property
    def hovered(self) -> int | None:
        return self.options.hovered

    @property
    def dragging(self) -> bool:
        return self.mouse.dragging

    def mouse_leave(self) -> None:
        self.mouse.leave()

    def mouse_move(self, x: float, y: float) -> None:
        self.mouse.move(x, y)

    def press(self, x: float, y: float, button: int, shift: bool = False, *,
              alt: bool = False, pluck: bool = False, cut: bool = False,
              ctrl: bool = False) -> None:
        """``pluck``: Q is held (Q+click plucks); ``alt``: Alt+click toggles a probe,
        Alt+drag adds a spring; ``shift``: Shift+click pins, Shift+drag pins a group;
        ``cut``: X is held (left-drag cuts, as with the cut tool); ``ctrl``: Ctrl+drag
        moves a collider."""
        if self.edit.press(x, y, button, shift=shift, alt=alt, pluck=pluck, cut=cut):
            return
        self.mouse.press(x, y, button, shift, alt=alt, pluck=pluck, ctrl=ctrl)

    def drag(self, x: float, y: float) -> None:
        self.edit.drag(x, y)
        self.mouse.drag(x, y)

    def release(self, x: float, y: float, button: int) -> None:
        self.edit.release(x, y, button)
        self.mouse.release(x, y, button)

    def undo_cut(self) -> None:
        """Ctrl+Z: mend the springs the last cut broke."""
        self.edit.undo()

    def delete_hovered(self) -> None:
        """Delete: remove the hovered particle with its springs."""
        self.edit.delete_hovered()

    def toggle_wind(self) -> None:
        """K: the wind off (detached, settings kept) or on again."""
        self.message = self.wind.toggle(self.sim)

    def overlay_lines(self) -> list:
        """2-D lines (framebuffer px) the window draws over the scene: the cut stroke
        and the wind arrow (ropesim.render.overlay.Line)."""
        return (self.edit.overlay_lines()
                + self.wind.overlay_lines(self.sim, self.camera, self.view_size))

    def scroll(self, steps: float) -> None:
        self.mouse.scroll(steps)

    # -- text -----------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """"compiling", "running", "paused", "diverged" or "recording"."""
        if self.compiling:
            return "compiling"
        if self.error:
            return "diverged"
        if self.paused:
            return "paused"
        return "recording" if self.recorder is not None else "running"

    def window_title(self) -> str:
        """``ropesim - SCENE - t 4.2 s - 58 fps - 1.00x real time``, then the state when
        not running; after a divergence it says why and what to do."""
        clock = self.frame_clock
        base = (f"ropesim - {self.scene.name} - t {self.sim.time:.1f} s - {clock.fps:.0f} fps - "
                f"{clock.real_time_factor:.2f}x real time")
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
        self.capture.stop()


__all__ = ["EnergyHistory", "TIME_SCALE_STEP", "ViewerController"]
