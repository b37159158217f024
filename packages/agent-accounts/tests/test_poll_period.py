"""`poll --write --period S`: requests spread over S at stable phases, one at a time, at least a
second apart on the wire; a session's fresh reading is the account's truth; Retry-After per
profile; two runs at once poll each account once. The real CLI against a real local server."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import pytest
from aiohttp import web

from accounts_cli_support import Home, plant_reading
from accounts_support import UsageServer, usage_body


def token_of(config: Path) -> str:
    import json

    return str(json.loads((config / ".credentials.json").read_text())["agentOauth"]["accessToken"])


def polled(server: UsageServer, config: Path) -> int:
    token = token_of(config)
    return sum(r["authorization"] == f"Bearer {token}" for r in server.requests)


@pytest.mark.slow  # waits for the phases, up to the period and a second per profile
async def test_requests_are_spread_one_at_a_time_at_least_a_second_apart(
    home: Home, server: UsageServer
) -> None:
    arrivals: list[float] = []

    async def stamped(request: web.Request, _: UsageServer) -> web.StreamResponse:
        arrivals.append(time.monotonic())
        return web.json_response(usage_body())

    server.handler = stamped
    configs = [home.add(name) for name in ("a", "b", "c")]
    run = await home.run("poll", "--write", "--period", "2")
    assert (run.code, run.err) == (0, "")
    assert run.lines == [f"{n}: five_hour 23%, seven_day 41.5%" for n in ("a", "b", "c")]
    assert [polled(server, c) for c in configs] == [1, 1, 1]
    # Each request starts at least MIN_POLL_GAP_S after the previous answer, so on the wire no
    # two are closer than that (a bound the CLI enforces, not a speed).
    for first, second in itertools.pairwise(sorted(arrivals)):
        assert second - first >= 1.0
    for config in configs:
        assert (config / "status-cache" / "sessions" / "usage-poll.json").exists()


async def test_a_fresh_session_reading_is_the_truth_while_the_poll_is_under_ten_minutes_old(
    home: Home, server: UsageServer
) -> None:
    now = time.time()
    busy = home.add("busy")  # a session reported 10 s ago; the poller 5 minutes ago
    plant_reading(busy, "usage-poll", now - 300, five_hour=1, seven_day=2, seven_day_opus=3)
    plant_reading(busy, "a-session", now - 10, five_hour=12, seven_day=30)
    old = home.add("old")  # the same, but the poller's per-model window is 11 minutes old
    plant_reading(old, "usage-poll", now - 660, five_hour=1, seven_day=2, seven_day_opus=3)
    plant_reading(old, "a-session", now - 10, five_hour=12, seven_day=30)
    idle = home.add("idle")  # no session: polled each period
    plant_reading(idle, "usage-poll", now - 300, five_hour=1, seven_day=2, seven_day_opus=3)
    first = home.add("first")  # never polled: what the poll writes is unknown, so it polls
    plant_reading(first, "a-session", now - 10, five_hour=12, seven_day=30)
    run = await home.run("poll", "--write", "--period", "1", "--max-age", "60")
    assert (run.code, run.err) == (0, "")
    assert run.lines[0].startswith("busy: five_hour 12%, seven_day 30% (")
    assert run.lines[0].endswith("s old, not polled)")
    assert run.lines[1:] == [
        f"{n}: five_hour 23%, seven_day 41.5%" for n in ("first", "idle", "old")
    ]
    assert [polled(server, c) for c in (busy, first, idle, old)] == [0, 1, 1, 1]


async def test_without_usage_poll_json_windows_a_session_reading_alone_skips_nothing(
    home: Home, server: UsageServer
) -> None:
    # The poller's last reading carried only the session windows and is 2 minutes old: a
    # session's newer reading stands for it, as long as it is younger than the period.
    now = time.time()
    both = home.add("both")
    plant_reading(both, "usage-poll", now - 120, five_hour=1, seven_day=2)
    plant_reading(both, "s", now - 70, five_hour=5, seven_day=6)
    run = await home.run("poll", "--write", "--period", "1", "--max-age", "60")
    assert run.lines == ["both: five_hour 23%, seven_day 41.5%"]  # 70 s is older than 60
    assert polled(server, both) == 1
    plant_reading(both, "s", time.time() + 5, five_hour=5, seven_day=6)  # newer than the poll's
    run = await home.run("poll", "--write", "--period", "1", "--max-age", "60")
    assert run.lines[0].startswith("both: five_hour 5%, seven_day 6% (")
    assert polled(server, both) == 1


async def test_retry_after_holds_back_only_its_own_profile(home: Home, server: UsageServer) -> None:
    limited = home.add("limited")
    other = home.add("other")
    limited_token = token_of(limited)

    async def per_profile(request: web.Request, _: UsageServer) -> web.StreamResponse:
        if request.headers["authorization"] == f"Bearer {limited_token}":
            return web.Response(status=429, headers={"Retry-After": "1200"})
        return web.json_response(usage_body())

    server.handler = per_profile
    started = time.time()
    run = await home.run("poll", "--write", "--period", "1", "--max-age", "60")
    assert run.code == 1
    assert run.err == "account-cli: limited: poll failed: http-429\n"
    run = await home.run("poll", "--write", "--period", "1", "--max-age", "60")
    assert run.code == 0
    skipped = run.lines[0]
    assert skipped.startswith("limited: rate limited, skipped until ")
    until = time.mktime(time.strptime(skipped.rsplit(" ", 1)[1], "%Y-%m-%dT%H:%M:%SZ"))
    assert abs(until - time.timezone - (started + 1200)) < 120
    # `other`'s reading of the first run is younger than --max-age: the second run skips it.
    assert run.lines[1].startswith("other: five_hour 23%, seven_day 41.5% (")
    assert (polled(server, limited), polled(server, other)) == (1, 1)


async def test_two_runs_at_once_poll_each_account_once(home: Home, server: UsageServer) -> None:
    async def slow_answer(request: web.Request, _: UsageServer) -> web.StreamResponse:
        await asyncio.sleep(0.3)  # the first run still holds the profile when the second comes
        return web.json_response(usage_body())

    server.handler = slow_answer
    configs = [home.add(name) for name in ("a", "b")]
    for config in configs:  # what the poll writes is known: a fresh reading may skip it
        plant_reading(config, "usage-poll", time.time() - 400, five_hour=1, seven_day=2)
    one, two = await asyncio.gather(
        home.run("poll", "--write", "--period", "1", "--max-age", "60"),
        home.run("poll", "--write", "--period", "1", "--max-age", "60"),
    )
    assert (one.code, two.code, one.err, two.err) == (0, 0, "", "")
    assert [polled(server, c) for c in configs] == [1, 1]
    lines = sorted(one.lines + two.lines)
    assert [line.endswith("not polled)") for line in lines] == [False, True, False, True]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--period", "150"], "--period needs --write"),
        (["--write", "--period", "0"], "argument --period: not a number of seconds"),
        (["--write", "--period", "-3"], "argument --period: not a number of seconds"),
        (["--write", "--period", "nan"], "argument --period: not a number of seconds"),
        (["--write", "--period", "86401"], "argument --period: not a number of seconds"),
        (["--write", "--period", "1", "--period", "2"], "argument --period: given twice"),
    ],
)
async def test_period_usage_errors_exit_64(home: Home, args: list[str], problem: str) -> None:
    run = await home.run("poll", *args)
    assert (run.code, run.out) == (64, "")
    assert run.err.startswith(f"account-cli: {problem}")
