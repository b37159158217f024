"""The account poller writes readings that the daemon's product reads and pushes live."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from agent_accounts.io import discover_profiles
from demo_product.forge_seed import seed_forge
from demo_product.product import build_registry
from demo_product.usage_server import start_usage_server
from forge_automation import forge_port
from integration_support import next_event, rpc, running_daemon, write_credentials

CANARY_ACCESS = "sk-ant-oat01-ITCANARY" + "A" * 20
CANARY_REFRESH = "sk-ant-ort01-ITCANARY" + "B" * 20


def _cli() -> str:
    return str(Path(sys.executable).with_name("account-cli"))


@pytest.mark.slow
async def test_poll_write_reaches_the_product_and_its_event_stream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    home = tmp_path / "home"
    write_credentials(
        home / ".agent-profiles" / "work",
        token=CANARY_ACCESS,
        refresh=CANARY_REFRESH,
        expires_at_ms=int(time.time() * 1000) + 3_600_000,
    )
    usage = await start_usage_server({CANARY_ACCESS: 42.0})
    demo = seed_forge()
    registry = build_registry(
        port=forge_port(demo.forge.wire),
        repo=demo.repo,
        profiles=lambda: discover_profiles(home=home, env={}),
    )
    try:
        async with (
            running_daemon(tmp_path, registry=registry, watch_root=str(home)) as (base, _),
            aiohttp.ClientSession() as session,
        ):
            status, before = await rpc(session, base, "accounts")
            assert status == 200
            assert before["data"]["profiles"][0]["usage"] is None

            async with session.get(f"{base}/events") as events:
                await next_event(events, "ready")
                env = {
                    **os.environ,
                    "HOME": str(home),
                    "AGENT_API_BASE_URL": usage.base_url,
                }
                env.pop("AGENT_CONFIG_DIRS", None)
                env.pop("AGENT_PROFILE_ROOT", None)
                proc = await asyncio.create_subprocess_exec(
                    _cli(),
                    "poll",
                    "--write",
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                out, err = await proc.communicate()
                assert proc.returncode == 0, err
                assert out.decode().startswith("work: five_hour ")
                await next_event(events, "change")  # the watcher saw the reading land
                events_text = out.decode() + err.decode()

            written = home / ".agent-profiles/work/status-cache/sessions/usage-poll.json"
            assert json.loads(written.read_text())["source"] == "oauth-usage"
            status, after = await rpc(session, base, "accounts")
            assert status == 200
            profile = after["data"]["profiles"][0]
            assert profile["label"] == "work"
            assert profile["login"]["status"] == "present"
            assert profile["usage"]["rate_limits"]["five_hour"]["used_percentage"] >= 0
            # The reading also went to the profile's history: one point so far, no forecast yet.
            used = profile["usage"]["rate_limits"]["five_hour"]["used_percentage"]
            assert [point[1] for point in profile["history"]["five_hour"]] == [used]
            assert profile["forecast"]["five_hour"] is None
            assert before["data"]["profiles"][0]["history"] == {}
            assert usage.calls == ["/api/oauth/usage"]
    finally:
        await usage.close()
    everything = json.dumps([before, after]) + events_text + written.read_text() + caplog.text
    for canary in (CANARY_ACCESS, CANARY_REFRESH, "ITCANARY"):
        assert canary not in everything


@pytest.mark.slow
async def test_a_statusline_tee_reading_reaches_the_product(tmp_path: Path) -> None:
    """The agent client's status-line payload, through `account-cli statusline-tee`, is what the
    daemon's product shows: no request to the usage endpoint at all."""
    home = tmp_path / "home"
    work = home / ".agent-profiles" / "work"
    write_credentials(
        work,
        token=CANARY_ACCESS,
        refresh=CANARY_REFRESH,
        expires_at_ms=int(time.time() * 1000) + 3_600_000,
    )
    fixture = (
        Path(__file__).resolve().parents[1]
        / "packages/agent-accounts/tests/data/statusline_payload.json"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    env.update(HOME=str(home), AGENT_CONFIG_DIR=str(work))
    proc = await asyncio.create_subprocess_exec(
        _cli(),
        "statusline-tee",
        "--then",
        "cat >/dev/null; echo my-line",
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate(fixture.read_bytes())
    assert (proc.returncode, out, err) == (0, b"my-line\n", b"")
    demo = seed_forge()
    registry = build_registry(
        port=forge_port(demo.forge.wire),
        repo=demo.repo,
        profiles=lambda: discover_profiles(home=home, env={}),
    )
    async with (
        running_daemon(tmp_path, registry=registry) as (base, _),
        aiohttp.ClientSession() as session,
    ):
        status, answer = await rpc(session, base, "accounts")
    assert status == 200
    [profile] = answer["data"]["profiles"]
    assert profile["label"] == "work"
    assert profile["usage"]["rate_limits"] == json.loads(fixture.read_bytes())["rate_limits"]
    assert "ITCANARY" not in json.dumps(answer)
