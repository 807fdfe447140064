"""What the colour-by-colour Gauss-Seidel solvers (xpbd.py, vbd.py) share: the choice of
their serial or parallel kernel (identical results: within a colour no two updates touch
one particle) and the checks of their settings."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from .. import parallel

#: springs from which the parallel kernel is considered (a parallel.Chooser then times it
#: against the serial one); smaller systems run it only in parallel.set_mode("parallel").
#: Each colour is one fork/join region, a dozen or more per pass: on a loaded two-core
#: machine they were measured 10-70x slower than the serial pass on the 64 x 64 cloth
#: (24,000 springs), and the Chooser's re-timing of the slow version costs a share of that
PARALLEL_MIN_SPRINGS = 200_000


class ColourPasses:
    """Runs the serial or the parallel kernel of a coloured pass, call by call.

    ``possible``: the colouring allows the parallel kernel at all; ``n_springs`` decides
    whether it is timed against the serial one (from ``min_springs``, by default
    PARALLEL_MIN_SPRINGS)."""

    def __init__(self, possible: bool, n_springs: int,
                 min_springs: int = PARALLEL_MIN_SPRINGS):
        self.possible = bool(possible)
        self.large = n_springs >= min_springs
        self.chooser = parallel.Chooser()

    def run(self, serial: Callable, parallel_kernel: Callable, *args: Any) -> Any:
        """serial(*args) or parallel_kernel(*args), the same result either way."""
        use = (self.possible and (self.large or parallel.get_mode() == "parallel")
               and parallel.threads() > 1 and self.chooser.parallel())
        start = time.perf_counter()
        result = (parallel_kernel if use else serial)(*args)
        if self.large:
            self.chooser.record(use, start)
        return result


def number_setting(value: Any, field: str, allowed: str) -> float:
    """value as a float; TypeError naming ``field`` (e.g. "vbd.chebyshev_rho") and the
    ``allowed`` values for a non-number (bools included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                         np.floating)):
        raise TypeError(f"{field}: expected {allowed}, got {value!r}")
    return float(value)


class CountSetting:
    """An integrator attribute that holds an integer >= 1 (substeps, iterations): assigning
    anything else raises a ValueError naming "<integrator name>.<attribute>"."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else getattr(obj, self.slot)

    def __set__(self, obj: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{obj.name}.{self.name}: expected an integer >= 1, "
                             f"got {value!r}")
        setattr(obj, self.slot, int(value))
