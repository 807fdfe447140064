"""The viewer's wave tools (issue 16): pluck with Q+click, probes with Alt+click, probe plots.

:class:`WaveTools` needs no window: the mouse hands it the particle under the cursor
(:meth:`WaveTools.pluck_at`, :meth:`WaveTools.toggle_probe`), the controller calls
:meth:`WaveTools.sample` after each frame's steps, and the panel calls
:meth:`WaveTools.draw_panel_section` with the imgui and implot modules.

* Pluck: an impulse of ``strength`` N*s along the camera's up direction (in the xy
  plane for planar scenes). It sets the particle's velocity at once, so it works while
  paused: the next step starts the wave.
* Probes: at most ``MAX_PROBES`` particles. Each keeps its displacement (m) from where
  it was when marked and its speed |v| (m/s), one sample per displayed frame, in a
  preallocated ring buffer of :func:`history_capacity` samples (the last
  ``HISTORY_SECONDS`` of simulated time at full speed).
* Arrival: the first front at each probe after the latest pluck, by the wave lab's rule
  (:func:`ropesim.engine.waves.arrival_times`) on the |v| record since the pluck (the
  plucked particle's own |v| included, as in ``wave_experiment``), in s after the pluck.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..engine.simulation import Simulation
from ..engine.waves import arrival_times
from ..render.camera import OrbitCamera

#: default pluck strength, N*s (1 m/s on a 0.02 kg bead of the string scene: a 3 mm wave)
DEFAULT_STRENGTH = 0.02
#: the panel slider's range of pluck strengths, N*s
STRENGTH_LIMITS = (1e-4, 1.0)
#: most particles marked as probes at once
MAX_PROBES = 8
#: simulated time the probe plot keeps at full speed, s
HISTORY_SECONDS = 3.0
#: the shortest displayed frame the buffer is sized for, s (a 120 Hz display)
SHORTEST_FRAME = 1.0 / 120.0
#: upper bound of the ring buffer, samples
MAX_SAMPLES = 20_000
#: the displacement plot's height, px
PLOT_HEIGHT = 150.0
#: radius of the rings that mark probes and the plucked particle in the view, px
MARKER_RADIUS = 9.0
#: the plucked particle's ring colour (RGBA); probes take their plot line's colour
SOURCE_COLOUR = (1.0, 0.85, 0.35, 1.0)


def history_capacity(dt: float) -> int:
    """Ring-buffer size (samples, one per frame) that holds ``HISTORY_SECONDS`` of
    simulated time at full speed. The window steps in real time (the frame clock's time
    budget, not a fixed number of steps), so a frame advances its own duration, at
    least SHORTEST_FRAME s (120 fps), and never less than one step of ``dt`` s; frames
    the budget caps advance less, and the buffer then spans less (MAX_SAMPLES bounds it)."""
    per_frame = max(float(dt), SHORTEST_FRAME)
    return int(min(math.ceil(HISTORY_SECONDS / per_frame) + 1, MAX_SAMPLES))


def check_strength(value: Any) -> float:
    """A pluck strength, N*s, within STRENGTH_LIMITS; ValueError naming the field otherwise."""
    low, high = STRENGTH_LIMITS
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not low <= number <= high:
        raise ValueError(f"pluck strength: must be a number from {low:g} to {high:g} N*s, "
                         f"got {value!r}")
    return number


def pluck_direction(sim: Simulation, camera: OrbitCamera) -> np.ndarray:
    """The camera's up direction (unit (3,)); for a planar system its part in the xy
    plane. ValueError when a planar system is seen edge-on (no up direction in its plane)."""
    up = np.array(camera.basis()[1], dtype=np.float64)
    if sim.planar:
        up[2] = 0.0
    size = float(np.linalg.norm(up))
    if size < 1e-6:
        raise ValueError("pluck: the camera's up direction is normal to the 2-D scene's plane; "
                         "press F to face it")
    return up / size


class WaveTools:
    """Pluck strength, the probe set, the probes' ring buffer and arrival times.

    ``strength`` N*s is the pluck impulse; ``probes`` the marked particles (slot order);
    ``source`` the latest plucked particle (None before a pluck), ``pluck_time`` its
    simulated time, s, and ``direction`` the latest pluck's unit direction (the
    displacement plot's axis; world y before the first pluck).
    """

    def __init__(self, strength: float = DEFAULT_STRENGTH) -> None:
        self.strength = check_strength(strength)
        self.source: int | None = None
        self.pluck_time = 0.0
        self.direction = np.array([0.0, 1.0, 0.0])
        self._particle = np.full(MAX_PROBES, -1, np.int64)   # -1: free slot
        self._marked_at = np.zeros(MAX_PROBES, np.int64)     # sample count when marked
        self._reference = np.zeros((MAX_PROBES, 3))          # position when marked, m
        self._arrival = np.full(MAX_PROBES, np.nan)          # s after the pluck
        self._take_ids = np.zeros(MAX_PROBES + 1, np.int64)  # source, then the probes
        self._scratch = np.zeros((MAX_PROBES + 1, 3))
        self._sized_for: tuple[float, int] | None = None
        self._allocate(1)

    # -- buffers ---------------------------------------------------------------------------
    def _allocate(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self._times = np.zeros(self.capacity)
        self._displacement = np.zeros((self.capacity, MAX_PROBES, 3))
        self._speed = np.zeros((self.capacity, MAX_PROBES + 1))    # column 0: the source
        self.count = 0                # samples taken since the last clear (may exceed capacity)
        self._pluck_sample = -1       # sample index of the latest pluck (-1: none)
        self._arrivals_at = -1        # self.count when the arrivals were last computed

    def _resize(self, capacity: int) -> None:
        """A new capacity, keeping the newest samples that fit (sample k stays sample k, in
        slot k % capacity)."""
        keep = min(self.count, self.capacity, capacity)
        index = np.arange(self.count - keep, self.count)
        old = (self._times[index % self.capacity], self._displacement[index % self.capacity],
               self._speed[index % self.capacity])
        count, pluck_sample = self.count, self._pluck_sample
        self._allocate(capacity)
        self._times[index % capacity], self._displacement[index % capacity] = old[0], old[1]
        self._speed[index % capacity] = old[2]
        self.count, self._pluck_sample = count, pluck_sample

    def attach(self, sim: Simulation) -> None:
        """A new simulation: no probes, no pluck, a buffer sized for its dt."""
        self._particle[:] = -1
        self._take_ids[:] = 0
        self.direction = np.array([0.0, 1.0, 0.0])
        self.restart(sim)

    def restart(self, sim: Simulation) -> None:
        """After a reset: the probes stay marked (at their reset positions); their history
        and the pluck are cleared."""
        self._sized_for = sim.dt
        self._allocate(history_capacity(sim.dt))
        self.source = None
        self._marked_at[:] = 0
        self._arrival[:] = np.nan
        active = self._particle >= 0
        self._reference[active] = sim.positions[self._particle[active]]

    # -- clicks ------------------------------------------------------------------------------
    def set_strength(self, value: float) -> None:
        """Pluck strength, N*s (STRENGTH_LIMITS)."""
        self.strength = check_strength(value)

    def pluck_at(self, sim: Simulation, particle: int | None, camera: OrbitCamera) -> str:
        """Q+click: pluck ``particle`` with ``strength`` N*s along the camera's up; returns
        the status message (why not, for no particle, a pinned or grabbed one)."""
        if particle is None:
            return "Q+click: no particle under the cursor"
        try:
            direction = pluck_direction(sim, camera)
            sim.pluck(particle, self.strength * direction)
        except ValueError as exc:
            return str(exc)
        self.source, self.pluck_time, self.direction = int(particle), float(sim.time), direction
        self._take_ids[0] = particle
        self._pluck_sample = self.count
        self.sample(sim)    # the record starts at the pluck, as wave_experiment's does
        return (f"plucked particle {particle}: {self.strength:.4g} N*s along "
                f"({direction[0]:.2f}, {direction[1]:.2f}, {direction[2]:.2f})")

    def toggle_probe(self, sim: Simulation, particle: int | None) -> str:
        """Alt+click: mark ``particle`` as a probe, or unmark it; returns the status message."""
        if particle is None:
            return "Alt+click: no particle under the cursor"
        slots = np.flatnonzero(self._particle == particle)
        if slots.size:
            self._particle[slots[0]] = -1
            return f"probe off: particle {particle}"
        free = np.flatnonzero(self._particle < 0)
        if not free.size:
            return f"at most {MAX_PROBES} probes: Alt+click one to remove it"
        slot = int(free[0])
        self._particle[slot] = particle
        self._take_ids[slot + 1] = particle
        self._reference[slot] = sim.positions[particle]
        self._marked_at[slot] = self.count
        self._arrival[slot] = np.nan
        return f"probe on: particle {particle}"

    def clear_probes(self) -> None:
        self._particle[:] = -1

    @property
    def probes(self) -> list[int]:
        """The marked particles, in slot order."""
        return [int(p) for p in self._particle if p >= 0]

    def _colour(self, implot: Any, particle: int) -> Any:
        """A probe's colour (plot line and ring): its slot's colour of implot's colormap,
        kept while other probes come and go."""
        return implot.get_colormap_color(int(np.flatnonzero(self._particle == particle)[0]))

    # -- samples -----------------------------------------------------------------------------
    def sample(self, sim: Simulation) -> None:
        """Record the probes' displacement and speed (and the source's speed) now; call after
        each frame's steps. Resizes the buffer (keeping the newest samples) after a dt
        change; otherwise allocates nothing."""
        if self._sized_for != sim.dt:
            self._sized_for = sim.dt
            self._resize(history_capacity(sim.dt))
        slot = self.count % self.capacity
        self._times[slot] = sim.time
        scratch = self._scratch
        np.take(sim.positions, self._take_ids[1:], axis=0, out=scratch[1:], mode="clip")
        np.subtract(scratch[1:], self._reference, out=self._displacement[slot])
        np.take(sim.velocities, self._take_ids, axis=0, out=scratch, mode="clip")
        np.multiply(scratch, scratch, out=scratch)
        np.sum(scratch, axis=1, out=self._speed[slot])
        np.sqrt(self._speed[slot], out=self._speed[slot])
        self.count += 1

    def _window(self, first: int) -> np.ndarray:
        """Buffer slots of the samples from sample index ``first`` on that are still held,
        oldest first."""
        start = max(first, self.count - self.capacity, 0)
        return np.arange(start, self.count) % self.capacity

    def series(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Per probe (particle, times s, displacement along ``direction`` m) of the samples
        held since it was marked, oldest first."""
        out = []
        for slot in np.flatnonzero(self._particle >= 0):
            held = self._window(int(self._marked_at[slot]))
            out.append((int(self._particle[slot]), self._times[held],
                        self._displacement[held, slot] @ self.direction))
        return out

    def marked_after_pluck(self, particle: int) -> bool:
        """Whether probe ``particle`` was marked after the latest pluck (it has no arrival)."""
        slots = np.flatnonzero(self._particle == particle)
        return bool(slots.size) and int(self._marked_at[slots[0]]) > self._pluck_sample

    def arrivals(self) -> dict[int, float]:
        """First-front arrival per probe, s after the latest pluck (the wave lab's rule on
        the |v| record since it); NaN while the front has not passed, for probes marked
        after the pluck, or where no wave came. Empty before a pluck. Once the buffer no
        longer holds the pluck's sample, the last values are kept."""
        if self.source is None:
            return {}
        held_since_pluck = self.count - self._pluck_sample <= self.capacity
        if self._arrivals_at != self.count and held_since_pluck:
            slots = np.flatnonzero((self._particle >= 0)
                                   & (self._marked_at <= self._pluck_sample))
            held = self._window(self._pluck_sample)
            columns = np.concatenate([[0], slots + 1])
            arrival = arrival_times(self._times[held] - self.pluck_time,
                                    self._speed[held][:, columns])
            self._arrival[:] = np.nan
            self._arrival[slots] = arrival[1:]
            self._arrivals_at = self.count
        return {int(self._particle[slot]): float(self._arrival[slot])
                for slot in np.flatnonzero(self._particle >= 0)}

    def draw_probe_markers(self, imgui: Any, implot: Any, sim: Simulation, camera: OrbitCamera,
                           view_size: tuple[int, int]) -> None:
        """Ring and label the probes (each in its plot line's colour) and the plucked
        particle in the 3-D view, on imgui's background draw list (over the scene, under
        the windows). ``view_size``: the framebuffer (width, height), px."""
        marks = [(p, f"#{p}", self._colour(implot, p)) for p in self.probes]
        if self.source is not None:
            marks.append((self.source, "pluck", imgui.ImVec4(*SOURCE_COLOUR)))
        if not marks:
            return
        pixels, depth = camera.project(sim.positions[[mark[0] for mark in marks]], *view_size)
        scale = imgui.get_io().display_framebuffer_scale
        draw = imgui.get_background_draw_list()
        for (_, label, colour), (x, y), z in zip(marks, pixels, depth):
            if not -1.0 <= z <= 1.0:     # behind the camera or beyond the far plane
                continue
            u, v = x / max(scale.x, 1e-6), y / max(scale.y, 1e-6)
            packed = imgui.get_color_u32(colour)
            draw.add_circle(imgui.ImVec2(u, v), MARKER_RADIUS, packed, 0, 2.0)
            draw.add_text(imgui.ImVec2(u + 0.7 * MARKER_RADIUS, v - 2.2 * MARKER_RADIUS), packed,
                          label)

    # -- panel -------------------------------------------------------------------------------
    def draw_panel_section(self, imgui: Any, implot: Any, width: float) -> None:
        """The panel's Waves section: strength slider, probe plot, arrival times. ``imgui``
        and ``implot`` are imgui_bundle's modules; ``width`` the plot's width, px."""
        low, high = STRENGTH_LIMITS
        changed, value = imgui.slider_float("pluck [N s]", self.strength, low, high, "%.4g",
                                            imgui.SliderFlags_.logarithmic)
        if changed:
            self.set_strength(min(max(value, low), high))
        imgui.text("hold Q + click: pluck along the camera's up")
        imgui.text("Alt+click: probe on / off")
        if not self.probes:
            imgui.text("(no probes)")
            return
        imgui.same_line()
        if imgui.small_button("clear probes"):
            self.clear_probes()
            return
        series = self.series()
        if any(times.size >= 2 for _, times, _ in series):
            flags = implot.AxisFlags_.auto_fit
            if implot.begin_plot("##probes", imgui.ImVec2(width, PLOT_HEIGHT)):
                implot.setup_axes("t [s]", "displacement [m]", flags, flags)
                implot.setup_legend(implot.Location_.north,
                                    implot.LegendFlags_.horizontal | implot.LegendFlags_.outside)
                for particle, times, displacement in series:
                    implot.plot_line(f"#{particle}", times, displacement,
                                     spec=implot.Spec(line_color=self._colour(implot, particle)))
                implot.end_plot()
        if self.source is None:
            imgui.text("arrival times: pluck a particle (Q+click)")
            return
        imgui.text(f"pluck: particle {self.source} at t = {self.pluck_time:.3f} s")
        for particle, arrival in self.arrivals().items():
            if math.isfinite(arrival):
                when = f"front after {arrival:.4f} s"
            elif self.marked_after_pluck(particle):
                when = "marked after the pluck"
            else:
                when = "no front yet"
            imgui.text(f"  probe {particle}: {when}")


__all__ = ["DEFAULT_STRENGTH", "HISTORY_SECONDS", "MAX_PROBES", "STRENGTH_LIMITS", "WaveTools",
           "check_strength", "history_capacity", "pluck_direction"]
