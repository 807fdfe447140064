"""Output paths and counts, checked before any work; files written whole.

Shared by trajectories, plots and videos: :class:`OutputError` names the path and what
is wrong with it, :func:`check_output_path` proves a path can be written before a run
starts, :func:`write_atomically` never leaves half a file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Sequence

#: progress callback: (done, total) in steps (record) or frames (render)
Progress = Callable[[int, int], None]


class OutputError(ValueError):
    """An output path cannot be written (bad suffix, missing or read-only folder)."""


def check_count(name: str, value: int, minimum: int) -> int:
    """``value`` as an int, or a ValueError naming ``name`` unless it is an integer >= minimum."""
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise ValueError(f"{name}: must be an integer >= {minimum}, got {value!r}")
    return int(value)


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


def write_atomically(path: Path, payload: bytes) -> None:
    """Write to a temporary file next to ``path`` and rename it over ``path``."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


__all__ = ["OutputError", "Progress", "check_count", "check_output_path", "write_atomically"]
