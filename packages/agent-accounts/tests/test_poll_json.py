"""`account-cli poll --json`: one object, a row per profile with the keys the README lists.

Real subprocesses against a real local usage endpoint: a polled profile, one with no login, one
whose reading is fresh enough to skip (`--max-age`), a 429 then the backoff it starts, a refused
login, and `--refresh`'s result in each row. Stderr and exit codes stay those of the text form.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from aiohttp import web

from accounts_cli_support import Home, plant_reading
from accounts_support import HOUR_MS, UsageServer, credentials

KEYS = [
    "label",
    "configDir",
    "outcome",
    "rate_limits",
    "age_seconds",
    "written",
    "failure",
    "reason",
    "backoff_until",
    "refresh",
]


pytestmark = pytest.mark.usefixtures("no_canary_in_files")


def rows(out: str) -> dict[str, dict[str, Any]]:
    doc = json.loads(out)
    assert list(doc) == ["profiles"]
    for row in doc["profiles"]:
        assert list(row) == KEYS
    return {row["label"]: row for row in doc["profiles"]}


async def test_poll_json_has_a_row_per_profile(home: Home, server: UsageServer) -> None:
    work = home.add("work")
    home.add("nologin", seed=False)
    fresh = home.add("fresh")
    # The poller's own reading, fresh: --max-age skips a profile only for a reading that carries
    # every window the poller's last one did.
    plant_reading(fresh, "usage-poll", time.time() - 5, five_hour=3, seven_day=4)
    home.add("refused", b"{not json")
    run = await home.run("poll", "--json", "--max-age", "300")
    assert run.code == 2  # the refused login, as without --json
    assert run.err == "account-cli: refused: login refused (malformed)\n"
    got = rows(run.out)
    assert list(got) == ["fresh", "nologin", "refused", "work"]  # discovery's order
    limits = {
        "five_hour": {"used_percentage": 23, "resets_at": 1893456000},
        "seven_day": {"used_percentage": 41.5},
    }
    assert got["work"] == {
        "label": "work",
        "configDir": str(work),
        "outcome": "polled",
        "rate_limits": limits,
        "age_seconds": None,
        "written": False,
        "failure": None,
        "reason": None,
        "backoff_until": None,
        "refresh": None,
    }
    assert got["fresh"]["outcome"] == "not-polled"
    assert got["fresh"]["rate_limits"]["five_hour"]["used_percentage"] == 3
    assert isinstance(got["fresh"]["age_seconds"], int)
    assert (got["nologin"]["outcome"], got["nologin"]["failure"]) == ("skipped", "missing")
    assert (got["refused"]["outcome"], got["refused"]["failure"], got["refused"]["reason"]) == (
        "failed",
        "refused",
        "malformed",
    )
    assert len(server.requests) == 1  # only work was polled


async def test_poll_json_write_then_429_then_backoff(home: Home, server: UsageServer) -> None:
    home.add("work")
    run = await home.run("poll", "--write", "--json")
    assert (run.code, run.err) == (0, "")
    assert rows(run.out)["work"]["written"] is True

    async def limited(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.Response(status=429)

    server.handler = limited
    run = await home.run("poll", "--write", "--json")
    assert run.code == 1
    assert run.err == "account-cli: work: poll failed: http-429\n"
    row = rows(run.out)["work"]
    assert (row["outcome"], row["failure"]) == ("failed", "http-429")
    assert row["backoff_until"] > time.time()  # the backoff the 429 started
    run = await home.run("poll", "--write", "--json")
    assert (run.code, run.err) == (0, "")
    row = rows(run.out)["work"]
    assert (row["outcome"], row["failure"]) == ("backoff", "backoff")
    assert row["backoff_until"] > time.time()


async def test_poll_json_carries_each_refresh_result(home: Home, server: UsageServer) -> None:
    home.add("work")
    home.add("expired", credentials(expires_at_ms=int(time.time() * 1000) - HOUR_MS))
    run = await home.run("poll", "--write", "--refresh", "--json")
    got = rows(run.out)
    assert got["work"]["refresh"] == "fresh"
    # No token endpoint here: the expired login's refresh fails, and it is said on stderr too.
    assert got["expired"]["refresh"] == "failed"
    assert "account-cli: expired: token refresh failed: " in run.err
    assert "token refreshed" not in run.out


async def test_poll_json_with_no_profile_is_an_empty_list(home: Home) -> None:
    run = await home.run("poll", "--json")
    assert (run.code, run.out, run.err) == (0, '{\n  "profiles": []\n}\n', "")
