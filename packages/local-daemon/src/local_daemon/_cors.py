"""CORS for the origins a product lists in `Guards.cors_origins`, and for no other.

A browser page on a listed origin (a browser-based MCP client such as the Inspector's web UI)
gets a preflight answer allowing `POST` with the MCP headers, and every answer it receives names
its origin and exposes `Mcp-Session-Id`. Nothing changes for any other origin: its preflight
gets no `Access-Control-*` header, so the browser never sends the real request. This runs after
the guards, so a foreign `Host` is still 403 (a preflight too), and a listed origin is in the
Origin guard's allowlist (`loopback_allowlist` adds it) while every other origin stays 403.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiohttp import hdrs, web
from aiohttp.typedefs import Middleware

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PrepareHook = Callable[[web.Request, web.StreamResponse], Awaitable[None]]

__all__ = ["ALLOW_HEADERS", "ALLOW_METHODS", "EXPOSE_HEADERS", "cors"]

# Set on a request that passed the guards from a listed origin: only its answer names the origin.
_GRANTED: web.RequestKey[str] = web.RequestKey("local_daemon.cors_origin", str)

ALLOW_METHODS = "GET, POST"
# What MCP's streamable HTTP transport sends beside the CORS-safelisted headers.
ALLOW_HEADERS = "Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
EXPOSE_HEADERS = "Mcp-Session-Id"
MAX_AGE = "600"


def _origin_form(origin: str) -> str:
    return origin.strip().lower().rstrip("/")


def cors(origins: Iterable[str]) -> tuple[Middleware, PrepareHook]:
    """Return the preflight middleware and the `on_response_prepare` hook for `origins`."""
    listed = frozenset(_origin_form(origin) for origin in origins)

    def granted(request: web.Request) -> str | None:
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is None or _origin_form(origin) not in listed:
            return None
        return origin

    @web.middleware
    async def preflight(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = granted(request)
        if origin is None:
            return await handler(request)
        request[_GRANTED] = origin
        if (
            request.method == hdrs.METH_OPTIONS
            and hdrs.ACCESS_CONTROL_REQUEST_METHOD in request.headers
        ):
            # The hook below adds the origin, `Vary` and the exposed headers.
            return web.Response(
                status=204,
                headers={
                    hdrs.ACCESS_CONTROL_ALLOW_METHODS: ALLOW_METHODS,
                    hdrs.ACCESS_CONTROL_ALLOW_HEADERS: ALLOW_HEADERS,
                    hdrs.ACCESS_CONTROL_MAX_AGE: MAX_AGE,
                    hdrs.CACHE_CONTROL: "no-store",
                },
            )
        return await handler(request)

    async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
        # Every answer, streamed ones too, before its headers go out; a guard's refusal never
        # reached the middleware above, so it names no origin.
        response.headers.add(hdrs.VARY, "Origin")
        origin = request.get(_GRANTED)
        if origin is not None:
            response.headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] = origin
            response.headers[hdrs.ACCESS_CONTROL_EXPOSE_HEADERS] = EXPOSE_HEADERS

    return preflight, on_prepare
