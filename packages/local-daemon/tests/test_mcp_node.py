"""MCP over streamable HTTP through an independent client: the TypeScript SDK run by node."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from daemon_mcp_fixture import CANARY, ERROR_COMMANDS, TOOL_PREFIX, VERSION, FixtureRegistry
from daemon_raw_http import serve_app
from daemon_support import running
from local_daemon import build_http_app
from progress_support import Seen, progress_registry
from task_registry import task_registry

NODE_DIR = Path(__file__).resolve().parent / "node"


@pytest.fixture(scope="module")
def node_client() -> Path:
    node = shutil.which("node")
    assert node is not None, "node is required (Node 20)"
    if not (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        # `make setup` normally does this; never skip, install from the committed lock instead.
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--silent"],
            cwd=NODE_DIR,
            check=True,
            timeout=300,
        )
    return NODE_DIR / "mcp_client.mjs"


async def run_node(script: Path, url: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(script),
        url,
        json.dumps(calls),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    parsed = json.loads(out)
    assert isinstance(parsed, dict)
    return parsed


async def test_typescript_sdk_lists_and_calls_tools(node_client: Path) -> None:
    contexts: list[tuple[str, Any]] = []

    def create_context(surface: Any, auth: Any) -> dict[str, Any]:
        contexts.append((surface, auth))
        return {"surface": surface, "auth": auth}

    app = build_http_app(
        registry=FixtureRegistry(),
        tool_prefix=TOOL_PREFIX,
        version=VERSION,
        create_context=create_context,
    )
    calls: list[dict[str, Any]] = [
        {"name": "fx_echo", "arguments": {"text": "from node"}},
        {"name": "fx_whoami"},
        *({"name": f"fx_{name}"} for name in ERROR_COMMANDS),
    ]
    async with serve_app(app) as port:
        answer = await run_node(node_client, f"http://127.0.0.1:{port}/mcp", calls)

    assert answer["server"] == {"name": TOOL_PREFIX, "version": VERSION}
    assert [tool["name"] for tool in answer["tools"]] == [
        f"fx_{info.name}" for info in FixtureRegistry().commands()
    ]
    results = answer["results"]
    envelopes = [json.loads(result["content"][0]["text"]) for result in results]
    assert envelopes[0] == {"ok": True, "data": {"text": "from node"}}
    assert results[0].get("isError", False) is False
    assert envelopes[1] == {"ok": True, "data": {"context": {"surface": "mcp", "auth": None}}}
    codes = [envelope["error"]["code"] for envelope in envelopes[2:]]
    assert codes[:4] == [64, 65, 75, 77]
    assert all(result["isError"] is True for result in results[2:])
    assert CANARY not in json.dumps(answer)
    assert contexts == [("mcp", None)] * len(calls)


async def test_typescript_sdk_progress_and_cancel(node_client: Path, tmp_path: Path) -> None:
    # A real daemon (its disconnect handling included); the TS SDK aborts two calls with an
    # AbortSignal and, still connected, asks whether each command saw its cancellation.
    seen = Seen()
    registry = progress_registry(seen)
    async with running(tmp_path, registry=registry, tool_prefix="") as handle:
        answer = await run_node(
            node_client.with_name("mcp_progress.mjs"), f"http://127.0.0.1:{handle.port}/mcp", []
        )
    assert answer["steps"] == {"ok": True, "data": 3}
    assert [(p["progress"], p["total"], p["message"]) for p in answer["progress"]] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]
    assert answer["aborted"] == {"async": "aborted", "sync": "aborted"}
    assert answer["observed"] == {
        "async": {"ok": True, "data": True},
        "sync": {"ok": True, "data": True},
    }


async def test_typescript_sdk_runs_cancels_and_lists_tasks(
    node_client: Path, tmp_path: Path
) -> None:
    app = build_http_app(registry=task_registry(), tool_prefix="tk", version="1")
    gate = tmp_path / "gate"
    async with serve_app(app) as port:
        proc = await asyncio.create_subprocess_exec(
            "node",
            str(NODE_DIR / "mcp_tasks.mjs"),
            f"http://127.0.0.1:{port}/mcp",
            str(gate),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    answer = json.loads(out)
    assert answer["capabilities"]["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    assert {tool["execution"]["taskSupport"] for tool in answer["tools"]} == {"optional"}
    created, *statuses, last = answer["streamed"]
    assert created["type"] == "taskCreated"
    assert created["status"] == "working"
    assert [status["status"] for status in statuses][-1:] == ["completed"]
    assert last["type"] == "result"
    result = last["result"]
    assert result["structuredContent"] == {"ok": True, "data": {"text": "from node"}}
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": created["taskId"]}
    task_id = answer["created"]["taskId"]
    assert answer["cancelled"] == {"taskId": task_id, "status": "cancelled"}
    assert answer["after"] == {"taskId": task_id, "status": "cancelled"}
    assert answer["listed"] == [
        {"taskId": task_id, "status": "cancelled"},
        {"taskId": created["taskId"], "status": "completed"},
    ]
    # The cancelled command stopped waiting for its gate.
    for _ in range(2000):
        if (tmp_path / "gate.cancelled").exists():
            break
        await asyncio.sleep(0.01)
    assert (tmp_path / "gate.cancelled").read_text() == "async"
