"""Per-particle strain for strain colouring of surfaces and tube joints (no OpenGL).

Springs are coloured by their own strain (l - L) / L in the shaders; a surface
vertex or a tube joint gets the mean strain of the springs attached to it, which
:func:`vertex_strain` computes each frame into a caller-owned array.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["vertex_strain"]


@njit(cache=True, nogil=True)
def vertex_strain(positions: np.ndarray, springs: np.ndarray, rest: np.ndarray,
                  counts: np.ndarray, out: np.ndarray) -> None:
    """Mean strain (dimensionless) of each particle's springs, written into ``out``.

    positions : (n, 3) m; springs : (m, 2) particle indices; rest : (m,) rest
    lengths, m (springs of rest length 0 are skipped); counts : (n,) float32
    scratch; out : (n,) float32, 0 for particles without springs.
    """
    for i in range(out.shape[0]):
        out[i] = 0.0
        counts[i] = 0.0
    for k in range(springs.shape[0]):
        length0 = rest[k]
        if length0 <= 0.0:
            continue
        a = springs[k, 0]
        b = springs[k, 1]
        dx = positions[b, 0] - positions[a, 0]
        dy = positions[b, 1] - positions[a, 1]
        dz = positions[b, 2] - positions[a, 2]
        strain = (np.sqrt(dx * dx + dy * dy + dz * dz) - length0) / length0
        out[a] += strain
        out[b] += strain
        counts[a] += 1.0
        counts[b] += 1.0
    for i in range(out.shape[0]):
        if counts[i] > 0.0:
            out[i] /= counts[i]
