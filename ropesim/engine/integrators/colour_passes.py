"""The serial-or-parallel choice of the colour-by-colour Gauss-Seidel solvers (xpbd.py,
vbd.py): each has a serial kernel and a parallel one with identical results (within a
colour no two updates touch one particle), and runs one of them per call."""

from __future__ import annotations

import time
from typing import Any, Callable

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
    whether it is timed against the serial one (PARALLEL_MIN_SPRINGS)."""

    def __init__(self, possible: bool, n_springs: int):
        self.possible = bool(possible)
        self.large = n_springs >= PARALLEL_MIN_SPRINGS
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
