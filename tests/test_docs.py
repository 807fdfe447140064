"""The worked examples in docs/architecture.md run as written (a new force, a new
integrator), so the guide cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ropesim as rs

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_guide_has_both_worked_examples():
    assert len(BLOCKS) == 2
    assert "rs.Force" in BLOCKS[0] and "rs.register_integrator" in BLOCKS[1]


def test_worked_force_example_pushes_the_cloth_along_the_wind():
    namespace: dict = {}
    exec(compile(BLOCKS[0], str(DOC), "exec"), namespace)
    sim = namespace["sim"]
    assert np.all(np.isfinite(sim.positions))
    # the wind pushed along +z: the free particles' mean z moved forward
    assert sim.positions[:, 2].mean() > 0.0
    assert not any(isinstance(f, namespace["ConstantWind"]) for f in sim.force_parts())


def test_worked_integrator_example_matches_symplectic_euler():
    namespace: dict = {}
    try:
        exec(compile(BLOCKS[1], str(DOC), "exec"), namespace)
        ours = namespace["sim"]
    finally:
        rs.INTEGRATORS.pop("numpy_euler", None)
    reference = rs.Simulation(rs.rope(20, 2.0), dt=1e-3, integrator="symplectic_euler")
    reference.step(100)
    np.testing.assert_allclose(ours.positions, reference.positions, rtol=0, atol=1e-9)
    assert "numpy_euler" not in rs.INTEGRATORS


@pytest.mark.parametrize("name", ["Force", "Integrator", "register_integrator", "INTEGRATORS"])
def test_names_the_guide_uses_are_public(name):
    assert name in rs.__all__


def _tree_paths() -> set[str]:
    """The file paths of the guide's module tree (indentation: two spaces a level)."""
    text = DOC.read_text()
    tree = text.split("## The tree, one line per module", 1)[1].split("```", 2)[1]
    paths, parents = set(), []
    for line in tree.splitlines():
        if not line.strip():
            continue
        name = line.split()[0]
        depth = (len(line) - len(line.lstrip(" "))) // 2
        parents[depth:] = [name]
        paths.add("".join(parents))
    return paths


def test_the_tree_names_every_module():
    root = DOC.parent.parent
    listed = _tree_paths()
    modules = sorted(str(p.relative_to(root)) for p in (root / "ropesim").rglob("*.py")
                     if p.name not in ("__init__.py", "__main__.py"))
    missing = [m for m in modules if m not in listed]
    assert not missing, f"docs/architecture.md's tree does not list: {missing}"
    gone = [p for p in listed if p.endswith(".py") and not (root / p).exists()]
    assert not gone, f"docs/architecture.md's tree lists modules that do not exist: {gone}"
