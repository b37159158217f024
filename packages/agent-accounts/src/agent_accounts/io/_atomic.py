"""Atomic writes: an exclusive 0600 temp file in the target dir, fsync, rename, dir fsync."""

from __future__ import annotations

import contextlib
import os

__all__ = ["atomic_write", "ensure_private_dir"]


def ensure_private_dir(path: str) -> None:
    """Create `path` (and its parents) with mode 0700 when missing."""
    os.makedirs(path, mode=0o700, exist_ok=True)


def atomic_write(directory: str, name: str, data: bytes) -> str:
    """Write `data` to `directory/name` so readers see the old file or the new one, never a part.

    The temp file is `.<name>.<pid>.<random>.tmp`: it never ends in `.json`, so no reader glob
    takes it, and it is removed on any failure.
    """
    target = os.path.join(directory, name)
    # os.urandom, not `secrets`: its hmac/hashlib imports cost ~10 ms for six random bytes.
    temp = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):  # best effort: the rename already happened
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return target
