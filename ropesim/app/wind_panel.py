"""The viewer's wind controls: the K key's switch, the panel's Wind section, the arrow.

:class:`WindControls` keeps the wind's settings (direction as azimuth and elevation,
speed, gust strength) and the :class:`~ropesim.engine.forces.wind.Wind` it attaches to
the simulation. K switches it: off detaches the Wind (``sim.remove_force``), on attaches
it again with the same settings, so nothing is forgotten. The panel edits the settings
live (the attached Wind's ``velocity`` and ``gust`` change in place). A scene that
declares ``[wind]`` starts with it on and the controls take its settings.

Direction: the air moves along (cos e cos a, sin e, cos e sin a) for azimuth a (degrees,
from +x towards +z) and elevation e (degrees, up from the horizontal).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..engine.forces.wind import Wind
from ..engine.model import check_number
from ..engine.simulation import Simulation
from ..render.camera import OrbitCamera
from ..render.overlay import Line, arrow_lines

#: (low, high) of each setting, with its unit
LIMITS = {
    "azimuth": (-180.0, 180.0, "deg"),
    "elevation": (-90.0, 90.0, "deg"),
    "speed": (0.0, 40.0, "m/s"),
    "gust": (0.0, 2.0, "relative RMS, dimensionless"),
}
DEFAULTS = {"azimuth": 0.0, "elevation": 0.0, "speed": 5.0, "gust": 0.3}
#: the arrow's length as a share of the scene's size at REFERENCE_SPEED (longer when faster)
ARROW_SHARE = 0.35
REFERENCE_SPEED = 10.0   # m/s
ARROW_MAX_SHARE = 0.7    # the arrow's length at most, share of the scene's size
ARROW_COLOUR = (0.45, 0.85, 1.0, 0.95)   # RGBA
ARROW_WIDTH_PX = 3.0


def check_setting(name: str, value: Any) -> float:
    """A wind setting within LIMITS; ValueError naming the field, the value and the range."""
    if name not in LIMITS:
        raise ValueError(f"wind setting: {name!r} is not one; allowed: {', '.join(LIMITS)}")
    low, high, unit = LIMITS[name]
    return check_number(value, f"wind {name}", unit, minimum=low, maximum=high)


def wind_velocity(azimuth: float, elevation: float, speed: float) -> np.ndarray:
    """(3,) air velocity, m/s, for azimuth and elevation in degrees and speed in m/s."""
    a, e = math.radians(azimuth), math.radians(elevation)
    return speed * np.array([math.cos(e) * math.cos(a), math.sin(e), math.cos(e) * math.sin(a)])


def direction_of(velocity: np.ndarray) -> tuple[float, float, float]:
    """(azimuth deg, elevation deg, speed m/s) of an air velocity (3,)."""
    vx, vy, vz = (float(c) for c in velocity)
    speed = math.sqrt(vx * vx + vy * vy + vz * vz)
    if speed == 0.0:
        return 0.0, 0.0, 0.0
    return (math.degrees(math.atan2(vz, vx)),
            math.degrees(math.asin(max(-1.0, min(1.0, vy / speed)))), speed)


class WindControls:
    """The wind's settings and its switch (see the module docstring).

    ``settings`` maps azimuth, elevation (deg), speed (m/s) and gust (relative RMS) to
    their values; ``wind`` is the Wind these settings drive (None before the first K);
    ``on`` whether it is attached to the simulation.
    """

    def __init__(self) -> None:
        self.settings = dict(DEFAULTS)
        self.wind: Wind | None = None
        self.on = False

    def attach(self, sim: Simulation) -> None:
        """A new simulation: a wind the scene declared is adopted (on, its settings);
        otherwise the wind is off and the settings are kept for K."""
        declared = [f for f in sim.force_parts() if isinstance(f, Wind)]
        self.on = bool(declared)
        self.wind = declared[0] if declared else None
        if self.wind is not None:
            azimuth, elevation, speed = direction_of(self.wind.velocity)
            self.settings.update(azimuth=azimuth, elevation=elevation,
                                 speed=min(speed, LIMITS["speed"][1]), gust=self.wind.gust)

    @property
    def velocity(self) -> np.ndarray:
        """The mean air velocity of the settings (3,), m/s."""
        s = self.settings
        return wind_velocity(s["azimuth"], s["elevation"], s["speed"])

    def toggle(self, sim: Simulation) -> str:
        """K: detach the wind or attach it (again) with the current settings; returns the
        status line."""
        if self.on:
            sim.remove_force(self.wind)
            self.on = False
            return "wind off (K turns it on again)"
        if self.wind is None:
            self.wind = Wind(velocity=self.velocity, gust=self.settings["gust"])
        sim.add_force(self.wind)
        self.on = True
        return f"wind on: {self.settings['speed']:.3g} m/s, gust {self.settings['gust']:.2g}"

    def set(self, name: str, value: float) -> None:
        """Change one setting (LIMITS), live on the attached wind."""
        self.settings[name] = check_setting(name, value)
        if self.wind is not None:
            self.wind.velocity = self.velocity
            self.wind.gust = self.settings["gust"]

    def arrow(self, sim: Simulation) -> tuple[np.ndarray, np.ndarray] | None:
        """(tail, head) in the world, m, of the arrow showing the current air velocity
        (gusts included) above the scene; None while the wind is off or calm."""
        if not self.on or self.wind is None:
            return None
        air = np.array(self.wind.air_velocity(sim.time))
        speed = float(np.linalg.norm(air))
        if speed <= 1e-9:
            return None
        positions = np.asarray(sim.positions)
        lo, hi = positions.min(axis=0), positions.max(axis=0)
        size = max(float(np.max(hi - lo)), 1e-3)
        length = size * min(ARROW_SHARE * speed / REFERENCE_SPEED, ARROW_MAX_SHARE)
        centre = 0.5 * (lo + hi)
        tail = np.array([centre[0], hi[1] + 0.2 * size, centre[2]]) - 0.5 * length * air / speed
        return tail, tail + length * air / speed

    def overlay_lines(self, sim: Simulation, camera: OrbitCamera,
                      view_size: tuple[int, int]) -> list[Line]:
        """The arrow's 2-D lines (px) for the overlay; none while the wind is off."""
        arrow = self.arrow(sim)
        if arrow is None:
            return []
        return [(points, ARROW_COLOUR, ARROW_WIDTH_PX)
                for points in arrow_lines(camera, *arrow, view_size)]

    def draw_label(self, imgui: Any, sim: Simulation, camera: OrbitCamera,
                   view_size: tuple[int, int]) -> None:
        """The current wind speed (m/s) next to the arrow's head, on imgui's background
        draw list (``view_size``: framebuffer px; imgui draws in window px)."""
        arrow = self.arrow(sim)
        if arrow is None:
            return
        pixels, _ = camera.project(arrow[1][None], *view_size)
        if not np.all(np.isfinite(pixels)):
            return
        scale = imgui.get_io().display_framebuffer_scale
        speed = float(np.linalg.norm(self.wind.air_velocity(sim.time)))
        imgui.get_background_draw_list().add_text(
            imgui.ImVec2(pixels[0, 0] / max(scale.x, 1e-6) + 8, pixels[0, 1] / max(scale.y, 1e-6)),
            imgui.get_color_u32(imgui.ImVec4(*ARROW_COLOUR)), f"wind {speed:.1f} m/s")

    def draw_panel_section(self, imgui: Any, toggle: Callable[[], None]) -> None:
        """The panel's Wind section: the switch (``toggle``: the controller's K action),
        direction, speed and gust sliders (``imgui`` is imgui_bundle's module)."""
        changed, _ = imgui.checkbox("wind on (K)", self.on)
        if changed:
            toggle()
        for name, label in (("speed", "speed [m/s]"), ("azimuth", "azimuth [deg]"),
                            ("elevation", "elevation [deg]"), ("gust", "gust [RMS]")):
            low, high, _ = LIMITS[name]
            changed, value = imgui.slider_float(label, self.settings[name], low, high, "%.3g")
            if changed:
                self.set(name, min(max(value, low), high))
        if self.on and self.wind is not None:
            imgui.text(f"air velocity ({', '.join(f'{c:.2f}' for c in self.wind.velocity)}) m/s")


__all__ = ["DEFAULTS", "LIMITS", "WindControls", "check_setting", "direction_of",
           "wind_velocity"]
