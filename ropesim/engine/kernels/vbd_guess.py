"""VBD's start of a step for one particle (integrators/vbd.py has the method): the
inertia target and the initial guess, shared by the spring-list path (vbd.vbd_begin)
and the grid path (grid_vbd.py grid_begin_row, which writes them straight into its
sweep layout), so both give the same bits.
"""

from __future__ import annotations

import math

from numba import njit

#: the "extrapolated" guess adds a particle's whole last acceleration while h^2 sum(k) / m
#: of its springs is at most this times the sweeps per step, less beyond
#: (integrators/vbd.py's docstring)
EXTRAPOLATION_RATIO = 4.0


@njit(cache=True, inline="always")
def extrapolation_weight(stiffness_ratio, iterations):
    """The share of the last step's acceleration that the "extrapolated" guess adds:
    1 up to a stiffness ratio h^2 sum(k) / m of EXTRAPOLATION_RATIO x iterations, then
    that over the ratio (the modal bound in integrators/vbd.py's docstring)."""
    limit = EXTRAPOLATION_RATIO * iterations
    return 1.0 if stiffness_ratio <= limit else limit / stiffness_ratio


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def particle_guess(x0, x1, x2, v0, v1, v2, w0, w1, w2, inv_mass, g0, g1, g2, f0, f1, f2, h,
                   mode, have_history, stiffness, iterations):
    """A free particle's step start from its position x (m), velocity v and last step's
    start velocity w (m/s), 1/m (1/kg), gravity g and f = f_ext / m (m/s^2: the caller
    forms the product in the arrays' dtype, or 0) and stiffness, the sum of its
    springs' k (N/m):
    (y, guess), y = x + h v + h^2 (g + f / m) the inertia target and guess the initial
    guess (mode: index in vbd.INITIALISATIONS; "adaptive" and "extrapolated" are
    "inertia" without a previous step; "extrapolated" weighs the last acceleration by
    extrapolation_weight of stiffness). Scalars in and out (an inlined helper taking
    arrays cost 5x the loop around it); the caller stores y and guess in the state's
    dtype, whose rounding the arrays then give."""
    a0 = g0 + f0
    a1 = g1 + f1
    a2 = g2 + f2
    y0 = x0 + (h * v0 + h * h * a0)
    y1 = x1 + (h * v1 + h * h * a1)
    y2 = x2 + (h * v2 + h * h * a2)
    if mode == 0:
        return y0, y1, y2, x0, x1, x2
    if mode == 4 and have_history:  # extrapolated: the last step's acceleration, weighted
        beta = extrapolation_weight(h * h * inv_mass * stiffness, iterations)
        return (y0, y1, y2, x0 + (h * v0 + beta * h * (v0 - w0)),
                x1 + (h * v1 + beta * h * (v1 - w1)), x2 + (h * v2 + beta * h * (v2 - w2)))
    if mode == 3 and have_history:  # adaptive: the previous acceleration along a_ext, clamped
        size = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
        along = 0.0
        if size > 0.0:
            along = ((v0 - w0) * a0 + (v1 - w1) * a1 + (v2 - w2) * a2) / (h * size)
            along = min(max(along, 0.0), size) / size
        return (y0, y1, y2, x0 + (h * v0 + h * h * along * a0),
                x1 + (h * v1 + h * h * along * a1), x2 + (h * v2 + h * h * along * a2))
    if mode == 1 or mode == 3 or mode == 4:
        return y0, y1, y2, x0 + h * v0, x1 + h * v1, x2 + h * v2
    return y0, y1, y2, y0, y1, y2
