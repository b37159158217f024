"""`EventHub` and the `/events` server-sent event stream.

Each stream client gets a bounded queue. A client that falls `MAX_PENDING_EVENTS` behind is
dropped: its stream ends, and an `EventSource` reconnects and gets a fresh `ready`, the signal to
re-read everything. One slow client can therefore neither wedge the others nor grow memory.

A `change` event lists at most `MAX_CHANGE_PATHS` paths: a checkout of a big tree would
otherwise send one huge frame to every client. Past the cap it lists the first ones and says
`"truncated": true` with the whole `count`, which tells a client to re-read everything.

Behind the gate a stream lives only as long as its credential: every `AUTH_RECHECK_INTERVAL`
seconds it asks the gate again, and a revoked session (`sessions revoke`, a sign-out elsewhere)
or a rotated token file ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from ._types import STILL_AUTHORISED_KEY

__all__ = [
    "AUTH_RECHECK_INTERVAL",
    "MAX_CHANGE_PATHS",
    "MAX_PENDING_EVENTS",
    "PING_INTERVAL",
    "EventHub",
    "Subscriber",
    "change_event_data",
    "events_handler",
    "format_sse",
]

_log = logging.getLogger("local_daemon")

PING_INTERVAL = 25.0
AUTH_RECHECK_INTERVAL = 1.0
MAX_PENDING_EVENTS = 256
MAX_CHANGE_PATHS = 1000

Subscriber = Callable[[str, Any], None]


def format_sse(event: str, data: Any) -> bytes:
    """Return one server-sent event frame with `data` as one line of JSON."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event}\ndata: {payload}\n\n".encode()


def change_event_data(paths: Sequence[str], *, limit: int = MAX_CHANGE_PATHS) -> dict[str, Any]:
    """Return a `change` event's data: `{"paths": [...]}`, cut to `limit` paths with a count."""
    if len(paths) <= limit:
        return {"paths": list(paths)}
    return {"paths": list(paths[:limit]), "truncated": True, "count": len(paths)}


class EventHub:
    """Fan events out to subscribers; a subscriber that raises is dropped, the rest still get it."""

    def __init__(self, *, logger: logging.Logger | None = None) -> None:
        self._subscribers: dict[int, Subscriber] = {}
        self._next = 0
        self._closed = False
        self._on_close: list[Callable[[], None]] = []
        self._log = logger or _log

    def __len__(self) -> int:
        return len(self._subscribers)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add `subscriber(event, data)`; return a function that removes it."""
        key = self._next
        self._next += 1
        self._subscribers[key] = subscriber

        def unsubscribe() -> None:
            self._subscribers.pop(key, None)

        return unsubscribe

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Remove every registration of `subscriber`."""
        for key, existing in list(self._subscribers.items()):
            if existing == subscriber:
                del self._subscribers[key]

    def broadcast(self, event: str, data: Any = None) -> int:
        """Call every subscriber with `(event, data)`; return how many received it."""
        delivered = 0
        for key, subscriber in list(self._subscribers.items()):
            try:
                subscriber(event, data)
            except Exception as exc:
                self._subscribers.pop(key, None)
                self._log.warning("dropped an event subscriber that raised %s", type(exc).__name__)
            else:
                delivered += 1
        return delivered

    @property
    def closed(self) -> bool:
        """True once `close()` ran: streams end and new ones are refused."""
        return self._closed

    def on_close(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when the hub closes; return a function that cancels that."""
        self._on_close.append(callback)

        def cancel() -> None:
            with contextlib.suppress(ValueError):
                self._on_close.remove(callback)

        return cancel

    def close(self) -> None:
        """End every open stream (the daemon calls this before its sockets close)."""
        self._closed = True
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            callback()


class _Dropped(Exception):
    """The client fell too far behind."""


_END = object()
_PING = object()
_PING_FRAME = format_sse("ping", {})


def events_handler(
    hub: EventHub,
    *,
    ready_data: Callable[[], Any],
    ping_interval: float = PING_INTERVAL,
    max_pending: int = MAX_PENDING_EVENTS,
    recheck_interval: float = AUTH_RECHECK_INTERVAL,
) -> Callable[[web.Request], Any]:
    """Return the `/events` handler: `ready` on connect, then hub events and a `ping` timer."""
    # One broadcast reaches every stream with the same objects: encode the frame once for all.
    last: list[Any] = [None, None, b""]

    def frame(event: str, data: Any) -> bytes:
        if last[0] != event or last[1] is not data:
            last[:] = [event, data, format_sse(event, data)]
        encoded: bytes = last[2]
        return encoded

    async def handle(request: web.Request) -> web.StreamResponse:
        if hub.closed:
            raise web.HTTPServiceUnavailable()
        queue: asyncio.Queue[object] = asyncio.Queue(maxsize=max_pending)

        def deliver(event: str, data: Any) -> None:
            try:
                queue.put_nowait((event, data))
            except asyncio.QueueFull:
                # Raising drops this subscriber from the hub; the stream then ends below.
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
                queue.put_nowait(_END)
                raise _Dropped() from None

        def end() -> None:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(_END)
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
                queue.put_nowait(_END)

        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache, no-store",
                "X-Accel-Buffering": "no",
            }
        )
        loop = asyncio.get_running_loop()
        ping_timer: asyncio.TimerHandle | None = None

        def tick() -> None:
            # One timer per stream, never re-armed per event: a broadcast to many streams costs
            # no timer work. An idle stream (nothing queued) gets the ping.
            nonlocal ping_timer
            if queue.empty():
                queue.put_nowait(_PING)
            ping_timer = loop.call_later(ping_interval, tick)

        still_authorised = request.get(STILL_AUTHORISED_KEY)
        recheck_timer: asyncio.TimerHandle | None = None

        def recheck() -> None:
            nonlocal recheck_timer
            assert still_authorised is not None
            try:
                authorised = still_authorised()
            except Exception as exc:  # a failed check never becomes a yes
                _log.error("events: the credential check failed: %s", type(exc).__name__)
                authorised = False
            if authorised:
                recheck_timer = loop.call_later(recheck_interval, recheck)
            else:
                end()

        unsubscribe = hub.subscribe(deliver)
        cancel_end = hub.on_close(end)
        try:
            await response.prepare(request)
            await response.write(format_sse("ready", ready_data()))
            ping_timer = loop.call_later(ping_interval, tick)
            if still_authorised is not None:
                recheck_timer = loop.call_later(recheck_interval, recheck)
            ended = False
            while not ended:
                item = await queue.get()
                frames: list[bytes] = []
                # Whatever else is already queued goes out in the same write.
                while True:
                    if item is _END:
                        ended = True
                        break
                    if item is _PING:
                        frames.append(_PING_FRAME)
                    else:
                        assert isinstance(item, tuple)
                        frames.append(frame(item[0], item[1]))
                    if queue.empty():
                        break
                    item = queue.get_nowait()
                if frames:
                    await response.write(frames[0] if len(frames) == 1 else b"".join(frames))
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            if ping_timer is not None:
                ping_timer.cancel()
            if recheck_timer is not None:
                recheck_timer.cancel()
            unsubscribe()
            cancel_end()
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response

    return handle
