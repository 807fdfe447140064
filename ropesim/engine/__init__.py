"""The simulation engine: model, builders, forces, integrators, linear solvers, contacts
and the Simulation step loop. numpy and numba only: nothing here imports the render,
io or app layers (tests/test_layers.py checks it)."""
