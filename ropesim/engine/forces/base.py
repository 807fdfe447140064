"""The Force base class: one physical effect that adds newtons into an (n, 3) array."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..state import Params, State


class Force:
    """A force part. Subclass it and implement :meth:`accumulate`; attach an instance with
    ``Simulation.add_force`` (every integrator then applies it, also after a live switch).

    ``accumulate(state, params, f)`` adds this force, N, into ``f`` (n, 3) from the state
    (``state.x`` m, ``state.v`` m/s, ``state.time`` s) and the parameters (``params.mass``
    kg, ...). It must add, not assign: the other parts' forces are in ``f`` too. When it is
    called: explicit and symplectic Euler at the step's start (x0, v0, t0); Verlet at the
    start and again at (x1, v1/2, t0 + dt); the implicit integrators at the start. Fixed
    (pinned or grabbed) particles are never moved, whatever force they get.

    Optional:

    - ``potential_energy(state, params)`` (J) of a conservative force: ``Simulation.energy``
      and ``potential_energy`` add it. The default returns None: the force has no
      potential and its work does not appear in the energy.
    - ``jacobian_product(state, params, p, dfdx_scale, dfdv_scale, out)``: add
      ``dfdx_scale (df/dx) p + dfdv_scale (df/dv) p`` into ``out`` (n, 3), and
      ``jacobian_diagonal(state, params, dfdx_scale, dfdv_scale, out)``: add the diagonal
      of that matrix (n, 3: the xx, yy, zz entries of each particle's 3 x 3 block). With
      both, backward Euler and implicit midpoint treat the force implicitly (its Jacobian
      enters their linear system, then solved by Jacobi-preconditioned CG on the spring
      list). A force without them is applied explicitly inside the implicit step: it is
      evaluated once at (x0, v0, t0) and held constant over the step.

    ``fused`` parts (springs, gravity, drag: the default list, see forces/__init__.py) are
    applied by the integrators' own kernels; their ``accumulate`` gives the same force
    for inspection.
    """

    #: applied inside the integrator kernels (the built-in parts); False for attached forces
    fused: ClassVar[bool] = False

    def accumulate(self, state: State, params: Params, f: np.ndarray) -> None:
        """Add this force (N) into f (n, 3)."""
        raise NotImplementedError(f"{type(self).__name__}.accumulate")

    def potential_energy(self, state: State, params: Params) -> float | None:
        """Potential energy, J, or None for a force without one."""
        return None

    def jacobian_product(self, state: State, params: Params, p: np.ndarray,
                         dfdx_scale: float, dfdv_scale: float, out: np.ndarray) -> None:
        """out += dfdx_scale (df/dx) p + dfdv_scale (df/dv) p (optional: see the class)."""
        raise NotImplementedError(f"{type(self).__name__}.jacobian_product")

    def jacobian_diagonal(self, state: State, params: Params, dfdx_scale: float,
                          dfdv_scale: float, out: np.ndarray) -> None:
        """out += the diagonal of dfdx_scale df/dx + dfdv_scale df/dv, (n, 3) (optional)."""
        raise NotImplementedError(f"{type(self).__name__}.jacobian_diagonal")

    @property
    def has_jacobian(self) -> bool:
        """Whether this force provides its Jacobian products (then it is implicit)."""
        cls = type(self)
        return (cls.jacobian_product is not Force.jacobian_product
                and cls.jacobian_diagonal is not Force.jacobian_diagonal)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
