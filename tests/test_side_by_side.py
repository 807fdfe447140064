"""benchmarks/side_by_side.py: a git revision's package runs beside this checkout's."""

import importlib.util
import os
import re
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load():
    path = os.path.join(ROOT, "benchmarks", "side_by_side.py")
    spec = importlib.util.spec_from_file_location("side_by_side", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")),
                    reason="needs the git checkout")
def test_exported_revision_imports_as_its_own_package(tmp_path, monkeypatch):
    """HEAD's package, exported under its own name, imports beside ropesim with its own
    classes, and none of its files still imports ropesim itself."""
    import ropesim

    side_by_side = _load()
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
