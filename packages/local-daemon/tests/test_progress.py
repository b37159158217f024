"""Progress and cancellation: `Progress` and `CancelFlag` parameters over `/rpc` and `/mcp`.

Real daemons on 127.0.0.1:0, the Python SDK's streamable-HTTP client in both protocol eras, raw
sockets for the disconnects and for a `notifications/cancelled` sent in a POST of its own.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from daemon_support import CLIENT, http, running
from local_daemon import DaemonHandle, Progress, Registry
from progress_support import WAIT as _WAIT
from progress_support import Seen, progress_registry

MODES = ["legacy", "auto"]  # the initialize handshake and the 2026-07-28 per-request era


@asynccontextmanager
async def daemon(tmp_path: Path, seen: Seen) -> AsyncIterator[DaemonHandle]:
    async with running(tmp_path, registry=progress_registry(seen), tool_prefix="") as handle:
        yield handle


def sse_events(body: bytes) -> list[tuple[str, Any]]:
    events = []
    for block in body.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events


# -- the registry -----------------------------------------------------------------------------


def test_progress_and_flag_parameters_stay_out_of_the_schema() -> None:
    infos = {info.name: info for info in progress_registry(Seen()).commands()}
    assert infos["steps"].input_schema["properties"] == {"n": {"type": "integer"}}
    assert infos["steps"].input_schema["required"] == ["n"]
    assert infos["poll_flag"].input_schema["properties"] == {}
    assert "required" not in infos["poll_flag"].input_schema


async def test_a_client_cannot_pass_the_reporter_as_an_argument() -> None:
    registry = progress_registry(Seen())
    with pytest.raises(Exception, match="unknown argument: progress"):
        await registry.invoke_command("steps", {"n": 1, "progress": 1}, None)


def test_two_reporters_on_one_command_are_refused() -> None:
    registry = Registry()
    with pytest.raises(TypeError, match="more than one Progress"):

        @registry.command
        def twice(a: Progress, b: Progress) -> None: ...


async def test_outside_a_surface_the_reporter_goes_nowhere() -> None:
    # A direct call (no surface): a reporter nobody listens to and a flag never set.
    assert await progress_registry(Seen()).invoke_command("steps", {"n": 3}, None) == 3
    progress = Progress()
    assert not progress.listening
    progress.report(1, 2, "fine")


@pytest.mark.parametrize("bad", [math.nan, math.inf, True, "1"])
def test_reports_must_be_finite_numbers(bad: Any) -> None:
    with pytest.raises(TypeError):
        Progress().report(bad)
    with pytest.raises(TypeError):
        Progress().report(1, bad)


# -- /rpc ------------------------------------------------------------------------------------

STREAM = {**CLIENT, "Accept": "text/event-stream"}


async def test_rpc_streams_progress_then_the_envelope(tmp_path: Path) -> None:
    async with daemon(tmp_path, Seen()) as handle:
        status, headers, body = await http(
            handle.port, "POST", "/rpc/steps", headers=STREAM, body=b'{"n": 3}'
        )
        plain_status, _, plain = await http(
            handle.port, "POST", "/rpc/steps", headers=CLIENT, body=b'{"n": 3}'
        )
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert sse_events(body) == [
        ("progress", {"progress": 1.0, "total": 3.0, "message": "step 1"}),
        ("progress", {"progress": 2.0, "total": 3.0, "message": "step 2"}),
        ("progress", {"progress": 3.0, "total": 3.0, "message": "step 3"}),
        ("result", {"ok": True, "data": 3}),
    ]
    # Without the header the reports go nowhere and the answer is the plain envelope.
    assert (plain_status, json.loads(plain)) == (200, {"ok": True, "data": 3})


async def test_rpc_stream_that_never_began_answers_as_usual(tmp_path: Path) -> None:
    async with daemon(tmp_path, Seen()) as handle:
        unknown = await http(handle.port, "POST", "/rpc/nope", headers=STREAM, body=b"{}")
        refused = await http(handle.port, "POST", "/rpc/steps", headers=STREAM, body=b"{}")
    assert unknown[0] == 404
    assert unknown[1]["content-type"].startswith("application/json")
    assert refused[0] == 400
    assert json.loads(refused[2])["error"]["code"] == 65


async def _post_then_hang_up(port: int, name: str, started: Any) -> None:
    """POST /rpc/<name>, wait until the command started, then close the socket."""
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST /rpc/{name} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-local-client: tests\r\n"
        "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    )
    writer.write(head.encode())
    await writer.drain()
    await _wait(started)
    writer.close()
    await writer.wait_closed()


async def test_rpc_disconnect_cancels_an_async_command(tmp_path: Path) -> None:
    seen = Seen()
    async with daemon(tmp_path, seen) as handle:
        await _post_then_hang_up(handle.port, "wait_forever", seen.started)
        # Observed by the command itself: CancelledError reached its `await`.
        await asyncio.wait_for(seen.cancelled.wait(), _WAIT)


async def test_rpc_disconnect_sets_a_sync_commands_flag(tmp_path: Path) -> None:
    seen = Seen()
    async with daemon(tmp_path, seen) as handle:
        await _post_then_hang_up(handle.port, "poll_flag", seen.thread_started)
        assert await asyncio.to_thread(seen.flag_seen.wait, _WAIT)


# -- /mcp through the Python SDK client -------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_progress_reaches_the_python_sdk_client(tmp_path: Path, mode: str) -> None:
    got: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        got.append((progress, total, message))

    async with daemon(tmp_path, Seen()) as handle:
        url = f"http://127.0.0.1:{handle.port}/mcp"
        async with Client(url, mode=mode) as client:
            result = await client.call_tool("steps", {"n": 4}, progress_callback=on_progress)
            quiet = await client.call_tool("steps", {"n": 2})
    assert result.structured_content == {"ok": True, "data": 4}
    assert got == [(float(step), 4.0, f"step {step}") for step in range(1, 5)]
    # No progress callback: no token, a plain JSON answer and nothing else.
    assert quiet.structured_content == {"ok": True, "data": 2}


async def _wait(event: asyncio.Event | threading.Event) -> None:
    if isinstance(event, threading.Event):
        assert await asyncio.to_thread(event.wait, _WAIT)
    else:
        await asyncio.wait_for(event.wait(), _WAIT)


async def _cancel_through_client(
    url: str, mode: str, tool: str, started: Any, observed: Any
) -> None:
    async with Client(url, mode=mode) as client:

        async def ignore(progress: float, total: float | None, message: str | None) -> None:
            return None

        call = asyncio.ensure_future(client.call_tool(tool, {}, progress_callback=ignore))
        await _wait(started)
        call.cancel()  # the SDK sends notifications/cancelled (legacy) or drops the POST (2026)
        with pytest.raises(asyncio.CancelledError):
            await call
        # While the client is still connected: its own cancel did it, not its going away.
        await _wait(observed)


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_client_cancel_stops_an_async_command(tmp_path: Path, mode: str) -> None:
    seen = Seen()
    async with daemon(tmp_path, seen) as handle:
        url = f"http://127.0.0.1:{handle.port}/mcp"
        await _cancel_through_client(url, mode, "wait_forever", seen.started, seen.cancelled)


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_client_cancel_sets_a_sync_commands_flag(tmp_path: Path, mode: str) -> None:
    seen = Seen()
    async with daemon(tmp_path, seen) as handle:
        url = f"http://127.0.0.1:{handle.port}/mcp"
        await _cancel_through_client(url, mode, "poll_flag", seen.thread_started, seen.flag_seen)


# -- notifications/cancelled on a stateless /mcp, raw ------------------------------------------

MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def _call(request_id: int, tool: str) -> bytes:
    params = {"name": tool, "arguments": {}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


def _cancel(request_id: int) -> bytes:
    params = {"requestId": request_id, "reason": "test"}
    message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
    return json.dumps(message).encode()


async def test_mcp_cancelled_notification_in_its_own_post(tmp_path: Path) -> None:
    seen = Seen()
    async with daemon(tmp_path, seen) as handle:
        port = handle.port
        call = asyncio.ensure_future(
            http(port, "POST", "/mcp", headers=MCP_HEADERS, body=_call(7, "wait_forever"))
        )
        await asyncio.wait_for(seen.started.wait(), _WAIT)
        status, _, _ = await http(port, "POST", "/mcp", headers=MCP_HEADERS, body=_cancel(7))
        assert status == 202
        await asyncio.wait_for(seen.cancelled.wait(), _WAIT)
        answered, _, body = await call
    # Nobody waits for it any more; the POST still ends, with JSON-RPC's "request cancelled".
    assert answered == 200
    assert json.loads(body)["error"]["code"] == -32800


async def test_mcp_cancel_naming_two_calls_touches_neither(tmp_path: Path) -> None:
    seen = Seen()
    async with daemon(tmp_path, seen) as handle:
        port = handle.port
        calls = [
            asyncio.ensure_future(
                http(port, "POST", "/mcp", headers=MCP_HEADERS, body=_call(3, "poll_flag"))
            )
            for _ in range(2)
        ]
        assert await asyncio.to_thread(seen.thread_started.wait, _WAIT)
        # Both calls in flight under id 3 (two clients numbering alike): the cancel is ambiguous.
        for _ in range(2):  # both calls reach their worker threads
            assert await asyncio.to_thread(seen.polling.acquire, True, _WAIT)
        status, _, _ = await http(port, "POST", "/mcp", headers=MCP_HEADERS, body=_cancel(3))
        assert status == 202
        # The control: the cancel was processed (its POST answered) and no flag was set.
        assert not seen.flag_seen.is_set()
        for call in calls:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        # Both callers hung up: their disconnects set the flags.
        assert await asyncio.to_thread(seen.flag_seen.wait, _WAIT)
