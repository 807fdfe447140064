"""ropesim: interactive 3D rope and cloth mass-spring simulation.

A numba engine you can script without a window, and a moderngl viewer on top of it::

    import ropesim as rs
    sim = rs.Simulation(rs.rope(30, 3.0), dt=0.002)
    sim.step(500)
    print(sim.energy())
"""

from .engine.builders import BUILDERS, cloth, explicit, random_network, ring, rope, star, triangle
from .engine.contacts import Box, Capsule, Ground, Mesh, Sphere
from .engine.forces import DEFAULT_FORCES, Drag, Force, Gravity, SpringForces, Wind
from .engine.integrators import (
    DEFAULT_INTEGRATOR, INTEGRATORS, Integrator, SolverStats, register_integrator,
)
from .engine.state import Changed, Params, State
from .engine.model import SpringSystem, concatenate
from .io.trajectory import Trajectory, load_trajectory, record
from .render.headless import render
from .app.sweep import sweep
from .engine.stability import StabilityGauge, stability_limit, stability_margin
from .io.scenes import DEFAULT_SCENE, Scene, SceneError, load, scene_names
from .engine.simulation import Simulation, SimulationDiverged
from .engine.snapshot import SimState, history_nbytes
from .engine.waves import WaveResult, wave_experiment

from importlib.metadata import version as _version

__version__ = _version("ropesim")  # from pyproject.toml, one place

__all__ = [
    "SpringSystem", "concatenate", "Simulation", "SimulationDiverged", "INTEGRATORS",
    "DEFAULT_INTEGRATOR", "SolverStats", "Integrator", "register_integrator", "Force",
    "SpringForces", "Gravity", "Drag", "Wind", "DEFAULT_FORCES", "State", "Params", "Changed",
    "Ground", "Sphere", "Box", "Capsule", "Mesh",
    "BUILDERS", "cloth", "explicit", "random_network", "ring", "rope", "star", "triangle",
    "Scene", "SceneError", "load", "scene_names", "DEFAULT_SCENE",
    "record", "Trajectory", "load_trajectory", "render", "wave_experiment", "WaveResult",
    "sweep", "StabilityGauge", "stability_limit", "stability_margin",
    "SimState", "history_nbytes",
]


