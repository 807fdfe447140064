"""Matrix-free, Jacobi-preconditioned conjugate gradient for the implicit step.

Solves A dv = rhs with A = M + alpha Ks_graph + beta C_graph (see forces/springs.py),
never forming A. Fixed (pinned or grabbed) particles are held: their rows are zero and
their unknowns stay 0, so CG runs in the subspace of free particles.

A is symmetric. It is positive definite when every spring is stretched; a strongly
compressed spring makes its transverse stiffness negative and can break that. CG
detects it as non-positive curvature (p.Ap <= 0) and reports it, so the caller can
redo the step with the clamped, always-definite stiffness.

The operator is a Python callable (the springs' system_product, plus the products of
attached forces with Jacobians), so one loop serves every force list; each vector
operation is one numba kernel and the loop is over iterations only.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit

#: CG return codes
CONVERGED = 0
MAX_ITERATIONS = 1
NEGATIVE_CURVATURE = 2
STOPPED = 3  # grid_pcg: told to stop (its answer is not needed)


@njit(cache=True)
def _dot(a, b, fixed):
    total = 0.0
    for i in range(a.shape[0]):
        if fixed[i]:
            continue
        total += a[i, 0] * b[i, 0] + a[i, 1] * b[i, 1] + a[i, 2] * b[i, 2]
    return total


@njit(cache=True)
def _start(rhs, diag, fixed, dv, r, z, p):
    """dv = 0, r = rhs, z = p = D^-1 r (zero at fixed particles)."""
    for i in range(rhs.shape[0]):
        for d in range(3):
            dv[i, d] = 0.0
            if fixed[i]:
                r[i, d] = 0.0
                z[i, d] = 0.0
            else:
                r[i, d] = rhs[i, d]
                z[i, d] = r[i, d] / diag[i, d]
            p[i, d] = z[i, d]


@njit(cache=True)
def _advance(dv, r, p, ap, step):
    """dv += step p, r -= step A p."""
    for i in range(dv.shape[0]):
        for d in range(3):
            dv[i, d] += step * p[i, d]
            r[i, d] -= step * ap[i, d]


@njit(cache=True)
def _precondition(r, diag, z):
    """z = D^-1 r."""
    for i in range(r.shape[0]):
        for d in range(3):
            z[i, d] = r[i, d] / diag[i, d]


@njit(cache=True)
def _direction(p, z, ratio):
    """p = z + ratio p."""
    for i in range(p.shape[0]):
        for d in range(3):
            p[i, d] = z[i, d] + ratio * p[i, d]


def conjugate_gradient(apply: Callable[[np.ndarray, np.ndarray], None], diag: np.ndarray,
                rhs: np.ndarray, fixed: np.ndarray, dv: np.ndarray, r: np.ndarray,
                z: np.ndarray, p: np.ndarray, ap: np.ndarray, tolerance: float,
                max_iterations: int) -> tuple[int, int, float]:
    """Solve A dv = rhs in place (dv starts at 0) for a symmetric operator given as
    ``apply(p, out)``: out = A p, rows of fixed particles zero. diag (n, 3) is A's
    diagonal (the Jacobi preconditioner); r, z, p, ap (n, 3) are work arrays.

    Returns (status, iterations, relative residual |r| / |rhs|)."""
    _start(rhs, diag, fixed, dv, r, z, p)
    rhs_norm = np.sqrt(_dot(r, r, fixed))
    if rhs_norm == 0.0:
        return CONVERGED, 0, 0.0
    rz = _dot(r, z, fixed)
    for it in range(max_iterations):
        apply(p, ap)
        curvature = _dot(p, ap, fixed)
        if not curvature > 0.0:
            return NEGATIVE_CURVATURE, it + 1, float(np.sqrt(_dot(r, r, fixed)) / rhs_norm)
        step = rz / curvature
        _advance(dv, r, p, ap, step)
        residual = float(np.sqrt(_dot(r, r, fixed)) / rhs_norm)
        if residual <= tolerance:
            return CONVERGED, it + 1, residual
        _precondition(r, diag, z)
        rz_new = _dot(r, z, fixed)
        ratio = rz_new / rz
        rz = rz_new
        _direction(p, z, ratio)
    return MAX_ITERATIONS, max_iterations, float(np.sqrt(_dot(r, r, fixed)) / rhs_norm)
