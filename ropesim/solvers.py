"""Matrix-free, Jacobi-preconditioned conjugate gradient for the implicit step.

Solves A dv = rhs with A = M + alpha Ks_graph + beta C_graph (see forces.py), never
forming A. Fixed (pinned or grabbed) particles are held: their rows are zero and
their unknowns stay 0, so CG runs in the subspace of free particles.

A is symmetric. It is positive definite when every spring is stretched; a strongly
compressed spring makes its transverse stiffness negative and can break that. CG
detects it as non-positive curvature (p.Ap <= 0) and reports it, so the caller can
redo the step with the clamped, always-definite stiffness.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .forces import system_diagonal, system_product

#: CG return codes
CONVERGED = 0
MAX_ITERATIONS = 1
NEGATIVE_CURVATURE = 2


@njit(cache=True)
def _dot(a, b, fixed):
    total = 0.0
    for i in range(a.shape[0]):
        if fixed[i]:
            continue
        total += a[i, 0] * b[i, 0] + a[i, 1] * b[i, 1] + a[i, 2] * b[i, 2]
    return total


@njit(cache=True)
def conjugate_gradient(
    rhs, mass, spring_a, spring_b, blocks, normals, c, alpha, beta, fixed,
    dv, r, z, p, ap, diag, tolerance, max_iterations,
):
    """Solve A dv = rhs in place (dv starts at 0). Work arrays r, z, p, ap, diag: (n, 3).

    Returns (status, iterations, relative residual |r| / |rhs|).
    """
    n = rhs.shape[0]
    system_diagonal(mass, spring_a, spring_b, blocks, normals, c, alpha, beta, diag)
    for i in range(n):
        for d in range(3):
            dv[i, d] = 0.0
            if fixed[i]:
                r[i, d] = 0.0
                z[i, d] = 0.0
            else:
                r[i, d] = rhs[i, d]
                z[i, d] = r[i, d] / diag[i, d]
            p[i, d] = z[i, d]
    rhs_norm = np.sqrt(_dot(r, r, fixed))
    if rhs_norm == 0.0:
        return CONVERGED, 0, 0.0
    rz = _dot(r, z, fixed)
    for it in range(max_iterations):
        system_product(p, mass, spring_a, spring_b, blocks, normals, c, alpha, beta, fixed, ap)
        curvature = _dot(p, ap, fixed)
        if not curvature > 0.0:
            return NEGATIVE_CURVATURE, it + 1, np.sqrt(_dot(r, r, fixed)) / rhs_norm
        step = rz / curvature
        for i in range(n):
            for d in range(3):
                dv[i, d] += step * p[i, d]
                r[i, d] -= step * ap[i, d]
        residual = np.sqrt(_dot(r, r, fixed)) / rhs_norm
        if residual <= tolerance:
            return CONVERGED, it + 1, residual
        for i in range(n):
            for d in range(3):
                z[i, d] = r[i, d] / diag[i, d]
        rz_new = _dot(r, z, fixed)
        ratio = rz_new / rz
        rz = rz_new
        for i in range(n):
            for d in range(3):
                p[i, d] = z[i, d] + ratio * p[i, d]
    return MAX_ITERATIONS, max_iterations, np.sqrt(_dot(r, r, fixed)) / rhs_norm
