"""The energy budget's columns in a run's CSV energy table (``ropesim run --csv``).

:class:`BudgetColumns` turns the budget on (``sim.track_energy``), samples
``sim.energy_budget()`` at the initial state and after every chunk ``record`` steps (it
wraps record's progress callback, which runs right after each sample) and, when the
trajectory was written as CSV, adds the columns :data:`BUDGET_COLUMNS` (J) to it: one
value per sample row, empty where a run stopped between a sample and its budget (an
interrupt). A divergence's last row (the kept state) gets the budget of that state.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from ..engine.energy_budget import INPUTS, LOSSES
from ..engine.simulation import Simulation
from .outputs import Progress, write_atomically

#: the budget's terms in the CSV, J: losses, inputs, balance and its scale
BUDGET_TERMS = (*LOSSES, *INPUTS, "balance", "scale")
BUDGET_COLUMNS = tuple(f"budget_{name}" for name in BUDGET_TERMS)


class BudgetColumns:
    """Budget samples of one recorded run, in the order of the trajectory's rows."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        sim.track_energy = True
        self.rows: list[tuple[float, ...]] = []
        self.sample()

    def sample(self) -> None:
        """Keep the budget now (a row of BUDGET_TERMS, J)."""
        budget = self.sim.energy_budget()
        self.rows.append(tuple(float(getattr(budget, name)) for name in BUDGET_TERMS))

    def progress(self, inner: Progress | None) -> Progress:
        """record's progress callback: a sample, then ``inner(done, total)``."""

        def callback(done: int, total: int) -> None:
            self.sample()
            if inner is not None:
                inner(done, total)

        return callback

    def finish(self, samples: int, completed_or_diverged: bool) -> None:
        """After record: a diverged run's last row (the kept state) gets its budget."""
        if completed_or_diverged and len(self.rows) == samples - 1:
            self.sample()

    def add_to_csv(self, path: Path) -> None:
        """Append the budget columns to the CSV energy table at ``path`` (comment lines
        kept), written whole."""
        lines = Path(path).read_text().splitlines(keepends=True)
        comments = [line for line in lines if line.startswith("#")]
        table = list(csv.reader(line for line in lines if not line.startswith("#")))
        out = io.StringIO()
        out.writelines(comments)
        writer = csv.writer(out, lineterminator="\n")
        header, body = table[0], table[1:]
        writer.writerow([*header, *BUDGET_COLUMNS])
        for index, row in enumerate(body):
            extra: Any = ([repr(value) for value in self.rows[index]]
                          if index < len(self.rows) else [""] * len(BUDGET_COLUMNS))
            writer.writerow([*row, *extra])
        write_atomically(Path(path), out.getvalue().encode("utf-8"))


__all__ = ["BudgetColumns", "BUDGET_COLUMNS", "BUDGET_TERMS"]
