"""Scene files: a builder, its parameters and the simulation settings, in TOML.

A scene file looks like::

    description = "One line shown by `ropesim scenes`"
    builder = "cloth"            # a name in ropesim.engine.builders.BUILDERS ("explicit" included)
    [cloth]                      # the builder's keyword arguments
    nx = 24
    [simulation]                 # dt (s), gravity (m/s^2), integrator, drag (1/s), substeps
    dt = 0.002
    [ground]                     # optional: height (m), friction
    [[spheres]]                  # optional, repeatable: center (m), radius (m), friction
    [[boxes]]                    # optional, repeatable: center, size (m), rotation (deg), friction,
                                 # margin (m or "auto", as for capsules and meshes)
    [[capsules]]                 # optional, repeatable: start, end, radius (m), friction
    [[meshes]]                   # optional, repeatable: path (OBJ/STL/PLY/glTF), scale, center,
                                 # rotation, friction, thickness (m); boxes, capsules and meshes
                                 # may move: velocity (m/s), spin (deg/s vector),
                                 # keyframes ([t s, x, y, z m] of the centre)
    [camera]                     # optional viewer hints: azimuth, elevation, fov_y (deg), distance, target (m)
    [xpbd]                       # optional: substeps, iterations, compliance (m/N)
    [vbd]                        # optional: iterations, chebyshev_rho, initialisation

Everything is validated when a scene is loaded (the system is built once), so a bad
file fails with a :class:`SceneError` naming the file and the key before any work.

Validation: the file is read as UTF-8 and may be at most ``MAX_SCENE_BYTES`` (64 MiB);
values may nest at most ``MAX_NESTING`` (32) levels of tables and arrays. Every number
must be finite and at most 1.3e154 in magnitude (so that one product still fits a
float64); dt, radius, distance > 0; drag, friction >= 0 (friction at most 10);
substeps 1..``MAX_SUBSTEPS`` (1000). A scene may build at most ``max_particles``
particles and 16 springs per allowed particle; the limit is ``MAX_PARTICLES``
(1,000,000) unless the file raises it with the top-level key ``max_particles =
5000000`` (or an override ``max_particles=5000000``). The size is computed from the
builder's parameters before anything is allocated. A bare name such as ``cloth`` is a
shipped scene even when a file or folder of that name is in the current directory;
``./cloth``, anything with a path separator and anything ending in ``.toml`` is a path.
"""

from __future__ import annotations

import copy
import inspect
import os
import tomllib
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from ropesim.engine.builders import BUILDERS, planned_size
from ropesim.engine.contacts import MAX_FRICTION, Box, Capsule, Mesh
from ropesim.engine.model import SpringSystem, dtype_limit, show
from ropesim.engine.solver_settings import (SOLVER_SETTINGS, apply_solver_settings,
                                            solver_setting_allowed)
from ropesim.engine.topology import sew_weight
from ropesim.io.paths import resource_dir, scene_dir

if typing.TYPE_CHECKING:
    from ropesim.engine.simulation import Simulation

DEFAULT_SCENE = "cloth"

#: Largest scene file read, bytes.
MAX_SCENE_BYTES = 64 * 2**20
#: Deepest nesting of tables and arrays in a scene (an explicit scene needs 4).
MAX_NESTING = 32
#: Default limit on the particles a scene may build; a scene raises it with the
#: top-level key ``max_particles``.
MAX_PARTICLES = 1_000_000
#: Springs allowed per allowed particle (a cloth with every family has about 6).
MAX_SPRINGS_PER_PARTICLE = 16
#: Most simulation steps per rendered frame: more would stall the viewer for seconds.
MAX_SUBSTEPS = 1000
#: Largest magnitude of any number in a scene (float64 with room for one product).
MAX_MAGNITUDE = dtype_limit(float)


class SceneError(ValueError):
    """A scene file, dictionary or override is invalid; the message names where and which key."""


REQUIRED = object()
"""Marks a section key that has no default and must be given."""


@dataclass(frozen=True)
class _Field:
    """One key of a fixed section: its type, an optional value check with a description
    of the allowed values, and a default (None: optional, left out when absent)."""

    type: Any
    check: Callable[[Any], bool] | None = None
    allowed: str | Callable[[], str] = ""
    default: Any = None


def _integrator_names() -> list[str]:
    from ropesim.engine.integrators import INTEGRATORS

    return list(INTEGRATORS)


_VEC3 = tuple[float, float, float]
SIMULATION_FIELDS = {
    "dt": _Field(float, lambda v: v > 0, "a time step > 0 s", 0.005),
    "gravity": _Field(_VEC3, None, "", [0.0, -9.81, 0.0]),
    "integrator": _Field(
        str, lambda v: v in _integrator_names(),
        lambda: "one of " + ", ".join(_integrator_names()), "symplectic_euler",
    ),
    "drag": _Field(float, lambda v: v >= 0, "a drag rate >= 0 1/s", 0.0),
    "substeps": _Field(
        int, lambda v: 1 <= v <= MAX_SUBSTEPS, f"an integer from 1 to {MAX_SUBSTEPS}", 1
    ),
    # set on the Simulation after it is made (Scene.simulation); absent = off
    "break_strain": _Field(float, lambda v: v > 0, "a strain > 0 (absent: unbreakable)"),
    "max_stretch": _Field(float, lambda v: 0 < v < MAX_MAGNITUDE, "a strain > 0 (0.1 = 10 %)"),
    # self-collision (docs/collisions.md); absent = off, default thickness and friction
    "self_collision": _Field(bool, None, "true or false"),
    "thickness": _Field(float, lambda v: 0 < v < MAX_MAGNITUDE, "a thickness > 0 m"),
    "self_friction": _Field(float, lambda v: 0 <= v <= MAX_FRICTION,
                            f"a friction coefficient from 0 to {MAX_FRICTION:g}"),
    "crack_tip_factor": _Field(float, lambda v: 0 < v <= 1, "a factor in (0, 1] (1: off)"),
    "crack_tip_time": _Field(float, lambda v: 0 < v < MAX_MAGNITUDE, "a time > 0 s"),
}
#: simulation keys that are Simulation properties, not constructor arguments
_SIMULATION_PROPERTIES = ("break_strain", "max_stretch", "crack_tip_factor", "crack_tip_time")
#: [weight]: a mass sewn along the lowest particles (engine/topology.py sew_weight)
WEIGHT_FIELDS = {"mass": _Field(float, lambda v: 0 < v < MAX_MAGNITUDE, "a mass > 0 kg",
                                REQUIRED)}
_NON_NEGATIVE = "a number >= 0"
WIND_FIELDS = {  # rs.Wind's arguments; absent keys take Wind's defaults
    "velocity": _Field(_VEC3, default=REQUIRED),
    "density": _Field(float, lambda v: v >= 0, "a density >= 0 kg/m^3"),
    "drag": _Field(float, lambda v: v >= 0, _NON_NEGATIVE + " (C_d)"),
    "lift": _Field(float, lambda v: v >= 0, _NON_NEGATIVE + " (C_l)"),
    "gust": _Field(float, lambda v: v >= 0, _NON_NEGATIVE + " (relative RMS)"),
    "gust_frequency": _Field(float, lambda v: v >= 0, "a frequency >= 0 Hz"),
    "seed": _Field(int),
    "thickness": _Field(float, lambda v: v >= 0, "a diameter >= 0 m"),
}
_FRICTION_ALLOWED = f"a friction coefficient from 0 to {MAX_FRICTION:g}"
GROUND_FIELDS = {
    "height": _Field(float, None, "", 0.0),
    "friction": _Field(float, lambda v: 0 <= v <= MAX_FRICTION, _FRICTION_ALLOWED, 0.5),
}
SPHERE_FIELDS = {
    "center": _Field(_VEC3, default=REQUIRED),
    "radius": _Field(float, lambda v: v > 0, "a radius > 0 m", REQUIRED),
    "friction": _Field(float, lambda v: 0 <= v <= MAX_FRICTION, _FRICTION_ALLOWED, 0.3),
}
_MOTION_FIELDS = {  # a collider's motion; absent: it stands still
    "velocity": _Field(_VEC3),
    "spin": _Field(_VEC3),
    "keyframes": _Field(list[tuple[float, float, float, float]]),  # [[t, x, y, z], ...]
}
_COLLIDER_FRICTION = _Field(float, lambda v: 0 <= v <= MAX_FRICTION, _FRICTION_ALLOWED)
_COLLIDER_MARGIN = _Field(float | str, lambda v: v == "auto" if isinstance(v, str) else v >= 0,
                          'a margin >= 0 m or "auto" (from the cloth\'s spacing)')
COLLIDER_FIELDS = {  # [[boxes]], [[capsules]], [[meshes]]: the arguments of rs.Box, ...
    "boxes": {"center": _Field(_VEC3, default=REQUIRED), "size": _Field(_VEC3, default=REQUIRED),
              "rotation": _Field(_VEC3), "friction": _COLLIDER_FRICTION,
              "margin": _COLLIDER_MARGIN, **_MOTION_FIELDS},
    "capsules": {"start": _Field(_VEC3, default=REQUIRED), "end": _Field(_VEC3, default=REQUIRED),
                 "radius": _Field(float, lambda v: v > 0, "a radius > 0 m", REQUIRED),
                 "friction": _COLLIDER_FRICTION, "margin": _COLLIDER_MARGIN, **_MOTION_FIELDS},
    "meshes": {"path": _Field(str, default=REQUIRED),
               "scale": _Field(float, lambda v: v > 0, "a scale factor > 0"),
               "center": _Field(_VEC3), "rotation": _Field(_VEC3), "friction": _COLLIDER_FRICTION,
               "thickness": _Field(float, lambda v: v >= 0, "a thickness >= 0 m"),
               "margin": _COLLIDER_MARGIN, **_MOTION_FIELDS},
}
CAMERA_FIELDS = {
    "azimuth": _Field(float),
    "elevation": _Field(float),
    "distance": _Field(float, lambda v: v > 0, "a distance > 0 m"),
    "target": _Field(_VEC3),
    "fov_y": _Field(float, lambda v: 0 < v < 180, "a field of view between 0 and 180 deg"),
}
_TOP_LEVEL = (
    "description", "builder", "max_particles", "simulation", "ground", "spheres", "camera",
    "wind", "weight", *COLLIDER_FIELDS, *SOLVER_SETTINGS,
)
#: [xpbd] / [vbd]: the integrators' settings (engine/solver_settings.py), set on the
#: Simulation for whenever that integrator runs
SOLVER_FIELDS = {
    name: {key: _Field(int if kind == "count" else float if kind == "number" else str,
                       lambda v, n=name, k=key: solver_setting_allowed(n, k, v), allowed)
           for key, (kind, allowed) in keys.items()}
    for name, keys in SOLVER_SETTINGS.items()
}


# --- values and types -----------------------------------------------------------------
def parse_value(text: str) -> Any:
    """Read a command-line value as a TOML value ("2000", "0.001", "[0,-9.81,0]",
    "true", "'xz'"); text that is not valid TOML stays a string ("xz", "top-corners")."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise SceneError(
            f"value {show(text)}: nested too deeply; allowed: at most {MAX_NESTING} levels"
        ) from None


def _describe(expected: Any) -> str:
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if expected is type(None):
        return "none"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if origin is tuple:
        return f"a list of {len(args)} numbers"
    if origin is not None and issubclass(origin, Sequence):
        return f"a list of ({_describe(args[0])})" if args else "a list"
    return {float: "a number", int: "an integer", bool: "true or false", str: "a string"}.get(
        expected, str(expected)
    )


class _WrongType(Exception):
    pass


class _OutOfRange(Exception):
    """A number of the right type that no simulation can hold (inf, nan, 1e300)."""


def _coerce(value: Any, expected: Any) -> Any:
    """Convert `value` to the `expected` annotation (float, int, bool, str, unions,
    tuples and sequences of those); raise _WrongType when it cannot. Containers come
    back as lists, the form TOML writes."""
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        if value is None or (
            isinstance(value, str) and value.lower() == "none" and str not in args
        ):
            if type(None) in args:
                return None
        for option in args:
            if option is type(None):
                continue
            try:
                return _coerce(value, option)
            except _WrongType:
                pass
        raise _WrongType
    if origin is tuple or (origin is not None and issubclass(origin, Sequence)):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise _WrongType
        if origin is tuple:
            if len(value) != len(args):
                raise _WrongType
            return [_coerce(v, a) for v, a in zip(value, args)]
        return [_coerce(v, args[0]) for v in value] if args else list(value)
    if expected is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _WrongType
        try:
            number = float(value)
        except OverflowError:
            raise _OutOfRange(value) from None
        if not abs(number) <= MAX_MAGNITUDE:  # also catches nan
            raise _OutOfRange(value)
        return number
    if expected is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _WrongType
        return value
    if expected in (bool, str):
        if not isinstance(value, expected):
            raise _WrongType
        return value
    return value


def _typed(where: str, key: str, value: Any, expected: Any) -> Any:
    try:
        return _coerce(value, expected)
    except _WrongType:
        raise SceneError(
            f"{where}: {key}: expected {_describe(expected)}, got {show(value)}"
        ) from None
    except _OutOfRange as error:
        raise SceneError(
            f"{where}: {key}: {error.args[0]!r} is not a usable number; allowed: finite "
            f"numbers up to {MAX_MAGNITUDE:.3g} in magnitude"
        ) from None


def _unknown_key(where: str, key: str, allowed: Sequence[str]) -> SceneError:
    return SceneError(f"{where}: unknown key {key!r}; allowed: {', '.join(allowed)}")


def _table(where: str, section: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise SceneError(
            f"{where}: {section}: expected a table ([{section}]), got {show(value)}"
        )
    return value


def _fixed_section(where: str, section: str, data: dict, fields: dict[str, _Field]) -> dict:
    """Validate a section with known keys; fill defaults; check required keys."""
    data = _table(where, section, data)
    out = {}
    for key, value in data.items():
        if key not in fields:
            raise _unknown_key(where, f"{section}.{key}", [f"{section}.{k}" for k in fields])
        spec = fields[key]
        value = _typed(where, f"{section}.{key}", value, spec.type)
        if spec.check is not None and not spec.check(value):
            allowed = spec.allowed() if callable(spec.allowed) else spec.allowed
            raise SceneError(f"{where}: {section}.{key}: allowed {allowed}, got {show(value)}")
        out[key] = value
    missing = [k for k, spec in fields.items() if spec.default is REQUIRED and k not in out]
    if missing:
        raise SceneError(f"{where}: {section}: missing required key(s) {', '.join(missing)}")
    for key, spec in fields.items():
        if key not in out and spec.default is not None:
            out[key] = copy.deepcopy(spec.default)
    return out


def builder_parameters(builder: str) -> dict[str, inspect.Parameter]:
    """The keyword arguments a scene may give the named builder."""
    return dict(inspect.signature(BUILDERS[builder]).parameters)


def _builder_section(where: str, builder: str, data: dict) -> dict:
    data = _table(where, builder, data)
    parameters = builder_parameters(builder)
    hints = typing.get_type_hints(BUILDERS[builder])
    out = {}
    for key, value in data.items():
        if key not in parameters:
            raise _unknown_key(where, f"{builder}.{key}", [f"{builder}.{k}" for k in parameters])
        out[key] = _typed(where, f"{builder}.{key}", value, hints.get(key, Any))
    missing = [
        f"{builder}.{k}" for k, p in parameters.items()
        if p.default is inspect.Parameter.empty and k not in out
    ]
    if missing:
        raise SceneError(f"{where}: missing required key(s) {', '.join(missing)}")
    return out


# --- Scene ------------------------------------------------------------------------------
@dataclass
class Scene:
    """A validated scene: which builder with which parameters, and how to simulate it.

    ``settings`` holds dt (s), gravity (m/s^2), integrator, drag (1/s) and substeps
    (simulation steps per rendered frame), and optionally break_strain and max_stretch
    (strains), crack_tip_factor and crack_tip_time (set on the Simulation). ``wind`` is
    the optional [wind] table (rs.Wind's arguments); ``weight`` the optional [weight]
    table (mass kg, sewn along the lowest particles: topology.sew_weight). ``ground`` (height m, friction) is optional;
    ``spheres`` lists center (m), radius (m), friction; ``camera`` holds viewer hints.
    ``max_particles`` is the size limit the scene was checked against. ``solvers``
    holds the [xpbd] / [vbd] tables (engine/solver_settings.py).
    """

    name: str
    description: str
    builder: str
    params: dict
    settings: dict
    ground: dict | None = None
    spheres: list[dict] = field(default_factory=list)
    camera: dict = field(default_factory=dict)
    source: Path | None = None
    wind: dict | None = None
    max_particles: int = MAX_PARTICLES
    #: [[boxes]], [[capsules]], [[meshes]] tables by section name (see COLLIDER_FIELDS)
    colliders: dict[str, list[dict]] = field(default_factory=dict)
    solvers: dict = field(default_factory=dict)  # {"xpbd": {...}, "vbd": {...}}
    weight: dict | None = None

    def build(self) -> SpringSystem:
        """A fresh SpringSystem from the builder and its parameters (and the [weight])."""
        system = BUILDERS[self.builder](**self.params)
        if self.weight is not None:
            system = sew_weight(system, **self.weight)
        system.name = self.name
        return system

    def contacts(self) -> list:
        """The scene's obstacles as ropesim.engine.contacts objects (ground first)."""
        from ropesim.engine.contacts import Ground, Sphere

        found = [Ground(**self.ground)] if self.ground is not None else []
        found += [Sphere(**sphere) for sphere in self.spheres]
        found += [Box(**box) for box in self.colliders.get("boxes", [])]
        found += [Capsule(**capsule) for capsule in self.colliders.get("capsules", [])]
        for mesh in self.colliders.get("meshes", []):
            found.append(Mesh.from_file(self.mesh_path(mesh["path"]),
                                        **{k: v for k, v in mesh.items() if k != "path"}))
        return found

    def mesh_path(self, path: str) -> Path:
        """A [[meshes]] path: absolute, else relative to the scene file, else a shipped mesh
        in resources/meshes/ (the first that exists; else the shipped place)."""
        candidates = [Path(path)] if Path(path).is_absolute() else (
            ([self.source.parent / path] if self.source is not None else [])
            + [resource_dir() / "meshes" / path])
        return next((c for c in candidates if c.is_file()), candidates[-1])

    def simulation(self, **overrides: Any) -> "Simulation":
        """A Simulation of the built system with this scene's settings and contacts;
        keyword arguments replace any of them (e.g. ``integrator="verlet"``)."""
        from ropesim.engine.simulation import Simulation

        from ropesim.engine.forces.wind import Wind

        kwargs: dict[str, Any] = {**copy.deepcopy(self.settings), "contacts": self.contacts()}
        kwargs.update(overrides)
        properties = {k: kwargs.pop(k) for k in _SIMULATION_PROPERTIES if k in kwargs}
        sim = Simulation(self.build(), **kwargs)
        for key, value in properties.items():
            setattr(sim, key, value)
        if self.wind is not None:
            sim.add_force(Wind(**self.wind))
        apply_solver_settings(sim, self.solvers)
        return sim

    def with_overrides(self, overrides: dict[str, object]) -> "Scene":
        """A new, validated scene with some values replaced.

        Keys are "section.key" (``"cloth.nx"``, ``"simulation.dt"``, ``"ground.height"``)
        or a bare key looked up in the builder section first, then in simulation
        (``"stiffness"``, ``"dt"``). String values are read as TOML values
        (``"2000"``, ``"[0,-9.81,0]"``, ``"true"``) and converted to the expected type.
        """
        data = self.to_dict()
        for key, raw in overrides.items():
            section, name = self._override_target(key)
            value = parse_value(raw) if isinstance(raw, str) else raw
            if section is None:
                data[name] = value
            else:
                data.setdefault(section, {})[name] = value
        return _validate(data, self.name, self.source, where="override")

    def _override_target(self, key: str) -> tuple[str | None, str]:
        """(section, key) an override changes; section None for the top-level
        ``max_particles``."""
        sections = (self.builder, "simulation", "ground", "camera", "wind", "weight",
                    *SOLVER_FIELDS)
        if key == "max_particles":
            return None, key
        if not isinstance(key, str):
            raise SceneError(f"override: key: expected a string, got {show(key)}")
        if "." in key:
            section, name = key.split(".", 1)
            if section not in sections:
                raise SceneError(
                    f"override: {key!r}: unknown section {section!r}; allowed sections: "
                    f"{', '.join(sections)}"
                )
            return section, name
        if key in builder_parameters(self.builder):
            return self.builder, key
        if key in SIMULATION_FIELDS:
            return "simulation", key
        allowed = [*builder_parameters(self.builder), *SIMULATION_FIELDS, "max_particles"]
        raise SceneError(
            f"override: unknown key {key!r}; allowed: {', '.join(allowed)} "
            f"or section.key with a section in {', '.join(sections)}"
        )

    def to_dict(self) -> dict:
        """The scene as plain TOML-ready data (what :meth:`save` writes)."""
        data: dict[str, Any] = {"description": self.description, "builder": self.builder}
        if self.max_particles != MAX_PARTICLES:
            data["max_particles"] = self.max_particles
        data[self.builder] = {k: v for k, v in self.params.items() if v is not None}
        data["simulation"] = dict(self.settings)
        if self.ground is not None:
            data["ground"] = dict(self.ground)
        if self.spheres:
            data["spheres"] = [dict(s) for s in self.spheres]
        if self.camera:
            data["camera"] = dict(self.camera)
        if self.wind is not None:
            data["wind"] = dict(self.wind)
        data.update({name: [dict(t) for t in tables] for name, tables in self.colliders.items()})
        data.update({name: dict(values) for name, values in self.solvers.items() if values})
        if self.weight is not None:
            data["weight"] = dict(self.weight)
        return copy.deepcopy(data)

    def save(self, path: str | Path) -> None:
        """Write the scene as a TOML file that :func:`load` reads back."""
        Path(path).write_text(tomli_w.dumps(self.to_dict()), encoding="utf-8")


def _too_deep(data: Any) -> str | None:
    """The key path (``explicit.positions[0]``) of the first table or array nested more
    than MAX_NESTING levels deep in `data`, or None; no recursion, so no depth is too much."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_NESTING:
            return where
        items = (
            ((f"{where}.{k}" if where else str(k)), v) for k, v in value.items()
        ) if isinstance(value, dict) else ((f"{where}[{i}]", v) for i, v in enumerate(value))
        stack.extend(
            (child, key, depth + 1) for key, child in items
            if isinstance(child, (dict, list, tuple))
        )
    return None


#: Builder parameters that set a scene's size (named in the size-limit error).
_COUNTED_KEYS = ("n", "m", "nx", "ny", "arms", "per_arm", "positions", "springs")


def _check_size(where: str, builder: str, params: dict, max_particles: int) -> None:
    """Reject a scene whose builder would make more than `max_particles` particles (or
    MAX_SPRINGS_PER_PARTICLE times as many springs), before it allocates anything."""
    size = planned_size(builder, params)
    if size is None:
        return
    particles, springs = size
    if particles > max_particles or springs > MAX_SPRINGS_PER_PARTICLE * max_particles:
        counts = [f"{k} = {show(v)}" for k, v in params.items() if k in _COUNTED_KEYS]
        raise SceneError(
            f"{where}: [{builder}] {', '.join(counts) or 'the defaults'} build {particles} "
            f"particles and {springs} springs; "
            f"allowed: at most max_particles = {max_particles} particles and "
            f"{MAX_SPRINGS_PER_PARTICLE} x max_particles springs (raise the limit with the "
            f"top-level key max_particles)"
        )


def _validate(data: dict, name: str, source: Path | None, where: str) -> Scene:
    """Check every key and type, build the system once, and return the Scene."""
    data = _table(where, "scene", data)
    deep = _too_deep(data)
    if deep is not None:
        raise SceneError(
            f"{where}: {deep.split('[')[0]}: nested too deeply (at {show(deep)}); allowed: at "
            f"most {MAX_NESTING} levels of tables and arrays"
        )
    if "builder" not in data:
        raise SceneError(
            f"{where}: missing required key 'builder' (which builder makes the system); "
            f"allowed: {', '.join(BUILDERS)}"
        )
    builder = _typed(where, "builder", data["builder"], str)
    if builder not in BUILDERS:
        raise SceneError(
            f"{where}: builder: unknown builder {show(builder)}; allowed: {', '.join(BUILDERS)}"
        )
    for key in data:
        if key not in _TOP_LEVEL and key != builder:
            allowed = ["description", "builder", "max_particles", "<builder section>",
                       *_TOP_LEVEL[3:]]
            raise _unknown_key(where, show(key) if not isinstance(key, str) else key, allowed)
    description = _typed(where, "description", data.get("description", ""), str)
    max_particles = _typed(where, "max_particles", data.get("max_particles", MAX_PARTICLES), int)
    if max_particles < 1:
        raise SceneError(
            f"{where}: max_particles: allowed an integer >= 1, got {show(max_particles)}"
        )
    for section in ("spheres", *COLLIDER_FIELDS):
        if not isinstance(data.get(section, []), list):
            raise SceneError(f"{where}: {section}: expected an array of tables ([[{section}]]), "
                             f"got {show(data[section])}")
    spheres = data.get("spheres", [])
    params = _builder_section(where, builder, data.get(builder, {}))
    _check_size(where, builder, params, max_particles)
    scene = Scene(
        name=name,
        description=description,
        builder=builder,
        params=params,
        settings=_fixed_section(where, "simulation", data.get("simulation", {}), SIMULATION_FIELDS),
        ground=(
            _fixed_section(where, "ground", data["ground"], GROUND_FIELDS)
            if "ground" in data else None
        ),
        spheres=[_fixed_section(where, "spheres", s, SPHERE_FIELDS) for s in spheres],
        camera=_fixed_section(where, "camera", data.get("camera", {}), CAMERA_FIELDS),
        source=source,
        wind=(_fixed_section(where, "wind", data["wind"], WIND_FIELDS)
              if "wind" in data else None),
        max_particles=max_particles,
        colliders={name: [_fixed_section(where, name, t, fields) for t in data[name]]
                   for name, fields in COLLIDER_FIELDS.items() if data.get(name)},
        solvers={name: _fixed_section(where, name, data[name], fields)
                 for name, fields in SOLVER_FIELDS.items() if name in data},
        weight=(_fixed_section(where, "weight", data["weight"], WEIGHT_FIELDS)
                if "weight" in data else None),
    )
    try:
        system = scene.build()
    except ValueError as error:
        raise SceneError(f"{where}: [{builder}] {error}") from None
    try:
        scene.contacts()
    except ValueError as error:
        raise SceneError(f"{where}: {error}") from None
    if system.planar and scene.settings["gravity"][2] != 0:
        raise SceneError(
            f"{where}: simulation.gravity: a planar system needs gz = 0, "
            f"got {scene.settings['gravity']}"
        )
    return scene


def scene_from_dict(data: dict, name: str, source: str | Path | None = None) -> Scene:
    """Validate scene data (as read from TOML) and return the Scene."""
    source = None if source is None else Path(source)
    return _validate(data, name, source, where=str(source) if source else f"scene {name!r}")


def scene_names() -> list[str]:
    """Names of the shipped scenes, the default scene first."""
    names = sorted(p.stem for p in scene_dir().glob("*.toml"))
    return sorted(names, key=lambda n: n != DEFAULT_SCENE)


def _is_path(path_or_name: str | Path) -> bool:
    """Whether a scene argument is a path rather than a shipped scene name: a Path
    object, text ending in .toml, or text with a path separator (``./cloth``)."""
    if isinstance(path_or_name, Path):
        return True
    text = str(path_or_name)
    separators = [sep for sep in (os.sep, os.altsep, "/") if sep]
    return text.endswith(".toml") or any(sep in text for sep in separators)


def scene_path(path_or_name: str | Path) -> Path:
    """The file of a scene given as a path or a shipped scene name.

    A bare name (``cloth``) is a shipped scene, even when a file or folder of that name
    is in the current directory; a bare name that is not shipped may still be a file
    there. A path (see :func:`_is_path`) must be an existing file.
    """
    if not isinstance(path_or_name, (str, Path)):
        raise SceneError(
            f"scene: expected a scene name or a path, got {show(path_or_name)}"
        )
    path = Path(path_or_name)
    if not _is_path(path_or_name):
        shipped = scene_dir() / f"{path_or_name}.toml"
        if shipped.is_file():
            return shipped
        if path.is_file():
            return path
        raise SceneError(
            f"unknown scene {str(path_or_name)!r}; shipped scenes: {', '.join(scene_names())} "
            "(or give a path to a .toml file, e.g. ./my-scene.toml)"
        )
    if not path.is_file():
        what = "is a folder, not a scene file" if path.is_dir() else "no such scene file"
        raise SceneError(f"{path}: {what}")
    return path


def load(path_or_name: str | Path) -> Scene:
    """Load and validate a scene from a .toml path or a shipped scene name ("cloth").

    The file is read as UTF-8, at most MAX_SCENE_BYTES long and MAX_NESTING levels
    deep; every problem is a SceneError naming the file (and the key)."""
    path = scene_path(path_or_name)
    try:
        size = path.stat().st_size
        if size > MAX_SCENE_BYTES:
            raise SceneError(
                f"{path}: {size} bytes; allowed: scene files up to {MAX_SCENE_BYTES} bytes"
            )
        raw = path.read_bytes()
    except OSError as error:
        raise SceneError(f"{path}: cannot read the scene file: {error.strerror or error}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise SceneError(
            f"{path}: not UTF-8 text (byte {error.start}, line {line}); allowed: a TOML file "
            "saved as UTF-8"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SceneError(f"{path}: TOML syntax error: {error}") from None
    except RecursionError:
        raise SceneError(
            f"{path}: values nested too deeply; allowed: at most {MAX_NESTING} levels of "
            "tables and arrays"
        ) from None
    return scene_from_dict(data, path.stem, path)
