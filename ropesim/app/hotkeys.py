"""The viewer's input table: hotkeys, mouse buttons and the help overlay's mouse lines.

:data:`HOTKEYS` is data: each :class:`Hotkey` names the keys, the label and help text
the overlay shows, and the :class:`~ropesim.app.controller.ViewerController` method it
calls. :func:`key_names` maps a window backend's key codes to these key names, so the
controller never sees backend codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LEFT, RIGHT, MIDDLE = 1, 2, 3  # moderngl-window mouse button ids


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
    Hotkey(("a",), "A", "toggle_axes", "origin axes on / off"),
    Hotkey(("c",), "C", "toggle_self_collision", "self-collision on / off"),
    Hotkey(("equal",), "=", "faster", "time scale x2 (up to 4x real time)"),
    Hotkey(("minus",), "-", "slower", "slow motion: time scale /2 (to 1/64)"),
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
    ("hold Q + click particle", "pluck: impulse along the camera's up (panel: Waves)"),
    ("Alt+click particle", "probe on / off (panel: Waves)"),
    ("Left-drag empty space", "orbit (after 4 px)"),
    ("Right- or middle-drag", "pan"),
    ("Wheel", "zoom toward the cursor"),
)
_KEY_TO_HOTKEY = {name: hotkey for hotkey in HOTKEYS for name in hotkey.keys}

_NAMED_KEYS = {
    "SPACE": "space", "RIGHT": "right", "PERIOD": "period", "BACKSPACE": "backspace",
    "EQUAL": "equal", "MINUS": "minus", "ESCAPE": "escape", "F1": "f1", "F11": "f11",
}


def hotkey_for(name: str) -> Hotkey | None:
    """The hotkey bound to key ``name`` ("space", "r", "1", ...), or None."""
    return _KEY_TO_HOTKEY.get(name)


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


__all__ = ["DIGITS", "HOTKEYS", "Hotkey", "LEFT", "MIDDLE", "MOUSE_HELP", "RIGHT", "hotkey_for",
           "key_names"]
