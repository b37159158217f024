"""Request bodies against a real daemon process: deadline, budget and memory under stalled bodies.

A local client that declares a 1 MiB body and sends all but its last byte must cost the daemon
neither unbounded memory nor a connection held open for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from daemon_support import CLIENT, DaemonProcess, http, running

MIB = 1024 * 1024
_STALLED_PER_ROUTE = 300
_RSS_BOUND_KIB = 150 * 1024
_CLOSE_BOUND = 30.0  # seconds the daemon gets to close every stalled connection


async def _until_closed(port: int, head: str, sent: bytes) -> tuple[bytes, asyncio.StreamWriter]:
    """Send `head` and `sent` and read until the daemon closes; return what it answered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode() + sent)
    await writer.drain()
    received = bytearray()
    async with asyncio.timeout(_CLOSE_BOUND):  # not closed by then: the test fails
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(65536):
                received += chunk
    return bytes(received), writer


def _post_head(port: int, path: str, length: int | None, extra: str = "") -> str:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-local-client: t\r\n"
        f"Content-Type: application/json\r\n{extra}{framing}\r\n\r\n"
    )


@pytest.mark.slow
async def test_bodies_that_stop_short_are_answered_408_and_closed(tmp_path: Path) -> None:
    # Every stall at once, so the test waits for one deadline, not one per case.
    async with running(tmp_path, tool_prefix="t") as handle:
        port = handle.port
        events = f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 100\r\n\r\n"
        stalls = [
            *(
                _until_closed(port, _post_head(port, path, 100), b'{"text": ')
                for path in ("/rpc/echo", "/mcp")
            ),
            # A chunked body that stops coming.
            *(
                _until_closed(port, _post_head(port, path, None), b'5\r\n{"a":\r\n')
                for path in ("/rpc/echo", "/mcp")
            ),
            # A route that never reads its body is closed at the deadline too.
            _until_closed(port, events, b"x"),
        ]
        *answers, (streamed, writer) = await asyncio.gather(*stalls)
        writer.close()
        for _, writer in answers:
            writer.close()
        status, _, _ = await http(port, "GET", "/health")
    sized = [answer for answer, _ in answers[:2]]
    chunked = [answer for answer, _ in answers[2:]]
    for answer in sized:
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"Connection: close" in answer
        assert json.loads(answer.partition(b"\r\n\r\n")[2]) == {
            "ok": False,
            "error": {"code": 75, "message": "request body did not arrive in time"},
        }
    for answer in chunked:
        assert answer.startswith(b"HTTP/1.1 408 "), answer
    # The event stream began, then the connection closed under it.
    assert streamed.startswith(b"HTTP/1.1 200 "), streamed
    assert status == 200


async def test_past_the_budget_a_body_is_refused_503_unread(tmp_path: Path) -> None:
    async with running(tmp_path, tool_prefix="t") as handle:
        port = handle.port
        held: list[asyncio.StreamWriter] = []
        try:
            # 1 MiB bodies that never finish, until a new one is refused (bounded).
            refused = b""
            for _ in range(128):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(_post_head(port, "/rpc/echo", MIB).encode() + b" " * (MIB - 1))
                held.append(writer)
                status, headers, body = await http(
                    port, "POST", "/mcp", headers=CLIENT, body=b" " * 1024
                )
                if status == 503:
                    refused = body
                    break
            assert refused, "the budget never ran out"
            assert headers["retry-after"] == "1"
            assert headers["connection"] == "close"
            assert json.loads(refused) == {
                "ok": False,
                "error": {"code": 75, "message": "too many request bodies at once; retry later"},
            }
        finally:
            for writer in held:
                writer.close()
        # Once they are gone, bodies are read again (bounded wait for the daemon to notice).
        for _ in range(200):
            status, _, body = await http(
                port, "POST", "/rpc/echo", headers=CLIENT, body=b'{"text": "back"}'
            )
            if status == 200:
                break
            await asyncio.sleep(0.05)
    assert (status, json.loads(body)) == (200, {"ok": True, "data": {"text": "back"}})


@contextlib.contextmanager
def _fds(needed: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"needs {needed} file descriptors, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field}")


class _Stalled:
    """One connection that declares `MIB` bytes of body and sends all but the last one."""

    def __init__(self, port: int, path: str) -> None:
        self.port = port
        self.path = path
        self.answer = b""
        self.closed = False

    async def run(self, body: memoryview) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "x-local-client: stall\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"Content-Length: {MIB}\r\n\r\n"
        ).encode()

        async def send() -> None:
            writer.write(head)
            for start in range(0, MIB - 1, 64 * 1024):
                writer.write(body[start : min(start + 64 * 1024, MIB - 1)])
                await writer.drain()

        sending = asyncio.ensure_future(send())
        try:
            # Until the daemon closes the connection: EOF, or a reset for unread input.
            received = bytearray()
            with contextlib.suppress(ConnectionError, OSError):
                while chunk := await reader.read(65536):
                    received += chunk
            self.answer = bytes(received)
            self.closed = True
        finally:
            sending.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                await sending
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    @property
    def status(self) -> int:
        if self.answer.startswith(b"HTTP/1.1 "):
            return int(self.answer.split(b" ")[1])
        return 0  # closed without an answer reaching us


@contextlib.asynccontextmanager
async def _daemon(tmp_path: Path) -> AsyncIterator[DaemonProcess]:
    daemon = DaemonProcess(tmp_path / "state", "--tool-prefix", "t")
    try:
        await asyncio.to_thread(daemon.wait_ready)
        yield daemon
    finally:
        err = daemon.stop()
        assert "Traceback" not in err, err


@pytest.mark.slow
async def test_stalled_bodies_on_rpc_and_mcp_stay_bounded_and_are_closed(
    tmp_path: Path,
) -> None:
    with _fds(4 * 2 * _STALLED_PER_ROUTE + 256):
        async with _daemon(tmp_path) as daemon:
            port = daemon.port
            pid = daemon.process.pid
            # Warm both routes so their first allocations are not counted.
            for path in ("/rpc/echo", "/mcp"):
                await http(port, "POST", path, headers=CLIENT, body=b'{"text": "warm"}')
            before = _status_kib(pid, "VmRSS")
            body = memoryview(b" " * MIB)
            stalled = [
                _Stalled(port, path)
                for _ in range(_STALLED_PER_ROUTE)
                for path in ("/rpc/echo", "/mcp")
            ]
            tasks = [asyncio.ensure_future(one.run(body)) for one in stalled]
            peak = before
            health: list[int] = []
            started = time.monotonic()
            try:
                while not all(task.done() for task in tasks):
                    assert time.monotonic() - started < _CLOSE_BOUND, (
                        f"{sum(not one.closed for one in stalled)} stalled connections still open"
                    )
                    status, _, answer = await http(port, "GET", "/health")
                    health.append(status)
                    assert json.loads(answer)["ok"] is True
                    peak = max(peak, _status_kib(pid, "VmRSS"))
                    await asyncio.sleep(0.25)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            peak = max(peak, _status_kib(pid, "VmHWM"))
            for task in tasks:
                task.result()  # no client failed for another reason
            # The daemon still answers, and its memory stayed within the bound.
            status, _, answer = await http(
                port, "POST", "/rpc/echo", headers=CLIENT, body=b'{"text": "after"}'
            )
    assert status == 200, answer
    assert set(health) == {200}, health
    assert all(one.closed for one in stalled)
    statuses = {one.status for one in stalled}
    # Refused unread for want of budget (503), or late (408); a reset may eat either answer.
    assert statuses <= {503, 408, 0}, statuses
    assert 408 in statuses, statuses
    assert 503 in statuses, statuses
    assert peak - before < _RSS_BOUND_KIB, f"VmRSS grew {peak - before} KiB"
