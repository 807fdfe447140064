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
    Hotkey(("right", "period"), "Right or .", "step_forward",
           "forward through the history while paused (one step at its end)"),
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
#: issue 13's keys (cutting, wind), in their own table: HOTKEYS binds no modifier, and
#: Ctrl+Z is a chord (the window names it "ctrl+z": see :func:`chord_name`)
EDIT_HOTKEYS: tuple[Hotkey, ...] = (
    Hotkey(("k",), "K", "toggle_wind", "wind on / off (panel: Wind)"),
    Hotkey(("ctrl+z",), "Ctrl+Z", "undo_cut", "undo the last cut"),
    Hotkey(("delete",), "Delete", "delete_hovered", "remove the hovered particle"),
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
    ("hold X + left-drag", "cut the springs the stroke crosses (or the panel's cut tool)"),
    ("Alt+drag particle", "to another particle: a spring at their distance"),
    ("Shift+drag a rectangle", "pin the particles inside (all pinned: unpin)"),
)
#: issue 15's timeline keys (ropesim.app.timeline)
TIMELINE_HOTKEYS: tuple[Hotkey, ...] = (
    Hotkey(("left", "comma"), "Left or ,", "step_back", "back one frame (pauses)"),
    Hotkey(("b",), "B", "branch_here", "branch here: the original run goes on as a ghost"),
    Hotkey(("n",), "N", "drop_branch", "drop the branch (the ghost)"),
)
_KEY_TO_HOTKEY = {name: hotkey for hotkey in HOTKEYS + EDIT_HOTKEYS + TIMELINE_HOTKEYS
                  for name in hotkey.keys}

_NAMED_KEYS = {
    "SPACE": "space", "RIGHT": "right", "PERIOD": "period", "BACKSPACE": "backspace",
    "LEFT": "left", "COMMA": "comma",
    "EQUAL": "equal", "MINUS": "minus", "ESCAPE": "escape", "F1": "f1", "F11": "f11",
    "DELETE": "delete",
}


def hotkey_for(name: str) -> Hotkey | None:
    """The hotkey bound to key ``name`` ("space", "r", "1", ...), or None."""
    return _KEY_TO_HOTKEY.get(name)


def chord_name(name: str, ctrl: bool) -> str:
    """The key name to look up: "ctrl+NAME" when Ctrl is held and that chord is bound
    (Ctrl+Z), else ``name`` (Ctrl with any other key acts as the key alone)."""
    chord = f"ctrl+{name}"
    return chord if ctrl and chord in _KEY_TO_HOTKEY else name


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


__all__ = ["DIGITS", "EDIT_HOTKEYS", "HOTKEYS", "TIMELINE_HOTKEYS", "chord_name", "Hotkey", "LEFT",
           "MIDDLE", "MOUSE_HELP", "RIGHT", "hotkey_for",
           "key_names"]
