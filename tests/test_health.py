"""Divergence detection (issue 10): the health check, the checkpoint ring and the advice.

The acceptance test and the advice at stiffness 1e9 run the Simulation's own step (which
checks every health.CHECK_EVERY steps); the tests of real motion run both that and a
HealthCheck on the public arrays after every step (stricter than the step loop).
"""

import math
import warnings

import numpy as np
import pytest

import ropesim as rs
from ropesim.engine import health
from ropesim.engine.health import CheckpointRing, HealthCheck, advise

STABILITY = {name: integ.unconditionally_stable for name, integ in rs.INTEGRATORS.items()}


def health_of(sim, **thresholds):
    """A HealthCheck on `sim`'s public arrays, its current state the reference."""
    springs = sim.system.springs
    return HealthCheck(
        sim.positions, sim.velocities,
        np.ascontiguousarray(springs[:, 0], dtype=np.int32),
        np.ascontiguousarray(springs[:, 1], dtype=np.int32),
        sim.rest_lengths, sim.stiffness, sim.damping, sim.masses,
        np.asarray(sim.gravity, dtype=sim.dtype), sim.dt, **thresholds,
    )


def longest_stretch(positions, sim):
    """The longest intact spring over its rest length (a torn spring holds nothing)."""
    a, b = sim.system.springs.T
    stretch = np.linalg.norm(positions[a] - positions[b], axis=1) / sim.rest_lengths
    return float(stretch[~sim.broken].max())


# --- the acceptance test: a switch to explicit Euler is caught early ---------------
@pytest.mark.parametrize("scene", rs.scene_names())
def test_explicit_euler_switch_is_caught_with_the_scene_a_moment_before(scene):
    sim = rs.load(scene).simulation()
    twin = rs.load(scene).simulation()  # the same run, left on its stable integrator
    twin_longest = 1.0  # the twin's longest stretch over the whole run
    for run in (sim, twin):
        for _ in range(200):
            run.step(1)
            if run is twin:
                twin_longest = max(twin_longest, twin.max_strain() + 1.0)
        if run.kinetic_energy() == 0.0:  # a scene at rest waiting for a pluck (ring-wave)
            free = int(np.flatnonzero(~run.pinned)[0])
            run.pluck(free, [0.0, float(run.masses[free])])  # 1 m/s
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sim.integrator = "explicit_euler"
    try:  # every diverging scene is caught within 400 steps of the switch (576 at most)
        sim.step(4_000)
    except rs.SimulationDiverged as caught:
        error = caught
    else:  # damped enough for explicit Euler at this dt (tear, sail): it must stay sane
        twin.step(sim.step_count - twin.step_count)
        assert np.isfinite(sim.positions).all() and np.isfinite(sim.velocities).all()
        assert longest_stretch(sim.positions, sim) <= max(2.0, 1.0 + twin.max_strain() * 2)
        assert np.linalg.norm(sim.velocities, axis=1).max() <= 50.0
        assert scene in ("tear", "sail"), f"{scene}: explicit Euler did not diverge"
        return
    while twin.step_count < error.detected_step:
        twin.step(1)
        twin_longest = max(twin_longest, twin.max_strain() + 1.0)
    # the newest checkpoint confirmed by CONFIRM_STEPS passing steps, or the first one
    assert sim.step_count <= max(200, error.detected_step - health.CONFIRM_STEPS)
    assert sim.step_count == error.step - 1 and error.advice is not None
    # no spring longer than twice its rest length, or than the stable twin stretched its
    # own springs over the same time (the heavy curtain's corner springs reach ~3x)
    assert longest_stretch(sim.positions, sim) <= max(2.0, twin_longest), error.reason
    assert np.linalg.norm(sim.velocities, axis=1).max() <= 50.0, error.reason


# --- real motion is never flagged -----------------------------------------------------------
def hold_path(sim, check, corner, targets):
    """Drag `corner` through `targets` (one per step) with the Simulation's own checks
    (a flag raises SimulationDiverged), and ``check`` (if not None) after every step;
    returns its first reason (or None) and the fastest speed seen, m/s."""
    fastest = 0.0
    for target in targets:
        sim.grab(corner, target)
        sim.step(1)
        fastest = max(fastest, float(np.linalg.norm(sim.velocities, axis=1).max()))
        reason = None if check is None else check.check(sim.positions, sim.velocities, corner)
        if reason:
            return reason, fastest
    return None, fastest


def coast(sim, check, steps):
    fastest = 0.0
    for _ in range(steps):
        sim.step(1)
        fastest = max(fastest, float(np.linalg.norm(sim.velocities, axis=1).max()))
        reason = None if check is None else check.check(sim.positions, sim.velocities)
        if reason:
            return reason, fastest
    return None, fastest


def checker(sim, every_step):
    """A HealthCheck after every step, or None: the Simulation's own checks only."""
    return health_of(sim) if every_step else None


def rebase(check, sim):
    if check is not None:
        check.rebase(sim.positions, sim.velocities)


EVERY_STEP = pytest.mark.parametrize("every_step", [True, False],
                                     ids=["every-step", "step-loop"])


def line(start, velocity, dt, steps):
    return [start + np.asarray(velocity, float) * dt * (s + 1) for s in range(steps)]


def circle(start, radius, speed, dt, steps):
    centre = start - [radius, 0.0, 0.0]
    w = speed / radius
    return [centre + radius * np.array([math.cos(w * dt * s), math.sin(w * dt * s), 0.0])
            for s in range(1, steps + 1)]


@EVERY_STEP
@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "free"])
def test_hard_fling_of_the_default_cloth_is_not_flagged(pinned, every_step):
    sim = rs.load("cloth").simulation()
    if not pinned:
        for i in np.flatnonzero(sim.pinned):
            sim.unpin(i)
    sim.step(200)
    check = checker(sim, every_step)
    corner = sim.n_particles - 1
    start = sim.positions[corner].copy()
    reason, fast_held = hold_path(sim, check, corner, line(start, [12, 12, 12], sim.dt, 100))
    assert reason is None, reason
    sim.release([30.0, 20.0, 0.0])
    rebase(check, sim)
    reason, fast_free = coast(sim, check, 3000)
    assert reason is None, reason
    assert max(fast_held, fast_free) > 30.0  # a real fling: tens of m/s


@EVERY_STEP
def test_fast_swing_of_the_pinned_cloth_is_not_flagged(every_step):
    sim = rs.load("cloth").simulation()
    sim.step(200)
    check = checker(sim, every_step)
    corner = sim.n_particles - 1
    targets = circle(sim.positions[corner].copy(), 0.5, 15.0, sim.dt, 420)  # 2 turns
    reason, fastest = hold_path(sim, check, corner, targets)
    assert reason is None, reason
    sim.release([40.0, 0.0, 10.0])
    rebase(check, sim)
    reason, after = coast(sim, check, 3000)
    assert reason is None, reason
    assert max(fastest, after) > 40.0


@EVERY_STEP
@pytest.mark.parametrize("scene", ["chain-wave", "rope"])
def test_chain_whip_is_not_flagged(scene, every_step):
    sim = rs.load(scene).simulation()
    sim.step(200)
    check = checker(sim, every_step)
    start = sim.positions[0].copy()
    w = 25.0  # rad/s: the hand moves 0.5 m up and down at up to 12.5 m/s
    targets = [start + [0.0, 0.5 * math.sin(w * sim.dt * s), 0.0] for s in range(1, 760)]
    reason, fastest = hold_path(sim, check, 0, targets)
    assert reason is None, reason
    sim.release([0.0, 20.0, 0.0])
    rebase(check, sim)
    reason, after = coast(sim, check, 3000)
    assert reason is None, reason
    assert max(fastest, after) > 25.0  # the tip outruns the hand


@pytest.mark.parametrize("scene", rs.scene_names())
@pytest.mark.parametrize("integrator", ["symplectic_euler", "verlet", "backward_euler",
                                        "implicit_midpoint"])
def test_shipped_scenes_run_unflagged_with_halved_thresholds(scene, integrator):
    sim = rs.load(scene).simulation()
    sim.integrator = integrator
    check = health_of(sim, stretch_limit=5.0, energy_factor=0.5,
                      step_fraction=0.25)  # twice as strict as the defaults
    # the wind's and a spinning collider's work is not the check's to see (the Simulation
    # turns its own energy criterion off likewise)
    check.energy_check = sim.energy_checked
    for _ in range(500):
        sim.step(4)
        assert check.check(sim.positions, sim.velocities) is None


def test_free_fall_keeps_its_energy_and_is_never_flagged():
    """Gravity alone: total energy is conserved, so 4 s of free fall (39 m/s, 78 m,
    far beyond the cloth's own size) passes every check."""
    sim = rs.Simulation(rs.cloth(8, 8, pins="none"), dt=0.001)
    check = health_of(sim)
    for _ in range(1000):
        sim.step(4)
        assert check.check(sim.positions, sim.velocities) is None
    assert sim.velocities[:, 1].min() == pytest.approx(-9.81 * sim.time, rel=1e-3)


def test_grab_work_equals_the_elastic_energy_it_stores():
    """Pulling the free end of a pinned spring slowly by d stores k d^2 / 2 (Hooke)."""
    k, d = 50.0, 0.3
    sim = rs.Simulation(rs.SpringSystem([[0, 0, 0], [1, 0, 0]], [[0, 1]], mass=0.2,
                                        stiffness=k, damping=0.5, pinned=[0]),
                        dt=0.001, gravity=(0, 0, 0), grab_follow_time=0.002)
    check = health_of(sim)
    for s in range(1, 3001):
        sim.grab(1, [1.0 + d * s / 3000, 0.0, 0.0])
        sim.step(1)
        assert check.check(sim.positions, sim.velocities, 1) is None
    stretch = sim.positions[1, 0] - 1.0
    assert check.grab_work == pytest.approx(0.5 * k * stretch**2, rel=0.02)


# --- each criterion flags what it is for, and names its numbers ------------------------------
@pytest.fixture
def cloth():
    sim = rs.load("cloth").simulation()
    sim.step(100)
    return sim


@pytest.mark.parametrize("array, value", [("positions", np.nan), ("velocities", np.inf),
                                          ("positions", -np.inf)])
def test_non_finite_state_is_flagged(cloth, array, value):
    check = health_of(cloth)
    getattr(cloth, array)[37, 1] = value
    reason = check.check(cloth.positions, cloth.velocities)
    assert reason is not None and "non-finite" in reason and "particle 37" in reason


def test_non_finite_float32_state_is_flagged():
    sim = rs.Simulation(rs.rope(10, 1.0), dtype=np.float32)
    check = health_of(sim)
    sim.step(10)
    assert check.check(sim.positions, sim.velocities) is None
    sim.velocities[4, 0] = np.float32("nan")
    assert "particle 4" in check.check(sim.positions, sim.velocities)


def test_spring_stretched_past_the_stretch_limit_is_flagged(cloth):
    check = health_of(cloth)
    a, b = cloth.system.springs[0]
    rest = cloth.rest_lengths[0]
    direction = cloth.positions[b] - cloth.positions[a]
    direction /= np.linalg.norm(direction)
    # the weight of the cloth (5.8 kg) on its softest spring (k L = 50 N) would stretch it
    # 2.1x: the limit is 10x that
    assert check.weight_stretch == pytest.approx(1 + 5.76 * 9.81 / 50, rel=1e-3)
    assert 1.0 <= check.reference_stretch < 1.2  # the hanging cloth's own sag
    limit = 10 * check.weight_stretch
    cloth.positions[b] = cloth.positions[a] + direction * 1.1 * limit * rest
    reason = check.check(cloth.positions, cloth.velocities)
    assert reason is not None and reason.startswith("spring") and "x its rest length" in reason
    assert f"limit of {limit:.3g} x" in reason


def test_pieces_of_a_cut_cloth_may_part_without_a_stretch_divergence():
    """A broken spring holds nothing (stiffness 0): its ends falling apart is no
    divergence, however far they part."""
    sim = rs.Simulation(rs.cloth(10, 10, spacing=0.05, pins="top-corners"), dt=1 / 600)
    a, b = sim.system.springs.T
    rows = np.round((sim.positions[:, 1].max() - sim.positions[:, 1]) / 0.05).astype(int)
    crossing = np.flatnonzero((np.minimum(rows[a], rows[b]) < 5)
                              & (np.maximum(rows[a], rows[b]) >= 5))  # the cut: rows 4 | 5
    assert crossing.size
    sim.break_springs(crossing)
    sim.step(1200)  # 2 s of free fall: the lower half drops ~20 m, > 10 x the limit
    lower = rows >= 5
    assert sim.positions[lower, 1].mean() < sim.positions[~lower, 1].mean() - 10.0
    assert np.isfinite(sim.positions).all()


def test_long_drag_of_the_pinned_cloth_is_allowed_by_the_grab_reach():
    """Dragging a corner 10 m away from a 1.15 m cloth pinned at two corners stretches
    springs past the limit; the grab has no force limit, so its reach raises it."""
    sim = rs.load("cloth").simulation()
    sim.step(200)
    check = health_of(sim)
    corner = sim.n_particles - 1
    targets = line(sim.positions[corner].copy(), [12, 12, 12], sim.dt, 500)
    reason, _ = hold_path(sim, check, corner, targets)
    assert reason is None, reason
    limit = check.stretch_limit * max(check.reference_stretch, check.weight_stretch)
    assert longest_stretch(sim.positions, sim) > limit
    reason = check.check(sim.positions, sim.velocities)  # the same state, grab forgotten
    assert reason is not None and reason.startswith("spring")


def test_energy_runaway_is_flagged(cloth):
    check = health_of(cloth)
    centre = cloth.positions.mean(axis=0)
    cloth.positions[:] = centre + 1.8 * (cloth.positions - centre)  # every spring 1.8x
    reason = check.check(cloth.positions, cloth.velocities)
    assert reason is not None and reason.startswith("energy runaway")
    assert f"{check.energy_scale:.3g} J" in reason


def test_particle_covering_half_the_scene_in_one_step_is_flagged(cloth):
    check = health_of(cloth)
    check.dt = 0.5  # s: 1.7 m/s now covers half of the 1.6 m cloth per step
    cloth.velocities[9] = [1.7 * check.size, 0.0, 0.0]
    reason = check.check(cloth.positions, cloth.velocities)
    assert reason is not None and "in one step of 0.5 s" in reason


def test_healthcheck_rejects_bad_arguments(cloth):
    with pytest.raises(ValueError, match="stretch_limit"):
        health_of(cloth, stretch_limit=0.0)
    with pytest.raises(ValueError, match="dt"):
        health_of(cloth).dt = float("nan")
    cloth.positions[0, 0] = np.nan
    with pytest.raises(ValueError, match="rebase: the state is not finite at particle 0"):
        health_of(cloth)


# --- the checkpoint ring ---------------------------------------------------------------------
def test_ring_keeps_the_newest_and_overwrites_the_oldest():
    ring = CheckpointRing(3, size=4)
    assert ring.newest() is None and ring.newest_healthy(100) is None
    for step in range(0, 56, 8):  # 7 saves into 4 slots: steps 24..48 remain
        x = np.full((3, 3), float(step))
        ring.save(x, -x, step * 0.001, step)
    assert len(ring) == 4
    newest = ring.newest()
    assert newest.step == 48 and newest.time == pytest.approx(0.048)
    assert np.all(newest.positions == 48.0) and np.all(newest.velocities == -48.0)
    assert ring.newest(before_step=40).step == 32
    # a checkpoint counts once the 32 steps after it passed: failing at 66 keeps step 32
    assert ring.newest_healthy(66, confirm=32).step == 32
    assert ring.newest_healthy(50, confirm=32).step == 24  # none confirmed: the oldest
    ring.clear()
    assert ring.newest() is None


def test_ring_copies_states_and_warm_data_into_preallocated_buffers():
    ring = CheckpointRing(2, size=2)
    x, v, warm = np.ones((2, 3)), np.zeros((2, 3)), np.arange(6.0)
    ring.save(x, v, 0.0, 0, extra={"dv": warm, "iterations": 7})
    buffer = ring.newest().extra["dv"]
    x[:] = 5.0
    warm[:] = -1.0
    kept = ring.newest()
    assert np.all(kept.positions == 1.0) and np.all(kept.extra["dv"] == np.arange(6.0))
    assert kept.extra["iterations"] == 7
    ring.save(x, v, 0.1, 8, extra={"dv": warm})
    ring.save(x, v, 0.2, 16, extra={"dv": warm})  # back in the first slot
    assert ring.newest().extra["dv"] is buffer and "iterations" not in ring.newest().extra


def test_ring_is_sized_so_a_confirmed_checkpoint_always_exists():
    span = (health.RING_SIZE - 1) * health.CHECKPOINT_EVERY
    assert span >= health.CONFIRM_STEPS + health.CHECKPOINT_EVERY
    assert health.CHECKPOINT_EVERY % health.CHECK_EVERY == 0


@pytest.mark.parametrize("size", [0, -1, 2.5, True])
def test_ring_rejects_a_bad_size(size):
    with pytest.raises(ValueError, match="size"):
        CheckpointRing(3, size=size)


# --- recovery advice -------------------------------------------------------------------------
@pytest.mark.parametrize("failed", list(rs.INTEGRATORS))
def test_advice_never_names_the_failed_integrator_nor_forward_euler(failed):
    advice = advise(failed, 0.001, 0.0004, STABILITY)
    assert failed not in advice.integrators and "explicit_euler" not in advice.integrators
    assert advice.integrators  # always something to try
    assert advice.text.startswith(f"{failed} diverged at dt = 0.001 s. Try ")
    assert failed not in advice.text.split(" Try ")[1]
    for name, dt in advice.options:
        if not STABILITY[name]:
            assert dt <= 0.0004  # explicit ones only within the stable-step bound
        if STABILITY[failed]:
            assert dt < 0.001  # an implicit failure: every option takes a smaller step


def test_advice_after_implicit_midpoint_diverges_at_stiffness_1e9():
    sim = rs.load("rope").simulation()
    sim.integrator = "implicit_midpoint"
    sim.set_stiffness(1e9)
    with pytest.raises(rs.SimulationDiverged) as caught:
        sim.step(2000)
    assert np.linalg.norm(sim.velocities, axis=1).max() <= 50.0  # a healthy state kept
    advice = caught.value.advice
    stiff = sim.system.copy()
    stiff.stiffness = np.full(sim.n_springs, 1e9)
    assert sim.stable_dt() == pytest.approx(stiff.stable_dt())  # of the live stiffness
    assert advice == advise(sim.integrator, sim.dt, stiff.stable_dt(), STABILITY)
    assert "implicit_midpoint" not in str(caught.value).split("Try ")[-1]
    assert advice.integrators[0] == "backward_euler"
    assert "implicit_midpoint" not in advice.integrators
    assert dict(advice.options)["backward_euler"] < sim.dt
    assert "unconditionally stable" not in advice.text


def test_advice_after_an_explicit_failure_offers_the_implicit_ones_at_this_dt():
    advice = advise("symplectic_euler", 0.004, 0.001, STABILITY)
    options = dict(advice.options)
    assert options["backward_euler"] == options["implicit_midpoint"] == 0.004
    assert options["verlet"] == 0.001 and "4 substeps per 0.004 s" in advice.text


def test_advice_rejects_unknown_names_and_bad_steps():
    with pytest.raises(ValueError, match="failed: unknown integrator 'rk4'; allowed: "):
        advise("rk4", 0.001, 0.001, STABILITY)
    with pytest.raises(ValueError, match="dt: must be a number > 0"):
        advise("verlet", -1.0, 0.001, STABILITY)
    with pytest.raises(ValueError, match="stable_dt"):
        advise("verlet", 0.001, float("nan"), STABILITY)
