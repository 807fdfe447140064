"""Where the shaders and resources live, in a source checkout or an installed package.

``pip install .`` maps the repository's ``shaders/`` and ``resources/`` folders to the
packages ``ropesim.shaders`` and ``ropesim.resources`` (see pyproject.toml); in a source
checkout they sit next to the ``ropesim/`` folder.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_CHECKOUT_ROOT = Path(__file__).resolve().parents[2]


def _package_dir(package: str, checkout_relative: str) -> Path:
    """The folder of an installed resource package, else the source-checkout folder.

    The resource folders hold no ``__init__.py``, so once installed they are namespace
    packages, for which ``importlib.resources.files`` gives no plain Path; the import
    spec's search location is the folder itself (also under an editable install).
    """
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        if Path(location).is_dir():
            return Path(location)
    return _CHECKOUT_ROOT / checkout_relative


def shader_dir() -> Path:
    """Folder holding the GLSL sources (*.vert, *.geom, *.frag)."""
    return _package_dir("ropesim.shaders", "shaders")


def resource_dir() -> Path:
    """Folder holding the shipped resources (scenes, images)."""
    return _package_dir("ropesim.resources", "resources")


def scene_dir() -> Path:
    """Folder holding the shipped scene files (*.toml)."""
    return _package_dir("ropesim.resources.scenes", "resources/scenes")
