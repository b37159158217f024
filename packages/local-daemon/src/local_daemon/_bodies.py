"""Request bodies: a deadline for every body, a budget for bodies buffered at once, one reader.

- Deadline: a body must arrive within `body_deadline(length)` of its request head: `BODY_TIMEOUT`
  (5 s), or longer for a large body at `BODY_RATE` (128 KiB/s), so the default 1 MiB cap's worth
  gets 8 s. A chunked body, whose length nobody knows ahead, must keep the same average pace.
  `body_deadline_middleware` arms one timer per request that has a body. When it fires before the
  body is complete, the body's stream fails with `BodyTimeoutError` (whoever reads it answers 408
  and the connection closes); a connection whose handler does not read (a stream that ignores
  its body) is closed `LINGERING_TIME` later.
- Budget: bodies being read into memory by `/rpc` and `/mcp` hold at most `MAX_BUFFERED_BODIES`
  bytes at once in this process (what each declares, or the cap of a chunked one). Past it, a
  new body is refused with 503 and `Retry-After` before a byte of it is read (`BodiesBusyError`),
  and the connection closes after the discard window; nothing queues. One body over the whole
  budget is still read when nothing else is.
- Bodies are parsed by `_json.parse_json`, the package's one JSON parser.
- `read_body` is the one reader: it holds at most what the body declares (or the cap), in one
  buffer of exactly that size when the length is known, and never more than the cap.

The budget is per process, like the memory it protects: the loopback and remote apps of a daemon
(and every app a test builds) share it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import hdrs, web

from ._guards import guard_refusal

__all__ = [
    "BODY_RATE",
    "BODY_TIMEOUT",
    "BUSY_RETRY_AFTER",
    "LINGERING_TIME",
    "MAX_BUFFERED_BODIES",
    "BodiesBusyError",
    "BodyBudget",
    "BodyIncompleteError",
    "BodyTimeoutError",
    "BodyTooLargeError",
    "body_deadline",
    "body_deadline_middleware",
    "read_body",
]

# The least time any request body gets to arrive, counted from its request head ...
BODY_TIMEOUT = 5.0
# ... and the average pace, in bytes per second, a larger one must keep (1 MiB: 8 s).
BODY_RATE = 128 * 1024
# Bytes of request bodies `/rpc` and `/mcp` hold while reading them, at most, at once.
MAX_BUFFERED_BODIES = 32 * 1024 * 1024
# Seconds a client refused for want of budget is told to wait (`Retry-After`).
BUSY_RETRY_AFTER = 1
# How long a refused body is discarded before the socket closes (the spec's 500 ms); also the
# grace a late body's handler gets before its connection is closed under it.
LINGERING_TIME = 0.5

_TEMPFAIL = 75  # sysexits EX_TEMPFAIL: try again later

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class BodyTimeoutError(TimeoutError):
    """The request body did not arrive within its deadline.

    A `TimeoutError`, so aiohttp's discard window after the answer takes it quietly.
    """


class BodiesBusyError(Exception):
    """Bodies buffered at once are at their budget: this one is refused unread."""


class BodyTooLargeError(Exception):
    """The body is over its cap."""


class BodyIncompleteError(Exception):
    """The body ended before the length it declared."""


def body_deadline(length: int) -> float:
    """Return the seconds a body of `length` bytes gets to arrive after its request head."""
    return max(BODY_TIMEOUT, length / BODY_RATE)


class BodyBudget:
    """Bytes of request bodies held at once, against a total."""

    __slots__ = ("in_use", "total")

    def __init__(self, total: int) -> None:
        self.total = total
        self.in_use = 0

    def take(self, size: int) -> bool:
        """Reserve `size` bytes; False when that would pass the total (and something is held)."""
        if self.in_use and self.in_use + size > self.total:
            return False
        self.in_use += size
        return True

    def give(self, size: int) -> None:
        """Release `size` bytes taken before."""
        self.in_use -= size


BUFFERED = BodyBudget(MAX_BUFFERED_BODIES)


class _BodyClock:
    """The deadline of one request's body: fails its stream, then closes its connection."""

    __slots__ = ("_handle", "_length", "_loop", "_request", "_started")

    def __init__(self, request: web.Request) -> None:
        self._request = request
        self._loop = asyncio.get_running_loop()
        self._started = self._loop.time()
        self._length = request.content_length  # None: chunked, judged by what has arrived
        deadline = body_deadline(self._length or 0)
        self._handle: asyncio.TimerHandle | None = self._loop.call_at(
            self._started + deadline, self._due
        )

    def _due(self) -> None:
        self._handle = None
        payload = self._request.content
        if payload.is_eof():
            return
        if self._length is None:
            # A chunked body that kept the pace so far gets the time what it sent earns.
            due = self._started + body_deadline(payload.total_bytes)
            if due > self._loop.time():
                self._handle = self._loop.call_at(due, self._due)
                return
        payload.set_exception(BodyTimeoutError())
        self._handle = self._loop.call_later(LINGERING_TIME, self._close)

    def _close(self) -> None:
        self._handle = None
        transport = self._request.transport
        if transport is not None:
            transport.close()

    def cancel(self) -> None:
        """Stop watching: the request's handler is done."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def _refusal(status: int, message: str, **headers: str) -> web.Response:
    response = guard_refusal(status, _TEMPFAIL, message)
    response.headers.update(headers)
    response.force_close()  # the rest of the body is discarded for at most LINGERING_TIME
    return response


@web.middleware
async def body_deadline_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Hold every request body to its deadline; answer a late one 408 and a refused one 503."""
    if not request.body_exists:
        return await handler(request)
    clock = _BodyClock(request)
    try:
        return await handler(request)
    except BodyTimeoutError:
        return _refusal(408, "request body did not arrive in time")
    except BodiesBusyError:
        response = _refusal(
            503,
            "too many request bodies at once; retry later",
            **{hdrs.RETRY_AFTER: str(BUSY_RETRY_AFTER)},
        )
        # Sent now and the connection closed: the body is never read, not even to discard it.
        await response.prepare(request)
        await response.write_eof()
        transport = request.transport
        if transport is not None:
            transport.close()
        return response
    finally:
        clock.cancel()


async def read_body(
    request: web.Request, cap: int, *, budget: BodyBudget = BUFFERED
) -> bytes | bytearray:
    """Read the whole body of `request`, at most `cap` bytes, within the shared budget.

    Raises `BodyTooLargeError` (declared or grown over `cap`, before or while reading),
    `BodiesBusyError` (the budget is full; nothing was read), `BodyIncompleteError`, and
    `BodyTimeoutError` from the stream when the deadline passes.
    """
    length = request.content_length
    if length is not None and length > cap:
        raise BodyTooLargeError()
    size = cap if length is None else length
    if not budget.take(size):
        raise BodiesBusyError()
    try:
        if length is None:
            return await _read_chunked(request, cap)
        return await _read_sized(request, length)
    finally:
        budget.give(size)


async def _read_sized(request: web.Request, length: int) -> bytes | bytearray:
    content = request.content
    first = await content.readany() if length else b""
    if len(first) == length:
        return first  # the usual case: the whole body in one piece, kept without a copy
    body = bytearray(length)
    with memoryview(body) as view:
        filled = 0
        chunk = first
        while True:
            if not chunk:
                raise BodyIncompleteError()
            end = filled + len(chunk)
            if end > length:  # pragma: no cover - aiohttp's parser feeds exactly `length`
                raise BodyTooLargeError()
            view[filled:end] = chunk
            filled = end
            if filled == length:
                break
            chunk = await content.readany()
    return body


async def _read_chunked(request: web.Request, cap: int) -> bytes:
    content = request.content
    chunks: list[bytes] = []
    held = 0
    while chunk := await content.readany():
        held += len(chunk)
        if held > cap:
            raise BodyTooLargeError()
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
