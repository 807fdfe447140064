"""Compatibility shim, to be deleted: the old home of four public names.

``ropesim/__init__.py`` still imports ``Trajectory``, ``load_trajectory``, ``record``
and ``render`` from here. Their homes are now :mod:`ropesim.io.trajectory` and
:mod:`ropesim.render.headless`; once the front door imports them from there this
module goes (its import of the render layer is the one the layer test reports).
"""

from ..render.headless import render
from .trajectory import Trajectory, load_trajectory, record

__all__ = ["Trajectory", "load_trajectory", "record", "render"]
