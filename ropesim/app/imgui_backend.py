"""A moderngl renderer for imgui-bundle, fed with moderngl-window's events.

:class:`ImguiRenderer` replaces ``moderngl_window.integrations.imgui_bundle``: that
module (moderngl-window 3.1.1) still builds its font texture with the pre-1.92 atlas
call ``get_tex_data_as_rgba32``, which imgui-bundle 1.92+ no longer has. This one
implements imgui 1.92's texture protocol (``RendererHasTextures``: textures are
created, updated and destroyed on imgui's request) with moderngl textures, and feeds
events through imgui's event API (``add_mouse_pos_event``, ``add_key_event``, ...).

:class:`ImguiInput` is that event feeding on its own (no GL), so the panel's input
path can be driven in tests. It tells imgui the modifier state before every key event
and mouse button: X11 reports a key's modifiers as they were *before* the key, so the
press of Ctrl itself arrives with ctrl off; the key is counted here, so a Ctrl+click
on a slider opens its text field on the first click.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any, Callable

import moderngl
import numpy as np
from imgui_bundle import imgui, implot

FONT_SIZE_PX = 15.0


_VERTEX_SHADER = """
#version 330
uniform mat4 u_projection;
in vec2 in_position;
in vec2 in_uv;
in vec4 in_color;
out vec2 v_uv;
out vec4 v_color;
void main() {
    v_uv = in_uv;
    v_color = in_color;
    gl_Position = u_projection * vec4(in_position, 0.0, 1.0);
}
"""
_FRAGMENT_SHADER = """
#version 330
uniform sampler2D u_texture;
in vec2 v_uv;
in vec4 v_color;
out vec4 out_color;
void main() {
    out_color = v_color * texture(u_texture, v_uv);
}
"""


_COMPOSITE_VERTEX_SHADER = """
#version 330
out vec2 v_uv;
void main() {
    vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
    v_uv = corner;
    gl_Position = vec4(2.0 * corner - 1.0, 0.0, 1.0);
}
"""
_COMPOSITE_FRAGMENT_SHADER = """
#version 330
uniform sampler2D u_texture;
in vec2 v_uv;
out vec4 out_color;
void main() {
    out_color = texture(u_texture, v_uv);   // premultiplied alpha
}
"""
#: imgui's vertex layout (ImDrawVert): position (2 float32, window px), uv, colour RGBA8
_VERTEX_DTYPE = np.dtype([("pos", "<f4", 2), ("uv", "<f4", 2), ("col", "<u4")])


class _CachedList:
    """One draw list drawn once into a texture (premultiplied alpha) and composited
    while its vertices, indices and commands stay the same; ``rect`` is its
    rectangle in framebuffer px (x, y from the top-left, width, height)."""

    def __init__(self) -> None:
        self.key: tuple | None = None        # the list's contents last frame
        self.cached_key: tuple | None = None  # the contents the texture holds
        self.rect = (0, 0, 0, 0)
        self.texture: moderngl.Texture | None = None
        self.fbo: moderngl.Framebuffer | None = None

    def release(self) -> None:
        for obj in (self.fbo, self.texture):
            if obj is not None:
                obj.release()
        self.fbo = self.texture = None
        self.cached_key = None


def _ui_font_path() -> Path | None:
    """A readable TrueType font shipped with imgui-bundle, if present."""
    import imgui_bundle

    path = Path(imgui_bundle.__file__).parent / "assets" / "fonts" / "DroidSans.ttf"
    return path if path.is_file() else None


_KEY_NAMES = {
    "TAB": "tab", "LEFT": "left_arrow", "RIGHT": "right_arrow", "UP": "up_arrow",
    "DOWN": "down_arrow", "PAGE_UP": "page_up", "PAGE_DOWN": "page_down",
    "HOME": "home", "END": "end", "DELETE": "delete", "BACKSPACE": "backspace",
    "SPACE": "space", "ENTER": "enter", "ESCAPE": "escape", "MINUS": "minus",
    "PERIOD": "period", "EQUAL": "equal", "COMMA": "comma",
    "LEFT_CTRL": "left_ctrl", "RIGHT_CTRL": "right_ctrl", "LEFT_SHIFT": "left_shift",
    "RIGHT_SHIFT": "right_shift", "LEFT_ALT": "left_alt", "RIGHT_ALT": "right_alt",
    **{c: c.lower() for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
    **{f"NUMBER_{d}": f"_{d}" for d in "0123456789"},
}
#: backend key attribute -> the modifier it is
_MODIFIER_KEYS = {"LEFT_CTRL": "ctrl", "RIGHT_CTRL": "ctrl", "LEFT_SHIFT": "shift",
                  "RIGHT_SHIFT": "shift", "LEFT_ALT": "alt", "RIGHT_ALT": "alt"}


class ImguiInput:
    """moderngl-window events -> imgui's input queue (window coordinates, top-left
    origin). ``keys`` is the backend's ``wnd.keys`` namespace; ``modifiers()``
    returns the window's current KeyModifiers (shift, ctrl, alt)."""

    def __init__(self, io: Any, keys: Any, modifiers: Callable[[], Any]) -> None:
        self.io = io
        self.keys = keys
        self.modifiers = modifiers
        self._keymap: dict[Any, Any] = {}
        self._modifier_of: dict[Any, str] = {}
        for attr, key_name in _KEY_NAMES.items():
            code = getattr(keys, attr, "undefined")
            if code != "undefined" and hasattr(imgui.Key, key_name):
                self._keymap[code] = getattr(imgui.Key, key_name)
                if attr in _MODIFIER_KEYS:
                    self._modifier_of[code] = _MODIFIER_KEYS[attr]

    def _feed_modifiers(self, modifiers: Any, key: Any = None, down: bool = False) -> None:
        state = {name: bool(getattr(modifiers, name, False)) for name in ("shift", "ctrl", "alt")}
        if key in self._modifier_of:   # the modifier key itself: its own new state
            state[self._modifier_of[key]] = down
        self.io.add_key_event(imgui.Key.mod_shift, state["shift"])
        self.io.add_key_event(imgui.Key.mod_ctrl, state["ctrl"])
        self.io.add_key_event(imgui.Key.mod_alt, state["alt"])

    def key_event(self, key: Any, action: Any, modifiers: Any) -> None:
        down = action == self.keys.ACTION_PRESS
        self._feed_modifiers(modifiers, key, down)
        if key in self._keymap:
            self.io.add_key_event(self._keymap[key], down)

    def unicode_char_entered(self, char: str) -> None:
        for c in char:
            self.io.add_input_character(ord(c))

    def mouse_position_event(self, x: float, y: float, dx: float = 0, dy: float = 0) -> None:
        # no modifiers here: motion events carry none (the window's may be a key's stale state)
        self.io.add_mouse_pos_event(float(x), float(y))

    mouse_drag_event = mouse_position_event

    def _button(self, x: float, y: float, button: int, down: bool) -> None:
        index = {1: 0, 2: 1, 3: 2}.get(button)   # moderngl-window left/right/middle
        self._feed_modifiers(self.modifiers())
        self.io.add_mouse_pos_event(float(x), float(y))
        if index is not None:
            self.io.add_mouse_button_event(index, down)

    def mouse_press_event(self, x: float, y: float, button: int) -> None:
        self._button(x, y, button, True)

    def mouse_release_event(self, x: float, y: float, button: int) -> None:
        self._button(x, y, button, False)

    def mouse_scroll_event(self, x_offset: float, y_offset: float) -> None:
        self.io.add_mouse_wheel_event(float(x_offset), float(y_offset))

    @property
    def wants_keyboard(self) -> bool:
        """imgui keeps the keyboard: a text field is being edited or a widget is active."""
        return bool(self.io.want_text_input or self.io.want_capture_keyboard)


class ImguiRenderer:
    """Draws imgui with moderngl into the window's framebuffer; ``input`` forwards
    the window's events (:class:`ImguiInput`).

    Creates (and owns) the imgui and implot contexts.
    """

    def __init__(self, wnd: Any) -> None:
        self.wnd = wnd
        self.ctx: moderngl.Context = wnd.ctx
        self.context = imgui.create_context()
        self.plot_context = implot.create_context()
        self.make_current()   # create_context leaves an older, still living context current
        self.io = imgui.get_io()
        self.io.set_ini_filename("")   # no imgui.ini in the user's folder
        self.io.config_windows_move_from_title_bar_only = True
        self.io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        max_size = int(self.ctx.info["GL_MAX_TEXTURE_SIZE"])
        platform = imgui.get_platform_io()
        platform.renderer_texture_max_width = max_size
        platform.renderer_texture_max_height = max_size
        font = _ui_font_path()
        if font is not None:
            self.io.fonts.add_font_from_file_ttf(str(font), FONT_SIZE_PX)
        imgui.style_colors_dark()
        style = imgui.get_style()
        style.window_rounding = 6.0
        style.frame_rounding = 3.0

        self._program = self.ctx.program(vertex_shader=_VERTEX_SHADER,
                                         fragment_shader=_FRAGMENT_SHADER)
        self._program["u_texture"].value = 0
        self._vbo = self.ctx.buffer(reserve=imgui.VERTEX_SIZE * 65536, dynamic=True)
        self._ibo = self.ctx.buffer(reserve=imgui.INDEX_SIZE * 65536, dynamic=True)
        self._vao = self.ctx.vertex_array(
            self._program, [(self._vbo, "2f 2f 4f1", "in_position", "in_uv", "in_color")],
            index_buffer=self._ibo, index_element_size=imgui.INDEX_SIZE,
        )
        self._textures: dict[int, moderngl.Texture] = {}
        self._composite_program = self.ctx.program(vertex_shader=_COMPOSITE_VERTEX_SHADER,
                                                   fragment_shader=_COMPOSITE_FRAGMENT_SHADER)
        self._composite_program["u_texture"].value = 0
        self._composite_vao = self.ctx.vertex_array(self._composite_program, [])
        self._cached: list[_CachedList] = []
        self.input = ImguiInput(self.io, wnd.keys, lambda: wnd.modifiers)
        self.resize(*wnd.buffer_size)

    def resize(self, width: int = 0, height: int = 0) -> None:
        (w, h), (bw, bh) = self.wnd.size, self.wnd.buffer_size
        self.io.display_size = imgui.ImVec2(float(w), float(h))
        self.io.display_framebuffer_scale = imgui.ImVec2(bw / max(w, 1), bh / max(h, 1))

    # -- drawing ------------------------------------------------------------------------------
    def make_current(self) -> None:
        """Make this renderer's imgui and implot contexts the current ones (another
        renderer in the same process, e.g. an earlier window's, may have left its own)."""
        imgui.set_current_context(self.context)
        implot.set_current_context(self.plot_context)

    def _frame(self, build: Callable[[], None], frame_time: float,
               finish: Callable[[], None]) -> None:
        self.make_current()
        self.io.delta_time = max(float(frame_time), 1e-4)
        imgui.new_frame()
        try:
            build()
        finally:
            finish()

    def render_frame(self, build: Callable[[], bool | None], frame_time: float) -> None:
        """One imgui frame: new_frame, ``build()`` (the widgets), render and draw.

        ``build`` may return True: its lists will probably stay as they are for the next
        frames (the panel refreshed its read-outs), so a list that changed is drawn into
        its cache at once (see :meth:`render`)."""
        stays: list[bool | None] = [None]

        def built() -> None:
            stays[0] = build()

        self._frame(built, frame_time, imgui.render)
        self.render(imgui.get_draw_data(), cache_changed=bool(stays[0]))

    def layout_frame(self, build: Callable[[], None], frame_time: float) -> None:
        """An imgui frame that is built but not drawn: imgui sizes new windows in their
        first frame and shows them from the second, so a frame that must show them at
        once (the compiling notice, before the window freezes) lays them out first."""
        self._frame(build, frame_time, imgui.end_frame)

    def _update_textures(self) -> bool:
        """Create, update or destroy GL textures as imgui asks (imgui >= 1.92);
        True when any was."""
        status = imgui.ImTextureStatus
        changed = False
        for tex in imgui.get_platform_io().textures:
            changed = changed or tex.status in (status.want_create, status.want_updates,
                                                status.want_destroy)
            if tex.status == status.want_create or (
                    tex.status == status.want_updates and tex.tex_id not in self._textures):
                # (an update of a texture this renderer never made, e.g. one of an earlier
                # renderer on the same imgui context, is uploaded whole as a new one)
                texture = self.ctx.texture((tex.width, tex.height), 4,
                                           np.ascontiguousarray(tex.get_pixels_array()).tobytes())
                texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
                texture.repeat_x = texture.repeat_y = False
                self._textures[texture.glo] = texture
                tex.set_tex_id(texture.glo)
                tex.status = status.ok
            elif tex.status == status.want_updates:
                texture = self._textures[tex.tex_id]
                pixels = np.asarray(tex.get_pixels_array()).reshape(tex.height, tex.width, 4)
                for r in tex.updates:
                    block = np.ascontiguousarray(pixels[r.y:r.y + r.h, r.x:r.x + r.w])
                    texture.write(block.tobytes(), viewport=(r.x, r.y, r.w, r.h))
                tex.status = status.ok
            elif tex.status == status.want_destroy:
                texture = self._textures.pop(tex.tex_id, None)
                if texture is not None:
                    texture.release()
                tex.set_tex_id(0)
                tex.status = status.destroyed
        return changed

    def render(self, draw_data: Any, cache_changed: bool = False) -> None:
        """Draw imgui's draw lists into the bound framebuffer (blending on, no depth).

        A draw list that is the same as in the previous frame (vertices, indices,
        commands, window size) is drawn once into its own texture and then only
        composited, so a still panel or the hotkey overlay costs one textured quad;
        a list that changed (hover, typing, a new value) is drawn directly at once,
        or with ``cache_changed`` (it is expected to stay) into its texture at once."""
        if self._update_textures():   # a glyph texture changed: no cached list holds it
            for cached in self._cached:
                cached.cached_key = None
        (w, h), (bw, bh) = self.wnd.size, self.wnd.buffer_size
        if w <= 0 or h <= 0 or bw <= 0 or bh <= 0:
            return
        scale = (bw / w, bh / h)
        draw_data.scale_clip_rects(imgui.ImVec2(*scale))
        ctx = self.ctx
        target = ctx.fbo
        ctx.enable_only(moderngl.BLEND)
        ctx.blend_equation = moderngl.FUNC_ADD
        lists = list(draw_data.cmd_lists)
        while len(self._cached) > len(lists):
            self._cached.pop().release()
        while len(self._cached) < len(lists):
            self._cached.append(_CachedList())
        for commands, cached in zip(lists, self._cached):
            vtx = (ctypes.c_byte * (commands.vtx_buffer.size() * imgui.VERTEX_SIZE)).from_address(
                commands.vtx_buffer.data_address())
            idx = (ctypes.c_byte * (commands.idx_buffer.size() * imgui.INDEX_SIZE)).from_address(
                commands.idx_buffer.data_address())
            cmds = tuple((tuple(c.clip_rect), c.tex_ref.get_tex_id(), c.elem_count, c.idx_offset,
                          c.vtx_offset) for c in commands.cmd_buffer)
            key = (w, h, bw, bh, cmds, bytes(vtx), bytes(idx))
            changed = key != cached.key
            if changed:
                cached.key = key
            if changed and not cache_changed:
                ctx.viewport = (0, 0, bw, bh)
                ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
                self._draw_list(vtx, idx, commands, scale, (0, 0, bw, bh))
                continue
            if cached.cached_key is not cached.key:
                self._draw_into_cache(cached, vtx, idx, commands, scale, (bw, bh))
                target.use()
            rx, ry, rw, rh = cached.rect
            if cached.texture is None or rw <= 0 or rh <= 0:
                continue
            ctx.scissor = None
            ctx.viewport = (rx, bh - ry - rh, rw, rh)
            ctx.blend_func = moderngl.ONE, moderngl.ONE_MINUS_SRC_ALPHA   # premultiplied
            cached.texture.use(0)
            self._composite_vao.render(moderngl.TRIANGLE_STRIP, vertices=4)
        ctx.viewport = (0, 0, bw, bh)
        ctx.scissor = None
        ctx.disable(moderngl.BLEND)

    def _draw_list(self, vtx: Any, idx: Any, commands: Any, scale: tuple[float, float],
                   rect: tuple[int, int, int, int]) -> None:
        """Upload one draw list and draw its commands into ``rect`` (framebuffer px,
        x, y from the top-left, width, height) of the bound framebuffer, whose
        viewport is that rectangle."""
        sx, sy = scale
        rx, ry, rw, rh = rect
        self._program["u_projection"].value = (
            2.0 * sx / rw, 0.0, 0.0, 0.0,
            0.0, -2.0 * sy / rh, 0.0, 0.0,
            0.0, 0.0, -1.0, 0.0,
            -1.0 - 2.0 * rx / rw, 1.0 + 2.0 * ry / rh, 0.0, 1.0,
        )
        if len(vtx) > self._vbo.size:
            self._vbo.orphan(2 * len(vtx))
        if len(idx) > self._ibo.size:
            self._ibo.orphan(2 * len(idx))
        self._vbo.write(vtx)
        self._ibo.write(idx)
        for command in commands.cmd_buffer:
            texture = self._textures.get(command.tex_ref.get_tex_id())
            if texture is None:
                continue
            x0, y0, x1, y1 = command.clip_rect
            if x1 <= x0 or y1 <= y0:
                continue
            texture.use(0)
            self.ctx.scissor = (int(x0) - rx, rh - (int(y1) - ry), int(x1 - x0), int(y1 - y0))
            self._vao.render(moderngl.TRIANGLES, vertices=command.elem_count,
                             first=command.idx_offset)

    def _draw_into_cache(self, cached: _CachedList, vtx: Any, idx: Any, commands: Any,
                         scale: tuple[float, float], size: tuple[int, int]) -> None:
        """Draw one list into its cache texture over the rectangle its vertices and
        clip rectangles cover (premultiplied alpha: colour blended by the source's
        alpha, alpha accumulated as 1 - (1 - a1)(1 - a2)...)."""
        sx, sy = scale
        bw, bh = size
        cached.cached_key = cached.key
        positions = np.frombuffer(vtx, _VERTEX_DTYPE)["pos"] if len(vtx) else np.zeros((0, 2))
        clips = np.array([tuple(c.clip_rect) for c in commands.cmd_buffer], dtype=np.float64)
        if len(positions) == 0 or len(clips) == 0:
            cached.rect = (0, 0, 0, 0)
            return
        x0 = max(0.0, positions[:, 0].min() * sx, clips[:, 0].min())
        y0 = max(0.0, positions[:, 1].min() * sy, clips[:, 1].min())
        x1 = min(float(bw), positions[:, 0].max() * sx, clips[:, 2].max())
        y1 = min(float(bh), positions[:, 1].max() * sy, clips[:, 3].max())
        rx, ry = int(np.floor(x0)), int(np.floor(y0))
        rw, rh = int(np.ceil(x1)) - rx, int(np.ceil(y1)) - ry
        cached.rect = (rx, ry, rw, rh)
        if rw <= 0 or rh <= 0:
            return
        if cached.texture is None or cached.texture.size != (rw, rh):
            cached.release()
            cached.cached_key = cached.key
            cached.texture = self.ctx.texture((rw, rh), 4)
            cached.texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
            cached.fbo = self.ctx.framebuffer(color_attachments=[cached.texture])
        cached.fbo.use()
        cached.fbo.clear(0.0, 0.0, 0.0, 0.0)
        self.ctx.viewport = (0, 0, rw, rh)
        self.ctx.blend_func = (moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA,
                               moderngl.ONE, moderngl.ONE_MINUS_SRC_ALPHA)
        self._draw_list(vtx, idx, commands, scale, (rx, ry, rw, rh))
        self.ctx.scissor = None

    def release(self) -> None:
        for texture in self._textures.values():
            texture.release()
        self._textures.clear()
        for cached in self._cached:
            cached.release()
        self._cached.clear()
        for obj in (self._vao, self._vbo, self._ibo, self._program, self._composite_vao,
                    self._composite_program):
            obj.release()
        implot.destroy_context(self.plot_context)
        imgui.destroy_context(self.context)


__all__ = ["ImguiInput", "ImguiRenderer"]
