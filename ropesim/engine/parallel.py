"""Threading for the parallel kernels: numba's threading layer, how its threads wait,
and when a parallel kernel is worth running at all.

Why: on a small machine another busy process (or the viewer's own render thread) can
take a core at any moment. A fork/join kernel then waits for its slowest thread, and
threads that spin at barriers (numba's default OpenMP settings) fight that process for
the cores: parallel steps were measured 10-100x slower than serial ones under load.

What this module does:

1. ``configure()`` (run when ropesim's integrators are imported, before any parallel
   kernel) asks numba for the OpenMP layer (then TBB, then workqueue) and bounds how long
   OpenMP threads spin before they sleep (``GOMP_SPINCOUNT``, see SPIN_COUNT): long enough
   to bridge the few microseconds between two steps, short enough that an idle or
   losing thread gives its core back. Settings the user made in the environment
   (``NUMBA_THREADING_LAYER``, ``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``) are kept.
2. ``Chooser``: every kernel with a parallel version also has a serial version that
   gives bit-for-bit the same result (the work is split so that each value is summed
   in the same order whatever the thread count). A Chooser times both on the running
   machine (the two taking turns, so that load from other processes falls on both),
   uses the faster, and times them again soon after a new pick and then every 0.25-2 s,
   so a parallel kernel never stays slower than the serial one when the machine gets
   busy, and switching never changes a result.

``set_mode("serial" | "parallel" | "auto")`` (or the ``ROPESIM_PARALLEL`` environment
variable) forces a choice, e.g. for benchmarks; ``info()`` reports the configuration.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterable

#: GOMP_SPINCOUNT set when the user has not chosen a wait policy: about 30-100 us of
#: spinning before an OpenMP thread sleeps on a futex (libgomp's default is 300,000
#: spins, and unbounded with OMP_WAIT_POLICY=active).
SPIN_COUNT = 20000

#: threading layers in order of preference
LAYER_PRIORITY = ("omp", "tbb", "workqueue")

MODES = ("auto", "serial", "parallel")

#: a Chooser's window confirms its pick by a clear margin when the slower version's time
#: is above this multiple of the faster one's; then the next window waits twice as long
CLEAR_MARGIN = 1.2
#: a window ends at once when one timed call of a version takes more than this multiple
#: of the other's time in the window (on a busy machine a parallel call can take 10-100x
#: the serial one: re-timing it for a whole window would cost seconds)
HOPELESS = 4.0
#: the longest wait (s) between windows once windows keep confirming a pick clearly (a
#: Chooser's default max_interval). Between windows, a call of a parallel pick that takes
#: more than HOPELESS x its time in the last window opens a window at once (load came
#: up: parallel calls then slow down 4-100x, serial ones at most about 2x, and a busy
#: machine's serial calls vary too much to trigger on), so a clear pick need not be
#: re-timed every few seconds: on the 128 x 128 cloth VBD's serial kernel takes twice
#: the parallel one, and its re-timing every 2 s cost about a sixth of the steps' time
MAX_INTERVAL = 16.0
#: a Chooser with ``drift`` (two ways of one computation whose costs follow the state,
#: such as a neighbour list on tiles or on columns while a cloth bunches up): between
#: windows, when the median of the pick's last DRIFT_CALLS calls takes longer than the
#: other version took in the last window, the next window opens at once. On the
#: benchmark cloth the tiles' build went from 0.47-0.59 to 1.3 ms (block means) within
#: 0.3-0.7 s of simulated time as it bunched, the columns' from 0.69-0.72 to 0.84:
#: without the trigger the tiles ran on until the next window, up to MAX_INTERVAL later
DRIFT_CALLS = 3

_mode = os.environ.get("ROPESIM_PARALLEL", "auto").strip().lower() or "auto"
if _mode not in MODES:
    _mode = "auto"
_configured = False
_notes: list[str] = []


def configure() -> None:
    """Choose numba's threading layer and the OpenMP wait policy (once, idempotent).

    Must run before the first parallel kernel launch of the process to take effect;
    ropesim.engine.integrators calls it on import.
    """
    global _configured
    if _configured:
        return
    _configured = True
    import numba

    if os.environ.get("NUMBA_THREADING_LAYER"):
        _notes.append("threading layer set by NUMBA_THREADING_LAYER")
    else:
        try:
            numba.config.THREADING_LAYER_PRIORITY = list(LAYER_PRIORITY)
        except Exception:  # pragma: no cover - older numba
            pass
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        # read by libgomp when it starts, i.e. at numba's first parallel launch
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    else:
        _notes.append("OpenMP wait policy set in the environment")


def set_mode(mode: str) -> None:
    """'auto' (time both versions, use the faster), 'serial' or 'parallel'."""
    global _mode
    mode = str(mode).strip().lower()
    if mode not in MODES:
        raise ValueError(f"mode: allowed {', '.join(MODES)}, got {mode!r}")
    _mode = mode


def get_mode() -> str:
    return _mode


def threads() -> int:
    """Threads a parallel kernel would use now (numba.get_num_threads())."""
    import numba

    return int(numba.get_num_threads())


def max_threads() -> int:
    """The most threads a parallel kernel can ever use in this process
    (numba.config.NUMBA_NUM_THREADS: numba.set_num_threads cannot go above it)."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


def info() -> dict:
    """The threading configuration: layer (once a parallel kernel has run), threads,
    wait policy, mode."""
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "not started (priority: " + ", ".join(
            getattr(numba.config, "THREADING_LAYER_PRIORITY", LAYER_PRIORITY)) + ")"
    return {
        "layer": layer,
        "threads": threads(),
        "GOMP_SPINCOUNT": os.environ.get("GOMP_SPINCOUNT"),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
        "mode": _mode,
        "notes": list(_notes),
    }


class Chooser:
    """Picks, call by call, the serial or the parallel version of one kernel.

    Both versions must give identical results. In 'auto' mode the two versions are timed
    against each other in *probe windows*: the versions take turns (``interleave`` calls
    each, so that a burst of load from another process falls on both), until each has
    ``probe`` timed calls; the one with the lower median (or mean, ``statistic``) of them
    runs from there on. The first call of each version is not timed (it may compile), nor,
    with turns of two calls or more, the first call of a turn (threads waking up, caches
    holding the other version's data: costs that a run of calls pays once).
    ``interleave``: 1 (True) alternates call by call, for calls whose cost drifts;
    0 (False) times each version in one block of ``probe + 1`` calls.

    A window ends early when one call of a version takes more than HOPELESS x the other's
    time in the window. The next window opens ``interval`` seconds later; the interval
    doubles, up to ``max_interval``, each time a window confirms the choice by a clear margin
    (CLEAR_MARGIN), and starts over after a close call; between windows, a call of a
    parallel pick slower than HOPELESS x its time in the last window opens the next one
    at once, and with ``drift`` so does a pick (either version) whose recent calls
    (DRIFT_CALLS) take longer than the other version took in the last window. A pick
    the last window made (the first one, or a flip) is checked again soon, after
    ``recheck`` seconds: one noisy window on a busy machine then costs a few calls, not
    seconds of the slower version.
    Usage::

        parallel = chooser.parallel()
        start = time.perf_counter(); run(parallel); chooser.record(parallel, start)
    """

    def __init__(self, probe: int = 5, interval: float = 0.25,
                 max_interval: float = MAX_INTERVAL,
                 statistic: str = "median", interleave: int = 2, recheck: float = 0.03,
                 follows_mode: bool = True, drift: bool = False):
        if statistic not in ("median", "mean"):
            raise ValueError(f"statistic: allowed median, mean, got {statistic!r}")
        if isinstance(probe, bool) or not isinstance(probe, int) or probe < 1:
            raise ValueError(f"probe: allowed an integer >= 1, got {probe!r}")
        if not isinstance(interleave, int) or interleave < 0:
            raise ValueError(f"interleave: allowed an integer >= 0 (False, True, calls per "
                             f"turn), got {interleave!r}")
        self.probe = probe
        #: False: a choice between two ways of one computation that set_mode does not
        #: force (set_mode is about threads), so always timed
        self.follows_mode = bool(follows_mode)
        #: the costs follow the state: a pick that slows down is timed again (DRIFT_CALLS)
        self.drift = bool(drift)
        self.interleave = int(interleave)
        #: calls of one version in a row inside a window
        self.turn_length = self.interleave or probe + 1
        self._summary = _median if statistic == "median" else _mean
        self.base_interval = interval
        self.max_interval = max_interval
        self.interval = interval
        self.recheck = recheck
        self.samples: tuple[list[float], list[float]] = ([], [])
        self.calls = [0, 0]
        self.best = 0
        self.switches = 0
        self.windows = 0  # probe windows completed
        self._window = True  # the first window opens at the first call
        self._fresh = [0, 0]  # timed calls of each version in the open window
        self._turn = 0  # the version whose turn it is in the open window
        self._turn_left = self.turn_length
        self._last = -1  # the version of the last call, -1: none yet
        self._next_probe = 0.0
        self._slow = float("inf")  # s: a call of the pick slower than this opens a window
        self._drifted = float("inf")  # s: with drift, recent calls slower than this do
        # s: the pick's last DRIFT_CALLS calls since the last window
        self._recent: deque[float] = deque(maxlen=DRIFT_CALLS)

    def parallel(self) -> bool:
        """Should the next call run the parallel version?"""
        if self.follows_mode and _mode != "auto":
            return _mode == "parallel"
        if not self._window:
            if time.perf_counter() < self._next_probe:
                return bool(self.best)
            self._open_window()
        return bool(self._turn)

    def current(self) -> bool:
        """The pick as it stands (the parallel version?), without timing a call or
        opening a window: for a call that is itself part of another Chooser's window."""
        if self.follows_mode and _mode != "auto":
            return _mode == "parallel"
        return bool(self.best)

    def _open_window(self) -> None:
        self._window = True
        self._fresh = [0, 0]
        self._turn = self.best  # first a fresh time of the current pick to compare with
        self._turn_left = self.turn_length
        self._last = self.best

    def record(self, parallel: bool, start: float, work: float = 1.0) -> None:
        """Log a call of the given version that began at ``start`` (time.perf_counter());
        ``work`` (> 0) normalises calls of varying size, e.g. solver iterations."""
        if self.follows_mode and _mode != "auto":
            return
        which = int(parallel)
        self.calls[which] += 1
        if not self._window:
            took = (time.perf_counter() - start) / work
            if which == self.best == 1 and took > self._slow:
                self._next_probe = 0.0  # the parallel pick slowed down: time both again
            elif self.drift and which == self.best:
                recent = self._recent
                recent.append(took)
                if len(recent) == DRIFT_CALLS and _median(recent) > self._drifted:
                    self._next_probe = 0.0  # the state made the pick slower: time both
            return
        now = time.perf_counter()
        switched = which != self._last
        self._last = which
        if self.calls[which] > 1 and not (switched and self.interleave != 1):
            samples = self.samples[which]
            sample = (now - start) / work
            samples.append(sample)
            if len(samples) > self.probe:
                del samples[0]
            self._fresh[which] += 1
            other = 1 - which
            fresh = min(self._fresh[other], self.probe)
            if fresh and sample > HOPELESS * self._summary(self.samples[other][-fresh:]):
                self._close_window(now, winner=other)  # no need for more calls of it
                return
        self._turn_left -= 1
        if self._turn_left <= 0:
            self._turn = 1 - self._turn
            self._turn_left = self.turn_length
        if min(self._fresh) >= self.probe:
            self._close_window(now)

    def _close_window(self, now: float, winner: int = -1) -> None:
        """Pick from the window's samples (or ``winner``, the other one having been
        HOPELESS) and schedule the next window."""
        if winner >= 0:
            best, clear = winner, True
        else:
            serial, parallel = self._summary(self.samples[0]), self._summary(self.samples[1])
            best = int(parallel < serial)
            clear = max(serial, parallel) > CLEAR_MARGIN * min(serial, parallel)
        confirmed = self.windows > 0 and best == self.best
        self.windows += 1
        self._window = False
        picked = self.samples[best]
        self._slow = HOPELESS * self._summary(picked) if picked else float("inf")
        other = self.samples[1 - best]
        self._drifted = self._summary(other) if other else float("inf")
        self._recent.clear()
        if best != self.best:
            self.switches += 1
            self.best = best
        if not confirmed:
            self.interval = self.base_interval
            self._next_probe = now + self.recheck
            return
        if clear:
            self.interval = min(2.0 * self.interval, self.max_interval)
        else:
            self.interval = self.base_interval
        self._next_probe = now + self.interval

    def __repr__(self) -> str:
        med = [(self._summary(s) * 1e6 if s else float("nan")) for s in self.samples]
        return (f"Chooser(best={'parallel' if self.best else 'serial'}, "
                f"serial {med[0]:.1f} us, parallel {med[1]:.1f} us, calls={self.calls}, "
                f"switches={self.switches})")


_helper = None


def helper_thread():
    """A one-thread executor for work that runs beside the calling thread (kernels
    compiled with nogil=True), created on first use and shared by all simulations."""
    global _helper
    if _helper is None:
        from concurrent.futures import ThreadPoolExecutor

        _helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ropesim-helper")
    return _helper


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _median(values: Iterable[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
