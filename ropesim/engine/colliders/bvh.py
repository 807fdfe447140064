"""A bounding-volume hierarchy over a mesh's triangles, and its numba queries.

Built once per mesh (numpy, median split on the longest axis, leaves of at most
``LEAF_SIZE`` triangles). Nodes are flat arrays: ``boxes`` (n, 6) [min xyz, max xyz] in m,
``links`` (n, 3) int64: an inner node holds [left child, right child, 0], a leaf holds
[first triangle, triangle count, 1] into the reordered ``triangles`` (t, 30): the corner
coordinates (9), then the angle-weighted pseudo-normals (Baerentzen and Aanaes 2005) of
the face, its three vertices and its three edges (:data:`FACE`, ...), which give the
sign of the distance to a closed mesh from its closest feature. Queries walk the tree
with an explicit stack (a scratch array handed in, so nothing is allocated per
particle): the closest point (and the pseudo-normal of its feature) within a distance,
the first crossing of a segment, and the closest points of a segment (a rope segment).
"""

from __future__ import annotations

import numpy as np
from numba import njit

LEAF_SIZE = 4
#: Columns of a triangle row: its corners, then the pseudo-normal of each feature.
FACE, VERTEX_A, VERTEX_B, VERTEX_C, EDGE_AB, EDGE_BC, EDGE_CA = 9, 12, 15, 18, 21, 24, 27
TRIANGLE_COLUMNS = 30
#: Stack depth of a walk; a median split keeps the depth near log2(t / LEAF_SIZE).
STACK_SIZE = 128
#: Barycentric slack (relative) of the segment test, so that a segment through a shared
#: edge or vertex hits one of its triangles.
EDGE_SLACK = 1e-9


def pseudo_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(t, 21) unit pseudo-normals of every triangle's face, vertices (a, b, c; angle-
    weighted) and edges (ab, bc, ca; the sum of the two faces). Vertices at the same
    place count as one."""
    points, ids, corners, face = _welded_faces(vertices, triangles)
    out = np.zeros((len(triangles), 21))
    out[:, 0:3] = face
    vertex_sum = _vertex_sums(corners, face, ids, len(points))
    edges = np.sort(np.stack([ids, np.roll(ids, -1, axis=1)], -1).reshape(-1, 2), axis=1)
    _, edge_id = np.unique(edges, axis=0, return_inverse=True)
    edge_sum = np.zeros((edge_id.max() + 1, 3))
    np.add.at(edge_sum, edge_id.ravel(), np.repeat(face, 3, axis=0))
    for k in range(3):
        vn = vertex_sum[ids[:, k]]
        en = edge_sum[edge_id.reshape(-1, 3)[:, k]]
        out[:, 3 + 3 * k:6 + 3 * k] = vn / np.maximum(np.linalg.norm(vn, axis=1), 1e-300)[:, None]
        out[:, 12 + 3 * k:15 + 3 * k] = en / np.maximum(np.linalg.norm(en, axis=1), 1e-300)[:, None]
    return out


def _welded_faces(vertices: np.ndarray, triangles: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(points (p, 3) m: the distinct vertices, ids (t, 3): each corner's point,
    corners (t, 3, 3) m, face (t, 3): the unit face normals) of a mesh whose vertices
    at the same place count as one."""
    points, welded = np.unique(vertices, axis=0, return_inverse=True)
    ids = welded.ravel()[triangles]
    corners = points[ids]
    face = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    face /= np.linalg.norm(face, axis=1)[:, None]
    return points, ids, corners, face


def _vertex_sums(corners: np.ndarray, face: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """(n, 3): per (welded) vertex, the sum of its triangles' unit face normals ``face``
    weighted by the triangles' angles at it (``corners`` (t, 3, 3) m, ``ids`` (t, 3) the
    welded vertex of each corner): its angle-weighted pseudo-normal, not normalised."""
    vertex_sum = np.zeros((n, 3))
    for k in range(3):
        u = corners[:, (k + 1) % 3] - corners[:, k]
        w = corners[:, (k + 2) % 3] - corners[:, k]
        cos = np.einsum("ij,ij->i", u, w) / (np.linalg.norm(u, axis=1) * np.linalg.norm(w, axis=1))
        np.add.at(vertex_sum, ids[:, k], np.arccos(np.clip(cos, -1.0, 1.0))[:, None] * face)
    return vertex_sum


def build_bvh(vertices: np.ndarray, triangles: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(boxes, links, triangle rows) of the BVH over a mesh (vertices m, (t, 3) indices)."""
    corners = vertices[triangles]
    centroids = corners.mean(axis=1)
    lows, highs = corners.min(axis=1), corners.max(axis=1)
    order = np.arange(len(corners))
    boxes: list[np.ndarray] = []
    links: list[list[int]] = []
    stack = [(0, len(corners), -1, 0)]  # (start, stop, parent, which child)
    while stack:
        start, stop, parent, side = stack.pop()
        node = len(boxes)
        items = order[start:stop]
        boxes.append(np.concatenate([lows[items].min(axis=0), highs[items].max(axis=0)]))
        links.append([start, stop - start, 1])
        if parent >= 0:
            links[parent][side] = node
        if stop - start <= LEAF_SIZE:
            continue
        spread = np.ptp(centroids[items], axis=0)
        axis = int(np.argmax(spread))
        half = (stop - start) // 2
        part = np.argpartition(centroids[items, axis], half)
        order[start:stop] = items[part]
        links[node] = [0, 0, 0]
        stack.append((start + half, stop, node, 1))
        stack.append((start, start + half, node, 0))
    rows = np.concatenate([corners.reshape(-1, 9), pseudo_normals(vertices, triangles)], 1)
    return (np.array(boxes, dtype=np.float64), np.array(links, dtype=np.int64),
            np.ascontiguousarray(rows[order], dtype=np.float64))


@njit(cache=True, inline="always")
def _edge_dots(px, py, pz, qx, qy, qz, abx, aby, abz, acx, acy, acz):
    """(ab . (p - q), ac . (p - q)): where p lies along a triangle's two edges from a,
    seen from its corner q."""
    dx, dy, dz = px - qx, py - qy, pz - qz
    return abx * dx + aby * dy + abz * dz, acx * dx + acy * dy + acz * dz


@njit(cache=True, inline="always")
def _corner_feature(px, py, pz, q, ux, uy, uz, wx, wy, wz, d_own_a, d_other_a, ax, ay, az,
                    vertex, edge):
    """Whether p's closest point on a triangle is its corner q (b or c) or on the edge
    from a to q: (found, x, y, z, feature column, d_own, d_other). u is the edge a -> q,
    w the other edge from a; d_own_a, d_other_a are p's dots with them seen from a
    (_edge_dots), d_own, d_other the same seen from q. One test serves b and, with the
    edges swapped, c (Ericson 5.1.5)."""
    d_own, d_other = _edge_dots(px, py, pz, q[0], q[1], q[2], ux, uy, uz, wx, wy, wz)
    if d_own >= 0.0 and d_other <= d_own:
        return True, q[0], q[1], q[2], vertex, d_own, d_other
    if d_own_a * d_other - d_own * d_other_a <= 0.0 and d_own_a >= 0.0 and d_own <= 0.0:
        w = d_own_a / (d_own_a - d_own)
        return True, ax + w * ux, ay + w * uy, az + w * uz, edge, d_own, d_other
    return False, 0.0, 0.0, 0.0, 0, d_own, d_other


@njit(cache=True, inline="always")
def closest_on_triangle(px, py, pz, t):
    """The closest point (x, y, z) to p on the triangle row t and the column of its
    feature's pseudo-normal (Ericson, Real-Time Collision Detection 5.1.5)."""
    ax, ay, az = t[0], t[1], t[2]
    abx, aby, abz = t[3] - ax, t[4] - ay, t[5] - az
    acx, acy, acz = t[6] - ax, t[7] - ay, t[8] - az
    d1, d2 = _edge_dots(px, py, pz, ax, ay, az, abx, aby, abz, acx, acy, acz)
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, VERTEX_A
    found, qx, qy, qz, f, d3, d4 = _corner_feature(px, py, pz, t[3:6], abx, aby, abz, acx,
                                                   acy, acz, d1, d2, ax, ay, az, VERTEX_B,
                                                   EDGE_AB)
    if found:
        return qx, qy, qz, f
    found, qx, qy, qz, f, d6, d5 = _corner_feature(px, py, pz, t[6:9], acx, acy, acz, abx,
                                                   aby, abz, d2, d1, ax, ay, az, VERTEX_C,
                                                   EDGE_CA)
    if found:
        return qx, qy, qz, f
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return (t[3] + w * (t[6] - t[3]), t[4] + w * (t[7] - t[4]), t[5] + w * (t[8] - t[5]),
                EDGE_BC)
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w, FACE


@njit(cache=True, inline="always")
def segment_triangle(px, py, pz, dx, dy, dz, t):
    """Parameter s in [0, 1] where p + s d crosses the triangle t, or -1 (Moller-Trumbore)."""
    e1x, e1y, e1z = t[3] - t[0], t[4] - t[1], t[5] - t[2]
    e2x, e2y, e2z = t[6] - t[0], t[7] - t[1], t[8] - t[2]
    hx = dy * e2z - dz * e2y
    hy = dz * e2x - dx * e2z
    hz = dx * e2y - dy * e2x
    a = e1x * hx + e1y * hy + e1z * hz
    if a == 0.0:
        return -1.0
    f = 1.0 / a
    sx, sy, sz = px - t[0], py - t[1], pz - t[2]
    u = f * (sx * hx + sy * hy + sz * hz)
    if u < -EDGE_SLACK or u > 1.0 + EDGE_SLACK:
        return -1.0
    qx = sy * e1z - sz * e1y
    qy = sz * e1x - sx * e1z
    qz = sx * e1y - sy * e1x
    v = f * (dx * qx + dy * qy + dz * qz)
    if v < -EDGE_SLACK or u + v > 1.0 + EDGE_SLACK:
        return -1.0
    s = f * (e2x * qx + e2y * qy + e2z * qz)
    if s < 0.0 or s > 1.0:
        return -1.0
    return s


@njit(cache=True, inline="always")
def _point_box_sq(px, py, pz, b):
    """Squared distance (m^2) from p to the box b [min xyz, max xyz]."""
    ex = max(b[0] - px, 0.0, px - b[3])
    ey = max(b[1] - py, 0.0, py - b[4])
    ez = max(b[2] - pz, 0.0, pz - b[5])
    return ex * ex + ey * ey + ez * ez


@njit(cache=True, inline="always")
def _segment_hits_box(px, py, pz, dx, dy, dz, b):
    """Whether p + s d, s in [0, 1], meets the box b (slab test)."""
    lo = 0.0
    hi = 1.0
    for k in range(3):
        p = px if k == 0 else (py if k == 1 else pz)
        d = dx if k == 0 else (dy if k == 1 else dz)
        if d == 0.0:
            if p < b[k] or p > b[k + 3]:
                return False
        else:
            s0 = (b[k] - p) / d
            s1 = (b[k + 3] - p) / d
            if s0 > s1:
                s0, s1 = s1, s0
            lo = max(lo, s0)
            hi = min(hi, s1)
            if lo > hi:
                return False
    return True


@njit(cache=True)
def closest_point(px, py, pz, limit_sq, boxes, links, triangles, stack):
    """(squared distance, qx, qy, qz, triangle, feature column) of the closest surface
    point closer than sqrt(limit_sq) m, or (limit_sq, 0, 0, 0, -1, 0) when none is. The
    nearer child of a node is searched first, so that the bound tightens early."""
    best = limit_sq
    bx = by = bz = 0.0
    best_t = -1
    best_f = 0
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if _point_box_sq(px, py, pz, boxes[node]) >= best:
            continue
        if links[node, 2] == 1:
            for k in range(links[node, 0], links[node, 0] + links[node, 1]):
                qx, qy, qz, f = closest_on_triangle(px, py, pz, triangles[k])
                d = (qx - px) ** 2 + (qy - py) ** 2 + (qz - pz) ** 2
                if d < best:
                    best, bx, by, bz, best_t, best_f = d, qx, qy, qz, k, f
        elif top + 2 <= stack.shape[0]:
            near, far = links[node, 0], links[node, 1]
            if _point_box_sq(px, py, pz, boxes[far]) < _point_box_sq(px, py, pz, boxes[near]):
                near, far = far, near
            stack[top] = far
            stack[top + 1] = near
            top += 2
    return best, bx, by, bz, best_t, best_f


@njit(cache=True)
def first_crossing(px, py, pz, dx, dy, dz, boxes, links, triangles, stack):
    """(s, triangle) of the first crossing of the segment p + s d (s in [0, 1]) with the
    mesh, or (2.0, -1) when it crosses none."""
    best = 2.0
    best_t = -1
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if not _segment_hits_box(px, py, pz, dx * min(best, 1.0), dy * min(best, 1.0),
                                 dz * min(best, 1.0), boxes[node]):
            continue
        if links[node, 2] == 1:
            for k in range(links[node, 0], links[node, 0] + links[node, 1]):
                s = segment_triangle(px, py, pz, dx, dy, dz, triangles[k])
                if s >= 0.0 and s < best:
                    best, best_t = s, k
        elif top + 2 <= stack.shape[0]:
            stack[top] = links[node, 0]
            stack[top + 1] = links[node, 1]
            top += 2
    return best, best_t


@njit(cache=True, inline="always")
def segment_params(px, py, pz, ux, uy, uz, qx, qy, qz, wx, wy, wz):
    """(s, t) in 0..1: the closest points p + s u and q + t w of two segments (Ericson,
    Real-Time Collision Detection 5.1.9)."""
    a = ux * ux + uy * uy + uz * uz
    e = wx * wx + wy * wy + wz * wz
    rx, ry, rz = px - qx, py - qy, pz - qz
    f = wx * rx + wy * ry + wz * rz
    if a <= 1e-30:
        return 0.0, (min(max(f / e, 0.0), 1.0) if e > 1e-30 else 0.0)
    c = ux * rx + uy * ry + uz * rz
    if e <= 1e-30:
        return min(max(-c / a, 0.0), 1.0), 0.0
    b = ux * wx + uy * wy + uz * wz
    denom = a * e - b * b
    s = 0.0
    if denom > 1e-12 * a * e:  # not parallel
        s = min(max((b * f - c * e) / denom, 0.0), 1.0)
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = min(max(-c / a, 0.0), 1.0)
    elif t > 1.0:
        t = 1.0
        s = min(max((b - c) / a, 0.0), 1.0)
    return s, t


@njit(cache=True, inline="always")
def segment_to_triangle(px, py, pz, dx, dy, dz, t):
    """(squared distance m^2, s, qx, qy, qz, feature column): the closest points p + s d
    (s in 0..1) and q of a segment and the triangle row t; 0 and the crossing when the
    segment passes through it. Else the nearest of its two ends to the triangle and of
    the segment to the triangle's three edges."""
    s = segment_triangle(px, py, pz, dx, dy, dz, t)
    if s >= 0.0:
        return 0.0, s, px + s * dx, py + s * dy, pz + s * dz, FACE
    best, bs = np.inf, 0.0
    bx = by = bz = 0.0
    bf = FACE
    for end in range(2):
        ex, ey, ez = px + end * dx, py + end * dy, pz + end * dz
        qx, qy, qz, f = closest_on_triangle(ex, ey, ez, t)
        d = (ex - qx) ** 2 + (ey - qy) ** 2 + (ez - qz) ** 2
        if d < best:
            best, bs, bx, by, bz, bf = d, float(end), qx, qy, qz, f
    for k in range(3):  # the edges a-b, b-c, c-a
        o, w = 3 * k, 3 * ((k + 1) % 3)
        wx, wy, wz = t[w] - t[o], t[w + 1] - t[o + 1], t[w + 2] - t[o + 2]
        u, v = segment_params(px, py, pz, dx, dy, dz, t[o], t[o + 1], t[o + 2], wx, wy, wz)
        ex, ey, ez = px + u * dx, py + u * dy, pz + u * dz
        qx, qy, qz = t[o] + v * wx, t[o + 1] + v * wy, t[o + 2] + v * wz
        d = (ex - qx) ** 2 + (ey - qy) ** 2 + (ez - qz) ** 2
        if d < best:
            f = EDGE_AB + 3 * k
            if v == 0.0:
                f = VERTEX_A + 3 * k
            elif v == 1.0:
                f = VERTEX_A + 3 * ((k + 1) % 3)
            best, bs, bx, by, bz, bf = d, u, qx, qy, qz, f
    return best, bs, bx, by, bz, bf


@njit(cache=True, inline="always")
def _segment_box_sq(px, py, pz, dx, dy, dz, b):
    """A lower bound (m^2) on the squared distance from the segment p + s d to the box b:
    the gap between b and the segment's bounding box."""
    gap = 0.0
    for k in range(3):
        p = px if k == 0 else (py if k == 1 else pz)
        d = dx if k == 0 else (dy if k == 1 else dz)
        lo, hi = min(p, p + d), max(p, p + d)
        g = max(b[k] - hi, 0.0, lo - b[k + 3])
        gap += g * g
    return gap


@njit(cache=True)
def closest_to_segment(px, py, pz, dx, dy, dz, limit_sq, boxes, links, triangles, stack):
    """(squared distance, s, qx, qy, qz, triangle, feature column) of the closest points
    p + s d of a segment and q of the mesh closer than sqrt(limit_sq) m, or (limit_sq, 0,
    0, 0, 0, -1, 0) when none is; a distance of 0 where the segment crosses a triangle."""
    best = limit_sq
    bs = bx = by = bz = 0.0
    best_t = -1
    best_f = 0
    stack[0] = 0
    top = 1
    while top > 0 and best > 0.0:
        top -= 1
        node = stack[top]
        if _segment_box_sq(px, py, pz, dx, dy, dz, boxes[node]) >= best:
            continue
        if links[node, 2] == 1:
            for k in range(links[node, 0], links[node, 0] + links[node, 1]):
                d, s, qx, qy, qz, f = segment_to_triangle(px, py, pz, dx, dy, dz,
                                                          triangles[k])
                if d < best:
                    best, bs, bx, by, bz, best_t, best_f = d, s, qx, qy, qz, k, f
        elif top + 2 <= stack.shape[0]:
            stack[top] = links[node, 0]
            stack[top + 1] = links[node, 1]
            top += 2
    return best, bs, bx, by, bz, best_t, best_f


#: Distance-grid cells along the mesh's longest side (and at most this many per axis).
GRID_CELLS = 32


@njit(cache=True)
def _fill_distances(lo, cell, dims, closed, boxes, links, triangles, stack, out):
    """out[(i ny + j) nz + k] = the distance (m; signed for a closed mesh, negative
    inside) from grid node lo + cell (i, j, k) to the mesh."""
    for i in range(dims[0]):
        for j in range(dims[1]):
            for k in range(dims[2]):
                px, py, pz = lo[0] + cell * i, lo[1] + cell * j, lo[2] + cell * k
                d2, qx, qy, qz, tri, f = closest_point(px, py, pz, np.inf, boxes, links,
                                                       triangles, stack)
                d = np.sqrt(d2)
                if closed:
                    n = triangles[tri]
                    if (px - qx) * n[f] + (py - qy) * n[f + 1] + (pz - qz) * n[f + 2] < 0.0:
                        d = -d
                out[(i * dims[1] + j) * dims[2] + k] = d


def distance_grid(boxes: np.ndarray, links: np.ndarray, triangles: np.ndarray, closed: bool,
                  pad: float) -> tuple[np.ndarray, np.ndarray]:
    """(info [lo xyz m, cell m, nx, ny, nz, 0], distances) of a uniform grid over the
    mesh's bounds grown by ``pad`` (m): the kernel reads a lower bound on a particle's
    distance from its nearest node (distances are 1-Lipschitz) and skips the far ones."""
    lo = boxes[0, :3] - pad
    extent = boxes[0, 3:] - boxes[0, :3] + 2 * pad
    cell = float(extent.max()) / GRID_CELLS
    dims = np.minimum(np.ceil(extent / cell).astype(np.int64) + 1, GRID_CELLS + 1)
    out = np.zeros(int(np.prod(dims)))
    _fill_distances(lo, cell, dims, closed, boxes, links, triangles,
                    np.zeros(STACK_SIZE, np.int64), out)
    return np.concatenate([lo, [cell], dims, [0.0]]), out


#: bisection steps of inscribed_widths (a width to 2^-30 of the mesh's size)
WIDTH_STEPS = 30


@njit(cache=True)
def _inscribed_widths(boxes, links, triangles, stack, out):
    """out[k] = twice the radius (m) of the largest ball inside a closed mesh that
    touches triangle k at its centroid (the centre goes in along the face normal until
    another part of the surface comes closer than the radius): the mesh's local width
    there, across a blade, a ridge or a limb."""
    root = boxes[0]
    size = np.sqrt((root[3] - root[0]) ** 2 + (root[4] - root[1]) ** 2
                   + (root[5] - root[2]) ** 2)
    for k in range(triangles.shape[0]):
        t = triangles[k]
        cx = (t[0] + t[3] + t[6]) / 3.0
        cy = (t[1] + t[4] + t[7]) / 3.0
        cz = (t[2] + t[5] + t[8]) / 3.0
        nx, ny, nz = t[FACE], t[FACE + 1], t[FACE + 2]
        lo, hi = 0.0, size
        for _ in range(WIDTH_STEPS):
            r = 0.5 * (lo + hi)
            d2 = closest_point(cx - r * nx, cy - r * ny, cz - r * nz, r * r, boxes, links,
                               triangles, stack)[0]
            if d2 >= r * r * (1.0 - 1e-6):  # only the centroid's own face is that near
                lo = r
            else:
                hi = r
        out[k] = 2.0 * lo


def inscribed_widths(vertices: np.ndarray, triangles: np.ndarray,
                     bvh: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """(t,) local widths (m) of a closed mesh wound outward (vertices m, (t, 3)
    indices), one per triangle in the tree's order (build_bvh reorders them): see
    _inscribed_widths. ``bvh``: the mesh's build_bvh, if already built."""
    boxes, links, rows = build_bvh(vertices, triangles) if bvh is None else bvh
    out = np.zeros(len(rows))
    _inscribed_widths(boxes, links, rows, np.zeros(STACK_SIZE, np.int64), out)
    return out


#: how far in (m) tip_sines looks from a vertex, in shortest edges at the vertex: deep
#: enough to leave the vertex's own faces' rounding, shallow enough to stay in its tip
TIP_DEPTH = 0.25


@njit(cache=True)
def _tip_sines(points, depths, boxes, links, triangles, stack, out):
    """out[k] = the distance (m) from points[k] to the surface over depths[k] (m)."""
    for k in range(points.shape[0]):
        d2 = closest_point(points[k, 0], points[k, 1], points[k, 2], np.inf, boxes, links,
                           triangles, stack)[0]
        out[k] = np.sqrt(d2) / depths[k]


def tip_sines(vertices: np.ndarray, triangles: np.ndarray,
              bvh: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """(points (k, 3) m, sines (k,)): each distinct vertex of a closed mesh wound outward,
    and how sharp its tip is, the sine of the half angle of the cone that fits in it: the
    distance to the surface from the point TIP_DEPTH shortest edges in from the vertex
    (against its angle-weighted normal), over that depth. 1 on a flat or concave part,
    1/sqrt(3) at a cube's corner, sin 10 deg at a cone's apex 20 deg wide. ``bvh``: the
    mesh's build_bvh, if already built."""
    points, ids, corners, face = _welded_faces(vertices, triangles)
    normal = _vertex_sums(corners, face, ids, len(points))
    normal /= np.maximum(np.linalg.norm(normal, axis=1), 1e-300)[:, None]
    shortest = np.full(len(points), np.inf)
    for k in range(3):
        edge = np.linalg.norm(corners[:, (k + 1) % 3] - corners[:, k], axis=1)
        np.minimum.at(shortest, ids[:, k], edge)
        np.minimum.at(shortest, ids[:, (k + 1) % 3], edge)
    depths = TIP_DEPTH * shortest
    boxes, links, rows = build_bvh(vertices, triangles) if bvh is None else bvh
    out = np.zeros(len(points))
    _tip_sines(np.ascontiguousarray(points - depths[:, None] * normal), depths, boxes, links,
               rows, np.zeros(STACK_SIZE, np.int64), out)
    return points, out
