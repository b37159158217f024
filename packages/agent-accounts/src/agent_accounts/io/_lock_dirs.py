"""What a refresh lock dir says, read without taking it: names, age, clock, holder records.

The lock scheme itself (taking, heartbeat, takeover, release) is in `_locks`; `status` and the
journal read only this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from dataclasses import dataclass
from typing import Final

__all__ = [
    "AHEAD_RECHECK_S",
    "CLOCK_AHEAD_S",
    "HEARTBEAT_INTERVAL_S",
    "HOLDER_RECORD_MAX_BYTES",
    "HOLDER_RECORD_NAME",
    "LOCK_DIR_NAME",
    "STALE_AFTER_S",
    "LockIdentity",
    "held_lock_age",
    "holder_record_path",
    "is_stale",
    "lock_ahead",
    "lock_identity",
    "lock_paths",
    "parse_record",
    "pid_is_gone",
]

LOCK_DIR_NAME: Final = ".oauth_refresh.lock"
HOLDER_RECORD_NAME: Final = ".oauth_refresh.lock.holder"
HOLDER_RECORD_MAX_BYTES: Final = 4096
STALE_AFTER_S: Final = 60.0
"""The agent client's `proper-lockfile` stale time: an older lock dir may be removed and retaken."""
# proper-lockfile refreshes its mtime every stale/2 (30 s for the agent client's 60 s); a refresh
# holds its locks for at most the 30 s request cap plus file work, so a shorter beat keeps a wide
# margin even when the event loop is briefly busy.
HEARTBEAT_INTERVAL_S: Final = 5.0
CLOCK_AHEAD_S: Final = 60.0
"""A lock dir whose mtime is more than this ahead of now was touched by a clock that was ahead."""
AHEAD_RECHECK_S: Final = STALE_AFTER_S
"""A lock dir dated ahead and unchanged this long after (our monotonic clock) is stale.

The agent client's own rule on our clock: a live `proper-lockfile` holder rewrites its mtime at
least every stale/2 (30 s with the agent client's 60 s; never less often than stale/2, whatever
its `update`), and one that cannot for `stale` gives the lock up as compromised. A shorter wait
would take a live holder's lock whose last beat was just before a clock step back."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LockIdentity:
    """A lock dir this holder made: where, which inode, and the mtimes it may carry."""

    path: str
    dev: int
    ino: int
    mtimes_ns: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        """Return the record entry for this lock dir."""
        return {"path": self.path, "dev": self.dev, "ino": self.ino, "mtimes_ns": self.mtimes_ns}

    def matches(self, st: os.stat_result) -> bool:
        """Tell whether `st` is this very lock dir, untouched by anyone else."""
        return (
            stat.S_ISDIR(st.st_mode)
            and (st.st_dev, st.st_ino) == (self.dev, self.ino)
            and st.st_mtime_ns in self.mtimes_ns
        )


def lock_paths(config_dir: str) -> tuple[str, str]:
    """Return the two lock dirs: inside the config dir, and the legacy one beside its real path."""
    return os.path.join(config_dir, LOCK_DIR_NAME), os.path.realpath(config_dir) + ".lock"


def holder_record_path(config_dir: str) -> str:
    """Return the holder record's path, beside the lock inside the config dir."""
    return os.path.join(config_dir, HOLDER_RECORD_NAME)


def pid_is_gone(pid: int) -> bool:
    """Tell whether no process has this pid (only ESRCH proves it; EPERM means alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def held_lock_age(config_dir: str, now: float | None = None) -> float | None:
    """Return the age in seconds of the oldest refresh lock present, or None when none is."""
    ages = []
    for path in lock_paths(config_dir):
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                ages.append(max(0.0, (time.time() if now is None else now) - st.st_mtime))
    return max(ages) if ages else None


def lock_ahead(config_dir: str, now: float | None = None) -> float | None:
    """Return how far ahead of now a lock dir dated over `CLOCK_AHEAD_S` ahead is, or None."""
    current = time.time() if now is None else now
    ahead = []
    for path in lock_paths(config_dir):
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode) and st.st_mtime > current + CLOCK_AHEAD_S:
                ahead.append(st.st_mtime - current)
    return max(ahead) if ahead else None


def lock_identity(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_dev, st.st_ino, st.st_mtime_ns


def is_stale(st: os.stat_result) -> bool:
    return st.st_mtime < time.time() - STALE_AFTER_S


def parse_record(raw: bytes | bytearray) -> tuple[int, list[LockIdentity]] | None:
    try:
        value = json.loads(bytes(raw).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    pid, entries = value.get("pid"), value.get("locks")
    if type(pid) is not int or pid <= 0 or not isinstance(entries, list):
        return None
    locks: list[LockIdentity] = []
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        path, dev, ino, mtimes = (entry.get(k) for k in ("path", "dev", "ino", "mtimes_ns"))
        if not isinstance(path, str) or type(dev) is not int or type(ino) is not int:
            return None
        if not isinstance(mtimes, list) or not all(type(m) is int for m in mtimes):
            return None
        locks.append(LockIdentity(path=path, dev=dev, ino=ino, mtimes_ns=tuple(mtimes)))
    return pid, locks
