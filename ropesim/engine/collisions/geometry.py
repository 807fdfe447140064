"""Closest points between two segments (a particle is a segment of length 0), numba."""

from __future__ import annotations

from numba import njit

#: squared length (m^2) below which a segment counts as a point
POINT_LENGTH_SQ = 1e-24


@njit(cache=True, inline="always")
def _clamp01(value):
    return min(max(value, 0.0), 1.0)


@njit(cache=True, inline="always")
def closest_params(x, a0, a1, b0, b1):
    """Parameters (s, t) in 0..1 of the closest points a0 + s (a1 - a0) and
    b0 + t (b1 - b0) of the segments a0-a1 and b0-b1 of positions x (Ericson 5.1.9)."""
    d1x = x[a1, 0] - x[a0, 0]
    d1y = x[a1, 1] - x[a0, 1]
    d1z = x[a1, 2] - x[a0, 2]
    d2x = x[b1, 0] - x[b0, 0]
    d2y = x[b1, 1] - x[b0, 1]
    d2z = x[b1, 2] - x[b0, 2]
    rx = x[a0, 0] - x[b0, 0]
    ry = x[a0, 1] - x[b0, 1]
    rz = x[a0, 2] - x[b0, 2]
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    if a <= POINT_LENGTH_SQ and e <= POINT_LENGTH_SQ:
        return 0.0, 0.0
    if a <= POINT_LENGTH_SQ:
        return 0.0, _clamp01(f / e)
    c = d1x * rx + d1y * ry + d1z * rz
    if e <= POINT_LENGTH_SQ:
        return _clamp01(-c / a), 0.0
    b = d1x * d2x + d1y * d2y + d1z * d2z
    denom = a * e - b * b
    s = _clamp01((b * f - c * e) / denom) if denom > 0.0 else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        return _clamp01(-c / a), 0.0
    if t > 1.0:
        return _clamp01((b - c) / a), 1.0
    return s, t


@njit(cache=True, inline="always")
def gap(x, a0, a1, b0, b1, s, t):
    """Vector (3 floats, m) from the point at t on b0-b1 to the point at s on a0-a1."""
    gx = (x[a0, 0] + s * (x[a1, 0] - x[a0, 0])) - (x[b0, 0] + t * (x[b1, 0] - x[b0, 0]))
    gy = (x[a0, 1] + s * (x[a1, 1] - x[a0, 1])) - (x[b0, 1] + t * (x[b1, 1] - x[b0, 1]))
    gz = (x[a0, 2] + s * (x[a1, 2] - x[a0, 2])) - (x[b0, 2] + t * (x[b1, 2] - x[b0, 2]))
    return gx, gy, gz


@njit(cache=True)
def segment_distance(x, a0, a1, b0, b1):
    """Distance (m) between the segments a0-a1 and b0-b1 of positions x."""
    s, t = closest_params(x, a0, a1, b0, b1)
    gx, gy, gz = gap(x, a0, a1, b0, b1, s, t)
    return (gx * gx + gy * gy + gz * gz) ** 0.5
