"""The 429 backoff of poll_all, row by row, against a real local server answering scripted statuses.

Time moves only through `now`, so each transition is exact and nothing waits.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from accounts_support import (
    NOW,
    UsageServer,
    make_profile,
    usage_body,
)
from agent_accounts.io import PollEntry, PollFailed, PollOk, Profile, poll_all, poll_usage

FIRST, CAP = 300.0, 3600.0


pytestmark = pytest.mark.usefixtures("no_leaks")


class Scripted(UsageServer):
    """Answers each usage request with the next scripted status (200 with a body, else empty)."""

    statuses: list[int]

    async def answer(self, request: web.Request, srv: UsageServer) -> web.StreamResponse:
        status = self.statuses.pop(0) if self.statuses else 200
        if status == 200:
            return web.json_response(usage_body())
        return web.Response(status=status, text=request.headers["authorization"])


@pytest.fixture
async def server() -> AsyncIterator[Scripted]:
    running = Scripted()
    running.statuses = []
    running.handler = running.answer
    async with running:
        yield running


@pytest.fixture
def profile(work: tuple[Profile, str]) -> Profile:
    """conftest's `work` profile, signed in."""
    return work[0]


def backoff_file(profile: Profile) -> Path:
    return Path(profile.config_dir) / "status-cache" / "usage-poll.backoff"


def reading_file(profile: Profile) -> Path:
    return Path(profile.config_dir) / "status-cache" / "sessions" / "usage-poll.json"


async def poll(server: Scripted, profile: Profile, at: float, *statuses: int) -> PollEntry:
    server.statuses[:] = list(statuses)
    [entry] = await poll_all(profiles=[profile], now=at, api_base=server.url)
    return entry


def plant(profile: Profile, data: bytes, mode: int = 0o600) -> None:
    path = backoff_file(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, mode)


def wait_of(until: float, wait: float) -> bytes:
    return json.dumps({"until": until, "wait": wait}).encode()


async def test_first_429_writes_a_five_minute_backoff(server: Scripted, profile: Profile) -> None:
    entry = await poll(server, profile, NOW, 429)
    assert entry.result == PollFailed(failure="http-429")
    assert entry.backoff_until == NOW + FIRST
    assert entry.file is None
    path = backoff_file(profile)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_bytes())["until"] == NOW + FIRST
    assert not reading_file(profile).exists()
    assert not path.name.endswith(".json")
    assert path.parent.name == "status-cache"  # outside the sessions dir


async def test_a_poll_due_while_waiting_sends_no_request(
    server: Scripted, profile: Profile
) -> None:
    await poll(server, profile, NOW, 429)
    for at in (NOW + 1, NOW + FIRST - 0.001):
        entry = await poll(server, profile, at)
        assert entry.result == PollFailed(failure="backoff")
        assert entry.backoff_until == NOW + FIRST
    assert len(server.requests) == 1
    # At the end of the wait the poll is due again.
    entry = await poll(server, profile, NOW + FIRST)
    assert isinstance(entry.result, PollOk)
    assert len(server.requests) == 2


async def test_each_further_429_doubles_the_wait_up_to_an_hour(
    server: Scripted, profile: Profile
) -> None:
    at = NOW
    waits = []
    for _ in range(7):
        entry = await poll(server, profile, at, 429)
        assert entry.result == PollFailed(failure="http-429")
        assert entry.backoff_until is not None
        waits.append(entry.backoff_until - at)
        at = entry.backoff_until + 1  # the next poll after the wait is over
    assert waits == [300, 600, 1200, 2400, 3600, 3600, 3600]
    assert len(server.requests) == 7


async def test_success_removes_the_backoff_file(server: Scripted, profile: Profile) -> None:
    await poll(server, profile, NOW, 429)
    await poll(server, profile, NOW + FIRST + 1, 429)
    entry = await poll(server, profile, NOW + FIRST + 1 + 2 * FIRST)
    assert isinstance(entry.result, PollOk)
    assert entry.backoff_until is None
    assert entry.file == str(reading_file(profile))
    assert not backoff_file(profile).exists()
    # Back to polling: the next 429 starts again at five minutes.
    later = NOW + 10_000
    assert (await poll(server, profile, later, 429)).backoff_until == later + FIRST


async def test_other_failures_keep_the_backoff_state(server: Scripted, profile: Profile) -> None:
    await poll(server, profile, NOW, 429)
    at = NOW + FIRST + 1
    await poll(server, profile, at, 429)  # wait 600
    at += 2 * FIRST + 1
    entry = await poll(server, profile, at, 500)
    assert entry.result == PollFailed(failure="http-500")
    assert entry.backoff_until is None
    assert backoff_file(profile).exists()
    entry = await poll(server, profile, at + 1, 429)
    assert entry.backoff_until == at + 1 + 4 * FIRST  # doubled from 600


UNREADABLE: list[tuple[str, bytes, int]] = [
    ("garbage", b"\x00not json", 0o600),
    ("json-list", b"[1, 2]", 0o600),
    ("missing-keys", b'{"until": 1}', 0o600),
    ("not-numbers", b'{"until": "soon", "wait": "300"}', 0o600),
    ("nan", b'{"until": NaN, "wait": 300}', 0o600),
    ("too-wide", wait_of(NOW + 100, 600), 0o644),
    ("oversize", wait_of(NOW + 100, 600) + b" " * 4096, 0o600),
    ("over-an-hour", wait_of(NOW + CAP + 1, CAP), 0o600),
]


@pytest.mark.parametrize(
    ("data", "mode"), [r[1:] for r in UNREADABLE], ids=[r[0] for r in UNREADABLE]
)
async def test_an_unreadable_or_too_long_backoff_counts_as_none(
    server: Scripted, profile: Profile, data: bytes, mode: int
) -> None:
    plant(profile, data, mode)
    entry = await poll(server, profile, NOW, 429)
    assert len(server.requests) == 1  # polled as if no backoff
    assert entry.backoff_until == NOW + FIRST  # and the 429 starts a fresh one
    assert json.loads(backoff_file(profile).read_bytes())["until"] == NOW + FIRST


async def test_a_backoff_waiting_exactly_an_hour_is_honoured(
    server: Scripted, profile: Profile
) -> None:
    plant(profile, wait_of(NOW + CAP, CAP))
    entry = await poll(server, profile, NOW)
    assert entry.result == PollFailed(failure="backoff")
    assert entry.backoff_until == NOW + CAP
    assert server.requests == []


async def test_a_backoff_file_through_a_symlink_counts_as_none(
    server: Scripted, profile: Profile, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.backoff"
    target.write_bytes(wait_of(NOW + 1000, 1200))
    target.chmod(0o600)
    backoff_file(profile).parent.mkdir(parents=True)
    backoff_file(profile).symlink_to(target)
    entry = await poll(server, profile, NOW)
    assert isinstance(entry.result, PollOk)
    assert target.read_bytes() == wait_of(NOW + 1000, 1200)


async def test_a_backoff_file_of_another_owner_counts_as_none(
    server: Scripted, profile: Profile
) -> None:
    plant(profile, wait_of(NOW + 1000, 1200))
    if os.getuid() == 0:
        os.chown(backoff_file(profile), 65534, -1)  # a spare uid: nobody
        entry = await poll(server, profile, NOW)
        assert isinstance(entry.result, PollOk)
        assert len(server.requests) == 1
    else:  # without root, only the uid parameter makes the file foreign (and the login too)
        [entry] = await poll_all(
            profiles=[profile], now=NOW, uid=os.getuid() + 1, api_base=server.url
        )
        assert entry.result == PollFailed(failure="refused", reason="foreign-owner")


async def test_a_fifo_backoff_file_does_not_hang_the_poll(
    server: Scripted, profile: Profile
) -> None:
    backoff_file(profile).parent.mkdir(parents=True)
    os.mkfifo(backoff_file(profile), 0o600)
    opener = threading.Timer(
        20, lambda: os.open(backoff_file(profile), os.O_WRONLY | os.O_NONBLOCK)
    )
    opener.daemon = True  # a safety net only: the gate must not need it
    entry = await poll(server, profile, NOW)
    opener.cancel()
    assert isinstance(entry.result, PollOk)


async def test_an_unwritable_backoff_file_is_skipped(server: Scripted, profile: Profile) -> None:
    backoff_file(profile).mkdir(parents=True)  # the name is taken by a directory
    entry = await poll(server, profile, NOW, 429)
    assert entry.result == PollFailed(failure="http-429")
    assert entry.write_error is None
    assert backoff_file(profile).is_dir()
    # Nothing was stored, so the next poll is not held back.
    entry = await poll(server, profile, NOW + 10)
    assert isinstance(entry.result, PollOk)
    assert len(server.requests) == 2


async def test_an_unwritable_status_cache_is_skipped(server: Scripted, profile: Profile) -> None:
    (Path(profile.config_dir) / "status-cache").write_bytes(b"")
    entry = await poll(server, profile, NOW, 429)
    assert entry.result == PollFailed(failure="http-429")
    assert (await poll(server, profile, NOW + 10, 429)).result == PollFailed(failure="http-429")
    assert len(server.requests) == 2


async def test_backoff_is_per_profile(server: Scripted, tmp_path: Path) -> None:
    root = tmp_path / "home" / ".agent-profiles"
    slow, _ = make_profile(root, "slow")
    fine, _ = make_profile(root, "fine")
    plant(slow, wait_of(NOW + 100, FIRST))
    entries = await poll_all(profiles=[slow, fine], now=NOW, api_base=server.url)
    assert entries[0].result == PollFailed(failure="backoff")
    assert isinstance(entries[1].result, PollOk)
    assert len(server.requests) == 1
    assert not backoff_file(fine).exists()


async def test_poll_usage_keeps_no_state_and_never_backs_off(
    server: Scripted, profile: Profile
) -> None:
    plant(profile, wait_of(NOW + 100, FIRST))
    server.statuses[:] = [429]
    assert await poll_usage(profile, now=NOW, api_base=server.url) == PollFailed(failure="http-429")
    assert isinstance(await poll_usage(profile, now=NOW, api_base=server.url), PollOk)
    assert len(server.requests) == 2
    assert backoff_file(profile).read_bytes() == wait_of(NOW + 100, FIRST)
    assert not reading_file(profile).exists()
