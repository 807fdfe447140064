"""``ropesim view``: parse the command line, check the display, open the window, run it.

The pieces: :mod:`~ropesim.app.hotkeys` (the input table),
:mod:`~ropesim.app.controller` (everything the viewer does, without a window) and
:mod:`~ropesim.app.window` (the moderngl-window class). This module only starts them:
:func:`create_viewer` turns every startup failure (unknown scene, bad flag, no
display, no OpenGL 3.3) into one line naming the cause and what to do.

Entry point: :func:`main` (``ropesim``, ``ropesim view SCENE``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import moderngl_window

from ..render.camera import parse_camera_arg
from .arguments import HEADLESS_HINT, PROG, UsageError, UsageParser, has_display
from .replay import viewer_scene
from .window import RopesimWindow, add_viewer_arguments

class ViewerError(RuntimeError):
    """A startup failure with a one-line message for the user."""


def build_parser() -> argparse.ArgumentParser:
    """moderngl-window's parser (--window, --size, --fullscreen, --vsync, ...) plus ours;
    a bad flag is a UsageError (one line)."""
    parser = UsageParser(prog=f"{PROG} view", description="Open the interactive ropesim viewer.",
                         parents=[moderngl_window.create_parser()], add_help=False)
    add_viewer_arguments(parser)
    return parser


def _check_display(window: str | None) -> None:
    """Fail early, with the headless alternative, when no display can be reached."""
    backend = os.environ.get("MODERNGL_WINDOW") or window or "pyglet"
    if backend == "headless":
        raise ViewerError("the viewer needs a window (--window headless has none); for "
                          f"offscreen output use: {HEADLESS_HINT}")
    if not has_display():
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


def create_viewer(argv: Sequence[str]) -> RopesimWindow:
    """Parse ``argv``, check the display and scene, and open the window; returns the
    RopesimWindow instance (not yet running). Raises ViewerError or SystemExit."""
    argv = list(argv)
    try:
        args = build_parser().parse_args(argv)
        viewer_scene(args)
        if args.camera:
            parse_camera_arg(args.camera)
    except (UsageError, ValueError) as exc:
        raise ViewerError(str(exc)) from None
    _check_display(args.window)
    try:
        # an empty list would make moderngl-window read sys.argv instead
        return moderngl_window.create_window_config_instance(RopesimWindow,
                                                             args=argv or [args.scene])
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
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse: --help (0)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        moderngl_window.run_window_config_instance(config)
    except KeyboardInterrupt:   # Ctrl-C in the terminal: finish a recording, no traceback
        config.controller.close()
        return 130
    return 0


__all__ = ["ViewerError", "build_parser", "create_viewer", "main"]
