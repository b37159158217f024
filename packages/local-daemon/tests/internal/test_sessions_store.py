"""The sessions store's own invariants: the size cap holds for a full file of the longest
agents, past `MAX_SESSIONS` the least recently seen goes, and lock waits and last-seen writes
happen off the event loop, one at a time."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from daemon_raw_http import raw_request, serve_app
from gate_support import build_test_app, whoami_headers
from local_daemon import (
    DaemonAuth,
    _sessions,
    create_daemon_auth,
    ensure_token_file,
    list_sessions,
    mint_login_code,
)
from local_daemon._sessions import LAST_SEEN_WRITE_INTERVAL, MAX_USER_AGENT_CHARS

T0 = 1_800_000_000.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return ensure_token_file(tmp_path / "token")


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def sessions_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "sessions.json"


@pytest.fixture
def auth(token_file: Path, clock: Clock, sessions_file: Path) -> DaemonAuth:
    sessions_file.parent.mkdir(mode=0o700)
    return create_daemon_auth(token_file, clock=clock, sessions_file=sessions_file)


def _id(cookie: str) -> str:
    return cookie.split(".")[2]


def _ino(path: Path) -> int:
    return path.stat().st_ino


def _held_lock_fd(sessions_file: Path) -> int:
    fd = os.open(f"{sessions_file}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


@pytest.fixture
async def port(token_file: Path, sessions_file: Path) -> AsyncIterator[int]:
    sessions_file.parent.mkdir(mode=0o700)
    real_clock = create_daemon_auth(token_file, sessions_file=sessions_file)
    async with serve_app(build_test_app(real_clock)) as bound:
        yield bound


async def _sign_in(port: int, token_file: Path, agent: str) -> str:
    """Sign in over a raw socket, the user agent sent byte for byte (latin-1 on the wire)."""
    body = json.dumps({"code": mint_login_code(token_file)}).encode()
    resp = await raw_request(
        port,
        "POST",
        "/auth/login",
        headers={"Content-Type": "application/json", "x-local-client": "t", "User-Agent": agent},
        body=body,
    )
    assert resp.status == 200
    return resp.headers["Set-Cookie"].split(";", 1)[0].split("=", 1)[1]


class TestCap:
    def test_a_full_file_of_the_longest_agents_stays_under_the_size_cap(
        self, auth: DaemonAuth, sessions_file: Path
    ) -> None:
        cookie = auth.issue_session_cookie()
        (mine,) = list_sessions(sessions_file)
        # Non-ASCII agents are written as \uXXXX escapes: six bytes per character.
        longest = [
            _sessions.SessionInfo(
                id=f"{n:022d}",
                issued_at=int(T0),
                first_seen=int(T0),
                last_seen=int(T0) - 1,
                user_agent="\u4e2d" * MAX_USER_AGENT_CHARS,
                peer="2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
            )
            for n in range(_sessions.MAX_SESSIONS - 1)
        ]
        generation = json.loads(sessions_file.read_text())["generation"]
        full = {s.id: s for s in [mine, *longest]}
        _sessions._write(sessions_file, _sessions._Snapshot(generation, full))
        assert sessions_file.stat().st_size <= _sessions.MAX_SESSIONS_FILE_BYTES
        assert len(list_sessions(sessions_file)) == _sessions.MAX_SESSIONS
        assert auth.verify_session_cookie(cookie) is not None

    def test_past_the_cap_the_least_recently_seen_goes(
        self, auth: DaemonAuth, sessions_file: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(_sessions, "MAX_SESSIONS", 3)
        cookies = []
        for step in range(4):
            clock.now = T0 + step
            cookies.append(auth.issue_session_cookie())
        listed = [s.id for s in list_sessions(sessions_file)]
        assert listed == [_id(c) for c in reversed(cookies[1:])]


def _report_lock_waits(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Return an event set when the daemon first finds the sessions lock held."""
    waiting = threading.Event()
    real_flock = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        try:
            real_flock(fd, operation)
        except BlockingIOError:
            waiting.set()
            raise

    monkeypatch.setattr(fcntl, "flock", flock)
    return waiting


class TestOffTheLoop:
    async def test_a_sign_in_waiting_for_the_lock_blocks_no_other_request(
        self, port: int, token_file: Path, sessions_file: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Another process holds the lock: the sign-in waits for it (here up to 50 * 0.2 s) in a
        # worker thread while the loop answers. Waited for on the loop, /health would be answered
        # only once that sign-in had given up (a 503), so `sign_in` would be done by then.
        monkeypatch.setattr(_sessions, "_LOCK_PAUSE", 0.2)
        waiting = _report_lock_waits(monkeypatch)
        bearer = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
        fd = _held_lock_fd(sessions_file)
        try:
            sign_in = asyncio.create_task(_sign_in(port, token_file, "Phone/1"))
            assert await asyncio.to_thread(waiting.wait, 30)
            resp = await raw_request(port, "GET", "/health", headers=bearer)
            assert resp.status == 200
            assert not sign_in.done()  # still waiting for the lock this test holds
        finally:
            os.close(fd)
        cookie = await sign_in
        assert [s.id for s in list_sessions(sessions_file)] == [_id(cookie)]
        resp = await raw_request(
            port, "POST", "/rpc/whoami", headers=whoami_headers(cookie), body=b"{}"
        )
        assert resp.status == 200

    async def test_a_last_seen_write_is_handed_off_one_at_a_time(
        self, auth: DaemonAuth, sessions_file: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        cookie = auth.issue_session_cookie()
        started, release = threading.Event(), threading.Event()
        writes: list[int] = []
        real_update = _sessions._update

        def update(*args: object, **kwargs: object) -> None:
            writes.append(1)
            started.set()
            assert release.wait(30)
            real_update(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(_sessions, "_update", update)
        clock.now = T0 + LAST_SEEN_WRITE_INTERVAL
        # Inline, this would wait for `release`, which is set only after it returns.
        assert auth.verify_session_cookie(cookie) is not None
        assert await asyncio.to_thread(started.wait, 30)
        clock.now = T0 + 3 * LAST_SEEN_WRITE_INTERVAL
        assert auth.verify_session_cookie(cookie) is not None  # due, but one is in flight
        release.set()
        await auth._sessions.wait_for_writes()
        assert len(writes) == 1
        (entry,) = list_sessions(sessions_file)
        assert entry.last_seen == int(T0 + LAST_SEEN_WRITE_INTERVAL)
        assert auth.verify_session_cookie(cookie) is not None  # the next one writes again
        await auth._sessions.wait_for_writes()
        assert len(writes) == 2
        (entry,) = list_sessions(sessions_file)
        assert entry.last_seen == int(T0 + 3 * LAST_SEEN_WRITE_INTERVAL)
