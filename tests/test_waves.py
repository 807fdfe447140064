"""The wave lab: pluck, front arrival, measured speed against closed-form wave speeds,
the integrators' dispersion and damping, the wave scenes and the ``wave`` command."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

from ropesim.app.wave import add_wave_parser
from ropesim.engine import builders
from ropesim.engine.impulses import pluck
from ropesim.engine.simulation import Simulation
from ropesim.engine.waves import (
    arrival_times, christoffel, first_peaks, hann_impulse_fractions, integrator_response,
    shortest_paths, wave_experiment,
)
from ropesim.io.scenes import load

WAVE_SCENES = ("drum", "ring-wave", "string")


def free_chain(n: int = 201, length: float = 10.0, mass: float = 0.02,
               stiffness: float = 8000.0, dt: float = 2e-4) -> Simulation:
    """A straight planar chain, no pins, no gravity, no damping."""
    system = builders.rope(n, length, dim=2, pins="none", mass=mass, stiffness=stiffness,
                           damping=0.0)
    return Simulation(system, dt=dt, gravity=(0.0, 0.0, 0.0))


# --- pluck ---------------------------------------------------------------------------------
def test_pluck_changes_momentum_by_exactly_the_impulse_while_paused():
    sim = free_chain(11)
    sim.velocities[:] = np.random.default_rng(1).normal(size=(11, 3)) * [1, 1, 0]
    before, time_before = sim.momentum(), sim.time
    pluck(sim, 4, (0.003, -0.002))
    np.testing.assert_allclose(sim.momentum() - before, [0.003, -0.002, 0.0], atol=1e-15)
    assert sim.time == time_before  # paused: no step was taken
    sim.step(500)  # springs are internal forces: the momentum stays
    np.testing.assert_allclose(sim.momentum() - before, [0.003, -0.002, 0.0], atol=1e-12)


def test_pluck_gives_the_particle_impulse_over_mass():
    sim = free_chain(5)
    pluck(sim, 2, [0.0, 0.01, 0.0])
    np.testing.assert_allclose(sim.velocities[2], [0.0, 0.01 / 0.02, 0.0])
    assert not sim.velocities[[0, 1, 3, 4]].any()


def test_a_hann_pulse_delivers_the_whole_impulse():
    sim = free_chain(101)
    wave_experiment(sim, 50, [90], (0.002, 0.0), duration=0.02, pulse_duration=0.01)
    np.testing.assert_allclose(sim.momentum(), [0.002, 0.0, 0.0], atol=1e-12)


def test_hann_fractions_sum_to_one_symmetric_and_smooth():
    fractions = hann_impulse_fractions(0.01, 1e-4)
    assert fractions.size == 100
    assert fractions.sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(fractions, fractions[::-1], atol=1e-14)
    assert fractions[0] < 1e-5 and fractions.argmax() in (49, 50)
    np.testing.assert_array_equal(hann_impulse_fractions(0.0, 1e-3), [1.0])


@pytest.mark.parametrize("particle, impulse, message", [
    (0, (0.0, 1.0, 0.0), r"particle: particle 0 is pinned and cannot be plucked"),
    (99, (0.0, 1.0), r"particle: particle index must be in 0\.\.9, got 99"),
    (-1, (0.0, 1.0), r"particle: particle index must be in 0\.\.9, got -1"),
    (2.5, (0.0, 1.0), r"particle: expected a particle index \(an integer\), got 2\.5"),
    (True, (0.0, 1.0), r"particle: expected a particle index"),
    (3, (1.0,), r"impulse: expected 2 or 3 finite numbers \(N\*s\), got \(1\.0,\)"),
    (3, (1.0, math.nan), r"impulse: expected 2 or 3 finite numbers"),
    (3, "up", r"impulse: expected 2 or 3 finite numbers"),
    (3, (0.0, 1.0, 0.5), r"impulse: a planar \(2-D\) system needs z = 0"),
])
def test_bad_plucks_name_the_field(particle, impulse, message):
    sim = Simulation(builders.rope(10, dim=2, pins="start"), gravity=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match=message):
        pluck(sim, particle, impulse)
    assert not sim.velocities.any()


def test_a_grabbed_particle_cannot_be_plucked():
    sim = free_chain(10)
    sim.grab(3, (0.0, 1.0))
    with pytest.raises(ValueError, match=r"particle: particle 3 is held by a grab"):
        pluck(sim, 3, (0.0, 1.0))


# --- the arrival rule ------------------------------------------------------------------------
def test_arrival_is_the_half_height_of_the_first_peak():
    times = np.linspace(0.0, 1.0, 20001)
    centre, width = 0.4, 0.03
    bump = np.exp(-0.5 * ((times - centre) / width) ** 2)
    precursor = 0.05 * np.exp(-0.5 * ((times - 0.15) / 0.01) ** 2)  # below 10 % of the peak
    echo = 1.8 * np.exp(-0.5 * ((times - 0.8) / width) ** 2)  # a larger, later lobe
    rising = np.clip(times - 0.5, 0.0, None)  # still rising at the end: no front yet
    signal = np.column_stack([bump + precursor + echo, rising, np.zeros_like(times)])
    arrival = arrival_times(times, signal)
    half_height = centre - width * math.sqrt(2.0 * math.log(2.0))
    assert arrival[0] == pytest.approx(half_height, abs=1e-4)
    assert math.isnan(arrival[1]) and math.isnan(arrival[2])
    assert arrival_times(times, signal, threshold=0.1)[0] == pytest.approx(
        centre - width * math.sqrt(2.0 * math.log(10.0)), abs=1e-4)


# --- speeds against closed forms ----------------------------------------------------------------
def test_longitudinal_front_on_a_uniform_chain_runs_at_L_sqrt_k_over_m():
    mass, stiffness, n, length = 0.02, 8000.0, 201, 10.0
    spacing = length / (n - 1)
    omega0 = math.sqrt(stiffness / mass)
    expected = spacing * omega0  # c = L sqrt(k/m), m/s
    sim = free_chain(n, length, mass, stiffness)
    result = wave_experiment(sim, 0, [50, 100, 150], (1e-3, 0.0), duration=170 / omega0,
                             pulse_duration=16 / omega0)  # the pulse spans ~16 springs
    for probe in result.probes:
        assert probe.mode == "longitudinal"
        assert probe.theory == pytest.approx(expected, rel=1e-9)
        assert probe.distance == pytest.approx(probe.hops * spacing, rel=1e-9)
        assert probe.speed == pytest.approx(expected, rel=0.05), probe


def test_taut_string_transverse_front_runs_at_sqrt_T_over_mu():
    scene = load("string")
    params = scene.params
    spacing = params["length"] / (params["n"] - 1)
    tension, mu = params["tension"], params["mass"] / spacing
    expected = math.sqrt(tension / mu)  # c = sqrt(T / mu), m/s
    system = scene.build()
    np.testing.assert_allclose(system.stiffness * (spacing - system.rest_lengths), tension)
    result = wave_experiment(scene, 30, [60, 90], (0.0, 0.002), duration=0.5,
                             pulse_duration=0.02)
    for probe in result.probes:
        assert probe.mode == "transverse"
        assert probe.theory == pytest.approx(expected, rel=1e-9)
        assert probe.speed == pytest.approx(expected, rel=0.05), probe
    assert "sqrt(T/mu)" in result.model and "50 N" in result.model


def test_ring_fronts_meet_opposite_the_source_at_half_the_circumference_over_c():
    scene = load("ring-wave")
    n = scene.params["n"]
    spacing = 2 * scene.params["radius"] * math.sin(math.pi / n)
    c = spacing * math.sqrt(scene.params["stiffness"] / scene.params["mass"])
    opposite, quarter = n // 2, n // 4
    result = wave_experiment(scene, 0, [quarter, opposite - 1, opposite + 1, opposite],
                             (0.005, 0.0), duration=0.45, pulse_duration=0.04)
    meeting = result.departure + (n / 2) * spacing / c
    by_particle = {p.particle: p for p in result.probes}
    assert by_particle[opposite].arrival == pytest.approx(meeting, rel=0.05)
    # the fronts come round both sides: neighbours of the meeting point are reached
    # through different neighbours of the source, at the same time
    branch = result.paths.branch
    assert branch[opposite - 1] != branch[opposite + 1]
    assert by_particle[opposite - 1].arrival == pytest.approx(
        by_particle[opposite + 1].arrival, rel=1e-3)
    # one front only loses height as it runs; two fronts add where they meet
    assert by_particle[opposite].peak_speed > 1.4 * by_particle[quarter].peak_speed


def test_square_grid_speeds_include_the_shear_springs():
    mass, k = 0.01, 1000.0
    for bend, axis_p in ((False, 2 * k), (True, 6 * k)):  # k_s + k_d (+ 4 k_b)
        system = builders.cloth(9, 9, 0.05, plane="xy", pins="edges", mass=mass, stiffness=k,
                                damping=0.0, bend=bend)
        sim = Simulation(system, dt=1e-4, gravity=(0.0, 0.0, 0.0))
        speeds = np.sqrt(np.linalg.eigvalsh(christoffel(sim, 40, np.array([1.0, 0, 0]))))
        np.testing.assert_allclose(sorted(speeds), [0.0, 0.05 * math.sqrt(k / mass),
                                                    0.05 * math.sqrt(axis_p / mass)], atol=1e-9)


def test_drum_P_front_along_the_strike_matches_the_grid_theory():
    result = wave_experiment(load("drum"), 840, [1250, 1455], (0.0, 0.002, 0.0), duration=0.06,
                             pulse_duration=0.02)
    expected = 0.05 * math.sqrt(2 * 1000.0 / 0.01)  # a sqrt((k_s + k_d) / m)
    for probe in result.probes:
        assert probe.mode == "longitudinal" and probe.theory == pytest.approx(expected)
        assert probe.speed == pytest.approx(expected, rel=0.05)
    assert "shear 50%" in result.model
    assert result.layout == "grid" and np.isnan(result.arrival[0])  # a pinned corner


def test_shortest_paths_follow_the_springs():
    system = builders.cloth(5, 5, 0.1, plane="xy", pins="none", bend=False)
    paths = shortest_paths(system, 12)  # the centre; diagonals are shear springs
    assert paths.hops[[12, 13, 14, 18, 24, 0]].tolist() == [0, 1, 2, 1, 2, 2]
    assert paths.length[14] == pytest.approx(0.2)  # along the row, not a zigzag
    assert paths.length[24] == pytest.approx(0.2 * math.sqrt(2))
    assert paths.path(14) == [12, 13, 14]


# --- integrators -----------------------------------------------------------------------------
#: (amplitude factor per step |lambda|, phase per step arg lambda) of an undamped spring
#: at w*dt = h, from each integrator's 2 x 2 step matrix
STEP_EIGENVALUES = {
    "explicit_euler": (lambda h: math.sqrt(1 + h * h), math.atan),
    "symplectic_euler": (lambda h: 1.0, lambda h: 2 * math.asin(h / 2)),
    "verlet": (lambda h: 1.0, lambda h: 2 * math.asin(h / 2)),
    "implicit_midpoint": (lambda h: 1.0, lambda h: 2 * math.atan(h / 2)),
    "backward_euler": (lambda h: 1 / math.sqrt(1 + h * h), math.atan),
}


@pytest.mark.parametrize("integrator", sorted(STEP_EIGENVALUES))
@pytest.mark.parametrize("omega_dt", [0.1, 0.6])
def test_integrator_response_matches_the_closed_forms(integrator, omega_dt):
    modulus, phase = (f(omega_dt) for f in STEP_EIGENVALUES[integrator])
    gain, ratio = integrator_response(integrator, omega_dt)
    assert ratio == pytest.approx(phase / omega_dt, rel=1e-9)
    assert gain == pytest.approx(modulus ** (2 * math.pi / phase), rel=1e-8)


def test_backward_euler_damps_and_spreads_the_front_symplectic_euler_keeps_it():
    results = {
        name: wave_experiment(free_chain(121, 6.0, dt=1e-3), 0, [40, 100], (1e-3, 0.0),
                              duration=0.2, pulse_duration=0.02, integrator=name)
        for name in ("symplectic_euler", "backward_euler")
    }
    explicit, implicit = (results[n].probes for n in ("symplectic_euler", "backward_euler"))
    # symplectic Euler: the pulse keeps its height as it runs
    assert explicit[1].peak_speed == pytest.approx(explicit[0].peak_speed, rel=0.05)
    # backward Euler: numerical damping, the farther the lower
    assert implicit[1].peak_speed < 0.8 * implicit[0].peak_speed
    assert implicit[1].peak_speed < 0.8 * explicit[1].peak_speed
    # ... and spreads it: the rise from half height to the first peak takes longer
    rise = {}
    for name, result in results.items():
        peak_at, _ = first_peaks(result.speed)
        rise[name] = result.times[peak_at[100]] - result.probes[1].arrival
    assert rise["backward_euler"] > 2 * rise["symplectic_euler"]
    assert "numerical damping" in results["backward_euler"].integrator_note
    assert "no numerical damping" in results["symplectic_euler"].integrator_note


# --- bad experiments -------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    ({"source": 500}, r"source: particle index must be in 0\.\.120, got 500"),
    ({"source": 0}, r"source: particle 0 is pinned and cannot be plucked"),
    ({"probes": [60, 999]}, r"probes: particle index must be in 0\.\.120, got 999"),
    ({"probes": []}, r"probes: give at least one particle index"),
    ({"probes": [30, 50]}, r"probes: particle 30 is the source"),
    ({"probes": "x"}, r"probes: expected a particle index"),
    ({"impulse": (0.0, 0.0)}, r"impulse: must be non-zero"),
    ({"impulse": (1.0, 2.0, 3.0, 4.0)}, r"impulse: expected 2 or 3 finite numbers"),
    ({"duration": 0}, r"duration: must be a finite number > 0 s, got 0"),
    ({"pulse_duration": 1.0}, r"pulse_duration: must be shorter than duration"),
    ({"threshold": 1.5}, r"threshold: must be between 0 and 1"),
])
def test_bad_wave_experiments_name_the_field(kwargs, message):
    scene = load("string")
    arguments = {"source": 30, "probes": [60], "impulse": (0.0, 0.002), "duration": 0.01}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        wave_experiment(scene, **arguments)


def test_wave_experiment_needs_a_simulation_or_a_scene():
    with pytest.raises(TypeError, match=r"scene_or_sim: expected a Simulation or a Scene"):
        wave_experiment("string", 30, [60], (0.0, 0.002), 0.01)


# --- scenes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", WAVE_SCENES)
def test_wave_scenes_load_step_finite_and_say_which_wave(name):
    scene = load(name)
    assert any(word in scene.description for word in ("longitudinal", "transverse", "P front"))
    system = scene.build()
    sim = scene.simulation()
    sim.velocities[system.n_particles // 2 + 1] += (0.0, 0.05, 0.0)
    sim.step(200)
    assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))
    np.testing.assert_allclose(sim.positions[system.pinned], system.positions3()[system.pinned])


def test_drum_is_pinned_all_round_and_string_at_both_ends():
    drum = load("drum").build()
    rows, cols = drum.grid_shape
    border = np.zeros((rows, cols), bool)
    border[[0, -1], :] = border[:, [0, -1]] = True
    np.testing.assert_array_equal(drum.pinned, border.ravel())
    string = load("string").build()
    assert np.flatnonzero(string.pinned).tolist() == [0, string.n_particles - 1]


def test_rope_tension_sets_the_rest_length_so_every_link_pulls_T():
    plain = builders.rope(11, 2.0, pins="both", stiffness=500.0)
    np.testing.assert_allclose(plain.rest_lengths, 0.2)  # default: unstretched
    taut = builders.rope(11, 2.0, pins="both", stiffness=500.0, tension=20.0)
    np.testing.assert_allclose(taut.stiffness * (0.2 - taut.rest_lengths), 20.0)
    modulus = builders.rope(11, 2.0, pins="both", young_modulus=100.0, tension=20.0)
    np.testing.assert_allclose(modulus.stiffness * (0.2 - modulus.rest_lengths), 20.0)
    for bad, message in ((-1.0, r"^tension: must be a finite number >= 0 N, got -1\.0"),
                         ("abc", r"^tension: must be a finite number >= 0 N, got 'abc'"),
                         (100.0, r"^tension: must be below stiffness \* spacing = 100 N")):
        with pytest.raises(ValueError, match=message):
            builders.rope(11, 2.0, stiffness=500.0, tension=bad)


# --- the command ---------------------------------------------------------------------------
def run_wave(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ropesim")
    add_wave_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["wave", *argv])
    return args.handler(args)


def test_wave_command_prints_the_table_and_writes_a_plot(tmp_path, capsys):
    plot = tmp_path / "waves.png"
    code = run_wave(["ring-wave", "--source", "0", "--probes", "30,60", "--impulse", "0.005,0",
                     "--pulse", "0.04", "--duration", "0.4", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 20_000
    assert "ratio" in out and "theory: chain" in out and "a*sqrt(k/m)" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["30"], ["60"])]
    assert [row[0] for row in rows] == ["30", "60"]
    assert all(abs(float(row[7]) - 1.0) < 0.05 for row in rows)


def test_wave_command_compares_integrators(tmp_path, capsys):
    plot = tmp_path / "chain.svg"
    code = run_wave(["string", "--source", "30", "--probes", "60", "--impulse", "0.002",
                     "--pulse", "0.02", "--duration", "0.2", "--dt", "0.001",
                     "--integrators", "symplectic_euler,backward_euler", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert code == 0
    assert (tmp_path / "chain-symplectic_euler.svg").is_file()
    assert (tmp_path / "chain-backward_euler.svg").is_file()
    assert "backward_euler: speed x" in out and "peak |v| x" in out


@pytest.mark.parametrize("argv, message", [
    (["--source", "999", "--probes", "60", "--impulse", "0.002"],
     "ropesim: error: wave: source: particle index must be in 0..120, got 999"),
    (["--source", "30", "--probes", "60,500", "--impulse", "0.002"],
     "ropesim: error: wave: probes: particle index must be in 0..120, got 500"),
    (["--source", "0", "--probes", "60", "--impulse", "0.002"],
     "ropesim: error: wave: source: particle 0 is pinned and cannot be plucked"),
    (["--source", "30", "--probes", "60", "--impulse", "0,0"],
     "ropesim: error: wave: impulse: must be non-zero"),
    (["--source", "30", "--probes", "60", "--impulse", "0.002", "--plot", "w.gif"],
     "ropesim: error: wave: --plot: w.gif: allowed suffixes .png, .svg, .pdf"),
    (["--source", "30", "--probes", "60", "--impulse", "0.002", "--integrator", "rk4"],
     "ropesim: error: wave: integrator: unknown 'rk4'; allowed: "),
])
def test_wave_command_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path,
                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_wave(["string", *argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message)
    assert captured.out == "" and not list(tmp_path.iterdir())


def test_wave_command_rejects_malformed_probes_in_the_parser(capsys):
    with pytest.raises(SystemExit) as stop:
        run_wave(["string", "--source", "30", "--probes", "a,b", "--impulse", "0.002"])
    assert stop.value.code == 2
    assert "expected comma-separated particle indices" in capsys.readouterr().err
