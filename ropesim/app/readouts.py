"""The panel's live read-outs, refreshed at a fixed rate instead of every frame.

While the simulation runs, the panel's numbers (simulated time, fps, real-time
factor, steps per frame, solver statistics, energies, the history's length) and its
plots (energy, energy budget) change every frame; imgui's draw lists then change
every frame and the backend's cached lists (:mod:`ropesim.app.imgui_backend`) never
hit. :class:`LiveReadouts` keeps each read-out as it was computed at the last
refresh and recomputes them all READOUT_HZ times a second of wall time, so between
refreshes the panel's draw lists are identical and it is composited from its cache.

Everything the user does still shows at once: the widgets (sliders, checkboxes,
buttons, hover) read the controller directly every frame, and the read-outs refresh
in the same frame whenever the panel's state changes (:meth:`LiveReadouts.begin_frame`'s
``state``: pause, resume, a step or a scrub while paused, another scene or
integrator, a divergence, a recording started or stopped).
"""

from __future__ import annotations

import time
from typing import Callable, Hashable, Mapping, Sequence, TypeVar

import numpy as np
from imgui_bundle import imgui

READOUT_HZ = 5.0   # refreshes of the panel's live numbers and plots per second of wall time
KEPT_SHARE = 0.8   # a refresh is kept for the next frame when frames take under this of a period

T = TypeVar("T")


class LiveReadouts:
    """Read-outs computed at most ``hz`` times a second (wall time from ``clock``, s),
    and at once when the state passed to :meth:`begin_frame` changes."""

    def __init__(self, hz: float = READOUT_HZ,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if not hz > 0.0:
            raise ValueError(f"hz: must be > 0 refreshes per second, got {hz!r}")
        self.period_s = 1.0 / float(hz)
        self.clock = clock
        self.refreshes = 0                    # frames that recomputed the read-outs
        self._values: dict[str, object] = {}
        self._state: Hashable = None
        self._last_s: float | None = None
        self._frame_start_s: float | None = None
        self._frame_s: float | None = None    # wall time from the last frame's start to this one's
        self._fresh = True

    def begin_frame(self, state: Hashable) -> bool:
        """Start a frame: True when its read-outs are recomputed (a period has passed
        since the last refresh, or ``state`` differs from the last frame's)."""
        now = float(self.clock())
        self._fresh = (self._last_s is None or state != self._state
                       or now - self._last_s >= self.period_s)
        self._state = state
        self._frame_s = now - self._frame_start_s if self._frame_start_s is not None else None
        self._frame_start_s = now
        if self._fresh:
            self._last_s = now
            self.refreshes += 1
        return self._fresh

    @property
    def kept_next_frame(self) -> bool:
        """Whether this frame refreshed the read-outs and the next frame will most likely
        show them unchanged (frames come faster than refreshes: the last one took under
        KEPT_SHARE of a period); then caching what they draw pays at once."""
        return bool(self._fresh and self._frame_s is not None
                    and self._frame_s < KEPT_SHARE * self.period_s)

    def get(self, name: str, compute: Callable[[], T]) -> T:
        """The read-out ``name``: ``compute()`` in a refreshing frame (or the first time),
        else the value it gave then."""
        if self._fresh or name not in self._values:
            self._values[name] = compute()
        return self._values[name]   # type: ignore[return-value]

    def shown(self, name: str) -> object:
        """The value of read-out ``name`` as last computed (KeyError before the first)."""
        return self._values[name]


def copied(series: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Copies of a read-out's arrays (the source's buffers keep changing under a plot
    shown until the next refresh)."""
    return {name: np.array(values) for name, values in series.items()}


def draw_text_lines(lines: Sequence[tuple[imgui.ImVec4 | None, str]]) -> None:
    """imgui text lines, each (colour, or None for the default colour, text)."""
    for color, text in lines:
        if color is None:
            imgui.text(text)
        else:
            imgui.text_colored(color, text)


__all__ = ["KEPT_SHARE", "LiveReadouts", "READOUT_HZ", "copied", "draw_text_lines"]
