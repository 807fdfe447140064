"""The `ropesim` command through main(argv) and as a subprocess (`python -m ropesim`)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from ropesim.app import cli, compare, progress
from ropesim.io.trajectory import load_trajectory
from ropesim.io.scenes import load, scene_names
from ropesim.engine.simulation import Simulation

REPO = Path(__file__).resolve().parent.parent
# explicit Euler at a large dt is asked for on purpose: it diverges
pytestmark = pytest.mark.filterwarnings("ignore:dt = .* stable step:RuntimeWarning")




def run_module(*args: str, cwd: Path, code: str | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m ropesim ARGS`` (or ``python -c CODE ARGS``) with the checkout on the path."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    launcher = ["-c", code] if code else ["-m", "ropesim"]
    command = [sys.executable, *launcher, *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def assert_one_line_error(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ropesim: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], err


# --- scenes ------------------------------------------------------------------------------------
def test_scenes_lists_each_shipped_scene_with_counts(capsys):
    assert cli.main(["scenes"]) == 0
    out = capsys.readouterr().out
    for name in scene_names():
        system = load(name).build()
        row = next(line for line in out.splitlines() if line.split()[0] == name)
        assert f" {system.n_particles} " in row and f" {system.n_springs} " in row
        assert load(name).description in row


# --- run ---------------------------------------------------------------------------------------
def test_run_energies_match_sim_energy_at_the_same_steps(tmp_path, capsys):
    out = tmp_path / "traj.npz"
    assert cli.main(["run", "star", "--steps", "60", "--every", "15", "--out", str(out),
                     "--quiet"]) == 0
    assert "star: 60 steps" in capsys.readouterr().out
    traj = load_trajectory(out)
    assert traj.steps.tolist() == [0, 15, 30, 45, 60] and traj.completed
    sim = load("star").simulation()
    for step, total, spring in zip(traj.steps, traj.total, traj.spring):
        sim.step(int(step) - sim.step_count)
        assert total == pytest.approx(sim.energy(), rel=1e-12, abs=1e-12)
        assert spring == pytest.approx(sim.spring_energy(), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(traj.positions[-1], sim.positions, rtol=1e-6)
    np.testing.assert_array_equal(traj.springs, sim.system.springs)
    assert 'builder = "star"' in traj.scene_toml


def test_run_set_changes_the_result_and_is_stored(tmp_path):
    base, stiff = tmp_path / "base.npz", tmp_path / "stiff.npz"
    common = ["--steps", "40", "--every", "40", "--quiet"]
    assert cli.main(["run", "star", *common, "--out", str(base)]) == 0
    assert cli.main(["run", "star", "--set", "stiffness=2000", "drag=0", *common,
                     "--out", str(stiff)]) == 0
    a, b = load_trajectory(base), load_trajectory(stiff)
    assert not np.allclose(a.positions[-1], b.positions[-1])
    assert "stiffness = 2000.0" in b.scene_toml and "drag = 0.0" in b.scene_toml


def test_run_writes_csv_and_energy_plot_with_a_tracked_particle(tmp_path):
    out = tmp_path / "t.npz"
    assert cli.main(["run", "star", "--duration", "0.1", "--every", "5", "--out", str(out),
                     "--csv", "--plot", str(tmp_path / "e.png"), "--track", "3", "-q"]) == 0
    text = (tmp_path / "t.csv").read_text()
    assert "step,time,kinetic,spring,gravity,total" in text
    assert (tmp_path / "e.png").stat().st_size > 10_000


@pytest.mark.parametrize("argv, fragments", [
    (["run", "star", "--set", "stifness=3"], ["unknown key 'stifness'", "stiffness"]),
    (["run", "star", "--set", "stiffness=abc"], ["stiffness", "'abc'"]),
    (["run", "star", "--set", "stiffness"], ["--set expects key=value"]),
    (["run", "no-such-scene"], ["unknown scene 'no-such-scene'"]),
    (["run", "star", "--integrator", "rk4"], ["simulation.integrator", "'rk4'"]),
    (["run", "star", "--every", "0"], ["--every"]),
    (["run", "star", "--track", "3"], ["--track", "--plot"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--size", "100x100"], ["multiples of 16"]),
    (["render", "star", "--out", "{tmp}/v.avi"], ["'.avi'"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--wireframe", "x"], ["--wireframe"]),
    (["compare", "star", "--integrators", "euler"], ["'euler'", "symplectic_euler"]),
    (["compare", "star", "--dt-sweep", "1e-2:1e-4:3"], ["--dt-sweep"]),
    (["frobnicate"], ["invalid choice"]),
])
def test_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path, capsys, argv, fragments):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if argv[0] == "run":
        argv += ["--out", str(tmp_path / "t.npz")]
    assert cli.main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, *fragments)
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_paths_fail_before_work(tmp_path, capsys):
    for path in (tmp_path / "missing" / "t.npz", tmp_path / "t.txt", tmp_path):
        assert cli.main(["run", "star", "--out", str(path)]) == 2
        assert_one_line_error(capsys.readouterr().err, str(path))
    assert cli.main(["run", "star", "--out", str(tmp_path / "t.npz"),
                     "--plot", str(tmp_path / "nope" / "e.png")]) == 2
    assert_one_line_error(capsys.readouterr().err, "nope")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_run_saves_a_readable_partial_file(tmp_path, capsys, monkeypatch):
    real_step = Simulation.step
    calls = []

    def step_then_ctrl_c(self, n=1):
        calls.append(n)
        if len(calls) == 5:
            raise KeyboardInterrupt
        real_step(self, n)

    monkeypatch.setattr(Simulation, "step", step_then_ctrl_c)
    out = tmp_path / "partial.npz"
    assert cli.main(["run", "star", "--steps", "1000", "--every", "10", "--out", str(out),
                     "-q"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interrupted" in err[0] and str(out) in err[0]
    traj = load_trajectory(out)
    assert not traj.completed and traj.stop_reason.startswith("interrupted")
    assert traj.steps.tolist() == [0, 10, 20, 30, 40] and traj.steps_done == 40
    assert "after step 40" in traj.stop_reason


def test_diverged_run_saves_the_partial_file_and_exits_1(tmp_path, capsys):
    out = tmp_path / "d.npz"
    assert cli.main(["run", "star", "--integrator", "explicit_euler", "--dt", "0.02",
                     "--steps", "1000", "--out", str(out), "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "diverged at step" in err[0]
    traj = load_trajectory(out)
    assert traj.diverged and not traj.completed and traj.steps_done < 1000


def test_run_as_a_subprocess(tmp_path):
    result = run_module("run", "star", "--steps", "20", "--every", "5", "--out", "t.npz",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "wrote t.npz" in result.stdout and result.stderr == ""
    assert len(load_trajectory(tmp_path / "t.npz")) == 5


def test_bad_set_key_as_a_subprocess_exits_2_with_one_line_and_no_file(tmp_path):
    result = run_module("run", "star", "--set", "bogus=1", "--out", "t.npz", cwd=tmp_path)
    assert result.returncode == 2
    assert_one_line_error(result.stderr, "bogus")
    assert not (tmp_path / "t.npz").exists()


def test_sigint_in_a_subprocess_leaves_a_readable_partial_file(tmp_path):
    """A real SIGINT (as Ctrl-C sends) in the middle of stepping, at a fixed point."""
    code = (
        "import os, signal, sys\n"
        "from ropesim.engine.simulation import Simulation\n"
        "from ropesim.app import cli\n"
        "real, calls = Simulation.step, []\n"
        "def step(self, n=1):\n"
        "    calls.append(n)\n"
        "    if len(calls) == 7:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    real(self, n)\n"
        "Simulation.step = step\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    result = run_module("run", "star", "--steps", "100000", "--every", "10", "--out", "p.npz",
                        cwd=tmp_path, code=code)
    assert result.returncode == 130, result.stderr
    assert "interrupted" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    traj = load_trajectory(tmp_path / "p.npz")
    assert not traj.completed and traj.interrupted
    assert 40 <= traj.steps_done <= 70 and traj.steps[-1] == traj.steps_done


# --- render ------------------------------------------------------------------------------------
def test_render_mp4_has_the_asked_frame_count_and_size(tmp_path, capsys):
    import imageio.v3 as iio

    out = tmp_path / "web.mp4"
    assert cli.main(["render", "star", "--out", str(out), "--frames", "12", "--fps", "24",
                     "--size", "160x96", "-q"]) == 0
    frames = list(iio.imiter(out))
    assert len(frames) == 12 and frames[0].shape == (96, 160, 3)
    assert "12 frames of 160x96 px" in capsys.readouterr().out


def test_render_png_still_is_not_blank(tmp_path):
    import imageio.v3 as iio

    out = tmp_path / "still.png"
    assert cli.main(["render", "rope", "--out", str(out), "--duration", "0.5",
                     "--size", "200x120", "--camera", "20,10,6", "-q"]) == 0
    image = iio.imread(out)
    assert image.shape == (120, 200, 3)
    background = np.median(image.reshape(-1, 3), axis=0)
    differs = np.abs(image.astype(int) - background).sum(axis=2) > 60
    assert differs.mean() > 0.005  # the rope, ball, grid and axes cover some pixels


def test_render_gif_and_png_folder(tmp_path):
    import imageio.v3 as iio

    assert cli.main(["render", "ring", "--out", str(tmp_path / "r.gif"), "--frames", "4",
                     "--size", "64x48", "-q"]) == 0
    assert iio.imread(tmp_path / "r.gif", index=None).shape == (4, 48, 64, 3)
    assert cli.main(["render", "ring", "--out", f"{tmp_path}/frames/", "--frames", "3",
                     "--size", "64x48", "--wireframe", "springs+particles", "--strain", "-q"]) == 0
    assert len(list((tmp_path / "frames").glob("frame_*.png"))) == 3


def test_render_as_a_subprocess_without_display(tmp_path):
    result = run_module("render", "star", "--out", "s.png", "--frames", "1", "--size", "64x64",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "s.png").exists()


def test_no_arguments_without_display_renders_the_cloth_video(tmp_path, capsys, monkeypatch):
    import imageio.v3 as iio

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(cli, "HEADLESS_DURATION", 0.2)
    monkeypatch.chdir(tmp_path)
    assert cli.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ropesim: no display") and "ropesim-cloth.mp4" in out[0]
    assert str(tmp_path / "ropesim-cloth.mp4") in out[-1]
    assert len(list(iio.imiter(tmp_path / "ropesim-cloth.mp4"))) == 6


# --- compare -----------------------------------------------------------------------------------
def table_rows(text: str) -> dict[str, list[str]]:
    """Integrator name -> the cells of its table row."""
    rows = {}
    for line in text.splitlines():
        cells = line.split()
        for cell in cells[:2]:
            if cell in ("explicit_euler", "symplectic_euler", "verlet", "implicit_midpoint",
                        "backward_euler"):
                rows[cell] = cells
    return rows


def test_compare_ranks_symplectic_euler_above_explicit_euler_when_undamped(tmp_path, capsys):
    plot = tmp_path / "compare.png"
    status = cli.main(["compare", "star", "--set", "damping=0", "drag=0", "--integrators",
                       "explicit_euler,symplectic_euler", "--duration", "0.3",
                       "--plot", str(plot), "-q"])
    assert status == 0
    rows = table_rows(capsys.readouterr().out)
    assert int(rows["symplectic_euler"][0]) < int(rows["explicit_euler"][0])
    final_drift = {name: abs(float(cells[3])) for name, cells in rows.items()}
    assert final_drift["symplectic_euler"] < final_drift["explicit_euler"]
    assert plot.stat().st_size > 10_000


def test_compare_run_functions_measure_drift_relative_to_the_energy_scale():
    scene = load("star").with_overrides({"damping": 0, "drag": 0})
    explicit = compare.run_integrator(scene, "explicit_euler", 0.002, 0.3)
    symplectic = compare.run_integrator(scene, "symplectic_euler", 0.002, 0.3)
    assert symplectic.max_abs_drift < 1e-3 < explicit.max_abs_drift
    assert symplectic.rank_key() < explicit.rank_key()
    assert symplectic.energy_scale == pytest.approx(explicit.energy_scale)
    assert symplectic.seconds_per_step > 0 and symplectic.status == "stable"


def test_compare_shows_divergence_in_the_table_instead_of_crashing(tmp_path, capsys):
    assert cli.main(["compare", "star", "--dt", "0.02", "--integrators",
                     "explicit_euler,backward_euler", "--duration", "0.5", "-q"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert " ".join(rows["explicit_euler"]).endswith(" s") and "at t =" in " ".join(
        rows["explicit_euler"])
    assert rows["backward_euler"][-1] == "no"
    assert rows["backward_euler"][0] == "1"


def test_dt_sweep_marks_where_each_integrator_diverges(tmp_path, capsys):
    plot = tmp_path / "sweep.png"
    assert cli.main(["compare", "star", "--integrators", "explicit_euler,backward_euler",
                     "--dt-sweep", "1e-3:2e-2:3", "--duration", "0.3", "--plot", str(plot),
                     "-q"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows["explicit_euler"][-1].startswith("DIVERGED")
    assert not any(cell.startswith("DIVERGED") for cell in rows["backward_euler"])
    assert plot.stat().st_size > 10_000


# --- viewer dispatch ---------------------------------------------------------------------------
@pytest.fixture
def fake_viewer(monkeypatch):
    calls: list[list[str]] = []
    module = types.ModuleType("ropesim.app.viewer")
    module.main = lambda argv: calls.append(list(argv)) or 0
    monkeypatch.setitem(sys.modules, "ropesim.app.viewer", module)
    import ropesim.app

    monkeypatch.setattr(ropesim.app, "viewer", module, raising=False)
    return calls


def test_view_and_viewer_flags_go_to_the_viewer_untouched(fake_viewer, monkeypatch):
    monkeypatch.setenv("DISPLAY", ":0")
    assert cli.main(["view", "rope", "--set", "x=1"]) == 0
    assert cli.main(["--window", "glfw", "--fullscreen"]) == 0
    assert cli.main([]) == 0
    assert fake_viewer == [["rope", "--set", "x=1"], ["--window", "glfw", "--fullscreen"], []]


def test_help_and_version_stay_with_the_cli(fake_viewer, capsys):
    assert cli.main(["--help"]) == 0
    assert "compare" in capsys.readouterr().out
    assert cli.main(["run", "--help"]) == 0
    assert "--every" in capsys.readouterr().out
    assert fake_viewer == []


def test_progress_bar_shows_percentage_rate_and_eta_only_when_enabled():
    import io

    stream = io.StringIO()
    bar = progress.ProgressBar("cloth", "steps", enabled=True, stream=stream, interval=0.0)
    bar(0, 200)
    bar(100, 200)
    bar.close()
    text = stream.getvalue()
    assert "50% 100/200 steps" in text and "steps/s" in text and "ETA" in text
    assert text.endswith("\r\x1b[K")
    quiet = io.StringIO()
    progress.ProgressBar("cloth", "steps", enabled=False, stream=quiet)(1, 2)
    assert quiet.getvalue() == ""
    assert not progress.ProgressBar("x", "steps", stream=io.StringIO()).enabled  # not a terminal


def test_compare_interrupted_prints_the_runs_so_far_and_exits_130(capsys, monkeypatch):
    real_step = Simulation.step

    def ctrl_c_during_backward_euler(self, n=1):
        if self.integrator == "backward_euler" and n > 1:  # not the warm-up step
            raise KeyboardInterrupt
        real_step(self, n)

    monkeypatch.setattr(Simulation, "step", ctrl_c_during_backward_euler)
    assert cli.main(["compare", "star", "--integrators", "symplectic_euler,backward_euler",
                     "--duration", "2", "-q"]) == 130  # 1000 steps: record steps 2 at a time
    captured = capsys.readouterr()
    rows = table_rows(captured.out)
    assert rows["symplectic_euler"][-1] == "no" and rows["backward_euler"][-1] == "interrupted"
    assert "interrupted (Ctrl-C) during backward_euler" in captured.err


def test_render_without_egl_fails_with_one_line_and_no_file(tmp_path, capsys, monkeypatch):
    from ropesim.render import offscreen

    def no_egl(require: int = 330):
        raise RuntimeError("no headless OpenGL 3.3 context via EGL (test)")

    monkeypatch.setattr(offscreen, "create_headless_context", no_egl)
    assert cli.main(["render", "star", "--out", str(tmp_path / "v.mp4"), "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ropesim: render failed: no headless OpenGL")
    assert list(tmp_path.iterdir()) == []


def test_render_divergence_keeps_the_frames_so_far_and_exits_1(tmp_path, capsys):
    import imageio.v3 as iio

    out = tmp_path / "d.mp4"
    assert cli.main(["render", "star", "--integrator", "explicit_euler", "--dt", "0.02",
                     "--frames", "100", "--size", "64x48", "--out", str(out), "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "diverged at step" in err[0] and str(out) in err[0]
    assert 1 <= len(list(iio.imiter(out))) < 100
