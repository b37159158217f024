"""Refresh locks in the agent client's `proper-lockfile` scheme, taken so a crash is always undone.

A lock is a directory at the lock path; whoever put it there holds it, and its mtime is the
heartbeat (`proper-lockfile` touches its locks every stale/2 and judges a lock whose mtime is older
than `stale`, 60 s for the agent client, stale: it removes it with `rmdir` and takes it anew).

Intent before effect: a lock dir is first made under a private staging name, then its identity
(device, inode, mtime) is written to a holder record, and only then is it renamed onto the lock
path with `renameat2(RENAME_NOREPLACE)`, which fails on a held lock and never replaces it. A crash
at any step therefore leaves either no lock, or a lock that a record of a dead pid names exactly:
the next run proves it was a crashed holder's (pid gone, identity equal) and takes it over. Each
heartbeat writes the mtime it is about to set into the record before setting it.

A lock is taken over only when it is proven a dead holder's, or stale by the agent client's rule
(mtime older than 60 s). The takeover is an atomic exchange with our own prepared dir: what comes
out is compared with what was judged, and swapped back if it is not the same dir, so a lock that
another refresher took in between is never removed. A fresh lock of a live holder is never stolen.

Records: `.oauth_refresh.lock.holder.<pid>.<hex>.intent` while the locks are being taken, renamed
to `.oauth_refresh.lock.holder` once both are held. They sit outside the lock dirs because the
agent client removes a stale lock with `rmdir`, and are read through the credentials gate.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from ._atomic import RenameUnsupported, rename_exchange, rename_noreplace, write_new
from ._gate import zero
from ._lock_dirs import (
    AHEAD_RECHECK_S,
    CLOCK_AHEAD_S,
    HEARTBEAT_INTERVAL_S,
    HOLDER_RECORD_NAME,
    LOCK_DIR_NAME,
    LockIdentity,
    held_lock_age,
    holder_record_path,
    is_stale,
    lock_identity,
    lock_paths,
    parse_record,
    pid_is_gone,
)

__all__ = [
    "LockHeldError",
    "LockIOError",
    "RecordReader",
    "RefreshLocks",
    "keep_fresh",
]


# The legacy lock beside the config dir may sit on a path the unit's sandbox makes read-only.
_UNUSABLE_ERRNOS: Final = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_DIR_OPEN_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LEFTOVER: Final = re.compile(r"\.(\d+)\.[0-9a-f]+\.(?:tmp|intent)")

RecordReader: TypeAlias = Callable[[str], bytes | bytearray | None]
"""Read a holder record through the gate: bytes, None when absent; raise when refused."""


class LockHeldError(Exception):
    """A refresh lock is held by someone else (the refresh answers `locked`)."""

    def __init__(self, age_seconds: float | None) -> None:
        super().__init__("lock held")
        self.age_seconds = age_seconds


class LockIOError(Exception):
    """A lock could not be taken for a reason other than being held (the refresh fails as `io`)."""


def _remove_if(path: str, ident: Callable[[os.stat_result], bool]) -> bool:
    """rmdir `path` when the dir there satisfies `ident`; tell whether it did."""
    try:
        fd = os.open(path, _DIR_OPEN_FLAGS)
    except OSError:
        return False
    try:
        if not ident(os.fstat(fd)):
            return False
    except OSError:
        return False
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


@dataclass(slots=True, kw_only=True)
class RefreshLocks:
    """The two refresh locks of one config dir, as taken by one call."""

    config_dir: str
    read_record: RecordReader
    pid: int = field(default_factory=os.getpid)
    made: list[LockIdentity] = field(default_factory=list)
    legacy_unusable: bool = False
    _tag: str = field(default_factory=lambda: os.urandom(6).hex())
    _stayed_ahead: set[tuple[int, int, int]] = field(default_factory=set)
    _staged: LockIdentity | None = None
    _record: str | None = None

    @property
    def record_path(self) -> str:
        """Return the holder record's path (once both locks are held)."""
        return holder_record_path(self.config_dir)

    @property
    def intent_path(self) -> str:
        """Return this call's own record while it takes the locks."""
        return f"{self.record_path}.{self.pid}.{self._tag}.intent"

    async def judge_ahead(self, wait: float = AHEAD_RECHECK_S) -> None:
        """Mark stale each lock dir dated more than `CLOCK_AHEAD_S` ahead that is the same dir
        with the same mtime, still ahead, `wait` s later: a live holder (proper-lockfile every
        stale/2, ours every `HEARTBEAT_INTERVAL_S`) rewrites it with the clock as it now is, so it
        is no live one's. Else a lock dated hours ahead blocks refresh until the clock catches up.
        """
        first: dict[str, tuple[int, int, int]] = {}
        for path in lock_paths(self.config_dir):
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if stat.S_ISDIR(st.st_mode) and st.st_mtime > time.time() + CLOCK_AHEAD_S:
                    first[path] = lock_identity(st)
        if not first:
            return
        await asyncio.sleep(wait)
        for path, seen in first.items():
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if lock_identity(st) == seen and st.st_mtime > time.time() + CLOCK_AHEAD_S:
                    self._stayed_ahead.add(seen)

    def _takeable(self, st: os.stat_result, path: str) -> bool:
        """Tell whether the lock dir `st` at `path` may be taken over (never a live holder's)."""
        if self._dead_holder_made(st, path) or is_stale(st):
            return True
        return lock_identity(st) in self._stayed_ahead

    def acquire(self, *, between: Callable[[], None] | None = None) -> None:
        """Take both locks, taking over a dead or stale holder's; raise LockHeld/LockIOError."""
        config_lock, legacy_lock = lock_paths(self.config_dir)
        self._record = self.intent_path
        try:
            self._take(config_lock, legacy=False)
            if between is not None:
                between()
            self._take(legacy_lock, legacy=True)
            # Both held: our record becomes the holder record (any record there is a dead one's).
            os.rename(self.intent_path, self.record_path)
            self._record = self.record_path
        except OSError as exc:
            self.release()
            raise LockIOError(exc.errno) from None
        except BaseException:
            self.release()
            raise
        self._sweep_leftovers()

    # ---- taking one lock ----------------------------------------------------------------------

    def _staging(self, path: str) -> str:
        return f"{path}.{self.pid}.{self._tag}.tmp"

    def _take(self, path: str, *, legacy: bool) -> None:
        staging = self._staging(path)
        try:
            os.mkdir(staging, 0o700)
        except OSError as exc:
            if legacy and exc.errno in _UNUSABLE_ERRNOS:
                self.legacy_unusable = True
                return
            raise LockIOError(exc.errno) from None
        try:
            st = os.lstat(staging)
            ident = LockIdentity(
                path=path, dev=st.st_dev, ino=st.st_ino, mtimes_ns=(st.st_mtime_ns,)
            )
            self._staged = ident
            self._write_record()  # intent before effect
            placed = self._place(staging, path, ident)
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(staging)  # ours unplaced, or the dead or stale lock we took over
        self.made.append(placed)
        self._staged = None
        self._write_record()

    def _place(self, staging: str, path: str, ident: LockIdentity) -> LockIdentity:
        """Put the staged dir at `path`; return the identity of the lock now held there."""
        try:
            rename_noreplace(staging, path)
            return ident
        except FileExistsError:
            pass
        except RenameUnsupported:
            return self._place_by_mkdir(path)
        try:
            fd = os.open(path, _DIR_OPEN_FLAGS)
        except FileNotFoundError:
            try:
                rename_noreplace(staging, path)  # released meanwhile
            except FileExistsError:
                raise LockHeldError(0.0) from None
            return ident
        try:
            judged = os.fstat(fd)
        finally:
            os.close(fd)
        if not self._takeable(judged, path):
            raise LockHeldError(max(0.0, time.time() - judged.st_mtime))
        # Take over atomically: our dir goes in, the judged one comes out under our staging name.
        rename_exchange(staging, path)
        out = os.lstat(staging)
        if (out.st_dev, out.st_ino, out.st_mtime_ns) != (
            judged.st_dev,
            judged.st_ino,
            judged.st_mtime_ns,
        ):
            rename_exchange(staging, path)  # someone else's fresh lock came out: put it back
            raise LockHeldError(0.0)
        return ident  # the old lock is under our staging name now; `_take` removes it

    def _place_by_mkdir(self, path: str) -> LockIdentity:
        # No renameat2 on this filesystem: plain mkdir, recorded right after (a crash in between
        # leaves a lock that only the 60 s staleness frees).
        for attempt in range(2):
            try:
                os.mkdir(path, 0o700)
                break
            except FileExistsError:
                if attempt == 0 and _remove_if(path, lambda st: self._takeable(st, path)):
                    continue
                age = held_lock_age(self.config_dir)
                raise LockHeldError(age) from None
        st = os.lstat(path)
        return LockIdentity(path=path, dev=st.st_dev, ino=st.st_ino, mtimes_ns=(st.st_mtime_ns,))

    # ---- records --------------------------------------------------------------------------------

    def _records(self) -> list[str]:
        try:
            names = os.listdir(self.config_dir)
        except OSError:
            return []
        prefix = HOLDER_RECORD_NAME + "."
        return [
            os.path.join(self.config_dir, n)
            for n in names
            if n == HOLDER_RECORD_NAME or (n.startswith(prefix) and n.endswith(".intent"))
        ]

    def _dead_holder_made(self, st: os.stat_result, path: str) -> bool:
        """Tell whether a record of a dead pid names this very dir at `path`."""
        for record_path in self._records():
            try:
                raw = self.read_record(record_path)
            except Exception:  # refused by the gate (FIFO, symlink, foreign owner...)
                raw = None  # names no lock
            if raw is None:
                continue
            try:
                parsed = parse_record(raw)
            finally:
                if isinstance(raw, bytearray):
                    zero(raw)
            if parsed is None:
                continue
            pid, locks = parsed
            if pid == self.pid or not pid_is_gone(pid):
                continue
            if any(ident.path == path and ident.matches(st) for ident in locks):
                return True
        return False

    def _record_bytes(self) -> bytes:
        locks = [*self.made, *([self._staged] if self._staged is not None else [])]
        body = {"pid": self.pid, "locks": [ident.to_json() for ident in locks]}
        return json.dumps(body, separators=(",", ":")).encode("utf-8")

    def _write_record(self) -> None:
        """Replace our record in one rename, so it never disappears or shows half."""
        assert self._record is not None
        temp = f"{self.record_path}.{self.pid}.{os.urandom(6).hex()}.tmp"
        try:
            write_new(temp, self._record_bytes())
            os.rename(temp, self._record)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def _sweep_leftovers(self) -> None:
        """Holding both locks, remove what dead holders left: records, temp files, staging dirs."""
        spots = [
            (self.config_dir, HOLDER_RECORD_NAME + "."),
            (self.config_dir, LOCK_DIR_NAME + "."),
        ]
        legacy = lock_paths(self.config_dir)[1]
        spots.append((os.path.dirname(legacy), os.path.basename(legacy) + "."))
        for directory, prefix in spots:
            with contextlib.suppress(OSError):
                names = os.listdir(directory)
                for name in names:
                    match = _LEFTOVER.fullmatch(name[len(prefix) - 1 :])
                    if not name.startswith(prefix) or match is None:
                        continue
                    if not pid_is_gone(int(match.group(1))):
                        continue
                    path = os.path.join(directory, name)
                    with contextlib.suppress(OSError):
                        st = os.lstat(path)
                        if st.st_uid != os.getuid():
                            continue
                        if stat.S_ISDIR(st.st_mode):
                            os.rmdir(path)  # an empty staging dir only
                        elif stat.S_ISREG(st.st_mode):
                            os.unlink(path)

    # ---- holding and releasing ------------------------------------------------------------------

    def heartbeat(self) -> None:
        """Touch each held lock dir's mtime, as proper-lockfile does, recording it first."""
        now_ns = time.time_ns()
        kept: list[LockIdentity] = []
        for ident in self.made:
            try:
                fd = os.open(ident.path, _DIR_OPEN_FLAGS)
            except OSError:
                continue  # gone: someone judged it stale; never recreate or touch another's
            try:
                st = os.fstat(fd)
                if ident.matches(st):
                    kept.append(ident)
            finally:
                os.close(fd)
        # A lock dir that is no longer ours is dropped, so release never removes it.
        self.made[:] = [
            LockIdentity(path=i.path, dev=i.dev, ino=i.ino, mtimes_ns=(*i.mtimes_ns[-1:], now_ns))
            for i in kept
        ]
        with contextlib.suppress(OSError):
            self._write_record()  # the mtime about to be set is on record before it is set
        renewed: list[LockIdentity] = []
        for ident in self.made:
            try:
                fd = os.open(ident.path, _DIR_OPEN_FLAGS)
            except OSError:
                continue
            try:
                if ident.matches(os.fstat(fd)):
                    os.utime(fd, ns=(now_ns, now_ns))
                renewed.append(
                    LockIdentity(path=ident.path, dev=ident.dev, ino=ident.ino, mtimes_ns=(now_ns,))
                )
            except OSError:
                renewed.append(ident)
            finally:
                os.close(fd)
        self.made[:] = renewed
        with contextlib.suppress(OSError):
            self._write_record()

    def release(self) -> None:
        """Remove every lock dir this call made (and only those), then its record; never raise."""
        for ident in reversed(self.made):
            _remove_if(ident.path, ident.matches)
        self.made.clear()
        # The result already reached stands and the locks are already free.
        for path in (
            self.intent_path,
            self.record_path if self._record == self.record_path else None,
        ):
            if path is not None:
                with contextlib.suppress(Exception):
                    os.unlink(path)
        self._record = None


async def keep_fresh(locks: RefreshLocks, interval: float = HEARTBEAT_INTERVAL_S) -> None:
    """Heartbeat `locks` every `interval` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        locks.heartbeat()
