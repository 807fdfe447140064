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
   machine, uses the faster, and re-checks the other about twice a second, so a
   parallel kernel never stays slower than the serial one when the machine gets busy,
   and switching never changes a result.

``set_mode("serial" | "parallel" | "auto")`` (or the ``ROPESIM_PARALLEL`` environment
variable) forces a choice, e.g. for benchmarks; ``info()`` reports the configuration.
"""

from __future__ import annotations

import os
import time

#: GOMP_SPINCOUNT set when the user has not chosen a wait policy: about 30-100 us of
#: spinning before an OpenMP thread sleeps on a futex (libgomp's default is 300,000
#: spins, and unbounded with OMP_WAIT_POLICY=active).
SPIN_COUNT = 20000

#: threading layers in order of preference
LAYER_PRIORITY = ("omp", "tbb", "workqueue")

MODES = ("auto", "serial", "parallel")

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

    Both versions must give identical results. In 'auto' mode the first call of each
    version is not timed (it may compile); then each version is timed for ``probe``
    calls (one after the other, or alternating call by call with ``interleave``, for
    calls whose cost drifts), and from there on the one with the lower median (or mean,
    ``statistic``) of its last ``probe`` call times runs, while the other one is re-timed
    for ``probe`` calls after ``interval`` seconds (the interval doubles, up to
    ``max_interval``, each time the re-timing confirms the choice, and starts over when it
    flips it). Usage::

        parallel = chooser.parallel()
        start = time.perf_counter(); run(parallel); chooser.record(parallel, start)
    """

    def __init__(self, probe: int = 5, interval: float = 0.25, max_interval: float = 2.0,
                 statistic: str = "median", interleave: bool = False):
        if statistic not in ("median", "mean"):
            raise ValueError(f"statistic: allowed median, mean, got {statistic!r}")
        self.probe = probe
        self.interleave = interleave
        self._turn = False
        self._summary = _median if statistic == "median" else _mean
        self.base_interval = interval
        self.max_interval = max_interval
        self.interval = interval
        self.samples: tuple[list[float], list[float]] = ([], [])
        self.calls = [0, 0]
        self.best = 0
        self.switches = 0
        self._probing = -1  # version being re-timed, or -1
        self._probe_left = 0
        self._next_probe = 0.0

    def parallel(self) -> bool:
        """Should the next call run the parallel version?"""
        if _mode != "auto":
            return _mode == "parallel"
        if self.calls[0] <= self.probe or self.calls[1] <= self.probe:
            if self.interleave:
                return self.calls[1] < self.calls[0]
            return self.calls[0] > self.probe
        if self._probing < 0 and time.perf_counter() >= self._next_probe:
            self._probing = 1 - self.best
            self._probe_left = self.probe
        if self._probing >= 0:
            if self.interleave:  # alternate with the current choice while re-timing
                self._turn = not self._turn
                return bool(self._probing if self._turn else self.best)
            return bool(self._probing)
        return bool(self.best)

    def record(self, parallel: bool, start: float, work: float = 1.0) -> None:
        """Log a call of the given version that began at ``start`` (time.perf_counter());
        ``work`` (> 0) normalises calls of varying size, e.g. solver iterations."""
        now = time.perf_counter()
        if _mode != "auto":
            return
        which = int(parallel)
        self.calls[which] += 1
        if self.calls[which] == 1:
            return  # may include compilation
        samples = self.samples[which]
        samples.append((now - start) / work)
        if len(samples) > self.probe:
            del samples[0]
        if self.calls[0] <= self.probe or self.calls[1] <= self.probe:
            return
        best = int(self._summary(self.samples[1]) < self._summary(self.samples[0]))
        if self._next_probe == 0.0:  # both versions timed for the first time
            self._next_probe = now + self.interval
        if self._probing == which:
            self._probe_left -= 1
            if self._probe_left > 0:
                return
            self._probing = -1
            if best == self.best:
                self.interval = min(2.0 * self.interval, self.max_interval)
            else:
                self.interval = self.base_interval
            self._next_probe = now + self.interval
        if best != self.best:
            self.switches += 1
            self.best = best

    def __repr__(self) -> str:
        med = [(self._summary(s) * 1e6 if s else float("nan")) for s in self.samples]
        return (f"Chooser(best={'parallel' if self.best else 'serial'}, "
                f"serial {med[0]:.1f} us, parallel {med[1]:.1f} us, calls={self.calls})")


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


def _median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
