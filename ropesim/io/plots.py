"""Figures on matplotlib's Agg canvas (no pyplot, no display): the energy plot of a run.

``ropesim run --plot`` draws :func:`plot_energy`; ``ropesim compare`` builds its own
figures with :func:`new_figure` and :func:`save_figure`.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from .outputs import write_atomically
from .trajectory import Trajectory

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def new_figure(width_in: float, height_in: float) -> Any:
    """A matplotlib Figure on the Agg canvas (no pyplot, no display, no global backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def plot_energy(trajectory: Trajectory, path: str | Path, track: int | None = None) -> Path:
    """Energy over time (kinetic, spring, gravity and total, J) and, with ``track``,
    the x, y, z coordinates (m) of that particle over time, saved to ``path``.

    Gravity potential has no natural zero, so it is drawn relative to its value
    at the first sample; the total is then kinetic + spring + that difference.
    """
    t = trajectory.times
    panels = 1 if track is None else 2
    figure = new_figure(8.0, 3.6 * panels)
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    gravity = trajectory.gravity - trajectory.gravity[0]
    ax = axes[0]
    ax.plot(t, trajectory.kinetic, label="kinetic")
    ax.plot(t, trajectory.spring, label="spring")
    ax.plot(t, gravity, label="gravity (from its t=0 value)")
    ax.plot(t, trajectory.kinetic + trajectory.spring + gravity, "k", lw=1.6, label="total")
    ax.set_ylabel("energy (J)")
    ax.set_title(f"{trajectory.scene}: {trajectory.integrator}, dt = {trajectory.dt:g} s")
    ax.legend(loc="best", fontsize="small")
    if track is not None:
        if not 0 <= track < trajectory.n_particles:
            raise ValueError(f"track: particle index must be in 0..{trajectory.n_particles - 1}, "
                             f"got {track}")
        coords = trajectory.positions[:, track, :]
        for axis, name in enumerate("xyz"):
            axes[1].plot(t, coords[:, axis], label=name)
        axes[1].set_ylabel(f"particle {track} position (m)")
        axes[1].legend(loc="best", fontsize="small")
    if not trajectory.completed:
        for ax in axes:
            ax.axvline(t[-1], color="tab:red", ls="--", lw=1)
        axes[0].annotate(trajectory.stop_reason.split(" ", 1)[0], (t[-1], 0.96),
                         xycoords=("data", "axes fraction"), ha="right", va="top",
                         color="tab:red")
    axes[-1].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
    return save_figure(figure, path)


def save_figure(figure: Any, path: str | Path) -> Path:
    """Write ``figure`` to ``path`` (the suffix picks PNG, SVG or PDF), whole or not at
    all (see :func:`~ropesim.io.outputs.write_atomically`); returns the path."""
    path = Path(path)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=path.suffix.lower().lstrip("."))
    write_atomically(path, buffer.getvalue())
    return path


__all__ = ["PLOT_SUFFIXES", "new_figure", "plot_energy", "save_figure"]
