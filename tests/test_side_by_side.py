"""benchmarks/side_by_side.py: a git revision's package runs beside this checkout's."""

import os
import re
import shutil

import pytest
from benchmark_scripts import load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")),
                    reason="needs the git checkout")
def test_exported_revision_imports_as_its_own_package(tmp_path, monkeypatch):
    """HEAD's package, exported under its own name, imports beside ropesim with its own
    classes, and none of its files still imports ropesim itself."""
    import ropesim

    side_by_side = load("side_by_side")
    monkeypatch.setattr(side_by_side, "CACHE", tmp_path)
    other, commit = side_by_side.export("HEAD")
    assert other.__name__ == f"ropesim_{commit}"
    assert other.Simulation is not ropesim.Simulation
    assert os.path.dirname(other.__file__) == str(tmp_path / commit / other.__name__)
    files = list((tmp_path / commit / other.__name__).rglob("*.py"))
    assert len(files) > 20
    stale = re.compile(r"^\s*(from|import) ropesim(\.|\s|$)", re.MULTILINE)
    assert not [path for path in files if stale.search(path.read_text())]
    sims = side_by_side.simulations(other, 6)
    assert type(sims["rev"]) is other.Simulation and type(sims["this"]) is ropesim.Simulation
    assert sims["rev"].n_particles == sims["this"].n_particles == 36
