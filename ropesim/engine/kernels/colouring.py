"""Edge colouring: springs grouped so that no two of a group share a particle (the
groups can then be applied in parallel without two threads writing one particle)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _greedy_colours(spring_a, spring_b, n_particles, colour):
    """Smallest colour not yet used at either end, spring by spring; returns the count."""
    used = np.zeros((n_particles, 2), np.uint64)  # bitmask of colours 0..127 per particle
    count = 0
    for s in range(spring_a.shape[0]):
        i = spring_a[s]
        j = spring_b[s]
        c = -1
        for word in range(2):
            free = ~(used[i, word] | used[j, word])
            if free != 0:
                bit = 0
                while not (free >> np.uint64(bit)) & np.uint64(1):
                    bit += 1
                c = word * 64 + bit
                break
        if c < 0:
            return -1
        used[i, c // 64] |= np.uint64(1) << np.uint64(c % 64)
        used[j, c // 64] |= np.uint64(1) << np.uint64(c % 64)
        colour[s] = c
        if c + 1 > count:
            count = c + 1
    return count


def edge_colouring(spring_a, spring_b, n_particles: int):
    """Group springs into colours that share no particle (greedy, deterministic).

    Returns (order, starts): springs order[starts[q]:starts[q + 1]] form colour q, each
    colour sorted by spring index, so the springs of one colour can be applied in
    parallel without two threads touching the same particle. None if more than 128
    colours would be needed (a particle with very many springs).
    """
    a = np.asarray(spring_a, dtype=np.int64)
    b = np.asarray(spring_b, dtype=np.int64)
    colour = np.empty(a.shape[0], np.int64)
    count = _greedy_colours(a, b, int(n_particles), colour)
    if count < 0:
        return None
    order = np.argsort(colour, kind="stable").astype(np.int64)
    starts = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(colour, minlength=count), out=starts[1:])
    return order, starts

