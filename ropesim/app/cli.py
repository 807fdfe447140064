"""The ``ropesim`` command: the viewer, and headless ``scenes``, ``run``, ``render``, ``compare``.

``ropesim`` alone opens the viewer (or, with no display, renders the cloth scene to
``ropesim-cloth.mp4``); ``ropesim view ...`` and ``ropesim --window glfw ...`` pass
their arguments untouched to the viewer. The other subcommands need no display
and no GPU (rendering uses EGL, e.g. Mesa's llvmpipe); they live in
:mod:`ropesim.app.headless` and :mod:`ropesim.app.compare`.

Exit codes: 0 done; 2 a user error (unknown scene, bad flag or ``--set`` value,
unwritable path, a run over ``--max-steps``: one line on stderr, nothing computed or
written); 1 the simulation diverged or rendering failed; 128 + the signal when
stopped: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP. After divergence or a stop
signal what was computed is still written, and the file says where the run stopped
and why; signals that arrive while it is written wait until it is whole.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import TextIO

from ..io.interrupts import (ignore_stop_signals, interrupt_cause, interrupt_exit_code,
                             stop_on_signals)
from . import compare, headless, sweep, wave
from .arguments import (EXIT_FAILED, EXIT_OK, EXIT_USAGE, PROG, UsageError, UsageParser,
                        error_line, has_display, help_hint)

HEADLESS_OUTPUT = "ropesim-cloth.mp4"
HEADLESS_SCENE = "cloth"
HEADLESS_DURATION = 4.0  # s of video rendered by `ropesim` without a display


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every subcommand except ``view`` (passed to the viewer)."""
    parser = UsageParser(
        prog=PROG,
        description="Interactive 3D rope and cloth mass-spring simulator. Without a "
                    "subcommand it opens the viewer (`ropesim view --help`); viewer flags "
                    "such as `--window glfw` go to the viewer too.",
        epilog="Exit codes: 0 ok, 1 diverged or failed, 2 usage error, 128 + signal when "
               "stopped (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).")
    parser.add_argument("--version", action="version", version=f"{PROG} {version('ropesim')}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("view", help="open the interactive viewer (the default)", add_help=False)
    headless.add_commands(commands)
    compare.add_command(commands)
    wave.add_wave_parser(commands)
    sweep.add_sweep_parser(commands)
    return parser


# --- the viewer and the no-argument default ------------------------------------------------------
def run_viewer(argv: list[str]) -> int:
    """Hand ``argv`` untouched to the interactive viewer (imported only now)."""
    try:
        from . import viewer
    except ImportError as exc:
        print(error_line(f"the viewer cannot start: {exc}"), file=sys.stderr)
        return EXIT_FAILED
    return int(viewer.main(argv) or 0)


def headless_default() -> int:
    """``ropesim`` with no display: render the default scene to a short video instead."""
    out = Path(HEADLESS_OUTPUT)
    print(f"{PROG}: no display (DISPLAY and WAYLAND_DISPLAY are unset), so instead of opening "
          f"the viewer: rendering the {HEADLESS_SCENE} scene offscreen to {out}")
    status = main(["render", HEADLESS_SCENE, "--out", str(out),
                   "--duration", str(HEADLESS_DURATION)])
    if status == EXIT_OK:
        print(f"{PROG}: video written to {out.resolve()}")
    return status


OWN_FLAGS = ("-h", "--help", "--version")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings as one line: ``ropesim: warning: ...``."""
    print(f"{PROG}: warning: {' '.join(str(message).split())}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ropesim`` command; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return _dispatch(argv)
        except BrokenPipeError:  # `ropesim ... | head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_FAILED


def _dispatch(argv: list[str]) -> int:
    if not argv:
        return run_viewer([]) if has_display() else headless_default()
    if argv[0] == "view":
        return run_viewer(argv[1:])
    if argv[0].startswith("-") and argv[0] not in OWN_FLAGS:
        return run_viewer(argv)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:  # already names the command and its --help
        print(error_line(str(exc)), file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    if args.command is None:
        return run_viewer([])
    requests = None
    try:
        with stop_on_signals() as requests:
            return args.handler(args)
    except UsageError as exc:
        print(error_line(f"{args.command}: {exc}; see {help_hint(args.command)}"),
              file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        print(f"{PROG}: interrupted ({interrupt_cause(exc)})", file=sys.stderr)
        return interrupt_exit_code(exc)
    finally:
        if requests is not None and requests.first is not None:
            ignore_stop_signals()  # stopped by a signal: let a second one not spoil the exit
