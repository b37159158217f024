"""The one cross-process turn on a directory: an exclusive `flock` on the directory itself.

No lock file: the directory's own descriptor carries the lock, and closing it (or the process
dying) releases it, so nothing is left behind by a crash. Used where two processes could decide
the same thing at once: alert marks (the status-cache dir) and a spread poll of one profile
(its sessions dir: two timers at the same phase poll it once, the second reading the first's).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator

__all__ = ["dir_locked"]

_WAIT_STEP_S = 0.02


@contextlib.contextmanager
def dir_locked(path: str, *, wait_s: float) -> Iterator[bool]:
    """Hold an exclusive flock on the directory `path`, tried for at most `wait_s` seconds.

    Yields True while held, and also when the directory does not exist (nothing to race over
    yet); False when another process keeps it past the wait or the lock cannot be taken.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield True
        return
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(_WAIT_STEP_S)
            except OSError:
                yield False
                return
        yield True
    finally:
        os.close(fd)  # closing the last descriptor releases the flock
