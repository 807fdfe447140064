"""The panel's "Solver" section (panel.py calls it): the settings of XPBD (substeps,
iterations, compliance, relaxation) and VBD (iterations, Chebyshev, initial guess), shown while
one of them is the current integrator, and its ``sim.solver_stats``.

Edits go to ``sim.integrator_object`` through :func:`set_solver_setting`, which checks
them as a scene file's are (engine/solver_settings.py) and returns the reason of a
refusal instead of raising inside the frame; the sliders clamp typed values to their
range, so the panel itself never asks for a refused value. The Simulation keeps
one instance per integrator, so the settings stay through switches away and back.
"""

from __future__ import annotations

import math
from typing import Any

from ..engine.integrators.vbd import INITIALISATIONS
from ..engine.simulation import Simulation
from ..engine.solver_settings import SOLVER_SETTINGS, solver_setting_allowed

#: slider ranges of the counts (a typed value may go up to solver_settings.MAX_COUNT)
SLIDER_COUNTS = {("xpbd", "substeps"): 40, ("xpbd", "iterations"): 20,
                 ("vbd", "iterations"): 100}
#: range of the compliance slider, m/N (logarithmic)
COMPLIANCE_RANGE = (1e-9, 1e-1)
#: slider ranges of the other numbers (inside their allowed ranges, whose upper ends
#: are excluded: Chebyshev's rho below 1, XPBD's over-relaxation below 2)
SLIDER_NUMBERS = {("vbd", "chebyshev_rho"): (0.0, 0.99), ("xpbd", "relaxation"): (1.0, 1.99)}


def solver_section_shown(sim: Simulation) -> bool:
    """Whether the current integrator has settings of its own (xpbd, vbd)."""
    return sim.integrator in SOLVER_SETTINGS


def set_solver_setting(sim: Simulation, key: str, value: Any) -> str | None:
    """Set the current integrator's ``key`` (None for compliance: each spring's 1/k);
    returns None, or why the value was refused (naming the key and the allowed values)."""
    name = sim.integrator
    kind, allowed = SOLVER_SETTINGS[name][key]
    if not (key == "compliance" and value is None):
        if kind == "number" and not math.isfinite(value) or not solver_setting_allowed(
                name, key, value):
            return f"{name}.{key}: allowed {allowed}, got {value!r}"
    setattr(sim.integrator_object, key, value)
    return None


def solver_stats_line(sim: Simulation) -> str:
    """The solver figures of the last step (passes, residual) and the totals, two lines."""
    stats = sim.solver_stats
    unit = " m" if sim.integrator == "xpbd" else " (relative)"
    return (f"{stats.iterations} passes/step, residual {stats.residual:.2e}{unit}\n"
            f"{stats.total_iterations} passes in {stats.implicit_steps} steps")


def draw_solver_section(imgui: Any, sim: Simulation, stats_line: str | None = None) -> list[str]:
    """Build the section's widgets for the current integrator; returns their labels
    (tests) and leaves a refusal message, if any, in the section. ``stats_line``: the
    solver figures as the panel's live read-outs last computed them (default: now)."""
    name, solver = sim.integrator, sim.integrator_object
    clamp = imgui.SliderFlags_.always_clamp  # typed values stay in the slider's range
    labels: list[str] = []
    refused = None
    for key, (kind, _) in SOLVER_SETTINGS[name].items():
        label = f"{key}###{name}.{key}"
        labels.append(label)
        if kind == "count":
            changed, value = imgui.slider_int(label, getattr(solver, key), 1,
                                              SLIDER_COUNTS[(name, key)], "%d", clamp)
        elif key == "compliance":
            per_spring = solver.compliance is None
            changed, per_spring_now = imgui.checkbox("compliance = 1/k###xpbd.per_spring",
                                                     per_spring)
            labels.append("compliance = 1/k###xpbd.per_spring")
            if changed:
                refused = set_solver_setting(sim, key, None if per_spring_now else 1e-6)
                continue
            if per_spring:
                continue
            changed, value = imgui.slider_float(label + " [m/N]", solver.compliance,
                                                *COMPLIANCE_RANGE, "%.2e",
                                                imgui.SliderFlags_.logarithmic | clamp)
        elif kind == "number":
            changed, value = imgui.slider_float(label, getattr(solver, key),
                                                *SLIDER_NUMBERS[(name, key)], "%.2f", clamp)
        else:
            current = INITIALISATIONS.index(getattr(solver, key))
            changed, index = imgui.combo(label, current, list(INITIALISATIONS))
            value = INITIALISATIONS[index]
        if changed:
            refused = set_solver_setting(sim, key, value) or refused
    imgui.text(solver_stats_line(sim) if stats_line is None else stats_line)
    if refused:
        imgui.text(refused)
    return labels
