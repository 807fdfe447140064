"""ropesim: interactive 3D rope and cloth mass-spring simulation.

A numba engine you can script without a window, and a moderngl viewer on top of it::

    import ropesim as rs
    sim = rs.Simulation(rs.rope(30, 3.0), dt=0.002)
    sim.step(500)
    print(sim.energy())
"""

from .contacts import Ground, Sphere
from .integrators import DEFAULT_INTEGRATOR, INTEGRATORS, SolverStats
from .model import SpringSystem, concatenate
from .simulation import Simulation, SimulationDiverged

__version__ = "0.1.0"

__all__ = [
    "SpringSystem", "concatenate", "Simulation", "SimulationDiverged", "INTEGRATORS",
    "DEFAULT_INTEGRATOR", "SolverStats", "Ground", "Sphere",
]

# Builders and scene files (added when their modules are present).
try:
    from .builders import cloth, random_network, ring, rope, star, triangle  # noqa: F401
    from .scenes import Scene, SceneError, load, scene_names  # noqa: F401

    __all__ += ["cloth", "random_network", "ring", "rope", "star", "triangle",
                "Scene", "SceneError", "load", "scene_names"]
except ImportError:  # pragma: no cover - during development only
    pass
