"""Shared pytest configuration."""

import pytest


def pytest_sessionstart(session):
    """On a cold numba cache (a fresh clone), compile the engine's kernels first in two
    processes (app/precompile.py): about half the time the tests would spend
    compiling them one by one."""
    from ropesim.app import precompile

    if precompile.cache_is_cold():
        try:
            outcome = f"{precompile.precompile(n_jobs=2):.0f} s"
        except RuntimeError as error:  # the tests then compile (and fail) where it did
            outcome = f"failed: {error}"
        session.config._precompile_outcome = outcome


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    outcome = getattr(config, "_precompile_outcome", None)
    if outcome is not None:
        terminalreporter.write_line(f"precompiling the engine's kernels (app/precompile.py): "
                                    f"{outcome}")


@pytest.fixture
def grid_and_general():
    """``run(scenario)``: the Simulations ``scenario(grid_kernels)`` returns with ropesim's
    structured-grid kernels (grid_kernels=True), then without them (spring-list kernels)."""

    def run(scenario):
        return [scenario(grid_kernels) for grid_kernels in (True, False)]

    return run


def pytest_collection_modifyitems(session, config, items):
    """Run the real-window tests first.

    Once a process has made an EGL standalone context current (the headless rendering
    tests do), moderngl can no longer detect the GLX context of a pyglet window in that
    process ("glXGetCurrentContext: cannot detect OpenGL context"). The viewer never
    mixes the two; the test session does, so the window tests go before any EGL use.
    """
    items.sort(key=lambda item: 0 if item.path.name == "test_viewer_window.py" else 1)
