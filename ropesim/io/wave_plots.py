"""Plots of a wave experiment (:class:`ropesim.engine.waves.WaveResult`), with matplotlib.

Left: on a chain or ring a kymograph (space-time diagram: displacement along the
impulse, m, against the position along the chain in springs from the source and time,
s) with the theory's front t = departure + path / c dashed; on a grid the map of
arrival times (ms) with contour lines, the rings of equal arrival; on any other network
arrival time against path distance. Right: each probe's speed |v| (m/s, scaled to its
own peak) over time, with the measured arrival marked.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ropesim.engine.waves import WaveResult


def _new_figure(width_in: float, height_in: float):
    """A matplotlib Figure on the Agg canvas (no pyplot, no display)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def chain_coordinate(result: WaveResult) -> np.ndarray:
    """(n,) signed springs from the source along a chain or ring: + through the
    source's neighbour that follows it in index order (wrapping), - through the other."""
    hops, branch = result.paths.hops, result.paths.branch
    n = hops.size
    first = np.flatnonzero(hops == 1)
    ahead = first[np.argmin((first - result.source) % n)] if first.size else -1
    sign = np.where(branch == ahead, 1.0, -1.0)
    return np.where(hops >= 0, hops * sign, np.nan)


def _kymograph(axes, result: WaveResult) -> None:
    coordinate = chain_coordinate(result)
    order = np.argsort(coordinate)
    order = order[np.isfinite(coordinate[order])]
    field = result.displacement[:, order]
    limit = float(np.abs(field).max()) or 1.0
    mesh = axes.pcolormesh(coordinate[order], result.times, field, cmap="RdBu_r",
                           vmin=-limit, vmax=limit, shading="nearest", rasterized=True)
    axes.figure.colorbar(mesh, ax=axes, label="displacement along the impulse (m)")
    theory = result.probes[0].theory
    if theory > 0:
        front = result.departure + result.paths.length[order] / theory
        shown = front <= result.times[-1]
        axes.plot(coordinate[order][shown], front[shown], "k--", lw=1,
                  label=f"theory c = {theory:.3g} m/s")
    for probe in result.probes:
        axes.plot(coordinate[probe.particle], probe.arrival, "ko", ms=5, mfc="none")
    axes.set_xlabel(f"springs from the source (particle {result.source})")
    axes.set_ylabel("time (s)")
    axes.set_title("kymograph: the front runs along the chain")
    if theory > 0:
        axes.legend(loc="upper right", fontsize=8)


def _arrival_map(axes, result: WaveResult) -> None:
    rows, cols = result.grid_shape
    start = result.start_positions
    spread = start.max(axis=0) - start.min(axis=0)
    horizontal, vertical = sorted(int(i) for i in np.argsort(spread)[::-1][:2])
    grid_x = start[:, horizontal].reshape(rows, cols)
    grid_y = start[:, vertical].reshape(rows, cols)
    arrival_ms = (result.arrival * 1e3).reshape(rows, cols)
    mesh = axes.pcolormesh(grid_x, grid_y, np.ma.masked_invalid(arrival_ms), cmap="viridis",
                           shading="nearest", rasterized=True)
    axes.figure.colorbar(mesh, ax=axes, label="arrival time (ms)")
    finite = arrival_ms[np.isfinite(arrival_ms)]
    if finite.size > 1 and finite.max() > finite.min():
        levels = np.linspace(finite.min(), finite.max(), 10)[1:-1]
        filled = np.where(np.isfinite(arrival_ms), arrival_ms, finite.max())
        axes.contour(grid_x, grid_y, filled, levels=levels, colors="white", linewidths=0.8)
    axes.plot(start[result.source, horizontal], start[result.source, vertical], "r*", ms=12,
              label="source")
    for probe in result.probes:
        axes.plot(start[probe.particle, horizontal], start[probe.particle, vertical], "wo",
                  ms=6, mec="k")
        axes.annotate(str(probe.particle), (start[probe.particle, horizontal],
                                            start[probe.particle, vertical]),
                      textcoords="offset points", xytext=(4, 4), color="white", fontsize=8)
    axes.set_aspect("equal")
    axis_names = "xyz"
    axes.set_xlabel(f"{axis_names[horizontal]} (m)")
    axes.set_ylabel(f"{axis_names[vertical]} (m)")
    axes.set_title("rings of equal arrival time")
    axes.legend(loc="upper right", fontsize=8)


def _arrival_scatter(axes, result: WaveResult) -> None:
    reached = np.isfinite(result.arrival)
    axes.plot(result.paths.length[reached], result.arrival[reached], ".", ms=4, color="0.4",
              label="particles")
    for probe in result.probes:
        axes.plot(probe.distance, probe.arrival, "ko", mfc="none")
    axes.set_xlabel("path distance through the springs (m)")
    axes.set_ylabel("arrival time (s)")
    axes.set_title("arrival of the first front")
    axes.legend(loc="upper left", fontsize=8)


def _probe_traces(axes, result: WaveResult) -> None:
    for offset, probe in enumerate(result.probes):
        trace = result.speed[:, probe.particle].astype(np.float64)
        peak = float(trace.max()) or 1.0
        line, = axes.plot(result.times, offset + trace / peak, lw=1.2)
        ratio = f", {probe.ratio:.3f} x theory" if math.isfinite(probe.ratio) else ""
        axes.annotate(f"{probe.particle}: {probe.speed:.3g} m/s{ratio}",
                      (result.times[0], offset + 0.75), fontsize=8, color=line.get_color())
        if math.isfinite(probe.arrival):
            axes.axvline(probe.arrival, ymin=0, ymax=1, color=line.get_color(), ls=":", lw=1)
    axes.set_xlabel("time (s)")
    axes.set_ylabel("probe speed |v| / its peak (offset per probe)")
    axes.set_title(f"probes: the front arrives at {result.threshold:g} x the first peak")
    axes.set_yticks([])


def plot_waves(result: WaveResult, path: str | Path, title: str | None = None) -> Path:
    """Draw the experiment (kymograph or arrival map, and the probe traces) to ``path``
    (.png, .svg or .pdf) under ``title`` (default: the integrator and dt); returns the path."""
    path = Path(path)
    figure = _new_figure(12.0, 5.0)
    left, right = figure.subplots(1, 2, width_ratios=(1.25, 1.0))
    if result.layout == "chain":
        _kymograph(left, result)
    elif result.layout == "grid":
        _arrival_map(left, result)
    else:
        _arrival_scatter(left, result)
    _probe_traces(right, result)
    figure.suptitle(title or f"{result.integrator}, dt = {result.dt:g} s")
    figure.savefig(path)
    return path
