"""Tool calls run as MCP tasks on `/mcp`, through the `mcp` SDK's own client: the tasks extension
(a `ResultClaim` for `resultType: "task"`), `tasks/get`, `tasks/result` with progress,
`tasks/cancel`, `tasks/list`, the bounds, and results kept in the daemon's state dir."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from daemon_raw_http import serve_app
from local_daemon import build_http_app, start_daemon
from mcp_task_client import (
    cancel_task,
    get_task,
    list_tasks,
    start_task,
    task_client,
    task_result,
)
from task_registry import TOOL_PREFIX, task_registry

_POLLS = 2000  # bounded waits for a state another task reaches; never a timing assertion


@asynccontextmanager
async def mcp_url() -> AsyncIterator[str]:
    """`/mcp` of an app `build_http_app` builds (its tasks kept in memory)."""
    app = build_http_app(registry=task_registry(), tool_prefix=TOOL_PREFIX, version="1")
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def envelope(result: types.CallToolResult) -> Any:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert json.loads(block.text) == result.structured_content
    return result.structured_content


async def until_message(client: Any, task_id: str, message: str) -> types.GetTaskResult:
    """Poll `tasks/get` until the task's status message is `message`."""
    for _ in range(_POLLS):
        task = await get_task(client, task_id)
        if task.status_message == message:
            return task
        await asyncio.sleep(0.01)
    raise AssertionError(f"the task never said {message!r}")


async def test_a_client_declaring_the_extension_gets_results_through_tasks() -> None:
    async with mcp_url() as url, task_client(url) as client:
        result = await client.call_tool("tk_echo", {"text": "héllo"})
        listed = await list_tasks(client)
    assert envelope(result) == {"ok": True, "data": {"text": "héllo"}}
    assert not result.is_error
    # The call ran as a task: the result came back through `tasks/result`.
    assert result.meta is not None
    related = result.meta["io.modelcontextprotocol/related-task"]
    assert [task.task_id for task in listed.tasks] == [related["taskId"]]
    assert listed.tasks[0].status == "completed"


async def test_a_client_without_the_extension_is_answered_directly() -> None:
    async with mcp_url() as url, task_client(url, tasks=False) as client:
        result = await client.call_tool("tk_echo", {"text": "x"})
        listed = await list_tasks(client)
    assert envelope(result) == {"ok": True, "data": {"text": "x"}}
    assert listed.tasks == []


@pytest.mark.parametrize("tool", ["tk_gated", "tk_gated_sync"])
async def test_task_id_at_once_then_progress_and_result(tool: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))
        if progress == 1:
            gate.touch()  # the command is waiting: let it through

    async with mcp_url() as url, task_client(url) as client:
        task = await start_task(client, tool, {"gate": str(gate)}, ttl_ms=60_000)
        assert task.status == "working"
        assert task.ttl == 60_000
        assert task.poll_interval is not None
        result = await task_result(client, task.task_id, on_progress)
        finished = await get_task(client, task.task_id)
    assert envelope(result) == {"ok": True, "data": {"gate": "opened"}}
    assert reports == [(1, 2, "waiting for the gate"), (2, 2, "through the gate")]
    assert finished.status == "completed"
    assert finished.created_at == task.created_at


@pytest.mark.parametrize(("tool", "kind"), [("tk_gated", "async"), ("tk_gated_sync", "sync")])
async def test_cancel_stops_the_command(tool: str, kind: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    async with mcp_url() as url, task_client(url) as client:
        task = await start_task(client, tool, {"gate": str(gate)})
        await until_message(client, task.task_id, "waiting for the gate")
        cancelled = await cancel_task(client, task.task_id)
        with pytest.raises(MCPError) as result_error:
            await task_result(client, task.task_id)
        with pytest.raises(MCPError) as again:
            await cancel_task(client, task.task_id)
        after = await get_task(client, task.task_id)
    assert cancelled.status == "cancelled"
    assert after.status == "cancelled"  # sticky, whatever the command did after
    assert result_error.value.error.code == -32800
    assert again.value.error.code == types.INVALID_PARAMS
    marker = Path(str(gate) + ".cancelled")
    for _ in range(_POLLS):  # the worker thread notices its flag on its own time
        if marker.exists():
            break
        await asyncio.sleep(0.01)
    assert marker.read_text() == kind


async def test_unknown_task_ids_are_invalid_params() -> None:
    async with mcp_url() as url, task_client(url) as client:
        for call in (get_task, cancel_task, task_result):
            with pytest.raises(MCPError) as refused:
                await call(client, "no-such-task")
            assert refused.value.error.code == types.INVALID_PARAMS


async def test_a_failed_command_is_a_failed_task_with_its_envelope() -> None:
    async with mcp_url() as url, task_client(url) as client:
        task = await start_task(client, "tk_echo", {"text": 5})
        result = await task_result(client, task.task_id)
        finished = await get_task(client, task.task_id)
    assert result.is_error
    assert envelope(result)["ok"] is False
    assert finished.status == "failed"


async def test_bounds_time_to_live_and_size() -> None:
    async with mcp_url() as url, task_client(url) as client:
        capped = await start_task(client, "tk_echo", {"text": "x"}, ttl_ms=10**12)
        default = await start_task(client, "tk_echo", {"text": "x"})
        big = await start_task(client, "tk_sized", {"size": (1 << 20) + 1})
        result = await task_result(client, big.task_id)
        finished = await get_task(client, big.task_id)
    assert capped.ttl == 24 * 60 * 60 * 1000
    assert default.ttl == 60 * 60 * 1000
    assert result.is_error
    assert envelope(result) == {
        "ok": False,
        "error": {"code": 70, "message": "the result is larger than a task keeps (1048576 bytes)"},
    }
    assert finished.status == "failed"


async def test_bounds_count(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    async with mcp_url() as url, task_client(url) as client:
        working = [await start_task(client, "tk_gated", {"gate": str(gate)}) for _ in range(32)]
        with pytest.raises(MCPError) as full:
            await start_task(client, "tk_echo", {"text": "x"})
        gate.touch()
        for task in working:
            await task_result(client, task.task_id)
        # Room again: the oldest finished task makes it.
        newest = await start_task(client, "tk_echo", {"text": "x"})
        listed = await list_tasks(client)
    assert "at most 32" in full.value.error.message
    assert len(listed.tasks) == 32
    assert listed.tasks[0].task_id == newest.task_id
    # The one that finished first made room.
    kept = {task.task_id for task in listed.tasks}
    assert len([task for task in working if task.task_id not in kept]) == 1


@pytest.mark.slow
async def test_a_finished_task_is_gone_after_its_time_to_live() -> None:
    async with mcp_url() as url, task_client(url) as client:
        task = await start_task(client, "tk_echo", {"text": "x"}, ttl_ms=1)
        kept = await start_task(client, "tk_echo", {"text": "x"}, ttl_ms=3_600_000)
        codes: list[int] = []
        for _ in range(_POLLS):
            try:
                await get_task(client, task.task_id)
            except MCPError as gone:
                codes.append(gone.error.code)
                break
            await asyncio.sleep(0.01)
        assert codes == [types.INVALID_PARAMS], "the task outlived its time to live"
        assert (await get_task(client, kept.task_id)).status == "completed"


async def test_the_handshake_era_sees_the_core_tasks_capability() -> None:
    async with mcp_url() as url, task_client(url, mode="legacy", tasks=False) as client:
        capabilities = client.server_capabilities
        tools = await client.list_tools()
    assert capabilities is not None
    assert capabilities.tasks is not None
    assert capabilities.tasks.requests is not None
    assert capabilities.tasks.requests.tools is not None
    assert all(
        tool.execution is not None and tool.execution.task_support == "optional"
        for tool in tools.tools
    )


def task_files(state: Path) -> list[Path]:
    return sorted((state / "tasks").glob("*.json"))


async def test_daemon_keeps_finished_results_across_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    gate = tmp_path / "gate"
    options: dict[str, Any] = {
        "registry": task_registry(),
        "version": "1",
        "state_dir": state,
        "tool_prefix": TOOL_PREFIX,
    }
    handle = await start_daemon(**options)
    try:
        url = f"http://127.0.0.1:{handle.port}/mcp"
        async with task_client(url) as client:
            done = await start_task(client, "tk_echo", {"text": "kept"})
            first = await task_result(client, done.task_id)
            running = await start_task(client, "tk_gated", {"gate": str(gate)})
            await until_message(client, running.task_id, "waiting for the gate")
    finally:
        await handle.close()
    files = task_files(state)
    assert [path.stem for path in files] == sorted([done.task_id, running.task_id])
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        record = json.loads(path.read_bytes())
        # The task, its owner (a name, no secret) and the call's result: nothing of the request.
        assert set(record) == {"version", "owner", "task", "result"}
        assert record["owner"] == "loopback"
        assert set(record["task"]) <= {
            "taskId",
            "status",
            "statusMessage",
            "createdAt",
            "lastUpdatedAt",
            "ttl",
        }
    kept_record = json.loads((state / "tasks" / f"{done.task_id}.json").read_bytes())
    assert kept_record["result"]["structuredContent"] == {"ok": True, "data": {"text": "kept"}}
    assert stat.S_IMODE((state / "tasks").stat().st_mode) == 0o700
    handle = await start_daemon(**options)
    try:
        url = f"http://127.0.0.1:{handle.port}/mcp"
        async with task_client(url) as client:
            again = await task_result(client, done.task_id)
            kept = await get_task(client, done.task_id)
            stopped = await get_task(client, running.task_id)
            stopped_result = await task_result(client, running.task_id)
    finally:
        await handle.close()
    assert envelope(again) == envelope(first) == {"ok": True, "data": {"text": "kept"}}
    assert kept.status == "completed"
    assert kept.created_at == done.created_at
    assert stopped.status == "failed"
    assert envelope(stopped_result) == {
        "ok": False,
        "error": {"code": 75, "message": "the daemon stopped before the call finished"},
    }
    assert not gate.exists()


async def test_daemon_skips_task_files_it_cannot_trust(tmp_path: Path) -> None:
    state = tmp_path / "state"
    tasks = state / "tasks"
    tasks.mkdir(parents=True, mode=0o700)
    name = "A" * 24 + ".json"
    (tasks / name).write_text("{not json")
    os.chmod(tasks / name, 0o600)
    (tasks / ("B" * 24 + ".json")).write_text(json.dumps({"version": 1}))
    (tasks / ".leftover.0123.tmp").write_text("half a write")
    handle = await start_daemon(
        registry=task_registry(), version="1", state_dir=state, tool_prefix=TOOL_PREFIX
    )
    try:
        async with task_client(f"http://127.0.0.1:{handle.port}/mcp") as client:
            listed = await list_tasks(client)
    finally:
        await handle.close()
    assert listed.tasks == []
    # Left as they were (nothing is lost), except a write a crash cut short.
    assert sorted(path.name for path in tasks.iterdir()) == [name, "B" * 24 + ".json"]


def _record(task_id: str, finished: datetime.datetime, ttl_ms: int) -> bytes:
    stamp = finished.isoformat().replace("+00:00", "Z")
    envelope = {"ok": True, "data": task_id}
    result = {
        "content": [{"type": "text", "text": json.dumps(envelope)}],
        "structuredContent": envelope,
        "isError": False,
    }
    task = {
        "taskId": task_id,
        "status": "completed",
        "createdAt": stamp,
        "lastUpdatedAt": stamp,
        "ttl": ttl_ms,
    }
    document = {"version": 1, "owner": "loopback", "task": task, "result": result}
    return json.dumps(document).encode()


async def test_a_restart_reads_time_to_live_by_a_clock_stepped_either_way(tmp_path: Path) -> None:
    state = tmp_path / "state"
    tasks = state / "tasks"
    tasks.mkdir(parents=True, mode=0o700)
    now = datetime.datetime.now(datetime.UTC)
    ahead, behind = "F" * 24, "P" * 24
    # Finished "in ten years" (the clock was stepped back since): kept, for no more than its ttl.
    # Finished two minutes ago with a one-minute ttl (or the clock stepped forward): gone.
    for task_id, finished in ((ahead, now + datetime.timedelta(days=3650)), (behind, now)):
        shift = datetime.timedelta(minutes=2) if task_id == behind else datetime.timedelta()
        path = tasks / f"{task_id}.json"
        path.write_bytes(_record(task_id, finished - shift, 60_000))
        os.chmod(path, 0o600)
    handle = await start_daemon(
        registry=task_registry(), version="1", state_dir=state, tool_prefix=TOOL_PREFIX
    )
    try:
        async with task_client(f"http://127.0.0.1:{handle.port}/mcp") as client:
            kept = await task_result(client, ahead)
            listed = await list_tasks(client)
    finally:
        await handle.close()
    assert envelope(kept) == {"ok": True, "data": ahead}
    assert [task.task_id for task in listed.tasks] == [ahead]
    assert sorted(path.stem for path in tasks.glob("*.json")) == [ahead]
