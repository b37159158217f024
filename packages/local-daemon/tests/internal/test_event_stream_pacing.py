"""The `/events` handler's pacing: a ping on its interval between events, and a client that
falls behind by more than its queue is dropped, never buffered without bound."""

from __future__ import annotations

import asyncio

from aiohttp import web

from daemon_raw_http import serve_app
from local_daemon import EventHub
from local_daemon._events import events_handler
from sse_client import SseClient


async def test_ping_on_the_interval() -> None:
    hub = EventHub()
    app = web.Application()
    app.router.add_get("/events", events_handler(hub, ready_data=dict, ping_interval=0.05))
    async with serve_app(app) as port:
        client = await SseClient.open(port)
        try:
            assert (await client.next_event())[0] == "ready"
            assert await client.next_event() == ("ping", "{}")
            hub.broadcast("change", {"paths": ["x"]})
            for _ in range(100):
                event = await client.next_event()
                if event[0] == "change":
                    break
            assert event == ("change", '{"paths":["x"]}')
        finally:
            hub.close()
            await client.close()


async def test_slow_client_is_dropped_not_buffered() -> None:
    hub = EventHub()
    app = web.Application()
    app.router.add_get("/events", events_handler(hub, ready_data=dict, max_pending=8))
    async with serve_app(app) as port:
        slow = await SseClient.open(port)
        fast_events: list[str] = []
        try:
            assert (await slow.next_event())[0] == "ready"
            assert len(hub) == 1
            # Nothing runs between these broadcasts, so the client's queue must absorb them all.
            delivered = [hub.broadcast("change", {"n": n}) for n in range(1000)]
            assert len(hub) == 0, "the client that fell behind was dropped"
            assert delivered[:8] == [1] * 8
            assert sum(delivered) <= 9
            for _ in range(20):
                try:
                    fast_events.append((await slow.next_event())[0])
                except (EOFError, asyncio.IncompleteReadError):
                    break
        finally:
            hub.close()
            await slow.close()
    assert len(fast_events) <= 8
