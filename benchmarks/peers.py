"""Baselines for the standard cloth: plain NumPy, and hand-written Warp and Taichi kernels.

Every implementation steps the same float32 workload (workload.py) with symplectic
Euler and exposes ``step()`` (one step per Python call), ``positions()`` (an (n, 3)
numpy copy) and ``threads`` (how many CPU threads its kernels use). Warp and Taichi
each come in two variants, written to be fair and equivalent:

- scatter: one thread per spring computes the spring force once and adds it to both
  ends with atomic adds; then one thread per particle integrates.
- gather: one thread per particle walks its own springs in a per-particle adjacency
  (CSR), sums their forces and integrates in the same kernel, reading the old state
  and writing a second buffer (the buffers swap every step).

Warp and Taichi are optional (the ``bench`` extra); ``available()`` says which import.
"""


import importlib.util

import numpy as np

from workload import DT, GRAVITY, ClothArrays

MIN_LENGTH = 1e-12


def available() -> dict[str, bool]:
    return {name: importlib.util.find_spec(mod) is not None
            for name, mod in (("warp", "warp"), ("taichi", "taichi"))}


def _adjacency(cloth: ClothArrays):
    """CSR adjacency: for particle i, entries start[i]:start[i+1] of (other, spring)."""
    a, b = cloth.springs[:, 0], cloth.springs[:, 1]
    n = cloth.n_particles
    ends = np.concatenate([a, b])
    others = np.concatenate([b, a])
    spring_ids = np.concatenate([np.arange(a.size), np.arange(a.size)])
    order = np.argsort(ends, kind="stable")
    start = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(ends, minlength=n), out=start[1:])
    return start, others[order].astype(np.int32), spring_ids[order].astype(np.int32)


# --- NumPy -------------------------------------------------------------------------------


class NumpyCloth:
    """Vectorised NumPy: per-spring forces, np.bincount scatter, float32 state."""

    name = "numpy"
    threads = 1

    def __init__(self, cloth: ClothArrays):
        f32 = np.float32
        self.x = cloth.positions.astype(f32)
        self.v = np.zeros_like(self.x)
        self.a = cloth.springs[:, 0].astype(np.intp)
        self.b = cloth.springs[:, 1].astype(np.intp)
        self.rest = cloth.rest.astype(f32)
        self.k = f32(cloth.stiffness)
        self.c = f32(cloth.damping)
        self.inv_mass = f32(1.0 / cloth.mass)
        self.free = np.ones((cloth.n_particles, 1), f32)
        self.free[cloth.pinned] = 0.0
        self.g = np.array(GRAVITY, f32)
        self.dt = f32(DT)
        self.n = cloth.n_particles

    def step(self) -> None:
        x, v, a, b = self.x, self.v, self.a, self.b
        d = x[a] - x[b]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        safe = length >= MIN_LENGTH
        inv = np.where(safe, 1.0 / np.where(safe, length, 1), 0).astype(np.float32)
        nrm = d * inv[:, None]
        rel = np.einsum("ij,ij->i", v[a] - v[b], nrm)
        mag = -self.k * (length - self.rest) - self.c * rel
        fs = nrm * mag[:, None]
        acc = np.empty_like(x)
        for dim in range(3):
            acc[:, dim] = (np.bincount(a, fs[:, dim], self.n)
                           - np.bincount(b, fs[:, dim], self.n))
        acc *= self.inv_mass
        acc += self.g
        v += self.dt * acc
        v *= self.free
        x += self.dt * v

    def positions(self) -> np.ndarray:
        return self.x.copy()


# --- Warp ----------------------------------------------------------------------------------

_warp_kernels = None


def _warp():
    global _warp_kernels
    import warp as wp

    if _warp_kernels is not None:
        return wp, _warp_kernels
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def springs_scatter(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                        a: wp.array(dtype=wp.int32), b: wp.array(dtype=wp.int32),
                        rest: wp.array(dtype=wp.float32), k: wp.float32, c: wp.float32,
                        f: wp.array(dtype=wp.vec3)):
        s = wp.tid()
        i = a[s]
        j = b[s]
        d = x[i] - x[j]
        length = wp.length(d)
        if length < 1.0e-12:
            return
        n = d / length
        mag = -k * (length - rest[s]) - c * wp.dot(v[i] - v[j], n)
        fs = mag * n
        wp.atomic_add(f, i, fs)
        wp.atomic_sub(f, j, fs)

    @wp.kernel
    def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                  f: wp.array(dtype=wp.vec3), inv_mass: wp.array(dtype=wp.float32),
                  g: wp.vec3, dt: wp.float32):
        i = wp.tid()
        w = inv_mass[i]
        if w == 0.0:
            v[i] = wp.vec3(0.0, 0.0, 0.0)
        else:
            vi = v[i] + dt * (f[i] * w + g)
            v[i] = vi
            x[i] = x[i] + dt * vi
        f[i] = wp.vec3(0.0, 0.0, 0.0)

    @wp.kernel
    def gather_integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                         start: wp.array(dtype=wp.int32), other: wp.array(dtype=wp.int32),
                         spring: wp.array(dtype=wp.int32), rest: wp.array(dtype=wp.float32),
                         k: wp.float32, c: wp.float32, inv_mass: wp.array(dtype=wp.float32),
                         g: wp.vec3, dt: wp.float32,
                         x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        w = inv_mass[i]
        xi = x[i]
        vi = v[i]
        if w == 0.0:
            x_out[i] = xi
            v_out[i] = wp.vec3(0.0, 0.0, 0.0)
            return
        f = wp.vec3(0.0, 0.0, 0.0)
        for e in range(start[i], start[i + 1]):
            j = other[e]
            d = xi - x[j]
            length = wp.length(d)
            if length >= 1.0e-12:
                n = d / length
                mag = -k * (length - rest[spring[e]]) - c * wp.dot(vi - v[j], n)
                f = f + mag * n
        vn = vi + dt * (f * w + g)
        v_out[i] = vn
        x_out[i] = xi + dt * vn

    _warp_kernels = (springs_scatter, integrate, gather_integrate)
    return wp, _warp_kernels


class WarpCloth:
    """Warp CPU kernels (float32). variant: 'scatter' or 'gather'."""

    threads = 1  # Warp runs CPU kernels on the calling thread

    def __init__(self, cloth: ClothArrays, variant: str = "scatter"):
        wp, (self._scatter, self._integrate, self._gather) = _warp()
        self.wp = wp
        self.variant = variant
        self.name = f"warp-{variant}"
        dev = "cpu"
        f32 = np.float32
        inv_mass = np.full(cloth.n_particles, 1.0 / cloth.mass, f32)
        inv_mass[cloth.pinned] = 0.0
        self.x = wp.array(cloth.positions.astype(f32), dtype=wp.vec3, device=dev)
        self.v = wp.zeros(cloth.n_particles, dtype=wp.vec3, device=dev)
        self.inv_mass = wp.array(inv_mass, dtype=wp.float32, device=dev)
        self.k, self.c = f32(cloth.stiffness), f32(cloth.damping)
        self.g = wp.vec3(*GRAVITY)
        self.dt = f32(DT)
        self.n, self.m = cloth.n_particles, cloth.n_springs
        if variant == "scatter":
            self.a = wp.array(cloth.springs[:, 0].astype(np.int32), dtype=wp.int32, device=dev)
            self.b = wp.array(cloth.springs[:, 1].astype(np.int32), dtype=wp.int32, device=dev)
            self.rest = wp.array(cloth.rest.astype(f32), dtype=wp.float32, device=dev)
            self.f = wp.zeros(cloth.n_particles, dtype=wp.vec3, device=dev)
        elif variant == "gather":
            start, other, spring = _adjacency(cloth)
            self.start = wp.array(start, dtype=wp.int32, device=dev)
            self.other = wp.array(other, dtype=wp.int32, device=dev)
            self.spring = wp.array(spring, dtype=wp.int32, device=dev)
            self.rest = wp.array(cloth.rest.astype(f32), dtype=wp.float32, device=dev)
            self.x2 = wp.zeros_like(self.x)
            self.v2 = wp.zeros_like(self.v)
        else:
            raise ValueError(variant)

    def step(self) -> None:
        wp = self.wp
        if self.variant == "scatter":
            wp.launch(self._scatter, dim=self.m, device="cpu",
                      inputs=[self.x, self.v, self.a, self.b, self.rest, self.k, self.c, self.f])
            wp.launch(self._integrate, dim=self.n, device="cpu",
                      inputs=[self.x, self.v, self.f, self.inv_mass, self.g, self.dt])
        else:
            wp.launch(self._gather, dim=self.n, device="cpu",
                      inputs=[self.x, self.v, self.start, self.other, self.spring, self.rest,
                              self.k, self.c, self.inv_mass, self.g, self.dt, self.x2, self.v2])
            self.x, self.x2 = self.x2, self.x
            self.v, self.v2 = self.v2, self.v

    def positions(self) -> np.ndarray:
        return self.x.numpy().copy()


# --- Taichi --------------------------------------------------------------------------------


class TaichiCloth:
    """Taichi ti.cpu kernels (float32, all cores). variant: 'scatter' or 'gather'."""

    def __init__(self, cloth: ClothArrays, variant: str = "scatter"):
        import os

        import taichi as ti

        ti.init(arch=ti.cpu, default_fp=ti.f32, log_level=ti.ERROR,
                cpu_max_num_threads=os.cpu_count())
        self.threads = os.cpu_count()
        self.variant = variant
        self.name = f"taichi-{variant}"
        n, m = cloth.n_particles, cloth.n_springs
        vec = ti.types.vector(3, ti.f32)
        x = vec.field(shape=n)
        v = vec.field(shape=n)
        inv_mass = ti.field(ti.f32, shape=n)
        rest = ti.field(ti.f32, shape=m)
        im = np.full(n, 1.0 / cloth.mass, np.float32)
        im[cloth.pinned] = 0.0
        x.from_numpy(cloth.positions.astype(np.float32))
        inv_mass.from_numpy(im)
        rest.from_numpy(cloth.rest.astype(np.float32))
        k, c, dt = float(cloth.stiffness), float(cloth.damping), float(DT)
        g = ti.Vector(list(GRAVITY))
        self.x, self.v = x, v

        if variant == "scatter":
            a = ti.field(ti.i32, shape=m)
            b = ti.field(ti.i32, shape=m)
            f = vec.field(shape=n)
            a.from_numpy(cloth.springs[:, 0].astype(np.int32))
            b.from_numpy(cloth.springs[:, 1].astype(np.int32))

            @ti.kernel
            def step():
                for s in range(m):
                    i = a[s]
                    j = b[s]
                    d = x[i] - x[j]
                    length = d.norm()
                    if length >= 1e-12:
                        nrm = d / length
                        mag = -k * (length - rest[s]) - c * (v[i] - v[j]).dot(nrm)
                        f[i] += mag * nrm
                        f[j] -= mag * nrm
                for i in range(n):
                    w = inv_mass[i]
                    if w == 0.0:
                        v[i] = ti.Vector([0.0, 0.0, 0.0])
                    else:
                        vi = v[i] + dt * (f[i] * w + g)
                        v[i] = vi
                        x[i] = x[i] + dt * vi
                    f[i] = ti.Vector([0.0, 0.0, 0.0])

            self._step = step
        elif variant == "gather":
            start_np, other_np, spring_np = _adjacency(cloth)
            start = ti.field(ti.i32, shape=n + 1)
            other = ti.field(ti.i32, shape=other_np.size)
            spring = ti.field(ti.i32, shape=other_np.size)
            start.from_numpy(start_np)
            other.from_numpy(other_np)
            spring.from_numpy(spring_np)
            x2 = vec.field(shape=n)
            v2 = vec.field(shape=n)

            @ti.kernel
            def gather(xa: ti.template(), va: ti.template(), xb: ti.template(),
                       vb: ti.template()):
                for i in range(n):
                    w = inv_mass[i]
                    xi = xa[i]
                    vi = va[i]
                    if w == 0.0:
                        xb[i] = xi
                        vb[i] = ti.Vector([0.0, 0.0, 0.0])
                    else:
                        fi = ti.Vector([0.0, 0.0, 0.0])
                        for e in range(start[i], start[i + 1]):
                            j = other[e]
                            d = xi - xa[j]
                            length = d.norm()
                            if length >= 1e-12:
                                nrm = d / length
                                mag = (-k * (length - rest[spring[e]])
                                       - c * (vi - va[j]).dot(nrm))
                                fi += mag * nrm
                        vn = vi + dt * (fi * w + g)
                        vb[i] = vn
                        xb[i] = xi + dt * vn

            self._buffers = [(x, v), (x2, v2)]
            self._gather = gather
            self._flip = 0

            def step():
                src, dst = self._buffers[self._flip], self._buffers[1 - self._flip]
                gather(src[0], src[1], dst[0], dst[1])
                self._flip = 1 - self._flip
                self.x, self.v = dst

            self._step = step
        else:
            raise ValueError(variant)

    def step(self) -> None:
        self._step()

    def sync(self) -> None:
        import taichi as ti

        ti.sync()

    def positions(self) -> np.ndarray:
        return self.x.to_numpy()


def make_peer(name: str, cloth: ClothArrays):
    """'numpy', 'warp-scatter', 'warp-gather', 'taichi-scatter' or 'taichi-gather'."""
    if name == "numpy":
        return NumpyCloth(cloth)
    lib, _, variant = name.partition("-")
    if lib == "warp":
        return WarpCloth(cloth, variant)
    if lib == "taichi":
        return TaichiCloth(cloth, variant)
    raise ValueError(f"unknown peer {name!r}")
