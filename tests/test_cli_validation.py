"""Every bad flag is one line on stderr naming the flag, its value and what is allowed,
with the command's --help, exit code 2, and nothing computed or written; a run that
would take absurdly long is refused (--max-steps) or warned about."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ropesim.app import cli
from ropesim.app.arguments import LONG_RUN_STEPS, MAX_STEPS

REPO = Path(__file__).resolve().parent.parent


def assert_usage_line(err: str, command: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ropesim: error: "), err
    assert lines[0].endswith(f"see ropesim {command} --help"), err
    for fragment in fragments:
        assert fragment in lines[0], err


@pytest.mark.parametrize("argv, fragments", [
    (["run", "star", "--duration", "1e308"], ["--duration 1e+308", "--max-steps"]),
    (["run", "star", "--steps", "1e30"], ["--steps 1e+30", f"--max-steps {MAX_STEPS}"]),
    (["run", "star", "--dt", "1e-300"], ["dt = 1e-300", "--max-steps"]),
    (["run", "star", "--steps", "2000", "--max-steps", "1000"], ["--steps 2000",
                                                                 "--max-steps 1000"]),
    (["run", "star", "--steps", "1.5"], ["--steps", "'1.5'", "whole number"]),
    (["run", "star", "--duration", "nan"], ["--duration", "'nan'"]),
    (["run", "star", "--duration", "1e400"], ["--duration", "'1e400'", "finite"]),
    (["run", "star", "--dt", "-1"], ["--dt", "'-1'", "> 0"]),
    (["run", "star", "--out", ""], ["output path ''", "empty"]),
    (["run", "star", "--plot", ""], ["output path ''"]),
    (["run", "star", "--set", "stiffness=abc"], ["stiffness", "'abc'"]),
    (["run", "star", "--set", "mass=-1"], ["mass", "-1"]),
    (["run", "star", "--set", "simulation.drag=inf"], ["drag", "inf"]),
    (["run", "star", "--integrator", "rk4"], ["integrator", "'rk4'", "backward_euler"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--size", "100000x100000"],
     ["--size", "'100000x100000'", "1..8192"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--size", "0x0"], ["--size", "'0x0'"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--size", "big"], ["--size", "'big'"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--camera", "nan,0,5"],
     ["--camera", "'nan,0,5'", "finite"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--camera", "0,0,-5"], ["--camera", "> 0 m"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--camera", "0,0"], ["--camera", "'0,0'"]),
    (["render", "star", "--out", ""], ["output path ''"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--duration", "1e308"],
     ["--duration 1e+308", "--max-steps"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--fps", "1e-300"], ["1e-300 fps", "--max-steps"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--frames", "1e30"], ["--frames", "--max-steps"]),
    (["render", "star", "--out", "{tmp}/v.mp4", "--integrator", "nope"], ["'nope'"]),
    (["compare", "star", "--duration", "1e300"], ["--duration 1e+300", "--max-steps"]),
    (["wave", "chain-wave", "--source", "0", "--probes", "5", "--impulse", "0.01",
      "--duration", "1e300"], ["--duration 1e+300", "--max-steps"]),
])
def test_each_bad_flag_is_one_line_naming_it_exit_2_and_nothing_written(
        tmp_path, capsys, monkeypatch, argv, fragments):
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert_usage_line(captured.err, argv[0], *fragments)
    assert captured.out == "" and list(tmp_path.iterdir()) == []


def test_a_bad_flag_in_a_subprocess_is_one_line_without_usage_or_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "ropesim", "render", "star", "--out", "v.mp4",
                             "--camera", "nan,0,5"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert_usage_line(result.stderr, "render", "--camera")
    assert "usage:" not in result.stderr and list(tmp_path.iterdir()) == []


def test_a_long_run_is_warned_about_in_one_line_and_allowed(capsys):
    from ropesim.app.arguments import check_steps

    assert check_steps(60.4, 1000, "--steps 60", "run", long_run=50) == 60
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ropesim: warning: run: --steps 60"), err
    assert check_steps(40, 1000, "--steps 40", "run", long_run=50) == 40
    assert capsys.readouterr().err == ""
    assert LONG_RUN_STEPS < MAX_STEPS


def test_max_steps_raises_the_bound(tmp_path, capsys):
    assert cli.main(["run", "star", "--steps", "2000", "--max-steps", "2000", "-q"]) == 0


def test_a_folder_named_like_a_shipped_scene_does_not_shadow_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "star").mkdir()
    assert cli.main(["run", "star", "--steps", "10", "--out", "t.npz", "-q"]) == 0
    assert "star: 10 steps" in capsys.readouterr().out
    assert cli.main(["run", "./star", "--steps", "10", "-q"]) == 2  # a path means the folder
    assert "star" in capsys.readouterr().err
