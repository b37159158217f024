"""`read_safe_file`: the one reader for files the daemon trusts, as untrusted input.

The token file, the pid and metadata files and the TLS certificate and key are each read here: the
name is checked (`lstat`, or `stat` where symlinks are followed on purpose), opened without
blocking on a FIFO and, unless told otherwise, without following a symlink, checked again on the
open descriptor (the name may have been swapped between the two), and read up to a size cap.
Each caller turns the `UnsafeFileError` into its own error type and fixed text; this module never
puts a file's bytes into an exception.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

__all__ = ["SafeFileProblem", "SafeRead", "UnsafeFileError", "read_safe_file"]

SafeFileProblem: TypeAlias = Literal[
    "missing", "symlink", "not_regular", "owner", "mode", "too_large", "unreadable"
]

_OPEN_FLAGS = os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 64 * 1024


class UnsafeFileError(Exception):
    """The file fails a check: `problem`, and the stat or `strerror` that says how."""

    def __init__(
        self,
        problem: SafeFileProblem,
        *,
        st: os.stat_result | None = None,
        strerror: str | None = None,
    ) -> None:
        super().__init__(problem)
        self.problem: SafeFileProblem = problem
        self.uid = st.st_uid if st is not None else None
        self.mode = stat.S_IMODE(st.st_mode) if st is not None else None
        self.strerror = strerror or ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SafeRead:
    """A file that passed every check: its bytes and the stat of the descriptor they came from."""

    data: bytes
    stat: os.stat_result

    def __repr__(self) -> str:
        return f"SafeRead(size={len(self.data)})"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rules:
    max_bytes: int
    follow_symlinks: bool
    owner: bool
    forbidden_mode: int


def _check(st: os.stat_result, rules: _Rules) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFileError("symlink", st=st)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError("not_regular", st=st)
    if rules.owner and st.st_uid != os.geteuid():
        raise UnsafeFileError("owner", st=st)
    if st.st_mode & rules.forbidden_mode:
        raise UnsafeFileError("mode", st=st)
    if st.st_size > rules.max_bytes:
        raise UnsafeFileError("too_large", st=st)


def read_safe_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int,
    follow_symlinks: bool = False,
    owner: bool = True,
    forbidden_mode: int = 0o077,
) -> SafeRead:
    """Read a regular file of at most `max_bytes`, raising `UnsafeFileError` when a check fails.

    `owner` demands this process's effective uid; `forbidden_mode` lists permission bits that
    must be clear (0o077: nobody else may read or write; 0o022: nobody else may write).
    """
    rules = _Rules(
        max_bytes=max_bytes,
        follow_symlinks=follow_symlinks,
        owner=owner,
        forbidden_mode=forbidden_mode,
    )
    target = Path(path)
    try:
        _check(os.stat(target) if follow_symlinks else os.lstat(target), rules)
        flags = _OPEN_FLAGS if follow_symlinks else _OPEN_FLAGS | os.O_NOFOLLOW
        fd = os.open(target, flags)
    except (FileNotFoundError, NotADirectoryError):
        raise UnsafeFileError("missing") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:  # swapped in after the lstat
            raise UnsafeFileError("symlink") from None
        raise UnsafeFileError("unreadable", strerror=exc.strerror) from None
    try:
        st = os.fstat(fd)
        _check(st, rules)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise UnsafeFileError("unreadable", strerror=exc.strerror) from None
    finally:
        os.close(fd)
    if total > max_bytes:  # it grew after the fstat
        raise UnsafeFileError("too_large", st=st)
    return SafeRead(data=b"".join(chunks), stat=st)
