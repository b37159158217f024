"""Per-device sessions: the gate's record of each signed-in browser, in one small file.

A session cookie carries an id; it is honoured only while the sessions file lists that id (an
allowlist: a lost or emptied file signs everyone out, never in). Each entry says when the device
signed in, when it was last seen, its user agent and its peer address. `revoke_session` (the
`local-daemon sessions revoke ID` command) removes one entry, which signs out that device alone;
rotating the token file ends them all (their MACs fail, and the file's `generation`, a value
derived from the secret, no longer matches, so its entries count as none).

The file is JSON, at most `MAX_SESSIONS_FILE_BYTES`, mode 0600, written whole to a temp file and
renamed into place relative to its directory's fd, under an `flock` on `<file>.lock` so the daemon
and the CLI never lose each other's changes (every write re-reads the file first). It is read as
untrusted input through `read_safe_file`: a symlink, another owner's file, a file others can read,
a FIFO or malformed JSON is refused (`SessionFileError`), and a refused file honours no cookie.

Last-seen times are kept in memory on every request and written at most once a minute
(`LAST_SEEN_WRITE_INTERVAL`) whatever the traffic, so a busy browser costs no disk writes.

On a running event loop the writes (each an `fsync`, under a lock another process may hold) go
to the loop's default executor: a last-seen flush and the clearing of a rotated secret's
sessions are handed off without the request waiting (at most one flush in flight), and the
gate awaits a sign-in's or sign-out's write in a worker thread. Only the per-request `lstat`
(and a re-read when the file changed) stays on the loop. Without a running loop they run inline.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import secrets
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._errors import SessionFileError
from ._statefile import (
    ReReadOnChange,
    Signature,
    UnsafeFileError,
    flock_within,
    open_lock_file,
    parse_json_document,
    read_safe_file,
    stat_signature,
    write_atomic,
)

__all__ = [
    "LAST_SEEN_WRITE_INTERVAL",
    "MAX_SESSIONS",
    "MAX_SESSIONS_FILE_BYTES",
    "MAX_USER_AGENT_CHARS",
    "SESSIONS_FILE_NAME",
    "SessionInfo",
    "SessionStore",
    "clean_text",
    "list_sessions",
    "new_session_id",
    "revoke_session",
    "sessions_file_beside",
]

SESSIONS_FILE_NAME = "sessions.json"
MAX_SESSIONS = 256
MAX_USER_AGENT_CHARS = 256
_MAX_PEER_CHARS = 64
# 256 entries of at most ~4 KB each (a 256-character user agent is up to 1536 bytes as JSON
# `\uXXXX` escapes, a client id up to 2048); anything this large is not the daemon's file.
MAX_SESSIONS_FILE_BYTES = 2 * 1024 * 1024
LAST_SEEN_WRITE_INTERVAL = 60.0
SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]{22}", re.ASCII)
MAX_CLIENT_ID_CHARS = 2048
_MAX_NAME_CHARS = 128
_CLIENT_KEYS = ("client_id", "client_name", "refresh_sha256")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}", re.ASCII)
_FORMAT = 1
_LOCK_TRIES = 50  # with _LOCK_PAUSE: half a second for the daemon, then it gives up
_LOCK_PAUSE = 0.01
_log = logging.getLogger("local_daemon")


def new_session_id() -> str:
    """Return a fresh random session id: 16 bytes as 22 base64url characters, never starting
    with `-` (so `sessions revoke ID` never reads it as an option)."""
    sid = secrets.token_urlsafe(16)
    return sid if sid[0] != "-" else "A" + sid[1:]


# Control characters (C0, DEL, C1: terminal escapes), format characters (bidi overrides,
# zero-width), lone surrogates (undecodable header bytes, which no terminal can print) and line
# and paragraph separators.
_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def clean_text(text: str, limit: int) -> str:
    """Return `text` without control, format or unpaired surrogate characters, capped."""
    kept = "".join(c for c in text[: limit * 4] if unicodedata.category(c) not in _UNSHOWN)
    return kept[:limit]


def sessions_file_beside(token_file: str | os.PathLike[str]) -> Path:
    """Return where a gate keeps its sessions when not told: `<token file>.sessions.json`."""
    path = Path(token_file)
    return path.with_name(f"{path.name}.{SESSIONS_FILE_NAME}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """One signed-in device: its session id, sign-in and last-seen times (epoch seconds), user
    agent (untrusted: control characters removed, capped) and peer address."""

    id: str
    issued_at: int
    first_seen: int
    last_seen: int
    user_agent: str
    peer: str | None
    # An MCP client's sign-in (OAuth): the client's id and name, and the SHA-256 (hex) of its
    # current refresh token, which is never shown (`to_json` leaves it out).
    client_id: str | None = None
    client_name: str | None = None
    refresh_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the entry as `sessions list --json` spells it (the file adds the hash)."""
        shown: dict[str, Any] = {
            "id": self.id,
            "issued_at": self.issued_at,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "user_agent": self.user_agent,
            "peer": self.peer,
        }
        if self.client_id is not None:
            shown["client_id"] = self.client_id
            shown["client_name"] = self.client_name
        return shown

    def _file_json(self) -> dict[str, Any]:
        entry = self.to_json()
        if self.refresh_sha256 is not None:
            entry["refresh_sha256"] = self.refresh_sha256
        return entry


@dataclass(frozen=True, slots=True)
class _Snapshot:
    generation: str | None
    sessions: dict[str, SessionInfo]


_EMPTY = _Snapshot(None, {})


def _bad(path: Path, what: str, problem: str) -> SessionFileError:
    return SessionFileError(f"sessions file {path} {what}", problem=problem)


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10**12:
        return None
    return value


def _entry(raw: object) -> SessionInfo | None:
    if not isinstance(raw, dict):
        return None
    sid, ua, peer = raw.get("id"), raw.get("user_agent"), raw.get("peer")
    times = [_int(raw.get(key)) for key in ("issued_at", "first_seen", "last_seen")]
    if not isinstance(sid, str) or not SESSION_ID_RE.fullmatch(sid) or not isinstance(ua, str):
        return None
    if peer is not None and not isinstance(peer, str):
        return None
    issued, first, last = times
    if issued is None or first is None or last is None:
        return None
    client_id, client_name, refresh = (raw.get(k) for k in _CLIENT_KEYS)
    if not all(v is None or isinstance(v, str) for v in (client_id, client_name, refresh)):
        return None
    if refresh is not None and not _SHA256_HEX.fullmatch(refresh):
        return None
    return SessionInfo(
        id=sid,
        issued_at=issued,
        first_seen=first,
        last_seen=last,
        user_agent=clean_text(ua, MAX_USER_AGENT_CHARS),
        peer=None if peer is None else clean_text(peer, _MAX_PEER_CHARS),
        client_id=None if client_id is None else client_id[:MAX_CLIENT_ID_CHARS],
        client_name=None if client_name is None else clean_text(client_name, _MAX_NAME_CHARS),
        refresh_sha256=refresh,
    )


def _parse(path: Path, data: bytes) -> _Snapshot:
    raw = parse_json_document(data)
    if not isinstance(raw, dict) or raw.get("format") != _FORMAT:
        raise _bad(path, "is not a sessions file of this daemon", "malformed")
    generation, entries = raw.get("generation"), raw.get("sessions")
    if not isinstance(generation, str) or not isinstance(entries, list):
        raise _bad(path, "is not a sessions file of this daemon", "malformed")
    sessions: dict[str, SessionInfo] = {}
    for item in entries[:MAX_SESSIONS]:
        entry = _entry(item)
        if entry is None:
            raise _bad(path, "holds a malformed entry", "malformed")
        sessions[entry.id] = entry
    return _Snapshot(generation, sessions)


def _read(path: Path) -> tuple[_Snapshot, Signature | None]:
    """Read and check the file: its snapshot and the signature of what was read."""
    read = read_safe_file(path, max_bytes=MAX_SESSIONS_FILE_BYTES, forbidden_mode=0o077)
    if isinstance(read, UnsafeFileError):
        if read.problem == "missing":
            return _EMPTY, None
        raise _bad(path, read.what, read.problem)
    return _parse(path, read.data), stat_signature(read.stat)


def _write(path: Path, snapshot: _Snapshot) -> None:
    """Replace the file atomically (`write_atomic`)."""
    kept = sorted(snapshot.sessions.values(), key=lambda s: s.last_seen, reverse=True)
    document = {
        "format": _FORMAT,
        "generation": snapshot.generation,
        "sessions": [s._file_json() for s in kept[:MAX_SESSIONS]],
    }
    write_atomic(path, (json.dumps(document, indent=1) + "\n").encode("utf-8"))


def _lock_and_run(path: Path, tries: int, run: Callable[[], None]) -> None:
    """Run `run` holding the exclusive `flock` on `<file>.lock`, trying `tries` times
    `_LOCK_PAUSE` apart; `BlockingIOError` when another holder kept it."""
    fd = open_lock_file(path.with_name(f"{path.name}.lock"))
    try:
        deadline = time.monotonic() + (tries - 1) * _LOCK_PAUSE
        if not flock_within(fd, deadline=deadline, pause=_LOCK_PAUSE):
            raise BlockingIOError
        run()
    finally:
        os.close(fd)  # releases the lock


def _update(
    path: Path,
    change: Callable[[_Snapshot], _Snapshot | None],
    *,
    tries: int = _LOCK_TRIES,
    replace_refused: bool = False,
) -> None:
    """Read the file under the lock, apply `change` (None: nothing to write), write it back.

    Any failure is `SessionFileError`. A file refused as unsafe or malformed is replaced only
    with `replace_refused` (a sign-in, which must not be locked out by a file it can fix: its
    entries honour no cookie anyway); a revocation or a last-seen update leaves it alone.
    """

    def read_change_write() -> None:
        try:
            current = _read(path)[0]
        except SessionFileError as exc:
            if not replace_refused or exc.problem == "unreadable":
                raise
            _log.warning("gate: replacing a refused sessions file: %s", exc)
            current = _EMPTY
        changed = change(current)
        if changed is not None:
            _write(path, changed)

    failed: OSError | None = None
    try:
        _lock_and_run(path, tries, read_change_write)
    except BlockingIOError:
        raise _bad(path, "is locked by another process", "locked") from None
    except OSError as exc:
        failed = exc
    if failed is not None:
        raise _bad(path, f"cannot be written ({failed.strerror})", "unwritable")


class SessionStore:
    """The daemon's view of its sessions file: cached by the file's stat, re-read when it changes.

    `is_active` runs on every request with a session cookie: one `lstat`, plus a read only when
    the file changed (a sign-in, a revocation, another daemon's write).
    """

    __slots__ = ("_clock", "_failure", "_file", "_flushing", "_last_flush", "_path", "_seen")

    def __init__(self, path: str | os.PathLike[str], *, clock: Callable[[], float]) -> None:
        self._path = Path(path)
        self._clock = clock
        self._file = ReReadOnChange(self._path, _load)
        self._failure: str | None = None
        self._seen: dict[str, int] = {}
        self._last_flush = float("-inf")
        self._flushing: Any = None  # the asyncio future of the last-seen write in flight

    @property
    def path(self) -> Path:
        """Return the sessions file's path."""
        return self._path

    def _current(self) -> _Snapshot:
        reading = self._file.current()
        if isinstance(reading, SessionFileError):
            if str(reading) != self._failure:
                self._failure = str(reading)
                _log.error("gate: no session cookie is honoured until this is fixed: %s", reading)
            return _EMPTY
        if self._failure is not None:
            self._failure = None
            _log.info("gate: the sessions file passes its checks again")
        return reading

    def is_active(self, session_id: str, generation: str) -> bool:
        """True while the file (of this secret's generation) lists `session_id`; notes the visit."""
        snapshot = self._current()
        if snapshot.generation != generation or session_id not in snapshot.sessions:
            return False
        now = int(self._clock())
        self._seen[session_id] = now
        if now - self._last_flush >= LAST_SEEN_WRITE_INTERVAL and self._flushing is None:
            stale = snapshot.sessions[session_id].last_seen
            if now - stale >= LAST_SEEN_WRITE_INTERVAL:
                self._flush_seen(generation, now)
        return True

    def _flush_seen(self, generation: str, now: int) -> None:
        self._last_flush = now  # also on failure: a full disk is not retried on every request
        seen, self._seen = self._seen, {}

        def change(current: _Snapshot) -> _Snapshot | None:
            if current.generation != generation:
                return None
            sessions = dict(current.sessions)
            for sid, at in seen.items():
                entry = sessions.get(sid)  # a session revoked meanwhile stays revoked
                if entry is not None and at > entry.last_seen:
                    sessions[sid] = replace(entry, last_seen=at)
            return _Snapshot(generation, sessions)

        future = _update_in_background(self._path, change, "last-seen times not written")
        if future is not None:
            self._flushing = future
            future.add_done_callback(self._flushed)

    def _flushed(self, future: Any) -> None:
        self._flushing = None
        _log_unexpected(future)

    async def wait_for_writes(self) -> None:
        """Wait until the last-seen write in flight (if any) has finished (tests, shutdown)."""
        if self._flushing is not None:
            import asyncio

            await asyncio.shield(self._flushing)

    def forget_other_generations(self, generation: str) -> None:
        """Empty the file when it lists sessions of another secret (the token was rotated).

        Best effort: a failure is logged, and such entries honour no cookie anyway.
        """
        current = self._current()
        if current.generation in (None, generation) or not current.sessions:
            return

        def change(current: _Snapshot) -> _Snapshot | None:
            if current.generation == generation or not current.sessions:
                return None
            return _Snapshot(generation, {})

        future = _update_in_background(self._path, change, "sessions of the old token not cleared")
        if future is not None:
            future.add_done_callback(_log_unexpected)

    def add(self, info: SessionInfo, generation: str, *, lifetime: int) -> None:
        """Record a new session, dropping those older than `lifetime` seconds (and, past
        `MAX_SESSIONS`, the least recently seen); raise `SessionFileError` when it cannot."""

        def change(current: _Snapshot) -> _Snapshot:
            keep = current.sessions if current.generation == generation else {}
            oldest = info.issued_at - lifetime
            sessions = {sid: s for sid, s in keep.items() if s.issued_at > oldest}
            sessions[info.id] = info
            return _Snapshot(generation, sessions)

        _update(self._path, change, replace_refused=True)

    def active(self, session_id: str, generation: str) -> SessionInfo | None:
        """Return the session while the file (of this secret's generation) lists it; notes the
        visit as `is_active` does."""
        if not self.is_active(session_id, generation):
            return None
        return self._current().sessions.get(session_id)

    def swap_refresh(
        self, session_id: str, generation: str, presented: str, new: str
    ) -> SessionInfo | None:
        """Replace the session's refresh hash `presented` with `new` (a rotation); the session
        afterwards, or None. A presented hash that is not the current one is a reused refresh
        token: the session ends. Raise `SessionFileError` when the file cannot be written."""
        found: list[SessionInfo] = []

        def change(current: _Snapshot) -> _Snapshot | None:
            entry = current.sessions.get(session_id)
            if current.generation != generation or entry is None or entry.refresh_sha256 is None:
                return None
            sessions = dict(current.sessions)
            if not hmac.compare_digest(entry.refresh_sha256, presented):
                del sessions[session_id]
            else:
                found.append(replace(entry, refresh_sha256=new))
                sessions[session_id] = found[0]
            return _Snapshot(generation, sessions)

        _update(self._path, change)
        return found[0] if found else None

    def remove(self, session_id: str, *, tries: int = _LOCK_TRIES) -> bool:
        """End one session; true when the file listed it. Raise `SessionFileError` on failure."""
        found: list[bool] = []

        def change(current: _Snapshot) -> _Snapshot | None:
            if session_id not in current.sessions:
                return None
            found.append(True)
            sessions = {sid: s for sid, s in current.sessions.items() if sid != session_id}
            return _Snapshot(current.generation, sessions)

        _update(self._path, change, tries=tries)
        return bool(found)


def _load(path: Path) -> tuple[_Snapshot | SessionFileError, Signature | None]:
    """Read the file for the store's cache; a refused file is read again at the next look."""
    try:
        return _read(path)
    except SessionFileError as exc:
        return exc, None


def _update_in_background(
    path: Path, change: Callable[[_Snapshot], _Snapshot | None], failed: str
) -> Any:
    """Best effort `_update` with one try at the lock (`failed` logged when it cannot), on a
    running event loop in its default executor (the asyncio future is returned); without one,
    here (None is returned)."""

    def write() -> None:
        try:
            _update(path, change, tries=1)
        except SessionFileError as exc:
            _log.warning("gate: %s: %s", failed, exc)

    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        write()
        return None
    return loop.run_in_executor(None, write)


def _log_unexpected(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        exc = future.exception()
        _log.error("gate: a sessions file write failed: %s", type(exc).__name__)


def list_sessions(sessions_file: str | os.PathLike[str]) -> list[SessionInfo]:
    """Return the signed-in devices the sessions file lists, most recently seen first.

    A missing file lists none; an unsafe or malformed one raises `SessionFileError`.
    """
    snapshot = _read(Path(sessions_file))[0]
    return sorted(snapshot.sessions.values(), key=lambda s: s.last_seen, reverse=True)


def revoke_session(sessions_file: str | os.PathLike[str], session_id: str) -> bool:
    """Sign out one device: remove its session; true when the file listed it.

    Its cookie gets 401 from the daemon's next request on; every other session keeps working.
    """
    if not SESSION_ID_RE.fullmatch(session_id):
        return False
    path = Path(sessions_file)
    if not os.path.lexists(path):
        return False
    # The CLI may wait longer for the lock than the daemon does (5 s).
    return SessionStore(path, clock=time.time).remove(session_id, tries=500)
