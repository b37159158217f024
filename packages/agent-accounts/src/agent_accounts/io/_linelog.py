"""Capped append-only line files: the refresh journal and the usage history.

A line is appended with one `write` on an `O_APPEND` descriptor, so concurrent appenders interleave
whole lines, and a process killed at any point leaves every line it wrote whole or absent.
Appenders take turns (`flock`, released when a holder dies): the size one reads is the file's end,
never a point inside another's write still under way, which would read as a line cut short and
leave an empty line. A line cut short by a full disk stays one bad line: the next append starts on
a new line (readers skip lines that do not parse). Past `max_bytes` the file is renamed to
`<name>.1` (replacing the older one) and a new one is started, so a log holds at most about twice
`max_bytes` and never a temp file. The file is opened `O_NOFOLLOW` and written only when it is this
user's own, owner-only, singly linked regular file (a planted file is never written through), and
read back only through the gate (`read_gated`, strict).
"""

from __future__ import annotations

import os
import stat

from ._gate import GateRefused, read_gated, zero

TYPE_CHECKING = False  # not typing's: `best` and `run` read the history at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

__all__ = ["append_line_data", "read_line_data", "rotated_name"]

_OPEN_FLAGS: Final = (
    os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
)


_TURN_TRIES: Final = 400
_TURN_WAIT_S: Final = 0.005
"""An append holds the lock for a few system calls; two seconds are far past any live holder."""


def rotated_name(name: str) -> str:
    """Return the name a log is rotated to: `<name>.1`."""
    return name + ".1"


def _owned(st: os.stat_result, uid: int) -> bool:
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_uid == uid
        and not st.st_mode & 0o077
        and st.st_nlink == 1
    )


def _take_turn(fd: int) -> None:
    """Wait (a bounded while) for this file's appender lock; go on without it past that."""
    import fcntl
    import time

    for _ in range(_TURN_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(_TURN_WAIT_S)
        else:
            return
    # A holder that stopped mid-append (SIGSTOP): appending anyway risks one empty line at most.


def _open(path: str, uid: int) -> tuple[int, os.stat_result] | None:
    fd = os.open(path, _OPEN_FLAGS, 0o600)
    try:
        st = os.fstat(fd)
        if _owned(st, uid):
            _take_turn(fd)
            st = os.fstat(fd)  # the end as the last appender left it
    except BaseException:
        os.close(fd)
        raise
    if not _owned(st, uid):  # a planted file: never written through (nor locked)
        os.close(fd)
        return None
    return fd, st


def append_line_data(
    directory: str,
    name: str,
    data: bytes,
    *,
    uid: int,
    max_bytes: int,
    unless_last: Callable[[bytes], bool] | None = None,
    tail_bytes: int = 4096,
) -> bool:
    """Append `data` (whole lines, each ending in a newline) to `directory/name` in one write.

    Rotates first when the file would pass `max_bytes`. With `unless_last`, the file's last
    whole line (within its last `tail_bytes`, read on the same descriptor) is passed to it first,
    and nothing is written when it returns True. Returns False when nothing was written (the
    file is not this user's own, or `unless_last` said so); raises OSError as the filesystem
    gives it (callers that must never fail on a log catch it).
    """
    path = os.path.join(directory, name)
    opened = _open(path, uid)
    if opened is None:
        return False
    fd, st = opened
    try:
        if st.st_size and st.st_size + len(data) > max_bytes:
            # Rotate only the file this descriptor holds (another process may have rotated it).
            current = os.lstat(path)
            if (current.st_dev, current.st_ino) == (st.st_dev, st.st_ino):
                os.rename(path, os.path.join(directory, rotated_name(name)))
            os.close(fd)
            fd = -1
            opened = _open(path, uid)
            if opened is None:
                return False
            fd, st = opened
        if unless_last is not None and _last_line(fd, st.st_size, tail_bytes, unless_last):
            return False
        if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
            data = b"\n" + data  # a line cut short by a full disk stays one bad line
        os.write(fd, data)  # one write: appenders interleave whole lines
    finally:
        if fd >= 0:
            os.close(fd)
    return True


def _last_line(fd: int, size: int, tail_bytes: int, check: Callable[[bytes], bool]) -> bool:
    """Pass the last whole line of the file (None-safe: an empty file has none) to `check`."""
    if not size:
        return False
    start = max(0, size - tail_bytes)
    tail = os.pread(fd, size - start, start)
    if not tail.endswith(b"\n"):
        return False  # the last line was cut short: append after it
    lines = tail[:-1].split(b"\n")
    if len(lines) == 1 and start > 0:
        return False  # longer than the tail: not a line this log writes
    return check(lines[-1])


def read_line_data(
    path: str, *, uid: int, max_bytes: int, tail_bytes: int | None = None
) -> list[bytes]:
    """Return the lines of a log read through the strict gate; [] when absent or refused.

    With `tail_bytes`, only the whole lines within the file's last `tail_bytes` bytes (the line
    the cut falls in is dropped, so the first line returned is b"" when the tail was cut). The
    bytes read are zeroed once split; an OSError other than absence is raised.
    """
    try:
        raw = read_gated(path, uid=uid, max_bytes=max_bytes, strict=True, tail_bytes=tail_bytes)
    except GateRefused:
        return []
    if raw is None:
        return []
    try:
        lines = bytes(raw).split(b"\n")
        if tail_bytes is not None and len(raw) >= tail_bytes:
            lines[0] = b""  # cut by the tail, or whole by chance: either way not read
        return lines
    finally:
        zero(raw)
