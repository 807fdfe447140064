"""Numba kernels shared by the force parts and the integrators: the spring and particle
helpers inlined everywhere (particles.py), structured-grid layouts and sweeps (grid.py,
sweeps.py, grid_implicit.py) and the edge colouring (colouring.py)."""
