"""Per-vertex normals for drawing cloth surfaces (engine side, no OpenGL).

The renderer lights a cloth as a smooth surface, so every particle needs a
normal. :func:`vertex_normals` is the per-frame numba kernel: it accumulates the
unnormalised face normal (cross product of two edges, whose length is twice the
triangle's area in m^2) into each corner, which weights every face by its area,
then normalises. It writes into a caller-owned array and allocates nothing.

Normals are unit vectors (dimensionless). A vertex that touches no triangle of
non-zero area (isolated, or only in degenerate triangles) gets the zero vector
rather than NaN; the surface shader falls back to the flat face normal there.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["vertex_normals", "compute_normals"]

# Squared length below which an accumulated normal counts as zero. Face normals
# carry units of m^2, so this is an area tolerance of about 1e-15 m^2.
_TINY_SQ = 1e-30


@njit(cache=True, nogil=True)
def vertex_normals(positions: np.ndarray, triangles: np.ndarray, out: np.ndarray) -> None:
    """Area-weighted unit normals per vertex, written into ``out``.

    Parameters
    ----------
    positions : (n, 3) float array, m.
    triangles : (t, 3) integer array of vertex indices into ``positions``.
    out : (n, 3) float32 array, overwritten with unit normals (zero where undefined).

    The orientation follows the triangles' winding: counter-clockwise corners
    (seen from the viewer) give normals pointing towards the viewer.
    """
    n = out.shape[0]
    for i in range(n):
        out[i, 0] = 0.0
        out[i, 1] = 0.0
        out[i, 2] = 0.0
    for t in range(triangles.shape[0]):
        a = triangles[t, 0]
        b = triangles[t, 1]
        c = triangles[t, 2]
        e1x = positions[b, 0] - positions[a, 0]
        e1y = positions[b, 1] - positions[a, 1]
        e1z = positions[b, 2] - positions[a, 2]
        e2x = positions[c, 0] - positions[a, 0]
        e2y = positions[c, 1] - positions[a, 1]
        e2z = positions[c, 2] - positions[a, 2]
        # |e1 x e2| = 2 * area, so summing raw cross products weights by area.
        nx = e1y * e2z - e1z * e2y
        ny = e1z * e2x - e1x * e2z
        nz = e1x * e2y - e1y * e2x
        for v in (a, b, c):
            out[v, 0] += nx
            out[v, 1] += ny
            out[v, 2] += nz
    for i in range(n):
        x = np.float64(out[i, 0])
        y = np.float64(out[i, 1])
        z = np.float64(out[i, 2])
        sq = x * x + y * y + z * z
        if sq > _TINY_SQ and np.isfinite(sq):
            inv = 1.0 / np.sqrt(sq)
            out[i, 0] = x * inv
            out[i, 1] = y * inv
            out[i, 2] = z * inv
        else:
            out[i, 0] = 0.0
            out[i, 1] = 0.0
            out[i, 2] = 0.0


def compute_normals(
    positions: np.ndarray, triangles: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """Area-weighted unit vertex normals, shape (n, 3) float32.

    Parameters
    ----------
    positions : (n, 3) array of vertex positions, m (float32 or float64).
    triangles : (t, 3) integer array of vertex indices.
    out : optional preallocated (n, 3) float32 array to write into (no allocation
        then); a new array is returned when omitted.

    Returns ``out`` (or the new array). Vertices without a triangle of non-zero
    area get the zero vector.
    """
    pos = np.asarray(positions)
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise ValueError(f"positions: expected shape (n, 3), got {pos.shape}")
    if pos.dtype not in (np.float32, np.float64):
        pos = pos.astype(np.float64)
    tris = np.asarray(triangles)
    if tris.size == 0:
        tris = np.zeros((0, 3), dtype=np.int64)
    if tris.ndim != 2 or tris.shape[1] != 3 or not np.issubdtype(tris.dtype, np.integer):
        raise ValueError(f"triangles: expected an integer array of shape (t, 3), got "
                         f"{tris.dtype} {tris.shape}")
    n = pos.shape[0]
    if tris.size and (tris.min() < 0 or tris.max() >= n):
        raise ValueError(f"triangles: indices must be in 0..{n - 1}")
    if out is None:
        out = np.empty((n, 3), dtype=np.float32)
    elif out.shape != (n, 3) or out.dtype != np.float32:
        raise ValueError(f"out: expected a float32 array of shape ({n}, 3), got "
                         f"{out.dtype} {out.shape}")
    vertex_normals(pos, tris, out)
    return out
