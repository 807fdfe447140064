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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .particles import MIN_LENGTH, spring_direction

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


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def project_chain(x, x_prev, w, lam, chain, chain_start, chain_springs, part_start,
                  chain_parts, rest, k, c, per_k, per_spring, per_c, rigid, scratch):
    """Solve chain ``chain``'s linearised XPBD equations (module docstring) and move its
    particles; lam (per spring) accumulates the multipliers. scratch (m, 5) float64,
    rows by place in chain_springs: the unit vector, the eliminated super-diagonal and
    right-hand side (the chains of a family use disjoint rows)."""
    e0 = chain_start[chain]
    n_rows = chain_start[chain + 1] - e0
    q0 = part_start[chain]
    # look-ahead: each row needs its successor's unit vector
    p = chain_parts[q0]
    nxt = chain_parts[q0 + 1]
    n0, n1, n2, length = spring_direction(x, p, nxt)
    prev0 = prev1 = prev2 = 0.0
    prev_cp = prev_dp = 0.0
    for t in range(n_rows):
        e = e0 + t
        s = chain_springs[e]
        i = chain_parts[q0 + t]
        j = chain_parts[q0 + t + 1]
        if t + 1 < n_rows:
            f0, f1, f2, f_length = spring_direction(x, j, chain_parts[q0 + t + 2])
        else:
            f0 = f1 = f2 = f_length = 0.0
        wsum = w[i] + w[j]
        live = k[s] > 0.0 and length >= MIN_LENGTH and wsum > 0.0
        if not live:
            n0 = n1 = n2 = 0.0
        if rigid:
            scale = 1.0 if live else 0.0
            diag = RIGID_REGULARISATION * wsum + wsum if live else 1.0
            rhs = -(length - rest[s]) if live else 0.0
        else:
            stiff = per_k * k[s] + per_spring
            damp = per_c * c[s]
            scale = stiff + damp if live else 0.0
            diag = 1.0 + scale * wsum
            moved = (n0 * (x[i, 0] - x_prev[i, 0] - x[j, 0] + x_prev[j, 0])
                     + n1 * (x[i, 1] - x_prev[i, 1] - x[j, 1] + x_prev[j, 1])
                     + n2 * (x[i, 2] - x_prev[i, 2] - x[j, 2] + x_prev[j, 2]))
            rhs = -(stiff * (length - rest[s]) + damp * moved + lam[s]) if live else 0.0
        sub = -scale * w[i] * (prev0 * n0 + prev1 * n1 + prev2 * n2)
        sup = -scale * w[j] * (n0 * f0 + n1 * f1 + n2 * f2)
        inverse = 1.0 / (diag - sub * prev_cp)
        prev_cp = sup * inverse
        prev_dp = (rhs - sub * prev_dp) * inverse
        scratch[e, 0] = n0
        scratch[e, 1] = n1
        scratch[e, 2] = n2
        scratch[e, 3] = prev_cp
        scratch[e, 4] = prev_dp
        prev0, prev1, prev2 = n0, n1, n2
        n0, n1, n2, length = f0, f1, f2, f_length
    # back substitution, moving each particle once both its rows are known
    after = 0.0  # dl of the row after this one
    a0 = a1 = a2 = 0.0  # that row's unit vector
    for t in range(n_rows - 1, -1, -1):
        e = e0 + t
        dl = scratch[e, 4] - scratch[e, 3] * after
        lam[chain_springs[e]] += dl
        r0 = scratch[e, 0]
        r1 = scratch[e, 1]
        r2 = scratch[e, 2]
        j = chain_parts[q0 + t + 1]  # between this row (-n) and the one after (+n)
        wj = w[j]
        x[j, 0] += wj * (a0 * after - r0 * dl)
        x[j, 1] += wj * (a1 * after - r1 * dl)
        x[j, 2] += wj * (a2 * after - r2 * dl)
        after = dl
        a0, a1, a2 = r0, r1, r2
    i = chain_parts[q0]
    wi = w[i]
    x[i, 0] += wi * a0 * after
    x[i, 1] += wi * a1 * after
    x[i, 2] += wi * a2 * after
