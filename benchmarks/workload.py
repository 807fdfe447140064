"""The standard cloth workload of issue 5, built exactly as specified.

N x N particles in the x-z plane, 1 m x 1 m (spacing h = 1/(N-1)), id = r*N + c,
plus a deterministic jitter 0.05 h (sin(1.7 i), sin(2.3 i + 1), sin(3.1 i + 2)) on
particle i; total mass 1 kg spread equally (m = 1/N^2); corners (0,0) and (0,N-1)
pinned; springs structural (0,1),(1,0), shear (1,1),(1,-1), bend (0,2),(2,0) with
rest lengths from the un-jittered grid; k = 1e4 m N/m, c = 10 m N*s/m along the
spring; gravity (0, -9.81, 0); dt = 1/600 s; symplectic Euler.

Springs are listed family by family, each family in row-major order of its first
particle (the same order as ``ropesim.engine.builders.cloth``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIZES = (32, 64, 128, 256, 512)
OFFSETS = ((0, 1), (1, 0), (1, 1), (1, -1), (0, 2), (2, 0))
DT = 1.0 / 600.0
GRAVITY = (0.0, -9.81, 0.0)


@dataclass
class ClothArrays:
    """The workload as plain float64 arrays (peers cast them to float32)."""

    n: int
    positions: np.ndarray  # (N*N, 3)
    springs: np.ndarray  # (m, 2) int
    rest: np.ndarray  # (m,)
    mass: float  # per particle
    stiffness: float
    damping: float
    pinned: np.ndarray  # particle ids

    @property
    def n_particles(self) -> int:
        return self.positions.shape[0]

    @property
    def n_springs(self) -> int:
        return self.springs.shape[0]


def cloth_arrays(n: int) -> ClothArrays:
    h = 1.0 / (n - 1)
    i = np.arange(n * n)
    r, c = np.divmod(i, n)
    pos = np.zeros((n * n, 3))
    pos[:, 0] = c * h
    pos[:, 2] = r * h
    pos += 0.05 * h * np.stack(
        [np.sin(1.7 * i), np.sin(2.3 * i + 1.0), np.sin(3.1 * i + 2.0)], axis=1
    )
    ids = i.reshape(n, n)
    pairs, rest = [], []
    for dr, dc in OFFSETS:
        c0, c1 = max(0, -dc), n - max(0, dc)
        a = ids[: n - dr, c0:c1]
        b = ids[dr:, c0 + dc : c1 + dc]
        pairs.append(np.column_stack([a.ravel(), b.ravel()]))
        rest.append(np.full(a.size, h * np.hypot(dr, dc)))
    m = 1.0 / (n * n)
    return ClothArrays(
        n=n, positions=pos, springs=np.concatenate(pairs), rest=np.concatenate(rest),
        mass=m, stiffness=1e4 * m, damping=10.0 * m, pinned=np.array([0, n - 1]),
    )


def cloth_triangles(n: int) -> np.ndarray:
    """Two triangles per grid cell (for the viewer's normals; no effect on the physics)."""
    ids = np.arange(n * n).reshape(n, n)
    a = ids[:-1, :-1].ravel()
    b, d = a + 1, a + n
    return np.concatenate([np.column_stack([a, d, b]), np.column_stack([b, d, d + 1])])


def cloth_system(n: int):
    """The workload as a ropesim SpringSystem."""
    from ropesim.engine.model import SpringSystem

    a = cloth_arrays(n)
    return SpringSystem(
        a.positions, a.springs, a.rest, mass=a.mass, stiffness=a.stiffness,
        damping=a.damping, pinned=a.pinned, grid_shape=(n, n), name=f"cloth{n}",
        triangles=cloth_triangles(n),
    )


#: stiffness factor of the implicit workload: 400 x the standard k makes symplectic Euler
#: diverge at dt = 1/3000 on the 64 x 64 cloth (it survives 1/3500; benchmarked each run)
STIFF_FACTOR = 400.0


def stiff_cloth_system(n: int = 64):
    """The implicit-integrator workload: the standard cloth with STIFF_FACTOR times its
    stiffness (k = 4e6 m N/m), stiff enough that symplectic Euler needs dt < 1/3000.

    Returns (system, k).
    """
    from ropesim.engine.model import SpringSystem

    a = cloth_arrays(n)
    k = a.stiffness * STIFF_FACTOR
    system = SpringSystem(
        a.positions, a.springs, a.rest, mass=a.mass, stiffness=k, damping=a.damping,
        pinned=a.pinned, grid_shape=(n, n), name=f"stiff_cloth{n}",
    )
    return system, k
