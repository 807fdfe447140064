"""The viewer's recording helper: screenshots (PNG) and videos (H.264) of the view.

Frames come from a frame source: a callable returning the current view as an
(h, w, 3) uint8 RGB array rendered offscreen at a fixed size (RECORD_SIZE), so a
recording does not depend on the window's size. :class:`Capture` keeps the recording
state on its :class:`CaptureHost` (the controller: ``recorder``, ``recorded_frames``,
``message``), where the panel and the title read it; failures (unwritable folder,
encoder gone) become the status line, never an exception.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from ..io.scenes import Scene
from ..io.video import VideoWriter, open_video_writer, save_png

RECORD_SIZE = (1280, 720)    # px; offscreen screenshot / video size (multiples of 16)
RECORD_FPS = 30              # frames per second of recorded videos
#: what writing a frame or a file may raise (BrokenPipeError, the encoder gone, is an OSError)
_OUTPUT_ERRORS = (OSError, ValueError, RuntimeError)


class CaptureHost(Protocol):
    """The recording state Capture keeps: the open video writer (None when not
    recording), the frames in the current or last video, the status line."""

    scene: Scene
    recorder: VideoWriter | None
    recorded_frames: int
    message: str


class Capture:
    """Screenshots and one video recording at a time, written to ``output_dir``.

    ``frame_source`` returns the view as (h, w, 3) uint8 RGB (None: no renderer
    attached, and screenshots and videos only say so); ``path`` is the video being
    (or last) recorded.
    """

    def __init__(self, host: CaptureHost, output_dir: str | Path = ".",
                 frame_source: Callable[[], np.ndarray] | None = None) -> None:
        self.host = host
        self.output_dir = Path(output_dir)
        self.frame_source = frame_source
        self.path: Path | None = None

    def output_path(self, suffix: str) -> Path:
        """``ropesim-SCENE-<date>-<time>SUFFIX`` in output_dir, numbered if it exists."""
        stem = self.host.scene.name
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = self.output_dir / f"ropesim-{stem}-{stamp}{suffix}"
        counter = 1
        while path.exists():
            path = self.output_dir / f"ropesim-{stem}-{stamp}-{counter}{suffix}"
            counter += 1
        return path

    def screenshot(self) -> Path | None:
        """Save the current view as a PNG; returns its path (None if it failed)."""
        host = self.host
        if self.frame_source is None:
            host.message = "screenshot: no renderer attached"
            return None
        path = self.output_path(".png")
        try:
            save_png(path, self.frame_source())
        except _OUTPUT_ERRORS as exc:
            host.message = f"screenshot failed: {exc}"
            return None
        host.message = f"screenshot saved: {path}"
        return path

    def start(self) -> None:
        """Open an mp4 for fixed-dt frames; frames are added by :meth:`add_frame`."""
        host = self.host
        if self.frame_source is None:
            host.message = "video: no renderer attached"
            return
        path = self.output_path(".mp4")
        try:
            host.recorder = open_video_writer(path, RECORD_FPS)
        except _OUTPUT_ERRORS as exc:
            host.message = f"video failed: {exc}"
            return
        self.path = path
        host.recorded_frames = 0
        host.message = f"recording: {path}"

    def stop(self) -> None:
        """Close the video (nothing to do when not recording)."""
        host = self.host
        if host.recorder is None:
            return
        recorder, host.recorder = host.recorder, None
        recorder.close()
        host.message = f"video saved: {self.path} ({host.recorded_frames} frames)"

    def add_frame(self) -> None:
        """Append the current view to the video; a failure stops the recording."""
        host = self.host
        try:
            host.recorder.append(self.frame_source())
            host.recorded_frames += 1
        except _OUTPUT_ERRORS as exc:
            host.recorder = None
            host.message = f"video stopped: {exc}"


__all__ = ["Capture", "CaptureHost", "RECORD_FPS", "RECORD_SIZE"]
