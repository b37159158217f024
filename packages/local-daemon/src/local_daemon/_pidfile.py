"""Pid and metadata files in the daemon's state dir, written atomically (temp file and rename).

The pid file is the daemon's readiness mark: it is written last, after the metadata file, and
`remove_pid_file` unlinks it only while it still names the caller's pid, so a supervised restart
never loses its successor's file.

One daemon per state dir: `lock_state_dir` takes an exclusive `flock` on `daemon.lock` before
anything else is written, held for the daemon's life; a second starter gets `DaemonStateError`
(`running`) and touches nothing.

`read_daemon_address` finds a running daemon from these files for `local-daemon health`. It
treats them as untrusted input: each must be a regular file of this user that nobody else can
write, opened without following a symlink, and small; the pid must be alive and the metadata
file must name the same pid, a port from 1 to 65535 and an IP literal host.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import DaemonStateError
from ._statefile import (
    UnsafeFileError,
    flock_within,
    make_private_dir,
    open_lock_file,
    parse_json_document,
    read_safe_file,
    write_atomic,
)

__all__ = [
    "LOCK_FILE_NAME",
    "MAX_STATE_FILE_BYTES",
    "DaemonAddress",
    "DaemonPaths",
    "StateDirLock",
    "daemon_paths",
    "discard_state_files",
    "lock_state_dir",
    "read_daemon_address",
    "read_meta_file",
    "read_pid_file",
    "remove_pid_file",
    "write_pid_file",
]

PID_FILE_NAME = "daemon.pid"
META_FILE_NAME = "daemon.meta.json"
LOCK_FILE_NAME = "daemon.lock"
# The daemon writes a few hundred bytes; anything this large is not its file.
MAX_STATE_FILE_BYTES = 64 * 1024
_PORT_MAX = 65535
# A holder that removes the lock file as we open it sends us round again; twice is plenty.
_LOCK_ATTEMPTS = 4


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


def write_pid_file(
    paths: DaemonPaths, pid: int | None = None, *, meta: Mapping[str, Any] | None = None
) -> None:
    """Write the metadata file (when given) and then the pid file, each atomically (`write_atomic`:
    temp file, rename, directory synced)."""
    pid = os.getpid() if pid is None else pid
    make_private_dir(paths.state_dir)
    if meta is not None:
        write_atomic(paths.meta_file, (json.dumps({**meta, "pid": pid}, indent=2) + "\n").encode())
    write_atomic(paths.pid_file, f"{pid}\n".encode())


def _parse_pid(text: str) -> int | None:
    text = text.strip()
    if not text.isdigit() or not text.isascii():
        return None
    pid = int(text)
    return pid if pid > 0 else None


def _read_lenient(path: Path) -> bytes | None:
    read = read_safe_file(path, max_bytes=MAX_STATE_FILE_BYTES, forbidden_mode=0o022)
    return None if isinstance(read, UnsafeFileError) else read.data


def read_pid_file(paths: DaemonPaths) -> int | None:
    """Return the pid the pid file names, or None when it is missing, unsafe or malformed."""
    raw = _read_lenient(paths.pid_file)
    return None if raw is None else _parse_pid(raw.decode("ascii", "replace"))


def read_meta_file(paths: DaemonPaths) -> dict[str, Any] | None:
    """Return the metadata document, or None when it is missing, unsafe or not a JSON object."""
    raw = _read_lenient(paths.meta_file)
    if raw is None:
        return None
    data = parse_json_document(raw)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonAddress:
    """Where the daemon a state dir names listens: its `pid`, `host` and `port`."""

    pid: int
    host: str
    port: int


def _refuse(path: Path, what: str, problem: str) -> DaemonStateError:
    return DaemonStateError(f"{path} {what}", problem=problem)


def _read_state_file(path: Path, *, missing: DaemonStateError) -> bytes:
    # Whoever can write it could point `health` at a port of their choosing.
    read = read_safe_file(path, max_bytes=MAX_STATE_FILE_BYTES, forbidden_mode=0o022)
    if not isinstance(read, UnsafeFileError):
        return read.data
    if read.problem == "missing":
        raise missing
    raise _refuse(path, read.what, read.problem)


def _probe_host(value: object) -> str | None:
    import ipaddress

    if not isinstance(value, str):
        return None
    if value == "localhost":
        return value
    try:
        address = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return None
    if address.is_unspecified:  # a wildcard socket (socket activation) answers on loopback
        return "::1" if address.version == 6 else "127.0.0.1"
    return str(address)


def read_daemon_address(paths: DaemonPaths) -> DaemonAddress:
    """Return where the live daemon the pid and metadata files name listens, checking both.

    Raise `DaemonStateError` whose `problem` is `missing` (no pid file), `stale` (its process
    is gone), `meta_missing`, `mismatch` (the metadata file names another pid: a daemon is
    starting or stopping), `symlink`, `not_regular`, `owner`, `mode`, `too_large`, `unreadable`,
    `malformed`, `port` or `host`.
    """
    from ._process import is_process_alive

    raw = _read_state_file(
        paths.pid_file,
        missing=DaemonStateError(
            f"no daemon is running for {paths.state_dir} (no {PID_FILE_NAME})", problem="missing"
        ),
    )
    pid = _parse_pid(raw.decode("ascii", "replace"))
    if pid is None:
        raise _refuse(paths.pid_file, "does not hold a pid", "malformed")
    if not is_process_alive(pid):
        raise _refuse(paths.pid_file, f"is stale: process {pid} is not running", "stale")
    raw = _read_state_file(
        paths.meta_file,
        missing=DaemonStateError(
            f"{paths.state_dir} has no {META_FILE_NAME}, so the daemon's port is unknown",
            problem="meta_missing",
        ),
    )
    meta = parse_json_document(raw)
    if not isinstance(meta, dict):
        raise _refuse(paths.meta_file, "is not a JSON object", "malformed")
    if meta.get("pid") != pid or isinstance(meta.get("pid"), bool):
        raise _refuse(
            paths.meta_file,
            f"does not name process {pid} as {PID_FILE_NAME} does (a daemon may be starting"
            " or stopping)",
            "mismatch",
        )
    port = meta.get("port")
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= _PORT_MAX:
        raise _refuse(paths.meta_file, f"names no port from 1 to {_PORT_MAX}", "port")
    host = _probe_host(meta.get("host", "127.0.0.1"))
    if host is None:
        raise _refuse(paths.meta_file, "names a host that is not an IP address", "host")
    return DaemonAddress(pid=pid, host=host, port=port)


class StateDirLock:
    """An exclusive `flock` on `daemon.lock` in the state dir, held until `release()`."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            # Unlinked while still held: a starter that opened this inode re-checks the name
            # after its flock and retries on the new file, so two daemons never both hold one.
            with contextlib.suppress(OSError):
                if os.fstat(fd).st_ino == os.lstat(self.path).st_ino:
                    os.unlink(self.path)
        finally:
            os.close(fd)


def _running_message(paths: DaemonPaths) -> DaemonStateError:
    pid = read_pid_file(paths)
    who = f" (pid {pid})" if pid is not None else ""
    return DaemonStateError(
        f"another daemon{who} is already running for {paths.state_dir}", problem="running"
    )


def _make_state_dir(state_dir: Path) -> None:
    failed: OSError | None = None
    try:
        make_private_dir(state_dir)
    except OSError as exc:
        failed = exc
    if isinstance(failed, NotADirectoryError):
        where = "" if failed.filename == str(state_dir) else f" ({failed.filename} is not one)"
        raise DaemonStateError(
            f"cannot use {state_dir} as the state dir: not a directory{where}",
            problem="not_a_directory",
        )
    if failed is not None:
        raise DaemonStateError(
            f"cannot create the state dir {state_dir} ({failed.strerror})", problem="uncreatable"
        )


def lock_state_dir(paths: DaemonPaths) -> StateDirLock:
    """Take the state dir's lock without waiting; `DaemonStateError` (`running`) when held.

    Creates the state dir and its missing parents (0700); `DaemonStateError` (`not_a_directory`,
    `uncreatable`) naming the path when it cannot. A second starter gets the error and writes
    nothing.
    """
    path = paths.state_dir / LOCK_FILE_NAME
    _make_state_dir(paths.state_dir)
    for _ in range(_LOCK_ATTEMPTS):
        try:
            fd = open_lock_file(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse(path, "is a symlink", "symlink") from None
            raise
        try:
            held = flock_within(fd, deadline=0.0, pause=0.0)  # one try: never waits
        except BaseException:
            os.close(fd)
            raise
        if not held:
            os.close(fd)
            raise _running_message(paths)
        try:
            same = os.fstat(fd).st_ino == os.lstat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return StateDirLock(path, fd)
        os.close(fd)  # the holder removed this file as we opened it: lock the new one
    raise _running_message(paths)


def discard_state_files(paths: DaemonPaths, pid: int) -> None:
    """Remove the pid file and the metadata file, each only while it names `pid`.

    Unlike `remove_pid_file` this also removes a metadata file whose pid file was never written
    (a start that failed between the two, on a full disk say).
    """
    remove_pid_file(paths, pid)
    meta = read_meta_file(paths)
    if meta is not None and meta.get("pid") == pid and not isinstance(meta.get("pid"), bool):
        with contextlib.suppress(FileNotFoundError):
            paths.meta_file.unlink()
