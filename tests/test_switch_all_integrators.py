"""Issue 14's "seven integrators switch live on every scene": on each shipped scene, in
the viewer's controller (headless), switch through every integrator of INTEGRATORS
mid-run; each switch keeps the state, and each integrator then steps."""

from __future__ import annotations

import numpy as np
import pytest

from ropesim.app.controller import ViewerController
from ropesim.engine.integrators import INTEGRATORS
from ropesim.io.scenes import load, scene_names


@pytest.mark.parametrize("scene", scene_names())
def test_every_integrator_switches_live_and_steps(scene):
    controller = ViewerController(load(scene), (640, 480))
    controller.warm_up()
    controller.advance(1 / 60)
    assert len(INTEGRATORS) >= 7
    for name in [*INTEGRATORS, controller.sim.integrator]:  # round trip to the start
        sim = controller.sim
        x, v, t = sim.positions.copy(), sim.velocities.copy(), sim.time
        controller.set_integrator(name)
        assert controller.sim is sim and sim.integrator == name
        np.testing.assert_array_equal(sim.positions, x)  # the switch keeps the state
        np.testing.assert_array_equal(sim.velocities, v)
        assert sim.time == t
        steps = sim.step_count
        done = controller._run_steps(3)
        assert controller.error is None, controller.error
        assert done == 3 and sim.step_count == steps + 3 and sim.time > t
        assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))
