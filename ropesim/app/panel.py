"""The viewer's imgui windows: the statistics and parameter panel, the hotkey overlay
and the "compiling kernels" notice.

:class:`Panel` reads what it shows from a :class:`PanelSource` (the
:class:`~ropesim.app.controller.ViewerController` is one) and turns every edit into a
call on it; it knows nothing of the window. Build it between ``imgui.new_frame`` and
``imgui.render`` (:meth:`ropesim.app.imgui_backend.ImguiRenderer.render_frame` does).

The layout is fixed: the panel is PANEL_WIDTH wide, its status and message lines sit
in areas of fixed height (a divergence message never pushes the sliders down), the
energy plot keeps its size with or without samples. Narrow windows collapse the panel
to a strip and hide the overlay (:mod:`ropesim.app.layout`); the overlay lets the
mouse through to the particles under it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np
from imgui_bundle import imgui, implot

from ..engine.integrators import INTEGRATORS
from ..engine.simulation import Simulation
from ..io.scenes import Scene, scene_names
from ..io.video import VideoWriter
from ..render.camera import OrbitCamera
from ..render.renderer import WIREFRAME_MODES, RenderOptions, strain_color_stops
from .collision_panel import CollisionSection
from .frame_clock import TIME_SCALES, FrameClock
from .edit_tool import EditTool
from .hotkeys import EDIT_HOTKEYS, HOTKEYS, MOUSE_HELP, TIMELINE_HOTKEYS
from .layout import HELP_WIDTH, MARGIN, PANEL_WIDTH, UiLayout, collapsed_by_width
from .parameters import SCALED, ParameterEditor
from .readouts import LiveReadouts, draw_text_lines
from .solver_panel import draw_solver_section, solver_section_shown, solver_stats_line
from .timeline_panel import EnergyBudgetPlot, TimelineSection
from .wave_tools import WaveTools
from .wind_panel import WindControls

HELP_FONT_SIZE_PX = 13.0
HELP_KEY_COLUMN = 128.0  # px, the hotkey column of the overlay
ITEM_WIDTH = 165.0   # px of a slider / combo; its label goes to the right
STATUS_LINES = 7     # lines of the fixed status area
MESSAGE_LINES = 3    # lines of the fixed message / error area (scrolls if longer)
PLOT_HEIGHT = 140.0  # px
PLOT_WINDOW = 10.0   # s of simulated time the energy plot shows (and scales to)
LEGEND_HEIGHT = 12.0  # px, the strain legend's colour bar
#: the strain colour map's stops at -1, 0, +1 times RenderOptions.strain_scale (sRGB),
#: as shaders/lines.geom draws them
RED = imgui.ImVec4(1.0, 0.45, 0.4, 1.0)
YELLOW = imgui.ImVec4(1.0, 0.85, 0.35, 1.0)
DIM = imgui.ImVec4(0.7, 0.72, 0.78, 1.0)


class PanelSource(Protocol):
    """What the panel shows and edits (the ViewerController provides all of it)."""

    sim: Simulation
    scene: Scene
    options: RenderOptions
    energy: Any                      # an EnergyHistory: len() and series()
    frame_clock: FrameClock          # fps, real_time_factor, steps_last_frame, ms_per_step
    ui_layout: UiLayout
    compiling: bool
    show_ui: bool
    panel_collapsed: bool
    params: ParameterEditor          # reference values of the scaled parameters
    error: str | None
    paused: bool
    message: str
    recorder: VideoWriter | None
    recorded_frames: int
    gravity_on: bool
    is_cloth: bool
    waves: WaveTools                 # pluck strength, probes, arrival times
    timeline: Any                    # issue 15: a Timeline (history, branch, replay)
    camera: OrbitCamera              # (the probe rings' positions on screen)
    view_size: tuple[int, int]
    edit: EditTool                   # issue 13: the tool selector, cuts and their undo
    wind: WindControls               # issue 13: wind settings and switch

    def toggle_wind(self) -> None: ...
    def parameter(self, name: str) -> float: ...
    def set_parameter(self, name: str, value: float) -> None: ...
    @property
    def time_scale(self) -> float: ...
    def set_time_scale(self, value: float) -> None: ...
    def set_panel_collapsed(self, collapsed: bool) -> None: ...
    def set_integrator(self, name: str) -> None: ...
    def select_scene(self, number: int) -> None: ...
    def toggle_gravity(self) -> None: ...
    def toggle_pause(self) -> None: ...
    def single_step(self) -> None: ...
    def reset(self) -> None: ...
    def frame_scene(self) -> None: ...
    def screenshot(self) -> Path | None: ...
    def toggle_recording(self) -> None: ...
    def cloth_shape(self) -> tuple[int, int, int | None]: ...
    def restart_cloth(self, nx: int, ny: int, pins: int | None) -> None: ...


def _color(rgb: tuple[float, float, float]) -> int:
    return imgui.color_convert_float4_to_u32(imgui.ImVec4(*rgb, 1.0))


class Panel:
    """The statistics / parameter window and the hotkey overlay of a PanelSource."""

    def __init__(self, controller: PanelSource,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.controller = controller
        #: the live numbers and plots, refreshed READOUT_HZ times a second (wall ``clock``, s)
        self.live = LiveReadouts(clock=clock)
        self._cloth_edit: tuple[int, int, int | None] | None = None
        self._scene_of_edit: Any = None
        self._collapsed_by_width: bool | None = None   # the width rule last applied
        self.timeline = TimelineSection()               # issue 15
        self.timeline_budget = EnergyBudgetPlot()
        self._collisions = CollisionSection()  # issue 11
        #: screen rectangles (min, max) of the last frame's sliders, by label (tests)
        self.item_rects: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {}

    def draw(self) -> None:
        """Build the windows (call between imgui.new_frame and imgui.render): the panel
        and the overlay while the UI is shown, the wave probes' rings and the compiling
        notice always."""
        c = self.controller
        self.live.begin_frame(self._readout_state())
        if c.show_ui:
            self._draw_panel()
            if c.ui_layout.help_shown:
                self._draw_help()
        c.waves.draw_probe_markers(imgui, implot, c.sim, c.camera, c.view_size)  # issue 16
        c.wind.draw_label(imgui, c.sim, c.camera, c.view_size)                   # issue 13
        if c.compiling:
            self._draw_notice()

    def _readout_state(self) -> tuple:
        """What refreshes the read-outs at once when it changes: the run state, the scene
        and integrator, and while paused the shown moment (a step or scrub shows at once)."""
        c = self.controller
        sim = c.sim
        shown = (sim.time, c.timeline.fraction) if c.paused else None
        return (id(sim), c.scene.name, sim.integrator, c.paused, c.compiling, c.error,
                c.recorder is None, sim.track_energy, shown)

    # -- panel ---------------------------------------------------------------------------------
    def _draw_panel(self) -> None:
        c = self.controller
        rule = collapsed_by_width(imgui.get_io().display_size.x)
        if rule != self._collapsed_by_width:   # the window crossed the width: apply once
            imgui.set_next_window_collapsed(rule, imgui.Cond_.always)
            self._collapsed_by_width = rule
        imgui.set_next_window_pos(imgui.ImVec2(MARGIN, MARGIN), imgui.Cond_.first_use_ever)
        imgui.set_next_window_size_constraints(imgui.ImVec2(PANEL_WIDTH, 0),
                                               imgui.ImVec2(PANEL_WIDTH, 1e6))
        imgui.set_next_window_bg_alpha(0.85)
        title = ("ropesim: click the arrow to open the panel" if c.panel_collapsed
                 else "ropesim (H hides)")
        expanded = imgui.begin(f"{title}###panel", None,
                               imgui.WindowFlags_.always_auto_resize)[0]
        c.set_panel_collapsed(imgui.is_window_collapsed())
        if expanded:
            imgui.push_item_width(ITEM_WIDTH)
            self._status()
            if imgui.collapsing_header("Simulation", imgui.TreeNodeFlags_.default_open):
                self._simulation_controls()
            if solver_section_shown(c.sim) and imgui.collapsing_header(  # issue 14
                    "Solver", imgui.TreeNodeFlags_.default_open):
                draw_solver_section(imgui, c.sim, self.live.get(
                    "solver", lambda: solver_stats_line(c.sim)))
            if imgui.collapsing_header("Timeline", imgui.TreeNodeFlags_.default_open):
                self.timeline.draw(self.controller, PANEL_WIDTH - 2 * MARGIN,  # issue 15
                                   self.live)
            if imgui.collapsing_header("Parameters", imgui.TreeNodeFlags_.default_open):
                self._parameters()
            if imgui.collapsing_header("Collisions"):  # issue 11
                self._collisions.draw(imgui, c.sim, self._slider)
            if self.controller.is_cloth and imgui.collapsing_header("Cloth (restart)"):
                self._cloth_controls()
            if imgui.collapsing_header("Energy", imgui.TreeNodeFlags_.default_open):
                self._energy()
                self.timeline_budget.draw(self.controller, PANEL_WIDTH - 2 * MARGIN,
                                          self.live)   # issue 15
            if imgui.collapsing_header("Waves", imgui.TreeNodeFlags_.default_open):
                self.controller.waves.draw_panel_section(imgui, implot, PANEL_WIDTH - 2 * MARGIN)
            if imgui.collapsing_header("Tools and wind", imgui.TreeNodeFlags_.default_open):
                self.controller.edit.draw_panel_section(imgui)                 # issue 13
                self.controller.wind.draw_panel_section(imgui, self.controller.toggle_wind)
            imgui.pop_item_width()
        imgui.end()

    def _status(self) -> None:
        """The status lines and the message, each in an area of fixed height."""
        c = self.controller
        line = imgui.get_text_line_height_with_spacing()
        imgui.begin_child("status", imgui.ImVec2(0, STATUS_LINES * line), 0,
                          imgui.WindowFlags_.no_scrollbar)
        draw_text_lines(self.live.get("status", self._status_lines))
        imgui.end_child()
        imgui.begin_child("message", imgui.ImVec2(0, MESSAGE_LINES * line))
        imgui.push_text_wrap_pos(0.0)
        if c.error:
            imgui.text_colored(RED, c.error)
        elif c.message:
            imgui.text_colored(DIM, c.message)
        imgui.pop_text_wrap_pos()
        imgui.end_child()

    def _status_lines(self) -> list[tuple[imgui.ImVec4 | None, str]]:
        """The status area's (colour or None, text) lines, from the controller now."""
        c = self.controller
        sim, clock = c.sim, c.frame_clock
        if c.compiling:
            lines = [(YELLOW, "compiling kernels...")]
        elif c.error:
            lines = [(RED, "diverged: paused (see below)")]
        elif c.paused:
            lines = [(YELLOW, "paused (Space resumes, Right steps)")]
        elif c.recorder is not None:
            lines = [(RED, f"REC {c.recorded_frames} frames (V stops)")]
        else:
            lines = [(DIM, "running (Space pauses)")]
        bound = "  physics-bound" if clock.budget_limited else ""
        lines += [(None, f"scene {c.scene.name}   t = {sim.time:.3f} s"),
                  (None, f"{clock.fps:.0f} fps   {clock.real_time_factor:.2f}x real time{bound}"),
                  (None, f"{clock.steps_last_frame} steps/frame   {clock.ms_per_step:.3f} ms/step"),
                  (None, f"{sim.n_particles} particles   {sim.n_springs} springs")]
        if sim.has_solver_stats:
            stats = sim.solver_stats
            fallbacks = f" ({stats.fallback_steps} fallbacks)" if stats.fallback_steps else ""
            lines.append((None, f"{sim.integrator}: {stats.iterations} it, residual "
                                f"{stats.residual:.1e}{fallbacks}"))
        else:
            lines.append((DIM, f"{sim.integrator}: no solver"))
        if len(c.energy):
            series = c.energy.series()
            lines.append((None, f"K {series['kinetic'][-1]:.4g}  P {series['potential'][-1]:.4g}  "
                                f"E {series['total'][-1]:.4g} J"))
        return lines

    def _strain_legend(self) -> None:
        """The strain colour bar with its ends' and middle's strains."""
        stops = strain_color_stops(self.controller.options.strain_scale)
        width = imgui.get_content_region_avail().x
        origin = imgui.get_cursor_screen_pos()
        draw = imgui.get_window_draw_list()
        segment = width / (len(stops) - 1)
        for k, ((_, left), (_, right)) in enumerate(zip(stops, stops[1:])):
            x0 = origin.x + k * segment
            draw.add_rect_filled_multi_color(
                imgui.ImVec2(x0, origin.y), imgui.ImVec2(x0 + segment, origin.y + LEGEND_HEIGHT),
                _color(left), _color(right), _color(right), _color(left))
        imgui.dummy(imgui.ImVec2(width, LEGEND_HEIGHT))
        low, high = stops[0][0], stops[-1][0]
        imgui.text_colored(DIM, f"{low:+.0%} compressed")
        imgui.same_line(width * 0.5 - 10)
        imgui.text_colored(DIM, "rest")
        imgui.same_line(width - 95)
        imgui.text_colored(DIM, f"stretched {high:+.0%}")

    def _simulation_controls(self) -> None:
        c = self.controller
        names = scene_names()
        current = names.index(c.scene.name) if c.scene.name in names else -1
        changed, index = imgui.combo("scene", current, names)
        if changed and index != current:
            c.select_scene(index + 1)
        integrators = list(INTEGRATORS)
        changed, index = imgui.combo("integrator", integrators.index(c.sim.integrator), integrators)
        if changed:
            c.set_integrator(integrators[index])
        changed, mode = imgui.combo("draw", list(WIREFRAME_MODES).index(c.options.mode),
                                    list(WIREFRAME_MODES))
        if changed:
            c.options.mode = WIREFRAME_MODES[mode]
        changed, value = imgui.checkbox("strain colours", c.options.strain_colors)
        if changed:
            c.options.strain_colors = value
        imgui.same_line()
        changed, value = imgui.checkbox("gravity", c.gravity_on)
        if changed:
            c.toggle_gravity()
        imgui.same_line()
        changed, value = imgui.checkbox("axes", c.options.show_axes)
        if changed:
            c.options.show_axes = value
        if c.options.strain_colors:
            self._strain_legend()
        if imgui.button("Resume" if c.paused else "Pause"):
            c.toggle_pause()
        imgui.same_line()
        if imgui.button("Step"):
            c.single_step()
        imgui.same_line()
        if imgui.button("Reset"):
            c.reset()
        imgui.same_line()
        if imgui.button("Frame"):
            c.frame_scene()
        if imgui.button("Screenshot"):
            c.screenshot()
        imgui.same_line()
        if imgui.button("Stop recording" if c.recorder is not None else "Record video"):
            c.toggle_recording()

    def _slider(self, label: str, value: float, low: float, high: float, fmt: str,
                flags: int = 0) -> tuple[bool, float]:
        """A float slider (Ctrl+click or double-click types a value, which may lie
        outside low..high: the controller clamps it and says why); its rectangle is
        kept in ``item_rects``."""
        changed, value = imgui.slider_float(label, value, low, high, fmt, flags)
        if imgui.is_item_hovered() and imgui.is_mouse_double_clicked(0):
            imgui.set_keyboard_focus_here(-1)   # imgui's sliders type on Ctrl+click only
        rect_min, rect_max = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self.item_rects[label] = ((rect_min.x, rect_min.y), (rect_max.x, rect_max.y))
        return changed, value

    def _parameters(self) -> None:
        c = self.controller
        log = imgui.SliderFlags_.logarithmic
        low, high = c.params.limits("dt")
        changed, dt = self._slider("dt [s]", c.sim.dt, low, high, "%.5f", log)
        if changed:
            c.set_parameter("dt", dt)
        changed, scale = self._slider("time scale", c.time_scale, *TIME_SCALES, "%.3gx", log)
        if changed and scale > 0:
            c.set_time_scale(scale)
        for name, (unit, _) in SCALED.items():
            if c.params.reference[name] <= 0:
                continue
            low, high = c.params.limits(name)
            changed, value = self._slider(f"{name} [{unit}]", c.parameter(name), low, high,
                                          "%.4g", log)
            if changed:
                c.set_parameter(name, value)
        low, high = c.params.limits("gravity")
        changed, gravity = self._slider("gravity y [m/s2]", c.parameter("gravity"), low, high,
                                        "%.2f")
        if changed:
            c.set_parameter("gravity", gravity)

    def _cloth_controls(self) -> None:
        c = self.controller
        if self._cloth_edit is None or self._scene_of_edit is not c.scene:
            self._cloth_edit, self._scene_of_edit = c.cloth_shape(), c.scene
        nx, ny, pins = self._cloth_edit
        _, nx = imgui.slider_int("width [particles]", nx, 2, 80)
        _, ny = imgui.slider_int("height [particles]", ny, 2, 80)
        imgui.align_text_to_frame_padding()
        imgui.text("pins")
        for count in (1, 2, 4):
            imgui.same_line()
            if imgui.radio_button(str(count), pins == count):
                pins = count
        self._cloth_edit = (nx, ny, pins)
        if imgui.button("Restart with this cloth"):
            c.restart_cloth(nx, ny, pins)
            self._scene_of_edit = c.scene

    def _energy(self) -> None:
        """Kinetic, potential and total energy over the last PLOT_WINDOW s, scaled to
        them (a blow-up leaves the scale once it is older than that)."""
        recent = self.live.get("energy", self._recent_energy)
        size = imgui.ImVec2(PANEL_WIDTH - 2 * MARGIN, PLOT_HEIGHT)
        if recent is None:
            imgui.text("(no samples yet)")
            imgui.dummy(imgui.ImVec2(size.x, size.y - imgui.get_text_line_height_with_spacing()))
            return
        flags = implot.AxisFlags_.auto_fit
        if implot.begin_plot("##energy", size):
            implot.setup_axes("t [s]", "E [J]", flags, flags)
            implot.setup_legend(implot.Location_.north,
                                implot.LegendFlags_.horizontal | implot.LegendFlags_.outside)
            for name in ("kinetic", "potential", "total"):
                implot.plot_line(name, recent["time"], recent[name])
            implot.end_plot()

    def _recent_energy(self) -> dict[str, np.ndarray] | None:
        """Copies of the energy samples of the last PLOT_WINDOW s (s, J), None under two."""
        series = self.controller.energy.series()
        times = series["time"]
        recent = times >= times[-1] - PLOT_WINDOW if len(times) else times.astype(bool)
        if recent.sum() < 2:
            return None
        return {name: series[name][recent] for name in ("time", "kinetic", "potential", "total")}

    # -- help overlay ---------------------------------------------------------------------------------
    def _draw_help(self) -> None:
        """The hotkey table at the top right; translucent, and the mouse passes through
        it to the scene (it has nothing to click)."""
        width = imgui.get_io().display_size.x
        imgui.set_next_window_pos(imgui.ImVec2(width - MARGIN, MARGIN), imgui.Cond_.always,
                                  imgui.ImVec2(1.0, 0.0))
        imgui.set_next_window_size(imgui.ImVec2(HELP_WIDTH, 0), imgui.Cond_.always)
        imgui.set_next_window_bg_alpha(0.6)
        flags = (imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_focus_on_appearing
                 | imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_inputs)
        imgui.push_font(None, HELP_FONT_SIZE_PX)
        if imgui.begin("Hotkeys (H hides; clicks pass through)", None, flags)[0]:
            if imgui.begin_table("hotkeys", 2):
                imgui.table_setup_column("key", imgui.TableColumnFlags_.width_fixed,
                                         HELP_KEY_COLUMN)
                imgui.table_setup_column("action", imgui.TableColumnFlags_.width_stretch)
                keys = HOTKEYS + EDIT_HOTKEYS + TIMELINE_HOTKEYS
                for label, text in [(h.label, h.help) for h in keys] + list(MOUSE_HELP):
                    imgui.table_next_row()
                    imgui.table_next_column()
                    imgui.text_colored(YELLOW, label)
                    imgui.table_next_column()
                    imgui.text_wrapped(text)
                imgui.end_table()
        imgui.end()
        imgui.pop_font()

    def _draw_notice(self) -> None:
        """"compiling kernels..." in the middle of the window (numba is compiling or
        loading the kernels of a new scene or integrator; the window freezes meanwhile)."""
        size = imgui.get_io().display_size
        imgui.set_next_window_pos(imgui.ImVec2(size.x / 2, size.y / 2), imgui.Cond_.always,
                                  imgui.ImVec2(0.5, 0.5))
        flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize
                 | imgui.WindowFlags_.no_inputs | imgui.WindowFlags_.no_saved_settings)
        imgui.set_next_window_bg_alpha(0.85)
        if imgui.begin("##compiling", None, flags)[0]:
            imgui.text_colored(YELLOW, "compiling kernels...")
            imgui.text_colored(DIM, "(numba, the first step of a new scene or integrator)")
        imgui.end()


__all__ = ["Panel", "PanelSource"]
