"""Global drag: the force -drag m v, applied as its exact decay over a step."""

from __future__ import annotations

import numpy as np

from ..state import Params, State
from .base import Force


class Drag(Force):
    """Global velocity drag, params.drag (1/s): the force -drag m v, N.

    Part of the default list, and applied the same way by every integrator and kernel
    path: at the end of each step, v *= exp(-drag dt), the exact solution of
    dv/dt = -drag v over the step (operator splitting), so it is stable at any dt and
    decays a free particle's speed exactly like exp(-drag t). It has no potential."""

    fused = True

    def accumulate(self, state: State, params: Params, f: np.ndarray) -> None:
        f -= float(params.drag[0]) * params.mass[:, None] * state.v
