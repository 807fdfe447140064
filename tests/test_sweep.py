"""Parameter sweeps (issue 15): ``ropesim sweep`` and ``ropesim.app.sweep.sweep``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ropesim.app import cli
from ropesim.app.sweep import (RESULT_COLUMNS, STRAIN_EVERY, range_values, read_table, run_case,
                               sweep)
from ropesim.engine.simulation import SimulationDiverged
from ropesim.io.scenes import load

REPO = Path(__file__).resolve().parent.parent
SMALL_ROPE = ["rope", "--set", "rope.n=8"]


def small_rope():
    return load("rope").with_overrides({"rope.n": 8})


def run_by_hand(scene, steps):
    """One run the plain way: (final energy J, max |strain| every STRAIN_EVERY steps,
    the step it diverged at or None)."""
    sim = scene.simulation()
    strain = sim.max_strain()
    try:
        for _ in range(steps // STRAIN_EVERY):
            sim.step(STRAIN_EVERY)
            strain = max(strain, sim.max_strain())
    except SimulationDiverged as stop:
        return sim.energy(), max(strain, sim.max_strain()), stop.step
    return sim.energy(), strain, None


def test_ranges_linear_log_and_whole_numbers():
    assert range_values("8:32:4") == [8, 16, 24, 32]
    assert range_values("1:100:3:log") == [1.0, 10.0, 100.0]
    assert range_values("0.5:1:3") == [0.5, 0.75, 1.0]
    assert range_values("250") == [250]


@pytest.mark.filterwarnings("ignore:dt = .* stable step:RuntimeWarning")
def test_sweep_rows_equal_the_same_runs_done_one_by_one():
    scene = small_rope()
    vary = {"stiffness": [500.0, 4000.0], "dt": [1e-3, 8e-3]}  # 4000 N/m at 8 ms diverges
    rows = sweep(scene, vary, steps=200, workers=2)
    assert [(row["stiffness"], row["dt"]) for row in rows] == [
        (500.0, 1e-3), (500.0, 8e-3), (4000.0, 1e-3), (4000.0, 8e-3)]
    for row in rows:
        energy, strain, diverged_at = run_by_hand(
            scene.with_overrides({"stiffness": row["stiffness"], "dt": row["dt"]}), 200)
        assert row["final_energy_J"] == energy and row["max_strain"] == strain
        assert row["diverged"] == (diverged_at is not None)
        assert row["diverged_step"] == ("" if diverged_at is None else diverged_at)
        if diverged_at is not None:
            assert row["diverged_time_s"] == pytest.approx(diverged_at * row["dt"])
        assert row["steps"] == 200 and row["wall_time_s"] > 0
    assert rows[-1]["diverged"] and not rows[0]["diverged"]


def same_table(a: Path, b: Path) -> None:
    rows_a, rows_b = read_table(a), read_table(b)
    assert len(rows_a) == len(rows_b) > 0
    for row_a, row_b in zip(rows_a, rows_b):
        row_a.pop("wall_time_s")
        row_b.pop("wall_time_s")
        assert row_a == row_b


def test_dask_path_gives_the_same_table(tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed")  # in the test extras
    args = [*SMALL_ROPE, "--vary", "damping=0:1:2", "--vary", "mass=0.02:0.08:3:log",
            "--steps", "100", "-q"]
    assert cli.main(["sweep", *args, "--workers", "2", "--out", str(tmp_path / "pool.csv")]) == 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert cli.main(["sweep", *args, "--dask", cluster.scheduler_address,
                         "--out", str(tmp_path / "dask.csv")]) == 0
    same_table(tmp_path / "pool.csv", tmp_path / "dask.csv")
    assert "on the Dask cluster" in capsys.readouterr().out


def start_slow_sweep(out: Path) -> subprocess.Popen:
    """A sweep of 12 runs of ~0.5 s each on one worker, in its own process group."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "ropesim", "sweep", *SMALL_ROPE,
               "--vary", "stiffness=1000:2000:12", "--steps", "100000", "--workers", "1",
               "--out", str(out), "-q"]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def wait_for_rows(out: Path, process: subprocess.Popen, rows: int, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if out.exists() and len(out.read_text().splitlines()) >= rows + 1:
            return len(out.read_text().splitlines()) - 1
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError(f"no {rows} finished rows in {timeout} s")


@pytest.mark.parametrize("stop", ["SIGINT", "SIGKILL"])
def test_a_stopped_sweep_keeps_its_finished_rows(tmp_path, stop):
    out = tmp_path / "table.csv"
    process = start_slow_sweep(out)
    try:
        seen = wait_for_rows(out, process, rows=2)
        if stop == "SIGINT":
            process.send_signal(signal.SIGINT)
        else:
            os.killpg(process.pid, signal.SIGKILL)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    rows = read_table(out)
    assert seen <= len(rows) < 12
    stiffness = [float(row["stiffness"]) for row in rows]
    assert all(row["diverged"] == "False" and np.isfinite(float(row["final_energy_J"]))
               for row in rows)
    if stop == "SIGINT":
        assert process.returncode == 130 and "interrupted" in err
        assert stiffness == sorted(stiffness)  # rewritten in parameter order
        assert not (tmp_path / "table.csv.partial").exists()
    else:
        assert process.returncode == -signal.SIGKILL
    assert set(rows[0]) == {"stiffness", *RESULT_COLUMNS}


@pytest.mark.parametrize("vary, fragment", [
    ("stiffness", "expected NAME=a:b:n"),
    ("stiffness=1:2", "expected a, a:b:n or a:b:n:log"),
    ("stiffness=a:2:3", "the start a must be a number"),
    ("stiffness=1:2:0", "the count n must be an integer >= 1"),
    ("dt=0:1e-3:3:log", "a log range needs a > 0"),
    ("stiffness=1:2:3:cubic", "scale must be log or linear"),
    ("nosuch=1:2:2", "unknown key 'nosuch'"),
    ("dt=-1e-3:1e-3:2", "dt"),
])
def test_bad_vary_specs_give_one_line_and_exit_2(vary, fragment, capsys, tmp_path):
    out = tmp_path / "t.csv"
    assert cli.main(["sweep", *SMALL_ROPE, "--vary", vary, "--steps", "5",
                     "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ropesim: error: ") and fragment in lines[0]
    assert not out.exists()  # nothing ran


def test_heat_map_needs_two_varied_parameters(capsys, tmp_path):
    assert cli.main(["sweep", *SMALL_ROPE, "--vary", "stiffness=100:200:2", "--steps", "5",
                     "--plot", str(tmp_path / "heat.png")]) == 2
    assert "two varied parameters" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:dt = .* stable step:RuntimeWarning")
def test_heat_map_is_written(tmp_path):
    from PIL import Image

    heat, table = tmp_path / "heat.png", tmp_path / "table.csv"
    assert cli.main(["sweep", *SMALL_ROPE, "--vary", "stiffness=500:4000:3",
                     "--vary", "dt=1e-3:8e-3:3:log", "--steps", "100", "--workers", "2",
                     "--out", str(table), "--plot", str(heat), "-q"]) == 0
    image = np.asarray(Image.open(heat).convert("RGB")).astype(int)
    assert image.shape[0] > 200 and image.shape[1] > 200
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 20  # cells in several colours
    crimson = (image[..., 0] > 180) & (image[..., 1] < 80) & (image[..., 2] < 100)
    diverged = sum(row["diverged"] == "True" for row in read_table(table))
    assert diverged > 0 and crimson.sum() > 20 * diverged  # each diverged cell has its x


def test_python_sweep_writes_the_table_it_returns(tmp_path):
    out = tmp_path / "t.csv"
    rows = sweep("rope", {"rope.n": "4:8:2", "drag": [0.0, 0.5]}, steps=20, workers=1, out=out)
    assert [(row["rope.n"], row["drag"]) for row in rows] == [(4, 0.0), (4, 0.5), (8, 0.0),
                                                             (8, 0.5)]
    table = read_table(out)
    assert [float(r["final_energy_J"]) for r in table] == [r["final_energy_J"] for r in rows]
    assert rows[0] == {**run_case(load("rope").with_overrides({"rope.n": 4, "drag": 0.0}),
                                  {"rope.n": 4, "drag": 0.0}, steps=20),
                       "wall_time_s": rows[0]["wall_time_s"]}
