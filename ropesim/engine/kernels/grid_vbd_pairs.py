"""VBD's scalar grid sweeps for narrow grids (integrators/vbd.py picks them below
VECTOR_MIN_COLS columns): on the (n, 3) arrays, a particle's springs found from the
grid blocks, two free particles of a row and colour inside ``grid_interior``
descended together (two independent chains of square roots and divisions for the CPU
to overlap). kernels/grid_vbd.py's vectorised runs are a fifth of a row long, too
short on a narrow grid to pay for their setup. The same arithmetic in the same order
as grid_vbd.py's kernels and the spring-list path: the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .grid_vbd import (add_spring, chebyshev_accelerate, grid_interior, inertia_block,
                       newton_move, summed)

#: grids at least this wide run the vectorised sweeps of grid_vbd.py (measured, serial
#: CPU time per step against these: 24 columns 1.42x slower, 40: 1.13x, 128: 1.6-2.2x
#: faster)
VECTOR_MIN_COLS = 64


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def descend_grid_particle(x, x_t, y, inv_mass, rest, k, c, inv_h, rows, cols, blocks, r,
                          col):
    """One 3x3 Newton step on G for free particle (r, col) of a grid, its springs from
    the blocks (in spring-index order: in each block the spring ending at it, then the
    one starting at it); returns |f|^2 before the step."""
    i = r * cols + col
    block = inertia_block(x, y, i, inv_mass, inv_h)
    for b in range(blocks.shape[0]):
        dr, dc, first, c0, c1 = (blocks[b, 0], blocks[b, 1], blocks[b, 2], blocks[b, 3],
                                 blocks[b, 4])
        width = c1 - c0
        for end in range(2):  # 0: the spring from (r - dr, col - dc); 1: the one from (r, col)
            r0 = r - dr if end == 0 else r
            c_0 = col - dc if end == 0 else col
            if 0 <= r0 < rows - dr and c0 <= c_0 < c1:
                s = first + r0 * width + c_0 - c0
                j = i - dr * cols - dc if end == 0 else i + dr * cols + dc
                block = add_spring(block, x, x_t, i, j, rest[s], k[s], c[s], inv_h)
    return newton_move(x, i, block)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def descend_grid_pair(x, x_t, y, inv_mass, rest, k, c, inv_h, cols, blocks, r, col, col2):
    """descend_grid_particle for two interior particles of one colour and row, (r, col)
    and (r, col2), their spring terms interleaved (two independent dependency chains
    for the CPU to overlap; each particle's terms are summed in the same order as
    alone: the same bits); returns (|f|^2, |f2|^2) before the steps."""
    i = r * cols + col
    i2 = r * cols + col2
    block = inertia_block(x, y, i, inv_mass, inv_h)
    block2 = inertia_block(x, y, i2, inv_mass, inv_h)
    for b in range(blocks.shape[0]):
        dr, dc, first, c0 = blocks[b, 0], blocks[b, 1], blocks[b, 2], blocks[b, 3]
        width = blocks[b, 4] - c0
        s = first + (r - dr) * width + col - dc - c0
        s2 = s + col2 - col
        block = add_spring(block, x, x_t, i, i - dr * cols - dc, rest[s], k[s], c[s], inv_h)
        block2 = add_spring(block2, x, x_t, i2, i2 - dr * cols - dc, rest[s2], k[s2], c[s2],
                            inv_h)
        s = first + r * width + col - c0
        s2 = s + col2 - col
        block = add_spring(block, x, x_t, i, i + dr * cols + dc, rest[s], k[s], c[s], inv_h)
        block2 = add_spring(block2, x, x_t, i2, i2 + dr * cols + dc, rest[s2], k[s2], c[s2],
                            inv_h)
    return newton_move(x, i, block), newton_move(x, i2, block2)


@njit(cache=True, error_model="numpy", boundscheck=False)
def descend_pair_row(x, x_t, y, inv_mass, fixed, rest, k, c, inv_h, rows, cols, blocks, a,
                     p, q, r, interior, force_sq):
    """descend_grid_particle for the particles of colour q in grid row r (a call of its
    own: a prange index may arrive unsigned, and uint64 * int64 is a float in numba, so
    the row is made an int64 first), two at a time by descend_grid_pair where both are
    free and inside ``interior`` (grid_interior's bounds)."""
    row = np.int64(r)
    r_lo, r_hi, c_lo, c_hi = interior
    inside_rows = r_lo <= row < r_hi
    for start in range(p):
        if (row + a * start) % p == q:
            col = start
            while col < cols:
                i = row * cols + col
                col2 = col + p
                if (inside_rows and c_lo <= col and col2 < c_hi and not fixed[i]
                        and not fixed[i + p]):
                    force_sq[i], force_sq[i + p] = descend_grid_pair(
                        x, x_t, y, inv_mass, rest, k, c, inv_h, cols, blocks, row, col, col2)
                    col += 2 * p
                    continue
                if fixed[i]:
                    force_sq[i] = 0.0
                else:
                    force_sq[i] = descend_grid_particle(x, x_t, y, inv_mass, rest, k, c,
                                                        inv_h, rows, cols, blocks, row, col)
                col += p


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _pair_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols, blocks, a, p,
                 iterations, rho, force_sq):
    """The body of both grid sweep kernels: prange runs the rows of a colour in parallel
    in vbd_grid_sweeps_parallel and in order in vbd_grid_sweeps (no two particles of a
    colour share a spring: the same bits); returns sum |f|^2 of the last sweep, N^2,
    summed in index order in both."""
    rows = x.shape[0] // cols
    inv_h = 1.0 / h
    omega = 1.0
    if rho > 0.0:
        x_1[:] = x
    interior = grid_interior(rows, cols, blocks)
    for it in range(iterations):
        for q in range(p):
            for r in prange(rows):
                descend_pair_row(x, x_t, y, inv_mass, fixed, rest, k, c, inv_h, rows, cols,
                                 blocks, a, p, q, r, interior, force_sq)
        omega = chebyshev_accelerate(x, x_1, x_2, fixed, it, rho, omega)
    return summed(force_sq)


@njit(cache=True, error_model="numpy", boundscheck=False)
def vbd_pair_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols, blocks, a, p,
                    iterations, rho, force_sq):
    """``iterations`` serial sweeps over the grid colours; returns sum |f|^2 of the
    last, N^2."""
    return _pair_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols, blocks,
                        a, p, iterations, rho, force_sq)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def vbd_pair_sweeps_parallel(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols,
                             blocks, a, p, iterations, rho, force_sq):
    """vbd_pair_sweeps with the rows of each colour in parallel (identical results)."""
    return _pair_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols, blocks,
                        a, p, iterations, rho, force_sq)
