"""The self-collision pass written with Warp's hash grid (``wp.HashGrid``), CPU, for the
comparison in time_collisions.py.

The same pass as ropesim's (engine/collisions) for a cloth, whose primitives are all
particles: every pair of particles closer than ``thickness`` (m) that is not excluded
(joined by a spring, or closer than EXCLUDE_FACTOR x thickness in the rest shape) is
pushed apart to the thickness with mass-weighted corrections, and the approaching part
of its relative normal velocity is removed with Coulomb friction on the tangential part.
Written the way Warp's own examples do it: per call the grid is rebuilt from the
positions (``HashGrid.build``, a sort on the cell keys), then one thread per particle
queries the grid within the thickness and sums its own share of every contact's
correction (a Jacobi pass; each pair is seen from both ends, so the corrections are
equal and opposite), and a second kernel applies them. One Jacobi pass per call (ropesim
runs up to ITERATIONS Gauss-Seidel passes, stopping at the first pass without contact).
"""

from __future__ import annotations

import functools

import numpy as np

from peers import _adjacency, _warp as _warp_initialised
from workload import ClothArrays


@functools.cache
def _warp():
    """(wp, (collide, apply)): Warp set up as peers.py does, and this pass's kernels."""
    wp, _ = _warp_initialised()

    @wp.kernel
    def collide(grid: wp.uint64, x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                inv_mass: wp.array(dtype=wp.float32), rest_x: wp.array(dtype=wp.vec3),
                start: wp.array(dtype=wp.int32), other: wp.array(dtype=wp.int32),
                thickness: wp.float32, exclude_sq: wp.float32, friction: wp.float32,
                dx: wp.array(dtype=wp.vec3), dv: wp.array(dtype=wp.vec3)):
        tid = wp.tid()
        i = wp.hash_grid_point_id(grid, tid)
        xi = x[i]
        wi = inv_mass[i]
        shift = wp.vec3(0.0, 0.0, 0.0)
        kick = wp.vec3(0.0, 0.0, 0.0)
        query = wp.hash_grid_query(grid, xi, thickness)
        j = int(0)
        while wp.hash_grid_query_next(query, j):
            if j == i:
                continue
            d = xi - x[j]
            dist = wp.length(d)
            if dist >= thickness or dist < 1.0e-12:
                continue
            r = rest_x[i] - rest_x[j]
            if wp.dot(r, r) < exclude_sq:
                continue
            joined = int(0)
            for u in range(start[i], start[i + 1]):
                if other[u] == j:
                    joined = 1
            if joined == 1:
                continue
            total = wi + inv_mass[j]
            if total <= 0.0:
                continue
            n = d / dist
            shift += wi * (thickness - dist) / total * n
            rel = v[i] - v[j]
            vn = wp.dot(rel, n)
            if vn < 0.0:
                jn = -vn / total
                t = rel - vn * n
                vt = wp.length(t)
                impulse = jn * n
                if vt > 0.0:
                    impulse -= wp.min(vt / total, friction * jn) / vt * t
                kick += wi * impulse
        dx[i] = shift
        dv[i] = kick

    @wp.kernel
    def apply(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
              dx: wp.array(dtype=wp.vec3), dv: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        x[i] = x[i] + dx[i]
        v[i] = v[i] + dv[i]

    return wp, (collide, apply)


class WarpHashGridPass:
    """pass_(x, v) runs the pass on float32 (n, 3) arrays in place (copied in and out of
    Warp arrays outside the timed part: see ``load`` and ``store``)."""

    name = "warp-hashgrid"
    threads = 1  # Warp runs CPU kernels on one thread

    def __init__(self, cloth: ClothArrays, thickness: float, exclude_factor: float,
                 friction: float):
        wp, (self._collide, self._apply) = _warp()
        self.wp = wp
        n = cloth.n_particles
        inv_mass = np.full(n, 1.0 / cloth.mass, np.float32)
        inv_mass[cloth.pinned] = 0.0
        start, other, _ = _adjacency(cloth)
        dev = "cpu"
        self.x = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.v = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.dx = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.dv = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.inv_mass = wp.array(inv_mass, dtype=wp.float32, device=dev)
        self.rest_x = wp.array(cloth.positions.astype(np.float32), dtype=wp.vec3, device=dev)
        self.start = wp.array(start, dtype=wp.int32, device=dev)
        self.other = wp.array(other, dtype=wp.int32, device=dev)
        dim = 128
        self.grid = wp.HashGrid(dim, dim, dim, device=dev)
        self.n = n
        self.thickness = float(thickness)
        self.exclude_sq = float((exclude_factor * thickness) ** 2)
        self.friction = float(friction)

    def load(self, x: np.ndarray, v: np.ndarray) -> None:
        self.x.numpy()[:] = x
        self.v.numpy()[:] = v

    def store(self, x: np.ndarray, v: np.ndarray) -> None:
        x[:] = self.x.numpy()
        v[:] = self.v.numpy()

    def pass_(self) -> None:
        """The timed part: grid build, the contact kernel, the update."""
        wp = self.wp
        self.grid.build(self.x, self.thickness)
        wp.launch(self._collide, dim=self.n, device="cpu",
                  inputs=[self.grid.id, self.x, self.v, self.inv_mass, self.rest_x,
                          self.start, self.other, self.thickness, self.exclude_sq,
                          self.friction, self.dx, self.dv])
        wp.launch(self._apply, dim=self.n, device="cpu",
                  inputs=[self.x, self.v, self.dx, self.dv])
        wp.synchronize_device("cpu")
