"""Small helpers inlined into every kernel (``inline="always"``: they compile into the
caller with its fastmath flags, so the arithmetic is that of the caller written out).

Spring geometry, for spring s joining particles i and j:

    d = x[i] - x[j],  l = |d|,  n = d / l
    Hooke + damper on i:  f = (-k (l - L) - c ((v[i] - v[j]) . n)) n   (on j: -f)

and the bookkeeping of the particle update: a fixed particle gets zero velocity, and
the largest squared speed of a step is returned as NaN once any speed or position is
not finite.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: below this length (m) a spring has no direction and exerts no force
MIN_LENGTH = 1e-12


@njit(cache=True, inline="always")
def spring_vector(x, i, j):
    """(dx, dy, dz, length) of x[i] - x[j], m."""
    dx = x[i, 0] - x[j, 0]
    dy = x[i, 1] - x[j, 1]
    dz = x[i, 2] - x[j, 2]
    return dx, dy, dz, np.sqrt(dx * dx + dy * dy + dz * dz)


@njit(cache=True, inline="always")
def spring_direction(x, i, j):
    """(nx, ny, nz, length): the unit vector along x[i] - x[j] and its length, m; the
    direction is 0 when length < MIN_LENGTH (a spring of no length pulls nowhere)."""
    dx, dy, dz, length = spring_vector(x, i, j)
    if length < MIN_LENGTH:
        return 0.0 * dx, 0.0 * dy, 0.0 * dz, length
    inv = 1.0 / length
    return dx * inv, dy * inv, dz * inv, length


@njit(cache=True, inline="always")
def spring_magnitude(v, i, j, nx, ny, nz, length, stiffness, damping, rest):
    """Signed force magnitude along n on particle i, N: -k (l - L) - c (v[i] - v[j]) . n."""
    rel_speed = (v[i, 0] - v[j, 0]) * nx + (v[i, 1] - v[j, 1]) * ny + (v[i, 2] - v[j, 2]) * nz
    return -stiffness * (length - rest) - damping * rel_speed


@njit(cache=True, inline="always")
def add_pair(f, i, j, fx, fy, fz):
    """f[i] += (fx, fy, fz), f[j] -= (fx, fy, fz)."""
    f[i, 0] += fx
    f[i, 1] += fy
    f[i, 2] += fz
    f[j, 0] -= fx
    f[j, 1] -= fy
    f[j, 2] -= fz


@njit(cache=True, inline="always")
def hold(v, i, zero):
    """A fixed particle: v[i] = 0 (``zero`` carries the dtype)."""
    v[i, 0] = zero
    v[i, 1] = zero
    v[i, 2] = zero


@njit(cache=True, inline="always")
def track_speed(x, v, i, max_sq, bad, zero):
    """(max |v|^2 so far, NaN check sum) after particle i: the check sum stays 0 unless
    a speed or a position coordinate is NaN or infinite."""
    sq = v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2]
    return (sq if sq > max_sq else max_sq), bad + (sq + x[i, 0] + x[i, 1] + x[i, 2]) * zero


@njit(cache=True, inline="always")
def hold_tracked(x, v, i, bad, zero):
    """hold(v, i) for a fixed particle, and its position into the NaN check sum (a NaN
    written into a pinned particle is reported too: nothing else would move it)."""
    hold(v, i, zero)
    return bad + (x[i, 0] + x[i, 1] + x[i, 2]) * zero


@njit(cache=True, inline="always")
def speed_result(max_sq, bad):
    """The step's max |v|^2, or NaN (the check sum) once any speed is not finite."""
    return max_sq if bad == 0.0 else bad


@njit(cache=True, error_model="numpy", boundscheck=False,
      fastmath={"reassoc", "contract", "nsz", "arcp"})
def state_summary(x, v, out):
    """out[0] = the first particle with a non-finite position or velocity (-1 if none);
    out[1], out[2] = position and velocity sums weighted by index and axis (float64),
    so that a write into the state changes them: the Simulation compares them to notice
    writes between steps."""
    sum_x = 0.0
    sum_v = 0.0
    for i in range(x.shape[0]):
        w = 1.0 + i
        sum_x += w * (np.float64(x[i, 0]) + 1.25 * np.float64(x[i, 1])
                      + 1.5 * np.float64(x[i, 2]))
        sum_v += w * (np.float64(v[i, 0]) + 1.25 * np.float64(v[i, 1])
                      + 1.5 * np.float64(v[i, 2]))
    first = -1
    if not (abs(sum_x) < np.inf and abs(sum_v) < np.inf):  # a NaN or inf somewhere
        for i in range(x.shape[0]):
            finite = True
            for d in range(3):
                finite = finite and abs(x[i, d]) < np.inf and abs(v[i, d]) < np.inf
            if not finite:
                first = i
                break
    out[0] = first
    out[1] = sum_x
    out[2] = sum_v
