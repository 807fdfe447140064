"""Shared pytest configuration."""

import pytest


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
