"""Trajectories (record, save, load, plot) and offscreen video / PNG output.

Recording::

    traj = record(sim, steps=2000, every=10)   # initial state + every 10th step
    traj.times, traj.positions, traj.energy     # (k,) s, (k, n, 3) m, (k,) J
    traj.save("traj.npz"); traj.save("energy.csv")
    traj = load_trajectory("traj.npz")

A run that stops early still gives what was computed: on divergence ``record``
returns the partial trajectory (``completed`` False, ``stop_reason`` says where and
why); on Ctrl-C it raises :class:`RecordingInterrupted` (a KeyboardInterrupt, so
scripts still stop) carrying the partial trajectory in ``.trajectory``.

Video output is shared by ``ropesim render``, :func:`render` and the viewer's
recording: :func:`open_video_writer` handles ``.mp4`` (H.264 via imageio-ffmpeg),
``.gif`` and a folder of numbered PNGs; :func:`steps_per_frame` gives the number
of simulation steps per video frame that plays back at true speed.
"""

from __future__ import annotations

import csv
import io
import math
import os
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..engine.simulation import Simulation, SimulationDiverged

#: progress callback: (done, total) in steps (record) or frames (render)
Progress = Callable[[int, int], None]

FORMAT_VERSION = 1
TRAJECTORY_SUFFIXES = (".npz", ".csv")
PLOT_SUFFIXES = (".png", ".svg", ".pdf")
VIDEO_SUFFIXES = (".mp4", ".m4v", ".mov", ".mkv")
GIF_SUFFIX = ".gif"
STILL_SUFFIX = ".png"
#: columns of the energy table (CSV), in order
ENERGY_COLUMNS = ("step", "time", "kinetic", "spring", "gravity", "total",
                  "momentum_x", "momentum_y", "momentum_z", "max_strain")

DEFAULT_FPS = 30.0
#: GIF frame delays are whole centiseconds: 25 fps (4 cs) plays at true speed
DEFAULT_GIF_FPS = 25.0
DEFAULT_SIZE = (1024, 576)  # px; 16:9 with both sides multiples of 16 (H.264)
DEFAULT_RENDER_DURATION = 4.0  # s of simulated time


class OutputError(ValueError):
    """An output path cannot be written (bad suffix, missing or read-only folder)."""


# --- trajectories ------------------------------------------------------------------------
@dataclass(eq=False)
class Trajectory:
    """Samples of a run: the initial state and every ``every``-th step after it.

    Arrays (k samples, n particles, m springs): ``steps`` (k,) step index,
    ``times`` (k,) s, ``positions`` (k, n, 3) float32 m, ``kinetic``, ``spring``,
    ``gravity``, ``total`` (k,) J (gravity potential is zero at the origin),
    ``momentum`` (k, 3) kg*m/s, ``max_strain`` (k,) largest |(l - L) / L|,
    ``springs`` (m, 2) particle index pairs.

    Metadata: ``scene`` name, ``integrator``, ``dt`` (s), ``every``, ``steps_done``
    and ``steps_requested``, ``completed`` (False after divergence or Ctrl-C) and
    ``stop_reason``: a sentence starting with "completed", "diverged" or
    "interrupted" that says at which step and time the run stopped and why.
    ``scene_toml`` holds the scene file (overrides applied) when the CLI wrote it.
    """

    steps: np.ndarray
    times: np.ndarray
    positions: np.ndarray
    kinetic: np.ndarray
    spring: np.ndarray
    gravity: np.ndarray
    total: np.ndarray
    momentum: np.ndarray
    max_strain: np.ndarray
    springs: np.ndarray
    scene: str = ""
    integrator: str = ""
    dt: float = 0.0
    every: int = 1
    steps_done: int = 0
    steps_requested: int = 0
    completed: bool = True
    stop_reason: str = "completed"
    scene_toml: str = ""
    format_version: int = field(default=FORMAT_VERSION)

    @property
    def energy(self) -> np.ndarray:
        """Total mechanical energy (k,), J: kinetic + spring + gravity."""
        return self.total

    def energy_table(self) -> dict[str, np.ndarray]:
        """The per-sample columns of :data:`ENERGY_COLUMNS` as (k,) arrays."""
        table = {"step": self.steps, "time": self.times, "kinetic": self.kinetic,
                 "spring": self.spring, "gravity": self.gravity, "total": self.total}
        for axis, name in enumerate(("momentum_x", "momentum_y", "momentum_z")):
            table[name] = self.momentum[:, axis]
        table["max_strain"] = self.max_strain
        return table

    @property
    def diverged(self) -> bool:
        return self.stop_reason.startswith("diverged")

    @property
    def interrupted(self) -> bool:
        return self.stop_reason.startswith("interrupted")

    @property
    def n_particles(self) -> int:
        return self.positions.shape[1]

    def __len__(self) -> int:
        return self.times.shape[0]

    def save(self, path: str | Path) -> Path:
        """Write ``.npz`` (everything) or ``.csv`` (the energy table, metadata in
        ``#`` comment lines). The file is written whole, then moved into place."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in TRAJECTORY_SUFFIXES:
            allowed = " or ".join(TRAJECTORY_SUFFIXES)
            raise OutputError(f"{path}: a trajectory is saved as {allowed}")
        buffer = io.BytesIO()
        if suffix == ".npz":
            np.savez_compressed(buffer, **self._arrays())
        else:
            buffer.write(self._csv_text().encode("utf-8"))
        _write_atomically(path, buffer.getvalue())
        return path

    def _metadata(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _ARRAY_FIELDS}

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {name: getattr(self, name) for name in _ARRAY_FIELDS}
        arrays.update({name: np.array(value) for name, value in self._metadata().items()})
        return arrays

    def _csv_text(self) -> str:
        out = io.StringIO()
        for name, value in self._metadata().items():
            if name != "scene_toml":
                out.write(f"# {name}: {value}\n")
        writer = csv.writer(out, lineterminator="\n")
        table = self.energy_table()
        writer.writerow(table)
        for row in zip(*table.values()):
            writer.writerow([repr(v.item()) if isinstance(v, np.floating) else v.item()
                             for v in row])
        return out.getvalue()

    def __repr__(self) -> str:
        return (f"Trajectory({self.scene!r}, {len(self)} samples, n={self.n_particles}, "
                f"integrator={self.integrator}, dt={self.dt:g}, {self.stop_reason!r})")


_ARRAY_FIELDS = ("steps", "times", "positions", "kinetic", "spring", "gravity", "total",
                 "momentum", "max_strain", "springs")


def load_trajectory(path: str | Path) -> Trajectory:
    """Read a trajectory written by :meth:`Trajectory.save` as ``.npz``."""
    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise ValueError(f"{path}: load_trajectory reads .npz files (a .csv holds only energies)")
    with np.load(path, allow_pickle=False) as data:
        missing = [name for name in _ARRAY_FIELDS if name not in data.files]
        if missing:
            raise ValueError(f"{path}: not a ropesim trajectory (missing {', '.join(missing)})")
        values: dict[str, Any] = {name: data[name] for name in _ARRAY_FIELDS}
        for f in fields(Trajectory):
            if f.name not in _ARRAY_FIELDS and f.name in data.files:
                values[f.name] = data[f.name].item()
    return Trajectory(**values)


def _write_atomically(path: Path, payload: bytes) -> None:
    """Write to a temporary file next to ``path`` and rename it over ``path``."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# --- recording ---------------------------------------------------------------------------
class RecordingInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`record`; ``.trajectory`` holds what was recorded."""

    def __init__(self, trajectory: Trajectory):
        super().__init__(trajectory.stop_reason)
        self.trajectory = trajectory


def _check_count(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise ValueError(f"{name}: must be an integer >= {minimum}, got {value!r}")
    return int(value)


def record(sim: Simulation, steps: int, every: int = 1,
           progress: Progress | None = None) -> Trajectory:
    """Step ``sim`` ``steps`` times, sampling the initial state, every ``every``-th
    step and the last step.

    Divergence ends the run early: the last finite state is sampled and the partial
    trajectory returned with ``completed=False``. Ctrl-C raises
    :class:`RecordingInterrupted` with the samples taken so far (the state being
    stepped at that moment may be half-updated, so it is not sampled).
    ``progress(done, steps)`` is called after each chunk of ``every`` steps.
    """
    steps = _check_count("steps", steps, 0)
    every = _check_count("every", every, 1)
    first_step = sim.step_count
    samples: list[tuple] = []

    def take_sample() -> None:
        if samples and samples[-1][0] == sim.step_count:
            return
        d = sim.diagnostics()
        # one append of a finished tuple: an interrupt never leaves half a sample
        samples.append((sim.step_count, sim.time, sim.positions.astype(np.float32),
                        d["kinetic"], d["spring"], d["gravity"], d["total"],
                        np.asarray(d["momentum"], dtype=np.float64), d["max_strain"]))

    def result(completed: bool, reason: str) -> Trajectory:
        return _trajectory(sim, samples, every, steps, first_step, completed, reason)

    take_sample()
    done = 0
    try:
        while done < steps:
            chunk = min(every, steps - done)
            sim.step(chunk)
            done += chunk
            take_sample()
            if progress is not None:
                progress(done, steps)
    except SimulationDiverged as exc:
        take_sample()  # the simulation kept its last finite state
        reason = (f"diverged at step {exc.step} (t = {exc.time:.4f} s) with {exc.integrator}, "
                  f"dt = {exc.dt:g} s: {exc.reason}")
        return result(False, reason)
    except KeyboardInterrupt:
        last_step, last_time = samples[-1][0], samples[-1][1]
        reason = (f"interrupted (Ctrl-C) after step {last_step} (t = {last_time:.4f} s) "
                  f"of {first_step + steps}")
        raise RecordingInterrupted(result(False, reason)) from None
    return result(True, f"completed {steps} steps (t = {sim.time:.4f} s)")


def _trajectory(sim: Simulation, samples: list[tuple], every: int, steps_requested: int,
                first_step: int, completed: bool, reason: str) -> Trajectory:
    columns = list(zip(*samples))
    as_array = np.asarray
    return Trajectory(
        steps=as_array(columns[0], dtype=np.int64),
        times=as_array(columns[1], dtype=np.float64),
        positions=np.stack(columns[2]).astype(np.float32, copy=False),
        kinetic=as_array(columns[3], dtype=np.float64),
        spring=as_array(columns[4], dtype=np.float64),
        gravity=as_array(columns[5], dtype=np.float64),
        total=as_array(columns[6], dtype=np.float64),
        momentum=np.stack(columns[7]),
        max_strain=as_array(columns[8], dtype=np.float64),
        springs=np.asarray(sim.system.springs, dtype=np.int64).reshape(-1, 2),
        scene=sim.system.name or "",
        integrator=sim.integrator,
        dt=float(sim.dt),
        every=every,
        steps_done=int(samples[-1][0] - first_step),
        steps_requested=steps_requested,
        completed=completed,
        stop_reason=reason,
    )


# --- plots ----------------------------------------------------------------------------------
def new_figure(width_in: float, height_in: float) -> Any:
    """A matplotlib Figure on the Agg canvas (no pyplot, no display, no global backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def plot_energy(trajectory: Trajectory, path: str | Path, track: int | None = None) -> Path:
    """Energy over time (kinetic, spring, gravity and total, J) and, with ``track``,
    the x, y, z coordinates (m) of that particle over time, saved to ``path``.

    Gravity potential has no natural zero, so it is drawn relative to its value
    at the first sample; the total is then kinetic + spring + that difference.
    """
    t = trajectory.times
    panels = 1 if track is None else 2
    figure = new_figure(8.0, 3.6 * panels)
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    gravity = trajectory.gravity - trajectory.gravity[0]
    ax = axes[0]
    ax.plot(t, trajectory.kinetic, label="kinetic")
    ax.plot(t, trajectory.spring, label="spring")
    ax.plot(t, gravity, label="gravity (from its t=0 value)")
    ax.plot(t, trajectory.kinetic + trajectory.spring + gravity, "k", lw=1.6, label="total")
    ax.set_ylabel("energy (J)")
    ax.set_title(f"{trajectory.scene}: {trajectory.integrator}, dt = {trajectory.dt:g} s")
    ax.legend(loc="best", fontsize="small")
    if track is not None:
        if not 0 <= track < trajectory.n_particles:
            raise ValueError(f"track: particle index must be in 0..{trajectory.n_particles - 1}, "
                             f"got {track}")
        coords = trajectory.positions[:, track, :]
        for axis, name in enumerate("xyz"):
            axes[1].plot(t, coords[:, axis], label=name)
        axes[1].set_ylabel(f"particle {track} position (m)")
        axes[1].legend(loc="best", fontsize="small")
    if not trajectory.completed:
        for ax in axes:
            ax.axvline(t[-1], color="tab:red", ls="--", lw=1)
        axes[0].annotate(trajectory.stop_reason.split(" ", 1)[0], (t[-1], 0.96),
                         xycoords=("data", "axes fraction"), ha="right", va="top",
                         color="tab:red")
    axes[-1].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
    return save_figure(figure, path)


def save_figure(figure: Any, path: str | Path) -> Path:
    path = Path(path)
    figure.savefig(path)
    return path


# --- output paths ---------------------------------------------------------------------------
def output_kind(path: str | Path) -> str:
    """"mp4" (any ffmpeg video suffix), "gif", "png" (one still) or "frames" (a folder:
    a path ending in a separator, an existing folder, or a name without a suffix)."""
    text = str(path)
    suffix = Path(text).suffix.lower()
    if text.endswith(("/", os.sep)) or Path(text).is_dir() or not suffix:
        return "frames"
    if suffix in VIDEO_SUFFIXES:
        return "mp4"
    if suffix == GIF_SUFFIX:
        return "gif"
    if suffix == STILL_SUFFIX:
        return "png"
    allowed = ", ".join([*VIDEO_SUFFIXES, GIF_SUFFIX, STILL_SUFFIX, "a folder/"])
    raise OutputError(f"{path}: unknown output type {suffix!r}; allowed: {allowed}")


def check_output_path(path: str | Path, suffixes: Sequence[str] | None = None,
                      folder: bool = False) -> Path:
    """Check, before any work, that ``path`` can be written: its suffix is one of
    ``suffixes``, its folder exists and accepts a new file. With ``folder`` the path
    is a folder to create or fill. Raises :class:`OutputError` naming the path."""
    path = Path(path)
    if folder:
        if path.exists() and not path.is_dir():
            raise OutputError(f"{path}: exists and is not a folder")
        target_dir = path if path.is_dir() else path.parent
    else:
        if path.is_dir():
            raise OutputError(f"{path}: is a folder, expected a file name")
        if suffixes is not None and path.suffix.lower() not in suffixes:
            raise OutputError(f"{path}: expected a file name ending in {' or '.join(suffixes)}")
        if path.exists() and not os.access(path, os.W_OK):
            raise OutputError(f"{path}: file is not writable")
        target_dir = path.parent
    target_dir = target_dir if str(target_dir) else Path(".")
    if not target_dir.is_dir():
        raise OutputError(f"{path}: folder {target_dir} does not exist")
    try:
        with tempfile.TemporaryFile(dir=target_dir):
            pass
    except OSError as exc:
        raise OutputError(f"{path}: cannot write in folder {target_dir} ({exc.strerror})") from None
    return path


def check_video_path(path: str | Path, size: tuple[int, int]) -> str:
    """Check a render output (video, GIF, still or folder) and its size; returns its kind."""
    kind = output_kind(path)
    check_output_path(path, folder=kind == "frames")
    if kind == "mp4":
        from ..render.renderer import check_video_size

        try:
            check_video_size(*size)
        except ValueError as exc:
            raise OutputError(f"{path}: {exc}") from None
    return kind


# --- images and video -------------------------------------------------------------------------
def steps_per_frame(dt: float, fps: float) -> int:
    """Simulation steps between video frames for true-speed playback: round(1 / (fps dt)), >= 1.

    dt in s, fps in frames per s. The video then runs at steps * dt * fps times real
    speed (e.g. 33 steps of 1 ms at 30 fps: 0.99).
    """
    if not (dt > 0 and fps > 0 and math.isfinite(dt) and math.isfinite(fps)):
        raise ValueError(f"dt and fps must be finite numbers > 0, got dt={dt}, fps={fps}")
    return max(1, round(1.0 / (fps * dt)))


def _as_rgb(rgb: np.ndarray) -> np.ndarray:
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"frame: expected an (h, w, 3) uint8 array, got {rgb.shape} {rgb.dtype}")
    return rgb


def save_png(path: str | Path, rgb: np.ndarray) -> Path:
    """Write an (h, w, 3) uint8 image as PNG."""
    import imageio.v3 as iio

    path = Path(path)
    iio.imwrite(path, _as_rgb(rgb), extension=".png")
    return path


class VideoWriter:
    """Frames in, a file (or folder) out: ``append(rgb)`` each (h, w, 3) uint8 frame,
    then ``close()``. Usable as a context manager. All frames must have one size."""

    def __init__(self, path: str | Path, fps: float):
        if not (fps > 0 and math.isfinite(fps)):
            raise ValueError(f"fps: must be a finite number > 0, got {fps}")
        self.path = Path(path)
        self.fps = float(fps)
        self.frames_written = 0
        self.size: tuple[int, int] | None = None  # (width, height) px

    def append(self, rgb: np.ndarray) -> None:
        rgb = _as_rgb(rgb)
        size = (rgb.shape[1], rgb.shape[0])
        if self.size is None:
            self._start(size)
            self.size = size
        elif size != self.size:
            raise ValueError(f"frame size {size[0]}x{size[1]} differs from the first frame's "
                             f"{self.size[0]}x{self.size[1]}")
        self._write(rgb)
        self.frames_written += 1

    def _start(self, size: tuple[int, int]) -> None:
        pass

    def _write(self, rgb: np.ndarray) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> "VideoWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _FfmpegWriter(VideoWriter):
    """H.264 (libx264, yuv420p) through imageio-ffmpeg; sides must be multiples of 16."""

    _writer: Any = None

    def _start(self, size: tuple[int, int]) -> None:
        from ..render.renderer import check_video_size
        import imageio.v2 as iio2

        check_video_size(*size)
        self._writer = iio2.get_writer(
            self.path, format="FFMPEG", mode="I", fps=self.fps, codec="libx264",
            pixelformat="yuv420p", quality=7, macro_block_size=16, ffmpeg_log_level="error")

    def _write(self, rgb: np.ndarray) -> None:
        self._writer.append_data(rgb)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class _GifWriter(VideoWriter):
    """Animated GIF through pillow; delays are whole centiseconds (25 fps is exact)."""

    _file: Any = None

    def _start(self, size: tuple[int, int]) -> None:
        import imageio.v3 as iio

        self._file = iio.imopen(self.path, "w", plugin="pillow", extension=".gif")

    def _write(self, rgb: np.ndarray) -> None:
        self._file.write(rgb, duration=1000.0 / self.fps, loop=0)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _FolderWriter(VideoWriter):
    """Numbered PNGs ``frame_00000.png``, ... in a folder (created if missing)."""

    def _start(self, size: tuple[int, int]) -> None:
        self.path.mkdir(parents=False, exist_ok=True)

    def _write(self, rgb: np.ndarray) -> None:
        save_png(self.path / f"frame_{self.frames_written:05d}.png", rgb)


def open_video_writer(path: str | Path, fps: float) -> VideoWriter:
    """A writer for ``.mp4`` (also .m4v, .mov, .mkv), ``.gif`` or a folder of PNGs.

    The file is created on the first frame; for H.264 its width and height must be
    multiples of 16 (a ValueError says so and suggests a size).
    """
    kind = output_kind(path)
    writers = {"mp4": _FfmpegWriter, "gif": _GifWriter, "frames": _FolderWriter}
    if kind not in writers:
        raise OutputError(f"{path}: a still image, not a video; use save_png")
    return writers[kind](path, fps)


# --- rendering --------------------------------------------------------------------------------
def _simulation_and_hints(scene_or_sim: Any) -> tuple[Simulation, dict]:
    """A Simulation and the scene's camera hints from a Scene, scene name/path or Simulation."""
    from .scenes import Scene, load

    if isinstance(scene_or_sim, Simulation):
        return scene_or_sim, {}
    scene = scene_or_sim if isinstance(scene_or_sim, Scene) else load(scene_or_sim)
    return scene.simulation(), dict(scene.camera)


def make_camera(sim: Simulation, aspect: float, hints: Mapping[str, Any] | None = None,
                camera: Any = None) -> Any:
    """An OrbitCamera framing the current state for ``aspect`` (width / height), then
    updated with the scene's camera hints, then with ``camera``: a dict (as from
    :func:`~ropesim.render.camera.parse_camera_arg`), an "azimuth,elevation,distance" string,
    or an OrbitCamera used as it is."""
    from ..render.camera import OrbitCamera, parse_camera_arg

    if isinstance(camera, OrbitCamera):
        return camera
    view = OrbitCamera()
    view.frame(sim.positions, planar=sim.planar, aspect=aspect)
    view.update(hints or {})
    if isinstance(camera, str):
        camera = parse_camera_arg(camera)
    view.update(camera or {})
    return view


def frame_count(frames: int | None, duration: float | None, fps: float) -> int:
    """Frames to render from ``frames`` or ``duration`` (s); the default is 4 s."""
    if frames is not None and duration is not None:
        raise ValueError("give frames or duration, not both")
    if frames is not None:
        return _check_count("frames", frames, 1)
    duration = DEFAULT_RENDER_DURATION if duration is None else float(duration)
    if not (duration >= 0 and math.isfinite(duration)):
        raise ValueError(f"duration: must be a finite number >= 0 s, got {duration}")
    return max(1, round(duration * fps))


def render(scene_or_sim: Any, out: str | Path | None = None, frames: int | None = None,
           duration: float | None = None, fps: float | None = None,
           size: tuple[int, int] = DEFAULT_SIZE, camera: Any = None,
           wireframe: str = "surface+springs", strain_colors: bool = False,
           progress: Progress | None = None, samples: int = 4) -> list[np.ndarray] | Path:
    """Render a scene (a Scene, a scene name or .toml path) or a Simulation offscreen.

    Frame i shows the state after i * steps_per_frame(dt, fps) steps, so the video
    plays at true speed; ``frames`` or ``duration`` (s, default 4) sets the count.
    ``size`` is (width, height) px; ``camera`` as in :func:`make_camera`;
    ``wireframe`` one of render.WIREFRAME_MODES. Needs no display (EGL).

    With ``out`` None returns the frames as (h, w, 3) uint8 arrays. Otherwise writes
    ``out`` (.mp4, .gif, a folder of PNGs, or .png: one still of the last frame)
    and returns its path. On divergence or Ctrl-C the frames rendered so far are
    written (the file is closed properly) and the exception propagates.
    """
    from ..render import renderer as gl

    if fps is None:
        fps = DEFAULT_GIF_FPS if out is not None and output_kind(out) == "gif" else DEFAULT_FPS
    if not (fps > 0 and math.isfinite(fps)):
        raise ValueError(f"fps: must be a finite number > 0, got {fps}")
    n_frames = frame_count(frames, duration, fps)
    width, height = (_check_count("width", size[0], 1), _check_count("height", size[1], 1))
    options = gl.RenderOptions(mode=wireframe, strain_colors=strain_colors)
    kind = None if out is None else check_video_path(out, (width, height))
    sim, hints = _simulation_and_hints(scene_or_sim)
    view = make_camera(sim, width / height, hints, camera)
    spf = steps_per_frame(sim.dt, fps)

    frames_out: list[np.ndarray] = []
    writer = open_video_writer(out, fps) if kind in ("mp4", "gif", "frames") else None
    ctx = gl.create_headless_context()
    renderer = None
    try:
        renderer = gl.Renderer(ctx, sim)
        for i in range(n_frames):
            if i:
                sim.step(spf)
            if kind == "png" and i < n_frames - 1:
                pass  # a still shows only the last frame
            else:
                rgb = gl.render_frame(ctx, renderer, view, width, height, options, samples)
                if writer is not None:
                    writer.append(rgb)
                elif kind == "png":
                    save_png(out, rgb)
                else:
                    frames_out.append(rgb)
            if progress is not None:
                progress(i + 1, n_frames)
    finally:
        if writer is not None:
            writer.close()
        if renderer is not None:
            renderer.release()
        ctx.release()
    return frames_out if out is None else Path(out)


__all__ = [
    "Trajectory", "record", "load_trajectory", "RecordingInterrupted", "render",
    "steps_per_frame", "save_png", "open_video_writer", "VideoWriter", "plot_energy",
    "OutputError", "check_output_path", "output_kind",
]
