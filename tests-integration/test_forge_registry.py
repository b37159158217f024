"""The daemon serving a forge-backed registry: real `gh` against the local forge API, every surface.

The same commands answer over /rpc, over MCP (the `mcp` package's streamable-HTTP client) and over
`local-daemon mcp-stdio`; the envelopes are identical and a forge error maps to the right status.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from demo_product.product import build_registry
from fakeforge import ForgeServer
from forge_automation import ExecOptions, ExecResult, forge_port, gh_cli_wire
from integration_support import next_event, rpc, running_daemon

REPO = "acme/widgets"
HERE = Path(__file__).resolve().parent


@pytest.fixture
def forge() -> Iterator[ForgeServer]:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        base = repo.add_commit("base")
        repo.branches["main"] = base
        green = repo.add_commit("green", parents=[base])
        red = repo.add_commit("red", parents=[base])
        repo.add_pr(1, head_ref="green", head_sha=green, title="Green change")
        repo.add_pr(2, head_ref="red", head_sha=red, title="Red change")
        repo.add_run(green, "test", "success")
        repo.add_run(red, "test", "failure")
        repo.set_rulesets("main", ["test"])
        yield server


def envelope_of(result: types.CallToolResult) -> dict[str, Any]:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    parsed: dict[str, Any] = json.loads(block.text)
    assert bool(result.is_error) is (not parsed["ok"])
    return parsed


@asynccontextmanager
async def mcp_http(base: str) -> AsyncIterator[Client]:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(headers={"x-local-client": "it"}))
        client = await stack.enter_async_context(
            Client(streamable_http_client(f"{base}/mcp", http_client=http))
        )
        yield client


CALLS: list[tuple[str, dict[str, Any], int]] = [
    ("pr_status", {"number": 1}, 200),
    ("pr_status", {"number": 2}, 200),
    ("pr_status", {"number": 999}, 400),  # the forge answers 404: not a daemon 404
    ("pr_status", {"number": "one"}, 400),  # argument validation
    ("pr_context", {"number": 1}, 200),
    (
        "squash_message",
        {
            "title": "T",
            "body": "B",
            "pr_number": 1,
            "task_ids": ["T-1"],
            "commits": [{"subject": "Do it", "body": "why"}],
        },
        200,
    ),
]


@pytest.mark.slow
async def test_rpc_and_mcp_answer_the_same_envelopes(forge: ForgeServer, tmp_path: Path) -> None:
    registry = build_registry(port=forge_port(gh_cli_wire(forge.exec())), repo=REPO)
    async with (
        running_daemon(tmp_path, registry=registry, tool_prefix="demo") as (base, _),
        aiohttp.ClientSession() as session,
        mcp_http(base) as client,
    ):
        listed = {t.name for t in (await client.list_tools()).tools}
        assert {"demo_pr_status", "demo_accounts", "demo_squash_message"} <= listed
        for name, args, status in CALLS:
            got_status, envelope = await rpc(session, base, name, args)
            assert got_status == status, (name, args, envelope)
            over_mcp = envelope_of(await client.call_tool(f"demo_{name}", args))
            assert over_mcp == envelope, name
    async with (
        aiohttp.ClientSession() as session,
        running_daemon(tmp_path / "again", registry=registry) as (base, _),
    ):
        _, one = await rpc(session, base, "pr_status", {"number": 1})
        _, two = await rpc(session, base, "pr_status", {"number": 2})
    assert one["data"]["ready"] is True
    assert one["data"]["blockers"] == []
    assert two["data"]["ready"] is False
    assert [b["reason"] for b in two["data"]["blockers"]] == ["check-failed"]


@pytest.mark.slow
async def test_mcp_stdio_serves_the_same_registry(forge: ForgeServer, tmp_path: Path) -> None:
    env = {**os.environ, **forge.env(), "IT_FORGE_REPO": REPO, "PYTHONPATH": str(HERE)}
    params = StdioServerParameters(
        command=str(Path(sys.executable).with_name("local-daemon")),
        args=["mcp-stdio", "it_forge_product:registry", "--tool-prefix", "demo"],
        env=env,
        cwd=HERE,
    )
    direct = build_registry(port=forge_port(gh_cli_wire(forge.exec())), repo=REPO)
    async with (
        aiohttp.ClientSession() as session,
        running_daemon(tmp_path, registry=direct) as (base, _),
    ):
        _, over_rpc = await rpc(session, base, "pr_status", {"number": 2})
        _, missing = await rpc(session, base, "pr_status", {"number": 999})
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            assert envelope_of(await client.call_tool("demo_pr_status", {"number": 2})) == over_rpc
            assert envelope_of(await client.call_tool("demo_pr_status", {"number": 999})) == missing
        errlog.seek(0)
        assert "Traceback" not in errlog.read()


@pytest.mark.slow
async def test_a_blocking_gh_call_never_stalls_health_or_events(
    forge: ForgeServer, tmp_path: Path
) -> None:
    entered, release = threading.Event(), threading.Event()
    real = forge.exec()

    def held(args: Sequence[str], options: ExecOptions) -> ExecResult:
        entered.set()
        release.wait(30)
        return real(args, options)

    registry = build_registry(port=forge_port(gh_cli_wire(held)), repo=REPO)
    async with (
        running_daemon(tmp_path, registry=registry) as (base, _),
        aiohttp.ClientSession() as session,
    ):
        pending = asyncio.create_task(rpc(session, base, "pr_status", {"number": 1}))
        assert await asyncio.to_thread(entered.wait, 30)
        async with session.get(f"{base}/health") as health:
            assert health.status == 200
            assert (await health.json())["ok"] is True
        async with session.get(f"{base}/events") as events:
            assert events.status == 200
            await next_event(events, "ready", limit=10)
        assert not pending.done()
        release.set()
        status, envelope = await pending
        assert status == 200
        assert envelope["ok"] is True
