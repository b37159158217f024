"""The file gate: the one way this library reads a file that others could have planted.

`read_gated` lstat()s the path, opens it with O_NOFOLLOW|O_NONBLOCK (a symlink swapped in after the
lstat fails the open; a FIFO cannot block), and checks the *same descriptor* with fstat: regular
file with the lstat's device and inode and, when `strict`, owned by `uid`, no group or other bits
and exactly one link. It reads at most `max_bytes + 1` bytes into a bytearray the caller owns and
must zero after parsing (`zero`); on a failed read the gate zeroes it itself.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # not typing's: the status line reads through this gate, never typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final, Literal, TypeAlias

    # A name for type checkers only; at run time a reason is a plain str.
    GateReason: TypeAlias = Literal[
        "malformed", "mode-too-wide", "foreign-owner", "not-a-regular-file", "hard-linked"
    ]

__all__ = ["GateRefused", "read_gated", "zero"]

_OPEN_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

# Test seam: called with the path between lstat and open, to swap a symlink in. None in production.
after_lstat: Callable[[str], None] | None = None


class GateRefused(Exception):
    """The gate refused the file; `reason` is one of the LoginState refusal reasons."""

    def __init__(self, reason: GateReason) -> None:
        super().__init__(reason)
        self.reason: GateReason = reason


def zero(buffer: bytearray | None) -> None:
    """Overwrite a buffer that held file contents or a token answer (the package's one zeroer)."""
    if buffer is not None:
        buffer[:] = bytes(len(buffer))


def _check(
    fd: int, before: os.stat_result, *, uid: int, max_bytes: int, strict: bool
) -> os.stat_result:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
        raise GateRefused("not-a-regular-file")
    if strict:
        if st.st_uid != uid:
            raise GateRefused("foreign-owner")
        if st.st_mode & 0o077:
            raise GateRefused("mode-too-wide")
        if st.st_nlink != 1:
            raise GateRefused("hard-linked")
    if st.st_size > max_bytes:
        raise GateRefused("malformed")
    return st


def _read(fd: int, size: int, max_bytes: int) -> bytearray:
    # Sized to the file (a reader of fifty small files does not clear 256 KiB for each); a file
    # that grew since the fstat grows the buffer, still never past max_bytes + 1.
    buffer = bytearray(min(size, max_bytes) + 1)
    filled = 0
    try:
        # The size check above can be stale: the read itself stops at max_bytes + 1.
        while filled <= max_bytes:
            if filled == len(buffer):
                grown = bytearray(min(2 * len(buffer), max_bytes + 1))
                grown[:filled] = buffer
                zero(buffer)
                buffer = grown
            with memoryview(buffer) as view:
                count = os.readv(fd, [view[filled:]])
            if count == 0:
                break
            filled += count
    except BaseException:
        zero(buffer)
        raise
    if filled > max_bytes:
        zero(buffer)
        raise GateRefused("malformed")
    del buffer[filled:]
    return buffer


def read_gated(
    path: str | os.PathLike[str],
    *,
    uid: int | None,
    max_bytes: int,
    strict: bool = True,
    tail_bytes: int | None = None,
) -> bytearray | None:
    """Read a file through the gate; None when it does not exist.

    With `tail_bytes`, only the file's last `tail_bytes` bytes are read (a log's newest lines;
    the file as a whole is still held to `max_bytes`). Raises GateRefused for a refused file
    and OSError for any other filesystem failure.
    """
    path = os.fspath(path)
    owner = os.getuid() if uid is None else uid
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(before.st_mode):
        raise GateRefused("not-a-regular-file")
    if after_lstat is not None:
        after_lstat(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise GateRefused("not-a-regular-file") from None
        raise
    try:
        st = _check(fd, before, uid=owner, max_bytes=max_bytes, strict=strict)
        if tail_bytes is not None and st.st_size > tail_bytes:
            os.lseek(fd, st.st_size - tail_bytes, os.SEEK_SET)
            return _read(fd, tail_bytes, max_bytes)
        return _read(fd, st.st_size, max_bytes)
    finally:
        os.close(fd)
