"""parallel.Chooser's decisions, driven by injected call times (a fake clock): no timing.

A call's cost is given as a function of (call number, parallel?) in seconds; the fake
clock advances by it, so every test is deterministic.
"""

from __future__ import annotations

import pytest

from ropesim.engine import parallel


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr(parallel, "_mode", "auto")
    now = [0.0]
    monkeypatch.setattr(parallel.time, "perf_counter", lambda: now[0])
    return now


def drive(chooser, clock, cost, calls: int) -> list[bool]:
    """Run ``calls`` calls; cost(call, use_parallel, previous) -> seconds. Returns the picks."""
    picks: list[bool] = []
    previous = None
    for call in range(calls):
        use = chooser.parallel()
        start = clock[0]
        clock[0] += cost(call, use, previous)
        chooser.record(use, start)
        picks.append(use)
        previous = use
    return picks


def test_a_burst_of_load_in_the_first_window_costs_only_a_few_calls(clock):
    # parallel 0.6 ms, serial 1 ms; calls 6-11 (the parallel block of a window that timed
    # each version in one block) run 6x slower, as when another process takes a core.
    # Timed in one block, serial would run until the next window (260 serial calls)
    def cost(call, use, previous):
        base = 0.6e-3 if use else 1.0e-3
        return base * (6.0 if 6 <= call < 12 else 1.0)

    chooser = parallel.Chooser()
    picks = drive(chooser, clock, cost, 1000)
    assert chooser.best == 1
    assert sum(not p for p in picks) < 40  # serial: the windows' turns only


def test_a_wrong_first_pick_is_checked_again_soon(clock):
    # the first window sees parallel slower (the machine was busy), then parallel is
    # twice as fast: the pick is re-checked after ``recheck`` seconds, not after the
    # interval (0.25 s: 250 serial calls here)
    chooser = parallel.Chooser()

    def cost(call, use, previous):
        if clock[0] < 0.05:
            return 3.0e-3 if use else 1.0e-3
        return 0.5e-3 if use else 1.0e-3

    picks = drive(chooser, clock, cost, 400)
    first_window = picks[:20]
    assert first_window.count(True) == 10  # turns of two, five timed calls each
    assert not any(picks[20:30])  # it picked serial
    assert chooser.best == 1 and chooser.switches == 1  # then parallel
    # serial calls after the first window: a quarter of the interval's worth at most
    # (the check, a window and a confirming one), not the whole interval (250 calls)
    serial_after = sum(not p for p in picks[20:])
    assert serial_after < 0.25 * chooser.base_interval / 1.0e-3
    # recheck = the interval: the wrong pick runs for the whole interval
    clock[0] = 0.0
    late = parallel.Chooser(recheck=0.25)
    picks = drive(late, clock, cost, 400)
    assert sum(not p for p in picks[20:]) > 0.9 * late.base_interval / 1.0e-3


def test_turns_of_two_leave_the_wake_up_call_out(clock):
    # parallel 0.7 ms, serial 1 ms, but the first parallel call after a serial one pays
    # 0.6 ms to wake its threads (steady running never does): alternating call by call
    # would time only wake-up calls and pick serial
    def cost(call, use, previous):
        if not use:
            return 1.0e-3
        return 0.7e-3 + (0.6e-3 if previous is False else 0.0)

    picks = {}
    for interleave in (1, 2):
        chooser = parallel.Chooser(interleave=interleave)
        drive(chooser, clock, cost, 25)
        picks[interleave] = chooser.best
    assert picks == {1: 0, 2: 1}


def test_close_calls_keep_the_short_interval_clear_wins_double_it(clock):
    close = parallel.Chooser()
    drive(close, clock, lambda call, use, prev: 0.95e-3 if use else 1.0e-3, 20_000)
    assert close.windows > 20
    assert close.interval == close.base_interval
    clock[0] = 0.0
    clear = parallel.Chooser()
    drive(clear, clock, lambda call, use, prev: 0.4e-3 if use else 1.0e-3, 150_000)
    assert clear.interval == clear.max_interval == parallel.MAX_INTERVAL
    assert clear.windows < close.windows


def test_a_clear_pick_that_slows_down_is_timed_again_at_once(clock):
    """Parallel wins clearly (0.4 against 1 ms) until the windows come every 16 s; then
    parallel calls take 10 ms (another process took a core): the next call of it opens a
    window, which picks serial within a few calls, not 16 s later."""
    chooser = parallel.Chooser()
    slow_from = [None]

    def cost(call, use, previous):
        if slow_from[0] is not None and call >= slow_from[0]:
            return 10e-3 if use else 1.0e-3
        return 0.4e-3 if use else 1.0e-3

    drive(chooser, clock, cost, 150_000)
    assert chooser.best == 1 and chooser.interval == parallel.MAX_INTERVAL
    slow_from[0] = 0
    picks = drive(chooser, clock, cost, 40)
    assert chooser.best == 0
    assert sum(picks) <= 6  # parallel calls before serial took over (a turn each way)


def test_serial_faster_costs_little(clock):
    # a small system: the parallel version is 1.6x slower; over 20 s of calls the
    # re-timing of parallel adds under 1 % to the time of serial calls only
    serial, slower = 40e-6, 64e-6
    chooser = parallel.Chooser()
    picks = drive(chooser, clock, lambda call, use, prev: slower if use else serial, 500_000)
    parallel_calls = sum(picks)
    assert chooser.best == 0
    overhead = parallel_calls * (slower - serial) / (len(picks) * serial)
    assert overhead < 0.01
    assert clock[0] > 20.0


def test_a_window_compares_calls_of_the_same_window(clock):
    # serial timed long ago must not decide: the machine slows down 3x for both
    # versions after the first window; parallel stays the faster one
    chooser = parallel.Chooser()

    def cost(call, use, previous):
        slow = 3.0 if call >= 20 else 1.0
        return slow * (0.8e-3 if use else 1.0e-3)

    picks = drive(chooser, clock, cost, 3000)
    assert chooser.best == 1 and chooser.switches == 1
    assert sum(picks[20:]) > 0.95 * len(picks[20:])


@pytest.mark.parametrize("field, kwargs", [
    ("probe", {"probe": 0}), ("probe", {"probe": 2.5}), ("interleave", {"interleave": -1}),
    ("interleave", {"interleave": "yes"}), ("statistic", {"statistic": "max"}),
])
def test_bad_settings_name_the_field(field, kwargs):
    with pytest.raises(ValueError, match=field):
        parallel.Chooser(**kwargs)


def test_a_hopeless_version_is_dropped_after_one_timed_call(clock):
    # a busy machine: a parallel call waits for a core, 20x the serial call. Each window
    # runs it twice (the untimed first call of its turn and one timed call), not a whole
    # window's worth
    chooser = parallel.Chooser()
    picks = drive(chooser, clock, lambda call, use, prev: 20e-3 if use else 1e-3, 5000)
    assert chooser.best == 0 and chooser.windows >= 4
    assert sum(picks) <= 2 * chooser.windows
    parallel_time = sum(picks) * 20e-3
    assert parallel_time < 0.1 * clock[0]


@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_a_chooser_that_does_not_follow_the_mode_times_both_ways_in_any_mode(clock, mode):
    """set_mode forces the thread choice of kernels; a Chooser between two ways of one
    computation (follows_mode=False: the neighbour list's tiles or columns) keeps timing
    them and picks the faster whatever the mode, while a plain one obeys the mode."""
    parallel.set_mode(mode)
    try:
        def cost(call, use, previous):  # the "parallel" way twice as fast
            return 0.5e-3 if use else 1.0e-3

        free, forced = parallel.Chooser(follows_mode=False), parallel.Chooser()
        free_picks = drive(free, clock, cost, 400)
        forced_picks = drive(forced, clock, cost, 400)
    finally:
        parallel.set_mode("auto")
    assert free.best == 1 and sum(free_picks[-300:]) == 300
    assert set(forced_picks) == {mode == "parallel"}


def test_current_reports_the_pick_without_opening_a_window(clock):
    """Chooser.current() (a call timed by another Chooser) answers the standing pick and
    neither times nor starts a window: the next window opens on schedule, not earlier."""
    def cost(call, use, previous):
        return 0.5e-3 if use else 1.0e-3

    chooser = parallel.Chooser()
    drive(chooser, clock, cost, 40)
    assert chooser.best == 1 and not chooser._window
    windows, calls = chooser.windows, list(chooser.calls)
    clock[0] += 100.0  # long past the next window's time
    assert all(chooser.current() for _ in range(50))
    assert chooser.windows == windows and chooser.calls == calls and not chooser._window
    assert chooser.parallel() == bool(chooser._turn) and chooser._window  # this one opens it
    parallel.set_mode("serial")
    try:
        assert chooser.current() is False
    finally:
        parallel.set_mode("auto")


def settle_on_the_first_way(chooser, clock, state):
    """Drive a chooser whose first way (pick 0: the neighbour list on tiles) takes
    state["tiles"] s (every 97th call 10x with state["spikes"]) and the second (the
    columns) 0.7 ms until its windows come every MAX_INTERVAL; returns the cost."""
    def cost(call, use, previous):
        if use:
            return 0.7e-3
        spike = 10.0 if state.get("spikes") and call % 97 == 0 else 1.0
        return spike * state["tiles"]

    drive(chooser, clock, cost, 150_000)
    assert chooser.best == 0 and chooser.interval == parallel.MAX_INTERVAL
    return cost


def test_a_drifting_pick_is_timed_again_once_it_is_slower_than_the_other_way(clock):
    """The state changes what each way costs (a cloth bunches up: its tiles' build goes
    from 0.4 to 1.2 ms, the columns stay at 0.7). With ``drift`` the pick's next calls
    open a window at once and the columns take over within a window; without it the
    tiles run on until the next window, up to MAX_INTERVAL later (the tiles are the
    serial slot, so the parallel pick's HOPELESS trigger cannot see it)."""
    calls_until_columns = {}
    for drift in (True, False):
        clock[0] = 0.0
        state = {"tiles": 0.4e-3}
        chooser = parallel.Chooser(follows_mode=False, drift=drift)
        cost = settle_on_the_first_way(chooser, clock, state)
        switches = chooser.switches
        state["tiles"] = 1.2e-3
        picks = drive(chooser, clock, cost, 3000)
        calls_until_columns[drift] = picks.index(True) if True in picks else len(picks)
        if drift:
            assert chooser.best == 1 and chooser.switches == switches + 1
            after = picks[calls_until_columns[drift]:]
            assert sum(after) > 0.95 * len(after)  # the columns, but for windows' turns
    # the trigger's calls, then the window's first turn (the pick again, to compare)
    assert calls_until_columns[True] <= parallel.DRIFT_CALLS + chooser.turn_length
    assert calls_until_columns[False] == 3000  # 3.6 s of the slower way, and counting


def test_a_drifting_pick_ignores_lone_slow_calls_and_slowdowns_below_the_other_way(clock):
    """Lone slow calls (every 97th call 10x: 6 ms, far above the other way's 0.7) and a
    slowdown that keeps the pick faster than the other way (0.4 to 0.6 ms, the other at
    0.7) open no window before the scheduled one."""
    state = {"tiles": 0.4e-3}
    chooser = parallel.Chooser(follows_mode=False, drift=True)
    cost = settle_on_the_first_way(chooser, clock, state)
    windows, start = chooser.windows, clock[0]
    state.update(tiles=0.6e-3, spikes=True)
    picks = drive(chooser, clock, cost, 5000)  # 3 s, within the 16 s interval
    assert clock[0] - start < parallel.MAX_INTERVAL
    assert chooser.windows == windows and not any(picks)
