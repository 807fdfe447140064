"""Chain projection for XPBD (integrators/xpbd.py, ``projection = "chains"``): each line
of springs is solved at once, as one block of a block Gauss-Seidel pass.

Why: a Gauss-Seidel pass that projects one spring at a time carries a load about one
spring per colour, so a stiff cloth needs hundreds of passes before the weight of its
lower rows reaches the pins; with the few passes of the small-steps scheme it hangs far
longer than its springs allow. A chain p_0 - p_1 - ... - p_L of L springs s_t = (p_t,
p_{t+1}) linearised about the positions now couples each spring only with its two
neighbours, through their shared particle, so XPBD's equations for the chain's L
multiplier updates are tridiagonal: row t (stiffness form, as kernels/grid_xpbd.py)

    e_t dl_t + S_t (w_t + w_{t+1}) dl_t - S_t w_t (n_{t-1} . n_t) dl_{t-1}
             - S_t w_{t+1} (n_t . n_{t+1}) dl_{t+1} = N_t,

with n_t the unit vector from p_{t+1} to p_t, S_t = h^2 k + h c (the spring's h^2/alpha
and damping term), e_t = 1 and N_t = -(h^2 k C_t + h c n_t . (dx_t - dx_{t+1}) +
lambda_t); a rigid spring (compliance 0) has S_t = 1, N_t = -C_t and e_t a small
regularisation (RIGID_REGULARISATION (w_t + w_{t+1})) that keeps a straight rigid chain
between two pins solvable. The rows are diagonally dominant (|n . n'| <= 1), so the
Thomas algorithm solves them in one sweep down and one up, O(L), without pivoting; then
p_t += w_t (n_t dl_t - n_{t-1} dl_{t-1}). A one-spring chain is XPBD's projection of that
spring. Springs between two fixed particles, broken ones (k = 0) and ones without
direction are rows dl = 0 that couple nothing.

The springs are covered by families of chains (:func:`chain_cover`): within a family no
two chains share a particle, so a family's chains are solved in parallel, and the
families one after another. On a structured grid (the builders' spring order, family by
family) the cover is the grid's lines: the rows, the columns, the two diagonals and the
two bending lines, 6 families; a rope is one chain.

Lanes (:func:`chain_lanes`, :func:`project_lanes`): the Thomas sweeps are sequential
along a chain but independent across chains, so a family's chains are packed into
lanes (whole chains one after another in a column of slots) and a block of 16 lanes is
solved side by side: every loop runs at one slot over the block's lanes, contiguous in
a work array, which LLVM turns into 4-wide vector code (square roots and divisions
included). A row between two chains of a lane, or in padding, joins no spring: it
projects nothing and couples nothing, so each chain is solved exactly as alone. The
stiff 64 x 64 cloth's 2-substep chain step with tethers, serial: 1.01-1.27 ms against
1.40-3.01 one chain at a time (docs/solvers.md, "Kernels").
"""

from __future__ import annotations

import bisect

import numpy as np
from numba import njit

from .particles import MIN_LENGTH

#: a rigid chain's diagonal regularisation, times w_t + w_{t+1} (1/kg): a straight rigid
#: chain between two fixed particles is otherwise singular; converged passes still reach
#: C = 0 (the right-hand side is -C)
RIGID_REGULARISATION = 1e-6
#: a chain grows only by a spring that turns from its last one by at most this much in
#: the rest shape (the cosine at least MIN_ALIGNMENT): a ring of 12 or more springs is
#: one chain, a grid's row ends at the grid's edge (a bending spring, 45 degrees off a
#: diagonal, does not continue it)
MAX_TURN_DEGREES = 30.0
MIN_ALIGNMENT = float(np.cos(np.radians(MAX_TURN_DEGREES)))
#: lanes of one block (one parallel task) of the vectorised solve: four 4-wide float64
#: vectors (AVX2); a family of fewer than LANE_BLOCK / 2 lanes (a rope: one) has blocks
#: of one lane instead, the scalar solve (16 lanes, all but one empty, ran a 1000-particle
#: rope 9x slower)
LANE_BLOCK = 16
#: the rows of a slot in the lane solve's work array: positions, substep-start
#: positions, the slot's weight, its row's rest length, k, c and multiplier, the row's
#: unit vector and length (-1: the row projects nothing), the eliminated super-diagonal
#: and right-hand side (then dl)
LANE_ROWS = 17
#: each row's place in a slot of the work array, in rows of the block's lanes;
#: unsigned, as every index of the lane solve's loops (no wraparound test: LLVM sees
#: affine addresses and vectorises them)
(X0, X1, X2, P0, P1, P2, W_, REST_, K_, C_, LAM_, N0, N1, N2, LEN_, CP_, DP_) = (
    np.uint64(row) for row in range(LANE_ROWS))


@njit(cache=True, inline="always")
def _alignment(x, a, b, c):
    """Cosine of the turn from a -> b to b -> c (x: (n, 3) m); -1 for a zero-length one."""
    u0 = x[b, 0] - x[a, 0]
    u1 = x[b, 1] - x[a, 1]
    u2 = x[b, 2] - x[a, 2]
    v0 = x[c, 0] - x[b, 0]
    v1 = x[c, 1] - x[b, 1]
    v2 = x[c, 2] - x[b, 2]
    norms = np.sqrt((u0 * u0 + u1 * u1 + u2 * u2) * (v0 * v0 + v1 * v1 + v2 * v2))
    if norms == 0.0:
        return -1.0
    return (u0 * v0 + u1 * v1 + u2 * v2) / norms


@njit(cache=True)
def chain_cover(spring_a, spring_b, rest_x, starts, springs, others):
    """Families of particle-disjoint chains covering every spring once.

    Greedy, in spring order: a spring whose ends are both free in the current family
    starts a chain, which grows from its second end along the lowest-numbered unused
    spring to a particle free in the family that turns by less than MAX_TURN_DEGREES in
    the rest shape ``rest_x`` (n, 3) m (a grid's lines stop at its edges instead of
    turning round them), until none is left; when no spring can start a chain, the next
    family begins. CSR vertex adjacency (starts, springs, others) as
    kernels/vertex_colouring.vertex_adjacency gives it, each particle's springs in
    increasing order. Returns (family_start (F+1,), chain_start (C+1,), chain_springs
    (m,), part_start (C+1,), chain_parts (m + C,)): family f holds chains
    family_start[f]:family_start[f+1]; chain c's springs chain_springs[chain_start[c]:
    chain_start[c+1]] join its particles chain_parts[part_start[c]:part_start[c+1]] in
    order."""
    m = spring_a.shape[0]
    n = rest_x.shape[0]
    assigned = np.zeros(m, np.bool_)
    used = np.full(n, -1, np.int64)  # the last family that put the particle on a chain
    chain_springs = np.empty(m, np.int64)
    chain_parts = np.empty(2 * m, np.int64)
    chain_start = np.zeros(m + 1, np.int64)
    part_start = np.zeros(m + 1, np.int64)
    family_start = np.zeros(m + 1, np.int64)
    n_chains = 0
    e = 0
    q = 0
    family = 0  # the family being filled; family_start[family] its first chain
    while e < m:
        for s in range(m):
            a = spring_a[s]
            b = spring_b[s]
            if assigned[s] or used[a] == family or used[b] == family:
                continue
            assigned[s] = True
            used[a] = family
            used[b] = family
            chain_springs[e] = s
            chain_parts[q] = a
            chain_parts[q + 1] = b
            e += 1
            q += 2
            before = a
            end = b
            while True:
                nxt = -1
                for slot in range(starts[end], starts[end + 1]):
                    o = others[slot]
                    if (not assigned[springs[slot]] and used[o] != family
                            and _alignment(rest_x, before, end, o) >= MIN_ALIGNMENT):
                        nxt = slot
                        break
                if nxt < 0:
                    break
                before = end
                t = springs[nxt]
                end = others[nxt]
                assigned[t] = True
                used[end] = family
                chain_springs[e] = t
                chain_parts[q] = end
                e += 1
                q += 1
            n_chains += 1
            chain_start[n_chains] = e
            part_start[n_chains] = q
        family += 1
        family_start[family] = n_chains
    return (family_start[:family + 1].copy(), chain_start[:n_chains + 1].copy(),
            chain_springs, part_start[:n_chains + 1].copy(), chain_parts[:q].copy())


def _pack(capacity: int, items: list[tuple[int, int]]) -> list[list[int]]:
    """Best fit, longest first: each (size, item) goes into the lane of ``capacity``
    slots with the least room left that still holds it, or a new lane; returns the
    lanes' items. O(n log n): the lanes are kept by room left (a sorted list of the
    distinct rooms, a list of lanes for each), not searched one by one (a 60,000-spring
    network's 59,000 chains took 12 s that way)."""
    lanes: list[list[int]] = []
    rooms: list[int] = []  # the distinct rooms left, ascending
    by_room: dict[int, list[int]] = {}
    for size, item in sorted(items, key=lambda pair: -pair[0]):
        at = bisect.bisect_left(rooms, size)
        if at < len(rooms):
            room = rooms[at]
            lane = by_room[room].pop()
            if not by_room[room]:
                del rooms[at]
        else:
            room, lane = capacity, len(lanes)
            lanes.append([])
        lanes[lane].append(item)
        left = room - size
        if left not in by_room or not by_room[left]:
            by_room[left] = []
            bisect.insort(rooms, left)
        by_room[left].append(lane)
    return lanes


def chain_lanes(cover: tuple) -> tuple:
    """Each family's chains packed into lanes for the vectorised solve (module
    docstring, "Lanes"): a lane is a column of ``capacity`` slots holding whole chains
    one after another (best fit, longest chains first: _pack), a block ``width`` lanes side
    by side (slot t of lane l of block b at b capacity width + t width + l), so that
    every loop runs over the lanes of a block at one slot: contiguous, vectorised.

    Returns (shape (F, 4) int64: each family's (first entry, capacity, width, blocks);
    slot_particle: the particle in each slot, -1 for none; row_spring: the spring from
    each slot to the next, -1 where none joins them (between two chains, after a lane's
    last chain and at the last slot)); width LANE_BLOCK, or 1 for a family of fewer than
    LANE_BLOCK / 2 lanes."""
    family_start, chain_start, chain_springs, part_start, chain_parts = cover
    shapes, particles, springs = [], [], []
    entry = 0
    for f in range(len(family_start) - 1):
        chains = range(family_start[f], family_start[f + 1])
        slots = {ch: part_start[ch + 1] - part_start[ch] for ch in chains}
        capacity = max(slots.values())
        lanes = _pack(capacity, [(slots[ch], ch) for ch in chains])
        width = LANE_BLOCK if 2 * len(lanes) >= LANE_BLOCK else 1
        blocks = -(-len(lanes) // width)
        particle = np.full((blocks, capacity, width), -1, np.int64)
        spring = np.full((blocks, capacity, width), -1, np.int64)
        for lane, members in enumerate(lanes):
            b, col = divmod(lane, width)
            t = 0
            for ch in members:
                count = slots[ch]
                particle[b, t:t + count, col] = chain_parts[part_start[ch]:part_start[ch + 1]]
                spring[b, t:t + count - 1, col] = chain_springs[
                    chain_start[ch]:chain_start[ch + 1]]
                t += count
        shapes.append((entry, capacity, width, blocks))
        particles.append(particle.ravel())
        springs.append(spring.ravel())
        entry += particle.size
    return (np.array(shapes, np.int64).reshape(-1, 4), np.concatenate(particles),
            np.concatenate(springs))


def lane_work(shapes: np.ndarray) -> np.ndarray:
    """The lane solve's work array, float64: every block of a family its slots, each
    slot LANE_ROWS rows of the block's lanes, between a slot of zeros before the first
    and one after the last, for the family that needs the most."""
    return np.zeros(max([(capacity + 2) * LANE_ROWS * width * blocks for _, capacity,
                         width, blocks in shapes.tolist()], default=1))


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def lane_direction(work, e, slot, lanes):
    """The unit vector and length of the row at work entry e (project_lanes' layout:
    ``slot`` entries a slot, ``lanes`` a row), from the slot after it to its own;
    length -1 where the row projects nothing (no spring, no length, both ends fixed)."""
    j = e + slot
    dx = work[e + X0 * lanes] - work[j + X0 * lanes]
    dy = work[e + X1 * lanes] - work[j + X1 * lanes]
    dz = work[e + X2 * lanes] - work[j + X2 * lanes]
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    live = (work[e + K_ * lanes] > 0.0 and length >= MIN_LENGTH
            and work[e + W_ * lanes] + work[j + W_ * lanes] > 0.0)
    inv = 1.0 / length if live else 0.0
    work[e + N0 * lanes] = dx * inv
    work[e + N1 * lanes] = dy * inv
    work[e + N2 * lanes] = dz * inv
    work[e + LEN_ * lanes] = length if live else -1.0


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def lane_move(work, e, slot, lanes):
    """Move the slot at work entry e by w (n dl of its row - n dl of the row before)."""
    before = e - slot
    wt = work[e + W_ * lanes]
    dl, dl_before = work[e + DP_ * lanes], work[before + DP_ * lanes]
    work[e + X0 * lanes] += wt * (work[e + N0 * lanes] * dl
                                  - work[before + N0 * lanes] * dl_before)
    work[e + X1 * lanes] += wt * (work[e + N1 * lanes] * dl
                                  - work[before + N1 * lanes] * dl_before)
    work[e + X2 * lanes] += wt * (work[e + N2 * lanes] * dl
                                  - work[before + N2 * lanes] * dl_before)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def project_lanes(x, x_prev, w, lam, rest, k, c, per_k, per_spring, per_c, rigid, shapes,
                  slot_particle, row_spring, work, f, b, width):
    """Solve the chains of block b of family f (chain_lanes) as one chain at a time
    would be, lane by lane in vector loops, and move their particles: the block's slots
    gathered into ``work`` (lane_work; entry (slot, row, lane) at (slot LANE_ROWS + row)
    width + lane; ``width``, the family's, a constant at each call site, so that every
    offset is one and LLVM sees that the loops' stores and loads do not overlap), the
    sweep down (each row's unit vector, lane_direction, then the eliminated
    super-diagonal and right-hand side), the sweep up (the multiplier updates dl, into
    lam, and each slot's move, lane_move), scattered back. A row joining no spring
    (between chains, in padding) has dl = 0 and couples nothing."""
    first, capacity = shapes[f, 0], shapes[f, 1]
    lanes = np.uint64(width)  # the caller's constant: LLVM folds it into every offset
    size = LANE_ROWS * width  # a slot's entries
    slot = np.uint64(size)
    top = first + b * capacity * width  # the block's slots in slot_particle, row_spring
    lo = b * (capacity + 2) * size + size  # its first slot in work, after a slot of zeros
    for e in range(lo - size, lo):  # the slots of zeros before the first and after the last
        work[e] = 0.0
        work[e + (capacity + 1) * size] = 0.0
    for i in range(capacity * width):  # gather: slot i // width, lane i % width
        e = np.uint64(lo + (i // width) * size + i % width)
        p, s = slot_particle[top + i], row_spring[top + i]
        q = max(p, 0)
        on = p >= 0
        work[e + X0 * lanes] = x[q, 0] if on else 0.0
        work[e + X1 * lanes] = x[q, 1] if on else 0.0
        work[e + X2 * lanes] = x[q, 2] if on else 0.0
        work[e + P0 * lanes] = x_prev[q, 0] if on else 0.0
        work[e + P1 * lanes] = x_prev[q, 1] if on else 0.0
        work[e + P2 * lanes] = x_prev[q, 2] if on else 0.0
        work[e + W_ * lanes] = w[q] if on else 0.0
        r = max(s, 0)
        joined = s >= 0
        work[e + REST_ * lanes] = rest[r] if joined else 0.0
        work[e + K_ * lanes] = k[r] if joined else 0.0
        work[e + C_ * lanes] = c[r] if joined else 0.0
        work[e + LAM_ * lanes] = lam[r] if joined else 0.0
    first_row = np.uint64(lo)
    for ln in range(lanes):
        lane_direction(work, first_row + ln, slot, lanes)
    for t in range(capacity):  # down: the eliminated super-diagonal and right-hand side
        row = np.uint64(lo + t * size)
        if t + 1 < capacity:  # the row after's unit vector first (it couples to this one)
            for ln in range(lanes):
                lane_direction(work, row + slot + ln, slot, lanes)
        for ln in range(lanes):
            e = row + ln
            before = e - slot
            after = e + slot
            wi = work[e + W_ * lanes]
            wj = work[after + W_ * lanes]
            wsum = wi + wj
            length = work[e + LEN_ * lanes]
            live = length >= 0.0
            n0, n1, n2 = work[e + N0 * lanes], work[e + N1 * lanes], work[e + N2 * lanes]
            if rigid:
                scale = 1.0 if live else 0.0
                diag = RIGID_REGULARISATION * wsum + wsum if live else 1.0
                rhs = -(length - work[e + REST_ * lanes]) if live else 0.0
            else:
                stiff = per_k * work[e + K_ * lanes] + per_spring
                damp = per_c * work[e + C_ * lanes]
                scale = stiff + damp if live else 0.0
                diag = 1.0 + scale * wsum
                moved_0 = (work[e + X0 * lanes] - work[e + P0 * lanes]
                           - work[after + X0 * lanes] + work[after + P0 * lanes])
                moved_1 = (work[e + X1 * lanes] - work[e + P1 * lanes]
                           - work[after + X1 * lanes] + work[after + P1 * lanes])
                moved_2 = (work[e + X2 * lanes] - work[e + P2 * lanes]
                           - work[after + X2 * lanes] + work[after + P2 * lanes])
                moved = n0 * moved_0 + n1 * moved_1 + n2 * moved_2
                rhs = (-(stiff * (length - work[e + REST_ * lanes]) + damp * moved
                         + work[e + LAM_ * lanes]) if live else 0.0)
            sub = -scale * wi * (work[before + N0 * lanes] * n0
                                 + work[before + N1 * lanes] * n1
                                 + work[before + N2 * lanes] * n2)
            sup = -scale * wj * (n0 * work[after + N0 * lanes] + n1 * work[after + N1 * lanes]
                                 + n2 * work[after + N2 * lanes])
            inverse = 1.0 / (diag - sub * work[before + CP_ * lanes])
            work[e + CP_ * lanes] = sup * inverse
            work[e + DP_ * lanes] = (rhs - sub * work[before + DP_ * lanes]) * inverse
    for u in range(capacity):  # up: dl = dp - cp dl of the row after, then the move of
        row = np.uint64(lo + (capacity - 1 - u) * size)  # the slot after (both dl known)
        for ln in range(lanes):
            e = row + ln
            dl = work[e + DP_ * lanes] - work[e + CP_ * lanes] * work[e + slot + DP_ * lanes]
            work[e + DP_ * lanes] = dl
            work[e + LAM_ * lanes] += dl
            lane_move(work, e + slot, slot, lanes)
    for ln in range(lanes):
        lane_move(work, first_row + ln, slot, lanes)
    for i in range(capacity * width):  # scatter
        e = np.uint64(lo + (i // width) * size + i % width)
        p, s = slot_particle[top + i], row_spring[top + i]
        if p >= 0:
            x[p, 0] = work[e + X0 * lanes]
            x[p, 1] = work[e + X1 * lanes]
            x[p, 2] = work[e + X2 * lanes]
        if s >= 0:
            lam[s] = work[e + LAM_ * lanes]
