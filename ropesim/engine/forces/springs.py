"""Springs with dampers: the force part and its numba kernels (forces, energy, strain and
the spring Jacobian for the implicit integrators).

Every kernel takes plain arrays and writes into arrays it is given, so the step
allocates nothing. For spring s joining particles a[s] and b[s]:

    d = x[a] - x[b],  l = |d|,  n = d / l
    Hooke:    f_a = -k (l - L) n                      (f_b = -f_a)
    damping:  f_a = -c ((v[a] - v[b]) . n) n          (along the spring only)

k in N/m, c in N*s/m, L in m. A spring whose ends coincide (l ~ 0) has no defined
direction and contributes no force, so it never produces NaN.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels.particles import (
    MIN_LENGTH, add_pair, spring_direction, spring_magnitude, spring_vector,
)
from ..state import Params, State
from .base import Force


@njit(cache=True)
def add_spring_forces(x, v, spring_a, spring_b, rest, k, c, f):
    """Add the Hooke + damping forces of all springs into f (n, 3), N, in spring order."""
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        nx, ny, nz, length = spring_direction(x, i, j)
        if length < MIN_LENGTH:
            continue
        mag = spring_magnitude(v, i, j, nx, ny, nz, length, k[s], c[s], rest[s])
        add_pair(f, i, j, mag * nx, mag * ny, mag * nz)


@njit(cache=True)
def spring_forces(x, v, spring_a, spring_b, rest, k, c, f):
    """Set f (n, 3) to the Hooke + damping forces of all springs, N."""
    f[:] = 0.0
    add_spring_forces(x, v, spring_a, spring_b, rest, k, c, f)


@njit(cache=True)
def spring_energy(x, spring_a, spring_b, rest, k):
    """Elastic energy sum of k/2 (l - L)^2, J."""
    total = 0.0
    for s in range(spring_a.shape[0]):
        stretch = spring_vector(x, spring_a[s], spring_b[s])[3] - rest[s]
        total += 0.5 * k[s] * stretch * stretch
    return total


@njit(cache=True)
def spring_strain(x, spring_a, spring_b, rest, out):
    """Signed strain (l - L) / L of every spring into out (m,); 0 for L = 0."""
    for s in range(spring_a.shape[0]):
        length = spring_vector(x, spring_a[s], spring_b[s])[3]
        out[s] = (length - rest[s]) / rest[s] if rest[s] > 0.0 else 0.0


@njit(cache=True)
def stiffness_blocks(x, spring_a, spring_b, rest, k, clamp, blocks, normals):
    """Per-spring 3x3 stiffness block Ks = -(df_a/dx_a), stored as 6 unique entries.

    Ks = k [ n n^T + (1 - L/l) (I - n n^T) ]. The transverse factor (1 - L/l) is
    negative for a compressed spring, which can make the implicit system indefinite;
    with clamp=True it is limited to >= 0 (the always-definite form). Also stores the
    unit direction n of each spring in normals (m, 3) for the damping block c n n^T.
    blocks[s] = (xx, yy, zz, xy, xz, yz).
    """
    for s in range(spring_a.shape[0]):
        nx, ny, nz, length = spring_direction(x, spring_a[s], spring_b[s])
        normals[s, 0] = nx
        normals[s, 1] = ny
        normals[s, 2] = nz
        if length < MIN_LENGTH:
            for e in range(6):
                blocks[s, e] = 0.0
            continue
        transverse = 1.0 - rest[s] * (1.0 / length)
        if clamp and transverse < 0.0:
            transverse = 0.0
        axial = 1.0 - transverse
        ks = k[s]
        blocks[s, 0] = ks * (axial * nx * nx + transverse)
        blocks[s, 1] = ks * (axial * ny * ny + transverse)
        blocks[s, 2] = ks * (axial * nz * nz + transverse)
        blocks[s, 3] = ks * axial * nx * ny
        blocks[s, 4] = ks * axial * nx * nz
        blocks[s, 5] = ks * axial * ny * nz


@njit(cache=True)
def system_product(p, mass, spring_a, spring_b, blocks, normals, c, alpha, beta, fixed, out):
    """out = A p with A = M + alpha Ks_graph + beta C_graph (matrix-free).

    Ks_graph and C_graph are the graph Laplacians of the per-spring blocks Ks and
    c n n^T, i.e. -K and -D of the whole system. Rows of fixed particles are zero so
    that conjugate gradient stays in the subspace of free particles.
    """
    n = p.shape[0]
    for i in range(n):
        out[i, 0] = mass[i] * p[i, 0]
        out[i, 1] = mass[i] * p[i, 1]
        out[i, 2] = mass[i] * p[i, 2]
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        qx = p[i, 0] - p[j, 0]
        qy = p[i, 1] - p[j, 1]
        qz = p[i, 2] - p[j, 2]
        b = blocks[s]
        nx = normals[s, 0]
        ny = normals[s, 1]
        nz = normals[s, 2]
        damp = beta * c[s] * (nx * qx + ny * qy + nz * qz)
        rx = alpha * (b[0] * qx + b[3] * qy + b[4] * qz) + damp * nx
        ry = alpha * (b[3] * qx + b[1] * qy + b[5] * qz) + damp * ny
        rz = alpha * (b[4] * qx + b[5] * qy + b[2] * qz) + damp * nz
        add_pair(out, i, j, rx, ry, rz)
    for i in range(n):
        if fixed[i]:
            out[i, 0] = 0.0
            out[i, 1] = 0.0
            out[i, 2] = 0.0


@njit(cache=True)
def system_diagonal(mass, spring_a, spring_b, blocks, normals, c, alpha, beta, out):
    """Diagonal of A = M + alpha Ks_graph + beta C_graph, for the Jacobi preconditioner."""
    for i in range(mass.shape[0]):
        out[i, 0] = mass[i]
        out[i, 1] = mass[i]
        out[i, 2] = mass[i]
    for s in range(spring_a.shape[0]):
        for end in range(2):
            i = spring_a[s] if end == 0 else spring_b[s]
            for d in range(3):
                nd = normals[s, d]
                out[i, d] += alpha * blocks[s, d] + beta * c[s] * nd * nd


class SpringForces(Force):
    """Every spring of the system with its damper (stiffness N/m, damping N*s/m, rest
    lengths m from Params), between particles spring_a[s] and spring_b[s]. Part of the
    default list: the integrators apply it in their fused kernels (and the implicit ones
    with its exact Jacobian, see stiffness_blocks)."""

    fused = True

    def __init__(self, spring_a: np.ndarray, spring_b: np.ndarray):
        self.spring_a = spring_a
        self.spring_b = spring_b

    def accumulate(self, state: State, params: Params, f: np.ndarray) -> None:
        add_spring_forces(state.x, state.v, self.spring_a, self.spring_b, params.rest_lengths,
                          params.stiffness, params.damping, f)

    def potential_energy(self, state: State, params: Params) -> float:
        """Elastic energy sum of k/2 (l - L)^2, J."""
        return float(spring_energy(state.x, self.spring_a, self.spring_b,
                                   params.rest_lengths, params.stiffness))
