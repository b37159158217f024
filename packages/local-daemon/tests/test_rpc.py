"""`POST /rpc/{name}`: statuses in the spec's order, the envelope and the body cap."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from daemon_support import CANARY, CLIENT, DaemonProcess, http, push_chunked, rpc, running
from local_daemon import DEFAULT_RPC_BODY_LIMIT, AuthRecord, FormattedError, RpcBodyLimit


@pytest.fixture
async def port(tmp_path: Path) -> Any:
    async with running(
        tmp_path,
        rpc_body_limit=RpcBodyLimit(max_bytes=4096, per_command={"echo": 64 * 1024}),
        create_context=lambda surface, auth: {"surface": surface, "auth": auth},
    ) as handle:
        yield handle.port


async def test_success_envelope_and_context(port: int) -> None:
    assert await rpc(port, "echo", {"text": "héllo"}) == (
        200,
        {"ok": True, "data": {"text": "héllo"}},
    )
    status, body = await rpc(port, "whoami", {})
    assert (status, body) == (200, {"ok": True, "data": {"surface": "http", "auth": None}})


async def test_empty_body_means_no_arguments(port: int) -> None:
    status, _, body = await http(port, "POST", "/rpc/whoami", headers=CLIENT, body=b"")
    assert status == 200, body


@pytest.mark.parametrize(("code", "status"), [(64, 400), (65, 400), (75, 429), (77, 403)])
async def test_command_refusals(port: int, code: int, status: int) -> None:
    assert await rpc(port, "refuse", {"code": code}) == (
        status,
        {"ok": False, "error": {"code": code, "message": "refused"}},
    )


async def test_crash_is_500_without_leak(port: int, caplog: pytest.LogCaptureFixture) -> None:
    status, body = await rpc(port, "crash", {})
    assert status == 500
    assert body == {"ok": False, "error": {"code": 70, "message": "internal error"}}
    assert CANARY not in caplog.text


async def test_status_order(port: int) -> None:
    big = b"[" + b"1," * 3000 + b"1]"  # over the 4096 default cap, valid JSON
    bad = b"{not json"
    cases = [
        # (headers, path, body, expected): each row breaks its rule and every later one.
        ({"Content-Type": "text/plain"}, "/rpc/nope", big, 403),
        ({"x-local-client": "t", "Content-Type": "text/plain"}, "/rpc/nope", big, 415),
        (CLIENT, "/rpc/nope", big, 413),
        (CLIENT, "/rpc/nope", bad, 404),
        (CLIENT, "/rpc/echo", bad, 400),
        (CLIENT, "/rpc/echo", b'{"text": 1}', 400),
        (CLIENT, "/rpc/echo", b"[1]", 400),
    ]
    for headers, path, body, expected in cases:
        status, _, payload = await http(port, "POST", path, headers=headers, body=body)
        assert status == expected, (headers, path, body[:20], payload)
        assert json.loads(payload)["ok"] is False


async def test_too_large_envelope_and_per_command_cap(port: int) -> None:
    status, _, payload = await http(port, "POST", "/rpc/refuse", headers=CLIENT, body=b" " * 5000)
    assert status == 413
    assert json.loads(payload) == {
        "ok": False,
        "error": {"code": 64, "message": "request body too large"},
    }
    text = "x" * 10_000  # over the default cap, under echo's own
    assert (await rpc(port, "echo", {"text": text}))[0] == 200
    assert (await rpc(port, "echo", {"text": "x" * 70_000}))[0] == 413


async def test_content_length_over_cap_is_refused_before_the_body(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"POST /rpc/whoami HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-local-client: t\r\n"
            "Content-Type: application/json\r\nContent-Length: 999999999\r\n\r\n".encode()
        )
        await writer.drain()
        # No byte of the body was sent; the answer comes anyway, and the socket closes.
        data = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
        await writer.wait_closed()
    assert data.startswith(b"HTTP/1.1 413 ")


async def test_never_ending_chunked_body_gets_413_and_the_socket_closes(port: int) -> None:
    # 8 GiB takes loopback many seconds, far past the 0.5 s discard window: the server must
    # close the socket long before the client runs out.
    limit = 8 * 1024 * 1024 * 1024
    status, sent = await push_chunked(port, "/rpc/whoami", limit)
    assert status == 413
    assert sent < limit, "the server closed the socket before the body ended"


async def test_gate_record_reaches_create_context(tmp_path: Path) -> None:
    from daemon_raw_http import serve_app
    from daemon_support import demo_registry
    from local_daemon import build_http_app, create_daemon_auth, ensure_token_file

    token_file = ensure_token_file(tmp_path / "token")
    secret = Path(token_file).read_text().strip()
    seen: list[tuple[str, AuthRecord | None]] = []

    def create_context(surface: str, auth: AuthRecord | None) -> str:
        seen.append((surface, auth))
        return "ctx"

    # The app takes a DaemonAuth and installs the gate middleware around it itself.
    app = build_http_app(
        registry=demo_registry(),
        version="1",
        gate=create_daemon_auth(token_file),
        create_context=create_context,
    )
    async with serve_app(app) as gated_port:
        status, _ = await rpc(gated_port, "whoami", {}, headers={"authorization": "Bearer no"})
        assert status == 401
        status, body = await rpc(
            gated_port, "whoami", {}, headers={"authorization": f"Bearer {secret}"}
        )
    assert (status, body) == (200, {"ok": True, "data": "ctx"})
    assert [(surface, auth and auth.credential) for surface, auth in seen] == [("http", "bearer")]
    record = seen[0][1]
    assert record is not None
    assert record.peer_local is True


async def test_format_error_on_http(tmp_path: Path) -> None:
    def fmt(exc: BaseException) -> FormattedError:
        return FormattedError(message=f"sorry: {type(exc).__name__}", code=75)

    async with running(tmp_path, format_error=fmt) as handle:
        assert await rpc(handle.port, "crash", {}) == (
            429,
            {"ok": False, "error": {"code": 75, "message": "sorry: RuntimeError"}},
        )


async def test_blocking_sync_command_does_not_stop_health(tmp_path: Path) -> None:
    from daemon_support import demo_registry

    gate = threading.Event()
    entered = threading.Event()
    async with running(tmp_path, registry=demo_registry(gate, entered)) as handle:
        blocked = asyncio.ensure_future(rpc(handle.port, "block", {}))
        try:
            # The command is running (and holding its thread) before /health is asked.
            assert await asyncio.to_thread(entered.wait, 10)
            for _ in range(3):
                status, _, _ = await http(handle.port, "GET", "/health")
                assert status == 200
            assert not blocked.done()
        finally:
            gate.set()
        assert await blocked == (200, {"ok": True, "data": "unblocked"})


def test_default_cap() -> None:
    assert DEFAULT_RPC_BODY_LIMIT == 1024 * 1024
    assert RpcBodyLimit().cap_for("x") == DEFAULT_RPC_BODY_LIMIT
    with pytest.raises(ValueError):
        RpcBodyLimit(max_bytes=-1)


async def test_daemon_rss_stays_flat_under_200_mib_of_chunked_body(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "state")
    try:
        port = await asyncio.to_thread(daemon.wait_ready)
        # Warm up the code paths once so their first allocations are not counted.
        await push_chunked(port, "/rpc/whoami", 4 * 1024 * 1024)
        before = daemon.rss_kib()
        pushed = 0
        statuses = set()
        for _ in range(400):  # bounded; each connection is cut after the discard window
            status, sent = await push_chunked(port, "/rpc/whoami", 200 * 1024 * 1024 - pushed)
            statuses.add(status)
            pushed += sent
            if pushed >= 200 * 1024 * 1024:
                break
        after = daemon.rss_kib()
    finally:
        err = daemon.stop()
    assert pushed >= 200 * 1024 * 1024
    # Each body is refused: over the cap (413), or, on a machine too loaded to push the cap's
    # worth within the body deadline, too slow (408). Neither is ever held in memory.
    assert statuses, statuses
    assert statuses <= {413, 408}, statuses
    assert after - before < 20 * 1024, f"VmRSS grew {after - before} KiB"
    assert daemon.process.returncode == 0, err


async def test_every_runner_gets_the_discard_window() -> None:
    from aiohttp import web

    from daemon_support import demo_registry
    from local_daemon import build_http_app

    app = build_http_app(registry=demo_registry(), version="1")
    # A bare AppRunner, as the remote listener runs its app: the window comes with the app,
    # not from start_daemon's own runner (aiohttp's default would discard for 10 s).
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        assert runner.server is not None
        # The spec's discard window: at most 500 ms.
        assert 0 < runner.server()._lingering_time <= 0.5
    finally:
        await runner.cleanup()
