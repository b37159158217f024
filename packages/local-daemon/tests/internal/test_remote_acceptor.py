"""The remote listener's accept loop: its cap on unauthenticated connections, how a connection
stops counting, and the one-line log that replaces asyncio's traceback per failed accept.

White-box: the cap is a quarter of the fd limit, too many connections for a test to hold, so it is
lowered on the listener itself (tests-integration floods the real one through its fd limit).
The listener is bound on 127.0.0.1 here, which the public route refuses.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme

from daemon_raw_http import BOUND, closed_by_server, wait_until
from gate_support import build_test_app, trustme_pair
from local_daemon import RemoteOptions, ensure_token_file
from local_daemon._listen import IDLE_TIMEOUT, TLS_HANDSHAKE_TIMEOUT, AcceptErrorLog
from local_daemon._remote import RemoteListener, open_remote_listener


def test_bounds_are_a_few_seconds() -> None:
    assert 1.0 <= IDLE_TIMEOUT <= 10.0
    assert 1.0 <= TLS_HANDSHAKE_TIMEOUT <= 30.0


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def listener(ca: trustme.CA, tmp_path: Path) -> AsyncIterator[RemoteListener]:
    remote = RemoteOptions(
        host="127.0.0.1",
        token_file=ensure_token_file(tmp_path / "token"),
        tls=trustme_pair(ca, tmp_path / "tls", "127.0.0.1", "box.test"),
        tls_reload=3600.0,
    )
    listener = await open_remote_listener(remote=remote, port=0, build_app=build_test_app)
    try:
        yield listener
    finally:
        await listener.close()


def _client_ctx(ca: trustme.CA) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())


async def _raw_connections(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=BOUND) for _ in range(count)]


def _whoami(port: int, secret: str | None) -> bytes:
    bearer = "" if secret is None else f"Authorization: Bearer {secret}\r\n"
    return (
        f"POST /rpc/whoami HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{bearer}"
        "Content-Type: application/json\r\nx-local-client: t\r\nContent-Length: 2\r\n\r\n{}"
    ).encode()


async def test_unauthenticated_connections_are_capped(
    listener: RemoteListener, ca: trustme.CA, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    acceptor = listener.acceptor
    acceptor.cap = 6
    held = await _raw_connections(listener.port, 6)
    try:
        await wait_until(lambda: acceptor.unauthenticated() == 6, "six pending handshakes")
        with caplog.at_level(logging.ERROR, logger="local_daemon"):
            # Past the cap: each new connection is accepted and closed at once, with no reply.
            for _ in range(5):
                reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
                assert await closed_by_server(reader)
                writer.close()
        assert acceptor.refused == 5
        lines = [r.getMessage() for r in caplog.records if "without a credential" in r.getMessage()]
        assert len(lines) == 1, lines
    finally:
        for sock in held:
            sock.close()
    await wait_until(lambda: acceptor.unauthenticated() == 0, "the held connections gone")
    # Below the cap again: a client with a credential is served, and once its request passed the
    # gate its connection no longer counts.
    secret = (tmp_path / "token").read_text().strip()
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", listener.port, ssl=_client_ctx(ca), server_hostname="box.test"
    )
    try:
        writer.write(_whoami(listener.port, secret))
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), BOUND)
        assert status.startswith(b"HTTP/1.1 200")
        assert acceptor.unauthenticated() == 0
    finally:
        writer.close()


async def test_unauthenticated_tls_connections_count_until_they_show_a_credential(
    listener: RemoteListener, ca: trustme.CA
) -> None:
    acceptor = listener.acceptor
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", listener.port, ssl=_client_ctx(ca), server_hostname="box.test"
    )
    try:
        await wait_until(lambda: acceptor.unauthenticated() == 1, "one connection counted")
        writer.write(_whoami(listener.port, None))
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), BOUND)
        assert status.startswith(b"HTTP/1.1 401")
        assert acceptor.unauthenticated() == 1  # a 401 does not count as a credential
    finally:
        writer.close()


async def test_accept_error_log_turns_asyncio_tracebacks_into_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    seen: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    log = logging.getLogger("local_daemon")
    accept_log = AcceptErrorLog(loop, log)
    try:
        with caplog.at_level(logging.DEBUG, logger="local_daemon"):
            for _ in range(300):
                loop.call_exception_handler(
                    {
                        "message": "socket.accept() out of system resource",
                        "exception": OSError(24, "Too many open files"),
                    }
                )
            loop.call_exception_handler({"message": "something else"})
        assert [r.getMessage() for r in caplog.records] == [
            "cannot accept connections: Too many open files; retrying every second"
        ]
        assert all(r.exc_info is None for r in caplog.records)
        assert [c["message"] for c in seen] == ["something else"]  # passed on
    finally:
        accept_log.uninstall()
    assert loop.get_exception_handler() is not accept_log
    loop.set_exception_handler(None)


async def test_accept_error_log_silences_the_accept_retry_of_a_closed_listener() -> None:
    # CPython's selector loop re-adds a listener a second after a failed accept; a timer still
    # pending when the server closed fails on fileno() -1. That is no error of the daemon's.
    loop = asyncio.get_running_loop()
    seen: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    accept_log = AcceptErrorLog(loop, logging.getLogger("local_daemon"))
    try:
        loop.call_exception_handler(
            {
                "message": "Exception in callback BaseSelectorEventLoop._start_serving(<x>, <s>)",
                "exception": ValueError("Invalid file descriptor: -1"),
            }
        )
        other = {"message": "Exception in callback f()", "exception": ValueError("other")}
        loop.call_exception_handler(other)
        assert seen == [other]  # only the retry is silenced
    finally:
        accept_log.uninstall()
        loop.set_exception_handler(None)
