"""Tethers (long-range attachments: Kim, Chentanez and Mueller, "Long Range Attachments:
A Method to Simulate Inextensible Clothing in Computer Games", SCA 2012) for XPBD.

Why: a few Gauss-Seidel passes per substep carry load only a few springs far, so a
stiff cloth hanging from two corners stretches there far past what its springs allow
(the stiff 64 x 64 benchmark cloth at 4 XPBD substeps: corner springs at 10x their rest
length after 0.5 s, where backward Euler's reach 1.2x). A tether lets no free particle
get farther from its anchor, the fixed particle nearest it through the springs, than
``(1 + slack)`` times that rest-shape distance: one projection per particle and
substep, independent of the others, which carries the weight to the pins at once.

The rest-shape distance is the shortest path through the unbroken springs (k > 0),
each counted at its rest length (m), from the nearest fixed particle (pinned or
grabbed); particles no fixed particle reaches get no tether (an infinite reach).
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit


@njit(cache=True)
def nearest_anchors(starts, springs, others, rest, k, fixed, anchor, distance):
    """Multi-source Dijkstra from the fixed particles through the springs with k > 0:
    ``distance[i]`` (m) the shortest rest-length path to a fixed particle, ``anchor[i]``
    that particle (-1 and infinity where none reaches; a fixed particle is its own
    anchor at 0). CSR adjacency (starts, springs, others) as vertex_adjacency gives it."""
    n = fixed.shape[0]
    heap = [(0.0, np.int64(0))]
    heap.pop()
    for i in range(n):
        anchor[i] = -1
        distance[i] = np.inf
        if fixed[i]:
            anchor[i] = i
            distance[i] = 0.0
            heap.append((0.0, np.int64(i)))
    heapq.heapify(heap)
    while len(heap) > 0:
        d, i = heapq.heappop(heap)
        if d > distance[i]:
            continue  # a stale entry: i was reached shorter since
        for e in range(starts[i], starts[i + 1]):
            s = springs[e]
            if not k[s] > 0.0:  # a broken spring joins nothing
                continue
            j = others[e]
            through = d + rest[s]
            if through < distance[j]:
                distance[j] = through
                anchor[j] = anchor[i]
                heapq.heappush(heap, (through, j))


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def tether(X, w, anchor, reach, lo, hi):
    """Pull each free particle i of [lo, hi) that is farther than reach[i] (m) from its
    anchor back onto that sphere. X: (3, n) positions (the grid path's scratch, or the
    transposed view x.T of the spring-list path's (n, 3) positions)."""
    for i in range(lo, hi):
        a = anchor[i]
        if w[i] == 0.0 or a < 0:
            continue
        dx = X[0, i] - X[0, a]
        dy = X[1, i] - X[1, a]
        dz = X[2, i] - X[2, a]
        dist_sq = dx * dx + dy * dy + dz * dz
        limit = reach[i]
        if dist_sq > limit * limit:  # a square root only for the few beyond their reach
            shrink = limit / np.sqrt(dist_sq) - 1.0
            X[0, i] += shrink * dx
            X[1, i] += shrink * dy
            X[2, i] += shrink * dz
