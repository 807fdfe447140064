"""Command-line pieces shared by every ``ropesim`` command, the viewer included.

One parser for ``--set KEY=VALUE`` scene overrides, ``--dt`` and ``--integrator``
(:func:`add_scene_arguments`, :func:`load_scene`), one argparse that reports a user
error as one line (:class:`UsageParser`), and the one display check
(:func:`has_display`) that decides between the window and headless output.

Every bad flag is a :class:`UsageError`: one line naming the flag, the value and
what is allowed, exit code 2, nothing computed. A run longer than ``--max-steps``
(default :data:`MAX_STEPS`) is refused the same way; above :data:`LONG_RUN_STEPS`
it runs with a one-line warning.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..engine.integrators import INTEGRATORS
from ..io.outputs import OutputError, check_output_path
from ..engine.simulation import Simulation
from ..io.scenes import DEFAULT_SCENE, Scene, SceneError, load
from .history import DEFAULT_HISTORY_MB

PROG = "ropesim"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: the command that renders without a window, for messages that point to it
HEADLESS_HINT = "ropesim render SCENE --out out.mp4"
#: default --max-steps: a run (or render) of more steps is refused before it starts
#: (1e8 steps of the default cloth take hours; raise the limit with --max-steps N)
MAX_STEPS = 100_000_000
#: above this many steps a run starts with a warning that it will take long
LONG_RUN_STEPS = 10_000_000


class UsageError(Exception):
    """A user error: reported as one line, exit code 2, before any work."""


class UsageParser(argparse.ArgumentParser):
    """argparse that reports errors as one line (via UsageError) instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix(PROG).strip()
        message = f"{command}: {message}" if command else message
        raise UsageError(f"{message}; see {help_hint(command)}")


def help_hint(command: str = "") -> str:
    """``ropesim CMD --help``: where a usage error's reader finds the flags."""
    return f"{PROG} {command} --help" if command else f"{PROG} --help"


def error_line(message: str) -> str:
    """``ropesim: error: message`` on one line (newlines and runs of spaces collapsed)."""
    return f"{PROG}: error: {' '.join(str(message).split())}"


def has_display() -> bool:
    """False on Linux (and other X11/Wayland systems) when neither DISPLAY nor
    WAYLAND_DISPLAY is set; True elsewhere (macOS, Windows always have a desktop)."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def _parse_integer(text: str) -> int:
    """``"1000"`` or a whole number in float notation (``"1e6"``) -> int."""
    try:
        return int(text)
    except ValueError:
        value = float(text)  # a ValueError for words
        if not value.is_integer():
            raise ValueError(text) from None
        return int(value)


def number(kind: type = float, minimum: float = 0.0, strict: bool = True) -> Callable[[str], Any]:
    """An argparse type: a finite ``kind`` (int or float) > minimum (>= if not strict);
    integers may be written 1e6."""
    def parse(text: str) -> Any:
        try:
            value = _parse_integer(text) if kind is int else kind(text)
        except (ValueError, OverflowError):
            noun = "a whole number" if kind is int else "a finite number"
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not (math.isfinite(value) and (value > minimum if strict else value >= minimum)):
            bound = f"{'>' if strict else '>='} {minimum:g}"
            raise argparse.ArgumentTypeError(f"must be finite and {bound}, got {text!r}")
        return value
    return parse


def parse_assignment(text: str) -> tuple[str, str]:
    """``"key=value"`` -> (key, value)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--set expects key=value, got {text!r}")
    return key.strip(), value.strip()


def add_scene_arguments(parser: argparse.ArgumentParser, optional_scene: bool = False,
                        integrator: bool = True) -> None:
    """The scene (a positional; with ``optional_scene`` it defaults to DEFAULT_SCENE),
    ``--set KEY=VALUE ...``, ``--dt`` and (with ``integrator``) ``--integrator``; read
    them with :func:`scene_from_args`."""
    help_text = "a shipped scene name (see `ropesim scenes`) or a .toml file"
    if optional_scene:
        parser.add_argument("scene", nargs="?", default=DEFAULT_SCENE,
                            help=f"{help_text} (default: {DEFAULT_SCENE})")
    else:
        parser.add_argument("scene", help=help_text)
    parser.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="extend",
                        nargs="+", type=parse_assignment, default=[],
                        help="override a scene parameter, validated like the scene file: "
                             "--set stiffness=2000 cloth.nx=64 simulation.drag=0 ground.height=-2")
    parser.add_argument("--dt", type=number(), help="time step, s")
    if integrator:
        parser.add_argument("--integrator", help=f"one of: {', '.join(INTEGRATORS)}")


def add_scene_command(commands: Any, name: str, handler: Callable[[argparse.Namespace], int],
                      help: str, description: str,
                      integrator: bool = True) -> argparse.ArgumentParser:
    """A subcommand that works on one scene: its parser (on an argparse subparsers
    object) with :func:`add_scene_arguments`, and ``args.handler`` set to ``handler``."""
    parser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler)
    add_scene_arguments(parser, integrator=integrator)
    return parser


def load_scene(name: str, overrides: Sequence[tuple[str, str]] = (), dt: float | None = None,
               integrator: str | None = None, substeps: int | None = None) -> Scene:
    """The scene with ``--set`` overrides, ``--dt`` (s), ``--integrator`` and
    ``--substeps`` applied and validated; a bad value raises UsageError naming it."""
    changes: dict[str, object] = dict(overrides)
    for key, value in (("dt", dt), ("integrator", integrator), ("substeps", substeps)):
        if value is not None:
            changes[f"simulation.{key}"] = value
    try:
        scene = load(name)
        return scene.with_overrides(changes) if changes else scene
    except SceneError as exc:
        raise UsageError(str(exc)) from None


def scene_from_args(args: argparse.Namespace) -> Scene:
    """:func:`load_scene` with the arguments :func:`add_scene_arguments` added."""
    return load_scene(args.scene, args.overrides, args.dt, getattr(args, "integrator", None),
                      getattr(args, "substeps", None))


def add_timeline_arguments(parser: argparse.ArgumentParser) -> None:
    """The viewer's issue-15 flags: ``--replay RUN.npz`` and ``--history-mb MB``."""
    parser.add_argument("--replay", metavar="RUN.npz",
                        help="show a saved trajectory (`ropesim run SCENE --out run.npz`) with "
                             "the timeline controls; nothing is simulated")
    parser.add_argument("--history-mb", type=number(), default=DEFAULT_HISTORY_MB, metavar="MB",
                        help=f"memory for rewinding (default {DEFAULT_HISTORY_MB:g} MB)")


def add_max_steps_argument(parser: argparse.ArgumentParser) -> None:
    """``--max-steps N``: the most simulation steps a command may take (see :func:`check_steps`)."""
    parser.add_argument("--max-steps", type=number(int), default=MAX_STEPS, metavar="N",
                        help=f"refuse a run of more than N steps (default {MAX_STEPS:.0e}); "
                             f"above {LONG_RUN_STEPS:.0e} a warning says it will take long")


def check_steps(steps: float, max_steps: int, source: str, command: str,
                long_run: int = LONG_RUN_STEPS) -> int:
    """``steps`` (maybe a float from duration / dt) as an int; a UsageError naming
    ``source`` (the flags that gave it) and ``--max-steps`` when it is above
    ``max_steps``, a one-line warning on stderr (naming ``command``) when it is above
    ``long_run``."""
    if not (math.isfinite(steps) and steps <= max_steps):
        raise UsageError(f"{source} is {steps:.3g} steps, more than --max-steps "
                         f"{max_steps}; shorten the run or raise --max-steps")
    steps = int(round(steps))
    if steps > long_run:
        print(f"{PROG}: warning: {command}: {source} is {steps:.3g} steps, which takes long; "
              f"Ctrl-C or SIGTERM stops it and keeps what was computed", file=sys.stderr)
    return steps


def simulation_from_scene(scene: Scene) -> Simulation:
    """``scene.simulation()``; a value the engine rejects (ValueError, TypeError,
    SceneError) raises UsageError naming the scene and the engine's message."""
    try:
        return scene.simulation()
    except (SceneError, ValueError, TypeError) as exc:
        raise UsageError(f"scene {scene.name}: {exc}") from None


def check_output(path: str, suffixes: Sequence[str] | None = None) -> Path:
    """:func:`~ropesim.io.outputs.check_output_path`, a failure raised as UsageError."""
    try:
        return check_output_path(path, suffixes)
    except OutputError as exc:
        raise UsageError(str(exc)) from None


__all__ = [
    "PROG", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_INTERRUPTED", "HEADLESS_HINT",
    "UsageError", "UsageParser", "error_line", "has_display", "number", "parse_assignment",
    "add_scene_arguments", "add_scene_command", "load_scene", "scene_from_args", "check_output",
    "MAX_STEPS", "LONG_RUN_STEPS", "add_max_steps_argument", "add_timeline_arguments", "check_steps", "help_hint",
    "simulation_from_scene",
]
