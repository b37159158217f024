"""The four request guards, as aiohttp middlewares run in the spec's order before every route.

1. `Host` must be in the host allowlist (DNS rebinding), else 403.
2. A state-changing request with an `Origin` must name an allowed origin (cross-site), else 403.
3. A state-changing request without `Origin` must send a non-empty `x-local-client`, else 403
   (`/mcp` is exempt unless `Guards.mcp_client_header` is set: stock MCP clients cannot send it;
   so are a gate's OAuth token and registration endpoints).
4. A state-changing request must say `Content-Type: application/json`, else 415 (a gate's OAuth
   token endpoint also takes the form encoding OAuth prescribes).

Browsers cannot send `x-local-client` cross-site without a preflight the daemon never answers, and
a JSON content type cannot be sent by an HTML form (nor by `fetch` without that same preflight):
either one keeps web pages out, and `/mcp` keeps the second along with the Host and Origin guards.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from aiohttp import web

from ._headers import CLIENT_HEADER
from ._types import Middleware

__all__ = [
    "CLIENT_HEADER",
    "Guards",
    "guard_middlewares",
    "guard_refusal",
    "loopback_allowlist",
]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_FORBIDDEN = 77  # sysexits EX_NOPERM, the code a refused caller gets on every surface
_BAD_TYPE = 65  # sysexits EX_DATAERR

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Guards:
    """Extra Host names and origins the loopback listener accepts beside its defaults.

    `mcp_client_header=True` makes `/mcp` demand `x-local-client` like every other route; off by
    default, since stock MCP clients send no custom header (the other three guards still apply).

    `cors_origins` (none by default) are origins whose pages get CORS preflight answers and
    readable answers (`_cors`); each is also an allowed origin. Host guard still applies.
    """

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    mcp_client_header: bool = False
    cors_origins: tuple[str, ...] = ()


def guard_refusal(status: int, code: int, message: str) -> web.Response:
    """Return a guard's refusal: the error envelope with `Cache-Control: no-store`."""
    body = {"ok": False, "error": {"code": code, "message": message}}
    return web.json_response(body, status=status, headers={"Cache-Control": "no-store"})


def _host_form(host: str) -> str:
    """Return `host` as it appears in a Host header: lower case, IPv6 literals in brackets."""
    bare = host.strip().lower()
    inner = bare[1:-1] if bare.startswith("[") and bare.endswith("]") else bare
    try:
        address = ipaddress.ip_address(inner)
    except ValueError:
        return bare.rstrip(".")
    if address.version == 6:
        return f"[{address.compressed}]"
    return str(address)


def _has_port(entry: str) -> bool:
    if entry.startswith("["):
        return "]:" in entry
    return ":" in entry


def _origin_form(origin: str) -> str:
    return origin.strip().lower().rstrip("/")


def loopback_allowlist(
    *, host: str, port: int | None, guards: Guards | None = None
) -> tuple[frozenset[str], frozenset[str]]:
    """Return the loopback Host and Origin allowlists for a listener bound to `host:port`."""
    names = {*_LOOPBACK_NAMES, _host_form(host)}
    extra = guards.allowed_hosts if guards is not None else ()
    hosts: set[str] = set()
    for name in (*names, *(_host_form(entry) for entry in extra)):
        hosts.add(name)
        if port and not _has_port(name):
            hosts.add(f"{name}:{port}")
    origins = {f"{scheme}://{entry}" for entry in hosts for scheme in ("http", "https")}
    if guards is not None:
        origins.update(_origin_form(origin) for origin in guards.allowed_origins)
        origins.update(_origin_form(origin) for origin in guards.cors_origins)
    return frozenset(hosts), frozenset(origins)


def _is_json(content_type: str) -> bool:
    if content_type == "application/json":
        return True  # the common spelling, settled without splitting
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json"


def _is_form(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/x-www-form-urlencoded"


def guard_middlewares(
    allowed_hosts: Iterable[str],
    allowed_origins: Iterable[str],
    *,
    client_header_exempt: Callable[[web.Request], bool] | None = None,
    form_paths: frozenset[str] = frozenset(),
) -> list[Middleware]:
    """Return the four guards, in order, over exactly these allowlists (as one middleware: one
    coroutine frame per request instead of four, the checks and their order unchanged).

    `client_header_exempt(request)` true lets a request without `Origin` through guard 3 without
    `x-local-client`; it is asked only for such requests, so routes that send it pay nothing.
    A path in `form_paths` (the OAuth token endpoint, RFC 6749) also takes
    `application/x-www-form-urlencoded`; the Host and Origin guards still apply to it.
    """
    hosts = frozenset(entry.lower() for entry in allowed_hosts)
    origins = frozenset(_origin_form(origin) for origin in allowed_origins)
    safe = _SAFE_METHODS

    @web.middleware
    async def guards(request: web.Request, handler: Handler) -> web.StreamResponse:
        headers = request.headers
        # 1. Host. `request.host` falls back to the socket's name when Host is missing.
        if headers.get("Host", "").strip().lower() not in hosts:
            return guard_refusal(403, _FORBIDDEN, "Host not allowed")
        if request.method not in safe:
            # 2. Origin, when sent.
            origin = headers.get("Origin")
            if origin is not None:
                if _origin_form(origin) not in origins:
                    return guard_refusal(403, _FORBIDDEN, "Origin not allowed")
            # 3. x-local-client without Origin.
            elif not headers.get(CLIENT_HEADER, "").strip() and not (
                client_header_exempt is not None and client_header_exempt(request)
            ):
                return guard_refusal(
                    403, _FORBIDDEN, f"a request without Origin must send {CLIENT_HEADER}"
                )
            # 4. JSON content type.
            content_type = headers.get("Content-Type", "")
            if not _is_json(content_type) and not (
                request.path in form_paths and _is_form(content_type)
            ):
                return guard_refusal(415, _BAD_TYPE, "Content-Type must be application/json")
        return await handler(request)

    return [guards]
