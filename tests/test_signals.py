"""No run lost to a signal: SIGTERM, SIGHUP and SIGINT (once or twice) sent to a real
`ropesim run` / `ropesim render` once work has been done leave whole, readable files
marked incomplete, with the umask's permissions and no temporary behind; and the
pieces that make it so (held signals, atomic writes, stale-temporary cleanup)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ropesim.io import interrupts
from ropesim.io.outputs import (TEMPORARY_MARK, check_output_path, remove_stale_temporaries,
                                temporary_path, write_atomically)
from ropesim.io.trajectory import load_trajectory
from ropesim.io.video import open_video_writer

REPO = Path(__file__).resolve().parent.parent
UMASK = 0o027  # the children's umask: files must come out 0o640, not mkstemp's 0o600
START_TIMEOUT = 60.0  # s to the first progress line (a cold numba cache compiles first)


class Command:
    """``python -m ropesim ARGS`` started in ``cwd`` with umask UMASK; stderr is read
    by a thread so the test can wait for progress lines."""

    def __init__(self, *args: str, cwd: Path):
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("DISPLAY", None)
        env.pop("WAYLAND_DISPLAY", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ropesim", *args], cwd=cwd, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=lambda: os.umask(UMASK))
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def progress_lines(self) -> list[str]:
        return [line for line in self.lines if "ETA" in line]

    def wait_for_progress(self, count: int = 1, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while len(self.progress_lines()) < count:
            if self.process.poll() is not None:
                pytest.fail(f"exited early ({self.process.returncode}): {self.lines}")
            if time.monotonic() > deadline:
                self.process.kill()
                pytest.fail(f"no progress line in {timeout} s: {self.lines}")
            time.sleep(0.02)

    def finish(self, timeout: float = 30.0) -> tuple[int, list[str]]:
        """Exit code and the stderr lines that are not progress lines."""
        code = self.process.wait(timeout)
        self._reader.join(5)
        self.process.stdout.close()
        return code, [line for line in self.lines if "ETA" not in line]


def assert_clean_folder(folder: Path, expected: set[str]) -> None:
    """Only the ``expected`` files, none a temporary, each with the umask's permissions."""
    names = {entry.name for entry in folder.iterdir()}
    assert names == expected, names
    assert not [name for name in names if TEMPORARY_MARK in name]
    for name in expected:
        assert (folder / name).stat().st_mode & 0o777 == 0o666 & ~UMASK, name


def start_run(tmp_path: Path) -> Command:
    # 5e6 steps of the star: far longer than the test waits
    return Command("run", "star", "--duration", "1e4", "--every", "5", "--out", "p.npz",
                   "--csv", "--progress", cwd=tmp_path)


def check_interrupted_run(tmp_path: Path, code: int, errors: list[str], cause: str,
                          signal_number: int) -> None:
    assert code == 128 + signal_number, errors
    assert len(errors) == 1 and f"interrupted ({cause})" in errors[0], errors
    assert "wrote p.npz, p.csv" in errors[0], errors
    traj = load_trajectory(tmp_path / "p.npz")
    assert not traj.completed and traj.interrupted
    assert traj.stop_reason.startswith(f"interrupted ({cause}) after step {traj.steps_done}")
    assert traj.steps_done >= 5 and traj.steps[-1] == traj.steps_done
    assert np.isfinite(traj.positions).all()
    csv_text = (tmp_path / "p.csv").read_text()
    assert "# completed: False" in csv_text and f"# stop_reason: interrupted ({cause})" in csv_text
    rows = [line for line in csv_text.splitlines() if line and not line.startswith("#")]
    assert len(rows) == len(traj) + 1  # the header and one row per sample
    assert_clean_folder(tmp_path, {"p.npz", "p.csv"})


@pytest.mark.parametrize("signal_number, cause", [
    (signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP"), (signal.SIGINT, "Ctrl-C")])
def test_a_stop_signal_to_run_saves_the_partial_trajectory_and_csv_marked_incomplete(
        tmp_path, signal_number, cause):
    command = start_run(tmp_path)
    command.wait_for_progress()
    command.process.send_signal(signal_number)
    code, errors = command.finish()
    check_interrupted_run(tmp_path, code, errors, cause, signal_number)


def test_two_ctrl_c_in_a_row_still_save_the_whole_trajectory(tmp_path):
    command = start_run(tmp_path)
    command.wait_for_progress()
    command.process.send_signal(signal.SIGINT)
    time.sleep(0.01)  # the second one lands while the run stops and writes its files
    command.process.send_signal(signal.SIGINT)
    code, errors = command.finish()
    check_interrupted_run(tmp_path, code, errors, "Ctrl-C", signal.SIGINT)


@pytest.mark.parametrize("signals, cause, exit_code", [
    ((signal.SIGTERM,), "SIGTERM", 143), ((signal.SIGHUP,), "SIGHUP", 129),
    ((signal.SIGINT, signal.SIGINT), "Ctrl-C", 130)])
def test_a_stop_signal_to_render_leaves_a_playable_mp4_of_the_frames_so_far(
        tmp_path, signals, cause, exit_code):
    import imageio.v3 as iio

    command = Command("render", "star", "--out", "v.mp4", "--duration", "600", "--size",
                      "64x48", "--progress", cwd=tmp_path)
    command.wait_for_progress()
    for signal_number in signals:
        command.process.send_signal(signal_number)
        time.sleep(0.01)
    code, errors = command.finish()
    assert code == exit_code, errors
    assert len(errors) == 1 and f"interrupted ({cause})" in errors[0], errors
    written = int(errors[0].split("wrote the ")[1].split(" frames")[0])
    frames = np.stack(list(iio.imiter(tmp_path / "v.mp4", plugin="FFMPEG")))
    assert written >= 1 and frames.shape == (written, 48, 64, 3)
    assert frames.std() > 0  # a picture, not a blank
    assert_clean_folder(tmp_path, {"v.mp4"})


def test_a_temporary_left_by_a_killed_write_is_removed_by_the_next_run(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".p.npz{TEMPORARY_MARK}{dead.pid}-0a1b2c3d.npz"
    stale.write_bytes(b"half a file")
    from ropesim.app import cli

    assert cli.main(["run", "star", "--steps", "10", "--out", str(tmp_path / "p.npz"),
                     "-q"]) == 0
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["p.npz"]


# --- the pieces ----------------------------------------------------------------------------------
def test_signals_held_delivers_a_signal_after_the_block_not_inside_it():
    finished_inside = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.signals_held() as noted:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)  # let the handler run here: it must only note
            finished_inside.append(True)
    assert finished_inside == [True] and noted == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_stop_on_signals_raises_the_first_signal_and_notes_the_later_ones():
    with pytest.raises(interrupts.Interrupted) as caught:
        with interrupts.stop_on_signals() as requests:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    assert caught.value.cause == "SIGTERM" and caught.value.exit_code == 143
    with interrupts.stop_on_signals() as requests:
        try:
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(1)
        except interrupts.Interrupted:
            os.kill(os.getpid(), signal.SIGINT)  # while "writing": noted only
            time.sleep(0.01)
    assert requests.first == signal.SIGHUP and requests.later == [signal.SIGINT]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_write_atomically_follows_the_umask_and_leaves_no_temporary(tmp_path):
    previous = os.umask(0o002)
    try:
        write_atomically(tmp_path / "a.bin", b"x" * 1000)
    finally:
        os.umask(previous)
    assert [entry.name for entry in tmp_path.iterdir()] == ["a.bin"]
    assert (tmp_path / "a.bin").stat().st_mode & 0o777 == 0o664
    assert (tmp_path / "a.bin").read_bytes() == b"x" * 1000


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "a.bin"
    target.write_bytes(b"old")

    def broken_replace(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old" and [e.name for e in tmp_path.iterdir()] == ["a.bin"]


def test_stale_temporaries_of_dead_processes_go_and_live_ones_stay(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".v.mp4{TEMPORARY_MARK}{dead.pid}-00ff.mp4"
    mine = temporary_path(tmp_path / "v.mp4")
    lookalike = tmp_path / ".v.mp4.tmp"  # not ropesim's: never touched
    for path in (stale, mine, lookalike):
        path.write_bytes(b"")
    assert remove_stale_temporaries(tmp_path) == [stale]
    assert sorted(e.name for e in tmp_path.iterdir()) == sorted([mine.name, lookalike.name])
    mine.unlink()
    check_output_path(tmp_path / "v.mp4")  # the check before a run cleans the folder too
    assert [e.name for e in tmp_path.iterdir()] == [lookalike.name]


def test_a_video_writer_writes_a_temporary_and_renames_it_on_close(tmp_path):
    import imageio.v3 as iio

    path = tmp_path / "v.mp4"
    with open_video_writer(path, fps=10) as writer:
        for shade in (0, 120, 240):
            writer.append(np.full((32, 48, 3), shade, np.uint8))
        assert not path.exists()  # only whole files appear under the asked name
    assert [e.name for e in tmp_path.iterdir()] == ["v.mp4"]
    frames = np.stack(list(iio.imiter(path, plugin="FFMPEG")))
    assert frames.shape == (3, 32, 48, 3)
    assert np.allclose(frames.reshape(3, -1).mean(axis=1), (0, 120, 240), atol=8)


def test_a_ctrl_c_inside_a_video_frame_waits_until_the_frame_is_written(tmp_path):
    path = tmp_path / "v.gif"
    writer = open_video_writer(path, fps=25)
    real_write = writer._write

    def write_then_ctrl_c(rgb):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
        real_write(rgb)

    writer._write = write_then_ctrl_c
    with pytest.raises(KeyboardInterrupt):
        writer.append(np.zeros((16, 16, 3), np.uint8))
    assert writer.frames_written == 1  # the frame went in before the interrupt
    writer.close()
    assert [e.name for e in tmp_path.iterdir()] == ["v.gif"]


CTRL_C_IN_THE_WRITE = """
import os, signal, sys, time
from ropesim.engine.simulation import Simulation
from ropesim.app import cli
stop_at_call = int(sys.argv.pop(1))  # 0: the run completes; else Ctrl-C at that step call
real_replace, real_step, calls = os.replace, Simulation.step, []
def replace(source, target):  # the file is written, not yet in place: Ctrl-C now
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)
    real_replace(source, target)
def step(self, n=1):
    calls.append(n)
    if len(calls) == stop_at_call:
        os.kill(os.getpid(), signal.SIGINT)
    real_step(self, n)
os.replace, Simulation.step = replace, step
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("stop_at_call", [7, 0], ids=["second-ctrl-c", "ctrl-c-after-a-full-run"])
def test_a_ctrl_c_in_the_middle_of_the_final_write_does_not_lose_the_files(
        tmp_path, stop_at_call):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", CTRL_C_IN_THE_WRITE, str(stop_at_call), "run", "star",
         "--steps", "100000" if stop_at_call else "100", "--every", "10", "--out", "p.npz",
         "--csv"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 130, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "interrupted" in result.stderr
    traj = load_trajectory(tmp_path / "p.npz")
    assert traj.completed == (stop_at_call == 0)
    assert traj.steps_done == (60 if stop_at_call else 100)
    assert f"# completed: {traj.completed}" in (tmp_path / "p.csv").read_text()
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["p.csv", "p.npz"]


def test_a_stop_signal_during_a_numba_compile_waits_for_the_compiler_lock():
    """An exception raised while numba holds its compiler lock can land in an llvmlite
    ctypes callback and crash the process (seen as exit -11 on a cold kernel cache), so
    the stop request is raised only once the lock is released."""
    import signal as signals

    from numba.core.compiler_lock import global_compiler_lock

    from ropesim.io.interrupts import Interrupted, stop_on_signals

    reached_release = False
    with pytest.raises(Interrupted) as stopped:
        with stop_on_signals() as requests:
            global_compiler_lock.acquire()
            try:
                signals.raise_signal(signals.SIGTERM)
                for _ in range(1000):  # the handler has run by now: it must not have raised
                    pass
                assert requests.first is None
                reached_release = True
            finally:
                global_compiler_lock.release()
            for _ in range(1000):
                pass
    assert reached_release and stopped.value.cause == "SIGTERM"
