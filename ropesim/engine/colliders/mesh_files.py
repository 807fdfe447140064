"""Reading mesh files (OBJ, STL, PLY, glTF / GLB) with trimesh: vertices and triangles only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..model import show

#: File endings read (trimesh's loaders for them).
MESH_SUFFIXES = (".obj", ".stl", ".ply", ".gltf", ".glb")


def read_mesh(path: Any) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (v, 3) m, triangles (t, 3)) of a mesh file; a scene of several meshes is
    merged (with its node transforms). Errors name ``mesh.path``."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"mesh.path: expected a file path, got {show(path)}")
    path = Path(path)
    if path.suffix.lower() not in MESH_SUFFIXES:
        raise ValueError(f"mesh.path: {str(path)!r} has an unknown file type; allowed: "
                         f"{', '.join(MESH_SUFFIXES)}")
    if not path.is_file():
        raise ValueError(f"mesh.path: no such mesh file: {str(path)!r}")
    if path.stat().st_size == 0:
        raise ValueError(f"mesh.path: {str(path)!r} is empty (0 bytes)")
    import trimesh

    try:
        loaded = trimesh.load(str(path), force="mesh", process=False)
    except Exception as error:  # trimesh raises many kinds for a broken file
        raise ValueError(f"mesh.path: cannot read {str(path)!r} as a mesh: "
                         f"{type(error).__name__}: {error}") from None
    faces = np.asarray(getattr(loaded, "faces", np.zeros((0, 3))))
    vertices = np.asarray(getattr(loaded, "vertices", np.zeros((0, 3))), dtype=np.float64)
    if faces.size == 0 or vertices.size == 0:
        raise ValueError(f"mesh.path: {str(path)!r} holds no triangles")
    return vertices, faces.astype(np.int64)
