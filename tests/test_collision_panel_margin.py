"""The Collisions section's collider margins (app/collision_panel.py): one "auto"
checkbox and one margin slider (m) per Box, Capsule and Mesh, set live on the
Simulation's contacts (the engine's contact pass sees them: a particle resting on a box
top rises by the margin), a mesh's when its slider is let go, bad values refused with
the collider's reason."""

from __future__ import annotations

import numpy as np
import pytest
from imgui_bundle import imgui

import ropesim as rs
from ropesim.app.collision_panel import CollisionSection, set_collider_margin
from ropesim.engine.colliders.kernel import SKIN
from ropesim.engine.colliders.shapes import MARGIN_SHARE

TOP = 0.1  # m: the box top of every test (a 0.2 m tall box centred at the origin)


@pytest.fixture
def gui():
    context = imgui.create_context()
    io = imgui.get_io()
    io.set_ini_filename("")
    io.display_size = imgui.ImVec2(600, 400)
    io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
    yield Gui()
    imgui.destroy_context(context)


class Gui:
    """imgui with the clicks of a test: ``ticks`` (checkbox label -> clicked to this
    value) and ``let_go`` (the last item was let go after an edit)."""

    def __init__(self) -> None:
        self.ticks: dict[str, bool] = {}
        self.let_go = False

    def __getattr__(self, name):
        return getattr(imgui, name)

    def checkbox(self, label, on):
        if label in self.ticks:
            return True, self.ticks.pop(label)
        return imgui.checkbox(label, on)

    def is_item_deactivated_after_edit(self):
        return self.let_go


class Slider:
    """The panel's slider, driven by the test: ``typed`` (label prefix -> value typed
    in this frame); records (label, shown value, low, high) of every call."""

    def __init__(self) -> None:
        self.typed: dict[str, float] = {}
        self.seen: list[tuple[str, float, float, float]] = []

    def __call__(self, label, value, low, high, fmt, flags=0):
        self.seen.append((label, value, low, high))
        for prefix, typed in list(self.typed.items()):
            if label.startswith(prefix):
                del self.typed[prefix]
                return True, typed
        return False, value

    def shown(self, prefix: str) -> float:
        return [value for label, value, _, _ in self.seen if label.startswith(prefix)][-1]


def draw(gui: Gui, section: CollisionSection, sim: rs.Simulation, slider: Slider) -> None:
    imgui.new_frame()
    imgui.begin("collisions")
    section.draw(gui, sim, slider)
    imgui.end()
    imgui.render()


def box(**kwargs) -> rs.Box:
    return rs.Box(center=(0.0, 0.0, 0.0), size=(0.4, 2 * TOP, 0.4), **kwargs)


def test_margin_slider_lifts_a_rope_resting_on_a_box_top_by_the_margin(gui):
    """y = top + SKIN + margin for every particle lying on the top, before and after the
    edit. (A rope: all its particles lie on the top, so each rises by exactly the
    margin; a cloth pushed out by a margin jump is tested in test_live_edits_health.py.)"""
    rope = rs.rope(6, 0.25, pins="none", origin=(-0.125, TOP + 2e-5, 0.0))
    sim = rs.Simulation(rope, dt=1e-3, integrator="symplectic_euler",
                        contacts=[rs.Ground(), box()])
    sim.step(50)
    np.testing.assert_allclose(sim.positions[:, 1], TOP + SKIN, atol=1e-9)
    section, slider = CollisionSection(), Slider()
    slider.typed["box 1"] = 0.02
    draw(gui, section, sim, slider)
    assert sim.contacts[1].margin == 0.02 and section.refused is None
    sim.step(50)
    np.testing.assert_allclose(sim.positions[:, 1], TOP + SKIN + 0.02, atol=1e-9)
    gui.ticks["auto###margin-auto-1"] = True  # a rope's auto margin is 0 (no triangles)
    draw(gui, section, sim, slider)
    assert sim.contacts[1].margin == "auto"
    sim.step(100)  # falls the 2 cm back
    np.testing.assert_allclose(sim.positions[:, 1], TOP + SKIN, atol=1e-9)


def test_auto_margin_keeps_a_cloth_a_fifth_of_its_spacing_off_the_box(gui):
    spacing = 0.05
    cloth = rs.cloth(4, 4, spacing=spacing, plane="xz", pins="none",
                     origin=(-0.075, TOP + 0.03, -0.075))
    sim = rs.Simulation(cloth, dt=1e-3, integrator="symplectic_euler", contacts=[box()])
    section, slider = CollisionSection(), Slider()
    gui.ticks["auto###margin-auto-0"] = True
    draw(gui, section, sim, slider)
    assert sim.contacts[0].margin == "auto"
    draw(gui, section, sim, slider)  # greyed while auto, showing the margin it gives
    assert slider.shown("box 0") == pytest.approx(MARGIN_SHARE * spacing)
    sim.step(200)  # falls 3 cm and lands
    np.testing.assert_allclose(sim.positions[:, 1], TOP + SKIN + MARGIN_SHARE * spacing,
                               atol=1e-7)
    gui.ticks["auto###margin-auto-0"] = False  # leaving auto keeps the margin it gave
    draw(gui, section, sim, slider)
    assert sim.contacts[0].margin == pytest.approx(MARGIN_SHARE * spacing)


def test_bad_margins_are_refused_with_the_colliders_reason(gui):
    sim = rs.Simulation(rs.rope(4, 0.2), contacts=[rs.Ground(), box(margin=0.01)])
    section, slider = CollisionSection(), Slider()
    for bad, allowed in ((-0.01, "must be >= 0 m, got -0.01"),
                         (float("nan"), "must be a finite number (m), got nan")):
        slider.typed["box 1"] = bad
        draw(gui, section, sim, slider)
        assert section.refused == f"collider 1: box.margin: {allowed}"
        assert sim.contacts[1].margin == 0.01
    slider.typed["box 1"] = 0.03
    draw(gui, section, sim, slider)
    assert section.refused is None and sim.contacts[1].margin == 0.03
    assert "collider 0" in set_collider_margin(sim, 0, 0.01)  # the Ground has no margin


def test_a_meshs_margin_is_set_when_its_slider_is_let_go(gui):
    """Packing a mesh again rebuilds its BVH: while dragged the value waits (and shows),
    let go it is set; a capsule's is set while dragged."""
    tetrahedron = rs.Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float),
                          np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]))
    capsule = rs.Capsule((0, 2, 0), (1, 2, 0), 0.1)
    sim = rs.Simulation(rs.rope(4, 0.2), contacts=[tetrahedron, capsule])
    section, slider = CollisionSection(), Slider()
    slider.typed.update({"mesh 0": 0.02, "capsule 1": 0.04})
    draw(gui, section, sim, slider)
    assert sim.contacts[0].margin == 0.0 and sim.contacts[1].margin == 0.04
    draw(gui, section, sim, slider)
    assert slider.shown("mesh 0") == 0.02 and sim.contacts[0].margin == 0.0
    gui.let_go = True
    draw(gui, section, sim, slider)
    assert sim.contacts[0].margin == 0.02 and sim.contacts[0].vertices is tetrahedron.vertices


def test_the_list_has_one_slider_per_collider_with_a_margin(gui):
    sim = rs.Simulation(rs.rope(4, 0.2), contacts=[rs.Ground(), rs.Sphere((0, -1, 0), 0.2),
                                                   box(), rs.Capsule((0, 2, 0), (1, 2, 0), 0.1)])
    section, slider = CollisionSection(), Slider()
    draw(gui, section, sim, slider)
    margins = [(label.split("###")[0], low, high) for label, _, low, high in slider.seen
               if "###margin" in label]
    assert [label for label, _, _ in margins] == ["box 2", "capsule 3"]
    assert all(low == 0.0 and high == pytest.approx(section.default_for(sim))
               for _, low, high in margins)
