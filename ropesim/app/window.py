"""The viewer's window: a moderngl-window 3.x ``WindowConfig`` around the controller.

:class:`RopesimWindow` is thin: it turns window events into
:class:`~ropesim.app.controller.ViewerController` calls (mouse positions converted to
framebuffer pixels, key codes to key names), draws with
:class:`~ropesim.render.renderer.Renderer` and the imgui :class:`~ropesim.app.panel.Panel`,
and applies what the controller asks for (title, fullscreen, quit). moderngl-window
calls the 3.x callback names (``on_render``, ``on_key_event``, ...); 2.x names would be
silently ignored. Open it with :func:`ropesim.app.viewer.create_viewer`.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

import moderngl_window
import numpy as np

from ..render.camera import parse_camera_arg
from ..render.msaa import MultisampleLayer
from ..render.offscreen import clamp_samples
from ..render.overlay import Overlay
from ..render.renderer import Renderer
from .arguments import add_scene_arguments, add_timeline_arguments, number
from .capture import RECORD_SIZE
from .controller import ViewerController
from .frame_clock import MIN_BUDGET_FRACTION, SampleGovernor
from .hotkeys import chord_name, key_names
from .imgui_backend import ImguiRenderer
from .mouse import PICK_RADIUS_PX
from .panel import Panel
from .replay import viewer_scene


SCENE_SAMPLES = 4   # MSAA samples of the scene by default


def add_viewer_arguments(parser: argparse.ArgumentParser) -> None:
    """The viewer's arguments, added to moderngl-window's parser (which rejects unknown
    flags): the scene and its overrides as for every command, plus the viewer's own.

    moderngl-window's ``--samples`` is taken over: it sets the MSAA samples of the
    scene (``scene_samples``): its objects are drawn into a multisampled layer of their
    own over their rectangle on screen and blended over the floor in the window
    (render/msaa.py), whose framebuffer has no samples (the floor and the panel are
    drawn there, so they cost a software rasteriser one sample a pixel, not four).
    Without ``--samples`` the scene has SCENE_SAMPLES while the frame budget allows them
    (:class:`~ropesim.app.frame_clock.SampleGovernor`); with it, exactly that many."""
    for action in parser._actions:
        if "--samples" in action.option_strings:
            action.dest = "scene_samples"
            action.help = (f"MSAA samples of the scene, fixed (default: {SCENE_SAMPLES} while "
                           "frames keep 30 fps, else none; 0: off, where multisampling is "
                           "unsupported)")
    parser.set_defaults(samples=0, scene_samples=None)
    add_scene_arguments(parser, optional_scene=True)
    parser.add_argument("--substeps", type=number(int),
                        help="at most N steps per frame (slow motion when N * dt is shorter "
                             "than a frame); default: as many as real time needs, within "
                             "the frame's time budget")
    parser.add_argument("--camera", metavar="AZ,EL,DIST[,TX,TY,TZ]",
                        help="initial camera: degrees, m")
    parser.add_argument("--paused", action="store_true", help="start paused")
    parser.add_argument("--no-panel", action="store_true", help="start with the panel hidden")
    parser.add_argument("--output-dir", default=".", help="folder for screenshots and videos")
    add_timeline_arguments(parser)   # issue 15: --replay, --history-mb


def governed_draw_s(frame_time: float, physics_s: float) -> float:
    """What the MSAA governor weighs for the previous frame, s: its draw (its duration
    less its physics) with the share of a frame the physics keeps however slow the draw
    (MIN_BUDGET_FRACTION), so MSAA stays on only while draw and physics together keep
    the frame clock's target, MIN_FPS * FPS_MARGIN."""
    return max(frame_time - physics_s, 0.0) / (1.0 - MIN_BUDGET_FRACTION)


class RopesimWindow(moderngl_window.WindowConfig):
    """The ropesim window: events -> ViewerController, drawing via Renderer + Panel.

    moderngl-window reads the class attributes below when it creates the window;
    ``argv`` (the parsed command line) is set on the class by
    ``moderngl_window.create_window_config_instance`` before ``__init__`` runs.
    """

    #: OpenGL version the renderer needs (core profile)
    gl_version = (3, 3)
    #: initial title; the controller's window_title() replaces it from the first frame
    title = "ropesim"
    #: initial window size, px (``--size`` overrides it)
    window_size = (1280, 720)
    #: None: the viewport follows the window, any aspect ratio
    aspect_ratio = None
    resizable = True
    vsync = True
    #: MSAA samples of the window's own framebuffer: none, the scene has its own target
    #: (``--samples`` sets the scene's, see add_viewer_arguments)
    samples = 0
    #: None: the renderer clears the frame itself
    clear_color = None
    log_level = logging.WARNING

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        add_viewer_arguments(parser)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        args = self.argv
        self.wnd.exit_key = None          # Esc and F11 go through our hotkey table
        self.wnd.fullscreen_key = None
        self.key_names = key_names(self.wnd.keys)
        camera = parse_camera_arg(args.camera) if args.camera else None
        (w, _), (bw, _) = self.wnd.size, self.wnd.buffer_size
        scene, trajectory = viewer_scene(args)
        self.controller = ViewerController(
            scene, self.wnd.buffer_size, ui_scale=bw / max(w, 1),
            camera=camera, paused=args.paused, output_dir=args.output_dir,
            frame_source=self.capture_frame, history_mb=args.history_mb, replay=trajectory,
        )
        self.controller.show_ui = not args.no_panel
        if args.substeps is not None:   # validated with the scene (1..MAX_SUBSTEPS)
            self.controller.frame_clock.max_steps_per_frame = int(args.substeps)
        self.renderer = Renderer(self.ctx, self.controller.sim)
        self.controller.mouse.particle_radius = self.renderer.particle_radius
        self.overlay = Overlay(self.ctx)      # issue 13: the cut stroke, the wind arrow
        self.imgui = ImguiRenderer(self.wnd)
        self.panel = Panel(self.controller)
        self._title = ""
        fixed = args.scene_samples is not None
        self.scene_samples = clamp_samples(self.ctx, int(args.scene_samples) if fixed
                                           else SCENE_SAMPLES)
        # the samples follow the frame budget unless --samples fixed them
        self.sample_governor = None if fixed else SampleGovernor(self.scene_samples)
        self._layer: MultisampleLayer | None = None
        self._cursor: tuple[float, float] | None = None  # last cursor, framebuffer px
        self._fullscreen = bool(self.wnd.fullscreen)
        self._update_pixel_scale()

    # -- helpers -------------------------------------------------------------------
    def _update_pixel_scale(self) -> None:
        """Window -> framebuffer pixel factors, per axis (HiDPI, after resizes)."""
        (w, h), (bw, bh) = self.wnd.size, self.wnd.buffer_size
        self._scale = (bw / max(w, 1), bh / max(h, 1))
        self.controller.set_view_size(bw, bh, self._scale[0])
        self.controller.mouse.pick_radius_px = PICK_RADIUS_PX * self._scale[0]

    def to_pixels(self, x: float, y: float) -> tuple[float, float]:
        """Window event coordinates -> framebuffer pixel centre (top-left origin).

        pyglet reports y as ``height - y_x11`` (one more than the X11 row)."""
        row_offset = -0.5 if self.wnd.name == "pyglet" else 0.5
        return (x + 0.5) * self._scale[0], (y + row_offset) * self._scale[1]

    def _ui_wants_mouse(self) -> bool:
        return self.controller.show_ui and self.imgui.io.want_capture_mouse

    def _ui_wants_keyboard(self) -> bool:
        return self.controller.show_ui and self.imgui.input.wants_keyboard

    def _sync_renderer(self) -> None:
        """Rebuild the GL buffers after the controller opened another scene."""
        c = self.controller
        if self.renderer.sim is not c.sim:
            self.renderer.rebuild(c.sim)
            c.mouse.particle_radius = self.renderer.particle_radius

    def capture_frame(self) -> np.ndarray:
        """The current view rendered offscreen at RECORD_SIZE, (h, w, 3) uint8."""
        c = self.controller
        self._sync_renderer()
        grabber = self.renderer.frame_grabber(*RECORD_SIZE)
        return grabber.grab(self.renderer, c.camera, c.options)

    # -- moderngl-window 3.x callbacks -------------------------------------------------
    def _scene_layer(self) -> MultisampleLayer | None:
        """The multisampled layer the scene's objects are drawn into (render/msaa.py;
        re-created when the samples change), or None without MSAA."""
        layer = self._layer
        if layer is not None and layer.samples != self.scene_samples:
            layer.release()
            layer = self._layer = None
        if layer is None and self.scene_samples:
            layer = self._layer = MultisampleLayer(self.ctx, self.scene_samples)
        return layer

    def _draw(self, frame_time: float) -> None:
        """The scene (its objects multisampled, blended over the floor), then the panel
        (and notices) over it, into the window."""
        c = self.controller
        width, height = self.wnd.buffer_size
        self.wnd.use()
        self.renderer.draw(c.camera, width, height, c.options, multisample=self._scene_layer())
        self.overlay.draw(c.overlay_lines(), width, height)
        # the panel builds an empty frame while hidden: imgui's input queue stays current
        self.imgui.render_frame(self._build_panel, frame_time)

    def _build_panel(self) -> bool:
        """The panel's widgets; True when it refreshed its read-outs and the next frame
        comes before the next refresh (its draw lists then stay the same: imgui_backend
        caches them at once)."""
        self.panel.draw()
        return self.panel.live.kept_next_frame

    def _warm_up(self, frame_time: float) -> None:
        """A new scene or integrator: show "compiling kernels" on screen, then run its
        first step (numba compiles or loads the kernels; the window is frozen meanwhile)."""
        c = self.controller
        c.compiling = True
        self.wnd.title = self._title = f"ropesim - {c.scene.name} - compiling kernels..."
        try:
            self.imgui.layout_frame(self.panel.draw, frame_time)   # visible in the next one
            self._draw(frame_time)
            self.wnd.swap_buffers()
        finally:
            c.compiling = False
        c.warm_up()

    def on_render(self, time: float, frame_time: float) -> None:
        c = self.controller
        width, height = self.wnd.buffer_size
        visible = width >= 1 and height >= 1   # not minimised
        if visible and c.needs_warm_up:
            self._sync_renderer()
            self._warm_up(frame_time)
            return   # this frame is drawn; the next one's time (the compile) is skipped
        if self.sample_governor is not None:
            draw_s = governed_draw_s(frame_time, c.frame_clock.last_physics_s)
            self.scene_samples = self.sample_governor.update(draw_s)
        c.advance(frame_time)
        self._sync_renderer()
        self._hover_at_cursor()
        if not visible:
            return
        self._draw(frame_time)
        title = c.window_title()
        if title != self._title:
            self.wnd.title = self._title = title
        if c.fullscreen_requested != self._fullscreen:
            self._fullscreen = c.fullscreen_requested
            self.wnd.fullscreen = self._fullscreen
            self._keep_focus()
        if c.quit_requested:
            self.wnd.close()

    def _keep_focus(self) -> None:
        """After a fullscreen switch some window managers leave the window unfocused:
        ask for the focus again (pyglet: activate, glfw: focus_window)."""
        native = getattr(self.wnd, "_window", None)
        activate = getattr(native, "activate", None)
        if callable(activate):
            activate()
            return
        try:
            import glfw
        except ImportError:
            return
        if self.wnd.name == "glfw" and native is not None:
            glfw.focus_window(native)

    def on_resize(self, width: int, height: int) -> None:
        self.imgui.resize(width, height)
        self._update_pixel_scale()

    def on_key_event(self, key: Any, action: Any, modifiers: Any) -> None:
        self.imgui.input.key_event(key, action, modifiers)
        if action != self.wnd.keys.ACTION_PRESS or self._ui_wants_keyboard():
            return
        name = self.key_names.get(key)
        if name is not None:
            self.controller.handle_key(chord_name(name, bool(modifiers.ctrl)))

    def on_unicode_char_entered(self, char: str) -> None:
        self.imgui.input.unicode_char_entered(char)

    def on_mouse_position_event(self, x: int, y: int, dx: int, dy: int) -> None:
        self.imgui.input.mouse_position_event(x, y, dx, dy)
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
        self.imgui.input.mouse_press_event(x, y, button)
        if self._ui_wants_mouse():
            return
        shift = bool(self.wnd.modifiers.shift)
        alt, pluck = bool(self.wnd.modifiers.alt), self.wnd.is_key_pressed(self.wnd.keys.Q)
        cut = self.wnd.is_key_pressed(self.wnd.keys.X)
        ctrl = bool(self.wnd.modifiers.ctrl)
        self.controller.press(*self.to_pixels(x, y), button, shift=shift, alt=alt, pluck=pluck,
                              cut=cut, ctrl=ctrl)

    def on_mouse_drag_event(self, x: int, y: int, dx: int, dy: int) -> None:
        self.imgui.input.mouse_drag_event(x, y, dx, dy)
        self.controller.drag(*self.to_pixels(x, y))   # ignored unless a drag began here

    def on_mouse_release_event(self, x: int, y: int, button: int) -> None:
        self.imgui.input.mouse_release_event(x, y, button)
        self.controller.release(*self.to_pixels(x, y), button)  # never leave a grab stuck

    def on_mouse_scroll_event(self, x_offset: float, y_offset: float) -> None:
        self.imgui.input.mouse_scroll_event(x_offset, y_offset)
        if not self._ui_wants_mouse():
            self.controller.scroll(y_offset)

    def on_close(self) -> None:
        self.controller.close()
        if self._layer is not None:
            self._layer.release()
            self._layer = None


__all__ = ["RopesimWindow", "add_viewer_arguments", "governed_draw_s"]
