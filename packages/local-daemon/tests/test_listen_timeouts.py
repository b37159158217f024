"""Slow and hostile clients on both listeners: dropped by the server within bounds, others served.

No timing assertion: each test waits (bounded, far above the daemon's own bounds) for the server
to close a connection it never closed itself, while `/health` keeps answering.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme

from daemon_raw_http import BOUND, closed_by_server, wait_until
from daemon_support import TESTS_DIR, http, running
from gate_support import trustme_pair
from local_daemon import Registry, RemoteOptions, ensure_token_file, start_daemon

# In-flight requests get this long once the daemon closes (the guide's SHUTDOWN_TIMEOUT).
SHUTDOWN_GRACE = 2.0
# Steps of a trickling client: one byte per step, at most this many steps.
TRICKLE_STEPS = 600
TRICKLE_PAUSE = 0.25


async def _health(port: int) -> int:
    status, _, _ = await http(port, "GET", "/health")
    return status


INCOMPLETE_HEADS = {
    "nothing": b"",
    "partial-request-line": b"GET /heal",
    "headers-never-end": b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n",
}


async def test_incomplete_request_heads_are_dropped_while_health_answers(tmp_path: Path) -> None:
    async with running(tmp_path) as handle:
        opened = [await asyncio.open_connection("127.0.0.1", handle.port) for _ in INCOMPLETE_HEADS]
        try:
            for (_reader, writer), first_bytes in zip(
                opened, INCOMPLETE_HEADS.values(), strict=True
            ):
                writer.write(first_bytes)
                await writer.drain()
            assert await _health(handle.port) == 200  # served while the slow ones wait
            closed = await asyncio.gather(*(closed_by_server(reader) for reader, _ in opened))
            assert dict(zip(INCOMPLETE_HEADS, closed, strict=True)) == dict.fromkeys(
                INCOMPLETE_HEADS, True
            )
            assert await _health(handle.port) == 200
        finally:
            for _, writer in opened:
                writer.close()


async def _trickle(port: int, head: bytes) -> tuple[bool, int]:
    """Send `head` then one header byte per step; return (closed by the server, bytes sent)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent = 0
    try:
        writer.write(head)
        await writer.drain()
        for step in range(TRICKLE_STEPS):
            try:
                writer.write(b"X-Slow: 1\r\n"[step % 11 : step % 11 + 1])
                await writer.drain()
            except ConnectionError:
                return True, sent
            sent += 1
            try:
                data = await asyncio.wait_for(reader.read(65536), TRICKLE_PAUSE)
            except TimeoutError:
                continue
            except ConnectionError:
                return True, sent
            if not data:
                return True, sent
        return False, sent
    finally:
        writer.close()


async def test_trickled_headers_are_dropped_while_health_answers(tmp_path: Path) -> None:
    async with running(tmp_path) as handle:
        head = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\n".encode()
        trickler = asyncio.create_task(_trickle(handle.port, head))
        # /health keeps answering, on fresh connections, while the trickler is connected.
        for _ in range(3):
            assert await _health(handle.port) == 200
        closed, sent = await trickler
        assert closed, f"still open after {sent} trickled bytes"
        assert sent > 0
        assert await _health(handle.port) == 200


async def test_idle_keep_alive_connection_is_closed(tmp_path: Path) -> None:
    async with running(tmp_path) as handle:
        reader, writer = await asyncio.open_connection("127.0.0.1", handle.port)
        try:
            for _ in range(2):  # kept alive between requests sent back to back
                writer.write(
                    f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\n\r\n".encode()
                )
                await writer.drain()
                status = await asyncio.wait_for(reader.readline(), BOUND)
                assert status.startswith(b"HTTP/1.1 200")
                headers = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), BOUND)
                length = next(
                    int(line.split(b":")[1])
                    for line in headers.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await asyncio.wait_for(reader.readexactly(length), BOUND)
            assert await closed_by_server(reader)
        finally:
            writer.close()


# --- the TLS listener, on 192.0.2.10 inside a namespace this test makes ---------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _remote(address: str, ca: trustme.CA, tmp_path: Path) -> RemoteOptions:
    return RemoteOptions(
        host=address,
        token_file=ensure_token_file(tmp_path / "token"),
        tls=trustme_pair(ca, tmp_path / "tls", address, "box.test"),
        tls_reload=3600.0,
    )


@pytest.fixture
async def remote_port(netns: str, ca: trustme.CA, tmp_path: Path) -> AsyncIterator[int]:
    """A daemon with its remote listener on the namespace's address; yield its port."""
    async with running(tmp_path, remote=_remote(netns, ca, tmp_path)) as handle:
        yield handle.port


def _client_ctx(ca: trustme.CA) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())


async def test_tls_handshakes_never_started_or_cut_short_are_dropped(
    netns: str, remote_port: int
) -> None:
    silent = await asyncio.open_connection(netns, remote_port)
    # A ClientHello cut short: the handshake can never finish.
    half = await asyncio.open_connection(netns, remote_port)
    try:
        half[1].write(bytes.fromhex("160301020001"))
        await half[1].drain()
        closed = await asyncio.gather(closed_by_server(silent[0]), closed_by_server(half[0]))
        assert list(closed) == [True, True]
    finally:
        silent[1].close()
        half[1].close()


async def test_tls_connection_without_a_request_is_dropped(
    netns: str, remote_port: int, ca: trustme.CA
) -> None:
    reader, writer = await asyncio.open_connection(
        netns, remote_port, ssl=_client_ctx(ca), server_hostname="box.test"
    )
    try:
        writer.write(f"GET /health HTTP/1.1\r\nHost: {netns}".encode())  # and never the rest
        await writer.drain()
        assert await closed_by_server(reader)
    finally:
        writer.close()


# --- out of file descriptors: one log line, no traceback per accept ------------------------------

_FD_LIMIT = 64


@pytest.mark.slow
async def test_fd_exhaustion_logs_one_line_and_loopback_recovers(tmp_path: Path) -> None:
    state = tmp_path / "state"
    err_path = tmp_path / "stderr"
    with err_path.open("wb") as err:
        proc = subprocess.Popen(
            ["prlimit", f"--nofile={_FD_LIMIT}:{_FD_LIMIT}", sys.executable, "-m",
             "local_daemon.cli", "serve", "daemon_support:demo_registry",
             "--state-dir", str(state), "--log-level", "info"],
            env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
            stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    held: list[socket.socket] = []
    try:
        from local_daemon import daemon_paths, read_pid_file

        paths = daemon_paths(state)
        for _ in range(3000):
            if read_pid_file(paths) == proc.pid:
                break
            assert proc.poll() is None
            await asyncio.sleep(0.02)
        port = int(json.loads(paths.meta_file.read_text())["port"])
        # More connections than the daemon has fds: the kernel completes them all (backlog),
        # the daemon's accept fails with EMFILE for the rest, again and again, each second.
        for _ in range(_FD_LIMIT + 40):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=BOUND))

        def logged() -> bool:
            return b"cannot accept connections" in err_path.read_bytes()

        await wait_until(logged, "the out-of-fds line")
        # Several of asyncio's one-second retry rounds pass while the table stays full.
        await asyncio.sleep(3.0)
        for sock in held:
            sock.close()
        held.clear()
        statuses = []
        for _ in range(int(BOUND / 0.1)):
            try:
                statuses.append(await _health(port))
            except (OSError, TimeoutError, IndexError, ValueError):
                await asyncio.sleep(0.1)
                continue
            if statuses[-1] == 200:
                break
        assert statuses[-1:] == [200]
    finally:
        for sock in held:
            sock.close()
        proc.terminate()
        proc.wait(timeout=BOUND)
    text = err_path.read_text(encoding="utf-8", errors="replace")
    assert text.count("cannot accept connections") == 1, text[-3000:]
    assert "Too many open files" in text
    assert "Traceback" not in text


async def test_remote_close_does_not_wait_for_a_request_still_running(
    netns: str, ca: trustme.CA, tmp_path: Path
) -> None:
    entered = asyncio.Event()
    registry = Registry()

    @registry.command
    async def slow() -> None:
        entered.set()
        await asyncio.Event().wait()  # never set: only the daemon's close ends it

    remote = _remote(netns, ca, tmp_path)
    secret = (tmp_path / "token").read_text().strip()
    handle = await start_daemon(
        registry=registry, version="1", state_dir=tmp_path / "state", remote=remote
    )
    try:
        reader, writer = await asyncio.open_connection(
            netns, handle.port, ssl=_client_ctx(ca), server_hostname="box.test"
        )
        writer.write(
            f"POST /rpc/slow HTTP/1.1\r\nHost: {netns}:{handle.port}\r\n"
            f"Authorization: Bearer {secret}\r\nContent-Type: application/json\r\n"
            "x-local-client: t\r\nContent-Length: 2\r\n\r\n{}".encode()
        )
        await writer.drain()
        await asyncio.wait_for(entered.wait(), BOUND)
        # The request is cancelled after the shutdown grace (2 s); aiohttp's own default would
        # hold the close for 60 s, past this bound.
        await asyncio.wait_for(handle.close(), SHUTDOWN_GRACE + 25)
        assert await closed_by_server(reader)
        writer.close()
    finally:
        await handle.close()
