"""engine/solver_settings.py's SOLVER_SETTING_TABLE is the one source of the XPBD / VBD
settings: the allowed values' prose, the check, scene-file errors and the panel's
sliders all come from it, and every slider range lies inside its allowed range."""

from __future__ import annotations

import pytest

import ropesim as rs
from ropesim.app.solver_panel import draw_solver_section
from ropesim.engine.solver_settings import (SOLVER_SETTING_TABLE, SOLVER_SETTINGS,
                                            SolverSetting, solver_setting_allowed,
                                            solver_setting_refusal)
from ropesim.io.scenes import SceneError, scene_from_dict

SETTINGS = [(name, key, setting) for name, keys in SOLVER_SETTING_TABLE.items()
            for key, setting in keys.items()]
RANGED = [(name, key, setting) for name, key, setting in SETTINGS if setting.kind != "choice"]


def outside(setting: SolverSetting) -> list[float]:
    """Values just outside the allowed range: below the low end, and at or above the
    high end (at it when the high end is excluded)."""
    step = 1 if setting.kind == "count" else 1e-9
    values = [setting.low - step]
    if setting.high is not None:
        values.append(setting.high + step if setting.high_included else setting.high)
    return values


@pytest.mark.parametrize("name, key, setting", RANGED, ids=lambda v: str(v)[:20])
def test_every_slider_range_lies_inside_the_allowed_range(name, key, setting):
    low, high = setting.slider
    assert setting.low <= low < high
    assert setting.high is None or high < setting.high or (setting.high_included
                                                           and high == setting.high)
    assert solver_setting_allowed(name, key, low) and solver_setting_allowed(name, key, high)


def test_choices_have_no_slider_and_only_their_choices_are_allowed():
    for name, key, setting in SETTINGS:
        if setting.kind == "choice":
            assert setting.slider is None and setting.choices
            assert all(solver_setting_allowed(name, key, c) for c in setting.choices)
            assert not solver_setting_allowed(name, key, "guess")


def test_a_slider_outside_the_allowed_range_is_refused_when_the_table_is_written():
    with pytest.raises(ValueError, match=r"SolverSetting.slider: \(0.0, 2.0\) lies outside"):
        SolverSetting("number", low=0.0, high=1.0, slider=(0.0, 2.0))
    with pytest.raises(ValueError, match="SolverSetting.kind: expected one of count"):
        SolverSetting("colour")


@pytest.mark.parametrize("name, key, setting", RANGED, ids=lambda v: str(v)[:20])
def test_a_refused_value_names_the_range_the_table_gives(name, key, setting):
    """Just outside either end: the refusal (panel) and the scene error both quote the
    table's allowed values, whose ends are the table's low and high."""
    assert f"{setting.low:g}" in setting.allowed
    if setting.high is not None:
        below = "below " if not setting.high_included else ""
        assert f"to {below}{setting.high:g}" in setting.allowed
    assert SOLVER_SETTINGS[name][key] == (setting.kind, setting.allowed)
    for value in outside(setting):
        refused = solver_setting_refusal(name, key, value)
        assert refused == f"{name}.{key}: allowed {setting.allowed}, got {value!r}"
        with pytest.raises(SceneError) as error:
            scene_from_dict({"builder": "rope", "rope": {"n": 4, "length": 1.0},
                             name: {key: value}}, "table")
        assert f"{name}.{key}" in str(error.value) and setting.allowed in str(error.value)
    inside = setting.slider[0]
    assert solver_setting_refusal(name, key, inside) is None


def test_non_finite_numbers_and_none_are_refused_unless_the_table_allows_none():
    assert "xpbd.relaxation" in solver_setting_refusal("xpbd", "relaxation", float("nan"))
    assert "xpbd.compliance" in solver_setting_refusal("xpbd", "compliance", float("inf"))
    assert solver_setting_refusal("xpbd", "compliance", None) is None  # each spring's 1/k
    assert "vbd.chebyshev_rho" in solver_setting_refusal("vbd", "chebyshev_rho", None)


class RecordingGui:
    """Just the imgui calls the Solver section makes, recording each widget's range."""

    class SliderFlags_:
        always_clamp, logarithmic = 1, 2

    def __init__(self) -> None:
        self.ranges: dict[str, tuple] = {}

    def slider_int(self, label, value, low, high, fmt, flags):
        self.ranges[label] = (low, high)
        return False, value

    def slider_float(self, label, value, low, high, fmt, flags):
        self.ranges[label] = (low, high, bool(flags & self.SliderFlags_.logarithmic))
        return False, value

    def checkbox(self, label, on):
        return False, on

    def combo(self, label, index, items):
        self.ranges[label] = tuple(items)
        return False, index

    def text(self, line):
        pass


def test_the_panels_widgets_take_their_ranges_from_the_table():
    sim = rs.Simulation(rs.rope(4, 1.0), dt=1 / 60, integrator="xpbd")
    sim.integrator_object.compliance = 1e-6  # its slider shows when not None
    sim.integrator_object.tethers = 0.1  # so does this one
    shown = {}
    for name in SOLVER_SETTING_TABLE:
        sim.integrator = name
        gui = RecordingGui()
        draw_solver_section(gui, sim, stats_line="")
        shown.update({label.split("###")[1]: ends for label, ends in gui.ranges.items()})
    for name, key, setting in SETTINGS:
        if setting.kind == "choice":
            assert shown[f"{name}.{key}"] == setting.choices
        elif setting.kind == "number":
            assert shown[f"{name}.{key}"] == (*setting.slider, setting.log_slider)
        else:
            assert shown[f"{name}.{key}"] == setting.slider
