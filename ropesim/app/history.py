"""The viewer's history: a ring buffer of simulation states bounded by a memory budget.

:class:`History` keeps one snapshot per displayed frame (whatever the caller pushes:
``sim.get_state()`` in the viewer, an ``rs.SimState``) with the simulated time it was
taken at. It needs no window and no simulation: it only sizes, orders and drops states.

* :meth:`History.push` appends the newest state; the oldest ones are dropped while the
  held bytes exceed the budget (the newest state is always kept);
* a cursor marks the state shown: :meth:`step_back`, :meth:`step_forward` and
  :meth:`scrub_to` move it and return the state to restore;
* :meth:`truncate_after` drops the states after the cursor (resuming from a rewound
  moment; pushing while rewound does it first).

Consecutive snapshots of a run share their unchanged parameter arrays (``sim.get_state``
reuses the previous snapshot's stiffness, damping, rest lengths, masses until a live
edit changes them): :attr:`History.nbytes` counts every array once, however many
states hold it, so the budget holds frames, not copies of unchanged parameters.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from typing import Any

import numpy as np

#: the default memory budget of the viewer's history (``ropesim view --history-mb``), MB
DEFAULT_HISTORY_MB = 256.0
MB = 1 << 20   # bytes per MB (MiB)


def _arrays(state: Any) -> list[tuple[Any, str, np.ndarray]]:
    """(owner, field name, array) of every numpy array field of a dataclass state and of
    the dataclasses nested in its fields ([] for anything else)."""
    found: list[tuple[Any, str, np.ndarray]] = []
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        for f in dataclasses.fields(state):
            value = getattr(state, f.name)
            if isinstance(value, np.ndarray):
                found.append((state, f.name, value))
            else:
                found.extend(_arrays(value))
    return found


def state_nbytes(state: Any) -> int:
    """Bytes a state holds: its ``nbytes`` attribute, else the sum of its arrays'."""
    size = getattr(state, "nbytes", None)
    if size is not None:
        return int(size)
    return sum(int(a.nbytes) for _, _, a in _arrays(state))


class History:
    """States in time order, within ``budget_mb`` MB; a cursor marks the one shown.

    Parameters
    ----------
    budget_mb : the most memory the states may hold, MB (> 0); the newest state is
        kept even if it alone is larger.
    """

    def __init__(self, budget_mb: float = DEFAULT_HISTORY_MB) -> None:
        try:
            budget = float(budget_mb)
        except (TypeError, ValueError):
            raise TypeError(f"budget_mb: expected a number of MB > 0, got {budget_mb!r}") from None
        if not (budget > 0 and math.isfinite(budget)):
            raise ValueError(f"budget_mb: must be a finite number of MB > 0, got {budget_mb!r}")
        self.budget_mb = budget
        self.budget_bytes = int(budget * MB)
        self._times: deque[float] = deque()
        self._states: deque[Any] = deque()
        self._refs: dict[int, int] = {}         # id(array) -> states holding it
        self._array_bytes: dict[int, int] = {}  # id(array) -> its bytes
        self._nbytes = 0
        self._cursor = -1

    # -- size ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._states)

    @property
    def nbytes(self) -> int:
        """Bytes the held states take (arrays shared between states counted once)."""
        return self._nbytes

    @property
    def seconds_held(self) -> float:
        """Simulated time from the oldest to the newest state, s."""
        return self._times[-1] - self._times[0] if self._times else 0.0

    @property
    def times(self) -> np.ndarray:
        """The states' simulated times (k,), s, oldest first."""
        return np.fromiter(self._times, dtype=np.float64, count=len(self._times))

    # -- cursor --------------------------------------------------------------------------
    @property
    def cursor(self) -> int:
        """Index of the shown state (0 = oldest), -1 when empty."""
        return self._cursor

    @property
    def at_end(self) -> bool:
        """Whether the newest state is shown (or nothing is held)."""
        return self._cursor == len(self._states) - 1

    @property
    def current(self) -> Any:
        """The shown state (None when empty)."""
        return self._states[self._cursor] if self._states else None

    @property
    def current_time(self) -> float:
        """Simulated time of the shown state, s (0 when empty)."""
        return self._times[self._cursor] if self._states else 0.0

    @property
    def fraction(self) -> float:
        """Where the shown state lies between the oldest (0) and the newest (1), in time."""
        span = self.seconds_held
        return (self.current_time - self._times[0]) / span if span > 0 else 1.0

    # -- changes -------------------------------------------------------------------------
    def clear(self) -> None:
        """Drop every state."""
        self._times.clear()
        self._states.clear()
        self._refs.clear()
        self._array_bytes.clear()
        self._nbytes = 0
        self._cursor = -1

    def push(self, state: Any, time: float) -> None:
        """Append ``state`` taken at simulated ``time`` (s) as the newest and show it.
        Pushed while rewound, the states after the shown one are dropped first. The
        oldest states are dropped while the history holds more than its budget."""
        self.truncate_after()
        self._times.append(float(time))
        self._states.append(state)
        self._account(state, +1)
        self._cursor = len(self._states) - 1
        while self._nbytes > self.budget_bytes and len(self._states) > 1:
            self._drop(oldest=True)

    def truncate_after(self) -> int:
        """Drop the states after the shown one; returns how many were dropped."""
        dropped = 0
        while self._cursor < len(self._states) - 1:
            self._drop(oldest=False)
            dropped += 1
        return dropped

    def states(self) -> list[Any]:
        """The held states, oldest first."""
        return list(self._states)

    def later(self) -> list[tuple[float, Any]]:
        """(time s, state) of the states after the shown one, oldest first."""
        return list(zip(self._times, self._states))[self._cursor + 1:]

    def replace_newest(self, state: Any) -> None:
        """Put ``state`` in the place of the newest state (same time; shown)."""
        if not self._states:
            raise ValueError("replace_newest: the history is empty")
        time = self._times[-1]
        self._cursor = len(self._states) - 1
        self._drop(oldest=False)
        self.push(state, time)

    def map_states(self, change: Any) -> None:
        """Replace every state by ``change(state)`` (same times, same shown index)."""
        entries = [(t, change(s)) for t, s in zip(self._times, self._states)]
        cursor = self._cursor
        self.clear()
        for time, state in entries:
            self._times.append(time)
            self._states.append(state)
            self._account(state, +1)
        self._cursor = cursor

    def step_back(self) -> Any:
        """Show the state before the shown one and return it (None at the oldest)."""
        if self._cursor <= 0:
            return None
        self._cursor -= 1
        return self._states[self._cursor]

    def step_forward(self) -> Any:
        """Show the state after the shown one and return it (None at the newest)."""
        if self.at_end:
            return None
        self._cursor += 1
        return self._states[self._cursor]

    def scrub_to(self, fraction: float | None = None, *, time: float | None = None) -> Any:
        """Show the state nearest to ``fraction`` of the held span (0 oldest, 1 newest,
        clamped) or to simulated ``time`` (s); returns it (None when empty)."""
        if (fraction is None) == (time is None):
            raise TypeError("scrub_to: give either fraction (0..1) or time (s), not both")
        if not self._states:
            return None
        value = fraction if time is None else time
        if not math.isfinite(float(value)):
            name = "fraction" if time is None else "time"
            raise ValueError(f"scrub_to: {name} must be finite, got {value!r}")
        times = self.times
        if time is None:
            time = times[0] + min(max(float(fraction), 0.0), 1.0) * (times[-1] - times[0])
        index = int(np.searchsorted(times, float(time)))
        if index == len(times) or (index > 0 and time - times[index - 1] <= times[index] - time):
            index -= 1
        self._cursor = index
        return self._states[index]

    # -- bookkeeping -----------------------------------------------------------------------
    def _account(self, state: Any, sign: int) -> None:
        """Add (+1) or remove (-1) ``state``'s bytes, its arrays through the shared counts."""
        arrays = _arrays(state)
        changed = max(state_nbytes(state) - sum(int(a.nbytes) for _, _, a in arrays), 0)
        for _, _, array in arrays:
            key = id(array)
            count = self._refs.get(key, 0) + sign
            if sign > 0 and count == 1:
                self._array_bytes[key] = int(array.nbytes)
                changed += int(array.nbytes)
            elif sign < 0 and count == 0:
                changed += self._array_bytes.pop(key)
            if count:
                self._refs[key] = count
            else:
                self._refs.pop(key, None)
        self._nbytes += sign * changed

    def _drop(self, oldest: bool) -> None:
        if oldest:
            self._times.popleft()
            state = self._states.popleft()
            self._cursor = max(self._cursor - 1, 0)
        else:
            self._times.pop()
            state = self._states.pop()
            self._cursor = min(self._cursor, len(self._states) - 1)
        self._account(state, -1)


__all__ = ["DEFAULT_HISTORY_MB", "History", "state_nbytes"]
