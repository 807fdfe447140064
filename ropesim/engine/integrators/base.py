"""The Integrator base class, its solver statistics and the registry of integrators.

An integrator is one subclass with ``step(state, dt) -> max squared speed`` and
``notify_model_changed(flags)``, registered with :func:`register_integrator`::

    @register_integrator
    class MyIntegrator(Integrator):
        name = "my_integrator"
        description = "what it does, in a few words"

        def step(self, state, dt):
            ...                     # advance state.x, state.v in place
            return max_speed_sq     # (m/s)^2, NaN if the state is not finite

The viewer's I key, the panel, ``ropesim compare`` and the scene loader read INTEGRATORS
when they run, so a registered integrator appears in all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from ..state import Changed, Model, State


@dataclass
class SolverStats:
    """Conjugate-gradient figures of the last implicit step and a running fallback count."""

    iterations: int = 0
    residual: float = 0.0
    converged: bool = True
    fallback_steps: int = 0
    total_iterations: int = 0
    implicit_steps: int = 0


class Integrator:
    """A time integrator of one simulation's Model (springs, Params, attached forces).

    ``step(state, dt)`` advances state.x and state.v by dt seconds in place (not
    state.time: the Simulation advances the clock) and returns the largest squared
    particle speed after the step, m^2/s^2: NaN as soon as any speed is NaN or infinite,
    so the Simulation catches a diverging or non-finite run (NaN compares false). Fixed
    particles (params.fixed) are not moved and get zero velocity. Every part of the force
    list acts: springs, gravity and drag (model.gravity(), model.damp_factor(dt)) and the
    attached forces (:meth:`external_forces`).

    The integrator owns its scratch arrays and its :class:`SolverStats`; the Simulation
    calls ``notify_model_changed(flags)`` (state.Changed) after every parameter edit, so
    nothing is compared per step. ``save_warm()`` / ``load_warm(warm)`` hand the scratch
    that one step leaves for the next (and the settings) to snapshots (engine/snapshot.py).

    Class attributes: ``name`` (the registry key), ``description`` (one line, for menus),
    ``unconditionally_stable`` (stable at any dt: no dt warning or divergence advice) and
    ``has_solver_stats`` (fills ``stats``; the panel shows them).
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    unconditionally_stable: ClassVar[bool] = False
    has_solver_stats: ClassVar[bool] = False

    def __init__(self, model: Model):
        self.model = model
        self.stats = SolverStats()
        self._external: np.ndarray | None = None
        self._no_external = np.zeros((0, 3), model.dtype)

    def step(self, state: State, dt: float) -> float:
        """Advance state by dt (s) in place; returns the max squared speed, m^2/s^2."""
        raise NotImplementedError(f"{type(self).__name__}.step")

    def notify_model_changed(self, flags: Changed) -> None:
        """Parameters changed (flags: state.Changed); the default keeps nothing to refresh."""

    def finish(self) -> None:
        """Wait for work this integrator left running (none by default)."""

    def save_warm(self) -> dict[str, Any]:
        """What this integrator carries from one step to the next and what its settings
        are, as a dict of arrays and scalars (Simulation.get_state copies it into the
        snapshot). Default: nothing carried (every step starts from the state alone).
        Override it, with :meth:`load_warm`, when a step reads scratch an earlier step
        wrote (e.g. the last step's velocities) or the integrator has settings."""
        return {}

    def load_warm(self, warm: Mapping[str, Any]) -> None:
        """Restore what :meth:`save_warm` returned (writable copies: keep them or copy
        from them). Default: nothing to restore."""

    def external_forces(self, state: State) -> tuple[np.ndarray, bool]:
        """The attached forces at ``state`` as (f (n, 3) N, True), or (an empty array,
        False) when none are attached; f is this integrator's scratch."""
        if not self.model.forces:
            return self._no_external, False
        if self._external is None:
            self._external = np.zeros((self.model.n_particles, 3), self.model.dtype)
        self.model.accumulate_attached(state, self._external)
        return self._external, True

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


#: name -> integrator class, in registration order (iterating gives the names)
INTEGRATORS: dict[str, type[Integrator]] = {}

DEFAULT_INTEGRATOR = "symplectic_euler"


def register_integrator(cls: type[Integrator]) -> type[Integrator]:
    """Add an Integrator subclass to INTEGRATORS under ``cls.name`` (usable as a class
    decorator); returns the class."""
    if not (isinstance(cls, type) and issubclass(cls, Integrator)):
        raise TypeError(f"register_integrator: expected an Integrator subclass, got {cls!r}")
    name = cls.name
    if not (isinstance(name, str) and name.isidentifier()):
        raise ValueError(f"integrator.name: expected an identifier string, got {name!r}")
    if not (isinstance(cls.description, str) and cls.description):
        raise ValueError(f"integrator.description: expected a non-empty string for {name!r}, "
                         f"got {cls.description!r}")
    if name in INTEGRATORS and INTEGRATORS[name] is not cls:
        raise ValueError(f"integrator.name: {name!r} is already registered "
                         f"({INTEGRATORS[name].__qualname__}); allowed: a new name")
    INTEGRATORS[name] = cls
    return cls


def get_integrator(name: str) -> type[Integrator]:
    """Look an integrator class up by name, with an error that lists the valid names."""
    try:
        return INTEGRATORS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"integrator: unknown name {name!r}; allowed: {', '.join(INTEGRATORS)}"
        ) from None
