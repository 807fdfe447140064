"""Images and video out: PNG stills, H.264 video, GIF and folders of numbered PNGs.

Shared by ``ropesim render``, :func:`ropesim.render.headless.render` and the viewer's
recording: :func:`open_video_writer` handles ``.mp4`` (H.264 via imageio-ffmpeg),
``.gif`` and a folder of numbered PNGs; :func:`check_video_path` checks an output and
its size before any work; :func:`steps_per_frame` gives the number of simulation
steps per video frame that plays back at true speed.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from .interrupts import signals_held
from .outputs import (OutputError, check_output_path, finish_temporary, temporary_path,
                      write_atomically)

VIDEO_SUFFIXES = (".mp4", ".m4v", ".mov", ".mkv")
GIF_SUFFIX = ".gif"
STILL_SUFFIX = ".png"

DEFAULT_FPS = 30.0
#: GIF frame delays are whole centiseconds: 25 fps (4 cs) plays at true speed
DEFAULT_GIF_FPS = 25.0
DEFAULT_SIZE = (1024, 576)  # px; 16:9 with both sides multiples of 16 (H.264)


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


def check_video_size(width: int, height: int) -> None:
    """Raise ValueError unless width and height (px) are multiples of 16, as the H.264
    encoder (libx264, yuv420p, 16-px macro blocks) needs."""
    bad = [f"{name}={v}" for name, v in (("width", width), ("height", height)) if v % 16]
    if bad or width < 16 or height < 16:
        fix = f"{max(16, round(width / 16) * 16)}x{max(16, round(height / 16) * 16)}"
        raise ValueError(
            f"video size {width}x{height}: width and height must be positive multiples of 16 "
            f"({', '.join(bad) or 'too small'}); try {fix}"
        )


def check_video_path(path: str | Path, size: tuple[int, int]) -> str:
    """Check a render output (video, GIF, still or folder) and its size; returns its kind."""
    kind = output_kind(path)
    check_output_path(path, folder=kind == "frames")
    if kind == "mp4":
        try:
            check_video_size(*size)
        except ValueError as exc:
            raise OutputError(f"{path}: {exc}") from None
    return kind


def steps_per_frame(dt: float, fps: float) -> int:
    """Simulation steps between video frames for true-speed playback: round(1 / (fps dt)), >= 1.

    dt in s, fps in frames per s. The video then runs at steps * dt * fps times real
    speed (e.g. 33 steps of 1 ms at 30 fps: 0.99).
    """
    if not (dt > 0 and fps > 0 and math.isfinite(dt) and math.isfinite(fps)):
        raise ValueError(f"dt and fps must be finite numbers > 0, got dt={dt}, fps={fps}")
    frame_time = fps * dt
    if not (frame_time > 0 and math.isfinite(1.0 / frame_time)):
        raise ValueError(f"fps * dt = {frame_time:g} is too small: a frame would take "
                         f"unboundedly many steps (dt={dt}, fps={fps})")
    return max(1, round(1.0 / frame_time))


def _as_rgb(rgb: np.ndarray) -> np.ndarray:
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"frame: expected an (h, w, 3) uint8 array, got {rgb.shape} {rgb.dtype}")
    return rgb


def save_png(path: str | Path, rgb: np.ndarray) -> Path:
    """Write an (h, w, 3) uint8 image as PNG (whole or not at all)."""
    import imageio.v3 as iio

    path = Path(path)
    write_atomically(path, iio.imwrite("<bytes>", _as_rgb(rgb), extension=".png"))
    return path


class VideoWriter:
    """Frames in, a file (or folder) out: ``append(rgb)`` each (h, w, 3) uint8 frame,
    then ``close()``. Usable as a context manager. All frames must have one size.

    A file writer writes ``temporary`` (a hidden name next to ``path``) and
    ``close()`` renames it to ``path``; stop signals wait until a frame or the close
    is done."""

    def __init__(self, path: str | Path, fps: float):
        if not (fps > 0 and math.isfinite(fps)):
            raise ValueError(f"fps: must be a finite number > 0, got {fps}")
        self.path = Path(path)
        self.temporary = temporary_path(self.path)
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
        with signals_held():
            self._write(rgb)
            self.frames_written += 1

    def _start(self, size: tuple[int, int]) -> None:
        pass

    def _write(self, rgb: np.ndarray) -> None:
        raise NotImplementedError

    def _finish(self) -> bool:
        """Flush and close the temporary file; True if there is one to move into place."""
        return False

    def close(self) -> None:
        """Finish the file (ffmpeg is waited for) and move it to ``path``; a writer
        that got no frame writes nothing. Closing twice is harmless."""
        with signals_held():
            try:
                if self._finish():
                    finish_temporary(self.temporary, self.path)
            finally:
                self.temporary.unlink(missing_ok=True)

    def __enter__(self) -> "VideoWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _FfmpegWriter(VideoWriter):
    """H.264 (libx264, yuv420p) through imageio-ffmpeg; sides must be multiples of 16."""

    _writer: Any = None

    def _start(self, size: tuple[int, int]) -> None:
        import imageio.v2 as iio2

        check_video_size(*size)
        self._writer = iio2.get_writer(
            self.temporary, format="FFMPEG", mode="I", fps=self.fps, codec="libx264",
            pixelformat="yuv420p", quality=7, macro_block_size=16, ffmpeg_log_level="error")

    def _write(self, rgb: np.ndarray) -> None:
        self._writer.append_data(rgb)

    def _finish(self) -> bool:
        if self._writer is None:
            return False
        writer, self._writer = self._writer, None
        writer.close()  # closes ffmpeg's stdin and waits for it to write the index
        return True


class _GifWriter(VideoWriter):
    """Animated GIF through pillow; delays are whole centiseconds (25 fps is exact)."""

    _file: Any = None

    def _start(self, size: tuple[int, int]) -> None:
        import imageio.v3 as iio

        self._file = iio.imopen(self.temporary, "w", plugin="pillow", extension=".gif")

    def _write(self, rgb: np.ndarray) -> None:
        self._file.write(rgb, duration=1000.0 / self.fps, loop=0)

    def _finish(self) -> bool:
        if self._file is None:
            return False
        file, self._file = self._file, None
        file.close()
        return True


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


__all__ = [
    "DEFAULT_FPS", "DEFAULT_GIF_FPS", "DEFAULT_SIZE", "VideoWriter", "check_video_path",
    "check_video_size", "open_video_writer", "output_kind", "save_png", "steps_per_frame",
]
