"""Vertex adjacency and vertex colouring: particles grouped so that no two of a group
share a spring (the particles of one group can then be updated in parallel, each
reading its neighbours, none writing another's), for the block Gauss-Seidel solvers."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _fill_adjacency(spring_a, spring_b, starts, springs, others):
    """springs/others[starts[i]:starts[i + 1]]: the springs at particle i and their other
    ends, in spring order."""
    fill = starts[:-1].copy()
    for s in range(spring_a.shape[0]):
        for end in range(2):
            i = spring_a[s] if end == 0 else spring_b[s]
            j = spring_b[s] if end == 0 else spring_a[s]
            springs[fill[i]] = s
            others[fill[i]] = j
            fill[i] += 1


def vertex_adjacency(spring_a, spring_b, n_particles: int):
    """The springs at each particle as CSR arrays (starts, springs, others), int64:
    particle i's springs are springs[starts[i]:starts[i + 1]], in spring order, and
    others[...] the particles at their other ends."""
    a = np.asarray(spring_a, dtype=np.int64)
    b = np.asarray(spring_b, dtype=np.int64)
    degree = np.bincount(a, minlength=n_particles) + np.bincount(b, minlength=n_particles)
    starts = np.zeros(int(n_particles) + 1, np.int64)
    np.cumsum(degree, out=starts[1:])
    springs = np.empty(2 * a.shape[0], np.int64)
    others = np.empty(2 * a.shape[0], np.int64)
    _fill_adjacency(a, b, starts, springs, others)
    return starts, springs, others


@njit(cache=True)
def _greedy_vertex_colours(starts, others, colour):
    """Smallest colour no neighbour has yet, particle by particle; returns the count."""
    n = starts.shape[0] - 1
    max_degree = 0
    for i in range(n):
        max_degree = max(max_degree, starts[i + 1] - starts[i])
    seen = np.full(max_degree + 2, -1, np.int64)  # seen[c] == i: a neighbour of i has c
    count = 0
    for i in range(n):
        for e in range(starts[i], starts[i + 1]):
            c = colour[others[e]]
            if c >= 0:
                seen[c] = i
        c = 0
        while seen[c] == i:
            c += 1
        colour[i] = c
        count = max(count, c + 1)
    return count


def vertex_colouring(starts, others):
    """Group particles into colours with no spring inside a colour (greedy, deterministic),
    from the adjacency of :func:`vertex_adjacency`.

    Returns (order, colour_starts), int64: particles order[colour_starts[q]:colour_starts[q + 1]]
    form colour q, sorted by index. At most (largest particle degree + 1) colours.
    """
    n = starts.shape[0] - 1
    colour = np.full(n, -1, np.int64)
    count = _greedy_vertex_colours(starts, others, colour)
    order = np.argsort(colour, kind="stable").astype(np.int64)
    colour_starts = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(colour, minlength=count), out=colour_starts[1:])
    return order, colour_starts
