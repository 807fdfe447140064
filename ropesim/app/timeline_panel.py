"""The panel's "Timeline" section: the history slider, branch controls and plots, and
the stability gauge.

:class:`TimelineSection` draws into the panel window (``Panel`` calls
:meth:`TimelineSection.draw` between its other sections) and turns every click into
a call on the controller's :class:`~ropesim.app.timeline.Timeline`. What it shows:

* how many simulated seconds the history holds and its memory against the budget;
  a slider scrubbing through it (Left / Right step, Space resumes from the shown
  moment); in a replay, that nothing is simulated;
* "Branch here" / "Drop branch" and, while branched, a plot of the RMS position
  difference between the runs (m, left axis) and both runs' energies (J, right axis);
* the stability gauge: dt / dt_limit of the explicit integrators
  (:class:`~ropesim.engine.stability.StabilityGauge`), green below 0.5, amber below 1,
  red from 1 on (:func:`gauge_color`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from imgui_bundle import imgui, implot

from ..engine.stability import StabilityGauge
from .history import MB
from .readouts import LiveReadouts, copied, draw_text_lines
from .timeline import BUDGET_LAYERS

GREEN = (0.35, 0.85, 0.4, 1.0)
AMBER = (1.0, 0.7, 0.2, 1.0)
RED = (1.0, 0.35, 0.3, 1.0)
DIM = (0.7, 0.72, 0.78, 1.0)
GAUGE_EVERY = 30          # frames between gauge readings (it refreshes on parameter changes)
BRANCH_PLOT_HEIGHT = 150.0  # px


def gauge_color(margin: float) -> tuple[float, float, float, float]:
    """The gauge's RGBA colour for dt / dt_limit: green < 0.5, amber < 1, red >= 1."""
    if margin < 0.5:
        return GREEN
    return AMBER if margin < 1.0 else RED


class GaugeReading:
    """dt / dt_limit of one simulation, read every ``every`` calls of :meth:`margin`
    (the gauge itself recomputes only when the parameters changed)."""

    def __init__(self, every: int = GAUGE_EVERY) -> None:
        self.every = int(every)
        self._gauge: StabilityGauge | None = None
        self._calls = 0
        self._margin = math.nan
        self._limit = math.nan

    def read(self, sim: Any) -> tuple[float, float]:
        """(margin dt / limit, limit s) of ``sim`` (a new simulation is read at once)."""
        if self._gauge is None or self._gauge.sim is not sim:
            self._gauge, self._calls = StabilityGauge(sim), 0
        if self._calls % self.every == 0:
            self._limit = self._gauge.limit()
            self._margin = sim.dt / self._limit
        self._calls += 1
        return self._margin, self._limit


class TimelineSection:
    """The Timeline section of the panel for a controller with a ``timeline``."""

    def __init__(self) -> None:
        self.gauge = GaugeReading()

    def draw(self, c: Any, width: float, live: LiveReadouts) -> None:
        """Build the section's widgets (inside the panel window); its numbers are the
        read-outs of ``live`` (refreshed a few times a second)."""
        timeline = c.timeline
        lines, fraction, label = live.get("timeline", lambda: self._readouts(c))
        draw_text_lines(lines)
        changed, value = imgui.slider_float("##timeline", fraction, 0.0, 1.0, label)
        if changed:
            timeline.scrub_to(value)
        if imgui.button("<##back"):
            timeline.step_back()
        imgui.same_line()
        if imgui.button(">##forward"):
            timeline.step_forward()
        if not timeline.replaying:
            imgui.same_line()
            if imgui.button("Branch here (B)"):
                timeline.branch_here()
            if timeline.branch is not None:
                imgui.same_line()
                if imgui.button("Drop branch (N)"):
                    timeline.drop_branch()
            if imgui.button("Save history (.npz)"):
                timeline.save_history()
        self._gauge(c)
        if timeline.branch is not None:
            series, shown = live.get("branch", lambda: (copied(timeline.branch.series.series()),
                                                         c.sim.time))
            self._branch_plot(timeline.branch, series, width, shown)

    @staticmethod
    def _readouts(c: Any) -> tuple[list[tuple[imgui.ImVec4 | None, str]], float, str]:
        """The section's text lines (colour or None, text), the slider's fraction and label."""
        timeline = c.timeline
        if timeline.replaying:
            replay = timeline.replay
            lines = [(imgui.ImVec4(*AMBER), "replay: nothing is simulated"),
                     (imgui.ImVec4(*DIM), "(step, integrator and parameters are off)"),
                     (None, f"{replay.name}: frame {replay.index + 1} / {len(replay)}, "
                            f"{replay.duration:.2f} s")]
        else:
            history = timeline.history
            lines = [(None, f"history holds {history.seconds_held:.2f} s ({len(history)} frames)"),
                     (imgui.ImVec4(*DIM),
                      f"{history.nbytes / MB:.1f} of {history.budget_mb:g} MB (--history-mb)")]
        return lines, float(timeline.fraction), f"t = {c.sim.time:.3f} s"

    def _gauge(self, c: Any) -> None:
        if c.timeline.replaying:
            return
        margin, limit = self.gauge.read(c.sim)
        if not math.isfinite(limit):
            imgui.text_colored(imgui.ImVec4(*DIM), "stability: nothing can move (no limit)")
            return
        imgui.text_colored(imgui.ImVec4(*gauge_color(margin)),
                           f"dt / dt_limit = {margin:.2f}  (limit {limit:.3g} s)")
        if c.sim.unconditionally_stable:
            imgui.same_line()
            imgui.text_colored(imgui.ImVec4(*DIM), f"{c.sim.integrator}: any dt")

    def _branch_plot(self, branch: Any, series: dict[str, np.ndarray], width: float,
                     shown: float) -> None:
        """RMS difference (left axis) and both energies (right axis) over time (the
        branch's ``series`` as last read); a vertical line marks the shown moment (s)."""
        if branch.diverged:
            imgui.text_colored(imgui.ImVec4(*RED), branch.diverged)
        if len(series["time"]) < 2:
            imgui.text_colored(imgui.ImVec4(*DIM), "branched: resume to compare the runs")
            return
        flags = implot.AxisFlags_.auto_fit
        if implot.begin_plot("##branch", imgui.ImVec2(width, BRANCH_PLOT_HEIGHT)):
            implot.setup_axes("t [s]", "RMS diff [m]", flags, flags)
            implot.setup_axis(implot.ImAxis_.y2, "E [J]", flags | implot.AxisFlags_.aux_default)
            implot.setup_legend(implot.Location_.north,
                                implot.LegendFlags_.horizontal | implot.LegendFlags_.outside)
            time = series["time"]
            implot.plot_line("RMS diff", time, series["rms"])
            implot.set_axes(implot.ImAxis_.x1, implot.ImAxis_.y2)
            implot.plot_line("E branch", time, series["energy"])
            implot.plot_line("E original", time, series["ghost_energy"])
            implot.plot_inf_lines("##shown", np.array([shown]))
            implot.end_plot()


def stacked(series: dict[str, np.ndarray], layers: tuple[str, ...]) -> list[np.ndarray]:
    """The running sums of ``layers`` (bottom first): the layers' upper edges, J."""
    edges, total = [], np.zeros_like(series["time"])
    for name in layers:
        total = total + series[name]
        edges.append(total)
    return edges


class EnergyBudgetPlot:
    """The Energy section's budget: a checkbox that starts ``sim.track_energy`` and the
    budget as stacked areas (kinetic, elastic, then each loss since tracking began) under
    the line they reach when the budget closes (initial + inputs - potentials)."""

    def draw(self, c: Any, width: float, live: LiveReadouts) -> None:
        """Build the checkbox and, while tracking, the balance and the plot (the read-outs
        of ``live``, refreshed a few times a second)."""
        timeline = c.timeline
        if timeline.replaying:
            return
        changed, on = imgui.checkbox("energy budget (stacked)", c.sim.track_energy)
        if changed:
            timeline.set_budget_tracking(on)
        if not c.sim.track_energy:
            return
        series, balance = live.get("budget", lambda: self._readouts(c))
        if series is None:
            imgui.text_colored(imgui.ImVec4(*DIM), "(tracking: samples follow)")
            return
        imgui.text_colored(imgui.ImVec4(*DIM), balance)
        imgui.text_colored(imgui.ImVec4(*DIM), "line: initial + inputs - potentials")
        layers = tuple(name for name in BUDGET_LAYERS if np.any(series[name] != 0.0))
        flags = implot.AxisFlags_.auto_fit
        if implot.begin_plot("##budget", imgui.ImVec2(width, BRANCH_PLOT_HEIGHT)):
            implot.setup_axes("t [s]", "E [J]", flags, flags)
            implot.setup_legend(implot.Location_.north,
                                implot.LegendFlags_.horizontal | implot.LegendFlags_.outside)
            time, lower = series["time"], np.zeros_like(series["time"])
            for name, upper in zip(layers, stacked(series, layers)):
                implot.plot_shaded(name, time, lower, upper)
                lower = upper
            implot.plot_line("##available", time, series["available"])
            implot.end_plot()

    @staticmethod
    def _readouts(c: Any) -> tuple[dict[str, np.ndarray] | None, str]:
        """Copies of the budget's series (None under two samples) and the balance line."""
        series = c.timeline.budget.series()
        if len(series["time"]) < 2:
            return None, ""
        b = c.sim.energy_budget()
        return copied(series), (f"balance {b.balance:+.3g} J "
                                f"({100 * b.relative_balance:.2g} % of {b.scale:.3g} J)")


__all__ = ["EnergyBudgetPlot", "GaugeReading", "TimelineSection", "gauge_color", "stacked"]
