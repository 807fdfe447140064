"""The viewer's wave tools (issue 16) through the controller, without a window: Q+click
plucks along the camera's up, Alt+click marks probes, the probes' ring buffer, the
first-front arrival against the wave lab's, and the panel section."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ropesim.app.controller import ViewerController
from ropesim.app.hotkeys import LEFT, MOUSE_HELP, RIGHT
from ropesim.app.wave_tools import (
    DEFAULT_STRENGTH, HISTORY_SECONDS, MAX_PROBES, SHORTEST_FRAME, STRENGTH_LIMITS,
    WaveTools, check_strength, history_capacity,
)
from ropesim.engine.waves import wave_experiment
from ropesim.io.scenes import load, scene_from_dict

VIEW = (800, 600)
FRAME = 1.0 / 60.0


def rope_scene(dim: int = 3):
    """A straight 3 m rope of 40 masses along +x, pinned at its start, no gravity."""
    origin = [-1.5, 0.0] if dim == 2 else [-1.5, 0.0, 0.0]
    return scene_from_dict({
        "builder": "rope",
        "rope": {"n": 40, "length": 3.0, "dim": dim, "pins": "start", "origin": origin,
                 "mass": 0.04, "stiffness": 2000.0, "damping": 0.5},
        "simulation": {"dt": 0.001, "gravity": [0.0, 0.0, 0.0], "substeps": 16},
    }, "test-rope")


def controller(scene=None, **kwargs) -> ViewerController:
    kwargs.setdefault("clock", lambda: 100.0)
    return ViewerController(scene or rope_scene(), VIEW, **kwargs)


def screen_of(c: ViewerController, i: int) -> tuple[float, float]:
    """Framebuffer pixel where particle i is drawn."""
    pixels, _ = c.camera.project(c.sim.positions[i:i + 1], *c.view_size)
    return float(pixels[0, 0]), float(pixels[0, 1])


def run_frames(c: ViewerController, frames: int) -> None:
    for _ in range(frames):
        c.advance(FRAME)


# --- pluck -------------------------------------------------------------------------------------
def test_q_click_changes_the_momentum_by_the_impulse_along_the_camera_up():
    c = controller()
    c.camera.update({"azimuth": 35.0, "elevation": 25.0})
    up = c.camera.basis()[1]
    assert abs(up[0]) > 0.1 and abs(up[2]) > 0.1      # a tilted camera: up is not world y
    c.waves.set_strength(0.03)
    before = c.sim.momentum().copy()
    velocity = c.sim.velocities[20].copy()
    c.press(*screen_of(c, 20), LEFT, pluck=True)
    np.testing.assert_allclose(c.sim.momentum() - before, 0.03 * up, atol=1e-12)
    np.testing.assert_allclose((c.sim.velocities[20] - velocity) * c.sim.masses[20], 0.03 * up,
                               atol=1e-12)
    assert c.waves.source == 20 and "plucked particle 20" in c.message
    assert not c.dragging and c.sim.grabbed is None      # a pluck is not a grab


def test_q_click_on_a_planar_scene_plucks_within_its_plane():
    c = controller(rope_scene(dim=2))
    c.camera.update({"azimuth": 30.0, "elevation": 20.0})   # orbited away from face-on
    before = c.sim.momentum().copy()
    c.press(*screen_of(c, 25), LEFT, pluck=True)
    change = c.sim.momentum() - before
    assert change[2] == 0.0
    assert math.isclose(np.linalg.norm(change), DEFAULT_STRENGTH, rel_tol=1e-12)
    up = c.camera.basis()[1]
    np.testing.assert_allclose(change[:2] / DEFAULT_STRENGTH, up[:2] / np.linalg.norm(up[:2]))


def test_a_pluck_while_paused_sets_the_velocity_and_the_next_step_starts_the_wave():
    c = controller(paused=True)
    x = c.sim.positions.copy()
    c.press(*screen_of(c, 30), LEFT, pluck=True)
    np.testing.assert_array_equal(c.sim.positions, x)      # nothing moves while paused
    run_frames(c, 3)
    np.testing.assert_array_equal(c.sim.positions, x)
    velocity = DEFAULT_STRENGTH / float(c.sim.masses[30]) * c.waves.direction
    np.testing.assert_allclose(c.sim.velocities[30], velocity, rtol=1e-12)
    c.single_step()
    moved = (c.sim.positions[30] - x[30]) @ c.waves.direction
    assert moved > 0.5 * float(np.linalg.norm(velocity)) * c.sim.dt


def test_q_click_on_a_pinned_particle_or_empty_space_says_why_and_changes_nothing():
    c = controller()
    before = c.sim.velocities.copy()
    target = c.camera.target.copy()
    c.press(*screen_of(c, 0), LEFT, pluck=True)             # particle 0 is pinned
    assert "pinned" in c.message
    c.press(5.0, 5.0, LEFT, pluck=True)                      # nothing there
    assert "no particle" in c.message
    c.drag(200.0, 200.0)                                     # and no orbit began
    np.testing.assert_array_equal(c.sim.velocities, before)
    np.testing.assert_array_equal(c.camera.target, target)
    assert not c.dragging and c.waves.source is None


@pytest.mark.parametrize("value", [0.0, -0.01, 2.0, math.nan, "strong", None])
def test_bad_pluck_strength_names_the_field_the_value_and_the_range(value):
    tools = WaveTools()
    with pytest.raises(ValueError, match=r"pluck strength: .*0\.0001 to 1 N\*s, got"):
        tools.set_strength(value)
    assert tools.strength == DEFAULT_STRENGTH
    assert check_strength(STRENGTH_LIMITS[1]) == STRENGTH_LIMITS[1]


# --- probes --------------------------------------------------------------------------------------
def test_alt_click_toggles_a_probe_and_neither_grabs_nor_orbits():
    c = controller()
    azimuth, elevation = c.camera.azimuth, c.camera.elevation
    x, y = screen_of(c, 12)
    c.press(x, y, LEFT, alt=True)
    assert c.waves.probes == [12] and "probe on" in c.message
    assert not c.dragging and c.sim.grabbed is None
    c.drag(x + 80.0, y + 40.0)
    c.release(x + 80.0, y + 40.0, LEFT)
    assert (c.camera.azimuth, c.camera.elevation) == (azimuth, elevation)
    c.press(*screen_of(c, 30), LEFT, alt=True)
    assert c.waves.probes == [12, 30]
    c.press(x, y, LEFT, alt=True)
    assert c.waves.probes == [30] and "probe off" in c.message
    c.press(x, y, RIGHT, alt=True)                  # Alt only changes the left button
    assert c.dragging and c.mouse.interaction.kind == "pan"


def test_probes_are_limited_and_a_new_scene_clears_them():
    c = controller()
    for i in range(1, MAX_PROBES + 1):
        c.waves.toggle_probe(c.sim, i)
    assert "at most" in c.waves.toggle_probe(c.sim, 20)
    assert c.waves.probes == list(range(1, MAX_PROBES + 1))
    c.load_scene(rope_scene(dim=2))
    assert c.waves.probes == [] and c.waves.count == 0


def test_history_capacity_holds_the_history_window_at_full_speed():
    # real-time stepping: a frame advances its duration, at least a 120 Hz frame: 3 s / (1/120 s)
    assert history_capacity(0.001) == math.ceil(HISTORY_SECONDS / SHORTEST_FRAME) + 1
    # a step longer than a frame: one step a frame at least -> 3 s / 20 ms
    assert history_capacity(0.02) == math.ceil(HISTORY_SECONDS / 0.02) + 1
    # a tiny dt no longer means one step a frame (16 steps of 1 us): still 120 Hz frames
    assert history_capacity(1e-6) == math.ceil(HISTORY_SECONDS / SHORTEST_FRAME) + 1


def test_probe_samples_accumulate_one_per_frame_and_stay_bounded():
    c = controller()
    c.waves.toggle_probe(c.sim, 10)
    c.sim.substeps = 4                        # substeps no longer size the history:
    run_frames(c, 1)                          # the window steps in real time, not by them
    capacity = c.waves.capacity
    assert capacity == history_capacity(c.sim.dt)
    times_buffer = c.waves._times
    run_frames(c, 9)
    (particle, times, _), = c.waves.series()
    assert particle == 10 and times.size == 10
    assert np.all(np.diff(times) > 0) and math.isclose(times[-1], c.sim.time)
    run_frames(c, capacity)
    (_, times, _), = c.waves.series()
    assert times.size == capacity             # bounded: the oldest samples are dropped
    assert math.isclose(times[-1], c.sim.time) and np.all(np.diff(times) > 0)
    assert c.waves._times is times_buffer     # preallocated: no new buffer per frame


def test_probe_displacement_is_measured_from_where_it_was_marked_along_the_pluck():
    c = controller()
    c.sim.positions[15] += (0.0, 0.2, 0.0)    # the probe is marked off its rest position
    c.waves.toggle_probe(c.sim, 15)
    marked = c.sim.positions[15].copy()
    c.press(*screen_of(c, 20), LEFT, pluck=True)
    run_frames(c, 20)
    (_, _, displacement), = c.waves.series()
    up = c.waves.direction
    assert math.isclose(displacement[-1], float((c.sim.positions[15] - marked) @ up),
                        rel_tol=1e-12, abs_tol=1e-15)
    assert displacement[0] == 0.0


def test_a_dt_change_keeps_the_newest_samples():
    c = controller()
    c.waves.toggle_probe(c.sim, 10)
    run_frames(c, 30)
    (_, before, _), = c.waves.series()
    c.set_parameter("dt", 0.0005)
    run_frames(c, 1)
    (_, after, _), = c.waves.series()
    assert c.waves.capacity == history_capacity(0.0005)
    np.testing.assert_array_equal(after[:-1], before)


def test_reset_clears_the_probes_history_and_the_pluck_but_keeps_the_probes():
    c = controller()
    c.waves.toggle_probe(c.sim, 10)
    c.press(*screen_of(c, 20), LEFT, pluck=True)
    run_frames(c, 15)
    c.reset()
    assert c.waves.probes == [10] and c.waves.source is None and c.waves.arrivals() == {}
    (_, times, _), = c.waves.series()
    assert times.size == 0
    run_frames(c, 2)
    (_, times, displacement), = c.waves.series()
    assert times.size == 2 and np.all(displacement == 0.0)   # nothing moves after a reset


# --- arrival -------------------------------------------------------------------------------------
def test_arrival_on_the_plucked_string_matches_the_wave_lab_within_a_frame():
    """The taut string (T = 50 N): the transverse front reaches probes 30 and 60 springs
    away at about sqrt(T/mu) = 11.2 m/s; the viewer samples once per frame (32 steps)."""
    c = controller(load("string"), paused=True)
    for probe in (60, 90):
        c.press(*screen_of(c, probe), LEFT, alt=True)
    c.press(*screen_of(c, 30), LEFT, pluck=True)
    np.testing.assert_allclose(c.waves.direction, [0.0, 1.0, 0.0])   # the string seen face-on
    assert all(math.isnan(a) for a in c.waves.arrivals().values())  # no front yet
    c.toggle_pause()
    while c.sim.time < 0.5:
        c.advance(FRAME)
    frame = c.sim.substeps * c.sim.dt
    shown = c.waves.arrivals()
    lab = wave_experiment(load("string"), 30, [60, 90], (0.0, DEFAULT_STRENGTH, 0.0), c.sim.time)
    for probe in (60, 90):
        assert abs(shown[probe] - lab.arrival[probe]) <= frame, (probe, shown, lab.arrival)
    assert 0.8 < 1.5 / shown[60] / 11.18 < 1.2                  # and it is the transverse wave


def test_a_probe_marked_after_the_pluck_has_no_arrival():
    c = controller()
    c.press(*screen_of(c, 20), LEFT, pluck=True)
    c.waves.toggle_probe(c.sim, 30)
    run_frames(c, 30)
    assert math.isnan(c.waves.arrivals()[30]) and c.waves.marked_after_pluck(30)


# --- help and panel ------------------------------------------------------------------------------
def test_the_help_overlay_documents_q_and_alt_clicks_and_q_is_no_hotkey():
    labels = " ".join(label for label, _ in MOUSE_HELP)
    assert "hold Q + click" in labels and "Alt+click" in labels
    assert controller().handle_key("q") is False     # Q is held, not pressed alone


class RecordingImgui:
    """Stands in for imgui_bundle's imgui and implot modules: records texts and plot lines;
    ``slider`` is what the strength slider returns."""

    class SliderFlags_:
        logarithmic = 0

    class AxisFlags_:
        auto_fit = 0

    class Location_:
        north = 0

    class LegendFlags_:
        horizontal = outside = 0

    def __init__(self, slider: float | None = None) -> None:
        self.slider = slider
        self.texts: list[str] = []
        self.lines: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.line_colours: dict[str, str] = {}

    def slider_float(self, label, value, low, high, fmt, flags):
        return (self.slider is not None, value if self.slider is None else self.slider)

    def text(self, text: str) -> None:
        self.texts.append(text)

    def same_line(self) -> None: ...
    def small_button(self, label: str) -> bool: return False
    def ImVec2(self, x: float, y: float) -> tuple[float, float]: return (x, y)
    def begin_plot(self, label, size) -> bool: return True
    def setup_axes(self, *args) -> None: ...
    def setup_legend(self, *args) -> None: ...
    def end_plot(self) -> None: ...

    def plot_line(self, label: str, xs: np.ndarray, ys: np.ndarray, spec: str) -> None:
        self.lines[label] = (np.array(xs), np.array(ys))
        self.line_colours[label] = spec

    def Spec(self, line_color: str) -> str:
        return line_color

    # the marker rings: a HiDPI screen (framebuffer pixels = 2 x window pixels)
    circles: list[tuple[tuple[float, float], object]]
    labels: list[str]

    def get_io(self):
        class IO:
            class display_framebuffer_scale:
                x = y = 2.0
        return IO

    def get_background_draw_list(self):
        self.circles, self.labels = [], []
        return self

    def ImVec4(self, *rgba: float) -> tuple[float, ...]: return rgba
    def get_colormap_color(self, index: int) -> str: return f"colour {index}"
    def get_color_u32(self, colour: object) -> object: return colour

    def add_circle(self, centre, radius, colour, segments, thickness) -> None:
        self.circles.append((centre, colour))

    def add_text(self, position, colour, text: str) -> None:
        self.labels.append(text)


def test_panel_section_plots_each_probe_and_lists_the_arrival_times():
    c = controller(load("string"), paused=True)
    for probe in (60, 90):
        c.waves.toggle_probe(c.sim, probe)
    c.waves.pluck_at(c.sim, 30, c.camera)
    c.toggle_pause()
    while c.sim.time < 0.2:
        c.advance(FRAME)
    ui = RecordingImgui(slider=0.005)
    c.waves.draw_panel_section(ui, ui, 280.0)
    assert sorted(ui.lines) == ["#60", "#90"]
    (_, times, displacement), _ = c.waves.series()
    np.testing.assert_array_equal(ui.lines["#60"][0], times)
    np.testing.assert_array_equal(ui.lines["#60"][1], displacement)
    # 0.2 s in, the transverse front (11.2 m/s) has passed probe 60 but not yet 90: there
    # the record so far holds only the longitudinal forerunner (31.6 m/s), and the lab's
    # rule on the same 0.2 s says the same
    lab = wave_experiment(load("string"), 30, [60, 90], (0.0, DEFAULT_STRENGTH, 0.0), c.sim.time)
    frame = c.sim.substeps * c.sim.dt
    for probe, arrival in c.waves.arrivals().items():
        assert f"  probe {probe}: front after {arrival:.4f} s" in ui.texts
        assert abs(arrival - lab.arrival[probe]) <= frame
    assert c.waves.strength == 0.005                   # the slider's edit is applied


def test_probe_rings_sit_on_the_probes_in_their_plot_colours_in_window_pixels():
    c = controller()
    for probe in (5, 12, 25):
        c.waves.toggle_probe(c.sim, probe)
    c.waves.toggle_probe(c.sim, 5)            # the others keep their colours
    c.waves.pluck_at(c.sim, 30, c.camera)
    c.advance(FRAME)
    ui = RecordingImgui()
    c.waves.draw_probe_markers(ui, ui, c.sim, c.camera, c.view_size)
    c.waves.draw_panel_section(ui, ui, 280.0)
    assert ui.labels == ["#12", "#25", "pluck"]
    assert [colour for _, colour in ui.circles[:2]] == ["colour 1", "colour 2"]
    assert ui.line_colours == {"#12": "colour 1", "#25": "colour 2"}
    for (centre, _), particle in zip(ui.circles, (12, 25, 30)):
        x, y = screen_of(c, particle)
        np.testing.assert_allclose(centre, (x / 2.0, y / 2.0))


def test_panel_builds_the_waves_section_with_imgui_without_a_window():
    from imgui_bundle import imgui, implot

    context, plot_context = imgui.create_context(), implot.create_context()
    try:
        io = imgui.get_io()
        io.set_ini_filename("")
        io.display_size = imgui.ImVec2(*VIEW)
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        c = controller()

        def vertices() -> int:
            for _ in range(3):     # imgui shows new windows from their second frame on
                c.advance(FRAME)
                io.delta_time = FRAME
                imgui.new_frame()
                imgui.begin("waves", None, imgui.WindowFlags_.always_auto_resize)
                c.waves.draw_panel_section(imgui, implot, 280.0)
                imgui.end()
                imgui.render()
            return sum(cmd.vtx_buffer.size() for cmd in imgui.get_draw_data().cmd_lists)

        without = vertices()
        for probe in (20, 30):
            c.waves.toggle_probe(c.sim, probe)
        c.waves.pluck_at(c.sim, 10, c.camera)
        assert vertices() > without + 300    # the plot's frame, ticks and lines, the list
    finally:
        implot.destroy_context(plot_context)
        imgui.destroy_context(context)
