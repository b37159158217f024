"""An open `/events` stream lives only as long as its credential.

Revoking a device's session (`local-daemon sessions revoke`, `revoke_session`) or rotating the
token file ends that device's open streams; every other stream stays open.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from daemon_raw_http import serve_app
from local_daemon import (
    EventHub,
    Registry,
    build_http_app,
    create_daemon_auth,
    ensure_token_file,
    revoke_session,
    rotate_token_file,
)

# Far more than the daemon's one-second recheck: a stream that outlives it was not ended.
_WAIT = 15.0


class Stream:
    """A raw `GET /events` with `Connection: close`: its end is the socket's EOF."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, credential: str) -> Stream:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{credential}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        stream = cls(reader, writer)
        async with asyncio.timeout(_WAIT):
            assert (await reader.readline()).startswith(b"HTTP/1.1 200 ")
            await stream.until(b"event: ready")
        return stream

    async def until(self, needle: bytes) -> None:
        """Read until `needle` arrives; fail on EOF first."""
        seen = b""
        while needle not in seen:
            chunk = await self.reader.read(4096)
            assert chunk, f"the stream ended before {needle!r}"
            seen += chunk

    async def ended(self) -> None:
        """Return once the server has closed the stream (fail after the bounded wait)."""
        async with asyncio.timeout(_WAIT):
            while await self.reader.read(4096):
                pass

    def close(self) -> None:
        self.writer.close()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return ensure_token_file(tmp_path / "token")


@pytest.fixture
def sessions_file(tmp_path: Path) -> Path:
    (tmp_path / "state").mkdir(mode=0o700)
    return tmp_path / "state" / "sessions.json"


async def test_revoking_a_session_ends_that_device_s_streams_only(
    token_file: Path, sessions_file: Path
) -> None:
    auth = create_daemon_auth(token_file, sessions_file=sessions_file)
    phone, laptop = auth.issue_session_cookie(), auth.issue_session_cookie()
    hub = EventHub()
    app = build_http_app(registry=Registry(), version="1", gate=auth, hub=hub)
    async with serve_app(app) as port:
        phone_streams = [await Stream.open(port, f"Cookie: local_session={phone}") for _ in "ab"]
        laptop_stream = await Stream.open(port, f"Cookie: local_session={laptop}")
        try:
            assert await asyncio.to_thread(revoke_session, sessions_file, phone.split(".")[2])
            for stream in phone_streams:
                await stream.ended()
            hub.broadcast("change", {"paths": ["still-here.txt"]})
            async with asyncio.timeout(_WAIT):
                await laptop_stream.until(b"still-here.txt")
        finally:
            for stream in [*phone_streams, laptop_stream]:
                stream.close()


async def test_rotating_the_token_ends_every_stream(token_file: Path, sessions_file: Path) -> None:
    auth = create_daemon_auth(token_file, sessions_file=sessions_file)
    cookie = auth.issue_session_cookie()
    bearer = token_file.read_text().strip()
    app = build_http_app(registry=Registry(), version="1", gate=auth, hub=EventHub())
    async with serve_app(app) as port:
        streams = [
            await Stream.open(port, f"Cookie: local_session={cookie}"),
            await Stream.open(port, f"Authorization: Bearer {bearer}"),
        ]
        try:
            await asyncio.to_thread(rotate_token_file, token_file)
            for stream in streams:
                await stream.ended()
        finally:
            for stream in streams:
                stream.close()
