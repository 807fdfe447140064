"""The viewer's recording helper: screenshots (PNG) and videos (H.264) of the view.

Frames come from a frame source: a callable returning the current view as an
(h, w, 3) uint8 RGB array rendered offscreen at a fixed size (RECORD_SIZE), so a
recording does not depend on the window's size. Every method returns the status
line to show; failures (unwritable folder, encoder missing) are reported, never raised.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable

import numpy as np

from ..io.video import VideoWriter, open_video_writer, save_png

RECORD_SIZE = (1280, 720)    # px; offscreen screenshot / video size (multiples of 16)
RECORD_FPS = 30              # frames per second of recorded videos
#: what writing a frame or a file may raise; reported as a status line
_OUTPUT_ERRORS = (OSError, ValueError, RuntimeError)


class Capture:
    """Screenshots and one video recording at a time, written to ``output_dir``.

    ``frame_source`` returns the view as (h, w, 3) uint8 RGB (None: no renderer
    attached, and screenshots and videos only say so). While recording, ``writer``
    is the open video writer and ``frames`` counts the frames appended.
    """

    def __init__(self, output_dir: str | Path = ".",
                 frame_source: Callable[[], np.ndarray] | None = None) -> None:
        self.output_dir = Path(output_dir)
        self.frame_source = frame_source
        self.writer: VideoWriter | None = None
        self.path: Path | None = None
        self.frames = 0

    @property
    def recording(self) -> bool:
        return self.writer is not None

    def output_path(self, stem: str, suffix: str) -> Path:
        """``ropesim-STEM-<date>-<time>SUFFIX`` in output_dir, numbered if it exists."""
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = self.output_dir / f"ropesim-{stem}-{stamp}{suffix}"
        counter = 1
        while path.exists():
            path = self.output_dir / f"ropesim-{stem}-{stamp}-{counter}{suffix}"
            counter += 1
        return path

    def screenshot(self, stem: str) -> str:
        """Save the current view as a PNG named after ``stem`` (the scene)."""
        if self.frame_source is None:
            return "screenshot: no renderer attached"
        path = self.output_path(stem, ".png")
        try:
            save_png(path, self.frame_source())
        except _OUTPUT_ERRORS as exc:
            return f"screenshot failed: {exc}"
        return f"screenshot saved: {path}"

    def start(self, stem: str) -> str:
        """Open an mp4 named after ``stem``; frames are added by :meth:`add_frame`."""
        if self.frame_source is None:
            return "video: no renderer attached"
        path = self.output_path(stem, ".mp4")
        try:
            self.writer = open_video_writer(path, RECORD_FPS)
        except _OUTPUT_ERRORS as exc:
            return f"video failed: {exc}"
        self.path = path
        self.frames = 0
        return f"recording: {path}"

    def stop(self) -> str:
        """Close the video (nothing to do when not recording)."""
        if self.writer is None:
            return ""
        writer, self.writer = self.writer, None
        writer.close()
        return f"video saved: {self.path} ({self.frames} frames)"

    def add_frame(self) -> str | None:
        """Append the current view to the video; on failure the recording stops and
        the reason is returned."""
        try:
            self.writer.append(self.frame_source())
            self.frames += 1
        except _OUTPUT_ERRORS as exc:   # BrokenPipeError (encoder gone) is an OSError
            self.writer = None
            return f"video stopped: {exc}"
        return None


__all__ = ["Capture", "RECORD_FPS", "RECORD_SIZE"]
