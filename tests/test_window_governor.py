"""The window's MSAA governor input (ropesim.app.window.governed_draw_s): a draw that
fits the frame clock's target frame, 1 / (MIN_FPS * FPS_MARGIN), alone but not with the
physics' smallest share of a frame switches MSAA off, since the frame clock then cannot
keep that frame rate."""

from __future__ import annotations

import pytest

from ropesim.app.frame_clock import (FPS_MARGIN, GOVERNOR_FRAMES, MIN_BUDGET_FRACTION, MIN_FPS,
                                     SampleGovernor)
from ropesim.app.window import governed_draw_s


def test_a_draw_that_leaves_the_physics_less_than_its_share_switches_msaa_off():
    frame_s = 1.0 / (MIN_FPS * FPS_MARGIN)
    physics_s = 0.1 * frame_s
    draw_s = 0.9 * frame_s   # under the target frame, over (1 - MIN_BUDGET_FRACTION) of it
    weighed = governed_draw_s(draw_s + physics_s, physics_s)
    assert weighed == pytest.approx(draw_s / (1.0 - MIN_BUDGET_FRACTION))
    assert draw_s < frame_s < weighed
    governor = SampleGovernor(4)
    assert [governor.update(weighed) for _ in range(GOVERNOR_FRAMES)][-2:] == [4, 0]
    kept = SampleGovernor(4)    # a draw that leaves the physics its share keeps MSAA
    light = governed_draw_s(0.8 * frame_s + physics_s, physics_s)
    assert all(kept.update(light) == 4 for _ in range(2 * GOVERNOR_FRAMES))
    assert governed_draw_s(0.01, 0.02) == 0.0   # physics longer than the frame: no draw
