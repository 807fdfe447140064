"""Output paths and counts, checked before any work; files written whole.

Shared by trajectories, plots and videos: :class:`OutputError` names the path and what
is wrong with it, :func:`check_output_path` proves a path can be written before a run
starts, :func:`write_atomically` never leaves half a file behind.

A file being written lives next to its target as a hidden temporary,
``.NAME.ropesim-tmp-PID-TOKEN.SUFFIX`` (:func:`temporary_path`), and is renamed over
the target only when whole (:func:`finish_temporary`: the umask's permissions, then
``os.replace``). A process killed mid-write (SIGKILL, power loss) leaves its temporary
behind; the next output check in that folder removes it (:func:`remove_stale_temporaries`:
temporaries whose process is gone).
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from .interrupts import signals_held

#: the mark in every temporary file's name
TEMPORARY_MARK = ".ropesim-tmp-"
_TEMPORARY_NAME = re.compile(r"^\..+" + re.escape(TEMPORARY_MARK) + r"(\d+)-[0-9a-f]+")

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
    if not str(path).strip():
        raise OutputError(f"output path {str(path)!r} is empty; give a file or folder name")
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
    remove_stale_temporaries(target_dir)
    try:
        with tempfile.TemporaryFile(dir=target_dir):
            pass
    except OSError as exc:
        raise OutputError(f"{path}: cannot write in folder {target_dir} ({exc.strerror})") from None
    return path


def temporary_path(path: Path) -> Path:
    """A fresh hidden name next to ``path`` for writing it: same folder (so the final
    rename is atomic) and same suffix (so writers that go by the suffix still work)."""
    token = secrets.token_hex(4)
    return path.parent / f".{path.name}{TEMPORARY_MARK}{os.getpid()}-{token}{path.suffix}"


def umask_file_mode() -> int:
    """The permissions a new file gets under the current umask: 0o666 & ~umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def finish_temporary(temporary: Path, path: Path) -> None:
    """Give the whole ``temporary`` the umask's permissions and rename it over ``path``."""
    os.chmod(temporary, umask_file_mode())
    os.replace(temporary, path)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete the temporaries in ``folder`` left by ropesim processes that no longer
    run (a killed write); returns what was removed. Other files are never touched."""
    removed = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _TEMPORARY_NAME.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid() or _process_alive(
                int(match.group(1))):
            continue
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed


def write_atomically(path: Path, payload: bytes) -> None:
    """Write ``payload`` to a temporary next to ``path`` and rename it over ``path``.

    Stop signals (Ctrl-C, SIGTERM, SIGHUP) are held during the write and delivered
    after it, so ``path`` is either the old file or the whole new one, with the
    permissions the umask allows, and no temporary is left."""
    path = Path(path)
    temporary = temporary_path(path)
    with signals_held():
        try:
            temporary.write_bytes(payload)
            finish_temporary(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)


__all__ = ["OutputError", "Progress", "TEMPORARY_MARK", "check_count", "check_output_path",
           "finish_temporary", "remove_stale_temporaries", "temporary_path", "umask_file_mode",
           "write_atomically"]
