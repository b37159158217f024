"""`SseClient`: a raw `GET /events` reader for tests, parsing frames as they arrive."""

from __future__ import annotations

import asyncio

__all__ = ["SseClient"]

_TIMEOUT = 10.0


class SseClient:
    """A raw `GET /events` reader that parses frames as they arrive."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> SseClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _TIMEOUT)
        assert head.startswith(b"HTTP/1.1 200"), head
        assert b"text/event-stream" in head
        return cls(reader, writer)

    async def next_event(self) -> tuple[str, str]:
        """Return the next (event, data) pair, skipping chunk-size lines."""
        event, data = "", ""
        for _ in range(1000):
            line = (
                (await asyncio.wait_for(self.reader.readline(), _TIMEOUT)).decode().rstrip("\r\n")
            )
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
            elif line == "" and event:
                return event, data
            elif line == "0":
                raise EOFError  # the chunked stream's last chunk: the server ended it
            elif not line and self.reader.at_eof():
                raise EOFError
        raise AssertionError("no event")

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()
