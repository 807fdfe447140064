"""pyproject.toml installs every package of the source tree (a non-editable install is what
CI and users get: a subpackage missing from the list would be missing there)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_python_package_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    in_tree = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "ropesim").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert in_tree - listed == set(), "add these to [tool.setuptools] packages"
    assert {"ropesim.shaders", "ropesim.resources", "ropesim.resources.scenes"} <= listed


def test_the_console_script_points_at_a_real_function():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module, _, function = config["project"]["scripts"]["ropesim"].partition(":")
    source = ROOT / Path(*module.split(".")).with_suffix(".py")
    assert source.is_file()
    assert f"def {function}(" in source.read_text()
