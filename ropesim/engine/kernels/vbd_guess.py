"""VBD's start of a step, particle by particle (integrators/vbd.py has the method): the
step-start position, the inertia target and the initial guess, shared by the
spring-list path (vbd.vbd_begin) and the grid path (grid_vbd.py, which writes them
straight into its sweep layout), so both give the same bits.
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
def particle_guess(x, v, v_last, inv_mass, fixed, gravity, external, has_external, h, mode,
                   have_history, stiffness, iterations, i, guess, start, target, e):
    """Particle i's step start: start[e] = x[i], target[e] = y_i = x_i + h v_i + h^2
    (g + f_ext / m) (inertia target), guess[e] = the initial guess (mode: index in
    vbd.INITIALISATIONS; "adaptive" and "extrapolated" are "inertia" without a previous
    step; "extrapolated" weighs the last acceleration by extrapolation_weight of
    stiffness[i], the sum of the particle's springs' k, N/m); guess may be x itself
    (e = i). v_last[i]: the last step's start velocity on entry, this step's on exit.
    Returns r = m (y_i - x_i) / h^2 (N; zero for a fixed particle, which keeps x)."""
    for d in range(3):
        start[e, d] = x[i, d]
        target[e, d] = x[i, d]
        guess[e, d] = x[i, d]
    if fixed[i]:
        for d in range(3):
            v_last[i, d] = v[i, d]
        return 0.0, 0.0, 0.0
    a0 = gravity[0] + (inv_mass[i] * external[i, 0] if has_external else 0.0)
    a1 = gravity[1] + (inv_mass[i] * external[i, 1] if has_external else 0.0)
    a2 = gravity[2] + (inv_mass[i] * external[i, 2] if has_external else 0.0)
    target[e, 0] += h * v[i, 0] + h * h * a0
    target[e, 1] += h * v[i, 1] + h * h * a1
    target[e, 2] += h * v[i, 2] + h * h * a2
    m_h2 = 1.0 / (inv_mass[i] * h * h)
    r0 = m_h2 * (target[e, 0] - start[e, 0])
    r1 = m_h2 * (target[e, 1] - start[e, 1])
    r2 = m_h2 * (target[e, 2] - start[e, 2])
    if mode == 0:
        pass
    elif mode == 4 and have_history:  # extrapolated: the last step's acceleration, weighted
        beta = extrapolation_weight(h * h * inv_mass[i] * stiffness[i], iterations)
        for d in range(3):
            guess[e, d] += h * v[i, d] + beta * h * (v[i, d] - v_last[i, d])
    elif mode == 1 or mode == 3 or mode == 4:
        if mode == 3 and have_history:  # adaptive: the previous acceleration along a_ext, clamped
            size = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
            along = 0.0
            if size > 0.0:
                along = ((v[i, 0] - v_last[i, 0]) * a0 + (v[i, 1] - v_last[i, 1]) * a1
                         + (v[i, 2] - v_last[i, 2]) * a2) / (h * size)
                along = min(max(along, 0.0), size) / size
            for d in range(3):
                a = a0 if d == 0 else (a1 if d == 1 else a2)
                guess[e, d] += h * v[i, d] + h * h * along * a
        else:
            for d in range(3):
                guess[e, d] += h * v[i, d]
    else:
        for d in range(3):
            guess[e, d] = target[e, d]
    for d in range(3):
        v_last[i, d] = v[i, d]
    return r0, r1, r2
