"""Wind: an aerodynamic force from each surface element's velocity relative to the air.

With the air velocity w(t) (m/s), a triangle's mean velocity v (m/s), u = w - v, its unit
normal n and area A (m^2), air density rho (kg/m^3), drag coefficient C_d and lift
coefficient C_l (dimensionless), the force on the triangle is

    F = 1/2 rho A |u.n| ( C_d (u.n) n + C_l (u - (u.n) n) )

the pressure (normal) term plus a lift term along the tangential part of u, scaled by the
same |u.n| so that both vanish for a plate parallel to the wind. It is split evenly over
the triangle's 3 corners. A system without triangles (a rope) gets the cylinder form per
spring segment of length L, unit direction t and diameter ``thickness`` d (m), with
u_perp = u - (u.t) t and the area A = d L:

    F = 1/2 rho d L |u_perp| ( C_d u_perp + C_l (u.t) t )

split evenly over its 2 ends. Torn surfaces: a triangle that has lost a spring along an
edge (broken, see tearing.py) feels no wind, so a hole in a torn cloth lets the air
through; a broken rope segment feels none either. Gusts: w(t) = w0 + gust |w0| g(t), where each component of
g is a sum of GUST_MODES sinusoids with frequencies drawn uniformly in
[0.5, 1.5] * gust_frequency (Hz) and random phases from ``seed``, normalised to unit RMS,
so ``gust`` is the relative RMS of the gust per axis (z stays 0 for planar systems).

Wind is an attached force without a Jacobian: the implicit integrators take it
explicitly (evaluated at the step's start and held over the step).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numba import njit

from ..state import Params, State
from ..tearing import triangle_edge_springs, triangle_torn
from .base import Force

#: sinusoids per gust component
GUST_MODES = 4


@njit(cache=True)
def gust_velocity(base, gust_speed, frequencies, phases, time, planar, out):
    """out (3,) = base + gust_speed g(time), m/s: g a sum of sinusoids of unit RMS per axis."""
    modes = frequencies.shape[1]
    norm = math.sqrt(2.0 / modes)
    for c in range(3):
        g = 0.0
        for k in range(modes):
            g += math.sin(2.0 * math.pi * frequencies[c, k] * time + phases[c, k])
        out[c] = base[c] + gust_speed * norm * g
    if planar:
        out[2] = 0.0


@njit(cache=True)
def triangle_wind(x, v, triangles, edge_springs, broken, w, rho, drag, lift, f):
    """Add the wind force of every triangle (split over its corners) into f (n, 3), N;
    a triangle with a broken edge spring (edge_springs (t, 3), -1 = none) is skipped."""
    third = 1.0 / 3.0
    for t in range(triangles.shape[0]):
        if triangle_torn(edge_springs, broken, t):
            continue
        a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
        e1x, e1y, e1z = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
        e2x, e2y, e2z = x[c, 0] - x[a, 0], x[c, 1] - x[a, 1], x[c, 2] - x[a, 2]
        nx = e1y * e2z - e1z * e2y
        ny = e1z * e2x - e1x * e2z
        nz = e1x * e2y - e1y * e2x
        twice_area = math.sqrt(nx * nx + ny * ny + nz * nz)
        if twice_area <= 0.0:
            continue
        nx, ny, nz = nx / twice_area, ny / twice_area, nz / twice_area
        ux = w[0] - (v[a, 0] + v[b, 0] + v[c, 0]) * third
        uy = w[1] - (v[a, 1] + v[b, 1] + v[c, 1]) * third
        uz = w[2] - (v[a, 2] + v[b, 2] + v[c, 2]) * third
        un = ux * nx + uy * ny + uz * nz
        scale = 0.5 * rho * 0.5 * twice_area * abs(un) * third
        fx = scale * (drag * un * nx + lift * (ux - un * nx))
        fy = scale * (drag * un * ny + lift * (uy - un * ny))
        fz = scale * (drag * un * nz + lift * (uz - un * nz))
        for p in (a, b, c):
            f[p, 0] += fx
            f[p, 1] += fy
            f[p, 2] += fz


@njit(cache=True)
def segment_wind(x, v, spring_a, spring_b, broken, w, rho, drag, lift, thickness, f):
    """Add the wind force of every intact spring segment (a cylinder of diameter
    thickness, m, split over its 2 ends) into f (n, 3), N."""
    for s in range(spring_a.shape[0]):
        if broken[s]:
            continue
        a, b = spring_a[s], spring_b[s]
        dx, dy, dz = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        if length <= 0.0:
            continue
        tx, ty, tz = dx / length, dy / length, dz / length
        ux = w[0] - 0.5 * (v[a, 0] + v[b, 0])
        uy = w[1] - 0.5 * (v[a, 1] + v[b, 1])
        uz = w[2] - 0.5 * (v[a, 2] + v[b, 2])
        ut = ux * tx + uy * ty + uz * tz
        px, py, pz = ux - ut * tx, uy - ut * ty, uz - ut * tz
        speed = math.sqrt(px * px + py * py + pz * pz)
        scale = 0.5 * rho * thickness * length * speed * 0.5
        fx = scale * (drag * px + lift * ut * tx)
        fy = scale * (drag * py + lift * ut * ty)
        fz = scale * (drag * pz + lift * ut * tz)
        f[a, 0] += fx
        f[a, 1] += fy
        f[a, 2] += fz
        f[b, 0] += fx
        f[b, 1] += fy
        f[b, 2] += fz


def _number(value: Any, field: str, unit: str, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{field}: expected a number ({unit}), got {type(value).__name__}")
    value = float(value)
    if not (math.isfinite(value) and value >= minimum):
        raise ValueError(f"{field}: must be a finite number >= {minimum:g} {unit}, got {value}")
    return value


class Wind(Force):
    """Wind on a cloth's triangles (or a rope's segments): see the module docstring.

    Parameters
    ----------
    velocity : mean air velocity (wx, wy, wz), m/s (2 numbers for a planar system).
    density : air density rho, kg/m^3 (1.2: air at 20 C).
    drag : pressure (normal) coefficient C_d, dimensionless (about 1.2 for a flat plate).
    lift : tangential coefficient C_l, dimensionless.
    gust : relative RMS of the gust per axis (0 = steady), dimensionless.
    gust_frequency : central gust frequency, Hz.
    seed : seeds the gust frequencies and phases (the same seed, the same gusts).
    thickness : rope diameter d for the segment form, m.

    A Wind acts on the simulation it was last attached to (add_force binds it).
    """

    def __init__(self, velocity: Sequence[float] = (5.0, 0.0, 0.0), density: float = 1.2,
                 drag: float = 1.2, lift: float = 0.1, gust: float = 0.0,
                 gust_frequency: float = 0.5, seed: int = 0, thickness: float = 0.01):
        self.velocity = velocity
        self.density = _number(density, "density", "kg/m^3")
        self.drag = _number(drag, "drag", "(C_d, dimensionless)")
        self.lift = _number(lift, "lift", "(C_l, dimensionless)")
        self.gust = _number(gust, "gust", "(relative RMS, dimensionless)")
        self.gust_frequency = _number(gust_frequency, "gust_frequency", "Hz")
        self.thickness = _number(thickness, "thickness", "m")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed: expected an integer, got {seed!r}")
        self.seed = int(seed)
        rng = np.random.default_rng(self.seed)
        self._frequencies = self.gust_frequency * rng.uniform(0.5, 1.5, (3, GUST_MODES))
        self._phases = rng.uniform(0.0, 2.0 * np.pi, (3, GUST_MODES))
        self._air = np.zeros(3)
        self._triangles: np.ndarray | None = None
        self._edge_springs = np.zeros((0, 3), np.int64)
        self._spring_a = self._spring_b = np.zeros(0, np.int32)
        self._broken = np.zeros(0, np.bool_)
        self._planar = False

    @property
    def velocity(self) -> np.ndarray:
        """Mean air velocity (3,), m/s (a copy; assign 2 or 3 finite numbers to change it)."""
        return self._velocity.copy()

    @velocity.setter
    def velocity(self, value: Sequence[float]) -> None:
        w = np.asarray(value, dtype=np.float64).ravel()
        if w.shape == (2,):
            w = np.append(w, 0.0)
        if w.shape != (3,) or not np.all(np.isfinite(w)):
            raise ValueError(f"velocity: expected 2 or 3 finite numbers (m/s), got {value!r}")
        self._velocity = w
        self._speed = float(math.sqrt(w @ w))

    def bind(self, triangles: np.ndarray | None, spring_a: np.ndarray, spring_b: np.ndarray,
             planar: bool, broken: np.ndarray | None = None) -> None:
        """Take the surface (t, 3) triangles, or without them the springs, it acts on, and
        the live (m,) broken mask of the springs (Simulation.add_force and every topology
        edit call this; None: nothing is broken)."""
        self._triangles = (None if triangles is None or len(triangles) == 0
                           else np.ascontiguousarray(triangles, dtype=np.int64))
        self._spring_a, self._spring_b = spring_a, spring_b
        self._broken = np.zeros(spring_a.shape[0], np.bool_) if broken is None else broken
        if self._triangles is not None:
            n = 1 + max(int(self._triangles.max()), int(spring_a.max(initial=-1)),
                        int(spring_b.max(initial=-1)))  # above every particle index
            self._edge_springs = triangle_edge_springs(self._triangles, spring_a, spring_b, n)
        self._planar = bool(planar)

    def air_velocity(self, time: float) -> np.ndarray:
        """The air velocity w(time) (3,), m/s, gusts included (a scratch array: copy it)."""
        gust_velocity(self._velocity, self.gust * self._speed,
                      self._frequencies, self._phases, float(time), self._planar, self._air)
        return self._air

    def accumulate(self, state: State, params: Params, f: np.ndarray) -> None:
        w = self.air_velocity(state.time)
        if self._triangles is not None:
            triangle_wind(state.x, state.v, self._triangles, self._edge_springs, self._broken,
                          w, self.density, self.drag, self.lift, f)
        else:
            segment_wind(state.x, state.v, self._spring_a, self._spring_b, self._broken, w,
                         self.density, self.drag, self.lift, self.thickness, f)

    def __repr__(self) -> str:
        w = ", ".join(f"{c:g}" for c in self._velocity)
        return (f"Wind(velocity=({w}), density={self.density:g}, drag={self.drag:g}, "
                f"lift={self.lift:g}, gust={self.gust:g}, seed={self.seed})")
