"""The panel's input path without a window: events go through ImguiInput into imgui,
the Panel builds its widgets from a ViewerController, edits land on the controller.
Ctrl+click and double-click text entry on a slider, typed values clamped with the
reason in the panel, the keyboard kept from the hotkeys while a field is edited, the
strip layout of narrow windows."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from imgui_bundle import imgui, implot

from ropesim.app.controller import ViewerController
from ropesim.app.imgui_backend import ImguiInput
from ropesim.app.layout import COLLAPSE_BELOW_PX, MARGIN
from ropesim.app.panel import Panel
from ropesim.render.renderer import strain_color_stops
from ropesim.app.parameters import SCALE_LIMITS
from ropesim.io.scenes import load

FRAME = 1.0 / 60.0
STIFFNESS = "stiffness [N/m]"


class Keys:
    """The shape of a moderngl-window ``wnd.keys`` namespace."""

    ACTION_PRESS, ACTION_RELEASE = "press", "release"
    LEFT_CTRL, ENTER, ESCAPE = 1001, 1002, 1003
    NUMBER_1 = 49


class Harness:
    """An imgui context, a Panel over a cloth controller and an ImguiInput feeding it."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.context, self.plot_context = imgui.create_context(), implot.create_context()
        self.io = imgui.get_io()
        self.io.set_ini_filename("")
        self.io.display_size = imgui.ImVec2(*size)
        self.io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        self.controller = ViewerController(load("cloth"), size)
        self.panel = Panel(self.controller)
        self.modifiers = SimpleNamespace(shift=False, ctrl=False, alt=False)
        self.input = ImguiInput(self.io, Keys, lambda: self.modifiers)
        self.frame(3)

    def frame(self, count: int = 1) -> None:
        for _ in range(count):
            self.io.delta_time = FRAME
            imgui.new_frame()
            self.panel.draw()
            imgui.render()

    def slider_point(self, label: str) -> tuple[float, float]:
        (x0, y0), (_, y1) = self.panel.item_rects[label]
        return x0 + 30.0, 0.5 * (y0 + y1)

    def click(self, xy: tuple[float, float]) -> None:
        self.input.mouse_press_event(*xy, 1)
        self.frame()
        self.input.mouse_release_event(*xy, 1)
        self.frame()

    def type_text(self, text: str) -> None:
        for char in text:
            self.input.unicode_char_entered(char)
        self.frame()
        self.input.key_event(Keys.ENTER, Keys.ACTION_PRESS, self.modifiers)
        self.frame()
        self.input.key_event(Keys.ENTER, Keys.ACTION_RELEASE, self.modifiers)
        self.frame(2)

    def close(self) -> None:
        implot.destroy_context(self.plot_context)
        imgui.destroy_context(self.context)


@pytest.fixture
def wide():
    harness = Harness((1280, 720))
    yield harness
    harness.close()


def test_ctrl_click_opens_the_text_field_on_the_first_click_and_a_typed_value_is_clamped(wide):
    c = wide.controller
    limit = SCALE_LIMITS[1] * c.params.reference["stiffness"]
    xy = wide.slider_point(STIFFNESS)
    wide.input.mouse_position_event(*xy)
    wide.frame()
    # X11 reports a key's modifiers as they were before it: the Ctrl press says ctrl off
    wide.input.key_event(Keys.LEFT_CTRL, Keys.ACTION_PRESS, wide.modifiers)
    wide.modifiers.ctrl = True        # the window's state once the press is in
    wide.click(xy)
    wide.input.key_event(Keys.LEFT_CTRL, Keys.ACTION_RELEASE, wide.modifiers)
    wide.modifiers.ctrl = False
    wide.frame()
    assert wide.io.want_text_input and wide.input.wants_keyboard   # the hotkeys are off
    wide.type_text("1e12")
    assert c.parameter("stiffness") == pytest.approx(limit)
    assert "1e+12" in c.message and "highest" in c.message and "0.01 to 100" in c.message
    assert not wide.input.wants_keyboard and c.scene.name == "cloth"


def test_double_click_opens_the_text_field(wide):
    xy = wide.slider_point("dt [s]")
    wide.input.mouse_position_event(*xy)
    wide.frame()
    wide.click(xy)
    wide.click(xy)
    wide.frame()
    assert wide.io.want_text_input
    wide.type_text("0.5")
    c = wide.controller
    assert c.sim.dt == pytest.approx(0.02) and "dt" in c.message and "0.02" in c.message


def test_a_narrow_window_collapses_the_panel_to_a_strip_and_hides_the_overlay():
    harness = Harness((900, 560))
    try:
        assert 900 < COLLAPSE_BELOW_PX
        c = harness.controller
        assert c.panel_collapsed and not c.ui_layout.help_shown
        left, top, right, bottom = c.free_viewport()
        assert (left, right, bottom) == (0.0, 1.0, 1.0) and 0 < top < 0.1
    finally:
        harness.close()


def test_a_wide_window_shows_the_panel_and_the_overlay(wide):
    c = wide.controller
    assert not c.panel_collapsed and c.ui_layout.help_shown
    left, top, right, bottom = c.free_viewport()
    assert 0.2 < left < 0.3 and 0.7 < right < 0.8 and (top, bottom) == (0.0, 1.0)


def test_the_strain_legend_is_drawn_with_strain_colours(wide):
    c = wide.controller
    wide.frame()
    before = sum(cmd.vtx_buffer.size() for cmd in imgui.get_draw_data().cmd_lists)
    c.handle_key("s")
    wide.frame(2)
    after = sum(cmd.vtx_buffer.size() for cmd in imgui.get_draw_data().cmd_lists)
    assert after > before
    stops = strain_color_stops(c.options.strain_scale)
    assert [s for s, _ in stops] == [-c.options.strain_scale, 0.0, c.options.strain_scale]
    blue, red = stops[0][1], stops[-1][1]
    assert blue[2] > blue[0] and red[0] > red[2]


class _OffscreenWindow:
    """The parts of a moderngl-window window that ImguiRenderer reads, over an EGL
    context drawing into an offscreen framebuffer."""

    def __init__(self, size: tuple[int, int]) -> None:
        import moderngl

        self.ctx = moderngl.create_standalone_context(backend="egl")
        self.size = self.buffer_size = size
        self.keys, self.modifiers = Keys, SimpleNamespace(shift=False, ctrl=False, alt=False)
        self.fbo = self.ctx.simple_framebuffer(size, components=4)

    def draw(self, renderer, build) -> np.ndarray:
        """One frame over a green background: RGBA levels, rows from the top."""
        self.fbo.use()
        self.fbo.clear(0.2, 0.5, 0.3, 1.0)
        renderer.render_frame(build, FRAME)
        return np.frombuffer(self.fbo.read(components=4), np.uint8).reshape(
            self.size[1], self.size[0], 4)[::-1].astype(int)


def test_imgui_cached_lists_draw_the_same_pixels_and_hover_redraws_at_once():
    """A draw list unchanged since the last frame is drawn once into a premultiplied
    texture and composited: the same pixels as drawing it directly (within 8-bit
    rounding of the premultiplication), and a hover changes the picture in the next frame."""
    from ropesim.app.imgui_backend import ImguiRenderer

    wnd = _OffscreenWindow((1280, 720))   # wide enough for the full panel
    renderer = ImguiRenderer(wnd)
    try:
        panel = Panel(ViewerController(load("cloth"), wnd.size))
        for _ in range(4):   # windows sized and shown, then each list unchanged twice
            wnd.draw(renderer, panel.draw)
        cached_frame = wnd.draw(renderer, panel.draw)
        composited = [c for c in renderer._cached if c.key is not None and c.cached_key is c.key]
        assert composited, "no draw list was composited from its cache"
        for cached in renderer._cached:
            cached.key = None   # next frame: every list drawn directly
        direct_frame = wnd.draw(renderer, panel.draw)
        assert all(c.cached_key is not c.key for c in renderer._cached)
        background = np.array([0.2, 0.5, 0.3, 1.0]) * 255
        assert (np.abs(direct_frame - background).max(axis=2) > 8).mean() > 0.05   # a panel drawn
        difference = np.abs(cached_frame - direct_frame)[..., :3]
        assert difference.max() <= 2 and difference.mean() < 0.1

        wnd.draw(renderer, panel.draw)   # cached again
        before = wnd.draw(renderer, panel.draw)
        (x0, y0), (x1, y1) = panel.item_rects[STIFFNESS]
        renderer.input.mouse_position_event(x0 + 30.0, 0.5 * (y0 + y1))
        hovered = wnd.draw(renderer, panel.draw)
        rows, cols = slice(int(y0) + 2, int(y1) - 2), slice(int(x0) + 2, int(x1) - 2)
        assert np.abs(hovered[rows, cols] - before[rows, cols]).max() > 10
    finally:
        renderer.release()
        wnd.ctx.release()


def test_running_panel_is_composited_between_readout_refreshes_and_a_click_shows_at_once():
    """While the cloth runs, the panel's numbers and plots refresh READOUT_HZ times a
    second of wall time: between refreshes every draw list is the same as in the frame
    before and is composited from its cache; a refresh shows the new simulated time;
    a click on Pause shows "paused" in the status area in the very next frame."""
    from ropesim.app.imgui_backend import ImguiRenderer
    from ropesim.app.readouts import READOUT_HZ

    wnd = _OffscreenWindow((1280, 720))
    renderer = ImguiRenderer(wnd)
    wall = [0.0]
    try:
        controller = ViewerController(load("cloth"), wnd.size)
        panel = Panel(controller, clock=lambda: wall[0])

        def running_frame() -> np.ndarray:
            controller.advance(FRAME)
            wall[0] += FRAME
            return wnd.draw(renderer, panel.draw)

        for _ in range(4):   # windows sized and shown
            running_frame()
        period = round(1.0 / (READOUT_HZ * FRAME))   # frames between refreshes
        refreshes, composited, times = panel.live.refreshes, [], []
        for _ in range(2 * period):
            before = controller.sim.time
            running_frame()
            assert controller.sim.time > before   # the simulation runs every frame
            composited.append(all(c.cached_key is c.key for c in renderer._cached))
            times.append(panel.live.shown("status")[1][1])
        assert panel.live.refreshes - refreshes == 2   # two refreshes in two periods
        # every frame but a refresh and the one after it (drawn into the cache) composites
        assert sum(composited) >= 2 * (period - 2)
        assert len(set(times)) == 3 and all("t = " in t for t in times)   # the one before, 2 new

        # between refreshes, a hover over a slider shows in the next frame
        (x0, y0), (x1, y1) = panel.item_rects[STIFFNESS]
        rows, cols = slice(int(y0) + 2, int(y1) - 2), slice(int(x0) + 2, int(x1) - 2)
        before = running_frame()
        refreshes = panel.live.refreshes
        renderer.input.mouse_position_event(x0 + 30.0, 0.5 * (y0 + y1))
        hovered = running_frame()
        assert panel.live.refreshes == refreshes   # not a refresh frame
        assert np.abs(hovered[rows, cols] - before[rows, cols]).max() > 10

        # a pause (Space, or the Pause button) shows in the status area in the next frame
        status_rows = slice(int(MARGIN) + 25, int(MARGIN) + 45)
        controller.toggle_pause()
        paused = running_frame()
        assert panel.live.shown("status")[0][1].startswith("paused")
        assert np.abs(paused[status_rows, :300] - hovered[status_rows, :300]).max() > 10
    finally:
        renderer.release()
        wnd.ctx.release()


def test_a_list_expected_to_stay_is_drawn_into_its_cache_at_once_with_the_same_pixels():
    """When the build says its lists will stay (the window's panel build returns True in a
    frame that refreshed the read-outs), a list that changed is drawn into its cache and
    composited in that same frame: the same pixels as drawing it directly."""
    from ropesim.app.imgui_backend import ImguiRenderer

    wnd = _OffscreenWindow((1280, 720))
    renderer = ImguiRenderer(wnd)
    try:
        panel = Panel(ViewerController(load("cloth"), wnd.size))
        for _ in range(4):   # windows sized and shown
            wnd.draw(renderer, panel.draw)
        for cached in renderer._cached:
            cached.key = None   # every list changed
        direct_frame = wnd.draw(renderer, panel.draw)
        assert all(c.cached_key is not c.key for c in renderer._cached)   # drawn directly
        for cached in renderer._cached:
            cached.key = None

        def build_expecting_still() -> bool:
            panel.draw()
            return True

        cached_frame = wnd.draw(renderer, build_expecting_still)
        assert all(c.cached_key is c.key for c in renderer._cached)    # cached at once
        difference = np.abs(cached_frame - direct_frame)[..., :3]
        assert difference.max() <= 2 and difference.mean() < 0.1
    finally:
        renderer.release()
        wnd.ctx.release()


def test_solver_section_reads_out_at_the_refresh_rate_so_an_xpbd_panel_is_composited():
    """With XPBD the Solver section shows the solver's figures; they are a live read-out
    like the status lines, so between refreshes the running panel is composited."""
    from ropesim.app.imgui_backend import ImguiRenderer
    from ropesim.app.readouts import READOUT_HZ

    wnd = _OffscreenWindow((1280, 720))
    renderer = ImguiRenderer(wnd)
    wall = [0.0]
    try:
        controller = ViewerController(load("cloth"), wnd.size)
        controller.set_integrator("xpbd")
        panel = Panel(controller, clock=lambda: wall[0])

        def running_frame() -> None:
            controller.advance(FRAME)
            wall[0] += FRAME
            wnd.draw(renderer, panel.draw)

        for _ in range(4):
            running_frame()
        period = round(1.0 / (READOUT_HZ * FRAME))
        composited, lines = [], []
        for _ in range(2 * period):
            running_frame()
            composited.append(all(c.cached_key is c.key for c in renderer._cached))
            lines.append(panel.live.shown("solver"))
        assert all("passes/step" in line for line in lines)
        assert len(set(lines)) <= 3          # the figures change only at a refresh
        assert sum(composited) >= 2 * (period - 2)
    finally:
        renderer.release()
        wnd.ctx.release()


def test_a_second_renderer_draws_with_its_own_imgui_context_while_the_first_lives():
    """imgui.create_context leaves an older living context current: a renderer made while
    another one lives (an earlier window in the same process) must still use its own, or
    it would draw the old one's windows, focus and z-order."""
    from ropesim.app.imgui_backend import ImguiRenderer

    first_wnd, second_wnd = _OffscreenWindow((640, 360)), _OffscreenWindow((640, 360))
    first = ImguiRenderer(first_wnd)
    second = ImguiRenderer(second_wnd)
    try:
        assert second.io is not first.io            # not the first one's context's io
        first_wnd.draw(first, lambda: None)
        second_wnd.draw(second, lambda: None)
        assert second.io is imgui.get_io()        # the second renderer's own context
        first_wnd.draw(first, lambda: None)
        assert first.io is imgui.get_io()
    finally:
        second.release()
        first.release()
        first_wnd.ctx.release()
        second_wnd.ctx.release()


def test_live_readouts_refresh_at_their_rate_at_once_on_a_state_change_and_say_when_kept():
    """LiveReadouts recomputes its values once a period of wall time (and at once when the
    state changes); a refresh counts as kept for the next frame only while frames come
    faster than refreshes."""
    from ropesim.app.readouts import KEPT_SHARE, LiveReadouts

    wall = [0.0]
    live = LiveReadouts(hz=8.0, clock=lambda: wall[0])
    counter = iter(range(1000))
    shown = []
    for frame in range(32):   # 64 frames/s for 0.5 s: a refresh every 8 frames
        live.begin_frame("running")
        shown.append(live.get("n", lambda: next(counter)))
        wall[0] += 1.0 / 64.0
    assert shown == [k // 8 for k in range(32)]
    assert live.refreshes == 4
    live.begin_frame("paused")                  # a state change refreshes at once
    assert live.get("n", lambda: next(counter)) == 4 and live.kept_next_frame
    wall[0] += 1.0 / 64.0
    live.begin_frame("paused")
    assert live.get("n", lambda: next(counter)) == 4 and not live.kept_next_frame
    wall[0] += KEPT_SHARE / 8.0 + 0.01          # a frame slower than KEPT_SHARE of a period
    live.begin_frame("paused")
    assert live.get("n", lambda: next(counter)) == 5 and not live.kept_next_frame
    with pytest.raises(ValueError, match="hz"):
        LiveReadouts(hz=0.0)
