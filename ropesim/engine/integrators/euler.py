"""Explicit and symplectic Euler, each one fused kernel per step (kernels/sweeps.py).

- explicit_euler:    x1 = x0 + dt v0,  v1 = v0 + dt a(x0, v0). Gains energy; unstable
                     for any undamped oscillation, shown here for teaching.
- symplectic_euler:  v1 = v0 + dt a(x0, v0),  x1 = x0 + dt v1. Energy stays bounded;
                     stable for dt below about 2 sqrt(m / k).

with a = (spring forces + attached forces) / m + g, then drag v1 *= exp(-drag dt). The
kernel path is chosen once per system (see kernels/sweeps.py): a structured-grid sweep
for cloths (serial, or in parallel bands with identical results), the edge-coloured
scatter for large systems without grid structure, or the plain spring-order scatter.
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np

from .. import parallel
from ..kernels.colouring import edge_colouring
from ..kernels.grid import GridLayout
from ..kernels.particles import MIN_LENGTH
from ..kernels.sweeps import (
    GridSweep, coloured_euler, coloured_euler_parallel, grid_euler, grid_euler_parallel,
    plain_euler,
)
from ..state import Changed, Model, State
from .base import Integrator, register_integrator

#: springs from which a system without grid structure runs the edge-coloured kernels
#: (which have a parallel version); smaller ones use the plain serial scatter
COLOURED_MIN_SPRINGS = 20_000
#: springs from which a kernel's parallel version is considered at all
PARALLEL_MIN_SPRINGS = 4_000

parallel.configure()


class PlainPath:
    """Spring-order scatter and update in one serial kernel (small systems)."""

    kind = "plain"

    def __init__(self, model: Model):
        self.force = np.zeros((model.n_particles, 3), model.dtype)

    def euler(self, model: Model, state: State, dt: float, symplectic: bool,
              external: np.ndarray, has_external: bool) -> float:
        p = model.params
        return plain_euler(state.x, state.v, model.spring_a, model.spring_b, p.rest_lengths,
                           p.stiffness, p.damping, self.force, p.inv_mass, p.fixed,
                           model.gravity(), dt, symplectic, model.damp_factor(dt), external,
                           has_external)


class ColouredPath:
    """Edge-coloured scatter: serial or parallel, identical results."""

    kind = "coloured"

    def __init__(self, model: Model, order: np.ndarray, starts: np.ndarray):
        self.order, self.starts = order, starts
        self.colours = starts.shape[0] - 1
        self.chooser = parallel.Chooser()
        self.scalars = _Scalars(model.dtype)
        n = model.n_particles
        self.force = np.zeros((n, 3), model.dtype)
        self.chunks = np.linspace(0, n, 65).astype(np.int64)  # fixed: result independent
        self.results = np.zeros((64, 2), model.dtype)          # of the thread count

    def euler(self, model: Model, state: State, dt: float, symplectic: bool,
              external: np.ndarray, has_external: bool) -> float:
        p = model.params
        dt_t, damp, tiny, one = self.scalars.get(model, dt)
        args = (state.x, state.v, model.spring_a, model.spring_b, p.rest_lengths, p.stiffness,
                p.damping, self.force, self.order, self.starts, p.inv_mass, p.fixed,
                model.gravity(), dt_t, symplectic, damp, tiny, one, self.chunks, self.results,
                external, has_external)
        use_parallel = self.chooser.parallel() and parallel.threads() > 1
        start = time.perf_counter()
        if use_parallel:
            result = coloured_euler_parallel(*args)
        else:
            result = coloured_euler(*args)
        self.chooser.record(use_parallel, start)
        return float(result)


class _Scalars:
    """(dt, exp(-drag dt), MIN_LENGTH, 1) in the state's dtype for the last (dt, drag
    factor): the float scalars of kernels.sweeps.StepScalars, made again on a change."""

    def __init__(self, dtype: np.dtype):
        self._type = dtype.type
        self._key: tuple | None = None
        self._value: tuple = ()

    def get(self, model: Model, dt: float) -> tuple:
        damp = model.damp_factor(dt)
        if (dt, damp) != self._key:
            t = self._type
            self._key = (dt, damp)
            self._value = (t(dt), t(damp), t(MIN_LENGTH), t(1.0))
        return self._value


class GridPath:
    """Structured-grid sweep: serial, or in bands of rows in parallel, identical results."""

    kind = "grid"

    def __init__(self, model: Model, layout: GridLayout):
        self.layout = layout
        self.rows, self.cols = layout.rows, layout.cols
        self.blocks, self.max_dr = layout.blocks, layout.max_dr
        self.scalars = _Scalars(model.dtype)
        self._dtype = model.dtype
        self.chooser = parallel.Chooser()
        self.can_parallel = model.n_springs >= PARALLEL_MIN_SPRINGS and self.rows >= 16
        self._scratch(1)
        self._bands_for = 0
        self.gx = self.gv = None

    def _scratch(self, bands: int) -> None:
        window = self.max_dr + 1
        # rows padded by 64 bytes: with a power-of-two row length (N = 512) every window
        # row would fall into the same two L1 cache sets and evict the others
        width = self.cols + 64 // self._dtype.itemsize
        self.windows = np.zeros((bands, 3, window, 3, width), self._dtype)
        self.temps = np.zeros((bands, 3, width), self._dtype)
        bits = np.int32 if self._dtype == np.float32 else np.int64
        self.speed_bits = np.zeros((bands, self.cols), bits)
        self.speeds = self.speed_bits.view(self._dtype)  # the same memory, as floats
        self.results = np.zeros((bands, 2), self._dtype)

    @property
    def sweep(self) -> GridSweep:
        """The layout and scratch as the sweep kernels take them (field by field)."""
        return GridSweep(self.rows, self.cols, self.blocks, self.max_dr, self.windows,
                         self.temps, self.speeds, self.speed_bits)

    def bands(self, threads: int) -> np.ndarray:
        """Row bands for ``threads`` threads (bands[t]:bands[t + 1]), scratch sized."""
        if self._bands_for != threads:
            nb = max(1, min(threads, self.rows // 8))
            self.band_rows = np.linspace(0, self.rows, nb + 1).round().astype(np.int64)
            if self.windows.shape[0] < nb:
                self._scratch(nb)
            self.results = np.zeros((nb, 2), self._dtype)
            if self.gx is None:
                self.gx = np.zeros((self.rows * self.cols, 3), self._dtype)
                self.gv = np.zeros_like(self.gx)
            self._bands_for = threads
        return self.band_rows

    def euler(self, model: Model, state: State, dt: float, symplectic: bool,
              external: np.ndarray, has_external: bool) -> float:
        threads = 1
        if self.can_parallel and self.chooser.parallel():
            threads = parallel.threads()
        if threads > 1:
            bands = self.bands(threads)  # (re)sizes the scratch: before reading it
        p = model.params
        dt_t, damp, tiny, one = self.scalars.get(model, dt)
        common = (p.stiffness, p.damping, p.rest_lengths, p.inv_mass, p.fixed, model.gravity(),
                  dt_t, damp, tiny, one, symplectic, self.rows, self.cols, self.blocks,
                  self.max_dr, self.windows, self.temps, self.speeds, self.speed_bits,
                  external, has_external)
        start = time.perf_counter()
        if threads > 1:
            result = grid_euler_parallel(state.x, state.v, self.gx, self.gv, *common, bands,
                                         self.results)
        else:
            result = grid_euler(state.x, state.v, *common)
        if self.can_parallel:
            self.chooser.record(threads > 1, start)
        return float(result)


def choose_path(model: Model) -> PlainPath | ColouredPath | GridPath:
    """The Euler kernel path for this system: grid sweep, edge-coloured or plain scatter."""
    layout = model.grid()
    if layout is not None:
        return GridPath(model, layout)
    if model.n_springs >= COLOURED_MIN_SPRINGS:
        colouring = edge_colouring(model.spring_a, model.spring_b, model.n_particles)
        if colouring is not None:
            return ColouredPath(model, *colouring)
    return PlainPath(model)


class _Euler(Integrator):
    """Explicit or symplectic Euler on the kernel path of ``choose_path``."""

    symplectic: ClassVar[bool] = True

    def __init__(self, model: Model):
        super().__init__(model)
        self._path: PlainPath | ColouredPath | GridPath | None = None

    def path(self) -> PlainPath | ColouredPath | GridPath:
        """The kernel path, chosen on first use."""
        if self._path is None:
            self._path = choose_path(self.model)
        return self._path

    def notify_model_changed(self, flags: Changed) -> None:
        if flags & Changed.TOPOLOGY:  # new spring list: the kernel path is chosen again
            self._path = None

    def step(self, state: State, dt: float) -> float:
        external, has_external = self.external_forces(state)
        return self.path().euler(self.model, state, dt, self.symplectic, external,
                                 has_external)


@register_integrator
class ExplicitEuler(_Euler):
    name = "explicit_euler"
    description = "forward Euler: gains energy, for teaching"
    symplectic = False


@register_integrator
class SymplecticEuler(_Euler):
    name = "symplectic_euler"
    description = "semi-implicit Euler: bounded energy, the fast default"
    symplectic = True
