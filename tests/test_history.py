"""The viewer's history (issue 15): the ring buffer within its memory budget, rewind /
scrub / resume through the controller matching a fresh run bit for bit, and branches."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from ropesim.app.history import DEFAULT_HISTORY_MB, MB, History, share_unchanged


@dataclass(frozen=True)
class FakeState:
    """A snapshot's shape: arrays and an nbytes total."""

    positions: np.ndarray
    stiffness: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.positions.nbytes + self.stiffness.nbytes


def fake_state(value: float, n: int = 1000, stiffness: float = 100.0) -> FakeState:
    return FakeState(np.full((n, 3), value), np.full(4 * n, stiffness))


# --- the ring buffer ---------------------------------------------------------------------
def test_default_budget_is_256_mb():
    assert DEFAULT_HISTORY_MB == 256
    assert History().budget_bytes == 256 * MB


@pytest.mark.parametrize("budget", [0, -1.0, float("nan"), float("inf")])
def test_a_budget_that_is_not_positive_and_finite_is_refused_naming_it(budget):
    with pytest.raises(ValueError, match="budget_mb"):
        History(budget)


def test_a_budget_that_is_not_a_number_is_a_type_error():
    with pytest.raises(TypeError, match="budget_mb"):
        History("lots")


def test_history_stays_within_its_memory_budget_and_drops_the_oldest_first():
    history = History(budget_mb=1.0)
    frame_bytes = fake_state(0.0).nbytes          # 56 kB, all arrays different each frame
    for k in range(200):
        history.push(fake_state(float(k), stiffness=float(k)), time=k * 0.01)
        assert history.nbytes <= history.budget_bytes
    kept = len(history)
    assert kept == history.budget_bytes // frame_bytes
    assert history.nbytes == kept * frame_bytes
    assert history.current.positions[0, 0] == 199.0
    assert history.times[0] == pytest.approx((200 - kept) * 0.01)
    assert history.seconds_held == pytest.approx((kept - 1) * 0.01)


def test_unchanged_parameter_arrays_are_shared_and_counted_once():
    history = History(budget_mb=1.0)
    for k in range(10):
        history.push(fake_state(float(k)), time=k * 0.01)   # the same stiffness values
    positions, stiffness = 1000 * 3 * 8, 4000 * 8
    assert history.nbytes == 10 * positions + stiffness
    assert history.current.stiffness is history.scrub_to(fraction=0.0).stiffness
    history.truncate_after()   # drops all but the oldest, which still holds the array
    assert len(history) == 1 and history.nbytes == positions + stiffness


def test_share_unchanged_keeps_arrays_whose_values_differ():
    a, b = fake_state(0.0, stiffness=1.0), fake_state(1.0, stiffness=2.0)
    share_unchanged(b, a)
    assert b.stiffness is not a.stiffness and b.stiffness[0] == 2.0
    c = fake_state(2.0, stiffness=1.0)
    share_unchanged(c, a)
    assert c.stiffness is a.stiffness and c.positions is not a.positions


def test_step_back_forward_and_the_ends():
    history = History()
    for k in range(5):
        history.push(fake_state(float(k), n=4), time=0.1 * k)
    assert history.at_end and history.step_forward() is None
    assert history.step_back().positions[0, 0] == 3.0
    assert history.step_back().positions[0, 0] == 2.0
    assert not history.at_end and history.cursor == 2
    assert history.step_forward().positions[0, 0] == 3.0
    for _ in range(3):
        history.step_back()
    assert history.cursor == 0 and history.step_back() is None


def test_scrub_to_a_fraction_or_a_time_shows_the_nearest_state():
    history = History()
    for k in range(11):
        history.push(fake_state(float(k), n=4), time=0.5 + 0.1 * k)   # 0.5 .. 1.5 s
    assert history.scrub_to(0.0).positions[0, 0] == 0.0
    assert history.scrub_to(1.0).positions[0, 0] == 10.0
    assert history.scrub_to(0.42).positions[0, 0] == 4.0
    assert history.fraction == pytest.approx(0.4)
    assert history.scrub_to(time=0.87).positions[0, 0] == 4.0
    assert history.current_time == pytest.approx(0.9)
    assert history.scrub_to(-3.0).positions[0, 0] == 0.0    # clamped
    assert history.scrub_to(time=99.0).positions[0, 0] == 10.0
    with pytest.raises(TypeError, match="fraction"):
        history.scrub_to(0.5, time=1.0)
    with pytest.raises(ValueError, match="fraction"):
        history.scrub_to(float("nan"))


def test_truncate_after_and_pushing_while_rewound_drop_the_later_states():
    history = History()
    for k in range(6):
        history.push(fake_state(float(k), n=4), time=float(k))
    history.scrub_to(time=2.0)
    assert history.truncate_after() == 3
    assert len(history) == 3 and history.at_end
    history.scrub_to(time=1.0)
    history.push(fake_state(9.0, n=4), time=1.5)
    assert list(history.times) == [0.0, 1.0, 1.5] and history.current.positions[0, 0] == 9.0


def test_a_state_larger_than_the_budget_is_still_kept_alone():
    history = History(budget_mb=0.01)
    history.push(fake_state(0.0), time=0.0)
    history.push(fake_state(1.0), time=0.1)
    assert len(history) == 1 and history.current.positions[0, 0] == 1.0
