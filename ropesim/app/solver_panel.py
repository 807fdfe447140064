"""The panel's "Solver" section (panel.py calls it): the settings of XPBD (substeps,
iterations, compliance, relaxation) and VBD (iterations, Chebyshev, initial guess), shown while
one of them is the current integrator, and its ``sim.solver_stats``.

Edits go to ``sim.integrator_object`` through :func:`set_solver_setting`, which checks
them as a scene file's are and returns the reason of a refusal instead of raising inside
the frame. Every widget comes from engine/solver_settings.py's SOLVER_SETTING_TABLE: a
count or number is a slider over the setting's ``slider`` range (which lies inside its
allowed range, and typed values are clamped to it, so the panel itself never asks for a
refused value), a choice a combo, a setting that may be None a checkbox. The Simulation
keeps one instance per integrator, so the settings stay through switches away and back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.simulation import Simulation
from ..engine.solver_settings import (SOLVER_SETTING_TABLE, SolverSetting,
                                      solver_setting_refusal)

#: the number sliders' ranges by (integrator, key), as the table gives them
SLIDER_NUMBERS = {(name, key): setting.slider
                  for name, keys in SOLVER_SETTING_TABLE.items()
                  for key, setting in keys.items() if setting.kind == "number"}


def solver_section_shown(sim: Simulation) -> bool:
    """Whether the current integrator has settings of its own (xpbd, vbd)."""
    return sim.integrator in SOLVER_SETTING_TABLE


def set_solver_setting(sim: Simulation, key: str, value: Any) -> str | None:
    """Set the current integrator's ``key`` (None for compliance: each spring's 1/k);
    returns None, or why the value was refused (naming the key and the allowed values)."""
    refused = solver_setting_refusal(sim.integrator, key, value)
    if refused is None:
        setattr(sim.integrator_object, key, value)
    return refused


def first_value(sim: Simulation, setting: SolverSetting) -> Any:
    """The value unticking a setting's None checkbox sets. For the compliance (None:
    each spring's 1/k) the springs' median 1/k (m/N, over those with stiffness), so the
    cloth keeps its stiffness at first (a fixed compliance is undamped: the springs'
    dampers stop acting); else, or without a stiff spring, the table's ``first``."""
    if setting.none_means == "1/k":
        stiffness = sim.stiffness[sim.stiffness > 0]
        if stiffness.size:
            return float(np.median(1.0 / stiffness.astype(np.float64)))
    return setting.first


def solver_stats_line(sim: Simulation) -> str:
    """The solver figures of the last step (passes, residual) and the totals, two lines."""
    stats = sim.solver_stats
    unit = " m" if sim.integrator == "xpbd" else " (relative)"
    return (f"{stats.iterations} passes/step, residual {stats.residual:.2e}{unit}\n"
            f"{stats.total_iterations} passes in {stats.implicit_steps} steps")


def _setting_widget(imgui: Any, label: str, setting: SolverSetting,
                    value: Any) -> tuple[bool, Any]:
    """The slider or combo of one setting (not None), from its table entry."""
    clamp = imgui.SliderFlags_.always_clamp  # typed values stay in the slider's range
    if setting.kind == "choice":
        changed, index = imgui.combo(label, setting.choices.index(value), list(setting.choices))
        return changed, setting.choices[index]
    low, high = setting.slider
    if setting.kind == "count":
        return imgui.slider_int(label, value, int(low), int(high), "%d", clamp)
    if setting.log_slider:
        return imgui.slider_float(label, value, low, high, "%.2e",
                                  imgui.SliderFlags_.logarithmic | clamp)
    return imgui.slider_float(label, value, low, high, "%.2f", clamp)


def draw_solver_section(imgui: Any, sim: Simulation, stats_line: str | None = None) -> list[str]:
    """Build the section's widgets for the current integrator; returns their labels
    (tests) and leaves a refusal message, if any, in the section. ``stats_line``: the
    solver figures as the panel's live read-outs last computed them (default: now)."""
    name, solver = sim.integrator, sim.integrator_object
    labels: list[str] = []
    refused = None
    for key, setting in SOLVER_SETTING_TABLE[name].items():
        labels.append(f"{key}###{name}.{key}")
        value = getattr(solver, key)
        if setting.none_means:
            toggle = f"{key} = {setting.none_means}###{name}.{key}.none"
            labels.append(toggle)
            changed, is_none = imgui.checkbox(toggle, value is None)
            if changed:
                refused = set_solver_setting(sim, key,
                                             None if is_none else first_value(sim, setting))
                continue
            if value is None:
                continue
        unit = f" [{setting.unit}]" if setting.unit else ""
        changed, value = _setting_widget(imgui, f"{key}{unit}###{name}.{key}", setting, value)
        if changed:
            refused = set_solver_setting(sim, key, value) or refused
    imgui.text(solver_stats_line(sim) if stats_line is None else stats_line)
    if refused:
        imgui.text(refused)
    return labels
