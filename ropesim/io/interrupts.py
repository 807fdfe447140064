"""Stop requests: SIGTERM and SIGHUP stop a run the way Ctrl-C (SIGINT) does, and a
write that has started is never cut in half by one.

* :class:`Interrupted` is the KeyboardInterrupt a stop request raises; it says which
  signal (``cause``: "Ctrl-C", "SIGTERM", "SIGHUP") and the exit code (128 + signal).
* :func:`stop_on_signals` (the ``ropesim`` commands) turns the first SIGINT, SIGTERM
  or SIGHUP into :class:`Interrupted`; later ones are noted in the returned
  :class:`StopRequests`, not acted on, so the outputs of the stopped run get written.
* :func:`signals_held` wraps one write (a frame into ffmpeg, a file's bytes): a
  signal that arrives inside is delivered again right after it.

Signals reach Python's main thread only; in any other thread both are no-ops.
A signal whose handler is "ignore" (``nohup`` ignores SIGHUP) stays ignored.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

#: the signals that stop a run: Ctrl-C, a batch scheduler's or `kill`'s SIGTERM, a closed terminal
STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def signal_cause(signal_number: int) -> str:
    """"Ctrl-C" for SIGINT, else the signal's name ("SIGTERM", "SIGHUP")."""
    if signal_number == signal.SIGINT:
        return "Ctrl-C"
    try:
        return signal.Signals(signal_number).name
    except ValueError:
        return f"signal {signal_number}"


class Interrupted(KeyboardInterrupt):
    """A stop request (SIGINT, SIGTERM or SIGHUP) raised where the main thread was."""

    def __init__(self, signal_number: int = signal.SIGINT):
        self.signal_number = int(signal_number)
        super().__init__(self.cause)

    @property
    def cause(self) -> str:
        """"Ctrl-C", "SIGTERM" or "SIGHUP"."""
        return signal_cause(self.signal_number)

    @property
    def exit_code(self) -> int:
        """128 + the signal number, the shell's convention: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP."""
        return 128 + self.signal_number


def interrupt_cause(exc: BaseException) -> str:
    """The cause of a KeyboardInterrupt: an :class:`Interrupted`'s, else "Ctrl-C"."""
    return exc.cause if isinstance(exc, Interrupted) else "Ctrl-C"


def interrupt_exit_code(exc: BaseException) -> int:
    """The exit code of a KeyboardInterrupt: an :class:`Interrupted`'s, else 130."""
    return exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT


@dataclass
class StopRequests:
    """What :func:`stop_on_signals` received: the ``first`` signal (raised as
    Interrupted) and the ``later`` ones (noted while the outputs were written)."""

    first: int | None = None
    later: list[int] = field(default_factory=list)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _install(handler: signal.Handlers | object) -> dict[int, object]:
    """Set ``handler`` for every stop signal not ignored; returns the previous handlers."""
    previous = {}
    for number in STOP_SIGNALS:
        current = signal.getsignal(number)
        if current is signal.SIG_IGN or current is None:  # ignored, or not Python's to change
            continue
        previous[number] = signal.signal(number, handler)  # type: ignore[arg-type]
    return previous


def _restore(previous: dict[int, object]) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler)  # type: ignore[arg-type]


@contextmanager
def stop_on_signals() -> Iterator[StopRequests]:
    """Within: the first SIGINT, SIGTERM or SIGHUP raises :class:`Interrupted`; the
    ones after it are only noted (``later``). The previous handlers come back after."""
    requests = StopRequests()
    if not _in_main_thread():
        yield requests
        return

    pending: list[int] = []  # arrived while numba held its compiler lock

    def request_stop(signal_number: int, frame: object) -> None:
        if requests.first is None and _numba_compiling():
            pending.append(signal_number)  # raised when the lock is released (below)
            return
        if requests.first is None:
            requests.first = signal_number
            raise Interrupted(signal_number)
        requests.later.append(signal_number)

    release = _DeliverAfterCompile(pending)
    previous = _install(request_stop)
    release.register()
    try:
        yield requests
    finally:
        release.unregister()
        _restore(previous)


def _numba_compiling() -> bool:
    """Whether numba's compiler lock is held (a kernel is being compiled or loaded from the
    cache). An exception raised there can land inside an llvmlite ctypes callback, which
    crashes the process, so a stop request waits until the lock is released."""
    try:
        from numba.core.compiler_lock import global_compiler_lock
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    return global_compiler_lock.is_locked()


class _DeliverAfterCompile:
    """Re-sends the first stop signal that arrived during a compile once numba releases
    its compiler lock (the lock's "numba:compiler_lock" event ends at the release)."""

    def __init__(self, pending: list[int]):
        from numba.core import event

        self._event = event
        self.pending = pending
        outer = self

        class _Listener(event.Listener):
            def on_start(self, ev: object) -> None:
                pass

            def on_end(self, ev: object) -> None:
                if outer.pending and not _numba_compiling():
                    first = outer.pending[0]
                    outer.pending.clear()
                    signal.raise_signal(first)

        self.listener = _Listener()

    def register(self) -> None:
        self._event.register("numba:compiler_lock", self.listener)

    def unregister(self) -> None:
        self._event.unregister("numba:compiler_lock", self.listener)


def ignore_stop_signals() -> None:
    """Ignore SIGINT, SIGTERM and SIGHUP from now on: for a process that was stopped by
    one and is on its way out, so a second Ctrl-C cannot turn its exit into a traceback."""
    if _in_main_thread():
        for number in STOP_SIGNALS:
            signal.signal(number, signal.SIG_IGN)


class _Hold:
    active = False


@contextmanager
def signals_held() -> Iterator[list[int]]:
    """Within: stop signals are noted, not acted on, so the write inside finishes;
    after it, the first one noted is delivered again to the handler it would have
    reached (nested blocks hold until the outermost ends). Yields the list of noted
    signal numbers."""
    if not _in_main_thread() or _Hold.active:
        yield []
        return
    noted: list[int] = []
    previous = _install(lambda signal_number, frame: noted.append(signal_number))
    _Hold.active = True
    try:
        yield noted
    finally:
        _Hold.active = False
        _restore(previous)
    if noted:
        signal.raise_signal(noted[0])


__all__ = ["STOP_SIGNALS", "Interrupted", "StopRequests", "ignore_stop_signals", "interrupt_cause",
           "interrupt_exit_code", "signal_cause", "signals_held", "stop_on_signals"]
