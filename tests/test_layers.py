"""The package layout shows the layers, and the imports keep to them.

engine (numpy + numba) <- io (files) <- render (moderngl, no window) <- app (window, CLI).
Every import counts, also the lazy ones inside functions: the rules are read from the
source with ``ast``, not from what happens to be imported at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ropesim"

#: which layers each layer may import (besides itself)
ALLOWED = {
    "engine": set(),
    "io": {"engine"},
    "render": {"engine", "io"},
    "app": {"engine", "io", "render"},
}
#: third-party packages a layer must never import
FORBIDDEN_PACKAGES = {
    "engine": {"moderngl", "moderngl_window", "imgui_bundle", "pyglet", "matplotlib", "imageio"},
    "io": {"moderngl", "moderngl_window", "imgui_bundle", "pyglet"},
    "render": {"moderngl_window", "imgui_bundle", "pyglet"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str | None = None) -> set[str]:
    """Absolute names of every module ``path`` (module name ``module``, by default read
    from its place in the package) imports, lazy imports included."""
    module = module or _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            # "from ..engine import forces" imports the module ropesim.engine.forces
            for alias in node.names:
                candidate = f"{prefix}.{alias.name}"
                if _source_of(candidate) is not None:
                    found.add(candidate)
    return found


def _source_of(module: str) -> Path | None:
    if not module.startswith("ropesim"):
        return None
    parts = module.split(".")[1:]
    if not parts:
        return PACKAGE / "__init__.py"
    rel = Path(*parts)
    for candidate in (PACKAGE / rel.with_suffix(".py"), PACKAGE / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
GRAPH = {_module_name(p): {m for m in _imports(p) if _source_of(m) is not None} for p in MODULES}


def test_every_module_sits_in_a_layer():
    """Only the package's front door (__init__, __main__) lives outside the four layers."""
    loose = [m for m in GRAPH if _layer(m) is None and m not in ("ropesim", "ropesim.__main__")]
    assert loose == []


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_layer_imports_only_the_layers_below(module):
    layer = _layer(module)
    if layer is None:
        return
    for target in GRAPH[module]:
        other = _layer(target)
        if target == "ropesim":
            pytest.fail(f"{module} imports the package front door 'ropesim' (import a layer)")
        if other is not None and other != layer:
            assert other in ALLOWED[layer], f"{module} ({layer}) imports {target} ({other})"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _layer(m) in FORBIDDEN_PACKAGES))
def test_lower_layers_import_no_window_or_gl_package(module):
    banned = FORBIDDEN_PACKAGES[_layer(module)]
    used = {name.split(".")[0] for name in _imports(_source_of(module))}
    assert not used & banned, f"{module} imports {sorted(used & banned)}"


def test_no_two_modules_import_each_other():
    """No import cycle of any length between the package's modules."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH.get(node, ())):
            # a package's __init__ importing its own submodules is not a cycle of modules
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(GRAPH):
        if node not in state:
            visit(node)


def test_the_rules_catch_a_violation(tmp_path):
    """The reader sees lazy imports and relative imports (so the rules above can fail)."""
    source = PACKAGE / "engine" / "simulation.py"
    found = _imports(source)
    assert "ropesim.engine.integrators" in found
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..render import camera\n")
    assert "ropesim.render.camera" in _imports(probe, "ropesim.engine.probe")
