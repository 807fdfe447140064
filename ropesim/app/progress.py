"""A one-line terminal progress bar for the headless commands (run, render, compare)."""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO


def _format_seconds(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--:--"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressBar:
    """A one-line progress bar on a terminal: percentage, rate and ETA.

    Call it as ``bar(done, total)``; it redraws at most every ``interval`` s and only
    when ``enabled`` (by default: the stream is a terminal). ``close()`` ends the line.
    With ``lines`` each redraw is a line of its own instead (for a log file or pipe).
    """

    def __init__(self, label: str, unit: str, enabled: bool | None = None,
                 stream: TextIO | None = None, width: int = 24, interval: float = 0.1,
                 lines: bool = False):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.label, self.unit, self.width, self.interval = label, unit, width, interval
        self.lines = lines
        self._start: float | None = None
        self._last_draw = -math.inf
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        """Record progress; rate and ETA are measured from the first call."""
        now = time.perf_counter()
        if self._start is None:
            self._start = now
        if not self.enabled or (now - self._last_draw < self.interval and done < total):
            return
        self._last_draw = now
        elapsed = now - self._start
        rate = done / elapsed if elapsed > 0 else math.nan
        eta = (total - done) / rate if rate and rate > 0 else math.inf
        fraction = done / total if total else 1.0
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        speed = f"{rate:,.0f}" if math.isfinite(rate) and done else "--"
        line = (f"{self.label} [{bar}] {fraction:4.0%} {done}/{total} {self.unit} "
                f"{speed} {self.unit}/s ETA {_format_seconds(eta)}")
        if self.lines:
            self.stream.write(line + "\n")
        else:
            self.stream.write("\r" + line + "\x1b[K")
            self._drawn = True
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False


#: seconds between progress lines in a log (``--progress`` when stderr is not a terminal)
LOG_INTERVAL = 2.0


def progress_bar(label: str, unit: str, quiet: bool, forced: bool) -> ProgressBar:
    """The bar of a headless command: off with ``-q``; with ``--progress`` on even when
    stderr is not a terminal (then one line every LOG_INTERVAL s); else on a terminal only."""
    if quiet:
        return ProgressBar(label, unit, enabled=False)
    if forced and not _is_terminal(sys.stderr):
        return ProgressBar(label, unit, enabled=True, interval=LOG_INTERVAL, lines=True)
    return ProgressBar(label, unit)


__all__ = ["LOG_INTERVAL", "ProgressBar", "progress_bar"]
