"""The panel's Solver section (app/solver_panel.py): shown for xpbd and vbd only, its
widgets and stats line, and edits that land on the integrator or are refused with the
key and the allowed values."""

from __future__ import annotations

import pytest
from imgui_bundle import imgui, implot

import ropesim as rs
from ropesim.app.controller import ViewerController
from ropesim.app.panel import Panel
from ropesim.app.solver_panel import (SLIDER_NUMBERS, draw_solver_section,
                                      set_solver_setting, solver_section_shown,
                                      solver_stats_line)
from ropesim.engine.solver_settings import solver_setting_allowed
from ropesim.io.scenes import load


@pytest.fixture
def gui():
    context, plot_context = imgui.create_context(), implot.create_context()
    io = imgui.get_io()
    io.set_ini_filename("")
    io.display_size = imgui.ImVec2(1280, 720)
    io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
    yield io
    implot.destroy_context(plot_context)
    imgui.destroy_context(context)


def one_frame(io, draw):
    io.delta_time = 1 / 60
    imgui.new_frame()
    imgui.begin("test")
    result = draw()
    imgui.end()
    imgui.render()
    return result


def test_section_shown_only_for_the_solvers_with_settings():
    sim = rs.Simulation(rs.rope(6, 1.0), integrator="symplectic_euler")
    shown = {}
    for name in rs.INTEGRATORS:
        sim.integrator = name
        shown[name] = solver_section_shown(sim)
    assert {name for name, on in shown.items() if on} == {"xpbd", "vbd"}


def test_widgets_and_stats_line_of_each_solver(gui):
    sim = rs.Simulation(rs.rope(6, 1.0), dt=1 / 60, integrator="xpbd")
    sim.step(2)
    labels = one_frame(gui, lambda: draw_solver_section(imgui, sim))
    assert [label.split("###")[0] for label in labels] == [
        "substeps", "iterations", "compliance", "compliance = 1/k", "relaxation", "tethers",
        "tethers = off", "projection"]
    assert solver_stats_line(sim).startswith(f"{sim.solver_stats.iterations} passes/step")
    sim.integrator = "vbd"
    sim.step()
    labels = one_frame(gui, lambda: draw_solver_section(imgui, sim))
    assert [label.split("###")[0] for label in labels] == [
        "iterations", "chebyshev_rho", "initialisation"]
    assert "residual" in solver_stats_line(sim)


def test_edits_land_on_the_integrator_or_are_refused_with_the_reason():
    sim = rs.Simulation(rs.rope(6, 1.0), dt=1 / 60, integrator="xpbd")
    assert set_solver_setting(sim, "substeps", 9) is None
    assert set_solver_setting(sim, "compliance", 1e-5) is None
    assert (sim.integrator_object.substeps, sim.integrator_object.compliance) == (9, 1e-5)
    assert set_solver_setting(sim, "compliance", None) is None
    assert sim.integrator_object.compliance is None
    assert set_solver_setting(sim, "relaxation", 1.2) is None
    assert sim.integrator_object.relaxation == 1.2
    refused = set_solver_setting(sim, "relaxation", 2.0)
    assert "xpbd.relaxation" in refused and "from 1 to below 2" in refused and "2.0" in refused
    assert sim.integrator_object.relaxation == 1.2
    refused = set_solver_setting(sim, "substeps", 0)
    assert "xpbd.substeps" in refused and "from 1 to 1000" in refused and "0" in refused
    assert sim.integrator_object.substeps == 9
    sim.integrator = "vbd"
    assert "vbd.chebyshev_rho" in set_solver_setting(sim, "chebyshev_rho", 1.5)
    assert set_solver_setting(sim, "initialisation", "previous") is None
    sim.integrator = "xpbd"
    assert sim.integrator_object.substeps == 9  # kept through the switch


def test_full_panel_draws_the_section_with_xpbd_and_vbd(gui):
    controller = ViewerController(load("cloth"), (1280, 720))
    panel = Panel(controller)
    for name in ("xpbd", "vbd", "symplectic_euler"):
        controller.set_integrator(name)
        controller.sim.step()
        gui.delta_time = 1 / 60
        imgui.new_frame()
        panel.draw()
        imgui.render()
        assert controller.sim.integrator == name


def test_relaxation_slider_stays_inside_the_allowed_range():
    """The slider's ends are allowed values (XPBD.relaxation in [1, 2)), so a typed value,
    clamped to them, is never refused."""
    for (name, key), ends in SLIDER_NUMBERS.items():
        assert all(solver_setting_allowed(name, key, end) for end in ends), (name, key, ends)
    assert SLIDER_NUMBERS[("xpbd", "relaxation")] == (1.0, 1.99)
