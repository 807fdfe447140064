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
stiff 64 x 64 cloth's 2-substep chain step: 2.55 ms serial one chain at a time, about
30 ns a row (docs/solvers.md has the lane solve's figures).
"""

from __future__ import annotations

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
#: vectors (AVX2)
LANE_BLOCK = 16
#: the rows of a slot in the lane solve's work array: positions, substep-start
#: positions, the slot's weight, its row's rest length, k, c and multiplier, the row's
#: unit vector and length (-1: the row projects nothing), the eliminated super-diagonal
#: and right-hand side (then dl)
LANE_ROWS = 17
#: a slot's entries in the work array (LANE_ROWS rows of LANE_BLOCK lanes), and each
#: row's offset in it
SLOT = LANE_ROWS * LANE_BLOCK
(X0, X1, X2, P0, P1, P2, W_, REST_, K_, C_, LAM_, N0, N1, N2, LEN_, CP_, DP_) = (
    np.uint64(row * LANE_BLOCK) for row in range(LANE_ROWS))
#: as unsigned offsets (unsigned indices: no wraparound test, so LLVM sees the loops'
#: addresses as affine and vectorises them)
SLOT_U, LANES_U = np.uint64(SLOT), np.uint64(LANE_BLOCK)


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


def chain_lanes(cover: tuple) -> tuple:
    """Each family's chains packed into lanes for the vectorised solve (module
    docstring, "Lanes"): a lane is a column of ``capacity`` slots holding whole chains
    one after another (first fit, longest chains first), a block ``width`` lanes side
    by side (slot t of lane l of block b at b capacity width + t width + l), so that
    every loop runs over the lanes of a block at one slot: contiguous, vectorised.

    Returns (shape (F, 4) int64: each family's (first entry, capacity, width, blocks);
    slot_particle: the particle in each slot, -1 for none; row_spring: the spring from
    each slot to the next, -1 where none joins them (between two chains, after a lane's
    last chain and at the last slot)); width = LANE_BLOCK (a family of fewer lanes, a
    rope, has empty ones)."""
    family_start, chain_start, chain_springs, part_start, chain_parts = cover
    shapes, particles, springs = [], [], []
    entry = 0
    for f in range(len(family_start) - 1):
        chains = range(family_start[f], family_start[f + 1])
        slots = {ch: part_start[ch + 1] - part_start[ch] for ch in chains}
        capacity = max(slots.values())
        lanes: list[list[int]] = []
        room: list[int] = []
        for ch in sorted(chains, key=lambda ch: -slots[ch]):
            lane = next((ln for ln, free in enumerate(room) if free >= slots[ch]), None)
            if lane is None:
                lanes.append([])
                room.append(capacity)
                lane = len(lanes) - 1
            lanes[lane].append(ch)
            room[lane] -= slots[ch]
        width = LANE_BLOCK
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
    slot LANE_ROWS rows of LANE_BLOCK lanes, between a slot of zeros before the first
    and one after the last, for the family that needs the most."""
    return np.zeros(max([(capacity + 2) * SLOT * blocks for _, capacity, _, blocks
                         in shapes.tolist()], default=1))


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def project_lanes(x, x_prev, w, lam, rest, k, c, per_k, per_spring, per_c, rigid, shapes,
                  slot_particle, row_spring, work, f, b):
    """Solve the chains of block b of family f (chain_lanes) as one chain at a time
    would be, lane by lane in vector loops, and move their particles: the block's slots
    gathered into ``work`` (lane_work; entry (slot, row, lane) at slot SLOT + row
    LANE_BLOCK + lane, every offset a constant, so LLVM sees that the loops' stores
    and loads do not overlap), the rows' unit vectors, the sweep down (the eliminated
    super-diagonal and right-hand side), the sweep up (the multiplier updates dl, into
    lam), the moves, scattered back. A row joining no spring (between chains, in
    padding) has dl = 0 and couples nothing."""
    first, capacity = shapes[f, 0], shapes[f, 1]
    top = first + b * capacity * LANE_BLOCK  # the block's slots in slot_particle, row_spring
    lo = b * (capacity + 2) * SLOT + SLOT  # its first slot in work, after a slot of zeros
    for e in range(lo - SLOT, lo):  # the slots of zeros before the first and after the last
        work[e] = 0.0
        work[e + (capacity + 1) * SLOT] = 0.0
    for t in range(capacity):
        row = np.uint64(lo + t * SLOT)
        for ln in range(LANE_BLOCK):
            e = row + np.uint64(ln)
            p = slot_particle[top + t * LANE_BLOCK + ln]
            s = row_spring[top + t * LANE_BLOCK + ln]
            q = max(p, 0)
            on = p >= 0
            work[e + X0] = x[q, 0] if on else 0.0
            work[e + X1] = x[q, 1] if on else 0.0
            work[e + X2] = x[q, 2] if on else 0.0
            work[e + P0] = x_prev[q, 0] if on else 0.0
            work[e + P1] = x_prev[q, 1] if on else 0.0
            work[e + P2] = x_prev[q, 2] if on else 0.0
            work[e + W_] = w[q] if on else 0.0
            r = max(s, 0)
            joined = s >= 0
            work[e + REST_] = rest[r] if joined else 0.0
            work[e + K_] = k[r] if joined else 0.0
            work[e + C_] = c[r] if joined else 0.0
            work[e + LAM_] = lam[r] if joined else 0.0
    for t in range(capacity):  # each row's unit vector from slot t + 1 to slot t
        row = np.uint64(lo + t * SLOT)
        for ln in range(LANES_U):
            e = row + ln
            j = e + SLOT_U  # (after the last slot: zeros, and its row joins no spring)
            dx = work[e + X0] - work[j + X0]
            dy = work[e + X1] - work[j + X1]
            dz = work[e + X2] - work[j + X2]
            length = np.sqrt(dx * dx + dy * dy + dz * dz)
            live = (work[e + K_] > 0.0 and length >= MIN_LENGTH
                    and work[e + W_] + work[j + W_] > 0.0)
            inv = 1.0 / length if live else 0.0
            work[e + N0] = dx * inv
            work[e + N1] = dy * inv
            work[e + N2] = dz * inv
            work[e + LEN_] = length if live else -1.0  # -1: the row projects nothing
    for t in range(capacity):  # down: the eliminated super-diagonal and right-hand side
        row = np.uint64(lo + t * SLOT)
        for ln in range(LANES_U):
            e = row + ln
            before = e - SLOT_U
            after = e + SLOT_U
            wi = work[e + W_]
            wj = work[after + W_]
            wsum = wi + wj
            length = work[e + LEN_]
            live = length >= 0.0
            n0, n1, n2 = work[e + N0], work[e + N1], work[e + N2]
            if rigid:
                scale = 1.0 if live else 0.0
                diag = RIGID_REGULARISATION * wsum + wsum if live else 1.0
                rhs = -(length - work[e + REST_]) if live else 0.0
            else:
                stiff = per_k * work[e + K_] + per_spring
                damp = per_c * work[e + C_]
                scale = stiff + damp if live else 0.0
                diag = 1.0 + scale * wsum
                moved = (n0 * (work[e + X0] - work[e + P0] - work[after + X0]
                               + work[after + P0])
                         + n1 * (work[e + X1] - work[e + P1] - work[after + X1]
                                 + work[after + P1])
                         + n2 * (work[e + X2] - work[e + P2] - work[after + X2]
                                 + work[after + P2]))
                rhs = (-(stiff * (length - work[e + REST_]) + damp * moved + work[e + LAM_])
                       if live else 0.0)
            sub = -scale * wi * (work[before + N0] * n0 + work[before + N1] * n1
                                 + work[before + N2] * n2)
            sup = -scale * wj * (n0 * work[after + N0] + n1 * work[after + N1]
                                 + n2 * work[after + N2])
            inverse = 1.0 / (diag - sub * work[before + CP_])
            work[e + CP_] = sup * inverse
            work[e + DP_] = (rhs - sub * work[before + DP_]) * inverse
    for u in range(capacity):  # up: dl = dp - cp dl of the row after
        row = np.uint64(lo + (capacity - 1 - u) * SLOT)
        for ln in range(LANES_U):
            e = row + ln
            dl = work[e + DP_] - work[e + CP_] * work[e + SLOT_U + DP_]
            work[e + DP_] = dl
            work[e + LAM_] += dl
    for t in range(capacity):  # each slot between its row (+n) and the row before (-n)
        row = np.uint64(lo + t * SLOT)
        for ln in range(LANES_U):
            e = row + ln
            before = e - SLOT_U
            wt = work[e + W_]
            dl, dl_before = work[e + DP_], work[before + DP_]
            work[e + X0] += wt * (work[e + N0] * dl - work[before + N0] * dl_before)
            work[e + X1] += wt * (work[e + N1] * dl - work[before + N1] * dl_before)
            work[e + X2] += wt * (work[e + N2] * dl - work[before + N2] * dl_before)
    for t in range(capacity):
        row = np.uint64(lo + t * SLOT)
        for ln in range(LANE_BLOCK):
            e = row + np.uint64(ln)
            p = slot_particle[top + t * LANE_BLOCK + ln]
            s = row_spring[top + t * LANE_BLOCK + ln]
            if p >= 0:
                x[p, 0] = work[e + X0]
                x[p, 1] = work[e + X1]
                x[p, 2] = work[e + X2]
            if s >= 0:
                lam[s] = work[e + LAM_]
