"""Refresh locks compatible with the agent client's `proper-lockfile` scheme, and the holder record.

A lock is a directory made with `mkdir`; whoever made it holds it, and its mtime is the heartbeat
other holders judge staleness by (the agent client treats a lock older than 60 s as stale and
removes it with `rmdir`). This module never steals a held lock. The only lock it removes besides
its own is one left by a crash, and only through the holder record: a small JSON file beside the
lock naming the holder's pid and the device, inode and ctime of each lock dir it made. A recorded
pid that has exited plus a lock dir whose identity still matches is the proof of a crash; anything
less (no record, a live pid, a changed identity, a record that is not this uid's own private
regular file) leaves the lock alone.

Touching a dir's mtime also moves its ctime, so each heartbeat rewrites the record with the new
ctime (write-then-rename, so the record never disappears while the locks are held).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeAlias

__all__ = [
    "HEARTBEAT_INTERVAL_S",
    "HOLDER_RECORD_MAX_BYTES",
    "HOLDER_RECORD_NAME",
    "LOCK_DIR_NAME",
    "LockHeldError",
    "LockIOError",
    "LockIdentity",
    "RecordReader",
    "RefreshLocks",
    "holder_record_path",
    "keep_fresh",
    "lock_paths",
    "pid_is_gone",
]

LOCK_DIR_NAME: Final = ".oauth_refresh.lock"
HOLDER_RECORD_NAME: Final = ".oauth_refresh.lock.holder"
HOLDER_RECORD_MAX_BYTES: Final = 4096
# proper-lockfile refreshes its mtime every stale/2 (30 s for the agent client's 60 s); a refresh
# holds its locks for at most the 30 s request cap plus file work, so a shorter beat keeps a wide
# margin even when the event loop is briefly busy.
HEARTBEAT_INTERVAL_S: Final = 10.0

# The legacy lock beside the config dir may sit on a path the unit's sandbox makes read-only.
_UNUSABLE_ERRNOS: Final = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_DIR_OPEN_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

RecordReader: TypeAlias = Callable[[str], bytes | bytearray | None]
"""Read the holder record through the gate: bytes, None when absent; raise when refused."""


class LockHeldError(Exception):
    """A refresh lock is held by someone else (the refresh answers `locked`)."""


class LockIOError(Exception):
    """A lock could not be taken for a reason other than being held (the refresh fails as `io`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LockIdentity:
    """Where a lock dir is and which inode, at which ctime, this holder made there."""

    path: str
    dev: int
    ino: int
    ctime_ns: int

    def to_json(self) -> dict[str, object]:
        """Return the record entry for this lock dir."""
        return {"path": self.path, "dev": self.dev, "ino": self.ino, "ctime_ns": self.ctime_ns}

    def matches(self, st: os.stat_result) -> bool:
        """Tell whether `st` is this very lock dir, untouched by anyone else."""
        return (
            stat.S_ISDIR(st.st_mode)
            and st.st_dev == self.dev
            and st.st_ino == self.ino
            and st.st_ctime_ns == self.ctime_ns
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


def _identity_of(path: str, st: os.stat_result) -> LockIdentity:
    return LockIdentity(path=path, dev=st.st_dev, ino=st.st_ino, ctime_ns=st.st_ctime_ns)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Record:
    pid: int
    locks: tuple[LockIdentity, ...]


def _parse_record(raw: bytes | bytearray) -> _Record | None:
    try:
        value = json.loads(bytes(raw).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    pid = value.get("pid")
    entries = value.get("locks")
    if type(pid) is not int or pid <= 0 or not isinstance(entries, list):
        return None
    locks: list[LockIdentity] = []
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        path, dev, ino, ctime_ns = (entry.get(k) for k in ("path", "dev", "ino", "ctime_ns"))
        if not isinstance(path, str) or not all(type(n) is int for n in (dev, ino, ctime_ns)):
            return None
        assert isinstance(dev, int)
        assert isinstance(ino, int)
        assert isinstance(ctime_ns, int)
        locks.append(LockIdentity(path=path, dev=dev, ino=ino, ctime_ns=ctime_ns))
    return _Record(pid=pid, locks=tuple(locks))


@dataclass(slots=True, kw_only=True)
class RefreshLocks:
    """The two refresh locks of one config dir, as taken by one call."""

    config_dir: str
    read_record: RecordReader
    pid: int = field(default_factory=os.getpid)
    made: list[LockIdentity] = field(default_factory=list)
    legacy_unusable: bool = False
    _stale: _Record | None = None
    _stale_read: bool = False

    @property
    def record_path(self) -> str:
        """Return the holder record's path."""
        return holder_record_path(self.config_dir)

    def acquire(self, *, between: Callable[[], None] | None = None) -> None:
        """Take both locks, reclaiming a crashed holder's; raise LockHeldError or LockIOError."""
        config_lock, legacy_lock = lock_paths(self.config_dir)
        self._take(config_lock, legacy=False)
        try:
            # Holding the config lock makes any record on disk stale: keep what it says (it may
            # name a crashed holder's legacy lock) before replacing it with ours.
            self._load_stale_record()
            self._create_record()
            if between is not None:
                between()
            self._take(legacy_lock, legacy=True)
            if not self.legacy_unusable:
                self._replace_record()
        except BaseException:
            self.release()
            raise

    def _take(self, path: str, *, legacy: bool) -> None:
        for attempt in range(2):
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                if attempt == 0 and self._reclaim(path):
                    continue
                raise LockHeldError(path) from None
            except OSError as exc:
                if legacy and exc.errno in _UNUSABLE_ERRNOS:
                    self.legacy_unusable = True
                    return
                raise LockIOError(exc.errno) from None
            try:
                st = os.lstat(path)
            except OSError as exc:
                raise LockIOError(exc.errno) from None
            self.made.append(_identity_of(path, st))
            return

    def _load_stale_record(self) -> _Record | None:
        if not self._stale_read:
            self._stale_read = True
            try:
                raw = self.read_record(self.record_path)
            except Exception:
                # Refused by the gate (FIFO, symlink, foreign owner, ...): it names no lock.
                raw = None
            if raw is not None:
                try:
                    self._stale = _parse_record(raw)
                finally:
                    if isinstance(raw, bytearray):
                        raw[:] = bytes(len(raw))
        return self._stale

    def _reclaim(self, path: str) -> bool:
        """Remove the lock dirs a crashed holder's record proves; tell whether `path` was freed."""
        record = self._load_stale_record()
        if record is None or record.pid == self.pid or not pid_is_gone(record.pid):
            return False
        allowed = set(lock_paths(self.config_dir))
        freed = False
        for ident in record.locks:
            if ident.path not in allowed:
                continue
            if self._remove_if_ours(ident) and ident.path == path:
                freed = True
        return freed

    @staticmethod
    def _remove_if_ours(ident: LockIdentity) -> bool:
        try:
            fd = os.open(ident.path, _DIR_OPEN_FLAGS)
        except OSError:
            return False
        try:
            if not ident.matches(os.fstat(fd)):
                return False
        except OSError:
            return False
        finally:
            os.close(fd)
        try:
            os.rmdir(ident.path)
        except OSError:
            return False
        return True

    def _record_bytes(self) -> bytes:
        body = {"pid": self.pid, "locks": [ident.to_json() for ident in self.made]}
        return json.dumps(body, separators=(",", ":")).encode("utf-8")

    @staticmethod
    def _write_new(path: str, data: bytes) -> None:
        fd = os.open(path, _CREATE_FLAGS, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def _create_record(self) -> None:
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.record_path)
            self._write_new(self.record_path, self._record_bytes())
        except Exception:
            raise LockIOError("holder record") from None

    def _replace_record(self) -> None:
        # Write-then-rename so the record never vanishes while the locks are held.
        temp = f"{self.record_path}.{self.pid}.{secrets.token_hex(6)}.tmp"
        try:
            self._write_new(temp, self._record_bytes())
            os.rename(temp, self.record_path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)

    def heartbeat(self) -> None:
        """Touch each held lock dir's mtime, as proper-lockfile does, and re-record its ctime."""
        renewed: list[LockIdentity] = []
        for ident in self.made:
            try:
                fd = os.open(ident.path, _DIR_OPEN_FLAGS)
            except OSError:
                continue  # gone: someone judged it stale; never recreate or touch another's
            try:
                if not ident.matches(os.fstat(fd)):
                    continue
                os.utime(fd)
                renewed.append(_identity_of(ident.path, os.fstat(fd)))
            except OSError:
                renewed.append(ident)
            finally:
                os.close(fd)
        # A lock dir that is no longer ours is dropped, so release never removes it.
        self.made[:] = renewed
        self._replace_record()

    def release(self) -> None:
        """Remove the record, then every lock dir this call made (and only those); never raise."""
        # The result already reached stands and the locks must still be freed.
        with contextlib.suppress(Exception):
            os.unlink(self.record_path)
        for ident in reversed(self.made):
            self._remove_if_ours(ident)
        self.made.clear()


async def keep_fresh(locks: RefreshLocks, interval: float = HEARTBEAT_INTERVAL_S) -> None:
    """Heartbeat `locks` every `interval` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        locks.heartbeat()
