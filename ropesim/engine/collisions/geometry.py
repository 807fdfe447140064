"""Closest points between two segments (a particle is a segment of length 0), numba."""

from __future__ import annotations

from numba import njit

#: squared length (m^2) below which a segment counts as a point
POINT_LENGTH_SQ = 1e-24


@njit(cache=True, inline="always")
def _clamp01(value):
    return min(max(value, 0.0), 1.0)


@njit(cache=True, inline="always")
def _minus(x, i, j):
    """x[i] - x[j] as three floats."""
    return x[i, 0] - x[j, 0], x[i, 1] - x[j, 1], x[i, 2] - x[j, 2]


@njit(cache=True, inline="always")
def closest_params(x, a0, a1, b0, b1):
    """Parameters (s, t) in 0..1 of the closest points a0 + s (a1 - a0) and
    b0 + t (b1 - b0) of the segments a0-a1 and b0-b1 of positions x (Ericson 5.1.9)."""
    d1x, d1y, d1z = _minus(x, a1, a0)
    d2x, d2y, d2z = _minus(x, b1, b0)
    rx, ry, rz = _minus(x, a0, b0)
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


@njit(cache=True, inline="always")
def _dots(ux, uy, uz, wx, wy, wz, rx, ry, rz):
    """(u . r, w . r)."""
    return ux * rx + uy * ry + uz * rz, wx * rx + wy * ry + wz * rz


@njit(cache=True, inline="always")
def closest_weights(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Barycentric weights (u, v, w) of the point of triangle a-b-c closest to the point
    p (coordinates, m; Ericson 5.1.5)."""
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    d1, d2 = _dots(abx, aby, abz, acx, acy, acz, px - ax, py - ay, pz - az)
    d3, d4 = _dots(abx, aby, abz, acx, acy, acz, px - bx, py - by, pz - bz)
    d5, d6 = _dots(abx, aby, abz, acx, acy, acz, px - cx, py - cy, pz - cz)
    # the vertex regions, then the edge regions (disjoint Voronoi regions), then inside
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return 1.0 - v, v, 0.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return 1.0 - w, 0.0, w
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - w, w
    denom = va + vb + vc
    if not denom > 0.0:  # a degenerate (flat) triangle: its first vertex
        return 1.0, 0.0, 0.0
    v = vb / denom
    w = vc / denom
    return 1.0 - v - w, v, w


@njit(cache=True, inline="always")
def triangle_weights(x, p, a, b, c):
    """closest_weights for particle p and the triangle of particles a, b, c of x."""
    return closest_weights(x[p, 0], x[p, 1], x[p, 2], x[a, 0], x[a, 1], x[a, 2], x[b, 0],
                           x[b, 1], x[b, 2], x[c, 0], x[c, 1], x[c, 2])


@njit(cache=True, inline="always")
def pair_weights(x, a0, a1, a2, b0, b1, b2):
    """Weights (wa0, wa1, wa2, wb0, wb1, wb2) of the closest points sum(wa x_a) and
    sum(wb x_b) of two primitives: a sphere (i, i, i), a capsule (i, j, j) or a triangle
    (i, j, k). Sphere and capsule pairs use the segment routine; a sphere against a
    triangle the triangle's closest point; other pairs with a triangle are not tested
    (wa0 = -1)."""
    if a0 == a2 and b0 == b2:  # two spheres (a cloth's pairs): their particles
        return 1.0, 0.0, 0.0, 1.0, 0.0, 0.0
    return _mixed_weights(x, a0, a1, a2, b0, b1, b2)


@njit(cache=True)
def _mixed_weights(x, a0, a1, a2, b0, b1, b2):
    """pair_weights of a pair with a capsule or a triangle: a call of its own, so that
    the kernels that inline pair_weights do not each compile the segment and triangle
    routines."""
    tri_a = a2 != a1
    tri_b = b2 != b1
    if tri_a or tri_b:
        sphere_is_a = tri_b  # the other side must be a sphere
        if (tri_a and tri_b) or (a1 != a0 if sphere_is_a else b1 != b0):
            return -1.0, 0.0, 0.0, 0.0, 0.0, 0.0
        if sphere_is_a:
            u, v, w = triangle_weights(x, a0, b0, b1, b2)
            return 1.0, 0.0, 0.0, u, v, w
        u, v, w = triangle_weights(x, b0, a0, a1, a2)
        return u, v, w, 1.0, 0.0, 0.0
    s, t = closest_params(x, a0, a1, b0, b1)
    return 1.0 - s, s, 0.0, 1.0 - t, t, 0.0


@njit(cache=True, inline="always")
def weighted_gap(x, a0, a1, a2, b0, b1, b2, wa0, wa1, wa2, wb0, wb1, wb2):
    """sum(wa x_a) - sum(wb x_b), m (3 floats)."""
    gx = (wa0 * x[a0, 0] + wa1 * x[a1, 0] + wa2 * x[a2, 0]
          - wb0 * x[b0, 0] - wb1 * x[b1, 0] - wb2 * x[b2, 0])
    gy = (wa0 * x[a0, 1] + wa1 * x[a1, 1] + wa2 * x[a2, 1]
          - wb0 * x[b0, 1] - wb1 * x[b1, 1] - wb2 * x[b2, 1])
    gz = (wa0 * x[a0, 2] + wa1 * x[a1, 2] + wa2 * x[a2, 2]
          - wb0 * x[b0, 2] - wb1 * x[b1, 2] - wb2 * x[b2, 2])
    return gx, gy, gz
