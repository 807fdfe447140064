"""The contact pass: one numba call per step for the ground, spheres, boxes, capsules and
meshes.

Per free particle, in this order: grounds, spheres (projection onto the surface), then
every rigid collider. A rigid collider is tested in its own frame: the particle's
position before the step is taken into the collider's pose before the step and the new
position into its pose after the step, so the segment between them is the motion
relative to the collider. A segment that crosses the surface (a ray-box slab test, a
segment-capsule test, a segment-triangle test through the mesh's BVH) stops the particle
where it crossed, on the side it came from; a particle found inside (the collider moved
onto it) goes out the nearest way. Then the inward normal part of the velocity relative
to the surface (the collider's own velocity, ``velocity + spin x r``) is removed and
Coulomb friction takes up to ``friction`` times that removed normal speed off the
relative tangential speed. A broad phase per block of particles skips the colliders
that cannot come near the block during the step (_block_near). Then rope segments, and
a cloth's triangle edges against the colliders thin enough to pass between two of its
particles (_segment_contacts): swept by conservative advancement when they move fast,
then pushed out of what pokes through them, with a broad phase of their own
(_segment_near).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..collisions.geometry import closest_weights
from .bvh import (EDGE_SLACK, FACE, closest_point, closest_to_segment, first_crossing,
                  segment_params)

BOX, CAPSULE, MESH = 0, 1, 2
#: Columns of the collider table (float64, one row a collider).
KIND, FRICTION, P0, P1, P2, MESH_INDEX, CLOSED, CENTER, ROTATION, VELOCITY, SPIN, POSE_TIME = (
    0, 1, 2, 3, 4, 5, 6, 7, 10, 19, 22, 25)
COLUMNS = 26
#: How far outside a surface (m) a stopped particle is put, so that rounding (float32
#: included) leaves it outside: the table holds boxes and capsules grown by it, and
#: meshes keep at least it off.
SKIN = 1e-5


@njit(cache=True, inline="always")
def _resolve(v, i, nx, ny, nz, friction, sx, sy, sz):
    """Remove the inward normal velocity of particle i relative to a surface moving at
    s (m/s) and apply Coulomb friction to the relative tangential velocity."""
    rx = v[i, 0] - sx
    ry = v[i, 1] - sy
    rz = v[i, 2] - sz
    vn = rx * nx + ry * ny + rz * nz
    if vn >= 0.0:
        return
    tx = rx - vn * nx
    ty = ry - vn * ny
    tz = rz - vn * nz
    tangential = np.sqrt(tx * tx + ty * ty + tz * tz)
    scale = 1.0
    if tangential > 0.0:
        scale = max(0.0, 1.0 - friction * (-vn) / tangential)
    v[i, 0] = tx * scale + sx
    v[i, 1] = ty * scale + sy
    v[i, 2] = tz * scale + sz


@njit(cache=True, inline="always")
def _turn(wx, wy, wz, angle, r, out):
    """out[3:12] = T r: the rotation r (row-major) turned by ``angle`` (rad) about the
    unit axis (wx, wy, wz) (Rodrigues: T = I + s K + c K K)."""
    s, c = np.sin(angle), 1.0 - np.cos(angle)
    t00, t01, t02 = 1.0 - c * (wy * wy + wz * wz), -s * wz + c * wx * wy, s * wy + c * wx * wz
    t10, t11, t12 = s * wz + c * wx * wy, 1.0 - c * (wx * wx + wz * wz), -s * wx + c * wy * wz
    t20, t21, t22 = -s * wy + c * wx * wz, s * wx + c * wy * wz, 1.0 - c * (wx * wx + wy * wy)
    for col in range(3):
        a, b, d = r[col], r[3 + col], r[6 + col]
        out[3 + col] = t00 * a + t01 * b + t02 * d
        out[6 + col] = t10 * a + t11 * b + t12 * d
        out[9 + col] = t20 * a + t21 * b + t22 * d


@njit(cache=True)
def _pose(row, time, out):
    """out[0:3] = the centre (m), out[3:12] = the rotation (row-major) of a collider
    table row at simulated time ``time`` (s)."""
    elapsed = time - row[POSE_TIME]
    for k in range(3):
        out[k] = row[CENTER + k] + row[VELOCITY + k] * elapsed
    wx, wy, wz = row[SPIN], row[SPIN + 1], row[SPIN + 2]
    rate = np.sqrt(wx * wx + wy * wy + wz * wz)
    angle = rate * elapsed
    if angle == 0.0:
        for k in range(9):
            out[3 + k] = row[ROTATION + k]
        return
    _turn(wx / rate, wy / rate, wz / rate, angle, row[ROTATION:ROTATION + 9], out)


@njit(cache=True)
def _undo_jump(jump, fraction, pose, turned):
    """The pose a collider stood at with ``fraction`` (0..1) of a jump (a move from Python
    between steps) still to go: ``pose`` (centre, rotation) moved back by that share of the
    jump's shift jump[2:5] (m) and turned back by that share of its rotation vector
    jump[5:8] (rad); ``turned`` (12,) scratch."""
    for k in range(3):
        pose[k] -= fraction * jump[2 + k]
    wx, wy, wz = jump[5], jump[6], jump[7]
    angle = np.sqrt(wx * wx + wy * wy + wz * wz)
    if angle == 0.0:
        return
    _turn(-wx / angle, -wy / angle, -wz / angle, fraction * angle, pose[3:12], turned)
    for k in range(3, 12):
        pose[k] = turned[k]


@njit(cache=True, inline="always")
def _to_local(pose, x, y, z):
    """World point -> the collider's frame: R^T (p - c)."""
    dx, dy, dz = x - pose[0], y - pose[1], z - pose[2]
    return (pose[3] * dx + pose[6] * dy + pose[9] * dz,
            pose[4] * dx + pose[7] * dy + pose[10] * dz,
            pose[5] * dx + pose[8] * dy + pose[11] * dz)


@njit(cache=True, inline="always")
def _rotate(pose, x, y, z):
    """R v for a vector v in the collider's frame."""
    return (pose[3] * x + pose[4] * y + pose[5] * z,
            pose[6] * x + pose[7] * y + pose[8] * z,
            pose[9] * x + pose[10] * y + pose[11] * z)


@njit(cache=True)
def _box(p0, p1, e, out):
    """Box of half extents e: out = (placed point, outward normal) in the box frame;
    returns whether the particle touched."""
    inside0 = abs(p0[0]) < e[0] and abs(p0[1]) < e[1] and abs(p0[2]) < e[2]
    if not inside0:
        enter, leave, axis, sign = 0.0, 1.0, -1, 0.0
        for k in range(3):
            d = p1[k] - p0[k]
            if d == 0.0:
                if abs(p0[k]) >= e[k]:
                    leave = -1.0
                continue
            s0 = (-e[k] - p0[k]) / d
            s1 = (e[k] - p0[k]) / d
            face = -1.0
            if s0 > s1:
                s0, s1, face = s1, s0, 1.0
            if s0 >= enter:
                enter, axis, sign = s0, k, face
            leave = min(leave, s1)
        if axis >= 0 and enter <= leave and enter <= 1.0:
            for k in range(3):  # on the entry face, keeping the motion along it
                out[k] = p1[k]
                out[3 + k] = 0.0
            out[axis] = sign * e[axis]
            out[3 + axis] = sign
            return True
    if abs(p1[0]) < e[0] and abs(p1[1]) < e[1] and abs(p1[2]) < e[2]:
        axis, depth = 0, e[0] - abs(p1[0])
        for k in range(1, 3):
            if e[k] - abs(p1[k]) < depth:
                axis, depth = k, e[k] - abs(p1[k])
        sign = 1.0 if p1[axis] >= 0.0 else -1.0
        for k in range(3):
            out[k] = p1[k]
            out[3 + k] = 0.0
        out[axis] = sign * e[axis]
        out[3 + axis] = sign
        return True
    return False


@njit(cache=True, inline="always")
def _axis_point(px, half):
    """The point of the capsule axis (-half..half along x) closest to a point at x = px."""
    return min(max(px, -half), half)


#: A step shorter than this times a capsule's (or ball's) radius is not swept: it ends
#: inside only if it went in (a chord that short cuts at most 3 % of the radius deep), and
#: the way out nearest to where it ended is as good as the entry point.
SHORT_STEP = 0.5


@njit(cache=True)
def _capsule(p0, p1, half, radius, friction, out):
    """Capsule along x from -half to half: out = (placed point, outward normal) in its
    frame; returns whether the particle touched. A segment that crosses the surface stops
    at the entry point and goes on in the tangent plane there by the rest of its motion
    along that plane, less Coulomb ``friction`` times the rest of its motion into it
    (the normal is the entry point's): a convex surface's tangent plane lies outside it."""
    for k in range(3):  # both ends beyond the same side of the bounding box: no contact
        bound = radius + half if k == 0 else radius
        if (p0[k] >= bound and p1[k] >= bound) or (p0[k] <= -bound and p1[k] <= -bound):
            return False
    a0 = _axis_point(p0[0], half)
    outside0 = (p0[0] - a0) ** 2 + p0[1] ** 2 + p0[2] ** 2 >= radius * radius
    dx, dy, dz = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    hx, hy, hz = p1[0], p1[1], p1[2]
    if outside0 and length > SHORT_STEP * radius:
        ux, uy, uz = dx / length, dy / length, dz / length
        best = 2.0 * length + 1.0
        a = uy * uy + uz * uz  # the cylinder y^2 + z^2 = r^2
        if a > 1e-300:
            b = p0[1] * uy + p0[2] * uz
            c = p0[1] ** 2 + p0[2] ** 2 - radius * radius
            disc = b * b - a * c
            if disc >= 0.0:
                s = (-b - np.sqrt(disc)) / a
                if 0.0 <= s <= length and abs(p0[0] + s * ux) <= half:
                    best = s
        for end in (-half, half):  # the round ends
            ox = p0[0] - end
            b = ox * ux + p0[1] * uy + p0[2] * uz
            c = ox * ox + p0[1] ** 2 + p0[2] ** 2 - radius * radius
            disc = b * b - c
            if disc >= 0.0:
                s = -b - np.sqrt(disc)
                if 0.0 <= s <= length and s < best:
                    best = s
        if best <= length:
            hx, hy, hz = p0[0] + best * ux, p0[1] + best * uy, p0[2] + best * uz
            ax = _axis_point(hx, half)
            nx, ny, nz = (hx - ax) / radius, hy / radius, hz / radius
            rest = (p1[0] - hx) * nx + (p1[1] - hy) * ny + (p1[2] - hz) * nz
            tx = p1[0] - hx - rest * nx
            ty = p1[1] - hy - rest * ny
            tz = p1[2] - hz - rest * nz
            slide = np.sqrt(tx * tx + ty * ty + tz * tz)
            keep = 0.0
            if slide > 0.0:
                keep = max(0.0, 1.0 - friction * max(-rest, 0.0) / slide)
            out[0], out[1], out[2] = hx + keep * tx, hy + keep * ty, hz + keep * tz
            out[3], out[4], out[5] = nx, ny, nz
            return True
    ax = _axis_point(hx, half)
    rx, ry, rz = hx - ax, hy, hz
    dist = np.sqrt(rx * rx + ry * ry + rz * rz)
    if dist >= radius:
        return False
    if dist < 1e-12:  # on the axis: out sideways
        rx, ry, rz, dist = 0.0, 1.0, 0.0, 1.0
    out[3], out[4], out[5] = rx / dist, ry / dist, rz / dist
    out[0] = ax + out[3] * radius
    out[1] = out[4] * radius
    out[2] = out[5] * radius
    return True


@njit(cache=True)
def _outside(p, boxes, links, triangles, stack):
    """Whether p is outside a closed mesh: the sign of p - q along the pseudo-normal of
    the feature of the closest point q."""
    d2, qx, qy, qz, tri, f = closest_point(p[0], p[1], p[2], np.inf, boxes, links, triangles,
                                           stack)
    n = triangles[tri]
    return (p[0] - qx) * n[f] + (p[1] - qy) * n[f + 1] + (p[2] - qz) * n[f + 2] >= 0.0


@njit(cache=True, inline="always")
def _distance_bounds(p, grid, distances, closed):
    """(lower, upper) bounds (m) on p's distance to the mesh (signed for a closed mesh),
    from the distance at the nearest node of the mesh's grid and the way to that node
    (a distance is 1-Lipschitz)."""
    lo, cell = grid[0:3], grid[3]
    index = 0
    gap = 0.0
    for k in range(3):
        n = int(grid[4 + k])
        i = min(max(int(np.floor((p[k] - lo[k]) / cell + 0.5)), 0), n - 1)
        index = index * n + i
        gap += (p[k] - lo[k] - cell * i) ** 2
    d = distances[index]
    if not closed:
        d = abs(d)
    gap = np.sqrt(gap)
    return d - gap, abs(d) + gap


@njit(cache=True)
def _mesh(p0, p1, h, closed, boxes, links, triangles, grid, distances, stack, out):
    """Mesh (BVH arrays and distance grid in its frame), kept h (m) off: out = (placed
    point, outward normal) in its frame; returns whether the particle touched. A closed
    mesh's triangles are wound outward (shapes.Mesh orients them)."""
    root = boxes[0]
    for k in range(3):  # both ends beyond the same side of the padded bounds: no contact
        if (p0[k] < root[k] - h and p1[k] < root[k] - h) or (
                p0[k] > root[k + 3] + h and p1[k] > root[k + 3] + h):
            return False
    dx, dy, dz = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    lower, upper = _distance_bounds(p1, grid, distances, closed)
    if lower > h + np.sqrt(dx * dx + dy * dy + dz * dz):
        return False  # the whole segment stays more than h outside
    s, tri = first_crossing(p0[0], p0[1], p0[2], dx, dy, dz, boxes, links, triangles, stack)
    if tri >= 0 and (not closed or _outside(p0, boxes, links, triangles, stack)):
        t = triangles[tri]
        nx, ny, nz = t[FACE], t[FACE + 1], t[FACE + 2]
        qx, qy, qz = p0[0] + s * dx, p0[1] + s * dy, p0[2] + s * dz
        side = (p0[0] - qx) * nx + (p0[1] - qy) * ny + (p0[2] - qz) * nz
        if side == 0.0:
            side = -(dx * nx + dy * ny + dz * nz)
        sign = 1.0 if side > 0.0 else -1.0
        nx, ny, nz = sign * nx, sign * ny, sign * nz
        # h off the crossing, keeping the rest of the motion along the triangle's plane
        rest = (p1[0] - qx) * nx + (p1[1] - qy) * ny + (p1[2] - qz) * nz
        out[3], out[4], out[5] = nx, ny, nz
        out[0] = p1[0] + (h - rest) * nx
        out[1] = p1[1] + (h - rest) * ny
        out[2] = p1[2] + (h - rest) * nz
        return True
    # a closed mesh: the closest point (p1 may be deep inside), no farther than the
    # grid's upper bound; an open one: within h
    limit = (upper * (1.0 + 1e-9) + 1e-12) ** 2 if closed else h * h
    d2, qx, qy, qz, tri, f = closest_point(p1[0], p1[1], p1[2], limit, boxes, links,
                                           triangles, stack)
    if tri < 0:
        return False
    t = triangles[tri]
    rx, ry, rz = p1[0] - qx, p1[1] - qy, p1[2] - qz
    dist = np.sqrt(d2)
    if closed:
        inside = rx * t[f] + ry * t[f + 1] + rz * t[f + 2] < 0.0
        if not inside and d2 >= h * h:
            return False
        if dist > 1e-12:
            sign = -1.0 if inside else 1.0
            nx, ny, nz = sign * rx / dist, sign * ry / dist, sign * rz / dist
        else:
            nx, ny, nz = t[f], t[f + 1], t[f + 2]
    elif dist > 1e-12:
        nx, ny, nz = rx / dist, ry / dist, rz / dist
    else:  # on an open sheet: the side the particle came from
        nx, ny, nz = t[FACE], t[FACE + 1], t[FACE + 2]
        if (p0[0] - qx) * nx + (p0[1] - qy) * ny + (p0[2] - qz) * nz < 0.0:
            nx, ny, nz = -nx, -ny, -nz
    out[3], out[4], out[5] = nx, ny, nz
    out[0], out[1], out[2] = qx + nx * h, qy + ny * h, qz + nz * h
    return True


#: Columns of a jump row (ContactSet.jumps): pending (1/0), the time (s) the move was
#: made at, the shift (m) and the rotation vector (rad) of the move, and the time (s) it
#: is reached by (equal to the start: over the next step, whatever its dt).
JUMP_PENDING, JUMP_TIME, JUMP_SHIFT, JUMP_TURN, JUMP_END = 0, 1, 2, 5, 8
JUMP_COLUMNS = 9
#: A share of a jump below this (relative to one step's share) is rounding: none.
JUMP_ROUNDING = 1e-6


@njit(cache=True)
def jump_shares(jump, time, dt):
    """(before, after): the share (0..1) of a jump still to go at the start (``time``, s)
    and at the end of the step of ``dt`` (s). A jump over the next step goes at once in
    the step from the time it was made; one over a duration goes at a constant rate
    from its start to its end; none goes in a step before its start (a rewind)."""
    start, end = jump[JUMP_TIME], jump[JUMP_END]
    if jump[JUMP_PENDING] == 0.0 or time < start:
        return 0.0, 0.0
    if end <= start:
        return (1.0, 0.0) if time == start else (0.0, 0.0)
    duration = end - start
    tiny = JUMP_ROUNDING * dt / duration
    before = min((end - time) / duration, 1.0)
    if before <= tiny:
        return 0.0, 0.0
    after = (end - time - dt) / duration
    return before, (after if after > tiny else 0.0)


@njit(cache=True)
def _step_poses(colliders, jumps, time, dt, poses, motion, turned):
    """poses[c, 0] and poses[c, 1]: each collider's pose at the start and the end of the
    step; motion[c] = its velocity (m/s) and angular velocity (rad/s) over the step. A
    pending jump (a pose change between steps) counts as motion over the steps it is
    spread over (jump_shares): the start and end poses are those with the jump's share
    still to go undone, and this step's share of its shift and turn, over dt, is added."""
    for c in range(colliders.shape[0]):
        row = colliders[c]
        _pose(row, time, poses[c, 0])
        _pose(row, time + dt, poses[c, 1])
        for k in range(3):
            motion[c, k] = row[VELOCITY + k]
            motion[c, 3 + k] = row[SPIN + k]
        jump = jumps[c]
        before, after = jump_shares(jump, time, dt)
        if before > 0.0:
            _undo_jump(jump, before, poses[c, 0], turned)
            if after > 0.0:
                _undo_jump(jump, after, poses[c, 1], turned)
            share = before - after
            for k in range(3):
                motion[c, k] += share * jump[JUMP_SHIFT + k] / dt
                motion[c, 3 + k] += share * jump[JUMP_TURN + k] / dt


@njit(cache=True, inline="always")
def _surface_velocity(motion, rx, ry, rz):
    """The velocity (m/s) of a collider's surface at r (m) from its centre: v + w x r."""
    w0, w1, w2 = motion[3], motion[4], motion[5]
    return (motion[0] + w1 * rz - w2 * ry, motion[1] + w2 * rx - w0 * rz,
            motion[2] + w0 * ry - w1 * rx)


@njit(cache=True, inline="always")
def _box_depth(e, ax, ay, az, dx, dy, dz, s):
    """How deep (m) the point a + s d is inside a box of half extents e (< 0: outside)."""
    return min(e[0] - abs(ax + s * dx), e[1] - abs(ay + s * dy), e[2] - abs(az + s * dz))


@njit(cache=True)
def _segment_in_box(e, ax, ay, az, bx, by, bz):
    """(s, depth): the point a + s (b - a) of a segment deepest inside a box of half
    extents e, and its depth (m; <= 0: the segment misses the box)."""
    for k in range(3):  # both ends beyond the same face: no contact
        lo = ax if k == 0 else (ay if k == 1 else az)
        hi = bx if k == 0 else (by if k == 1 else bz)
        if (lo >= e[k] and hi >= e[k]) or (lo <= -e[k] and hi <= -e[k]):
            return 0.0, -1.0
    return _deepest_in_box(e, ax, ay, az, bx - ax, by - ay, bz - az)


@njit(cache=True)
def _deepest_in_box(e, ax, ay, az, dx, dy, dz):
    """(s, depth): the maximum over s in 0..1 of the depth (_box_depth) of a + s d in a box
    of half extents e. The depth along a segment is concave, so a golden-section search
    finds it; outside the box, -depth (the largest |p_k| - e_k) is a lower bound on the
    distance (m) to the box."""
    lo, hi = 0.0, 1.0
    ratio = 0.6180339887498949
    m1 = hi - ratio * (hi - lo)
    m2 = lo + ratio * (hi - lo)
    f1 = _box_depth(e, ax, ay, az, dx, dy, dz, m1)
    f2 = _box_depth(e, ax, ay, az, dx, dy, dz, m2)
    for _ in range(SEARCH_STEPS):
        if f1 < f2:
            lo, m1, f1 = m1, m2, f2
            m2 = lo + ratio * (hi - lo)
            f2 = _box_depth(e, ax, ay, az, dx, dy, dz, m2)
        else:
            hi, m2, f2 = m2, m1, f1
            m1 = hi - ratio * (hi - lo)
            f1 = _box_depth(e, ax, ay, az, dx, dy, dz, m1)
    s = 0.5 * (lo + hi)
    return s, _box_depth(e, ax, ay, az, dx, dy, dz, s)


#: Golden-section steps of the deepest point of a segment in a box (0.618^40 ~ 4e-9).
SEARCH_STEPS = 40


#: Bisection steps of how far a rope segment that a thin mesh pokes through must go.
PUSH_STEPS = 24


@njit(cache=True)
def _segment_clear(ax, ay, az, dx, dy, dz, push, nx, ny, nz, h, boxes, links, triangles,
                   stack):
    """Whether the segment a + s d moved ``push`` (m) along n keeps h (m) off the mesh."""
    d2, s, qx, qy, qz, tri, f = closest_to_segment(
        ax + push * nx, ay + push * ny, az + push * nz, dx, dy, dz, (h * (1.0 - 1e-6)) ** 2,
        boxes, links, triangles, stack)
    return tri < 0


@njit(cache=True)
def _segment_mesh(a, b, a0, b0, h, closed, boxes, links, triangles, grid, distances,
                  stack, probe):
    """(s, depth m, nx, ny, nz) in the mesh's frame: the point a + s (b - a) of a rope
    segment that comes closer than h (m) to the mesh (or crosses it), how far and which
    way it goes to keep h off (depth <= 0: it does not touch). A segment near the surface
    goes straight out from its closest point (inward, if that point is inside a closed
    mesh); one that a thin mesh pokes through (a ridge or pole narrower than the rope's
    spacing) goes the way it came from, its separation from the mesh before the step
    (``a0``, ``b0``: its ends then, in the mesh's frame before the step), as far as keeps
    it h off (a bisection)."""
    root = boxes[0]
    for k in range(3):  # both ends beyond the same side of the padded bounds: no contact
        if (a[k] < root[k] - h and b[k] < root[k] - h) or (
                a[k] > root[k + 3] + h and b[k] > root[k + 3] + h):
            return 0.0, -1.0, 0.0, 0.0, 0.0
    dx, dy, dz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    for k in range(3):
        probe[k] = 0.5 * (a[k] + b[k])
    lower, upper = _distance_bounds(probe, grid, distances, closed)
    if lower > h + 0.5 * np.sqrt(dx * dx + dy * dy + dz * dz):
        return 0.0, -1.0, 0.0, 0.0, 0.0  # the whole segment stays more than h outside
    d2, s, qx, qy, qz, tri, f = closest_to_segment(a[0], a[1], a[2], dx, dy, dz, h * h,
                                                   boxes, links, triangles, stack)
    if tri < 0:
        return 0.0, -1.0, 0.0, 0.0, 0.0
    if d2 > 0.0:
        dist = np.sqrt(d2)
        rx, ry, rz = a[0] + s * dx - qx, a[1] + s * dy - qy, a[2] + s * dz - qz
        t = triangles[tri]
        if closed and rx * t[f] + ry * t[f + 1] + rz * t[f + 2] < 0.0:  # inside
            return s, h + dist, -rx / dist, -ry / dist, -rz / dist
        return s, h - dist, rx / dist, ry / dist, rz / dist
    ex, ey, ez = b0[0] - a0[0], b0[1] - a0[1], b0[2] - a0[2]
    e2, u, px, py, pz, before, g = closest_to_segment(a0[0], a0[1], a0[2], ex, ey, ez, np.inf,
                                                      boxes, links, triangles, stack)
    if e2 > 0.0:  # away from the mesh, as it stood before the step
        gap = np.sqrt(e2)
        nx = (a0[0] + u * ex - px) / gap
        ny = (a0[1] + u * ey - py) / gap
        nz = (a0[2] + u * ez - pz) / gap
    else:  # it crossed before too: the side of the crossed triangle it came from
        t = triangles[tri]
        nx, ny, nz = t[FACE], t[FACE + 1], t[FACE + 2]
        if ((a0[0] + s * ex - qx) * nx + (a0[1] + s * ey - qy) * ny
                + (a0[2] + s * ez - qz) * nz) < 0.0:
            nx, ny, nz = -nx, -ny, -nz
    lo, hi = 0.0, h
    reach = 2.0 * h + np.sqrt((root[3] - root[0]) ** 2 + (root[4] - root[1]) ** 2
                              + (root[5] - root[2]) ** 2)
    while not _segment_clear(a[0], a[1], a[2], dx, dy, dz, hi, nx, ny, nz, h, boxes, links,
                             triangles, stack):
        if hi > reach:
            return 0.0, -1.0, 0.0, 0.0, 0.0
        lo, hi = hi, 2.0 * hi
    for _ in range(PUSH_STEPS):
        mid = 0.5 * (lo + hi)
        if _segment_clear(a[0], a[1], a[2], dx, dy, dz, mid, nx, ny, nz, h, boxes, links,
                          triangles, stack):
            hi = mid
        else:
            lo = mid
    return s, hi, nx, ny, nz


#: Conservative-advancement iterations of a swept rope segment (_first_touch), and how
#: near (in the collider's thinnest half extents, _thinnest) counts as touching.
ADVANCE_STEPS = 32
ADVANCE_TOLERANCE = 0.01


@njit(cache=True, inline="always")
def _thinnest(row):
    """A collider's thinnest half extent (m): a box's smallest half edge, a capsule's
    radius, a mesh's thickness / 2 (the table row's, SKIN included)."""
    kind = int(row[KIND])
    if kind == BOX:
        return min(row[P0], row[P0 + 1], row[P0 + 2])
    return row[P1] if kind == CAPSULE else row[P0]


@njit(cache=True)
def _segment_gap(row, px, py, pz, dx, dy, dz, limit, boxes, links, triangles, stack):
    """(gap m, s, nx, ny, nz, inside) in the collider's frame: a lower bound on how far the
    segment p + s d stays off the collider's surface (a mesh's: thickness / 2 off its
    triangles; < 0: it reaches in), its point a + s d nearest to it, the surface's outward
    normal there and, for a closed mesh, whether that point is inside. A mesh farther
    than ``limit`` (m) gives an infinite gap."""
    kind = int(row[KIND])
    nx = ny = nz = 0.0
    if kind == BOX:
        e = row[P0:P0 + 3]
        s, depth = _deepest_in_box(e, px, py, pz, dx, dy, dz)
        q0, q1, q2 = px + s * dx, py + s * dy, pz + s * dz
        o0, o1, o2 = abs(q0) - e[0], abs(q1) - e[1], abs(q2) - e[2]
        if o0 >= o1 and o0 >= o2:
            nx = 1.0 if q0 >= 0.0 else -1.0
        elif o1 >= o2:
            ny = 1.0 if q1 >= 0.0 else -1.0
        else:
            nz = 1.0 if q2 >= 0.0 else -1.0
        return -depth, s, nx, ny, nz, False
    if kind == CAPSULE:
        half, radius = row[P0], row[P1]
        s, t = segment_params(px, py, pz, dx, dy, dz, -half, 0.0, 0.0, 2.0 * half, 0.0, 0.0)
        rx, ry, rz = px + s * dx - half * (2.0 * t - 1.0), py + s * dy, pz + s * dz
        dist = np.sqrt(rx * rx + ry * ry + rz * rz)
        if dist < 1e-12:
            return -radius, s, 0.0, 1.0, 0.0, False
        return dist - radius, s, rx / dist, ry / dist, rz / dist, False
    h = row[P0]
    d2, s, qx, qy, qz, tri, f = closest_to_segment(px, py, pz, dx, dy, dz, limit * limit,
                                                   boxes, links, triangles, stack)
    if tri < 0:
        return np.inf, 0.0, 0.0, 0.0, 0.0, False
    rx, ry, rz = px + s * dx - qx, py + s * dy - qy, pz + s * dz - qz
    dist = np.sqrt(d2)
    if dist < 1e-12:
        return -h, s, 0.0, 0.0, 0.0, False
    t = triangles[tri]
    inside = row[CLOSED] != 0.0 and rx * t[f] + ry * t[f + 1] + rz * t[f + 2] < 0.0
    return dist - h, s, rx / dist, ry / dist, rz / dist, inside


@njit(cache=True)
def _first_touch(row, a0, b0, a1, b1, boxes, links, triangles, stack):
    """(touched, s, nx, ny, nz, plane) in the collider's frame: whether a rope segment
    whose ends move linearly from a0, b0 to a1, b1 over the step comes onto the
    collider's surface, its point a + s (b - a) that does first, the outward normal
    there and the tangent plane {p: p . n = plane} (m) it must not pass. Conservative
    advancement: no point of the segment moves faster than its faster end (``speed``, m
    a step), so the segment cannot touch before it has gone its gap (_segment_gap, a lower
    bound) further. A segment already in the collider at the start, or one that does not
    reach it over the step, is not touched (the test at the end of the step takes it)."""
    speed = np.sqrt(max((a1[0] - a0[0]) ** 2 + (a1[1] - a0[1]) ** 2 + (a1[2] - a0[2]) ** 2,
                        (b1[0] - b0[0]) ** 2 + (b1[1] - b0[1]) ** 2 + (b1[2] - b0[2]) ** 2))
    thin = _thinnest(row)
    tolerance = ADVANCE_TOLERANCE * thin
    t = 0.0
    gap = s = nx = ny = nz = 0.0
    for _ in range(ADVANCE_STEPS):
        px = a0[0] + t * (a1[0] - a0[0])
        py = a0[1] + t * (a1[1] - a0[1])
        pz = a0[2] + t * (a1[2] - a0[2])
        dx = b0[0] + t * (b1[0] - b0[0]) - px
        dy = b0[1] + t * (b1[1] - b0[1]) - py
        dz = b0[2] + t * (b1[2] - b0[2]) - pz
        reach = speed * (1.0 - t) + thin + tolerance
        gap, s, nx, ny, nz, inside = _segment_gap(row, px, py, pz, dx, dy, dz, reach, boxes,
                                                  links, triangles, stack)
        if t == 0.0 and (gap < -tolerance or inside):
            return False, 0.0, 0.0, 0.0, 0.0, 0.0
        if gap <= tolerance:
            break
        t += gap / speed
        if t > 1.0:
            return False, 0.0, 0.0, 0.0, 0.0, 0.0
    plane = (px + s * dx) * nx + (py + s * dy) * ny + (pz + s * dz) * nz - gap
    return True, s, nx, ny, nz, plane


@njit(cache=True)
def _push_corners(x, v, i, j, k, wi, wj, wk, ci, cj, ck, depth, nx, ny, nz, pose, motion,
                  friction, planar):
    """Move the point ci x_i + cj x_j + ck x_k (weights summing to 1: a point of a rope
    segment, with k = j and ck = 0, or of a cloth triangle) out by depth (m) along the
    normal n (the collider's frame at ``pose``), the correction shared by the particles
    by their inverse masses wi, wj, wk (1/kg) and weights on that point; remove the
    point's inward velocity relative to the surface (``motion``: the collider's velocity
    and spin) and apply Coulomb ``friction`` to its tangential part, shared the same
    way. Returns whether it moved (False: all weights are 0)."""
    nx, ny, nz = _rotate(pose, nx, ny, nz)
    if planar:
        nz = 0.0
    # move the point out by depth: particle i by ci wi lam n, j by cj wj lam n, k by
    # ck wk lam n, with lam = depth / (ci^2 wi + cj^2 wj + ck^2 wk)
    ui, uj, uk = ci * wi, cj * wj, ck * wk
    weight = ci * ui + cj * uj + ck * uk
    if weight <= 0.0:
        return False
    lam = depth / weight
    for d, n in ((0, nx), (1, ny), (2, nz)):
        x[i, d] += ui * lam * n
        x[j, d] += uj * lam * n
        x[k, d] += uk * lam * n
    px = ci * x[i, 0] + cj * x[j, 0] + ck * x[k, 0]
    py = ci * x[i, 1] + cj * x[j, 1] + ck * x[k, 1]
    pz = ci * x[i, 2] + cj * x[j, 2] + ck * x[k, 2]
    sx, sy, sz = _surface_velocity(motion, px - pose[0], py - pose[1], pz - pose[2])
    rvx = ci * v[i, 0] + cj * v[j, 0] + ck * v[k, 0] - sx
    rvy = ci * v[i, 1] + cj * v[j, 1] + ck * v[k, 1] - sy
    rvz = ci * v[i, 2] + cj * v[j, 2] + ck * v[k, 2] - sz
    vn = rvx * nx + rvy * ny + rvz * nz
    if vn >= 0.0:
        return True
    tx, ty, tz = rvx - vn * nx, rvy - vn * ny, rvz - vn * nz
    tangential = np.sqrt(tx * tx + ty * ty + tz * tz)
    keep = 1.0
    if tangential > 0.0:
        keep = max(0.0, 1.0 - friction * (-vn) / tangential)
    # the point's velocity change, shared like the position correction
    gx = (-vn * nx - (1.0 - keep) * tx) / weight
    gy = (-vn * ny - (1.0 - keep) * ty) / weight
    gz = (-vn * nz - (1.0 - keep) * tz) / weight
    for d, g in ((0, gx), (1, gy), (2, gz)):
        if d < 2 or not planar:
            v[i, d] += ui * g
            v[j, d] += uj * g
            v[k, d] += uk * g
    return True


@njit(cache=True)
def _segment_contacts(x, x_prev, v, inv_mass, segments, ranges, colliders, meshes, boxes,
                      links, triangles, grids, distances, poses, motion, bounds,
                      broad_phase, stack, scratch, planar):
    """Segments (particle pairs: a rope's, a cloth's edges) against boxes, capsules and
    meshes. A segment whose ends move (relative to the collider) more than SHORT_STEP
    times its thinnest half extent is swept first (_first_touch): one that comes onto it
    during the step is put back on the tangent plane where it touched, on the side it
    came from. Then, at the
    colliders' poses after the step, a segment that a collider pokes through between its
    two particles (a thin rod, a box edge or a mesh ridge narrower than the spacing) is
    pushed out at its deepest point (a mesh: _segment_mesh). Each push is shared by the
    two particles (_push_corners). With ``broad_phase``, a collider is tested only against
    the segments whose motion's box comes near it (_segment_near). ``scratch`` (15,)
    holds the segment's ends in the collider's frame; collider c meets the segments
    ranges[c, 0] .. ranges[c, 1] - 1. Returns how many pushes were made."""
    touching = 0
    a, b, a0, b0, probe = (scratch[0:3], scratch[3:6], scratch[6:9], scratch[9:12],
                           scratch[12:15])
    for c in range(colliders.shape[0]):
        row = colliders[c]
        kind = int(row[KIND])
        pose = poses[c, 1]
        before = poses[c, 0]
        short = SHORT_STEP * _thinnest(row)
        if kind == MESH:
            m = int(row[MESH_INDEX])
            n0, nn, t0, tn = meshes[m, 0], meshes[m, 1], meshes[m, 2], meshes[m, 3]
            g0 = meshes[m, 4]
            g1 = g0 + int(grids[m, 4] * grids[m, 5] * grids[m, 6])
        else:
            m = n0 = nn = t0 = tn = g0 = g1 = 0
        bvh_boxes, bvh_links, bvh_triangles = boxes[n0:n0 + nn], links[n0:n0 + nn], triangles[
            t0:t0 + tn]
        for k in range(ranges[c, 0], ranges[c, 1]):
            i, j = segments[k, 0], segments[k, 1]
            wi, wj = inv_mass[i], inv_mass[j]
            if wi == 0.0 and wj == 0.0:
                continue
            if broad_phase and not _segment_near(x, x_prev, i, j, bounds, c):
                continue
            a[0], a[1], a[2] = _to_local(pose, x[i, 0], x[i, 1], x[i, 2])
            b[0], b[1], b[2] = _to_local(pose, x[j, 0], x[j, 1], x[j, 2])
            a0[0], a0[1], a0[2] = _to_local(before, x_prev[i, 0], x_prev[i, 1], x_prev[i, 2])
            b0[0], b0[1], b0[2] = _to_local(before, x_prev[j, 0], x_prev[j, 1], x_prev[j, 2])
            if max((a[0] - a0[0]) ** 2 + (a[1] - a0[1]) ** 2 + (a[2] - a0[2]) ** 2,
                   (b[0] - b0[0]) ** 2 + (b[1] - b0[1]) ** 2 + (b[2] - b0[2]) ** 2) > short ** 2:
                hit, s, nx, ny, nz, plane = _first_touch(row, a0, b0, a, b, bvh_boxes,
                                                         bvh_links, bvh_triangles, stack)
                if hit:
                    depth = plane - ((a[0] + s * (b[0] - a[0])) * nx
                                     + (a[1] + s * (b[1] - a[1])) * ny
                                     + (a[2] + s * (b[2] - a[2])) * nz)
                    if depth > 0.0 and _push_corners(x, v, i, j, j, wi, wj, wj, 1.0 - s, s,
                                                     0.0, depth, nx, ny, nz, pose, motion[c],
                                                     row[FRICTION], planar):
                        touching += 1
                        a[0], a[1], a[2] = _to_local(pose, x[i, 0], x[i, 1], x[i, 2])
                        b[0], b[1], b[2] = _to_local(pose, x[j, 0], x[j, 1], x[j, 2])
            ax, ay, az, bx, by, bz = a[0], a[1], a[2], b[0], b[1], b[2]
            if kind == MESH:
                s, depth, nx, ny, nz = _segment_mesh(
                    a, b, a0, b0, row[P0], row[CLOSED] != 0.0, bvh_boxes, bvh_links,
                    bvh_triangles, grids[m], distances[g0:g1], stack, probe)
                if depth <= 0.0:
                    continue
            else:
                s, depth, nx, ny, nz = _segment_depth(row, ax, ay, az, bx, by, bz)
                if depth <= 0.0:
                    continue
            if _push_corners(x, v, i, j, j, wi, wj, wj, 1.0 - s, s, 0.0, depth, nx, ny, nz,
                             pose, motion[c], row[FRICTION], planar):
                touching += 1
    return touching


@njit(cache=True, inline="always")
def _plane(ax, ay, az, bx, by, bz, cx, cy, cz):
    """(unit normal, ok) of the triangle a, b, c; ok is False for a degenerate one."""
    nx = (by - ay) * (cz - az) - (bz - az) * (cy - ay)
    ny = (bz - az) * (cx - ax) - (bx - ax) * (cz - az)
    nz = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    length = np.sqrt(nx * nx + ny * ny + nz * nz)
    if length == 0.0:
        return 0.0, 0.0, 0.0, False
    return nx / length, ny / length, nz / length, True


@njit(cache=True, inline="always")
def _barycentric(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """(wa, wb, wc): the barycentric weights of p (in the triangle's plane)."""
    ux, uy, uz = bx - ax, by - ay, bz - az
    wx, wy, wz = cx - ax, cy - ay, cz - az
    qx, qy, qz = px - ax, py - ay, pz - az
    uu, uw, ww = ux * ux + uy * uy + uz * uz, ux * wx + uy * wy + uz * wz, wx * wx + wy * wy + wz * wz
    qu, qw = qx * ux + qy * uy + qz * uz, qx * wx + qy * wy + qz * wz
    det = uu * ww - uw * uw
    if det <= 0.0:
        return -1.0, -1.0, -1.0
    wb = (ww * qu - uw * qw) / det
    wc = (uu * qw - uw * qu) / det
    return 1.0 - wb - wc, wb, wc


@njit(cache=True)
def _tip_contacts(x, x_prev, v, inv_mass, sheet_triangles, tips, tip_ranges, colliders,
                  poses, motion):
    """The tips of closed meshes (Mesh.tips: points in the collider's frame; collider c's
    are rows tip_ranges[c, 0] .. tip_ranges[c, 1] - 1) against a cloth's triangles
    (``sheet_triangles`` (t, 3) particle indices): a tip keeps the collider's contact
    distance row[P0] (m) off a triangle over whose inside it stands, on the side of the
    triangle it was on at the start of the step, so a tip that went through a triangle
    during the step (by no more than the triangle's motion and the contact distance; its
    foot inside the triangle before or after) is put back on the side it came from: the
    triangle is pushed out along its normal at the tip's foot. A tip beside a triangle
    (under the ridge of a fold) keeps that distance off its edges instead, the nearest
    point pushed away from the tip (_edge_push). Each push is shared by the triangle's
    particles (_push_corners). In the collider's frame before (x_prev, poses[c, 0]) and
    after the step (x, poses[c, 1]); a triangle whose box over the step misses the tips'
    is skipped. Returns how many pushes were made."""
    touching = 0
    for c in range(colliders.shape[0]):
        first, last = tip_ranges[c, 0], tip_ranges[c, 1]
        if first == last:
            continue
        row = colliders[c]
        before, after = poses[c, 0], poses[c, 1]
        gap = row[P0]
        # the box (m) of the tips over the step, grown by the gap
        lx = ly = lz = np.inf
        hx = hy = hz = -np.inf
        for m in range(first, last):
            for pose in (before, after):
                wx, wy, wz = _rotate(pose, tips[m, 0], tips[m, 1], tips[m, 2])
                wx, wy, wz = wx + pose[0], wy + pose[1], wz + pose[2]
                lx, ly, lz = min(lx, wx - gap), min(ly, wy - gap), min(lz, wz - gap)
                hx, hy, hz = max(hx, wx + gap), max(hy, wy + gap), max(hz, wz + gap)
        for f in range(sheet_triangles.shape[0]):
            i, j, k = sheet_triangles[f, 0], sheet_triangles[f, 1], sheet_triangles[f, 2]
            if (min(x[i, 0], x[j, 0], x[k, 0], x_prev[i, 0], x_prev[j, 0], x_prev[k, 0]) > hx
                    or max(x[i, 0], x[j, 0], x[k, 0], x_prev[i, 0], x_prev[j, 0],
                           x_prev[k, 0]) < lx
                    or min(x[i, 1], x[j, 1], x[k, 1], x_prev[i, 1], x_prev[j, 1],
                           x_prev[k, 1]) > hy
                    or max(x[i, 1], x[j, 1], x[k, 1], x_prev[i, 1], x_prev[j, 1],
                           x_prev[k, 1]) < ly
                    or min(x[i, 2], x[j, 2], x[k, 2], x_prev[i, 2], x_prev[j, 2],
                           x_prev[k, 2]) > hz
                    or max(x[i, 2], x[j, 2], x[k, 2], x_prev[i, 2], x_prev[j, 2],
                           x_prev[k, 2]) < lz):
                continue
            a0x, a0y, a0z = _to_local(before, x_prev[i, 0], x_prev[i, 1], x_prev[i, 2])
            b0x, b0y, b0z = _to_local(before, x_prev[j, 0], x_prev[j, 1], x_prev[j, 2])
            c0x, c0y, c0z = _to_local(before, x_prev[k, 0], x_prev[k, 1], x_prev[k, 2])
            n0x, n0y, n0z, ok0 = _plane(a0x, a0y, a0z, b0x, b0y, b0z, c0x, c0y, c0z)
            # the triangle after the step, in the collider's frame: worked out again only
            # after a tip pushed it
            (ax, ay, az, bx, by, bz, cx, cy, cz, nx, ny, nz, ok1, moved) = _posed_triangle(
                after, x, i, j, k, a0x, a0y, a0z, b0x, b0y, b0z, c0x, c0y, c0z)
            for m in range(first, last):
                tx, ty, tz = tips[m, 0], tips[m, 1], tips[m, 2]
                if not ok1:
                    continue
                s1 = nx * (tx - ax) + ny * (ty - ay) + nz * (tz - az)
                s0 = (n0x * (tx - a0x) + n0y * (ty - a0y) + n0z * (tz - a0z)) if ok0 else s1
                side = 1.0 if s0 > 0.0 or (s0 == 0.0 and s1 >= 0.0) else -1.0
                beyond = side * s1  # the tip's distance on its side (< 0: gone through)
                if beyond >= gap or -beyond > moved + gap:
                    continue
                wa, wb, wc = _barycentric(tx - s1 * nx, ty - s1 * ny, tz - s1 * nz, ax, ay, az,
                                          bx, by, bz, cx, cy, cz)
                over = min(wa, wb, wc) >= -EDGE_SLACK
                if not over and beyond < 0.0 and ok0:  # gone through: where it stood before
                    va, vb, vc = _barycentric(tx - s0 * n0x, ty - s0 * n0y, tz - s0 * n0z, a0x,
                                              a0y, a0z, b0x, b0y, b0z, c0x, c0y, c0z)
                    if min(va, vb, vc) >= -EDGE_SLACK:  # over the inside: push there
                        over = True
                        wa, wb, wc = max(wa, 0.0), max(wb, 0.0), max(wc, 0.0)
                        total = wa + wb + wc
                        wa, wb, wc = wa / total, wb / total, wc / total
                if over:  # out along the normal
                    depth, ux, uy, uz = gap - beyond, -side * nx, -side * ny, -side * nz
                else:  # beside it: away from the tip, from the nearest point of its edges
                    depth, ux, uy, uz, wa, wb, wc = _edge_push(tx, ty, tz, ax, ay, az, bx, by,
                                                               bz, cx, cy, cz, gap)
                    if depth <= 0.0:
                        continue
                if _push_corners(x, v, i, j, k, inv_mass[i], inv_mass[j], inv_mass[k], wa, wb,
                                 wc, depth, ux, uy, uz, after, motion[c], row[FRICTION], False):
                    touching += 1
                    (ax, ay, az, bx, by, bz, cx, cy, cz, nx, ny, nz, ok1,
                     moved) = _posed_triangle(after, x, i, j, k, a0x, a0y, a0z, b0x, b0y,
                                              b0z, c0x, c0y, c0z)
    return touching


@njit(cache=True, inline="always")
def _posed_triangle(pose, x, i, j, k, a0x, a0y, a0z, b0x, b0y, b0z, c0x, c0y, c0z):
    """The triangle of particles i, j, k of x in the frame at ``pose`` (its corners a, b,
    c, m), its unit normal and whether it has one (_plane), and how far (m) its farthest
    corner moved from a0, b0, c0 (its corners before the step, in the frame before)."""
    ax, ay, az = _to_local(pose, x[i, 0], x[i, 1], x[i, 2])
    bx, by, bz = _to_local(pose, x[j, 0], x[j, 1], x[j, 2])
    cx, cy, cz = _to_local(pose, x[k, 0], x[k, 1], x[k, 2])
    nx, ny, nz, ok = _plane(ax, ay, az, bx, by, bz, cx, cy, cz)
    moved = np.sqrt(max((ax - a0x) ** 2 + (ay - a0y) ** 2 + (az - a0z) ** 2,
                        (bx - b0x) ** 2 + (by - b0y) ** 2 + (bz - b0z) ** 2,
                        (cx - c0x) ** 2 + (cy - c0y) ** 2 + (cz - c0z) ** 2))
    return ax, ay, az, bx, by, bz, cx, cy, cz, nx, ny, nz, ok, moved


@njit(cache=True)
def _edge_push(tx, ty, tz, ax, ay, az, bx, by, bz, cx, cy, cz, gap):
    """(depth m, direction, weights wa, wb, wc) that move the point of the triangle nearest
    to the tip t (on an edge, the tip's foot being beside the triangle) out to ``gap``
    (m) from it, away from it (depth 0: it is that far already)."""
    wa, wb, wc = closest_weights(tx, ty, tz, ax, ay, az, bx, by, bz, cx, cy, cz)
    px = wa * ax + wb * bx + wc * cx
    py = wa * ay + wb * by + wc * cy
    pz = wa * az + wb * bz + wc * cz
    dist = np.sqrt((px - tx) ** 2 + (py - ty) ** 2 + (pz - tz) ** 2)
    if dist >= gap or dist == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    return (gap - dist, (px - tx) / dist, (py - ty) / dist, (pz - tz) / dist, wa, wb, wc)


@njit(cache=True)
def _segment_depth(row, ax, ay, az, bx, by, bz):
    """(s, depth m, nx, ny, nz) in a box's or a capsule's frame: the point a + s (b - a)
    of a segment deepest inside it, how deep, and the way out (depth <= 0: the segment
    misses it)."""
    if int(row[KIND]) == BOX:
        s, depth = _segment_in_box(row[P0:P0 + 3], ax, ay, az, bx, by, bz)
        if depth <= 0.0:
            return s, depth, 0.0, 0.0, 0.0
        qx, qy, qz = ax + s * (bx - ax), ay + s * (by - ay), az + s * (bz - az)
        nx, ny, nz = 0.0, 0.0, 0.0
        if row[P0] - abs(qx) == depth:
            nx = 1.0 if qx >= 0.0 else -1.0
        elif row[P1] - abs(qy) == depth:
            ny = 1.0 if qy >= 0.0 else -1.0
        else:
            nz = 1.0 if qz >= 0.0 else -1.0
        return s, depth, nx, ny, nz
    half, radius = row[P0], row[P1]
    s, t = segment_params(ax, ay, az, bx - ax, by - ay, bz - az, -half, 0.0, 0.0,
                          2.0 * half, 0.0, 0.0)
    t = half * (2.0 * t - 1.0)
    qx, qy, qz = ax + s * (bx - ax), ay + s * (by - ay), az + s * (bz - az)
    rx, ry, rz = qx - t, qy, qz
    dist = np.sqrt(rx * rx + ry * ry + rz * rz)
    depth = radius - dist
    if depth <= 0.0:
        return s, depth, 0.0, 0.0, 0.0
    if dist < 1e-12:  # through the axis: out sideways
        rx, ry, rz, dist = 0.0, 1.0, 0.0, 1.0
    return s, depth, rx / dist, ry / dist, rz / dist


@njit(cache=True)
def threaded_segments(x, segments, row, time, pose, boxes, links, triangles, stack):
    """Which segments (s, 2) of particles at x (m) a collider table row, at its pose at
    ``time`` (s), already passes through (a mesh: comes within its thickness / 2 of;
    ``boxes``, ``links``, ``triangles`` its BVH, ``stack`` scratch): a cloth threaded
    onto a rod, a blade or a sheet hangs from it (those edges are not pushed off it).
    ``pose`` (12,) scratch."""
    _pose(row, time, pose)
    out = np.zeros(segments.shape[0], dtype=np.bool_)
    mesh = int(row[KIND]) == MESH
    for k in range(segments.shape[0]):
        i, j = segments[k, 0], segments[k, 1]
        ax, ay, az = _to_local(pose, x[i, 0], x[i, 1], x[i, 2])
        bx, by, bz = _to_local(pose, x[j, 0], x[j, 1], x[j, 2])
        if mesh:
            h = row[P0]
            d2 = closest_to_segment(ax, ay, az, bx - ax, by - ay, bz - az, h * h, boxes,
                                    links, triangles, stack)[0]
            out[k] = d2 < h * h
        else:
            out[k] = _segment_depth(row, ax, ay, az, bx, by, bz)[1] > 0.0
    return out


#: Particles per block of the broad phase: a collider is tested against a block's
#: particles only if it comes near the block's bounding box over the step.
BLOCK = 32
#: How much (m) the broad phase grows a collider's bounding box: far more than rounding.
BROAD_MARGIN = 1e-4


@njit(cache=True)
def _collider_bounds(colliders, meshes, boxes, poses, bounds):
    """bounds[c] = [lo xyz, hi xyz] (m): the world bounding box of collider c's surface
    (and what lies within a mesh's h of it) at its pose before the step, grown by
    BROAD_MARGIN; [6:9] its centre's shift over the step (m); [9] the angle (rad) it
    turns by over the step; [10:13] its centre after the step (m)."""
    for c in range(colliders.shape[0]):
        row = colliders[c]
        pose = poses[c, 0]
        kind = int(row[KIND])
        mx = my = mz = 0.0  # the surface's box in the collider's frame: centre m, half e
        if kind == BOX:
            ex, ey, ez = row[P0], row[P0 + 1], row[P0 + 2]
        elif kind == CAPSULE:
            ex, ey, ez = row[P0] + row[P1], row[P1], row[P1]
        else:
            root = boxes[meshes[int(row[MESH_INDEX]), 0]]
            h = row[P0]
            mx, my, mz = 0.5 * (root[0] + root[3]), 0.5 * (root[1] + root[4]), 0.5 * (
                root[2] + root[5])
            ex, ey, ez = 0.5 * (root[3] - root[0]) + h, 0.5 * (root[4] - root[1]) + h, 0.5 * (
                root[5] - root[2]) + h
        cx, cy, cz = _rotate(pose, mx, my, mz)
        for k in range(3):
            r0, r1, r2 = pose[3 + 3 * k], pose[4 + 3 * k], pose[5 + 3 * k]
            half = abs(r0) * ex + abs(r1) * ey + abs(r2) * ez + BROAD_MARGIN
            centre = pose[k] + (cx if k == 0 else (cy if k == 1 else cz))
            bounds[c, k] = centre - half
            bounds[c, 3 + k] = centre + half
            bounds[c, 6 + k] = poses[c, 1, k] - pose[k]
            bounds[c, 10 + k] = poses[c, 1, k]
        trace = 0.0  # of R_before R_after^T: 1 + 2 cos(angle)
        for k in range(3, 12):
            trace += pose[k] * poses[c, 1, k]
        bounds[c, 9] = np.arccos(min(max(0.5 * (trace - 1.0), -1.0), 1.0))


@njit(cache=True)
def _block_near(x, x_prev, start, stop, bounds, near):
    """near[c] = whether collider c may touch a particle start..stop-1 that no other
    obstacle moved (_box_near of the block's box of x_prev and x)."""
    lx = ly = lz = np.inf
    hx = hy = hz = -np.inf
    for i in range(start, stop):
        lx = min(lx, x[i, 0], x_prev[i, 0])
        ly = min(ly, x[i, 1], x_prev[i, 1])
        lz = min(lz, x[i, 2], x_prev[i, 2])
        hx = max(hx, x[i, 0], x_prev[i, 0])
        hy = max(hy, x[i, 1], x_prev[i, 1])
        hz = max(hz, x[i, 2], x_prev[i, 2])
    for c in range(bounds.shape[0]):
        near[c] = _box_near(lx, ly, lz, hx, hy, hz, bounds, c)


@njit(cache=True, inline="always")
def _segment_near(x, x_prev, i, j, bounds, c):
    """Whether collider c may touch the rope segment of particles i, j over the step
    (_box_near of the box of both ends before and after it)."""
    return _box_near(min(x[i, 0], x_prev[i, 0], x[j, 0], x_prev[j, 0]),
                     min(x[i, 1], x_prev[i, 1], x[j, 1], x_prev[j, 1]),
                     min(x[i, 2], x_prev[i, 2], x[j, 2], x_prev[j, 2]),
                     max(x[i, 0], x_prev[i, 0], x[j, 0], x_prev[j, 0]),
                     max(x[i, 1], x_prev[i, 1], x[j, 1], x_prev[j, 1]),
                     max(x[i, 2], x_prev[i, 2], x[j, 2], x_prev[j, 2]), bounds, c)


@njit(cache=True, inline="always")
def _box_near(lx, ly, lz, hx, hy, hz, bounds, c):
    """Whether collider c may come near points that move within the box [l, h] (m) over
    the step. Seen from the collider standing at its pose before the step, a point goes
    from where it was to where it is less the collider's shift and turned back about its
    centre after the step by the step's angle (which moves it at most angle times its
    distance from that centre), so the box, stretched by minus the shift and grown by
    that bound, must meet the collider's box (_collider_bounds)."""
    grow = 0.0
    if bounds[c, 9] != 0.0:  # the farthest corner of the box from the centre
        far = 0.0
        for k in range(3):
            lo = lx if k == 0 else (ly if k == 1 else lz)
            hi = hx if k == 0 else (hy if k == 1 else hz)
            far += max(abs(lo - bounds[c, 10 + k]), abs(hi - bounds[c, 10 + k])) ** 2
        grow = bounds[c, 9] * np.sqrt(far) * (1.0 + 1e-9)
    meets = True
    for k in range(3):
        lo = lx if k == 0 else (ly if k == 1 else lz)
        hi = hx if k == 0 else (hy if k == 1 else hz)
        shift = bounds[c, 6 + k]
        if (lo + min(-shift, 0.0) - grow > bounds[c, 3 + k]
                or hi + max(-shift, 0.0) + grow < bounds[c, k]):
            meets = False
    return meets


@njit(cache=True)
def project_contacts(x, x_prev, v, inv_mass, fixed, grounds, spheres, colliders, meshes,
                     boxes, links, triangles, grids, distances, segments, segment_ranges,
                     sheet_segments, sheet_ranges, sheet_triangles, tips, tip_ranges, jumps,
                     poses, motion, scratch, segment_scratch, bounds, near, stack, time, dt,
                     planar, broad_phase):
    """Push free particles out of every obstacle; returns how many contacts were made.

    ``x_prev``: the positions before the step (m); ``inv_mass`` (n,) 1/kg (0: fixed);
    ``colliders``: the collider table (COLUMNS per row); ``meshes`` (m, 5) int64 [first
    node, node count, first triangle, triangle count, first distance] into the BVH arrays
    and the distance grids (``grids`` (m, 8) their layout, bvh.distance_grid);
    ``segments`` (s, 2) int64 the rope segments and ``sheet_segments`` a cloth's
    triangle edges, collider c tested against those of rows ``segment_ranges[c]`` and
    ``sheet_ranges[c]`` ((k, 2) int64 [first, end)); ``sheet_triangles`` (t, 3) int64 a
    cloth's triangles, met by the ``tips`` (q, 3) of closed meshes (m, in their frames;
    collider c's the rows ``tip_ranges[c]``, (k, 2) int64 [first, end): _tip_contacts);
    ``jumps`` (k, JUMP_COLUMNS) the moves made between steps; ``poses`` (k, 2, 12),
    ``motion`` (k, 6), ``scratch`` (24,), ``segment_scratch`` (15,), ``bounds`` (k, 13),
    ``near`` (k,) and ``stack`` scratch; ``time`` (s) the time at the start of the step
    of ``dt`` (s). The broad phase (``broad_phase``; off, every collider is tested
    against every particle and segment, with the same results): per block of BLOCK
    particles, only the colliders that come near the block over the step (_block_near)
    are tested against its particles (every collider against a particle another obstacle
    has moved), and only the segments whose motion comes near a collider against it.
    """
    _step_poses(colliders, jumps, time, dt, poses, motion, scratch[12:24])
    _collider_bounds(colliders, meshes, boxes, poses, bounds)
    p0 = scratch[0:3]
    p1 = scratch[3:6]
    out = scratch[6:12]
    touching = 0
    near[:] = True
    for i in range(x.shape[0]):
        if i % BLOCK == 0 and colliders.shape[0] > 0 and broad_phase:
            _block_near(x, x_prev, i, min(i + BLOCK, x.shape[0]), bounds, near)
        if fixed[i]:
            continue
        was = touching  # a particle another obstacle moved meets every collider
        for g in range(grounds.shape[0]):  # a half-space: nothing passes it
            if x[i, 1] < grounds[g, 0]:
                x[i, 1] = grounds[g, 0]
                _resolve(v, i, 0.0, 1.0, 0.0, grounds[g, 1], 0.0, 0.0, 0.0)
                touching += 1
        for s in range(spheres.shape[0]):  # swept: a capsule of zero length
            radius = spheres[s, 3]
            far = False
            end_sq = 0.0  # |x - centre|^2 and |step|^2 (m^2)
            step_sq = 0.0
            for k in range(2 if planar else 3):  # the step stays beside the ball's box
                a, b = x_prev[i, k] - spheres[s, k], x[i, k] - spheres[s, k]
                far = far or (a >= radius and b >= radius) or (a <= -radius and b <= -radius)
                end_sq += b * b
                step_sq += (b - a) * (b - a)
            if far or (end_sq >= radius * radius
                       and step_sq <= (SHORT_STEP * radius) ** 2):  # a short step outside
                continue
            for k in range(3):
                p0[k] = x_prev[i, k] - spheres[s, k]
                p1[k] = x[i, k] - spheres[s, k]
            if planar:
                p0[2] = p1[2] = 0.0
            if not _capsule(p0, p1, 0.0, radius, spheres[s, 4], out):
                continue
            x[i, 0] = spheres[s, 0] + out[0]
            x[i, 1] = spheres[s, 1] + out[1]
            if not planar:
                x[i, 2] = spheres[s, 2] + out[2]
            _resolve(v, i, out[3], out[4], out[5], spheres[s, 4], 0.0, 0.0, 0.0)
            touching += 1
        for c in range(colliders.shape[0]):
            if not near[c] and touching == was:
                continue
            row = colliders[c]
            before = poses[c, 0]
            after = poses[c, 1]
            p0[0], p0[1], p0[2] = _to_local(before, x_prev[i, 0], x_prev[i, 1], x_prev[i, 2])
            p1[0], p1[1], p1[2] = _to_local(after, x[i, 0], x[i, 1], x[i, 2])
            kind = int(row[KIND])
            if kind == BOX:
                touched = _box(p0, p1, row[P0:P0 + 3], out)
            elif kind == CAPSULE:
                touched = _capsule(p0, p1, row[P0], row[P1], row[FRICTION], out)
            else:
                m = int(row[MESH_INDEX])
                n0, nn, t0, tn = meshes[m, 0], meshes[m, 1], meshes[m, 2], meshes[m, 3]
                g0 = meshes[m, 4]
                g1 = g0 + int(grids[m, 4] * grids[m, 5] * grids[m, 6])
                touched = _mesh(p0, p1, row[P0], row[CLOSED] != 0.0, boxes[n0:n0 + nn],
                                links[n0:n0 + nn], triangles[t0:t0 + tn], grids[m],
                                distances[g0:g1], stack, out)
            if not touched:
                continue
            wx, wy, wz = _rotate(after, out[0], out[1], out[2])
            nx, ny, nz = _rotate(after, out[3], out[4], out[5])
            x[i, 0] = wx + after[0]
            x[i, 1] = wy + after[1]
            if not planar:
                x[i, 2] = wz + after[2]
            # the surface velocity at the contact: velocity + spin x (p - centre)
            sx, sy, sz = _surface_velocity(motion[c], wx, wy, wz)
            _resolve(v, i, nx, ny, nz, row[FRICTION], sx, sy, sz)
            if planar:
                v[i, 2] = 0.0
            touching += 1
    if segments.shape[0] > 0:  # a rope's segments against every collider
        touching += _segment_contacts(x, x_prev, v, inv_mass, segments, segment_ranges,
                                      colliders, meshes, boxes, links, triangles, grids,
                                      distances, poses, motion, bounds, broad_phase, stack,
                                      segment_scratch, planar)
    if sheet_segments.shape[0] > 0:  # a cloth's edges against thin ones
        touching += _segment_contacts(x, x_prev, v, inv_mass, sheet_segments, sheet_ranges,
                                      colliders, meshes, boxes, links, triangles, grids,
                                      distances, poses, motion, bounds, broad_phase, stack,
                                      segment_scratch, planar)
    if tips.shape[0] > 0 and not planar:  # sharp points of meshes against a cloth's triangles
        touching += _tip_contacts(x, x_prev, v, inv_mass, sheet_triangles, tips, tip_ranges,
                                  colliders, poses, motion)
    return touching
