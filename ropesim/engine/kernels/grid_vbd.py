"""VBD kernels (integrators/vbd.py): the per-spring terms and the per-particle Newton
move that the spring-list path and the structured-grid path share, the grid's vertex
colouring, and the grid path's sweeps (every colour of every sweep in one numba call,
no index arrays: a particle's springs are found from the grid blocks).

Vertex colouring of a grid (kernels.grid.GridLayout): particle (r, c) gets colour
(r + a c) mod p, with the smallest p (and a) such that no block offset (dr, dc) has
dr + a dc = 0 mod p: then the two ends of every spring differ in colour. The cloth's
six families (bend springs two apart included) need p = 5 (a = 2): five colours.
The spring-list path uses the same colours on a grid (``grid_vertex_colouring``) and
visits a particle's springs in the same order (by spring index), with the same
arithmetic (``inertia_block``, ``add_spring``, ``newton_move``), so the two give the
same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..linalg.multigrid import _inv3 as inverse_3x3
from .grid import GridLayout
from .particles import MIN_LENGTH

#: largest colour count tried for the (r + a c) mod p pattern
MAX_GRID_COLOURS = 16


def grid_colour_pattern(layout: GridLayout) -> tuple[int, int] | None:
    """(a, p) of the colouring (r + a c) mod p (module docstring), or None."""
    offsets = [(int(dr), int(dc)) for dr, dc in layout.blocks[:, :2]]
    for p in range(2, MAX_GRID_COLOURS + 1):
        for a in range(p):
            if all((dr + a * dc) % p for dr, dc in offsets):
                return a, p
    return None


def grid_vertex_colouring(layout: GridLayout, pattern: tuple[int, int]):
    """(order, colour_starts), int64, like vertex_colouring.vertex_colouring: colour q is
    the particles (r, c) with (r + a c) mod p = q, in index order."""
    a, p = pattern
    r, c = np.divmod(np.arange(layout.rows * layout.cols), layout.cols)
    colour = (r + a * c) % p
    order = np.argsort(colour, kind="stable").astype(np.int64)
    colour_starts = np.zeros(p + 1, np.int64)
    np.cumsum(np.bincount(colour, minlength=p), out=colour_starts[1:])
    return order, colour_starts


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def spring_terms(x, x_t, i, j, rest, k, c, inv_h):
    """One spring's force on particle i (other end j) and its 3x3 block of G's Hessian
    (6 entries: xx, yy, zz, xy, xz, yz):

        f = (-k (l - L) - c/h n . (dx_i - dx_j)) n
        H = k ((1 - t) n n^T + t I) + c/h n n^T,  t = max(0, 1 - L/l)

    zero for a spring shorter than MIN_LENGTH. Branch free (an early exit kept numba
    from compiling the loops around it well)."""
    dx = x[i, 0] - x[j, 0]
    dy = x[i, 1] - x[j, 1]
    dz = x[i, 2] - x[j, 2]
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    acts = length >= MIN_LENGTH
    inv = 1.0 / length if acts else 0.0
    nx = dx * inv
    ny = dy * inv
    nz = dz * inv
    ks = k if acts else 0.0
    cs = c * inv_h if acts else 0.0
    moved = (nx * (x[i, 0] - x_t[i, 0] - x[j, 0] + x_t[j, 0])
             + ny * (x[i, 1] - x_t[i, 1] - x[j, 1] + x_t[j, 1])
             + nz * (x[i, 2] - x_t[i, 2] - x[j, 2] + x_t[j, 2]))
    mag = -ks * (length - rest) - cs * moved
    transverse = max(1.0 - rest * inv, 0.0)
    iso = ks * transverse
    axial = ks - iso + cs
    return (mag * nx, mag * ny, mag * nz, axial * nx * nx + iso, axial * ny * ny + iso,
            axial * nz * nz + iso, axial * nx * ny, axial * nx * nz, axial * ny * nz)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def inertia_block(x, y, i, inv_mass, inv_h):
    """The inertia term of particle i's block: (f = m/h^2 (y_i - x_i), H = m/h^2 I) as
    the 9-tuple (fx, fy, fz, hxx, hyy, hzz, hxy, hxz, hyz) that add_spring grows."""
    m_h2 = inv_h * inv_h / inv_mass[i]
    return (m_h2 * (y[i, 0] - x[i, 0]), m_h2 * (y[i, 1] - x[i, 1]), m_h2 * (y[i, 2] - x[i, 2]),
            m_h2, m_h2, m_h2, 0.0, 0.0, 0.0)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def add_spring(block, x, x_t, i, j, rest, k, c, inv_h):
    """block + the spring_terms of the spring from j to i, entry by entry."""
    t = spring_terms(x, x_t, i, j, rest, k, c, inv_h)
    return (block[0] + t[0], block[1] + t[1], block[2] + t[2], block[3] + t[3],
            block[4] + t[4], block[5] + t[5], block[6] + t[6], block[7] + t[7],
            block[8] + t[8])


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def newton_move(x, i, block):
    """x_i += H^-1 f for the 9-tuple block (no move if H is singular); returns |f|^2."""
    fx, fy, fz, hxx, hyy, hzz, hxy, hxz, hyz = block
    ixx, iyy, izz, ixy, ixz, iyz = inverse_3x3(hxx, hyy, hzz, hxy, hxz, hyz)
    x[i, 0] += ixx * fx + ixy * fy + ixz * fz
    x[i, 1] += ixy * fx + iyy * fy + iyz * fz
    x[i, 2] += ixz * fx + iyz * fy + izz * fz
    return fx * fx + fy * fy + fz * fz


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
def grid_interior(rows, cols, blocks):
    """(r_lo, r_hi, c_lo, c_hi): the particles (r, c), r in [r_lo, r_hi), c in [c_lo,
    c_hi), that have both springs of every block (descend_grid_pair's particles)."""
    r_lo, r_hi, c_lo, c_hi = 0, rows, 0, cols
    for b in range(blocks.shape[0]):
        dr, dc, c0, c1 = blocks[b, 0], blocks[b, 1], blocks[b, 3], blocks[b, 4]
        r_lo = max(r_lo, dr)
        r_hi = min(r_hi, rows - dr)
        c_lo = max(c_lo, max(c0, c0 + dc))
        c_hi = min(c_hi, min(c1, c1 + dc))
    return r_lo, r_hi, c_lo, c_hi


@njit(cache=True, error_model="numpy", boundscheck=False)
def descend_grid_row(x, x_t, y, inv_mass, fixed, rest, k, c, inv_h, rows, cols, blocks, a,
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


@njit(cache=True, error_model="numpy", boundscheck=False)
def chebyshev_step(x, x_1, x_2, fixed, omega, iteration):
    """x = omega (x - x_2) + x_2 (from the second iteration on), then x_2 = x_1, x_1 = x:
    x_1, x_2 are the iterates one and two iterations back."""
    for i in range(x.shape[0]):
        for d in range(3):
            if iteration > 0 and not fixed[i]:
                x[i, d] = omega * (x[i, d] - x_2[i, d]) + x_2[i, d]
            x_2[i, d] = x_1[i, d]
            x_1[i, d] = x[i, d]


@njit(cache=True, inline="always")
def chebyshev_omega(iteration, rho, omega):
    """The Chebyshev weight of an iteration (0-based) from the previous weight."""
    if iteration == 0:
        return 1.0
    if iteration == 1:
        return 2.0 / (2.0 - rho * rho)
    return 4.0 / (4.0 - rho * rho * omega)


@njit(cache=True, inline="always")
def chebyshev_accelerate(x, x_1, x_2, fixed, iteration, rho, omega):
    """After a sweep: the Chebyshev step with the next weight when rho > 0 (x_1, x_2
    the iterates one and two iterations back); returns the weight (1 while off)."""
    if rho > 0.0:
        omega = chebyshev_omega(iteration, rho, omega)
        chebyshev_step(x, x_1, x_2, fixed, omega, iteration)
    return omega


@njit(cache=True, inline="always")
def summed(values):
    """The sum of a 1-d array in index order (the same bits whatever ran before)."""
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i]
    return total


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def _grid_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols, blocks, a, p,
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
                descend_grid_row(x, x_t, y, inv_mass, fixed, rest, k, c, inv_h, rows, cols,
                                 blocks, a, p, q, r, interior, force_sq)
        omega = chebyshev_accelerate(x, x_1, x_2, fixed, it, rho, omega)
    return summed(force_sq)


@njit(cache=True, error_model="numpy", boundscheck=False)
def vbd_grid_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols, blocks, a, p,
                    iterations, rho, force_sq):
    """``iterations`` serial sweeps over the grid colours; returns sum |f|^2 of the
    last, N^2."""
    return _grid_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols, blocks,
                        a, p, iterations, rho, force_sq)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def vbd_grid_sweeps_parallel(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols,
                             blocks, a, p, iterations, rho, force_sq):
    """vbd_grid_sweeps with the rows of each colour in parallel (identical results)."""
    return _grid_sweeps(x, x_t, y, x_1, x_2, inv_mass, fixed, rest, k, c, h, cols, blocks,
                        a, p, iterations, rho, force_sq)
