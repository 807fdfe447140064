"""io.trajectory, io.video, io.plots and render.headless: record / save / load trajectories,
stops, plots, video writers, render()."""

from __future__ import annotations

import numpy as np
import pytest

from ropesim.io.outputs import OutputError, check_output_path
from ropesim.io.plots import plot_energy
from ropesim.io.trajectory import RecordingInterrupted, Trajectory, load_trajectory, record
from ropesim.io.video import open_video_writer, output_kind, save_png, steps_per_frame
from ropesim.render.headless import render
from ropesim.io.scenes import load
from ropesim.engine.simulation import Simulation, SimulationDiverged


def star_sim(**overrides) -> Simulation:
    """The small planar web scene (65 particles), cheap enough for every test."""
    return load("star").simulation(**overrides)


# explicit Euler at a large dt is asked for on purpose: it diverges
pytestmark = pytest.mark.filterwarnings("ignore:dt = .* stable step:RuntimeWarning")


# --- record ---------------------------------------------------------------------------------
def test_record_samples_initial_state_every_k_steps_and_the_last_step():
    traj = record(star_sim(), 23, every=5)
    assert traj.steps.tolist() == [0, 5, 10, 15, 20, 23]
    assert traj.positions.shape == (6, 65, 3) and traj.positions.dtype == np.float32
    assert traj.momentum.shape == (6, 3) and traj.springs.shape == (128, 2)
    assert traj.completed and traj.steps_done == 23 and traj.stop_reason.startswith("completed")
    np.testing.assert_allclose(traj.times, traj.steps * 0.002)
    np.testing.assert_array_equal(traj.energy, traj.total)


def test_recorded_energies_match_a_separately_stepped_simulation():
    traj = record(star_sim(), 40, every=8)
    other = star_sim()
    for step, total, kinetic, strain in zip(traj.steps, traj.total, traj.kinetic,
                                            traj.max_strain):
        other.step(int(step) - other.step_count)
        assert total == pytest.approx(other.energy(), rel=1e-12, abs=1e-12)
        assert kinetic == pytest.approx(other.kinetic_energy(), rel=1e-12, abs=1e-12)
        assert strain == pytest.approx(other.max_strain(), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(traj.positions[-1], other.positions, rtol=1e-6)


def test_divergence_returns_the_partial_trajectory_up_to_the_last_finite_state():
    traj = record(star_sim(integrator="explicit_euler", dt=0.02), 1000, every=4)
    assert not traj.completed and traj.diverged and not traj.interrupted
    assert "diverged at step" in traj.stop_reason and "explicit_euler" in traj.stop_reason
    assert traj.steps_done < 1000 and traj.steps[-1] == traj.steps_done
    assert np.all(np.isfinite(traj.positions)) and np.all(np.isfinite(traj.total))


def test_ctrl_c_raises_recording_interrupted_carrying_the_samples_so_far():
    sim = star_sim()
    real_step = sim.step
    calls = []

    def step_then_interrupt(n: int = 1) -> None:
        calls.append(n)
        if len(calls) == 4:
            raise KeyboardInterrupt
        real_step(n)

    sim.step = step_then_interrupt
    with pytest.raises(KeyboardInterrupt) as info:
        record(sim, 100, every=10)
    assert isinstance(info.value, RecordingInterrupted)
    traj = info.value.trajectory
    assert traj.steps.tolist() == [0, 10, 20, 30]
    assert not traj.completed and traj.interrupted
    assert traj.stop_reason.startswith("interrupted") and "step 30" in traj.stop_reason


def test_record_rejects_bad_counts():
    with pytest.raises(ValueError, match="every"):
        record(star_sim(), 10, every=0)
    with pytest.raises(ValueError, match="steps"):
        record(star_sim(), -1)


# --- save / load ------------------------------------------------------------------------------
def test_npz_round_trip_keeps_arrays_and_metadata(tmp_path):
    traj = record(star_sim(integrator="verlet"), 12, every=3)
    traj.scene_toml = "builder = 'star'\n"
    loaded = load_trajectory(traj.save(tmp_path / "t.npz"))
    for name in ("steps", "times", "positions", "kinetic", "spring", "gravity", "total",
                 "momentum", "max_strain", "springs"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(traj, name), err_msg=name)
    metadata = (loaded.scene, loaded.integrator, loaded.dt, loaded.every)
    assert metadata == ("star", "verlet", 0.002, 3)
    assert loaded.completed is True and loaded.scene_toml == traj.scene_toml
    assert not list(tmp_path.glob(".*tmp"))  # the temporary file was moved into place


def test_csv_holds_the_energy_table_and_metadata_comments(tmp_path):
    traj = record(star_sim(), 6, every=2)
    text = traj.save(tmp_path / "e.csv").read_text()
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert "# scene: star" in comments and "# completed: True" in comments
    table = np.genfromtxt(tmp_path / "e.csv", delimiter=",", names=True,
                          skip_header=len(comments))
    assert table.dtype.names[:6] == ("step", "time", "kinetic", "spring", "gravity", "total")
    np.testing.assert_allclose(table["total"], traj.total, rtol=1e-15)


def test_save_and_load_refuse_other_formats(tmp_path):
    traj = record(star_sim(), 1)
    with pytest.raises(OutputError, match=r"\.npz or \.csv"):
        traj.save(tmp_path / "t.txt")
    with pytest.raises(ValueError, match="reads .npz"):
        load_trajectory(tmp_path / "t.csv")


def test_plot_energy_with_a_tracked_particle_writes_a_png(tmp_path):
    traj = record(star_sim(), 30, every=3)
    path = plot_energy(traj, tmp_path / "energy.png", track=10)
    import imageio.v3 as iio

    image = iio.imread(path)
    assert image.shape[0] > 500 and image.std() > 10
    with pytest.raises(ValueError, match="track"):
        plot_energy(traj, tmp_path / "bad.png", track=65)


# --- output paths and writers ---------------------------------------------------------------
def test_steps_per_frame_gives_true_speed_video():
    assert steps_per_frame(0.001, 30) == 33
    assert steps_per_frame(0.002, 25) == 20
    assert steps_per_frame(0.1, 30) == 1
    with pytest.raises(ValueError):
        steps_per_frame(0.0, 30)


def test_output_kind_and_path_checks(tmp_path):
    assert output_kind("a.mp4") == "mp4" and output_kind("a.gif") == "gif"
    assert output_kind("a.png") == "png" and output_kind(f"{tmp_path}/frames/") == "frames"
    with pytest.raises(OutputError, match=r"\.avi"):
        output_kind("a.avi")
    with pytest.raises(OutputError, match="does not exist"):
        check_output_path(tmp_path / "missing" / "t.npz", (".npz",))
    with pytest.raises(OutputError, match="is a folder"):
        check_output_path(tmp_path, (".npz",))
    assert check_output_path(tmp_path / "t.npz", (".npz",)) == tmp_path / "t.npz"
    assert not (tmp_path / "t.npz").exists()


def test_video_writers_mp4_gif_and_png_folder(tmp_path):
    import imageio.v3 as iio

    frames = [np.full((48, 64, 3), 40 * i, np.uint8) for i in range(5)]
    for name in ("v.mp4", "v.gif", "frames/"):
        with open_video_writer(f"{tmp_path}/{name}", fps=25) as writer:
            for frame in frames:
                writer.append(frame)
        assert writer.frames_written == 5 and writer.size == (64, 48)
    assert iio.imread(tmp_path / "v.gif", index=None).shape == (5, 48, 64, 3)
    assert len(list(iio.imiter(tmp_path / "v.mp4"))) == 5
    assert sorted(p.name for p in (tmp_path / "frames").iterdir())[-1] == "frame_00004.png"


def test_mp4_writer_rejects_sides_not_multiple_of_16(tmp_path):
    writer = open_video_writer(tmp_path / "v.mp4", fps=30)
    with pytest.raises(ValueError, match="multiples of 16"):
        writer.append(np.zeros((50, 64, 3), np.uint8))
    writer.close()


def test_save_png_checks_the_array(tmp_path):
    import imageio.v3 as iio

    rgb = np.zeros((8, 8, 3), np.uint8)
    rgb[2, 3] = (255, 0, 0)
    np.testing.assert_array_equal(iio.imread(save_png(tmp_path / "a.png", rgb)), rgb)
    with pytest.raises(ValueError, match="uint8"):
        save_png(tmp_path / "b.png", rgb.astype(np.float32))


# --- render -----------------------------------------------------------------------------------
def test_render_returns_frames_that_change_as_the_scene_moves():
    frames = render("rope", frames=3, fps=10, size=(128, 80))
    assert len(frames) == 3 and frames[0].shape == (80, 128, 3) and frames[0].dtype == np.uint8
    assert frames[0].std() > 5
    assert np.abs(frames[2].astype(int) - frames[0].astype(int)).sum() > 0


def test_render_a_simulation_to_a_gif_advances_it_by_steps_per_frame(tmp_path):
    import imageio.v3 as iio

    sim = star_sim()
    path = render(sim, out=tmp_path / "web.gif", frames=4, fps=25, size=(96, 64),
                  wireframe="springs+particles", strain_colors=True)
    assert iio.imread(path, index=None).shape == (4, 64, 96, 3)
    assert sim.step_count == 3 * steps_per_frame(sim.dt, 25)


def test_render_stops_on_divergence_but_closes_the_video(tmp_path):
    import imageio.v3 as iio

    sim = star_sim(integrator="explicit_euler", dt=0.02)
    with pytest.raises(SimulationDiverged):
        render(sim, out=tmp_path / "v.mp4", frames=200, fps=25, size=(64, 48))
    written = len(list(iio.imiter(tmp_path / "v.mp4")))
    assert 1 <= written < 200


def test_trajectory_is_a_plain_dataclass_you_can_build():
    traj = Trajectory(steps=np.arange(2), times=np.zeros(2),
                      positions=np.zeros((2, 1, 3), np.float32), kinetic=np.zeros(2),
                      spring=np.zeros(2), gravity=np.zeros(2), total=np.ones(2), momentum=np.zeros((2, 3)), max_strain=np.zeros(2),
                      springs=np.zeros((0, 2), np.int64))
    assert len(traj) == 2 and traj.n_particles == 1 and traj.energy.tolist() == [1.0, 1.0]


# --- the frame loop shared by the viewer and render() ------------------------------------------
def test_advance_frame_runs_the_steps_and_times_them():
    from ropesim.render.frame_loop import advance_frame

    sim = star_sim()
    result = advance_frame(sim, 7)
    assert result.steps == 7 == sim.step_count and result.diverged is None
    assert result.seconds > 0 and result.ms_per_step == pytest.approx(1000 * result.seconds / 7)
    assert advance_frame(sim, 0).steps == 0 and sim.step_count == 7


def test_advance_frame_returns_a_divergence_instead_of_raising_it():
    from ropesim.render.frame_loop import advance_frame

    sim = star_sim(integrator="explicit_euler", dt=0.02)
    result = advance_frame(sim, 1000)
    assert isinstance(result.diverged, SimulationDiverged)
    assert result.steps == sim.step_count < 1000
    assert np.all(np.isfinite(sim.positions))


def test_rs_render_stays_the_function_after_the_render_package_is_imported():
    """``rs.render`` is the function, not the ``ropesim.render`` package, also after a
    first call imported the package's modules (a fresh interpreter: nothing loaded yet)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = ("import ropesim as rs\n"
            "first = rs.render('star', frames=1, size=(32, 32))\n"
            "import ropesim.render.renderer\n"
            "second = rs.render('star', frames=1, size=(32, 32))\n"
            "print(callable(rs.render), len(first), len(second))\n")
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "1", "1"]
