"""Asking the endpoint less: `poll --max-age` skips a profile with a fresh reading (a status-line
session's included), and a 429's `Retry-After` lengthens the backoff (capped at the hour)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from aiohttp import web

from accounts_cli_support import Home, plant_reading
from accounts_support import UsageServer, account_cli, make_profile
from agent_accounts.io import poll_all

DATA = Path(__file__).resolve().parent / "data"


# ---- poll --max-age ------------------------------------------------------------------------------


async def test_a_fresh_reading_skips_the_request(home: Home, server: UsageServer) -> None:
    fresh = home.add("fresh")
    stale = home.add("stale")
    home.add("none")
    # The poller wrote these windows before; a session's newer reading carries them all.
    plant_reading(fresh, "usage-poll", time.time() - 900, five_hour=1.0, seven_day=2.0)
    plant_reading(fresh, "a-session", time.time() - 5, five_hour=12.0, seven_day=30.0)
    plant_reading(stale, "usage-poll", time.time() - 900, five_hour=1.0, seven_day=2.0)
    run = await home.run("poll", "--write", "--max-age", "120")
    assert (run.code, run.err) == (0, "")
    assert run.lines[0].startswith("fresh: five_hour 12%, seven_day 30% (")
    assert run.lines[0].endswith("s old, not polled)")
    assert run.lines[1:] == [
        "none: five_hour 23%, seven_day 41.5%",
        "stale: five_hour 23%, seven_day 41.5%",
    ]
    assert len(server.requests) == 2
    # Without the bound every profile is asked.
    run = await home.run("poll")
    assert len(server.requests) == 5


async def test_a_reading_from_the_future_is_not_fresh(home: Home, server: UsageServer) -> None:
    work = home.add("work")
    plant_reading(work, "skewed", time.time() + 3600, five_hour=12.0, seven_day=30.0)
    run = await home.run("poll", "--max-age", "120")
    assert run.lines == ["work: five_hour 23%, seven_day 41.5%"]
    assert len(server.requests) == 1


async def test_a_statusline_tee_reading_keeps_the_timer_from_asking(
    home: Home, server: UsageServer
) -> None:
    default = home.add(".agent")
    plant_reading(default, "usage-poll", time.time() - 900, five_hour=1.0, seven_day=2.0)
    env = home.env()
    tee = subprocess.run(
        [account_cli(), "statusline-tee", "--then", "true"],
        input=(DATA / "statusline_payload.json").read_bytes(),
        env=env,
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert tee.stderr == b""
    assert (default / "status-cache/sessions/3f2a9c1e-4b5d-4e6f-8a7b-9c0d1e2f3a4b.json").exists()
    run = await home.run("poll", "--write", "--max-age", "300")
    assert run.lines[0].startswith("default: five_hour 23.5%, seven_day 41.2% (")
    assert server.requests == []


@pytest.mark.parametrize("value", ["0", "-1", "x", "nan", "inf", ""])
async def test_max_age_must_be_a_positive_number(home: Home, value: str) -> None:
    home.add("work")
    run = await home.run("poll", "--max-age", value)
    assert run.code == 64
    assert run.err.startswith("account-cli: argument --max-age: ")


# ---- Retry-After ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "wait"),
    [("1800", 1800.0), ("0", 300.0), ("soon", 300.0), ("86400", 3600.0), (None, 300.0)],
)
async def test_poll_all_keeps_the_retry_after_wait_on_disk(
    tmp_path: Path, server: UsageServer, header: str | None, wait: float
) -> None:
    async def limited(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        headers = {} if header is None else {"Retry-After": header}
        return web.Response(status=429, headers=headers)

    server.handler = limited
    now = time.time()
    profile, _ = make_profile(tmp_path, "work", now=now)
    [entry] = await poll_all(profiles=[profile], api_base=server.url, now=now)
    assert entry.result.ok is False
    assert entry.result.failure == "http-429"
    assert entry.backoff_until == now + wait
    raw = json.loads((Path(profile.config_dir) / "status-cache/usage-poll.backoff").read_bytes())
    assert raw == {"until": now + wait, "wait": wait}
    # While it runs, nothing is sent.
    [entry] = await poll_all(profiles=[profile], api_base=server.url, now=now + wait - 1)
    assert entry.result.ok is False
    assert entry.result.failure == "backoff"
    assert len(server.requests) == 1
