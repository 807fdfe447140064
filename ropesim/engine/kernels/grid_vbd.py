"""VBD kernels (integrators/vbd.py): the per-spring terms and the per-particle Newton
move that the spring-list path and the structured-grid path share, the grid's vertex
colouring, and the grid path's whole step (start, every colour of every sweep, end in
one numba call, no index arrays: a particle's springs are found from the grid blocks).

Vertex colouring of a grid (kernels.grid.GridLayout): particle (r, c) gets colour
(a r + c) mod p, with the smallest p (and a) such that no block offset (dr, dc) has
a dr + dc = 0 mod p: then the two ends of every spring differ in colour. The cloth's
six families (bend springs two apart included) need p = 5 (a = 2): five colours.
The spring-list path uses the same colours on a grid (``grid_vertex_colouring``) and
visits a particle's springs in the same order (by spring index), with the same
arithmetic (``inertia_block``, ``add_spring``, ``newton_move``), so the two give the
same bits.

Layout (``sweep_layout``): the grid sweeps work on a structure-of-arrays copy of the
step (written by the step's start, ``grid_begin_row``, read back by its end,
``grid_end_row``, both by rows in parallel) in which each colour's particles lie row
after row: (r, c) of colour q is entry base[q] + width r + (c + a r - q) / p, a linear
map, so the other end of a particle's spring of one block, (r +- dr, c +- dc), is
always the same number of entries away (``near``), and a colour's rows r0 .. r1 are
one contiguous range. ``width`` is a little more than cols / p: the padding entries
between rows (fixed, no springs) are where a spring that does not exist points, so no
test of whether it exists is needed: its coefficients (rest length, k and c/h, stored
per block at the entry of the spring's first end) are zero and it adds nothing.
``descend_run`` builds the blocks of RUN consecutive entries together, one loop over
them per spring family and direction, which LLVM turns into 4-wide vector code (AVX2,
float64); the arithmetic and its order per particle are the spring-list path's, so
the bits too. (Rows of a fifth of the grid's width, as in an earlier layout, left
vector loops of 26 entries with long scalar tails: 12-14 ns a spring term against
about 6 in runs of 128.)

Bands (``band_schedule``): colour by colour, a step is 5 x 10 colour updates, each a
parallel region (a fork and a join: 50 a step, each waiting for the slower thread).
An update of row r reads only rows r - reach .. r + reach (reach = the largest dr, 2
on the cloth), so a run of several updates can go without a join: the rows are cut
at one seam per task, and each task runs the updates in order on its band, shrinking
it by ``reach`` rows at each inner seam per update (what it leaves out depends on the
neighbouring band's rows); a second region then runs, around each seam, the rows left
out, growing by ``reach`` per update. Every row sees its neighbours as in
colour-by-colour order (the same bits), and the 128 x 128 cloth's 50 updates run in 8
regions (four runs of 12-13 updates, two regions each). The serial kernel runs the
one-task schedule, colour by colour over all rows.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..linalg.multigrid import _inv3 as inverse_3x3
from .grid import GridLayout
from .particles import MIN_LENGTH, hold, speed_result, track_speed
from .vbd_guess import particle_guess

#: largest colour count tried for the (a r + c) mod p pattern
MAX_GRID_COLOURS = 16
#: consecutive layout entries of one colour whose blocks one vectorised loop builds
#: (descend_run: a 9 x RUN block of accumulators, 9 KB, in L1; 64 and 120 measured no
#: faster on the 128 x 128 cloth)
RUN = 128
#: j RUN as unsigned offsets (acc[j RUN + t] with an unsigned t: no wraparound test)
(STRIDE_1, STRIDE_2, STRIDE_3, STRIDE_4, STRIDE_5, STRIDE_6, STRIDE_7,
 STRIDE_8) = (np.uint64(j * RUN) for j in range(1, 9))
#: the rows of the sweep layout's soa array: positions, step-start positions, inertia
#: targets, and Chebyshev's iterates one and two sweeps back (3 rows each)
SOA_X, SOA_T, SOA_Y, SOA_X1, SOA_X2 = 0, 3, 6, 9, 12
SOA_ROWS = 15


def grid_colour_pattern(layout: GridLayout) -> tuple[int, int] | None:
    """(a, p) of the colouring (a r + c) mod p (module docstring), or None."""
    offsets = [(int(dr), int(dc)) for dr, dc in layout.blocks[:, :2]]
    for p in range(2, MAX_GRID_COLOURS + 1):
        for a in range(p):
            if all((a * dr + dc) % p for dr, dc in offsets):
                return a, p
    return None


def grid_vertex_colouring(layout: GridLayout, pattern: tuple[int, int]):
    """(order, colour_starts), int64, like vertex_colouring.vertex_colouring: colour q is
    the particles (r, c) with (a r + c) mod p = q, in index order."""
    a, p = pattern
    r, c = np.divmod(np.arange(layout.rows * layout.cols), layout.cols)
    colour = (a * r + c) % p
    order = np.argsort(colour, kind="stable").astype(np.int64)
    colour_starts = np.zeros(p + 1, np.int64)
    np.cumsum(np.bincount(colour, minlength=p), out=colour_starts[1:])
    return order, colour_starts


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def spring_terms_of(xi0, xi1, xi2, ti0, ti1, ti2, xj0, xj1, xj2, tj0, tj1, tj2, rest, k,
                    c_h):
    """One spring's force on particle i (at x_i, step start t_i; other end x_j, t_j) and
    its 3x3 block of G's Hessian (6 entries: xx, yy, zz, xy, xz, yz), c_h = c / h:

        f = (-k (l - L) - c/h n . (dx_i - dx_j)) n
        H = k ((1 - t) n n^T + t I) + c/h n n^T,  t = max(0, 1 - L/l)

    zero for a spring shorter than MIN_LENGTH. Branch free (an early exit kept numba
    from compiling the loops around it well, and selects let the grid runs vectorise)."""
    dx = xi0 - xj0
    dy = xi1 - xj1
    dz = xi2 - xj2
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    acts = length >= MIN_LENGTH
    inv = 1.0 / length if acts else 0.0
    nx = dx * inv
    ny = dy * inv
    nz = dz * inv
    ks = k if acts else 0.0
    cs = c_h if acts else 0.0
    moved = (nx * (xi0 - ti0 - xj0 + tj0) + ny * (xi1 - ti1 - xj1 + tj1)
             + nz * (xi2 - ti2 - xj2 + tj2))
    mag = -ks * (length - rest) - cs * moved
    transverse = max(1.0 - rest * inv, 0.0)
    iso = ks * transverse
    axial = ks - iso + cs
    return (mag * nx, mag * ny, mag * nz, axial * nx * nx + iso, axial * ny * ny + iso,
            axial * nz * nz + iso, axial * nx * ny, axial * nx * nz, axial * ny * nz)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def spring_terms(x, x_t, i, j, rest, k, c, inv_h):
    """spring_terms_of the spring from j to i of the (n, 3) positions x (x_t: the step's
    start), c in N s/m, inv_h = 1/h."""
    return spring_terms_of(x[i, 0], x[i, 1], x[i, 2], x_t[i, 0], x_t[i, 1], x_t[i, 2],
                           x[j, 0], x[j, 1], x[j, 2], x_t[j, 0], x_t[j, 1], x_t[j, 2], rest,
                           k, c * inv_h)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def inertia_block(x, y, i, inv_mass, inv_h):
    """The inertia term of particle i's block: (f = m/h^2 (y_i - x_i), H = m/h^2 I) as
    the 9-tuple (fx, fy, fz, hxx, hyy, hzz, hxy, hxz, hyz) that add_spring grows."""
    return inertia_of(inv_h * inv_h / inv_mass[i], x[i, 0], x[i, 1], x[i, 2], y[i, 0],
                      y[i, 1], y[i, 2])


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def inertia_of(m_h2, x0, x1, x2, y0, y1, y2):
    """inertia_block of a particle at x with inertia target y, m_h2 = m/h^2 (kg/s^2)."""
    return (m_h2 * (y0 - x0), m_h2 * (y1 - x1), m_h2 * (y2 - x2), m_h2, m_h2, m_h2, 0.0, 0.0,
            0.0)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def plus_terms(block, t):
    """block + t, entry by entry (two 9-tuples)."""
    return (block[0] + t[0], block[1] + t[1], block[2] + t[2], block[3] + t[3],
            block[4] + t[4], block[5] + t[5], block[6] + t[6], block[7] + t[7],
            block[8] + t[8])


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def add_spring(block, x, x_t, i, j, rest, k, c, inv_h):
    """block + the spring_terms of the spring from j to i, entry by entry."""
    return plus_terms(block, spring_terms(x, x_t, i, j, rest, k, c, inv_h))


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def newton_delta(block):
    """(H^-1 f, |f|^2) for the 9-tuple block: the move (dx, dy, dz) of one Newton step
    (none if H is singular) and the squared force before it."""
    fx, fy, fz, hxx, hyy, hzz, hxy, hxz, hyz = block
    ixx, iyy, izz, ixy, ixz, iyz = inverse_3x3(hxx, hyy, hzz, hxy, hxz, hyz)
    return (ixx * fx + ixy * fy + ixz * fz, ixy * fx + iyy * fy + iyz * fz,
            ixz * fx + iyz * fy + izz * fz, fx * fx + fy * fy + fz * fz)


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def newton_move(x, i, block):
    """x_i += H^-1 f for the 9-tuple block (no move if H is singular); returns |f|^2."""
    dx, dy, dz, force_sq = newton_delta(block)
    x[i, 0] += dx
    x[i, 1] += dy
    x[i, 2] += dz
    return force_sq


def sweep_layout(rows: int, cols: int, blocks: np.ndarray, pattern: tuple[int, int]):
    """(width, base, near) of the sweep layout (module docstring, "Layout"): particle
    (r, c) of colour q = (a r + c) mod p is entry base[q] + width r + (c + a r - q) / p;
    near (nb, p, 2) int64: for block b and colour q, the entry of the other end of a
    particle's spring from (r - dr, c - dc) (end 0) and to (r + dr, c + dc) (end 1)
    minus its own entry. ``width`` (> (cols - 1 + max |dc|) / p) keeps the columns
    within max |dc| outside the grid off the other rows' particles, so a spring that
    does not exist points at padding or at an entry whose coefficients for that block
    are zero; margins of 2 max dr + 2 rows around each colour's entries take the rows
    outside the grid."""
    a, p = pattern
    reach_c = int(np.abs(blocks[:, 1]).max()) if len(blocks) else 0
    reach_r = int(blocks[:, 0].max()) if len(blocks) else 0
    width = (cols - 1 + reach_c) // p + 1
    margin = (2 * reach_r + 2) * width + p
    base = np.zeros(p + 1, np.int64)
    start = margin
    for q in range(p):
        base[q] = start
        start += width * rows + (a * rows - q + p - 1) // p + margin
    base[p] = start
    near = np.zeros((len(blocks), p, 2), np.int64)
    for b, (dr, dc) in enumerate(blocks[:, :2].tolist()):
        for q in range(p):
            for end, sign in ((0, -1), (1, 1)):
                other = (q + sign * (a * dr + dc)) % p
                near[b, q, end] = (base[other] - base[q] + sign * width * dr
                                   + (sign * (dc + a * dr) + q - other) // p)
    return width, base, near


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def layout_entry(base, width, a, p, r, c):
    """The sweep layout's entry of grid particle (r, c) (sweep_layout)."""
    q = (a * r + c) % p
    return base[q] + width * r + (c + a * r - q) // p


@njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
def row_start(base, width, a, p, q, r):
    """The first entry of colour q at or after grid row r (rows r .. r2 - 1 of colour q
    are the entries row_start(q, r) .. row_start(q, r2), padding included)."""
    return base[q] + width * r + (a * r - q + p - 1) // p


def grid_scratch(rows: int, cols: int, blocks: np.ndarray, pattern: tuple[int, int],
                 tasks: int, dtype, rest_dtype, k_dtype):
    """The grid step's layout and work arrays: (width, base, near, soa, m_h2, fix, fsq,
    rest_b, k_b, ch_b, acc, squares, row_speed) (``vbd_grid_step``; acc: a 9 x RUN
    block of accumulators for each of ``tasks`` parallel tasks); soa in the state's
    dtype and rest_b, k_b in the parameters' (the arithmetic is the spring-list
    kernels', type for type). Padding entries are fixed and have no springs."""
    width, base, near = sweep_layout(rows, cols, blocks, pattern)
    slots = int(base[-1])
    return (width, base, near, np.zeros((SOA_ROWS, slots), dtype), np.ones(slots),
            np.ones(slots, np.uint8), np.zeros(slots),
            np.zeros((len(blocks), slots), rest_dtype),
            np.zeros((len(blocks), slots), k_dtype), np.zeros((len(blocks), slots)),
            np.zeros((tasks, 9 * RUN)), np.zeros(3 * rows * cols), np.zeros((rows, 2)))


def band_schedule(rows: int, reach: int, tasks: int, colours: int, iterations: int,
                  chebyshev: bool):
    """The grid sweeps' run order in few parallel regions (module docstring, "Bands").

    ``iterations`` sweeps over ``colours`` colours are the colour updates u = 0 .. U - 1
    (colour u mod colours, sweep u // colours); a particle's update reads the rows
    within ``reach`` of its own. The rows are cut at ``tasks`` seams; a group of
    consecutive updates runs in two regions of ``tasks`` parallel tasks: first each band
    between two seams shrinking by ``reach`` rows at each inner seam per update (task 0
    holds the two edge bands), then around each seam the rows left out, growing. Every
    row then sees its neighbours exactly as in colour-by-colour order (the same bits),
    with no two tasks of a region within ``reach`` rows of each other. Groups are as
    long as the seams' spacing allows; with ``chebyshev`` none spans two sweeps (the
    Chebyshev step follows a sweep).

    Returns (steps, starts, sweeps_done): steps (n, 3) int64 rows (update, row_lo,
    row_hi); region g's task t runs steps[starts[g tasks + t] : starts[g tasks + t + 1]]
    in order; sweeps_done[g] is the sweep that region g completes if a Chebyshev step
    follows it, else -1."""
    seams = sorted({(2 * j + 1) * rows // (2 * tasks) for j in range(tasks)} - {0, rows}
                   if tasks > 1 else set())
    updates = iterations * colours
    span = updates
    if reach and len(seams) > 1:  # two seams' growing rows stay > reach rows apart
        gap = min(b - a for a, b in zip(seams, seams[1:]))
        span = max(1, (gap - reach) // (2 * reach) + 1)
    stretch = colours if chebyshev else updates
    steps: list[tuple[int, int, int]] = []
    starts, sweeps_done = [0], []

    def region(entries_of_task) -> None:
        for task in range(tasks):
            steps.extend(entries_of_task(task))
            starts.append(len(steps))

    def bands(task: int, first: int, count: int):
        if not seams:
            return [(first + s, 0, rows) for s in range(count)] if task == 0 else []
        if task == 0:  # the two edge bands: they shrink at their seam only
            return [e for s in range(count) for e in ((first + s, 0, seams[0] - reach * s),
                                                      (first + s, seams[-1] + reach * s, rows))
                    if e[1] < e[2]]
        if task < len(seams):
            return [(first + s, seams[task - 1] + reach * s, seams[task] - reach * s)
                    for s in range(count) if seams[task - 1] + reach * s
                    < seams[task] - reach * s]
        return []

    def around_seam(task: int, first: int, count: int):
        if task >= len(seams):
            return []
        b = seams[task]
        return [(first + s, max(0, b - reach * s), min(rows, b + reach * s))
                for s in range(1, count) if reach * s > 0]

    for lo in range(0, updates, stretch):
        length = min(stretch, updates - lo)
        groups = -(-length // span)
        first = lo
        for g in range(groups):
            count = (length * (g + 1)) // groups - (length * g) // groups
            region(lambda task: bands(task, first, count))
            sweeps_done.append(-1)
            if count > 1 and seams and reach:
                region(lambda task: around_seam(task, first, count))
                sweeps_done.append(-1)
            first += count
        if chebyshev:
            sweeps_done[-1] = (lo + length) // colours - 1
    return (np.array(steps, np.int64).reshape(-1, 3), np.array(starts, np.int64),
            np.array(sweeps_done, np.int64))


@njit(cache=True, error_model="numpy", boundscheck=False)
def grid_begin_row(x, v, v_last, inv_mass, fixed, gravity, external, has_external, h, mode,
                   have_history, stiffness, iterations, cols, a, p, base, width, soa, m_h2,
                   fix, squares, r):
    """The step's start for grid row r, straight into the sweep layout, as vbd.vbd_begin
    does it: particle_guess (vbd_guess.py) into soa's rows (guess, start, inertia
    target), m/h^2 (kg/s^2), the fixed flags, the squares of r = m (y - x) / h^2 (N^2)
    at 3 i + d (0 for fixed particles) and v_last = v."""
    row = np.int64(r)
    inv_h = 1.0 / h
    for col in range(cols):
        i = row * cols + col
        e = layout_entry(base, width, a, p, row, col)
        for d in range(3):
            soa[SOA_T + d, e] = x[i, d]
            soa[SOA_Y + d, e] = x[i, d]
            soa[SOA_X + d, e] = x[i, d]
        m_h2[e] = inv_h * inv_h / inv_mass[i]
        fix[e] = fixed[i]
        if fixed[i]:
            for d in range(3):
                squares[3 * i + d] = 0.0
        else:
            (soa[SOA_Y, e], soa[SOA_Y + 1, e], soa[SOA_Y + 2, e], soa[SOA_X, e],
             soa[SOA_X + 1, e], soa[SOA_X + 2, e]) = particle_guess(
                x[i, 0], x[i, 1], x[i, 2], v[i, 0], v[i, 1], v[i, 2], v_last[i, 0],
                v_last[i, 1], v_last[i, 2], inv_mass[i], gravity[0], gravity[1],
                gravity[2], inv_mass[i] * external[i, 0] if has_external else 0.0,
                inv_mass[i] * external[i, 1] if has_external else 0.0,
                inv_mass[i] * external[i, 2] if has_external else 0.0, h, mode,
                have_history, stiffness[i], iterations)
            m_h2_r = 1.0 / (inv_mass[i] * h * h)
            for d in range(3):
                residual = m_h2_r * (soa[SOA_Y + d, e] - soa[SOA_T + d, e])
                squares[3 * i + d] = residual * residual
        for d in range(3):
            v_last[i, d] = v[i, d]


@njit(cache=True, error_model="numpy", boundscheck=False)
def grid_soa_springs(rest, k, c, inv_h, rows, cols, blocks, a, p, base, width, rest_b, k_b,
                     ch_b):
    """Each spring's rest length, k and c/h into row b (its block) of rest_b, k_b, ch_b
    at its first end's layout entry (kept between steps: integrators/vbd.py copies them
    again after a spring edit or a change of dt; where no spring starts they stay 0)."""
    for b in range(blocks.shape[0]):
        dr, first, c0, c1 = blocks[b, 0], blocks[b, 2], blocks[b, 3], blocks[b, 4]
        for r in range(rows - dr):
            for col in range(c0, c1):
                s = first + r * (c1 - c0) + col - c0
                e = layout_entry(base, width, a, p, r, col)
                rest_b[b, e] = rest[s]
                k_b[b, e] = k[s]
                ch_b[b, e] = c[s] * inv_h


@njit(cache=True, error_model="numpy", boundscheck=False)
def grid_end_row(x, v, force_sq, fixed, h, damp, cols, a, p, base, width, soa, fsq,
                 row_speed, r):
    """The step's end for grid row r, from the sweep layout: x, force_sq (N^2), v = (x -
    x_t) / h then drag (v = 0 for fixed particles, which kept x_t), and the row's max
    |v|^2 and NaN check sum (particles.track_speed) into row_speed[r]."""
    row = np.int64(r)
    max_sq, bad = 0.0, 0.0
    for col in range(cols):
        i = row * cols + col
        e = layout_entry(base, width, a, p, row, col)
        for d in range(3):
            x[i, d] = soa[SOA_X + d, e]
        force_sq[i] = fsq[e]
        if fixed[i]:
            hold(v, i, 0.0)
            continue
        for d in range(3):
            v[i, d] = (x[i, d] - soa[SOA_T + d, e]) / h * damp
        max_sq, bad = track_speed(x, v, i, max_sq, bad, 0.0)
    row_speed[row, 0] = max_sq
    row_speed[row, 1] = bad


@njit(cache=True, error_model="numpy", boundscheck=False)
def add_spring_run(soa, rest_b, k_b, ch_b, b, acc, first, other, spring, count):
    """acc[j RUN + t] += spring_terms_of(...)[j], t < count: the springs of block b
    between the layout entries first + t (the particles moved) and other + t, spring
    + t the entry their parameters are at (zero where the spring does not exist: it
    adds 0). Unsigned indices (no wraparound test) and contiguous entries: LLVM
    vectorises the loop."""
    e0, o0, s0 = np.uint64(first), np.uint64(other), np.uint64(spring)
    for t in range(np.uint64(count)):
        e, o, s = e0 + t, o0 + t, s0 + t
        f = spring_terms_of(soa[SOA_X, e], soa[SOA_X + 1, e], soa[SOA_X + 2, e],
                            soa[SOA_T, e], soa[SOA_T + 1, e], soa[SOA_T + 2, e],
                            soa[SOA_X, o], soa[SOA_X + 1, o], soa[SOA_X + 2, o],
                            soa[SOA_T, o], soa[SOA_T + 1, o], soa[SOA_T + 2, o],
                            rest_b[b, s], k_b[b, s], ch_b[b, s])
        acc[t] += f[0]
        acc[STRIDE_1 + t] += f[1]
        acc[STRIDE_2 + t] += f[2]
        acc[STRIDE_3 + t] += f[3]
        acc[STRIDE_4 + t] += f[4]
        acc[STRIDE_5 + t] += f[5]
        acc[STRIDE_6 + t] += f[6]
        acc[STRIDE_7 + t] += f[7]
        acc[STRIDE_8 + t] += f[8]


@njit(cache=True, error_model="numpy", boundscheck=False)
def descend_run(soa, m_h2, fix, fsq, rest_b, k_b, ch_b, acc, near, q, first, count):
    """One Newton step each for the layout entries first .. first + count - 1 (count
    <= RUN) of colour q: their blocks built together in acc (9 x RUN: the inertia term,
    then block by block the spring ending at them and the one starting at them:
    spring-index order, as in the spring-list path: the same bits), then the moves;
    fixed particles and padding keep their place (a select, not a branch)."""
    e0 = np.uint64(first)
    for t in range(count):
        e = e0 + np.uint64(t)
        block = inertia_of(m_h2[e], soa[SOA_X, e], soa[SOA_X + 1, e], soa[SOA_X + 2, e],
                           soa[SOA_Y, e], soa[SOA_Y + 1, e], soa[SOA_Y + 2, e])
        acc[t], acc[RUN + t], acc[2 * RUN + t] = block[0], block[1], block[2]
        acc[3 * RUN + t], acc[4 * RUN + t], acc[5 * RUN + t] = block[3], block[4], block[5]
        acc[6 * RUN + t], acc[7 * RUN + t], acc[8 * RUN + t] = block[6], block[7], block[8]
    for b in range(near.shape[0]):
        start = first + near[b, q, 0]  # the springs from (r - dr, c - dc)
        add_spring_run(soa, rest_b, k_b, ch_b, b, acc, first, start, start, count)
        add_spring_run(soa, rest_b, k_b, ch_b, b, acc, first, first + near[b, q, 1], first,
                       count)  # the springs from (r, c) to (r + dr, c + dc)
    for t in range(count):
        e = e0 + np.uint64(t)
        dx, dy, dz, force_sq = newton_delta((acc[t], acc[RUN + t], acc[2 * RUN + t],
                                             acc[3 * RUN + t], acc[4 * RUN + t],
                                             acc[5 * RUN + t], acc[6 * RUN + t],
                                             acc[7 * RUN + t], acc[8 * RUN + t]))
        free = fix[e] == 0
        x0, x1, x2 = soa[SOA_X, e], soa[SOA_X + 1, e], soa[SOA_X + 2, e]
        soa[SOA_X, e] = x0 + dx if free else x0
        soa[SOA_X + 1, e] = x1 + dy if free else x1
        soa[SOA_X + 2, e] = x2 + dz if free else x2
        fsq[e] = force_sq if free else 0.0


@njit(cache=True, error_model="numpy", boundscheck=False)
def descend_steps(soa, m_h2, fix, fsq, rest_b, k_b, ch_b, acc, near, a, p, base, width,
                  steps, starts, region, tasks, t):
    """Task t of band_schedule's region ``region`` (of ``tasks`` tasks each): its entries
    of steps, each one colour's Newton steps on a range of grid rows (one contiguous
    range of the layout, in runs of RUN: descend_run), in order (a call of its own: the
    prange index t may arrive unsigned, and uint64 + int64 is a float in numba)."""
    task = np.int64(t)
    slot = region * tasks + task
    scratch = acc[task]
    for s in range(starts[slot], starts[slot + 1]):
        q = steps[s, 0] % p
        lo = row_start(base, width, a, p, q, steps[s, 1])
        hi = row_start(base, width, a, p, q, steps[s, 2])
        for first in range(lo, hi, RUN):
            descend_run(soa, m_h2, fix, fsq, rest_b, k_b, ch_b, scratch, near, q, first,
                        min(RUN, hi - first))


@njit(cache=True, error_model="numpy", boundscheck=False)
def copy_rows(soa, source, target):
    """soa[target + d] = soa[source + d], d < 3."""
    for d in range(3):
        for e in range(soa.shape[1]):
            soa[target + d, e] = soa[source + d, e]


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
def _grid_step(x, v, v_last, inv_mass, fixed, rest, k, c, stiffness, forces, guess, h, damp,
               cols, blocks, a, p, schedule, rho, force_sq, scratch, load_springs):
    """The body of both grid step kernels: the start (grid_begin_row), the sweeps in
    band_schedule's order, the end (grid_end_row); prange runs the rows of the start
    and end and each region's tasks in parallel in vbd_grid_step_parallel and in order in
    vbd_grid_step (no two tasks of a region touch each other's rows' neighbours: the
    same bits). Returns (sum |f|^2 of the last sweep, N^2; sum |m (y - x_t) / h^2|^2
    over free particles, N^2; the max |v|^2 or NaN), the sums in index order in both.
    ``load_springs``: copy the springs' coefficients into rest_b, k_b, ch_b first (else
    they are the last call's)."""
    gravity, external, has_external = forces
    mode, have_history, iterations = guess
    steps, starts, sweeps_done = schedule
    (width, base, near, soa, m_h2, fix, fsq, rest_b, k_b, ch_b, acc, squares,
     row_speed) = scratch
    rows = x.shape[0] // cols
    for r in prange(rows):
        grid_begin_row(x, v, v_last, inv_mass, fixed, gravity, external, has_external, h,
                       mode, have_history, stiffness, iterations, cols, a, p, base, width,
                       soa, m_h2, fix, squares, np.int64(r))
    scale = summed(squares)
    if load_springs:
        grid_soa_springs(rest, k, c, 1.0 / h, rows, cols, blocks, a, p, base, width, rest_b,
                         k_b, ch_b)
    omega = 1.0
    if rho > 0.0:
        copy_rows(soa, SOA_X, SOA_X1)
    tasks = (starts.shape[0] - 1) // sweeps_done.shape[0]
    for g in range(sweeps_done.shape[0]):
        for t in prange(tasks):
            descend_steps(soa, m_h2, fix, fsq, rest_b, k_b, ch_b, acc, near, a, p, base,
                          width, steps, starts, g, tasks, np.int64(t))
        if sweeps_done[g] >= 0:
            omega = chebyshev_accelerate(soa[SOA_X:SOA_X + 3].T, soa[SOA_X1:SOA_X1 + 3].T,
                                         soa[SOA_X2:SOA_X2 + 3].T, fix, sweeps_done[g], rho,
                                         omega)
    for r in prange(rows):
        grid_end_row(x, v, force_sq, fixed, h, damp, cols, a, p, base, width, soa, fsq,
                     row_speed, np.int64(r))
    max_sq, bad = 0.0, 0.0
    for r in range(rows):
        max_sq = max(max_sq, row_speed[r, 0])
        bad += row_speed[r, 1]
    return summed(force_sq), scale, speed_result(max_sq, bad)


@njit(cache=True, error_model="numpy", boundscheck=False)
def vbd_grid_step(x, v, v_last, inv_mass, fixed, rest, k, c, stiffness, forces, guess, h,
                  damp, cols, blocks, a, p, schedules, rho, force_sq, scratch, load_springs):
    """A whole VBD step on a grid, serial: x, v and v_last (m, m/s) updated from the
    Params arrays, stiffness (stiffness_sums, N/m), forces = (gravity m/s^2, f_ext (n, 3)
    N, whether f_ext acts), guess = (initialisation mode, have_history, sweeps), h (s),
    damp (the drag factor), the grid (cols, blocks, a, p), schedules = (one task's
    band_schedule, the parallel step's: this kernel runs the first, colour by colour
    over all rows), Chebyshev's rho and scratch (grid_scratch); force_sq (N^2) per
    particle after the last sweep. Returns (sum |f|^2, the residual's scale, max
    |v|^2): _grid_step."""
    return _grid_step(x, v, v_last, inv_mass, fixed, rest, k, c, stiffness, forces, guess,
                      h, damp, cols, blocks, a, p, schedules[0], rho, force_sq, scratch,
                      load_springs)


@njit(cache=True, error_model="numpy", boundscheck=False, parallel=True)
def vbd_grid_step_parallel(x, v, v_last, inv_mass, fixed, rest, k, c, stiffness, forces,
                           guess, h, damp, cols, blocks, a, p, schedules, rho, force_sq,
                           scratch, load_springs):
    """vbd_grid_step with the rows and, in the second of the schedules, the regions'
    tasks in parallel (identical results)."""
    return _grid_step(x, v, v_last, inv_mass, fixed, rest, k, c, stiffness, forces, guess,
                      h, damp, cols, blocks, a, p, schedules[1], rho, force_sq, scratch,
                      load_springs)
