"""Pid and metadata files in the daemon's state dir, written atomically (temp file and rename).

The pid file is the daemon's readiness mark: it is written last, after the metadata file, and
`remove_pid_file` unlinks it only while it still names the caller's pid, so a supervised restart
never loses its successor's file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DaemonPaths",
    "daemon_paths",
    "read_meta_file",
    "read_pid_file",
    "remove_pid_file",
    "write_pid_file",
]

PID_FILE_NAME = "daemon.pid"
META_FILE_NAME = "daemon.meta.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonPaths:
    """Where a daemon keeps its state: the dir, `daemon.pid` and `daemon.meta.json`."""

    state_dir: Path
    pid_file: Path
    meta_file: Path


def daemon_paths(state_dir: str | os.PathLike[str]) -> DaemonPaths:
    """Return the pid and metadata file paths inside `state_dir`."""
    root = Path(state_dir)
    return DaemonPaths(
        state_dir=root, pid_file=root / PID_FILE_NAME, meta_file=root / META_FILE_NAME
    )


def _write_atomic(path: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def write_pid_file(
    paths: DaemonPaths, pid: int | None = None, *, meta: Mapping[str, Any] | None = None
) -> None:
    """Write the metadata file (when given) and then the pid file, each by temp file and rename."""
    pid = os.getpid() if pid is None else pid
    paths.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    if meta is not None:
        _write_atomic(paths.meta_file, json.dumps({**meta, "pid": pid}, indent=2) + "\n")
    _write_atomic(paths.pid_file, f"{pid}\n")


def read_pid_file(paths: DaemonPaths) -> int | None:
    """Return the pid the pid file names, or None when it is missing or malformed."""
    try:
        text = paths.pid_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.isdigit() or not text.isascii():
        return None
    pid = int(text)
    return pid if pid > 0 else None


def read_meta_file(paths: DaemonPaths) -> dict[str, Any] | None:
    """Return the metadata document, or None when it is missing or not a JSON object."""
    try:
        data = json.loads(paths.meta_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def remove_pid_file(paths: DaemonPaths, pid: int) -> bool:
    """Unlink the pid file (and metadata file) only while it still names `pid`; True if removed."""
    if read_pid_file(paths) != pid:
        return False
    meta = read_meta_file(paths)
    if meta is not None and meta.get("pid") == pid:
        with contextlib.suppress(FileNotFoundError):
            paths.meta_file.unlink()
    try:
        paths.pid_file.unlink()
    except FileNotFoundError:
        return False
    return True
