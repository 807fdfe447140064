"""The viewer's imgui windows: the statistics and parameter panel and the hotkey overlay.

:class:`Panel` reads what it shows from a :class:`PanelSource` (the
:class:`~ropesim.app.controller.ViewerController` is one) and turns every edit into a
call on it; it knows nothing of the window. Build it between ``imgui.new_frame`` and
``imgui.render`` (:meth:`ropesim.app.imgui_backend.ImguiRenderer.render_frame` does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from imgui_bundle import imgui, implot

from ..engine.integrators import INTEGRATORS
from ..engine.simulation import Simulation
from ..io.scenes import Scene, scene_names
from ..io.video import VideoWriter
from ..render.camera import OrbitCamera
from ..render.renderer import WIREFRAME_MODES, RenderOptions
from .frame_clock import FrameClock
from .hotkeys import HOTKEYS, MOUSE_HELP
from .parameters import SCALED, ParameterEditor
from .wave_tools import WaveTools

HELP_FONT_SIZE_PX = 13.0
PANEL_WIDTH = 300.0
ITEM_WIDTH = 165.0   # px of a slider / combo; its label goes to the right
MARGIN = 10.0
RED = imgui.ImVec4(1.0, 0.45, 0.4, 1.0)
YELLOW = imgui.ImVec4(1.0, 0.85, 0.35, 1.0)
DIM = imgui.ImVec4(0.7, 0.72, 0.78, 1.0)


class PanelSource(Protocol):
    """What the panel shows and edits (the ViewerController provides all of it)."""

    sim: Simulation
    scene: Scene
    options: RenderOptions
    energy: Any                      # an EnergyHistory: len() and series()
    frame_clock: FrameClock          # fps, steps_last_frame, ms_per_step
    params: ParameterEditor          # reference values of the scaled parameters
    error: str | None
    paused: bool
    message: str
    recorder: VideoWriter | None
    recorded_frames: int
    gravity_on: bool
    is_cloth: bool
    waves: WaveTools                 # pluck strength, probes, arrival times
    camera: OrbitCamera              # (the probe rings' positions on screen)
    view_size: tuple[int, int]

    def parameter(self, name: str) -> float: ...
    def set_parameter(self, name: str, value: float) -> None: ...
    def set_substeps(self, value: int) -> None: ...
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


class Panel:
    """The statistics / parameter window and the hotkey overlay of a PanelSource."""

    def __init__(self, controller: PanelSource) -> None:
        self.controller = controller
        self._cloth_edit: tuple[int, int, int | None] | None = None
        self._scene_of_edit: Any = None

    def draw(self) -> None:
        """Build both windows (call between imgui.new_frame and imgui.render)."""
        self._draw_panel()
        self._draw_help()
        c = self.controller   # issue 16: probe and pluck rings in the view
        c.waves.draw_probe_markers(imgui, implot, c.sim, c.camera, c.view_size)

    # -- panel ---------------------------------------------------------------------------------
    def _draw_panel(self) -> None:
        imgui.set_next_window_pos(imgui.ImVec2(MARGIN, MARGIN), imgui.Cond_.first_use_ever)
        imgui.set_next_window_size(imgui.ImVec2(PANEL_WIDTH, 0), imgui.Cond_.first_use_ever)
        imgui.set_next_window_bg_alpha(0.8)
        if imgui.begin("ropesim", None, imgui.WindowFlags_.always_auto_resize)[0]:
            imgui.push_item_width(ITEM_WIDTH)
            self._status()
            if imgui.collapsing_header("Simulation", imgui.TreeNodeFlags_.default_open):
                self._simulation_controls()
            if imgui.collapsing_header("Parameters", imgui.TreeNodeFlags_.default_open):
                self._parameters()
            if self.controller.is_cloth and imgui.collapsing_header("Cloth (restart)"):
                self._cloth_controls()
            if imgui.collapsing_header("Energy", imgui.TreeNodeFlags_.default_open):
                self._energy()
            if imgui.collapsing_header("Waves", imgui.TreeNodeFlags_.default_open):
                self.controller.waves.draw_panel_section(imgui, implot, PANEL_WIDTH - 2 * MARGIN)
            imgui.pop_item_width()
        imgui.end()

    def _status(self) -> None:
        c = self.controller
        sim = c.sim
        if c.error:
            imgui.push_text_wrap_pos(PANEL_WIDTH - MARGIN)
            imgui.text_colored(RED, c.error)
            imgui.pop_text_wrap_pos()
        elif c.paused:
            imgui.text_colored(YELLOW, "paused (Space resumes, Right steps)")
        elif c.recorder is not None:
            imgui.text_colored(RED, f"REC {c.recorded_frames} frames (V stops)")
        imgui.text(f"scene {c.scene.name}   t = {sim.time:.3f} s")
        clock = c.frame_clock
        imgui.text(f"{clock.fps:.0f} fps   {clock.steps_last_frame} steps/frame   "
                   f"{clock.ms_per_step:.3f} ms/step")
        imgui.text(f"{sim.n_particles} particles   {sim.n_springs} springs")
        if sim.has_solver_stats:
            stats = sim.solver_stats
            imgui.text(f"CG {stats.iterations} iterations, residual {stats.residual:.1e}")
            if stats.fallback_steps:
                imgui.same_line()
                imgui.text_colored(YELLOW, f"({stats.fallback_steps} fallbacks)")
        series = c.energy.series()
        if len(c.energy):
            imgui.text(f"energy K {series['kinetic'][-1]:.4g}  P {series['potential'][-1]:.4g}  "
                       f"E {series['total'][-1]:.4g} J")
        if c.message:
            imgui.push_text_wrap_pos(PANEL_WIDTH - MARGIN)
            imgui.text_colored(DIM, c.message)
            imgui.pop_text_wrap_pos()

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

    def _parameters(self) -> None:
        c = self.controller
        log = imgui.SliderFlags_.logarithmic
        changed, dt = imgui.slider_float("dt [s]", c.sim.dt, 1e-5, 0.02, "%.5f", log)
        if changed and dt > 0:
            c.set_parameter("dt", dt)
        changed, substeps = imgui.slider_int("substeps/frame", c.sim.substeps, 1, 256)
        if changed:
            c.set_substeps(substeps)
        for name, (unit, _) in SCALED.items():
            reference = c.params.reference[name]
            if reference <= 0:
                continue
            value = c.parameter(name)
            low = 0.0 if name == "damping" else reference / 100.0
            changed, value = imgui.slider_float(f"{name} [{unit}]", value, low, reference * 100.0,
                                                "%.4g", log)
            if changed and (value > 0 or name == "damping"):
                c.set_parameter(name, value)
        changed, gravity = imgui.slider_float("gravity y [m/s2]", c.parameter("gravity"),
                                              -30.0, 30.0, "%.2f")
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
        series = self.controller.energy.series()
        if len(series["time"]) < 2:
            imgui.text("(no samples yet)")
            return
        flags = implot.AxisFlags_.auto_fit
        if implot.begin_plot("##energy", imgui.ImVec2(PANEL_WIDTH - 2 * MARGIN, 150)):
            implot.setup_axes("t [s]", "E [J]", flags, flags)
            implot.setup_legend(implot.Location_.north,
                                implot.LegendFlags_.horizontal | implot.LegendFlags_.outside)
            for name in ("kinetic", "potential", "total"):
                implot.plot_line(name, series["time"], series[name])
            implot.end_plot()

    # -- help overlay ---------------------------------------------------------------------------------
    def _draw_help(self) -> None:
        width = imgui.get_io().display_size.x
        imgui.set_next_window_pos(imgui.ImVec2(width - MARGIN, MARGIN), imgui.Cond_.always,
                                  imgui.ImVec2(1.0, 0.0))
        imgui.set_next_window_bg_alpha(0.6)
        flags = (imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_focus_on_appearing
                 | imgui.WindowFlags_.no_move)
        imgui.push_font(None, HELP_FONT_SIZE_PX)
        if imgui.begin("Hotkeys (H hides)", None, flags)[0]:
            if imgui.begin_table("hotkeys", 2):
                for label, text in [(h.label, h.help) for h in HOTKEYS] + list(MOUSE_HELP):
                    imgui.table_next_row()
                    imgui.table_next_column()
                    imgui.text_colored(YELLOW, label)
                    imgui.table_next_column()
                    imgui.text(text)
                imgui.end_table()
        imgui.end()
        imgui.pop_font()


__all__ = ["Panel", "PanelSource"]
