"""One aiohttp request seen as an ASGI HTTP connection: how the daemon runs the `mcp` SDK's
ASGI pieces (the streamable-HTTP transport, the OAuth handlers) inside its own aiohttp app.

Pure aiohttp and asyncio: importing it imports no `mcp`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import web

__all__ = ["AsgiBridge", "run_asgi"]

_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"upgrade"})


class AsgiBridge:
    """One aiohttp request seen as an ASGI HTTP connection: body in through `receive`, answer out
    through `send` into a `web.StreamResponse` that streams as the ASGI app writes."""

    def __init__(self, request: web.Request, body: bytes | bytearray | None = None) -> None:
        self.request = request
        self._buffered = body  # the body, when it was already read off the connection
        self.response: web.StreamResponse | None = None
        self.finished = False
        self._status = 500
        self._headers: list[tuple[bytes, bytes]] = []
        self._body_done = False
        transport = request.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        sock = transport.get_extra_info("sockname") if transport is not None else None
        self.scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": f"{request.version.major}.{request.version.minor}",
            "method": request.method,
            "scheme": request.scheme,
            "path": request.path,
            "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
            "query_string": request.rel_url.raw_query_string.encode("latin-1"),
            "root_path": "",
            "headers": [(name.lower(), value) for name, value in request.raw_headers],
            "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
            "server": tuple(sock[:2]) if isinstance(sock, tuple) else None,
            "state": {},
        }

    async def receive(self) -> dict[str, Any]:
        if self._buffered is not None and not self._body_done:
            self._body_done = True
            return {"type": "http.request", "body": self._buffered, "more_body": False}
        if not self._body_done:
            chunk = await self.request.content.readany()
            self._body_done = not chunk or self.request.content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not self._body_done}
        # aiohttp gives no disconnect event; the transport's own watcher is cancelled with the
        # request, so waiting here for the lifetime of the handler is the honest answer.
        await _forever()
        raise AssertionError("unreachable")  # pragma: no cover

    async def send(self, message: Mapping[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self._status = int(message["status"])
            self._headers = list(message.get("headers", ()))
            return
        if kind != "http.response.body" or self.finished:
            return
        if self.response is None:
            response = web.StreamResponse(status=self._status)
            for name, value in self._headers:
                if name.lower() not in _HOP_BY_HOP:
                    response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(self.request)
            self.response = response
        body = message.get("body", b"")
        try:
            if body:
                await self.response.write(body)
            if not message.get("more_body", False):
                self.finished = True
                await self.response.write_eof()
        except ConnectionResetError:
            # The client left mid-stream (a progress stream it stopped reading): nothing more
            # can reach it, and that is no server error to log.
            self.finished = True


async def _forever() -> None:
    await asyncio.Event().wait()


async def run_asgi(
    app: Any, request: web.Request, body: bytes | bytearray | None
) -> web.StreamResponse:
    """Run the ASGI `app` for one request (its body already read) and return its answer."""
    bridge = AsgiBridge(request, body)
    await app(bridge.scope, bridge.receive, bridge.send)
    if bridge.response is None:
        return web.Response(status=500, text="Internal Server Error")
    if not bridge.finished:
        bridge.finished = True
        await bridge.response.write_eof()
    return bridge.response
