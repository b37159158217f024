"""Raw HTTP/1.1 over a socket (for targets a client would normalise), a server fixture, and
bounded waits for what a server does to a connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web
from multidict import CIMultiDict

__all__ = ["BOUND", "RawResponse", "closed_by_server", "raw_request", "serve_app", "wait_until"]

_TIMEOUT = 10.0
# Every wait for the server to act is bounded by this (the daemon's own bounds are 5 and 10 s).
BOUND = 60.0


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """Wait (bounded) until the server closes: EOF or reset, with nothing sent by us after."""
    try:
        data = await asyncio.wait_for(reader.read(65536), BOUND)
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    if data:
        # A reply (e.g. a 408 or 400) may come first; the close must follow.
        return await closed_by_server(reader)
    return True


async def wait_until(predicate: Callable[[], bool], what: str) -> None:
    """Poll `predicate` (bounded by `BOUND`) until it holds."""
    for _ in range(int(BOUND / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RawResponse:
    status: int
    headers: CIMultiDict[str]
    body: bytes


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    for _ in range(100_000):
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[:size]
        data = data[size + 2 :]
    raise AssertionError("too many chunks")


async def raw_request(
    port: int,
    method: str,
    target: str | bytes,
    *,
    headers: Mapping[str, str] | None = None,
    body: bytes = b"",
    host: str | None = None,
) -> RawResponse:
    """Send one request with `target` exactly as given and read the whole answer."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), _TIMEOUT)
    try:
        raw_target = target.encode("latin-1") if isinstance(target, str) else target
        lines = [method.encode() + b" " + raw_target + b" HTTP/1.1"]
        all_headers = {"Host": host or f"127.0.0.1:{port}", "Connection": "close"}
        if body or method in ("POST", "PUT"):
            all_headers["Content-Length"] = str(len(body))
        all_headers.update(headers or {})
        lines += [f"{k}: {v}".encode("latin-1") for k, v in all_headers.items()]
        writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), _TIMEOUT)
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, payload = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed: CIMultiDict[str] = CIMultiDict()
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed.add(name.strip(), value.strip())
    if parsed.get("Transfer-Encoding", "").lower() == "chunked":
        payload = _dechunk(payload)
    return RawResponse(status=int(status_line.split(" ")[1]), headers=parsed, body=payload)


@asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[int]:
    """Run `app` on 127.0.0.1:0 and yield the bound port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        assert isinstance(port, int)
        yield port
    finally:
        await runner.cleanup()
