"""`build_http_app`: the daemon's aiohttp app, testable alone by issuing requests to it.

Middleware order is the spec's, after the body deadline (`_bodies`): the guards, then the gate
(when given), then the routes (`/health`, `/version`, `/events`, `/rpc/{name}`, `/openapi.json`
when asked for, `/mcp` when a tool prefix is set), then the product's own routes from
`mount_routes`.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler, Middleware

from ._bodies import LINGERING_TIME, body_deadline_middleware
from ._config import AppOptions
from ._events import EventHub, events_handler
from ._guards import Guards, guard_middlewares, loopback_allowlist
from ._invoke import INTERNAL_ERROR_CODE, INTERNAL_ERROR_MESSAGE
from ._listen import IDLE_TIMEOUT
from ._rpc import RpcBodyLimit, rpc_handler

if TYPE_CHECKING:
    from ._tasks import TaskStore

from ._types import (
    CommandRegistry,
    ContextFactory,
    ErrorFormatter,
    Gate,
    HealthFn,
    MountRoutes,
)

__all__ = ["LIFECYCLE_KEY", "Lifecycle", "build_app", "build_http_app"]

_log = logging.getLogger("local_daemon")


class _OneLineBadRequests(logging.Filter):
    """A request aiohttp's parser refuses (it answers 400) logs one line, never a traceback: a
    hostile client must not fill the journal, and the line never quotes the request's bytes,
    which may hold a credential."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg = f"{record.getMessage()}: malformed request ({type(exc).__name__})"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


# aiohttp's per-connection errors go here instead of its own `aiohttp.server` logger.
_http_log = logging.getLogger("local_daemon.http")
_http_log.addFilter(_OneLineBadRequests())


@dataclass(slots=True, kw_only=True)
class Lifecycle:
    """Readiness shared by every app of one daemon: `/health` answers 503 until `ready`."""

    ready: bool = True
    port: int | None = None
    started: float = field(default_factory=time.monotonic)


LIFECYCLE_KEY: web.AppKey[Lifecycle] = web.AppKey("local_daemon.lifecycle", Lifecycle)

_NO_STORE = {"Cache-Control": "no-store"}


def _bound_port(request: web.Request) -> int | None:
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        return int(sockname[1])
    return None


def _guards_by_bound_port(
    host: str | None,
    guards: Guards | None,
    exempt: Callable[[web.Request], bool] | None,
    form_paths: frozenset[str],
) -> Middleware:
    chains: dict[int | None, list[Any]] = {}

    @web.middleware
    async def guards_for_port(request: web.Request, handler: Handler) -> web.StreamResponse:
        port = _bound_port(request)
        chain = chains.get(port)
        if chain is None:
            hosts, origins = loopback_allowlist(host=host or "127.0.0.1", port=port, guards=guards)
            chain = chains[port] = list(
                guard_middlewares(
                    hosts, origins, client_header_exempt=exempt, form_paths=form_paths
                )
            )
        call: Handler = handler
        for middleware in reversed(chain):
            call = functools.partial(middleware, handler=call)
        return await call(request)

    return guards_for_port


def build_http_app(
    *,
    registry: CommandRegistry,
    version: str,
    create_context: ContextFactory | None = None,
    health: HealthFn | None = None,
    mount_routes: MountRoutes | None = None,
    guards: Guards | None = None,
    rpc_body_limit: RpcBodyLimit | None = None,
    tool_prefix: str | None = None,
    hub: EventHub | None = None,
    gate: Gate | None = None,
    format_error: ErrorFormatter | None = None,
    logger: logging.Logger | None = None,
    port: int = 0,
    host: str | None = None,
    allowed_hosts: frozenset[str] | None = None,
    allowed_origins: frozenset[str] | None = None,
    lifecycle: Lifecycle | None = None,
    openapi: bool = False,
) -> web.Application:
    """Build the HTTP app: guards, optional gate, core routes, `/mcp` and product routes.

    The loopback allowlist is built from `port`, `host` and `guards`; `allowed_hosts` and
    `allowed_origins` replace it outright (the remote listener's exact allowlist).
    `openapi=True` adds `GET /openapi.json`, the OpenAPI document of every `/rpc/<name>`.
    """
    options = AppOptions.of(locals())
    return build_app(
        options,
        hub=hub if hub is not None else EventHub(logger=options.logger),
        lifecycle=lifecycle if lifecycle is not None else Lifecycle(ready=True, port=port or None),
        port=port,
        host=host,
        gate=gate,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


def build_app(
    options: AppOptions,
    *,
    hub: EventHub,
    lifecycle: Lifecycle,
    port: int = 0,
    host: str | None = None,
    gate: Gate | None = None,
    allowed_hosts: frozenset[str] | None = None,
    allowed_origins: frozenset[str] | None = None,
    tasks: TaskStore | None = None,
) -> web.Application:
    """Build one app of a daemon from its `options`; the listener's own parts are keywords.

    `tasks` is the daemon's store of MCP tasks (its apps share it); without it `/mcp` keeps its
    own, in memory."""
    registry = options.registry
    version = options.version
    guards = options.guards
    tool_prefix = options.tool_prefix
    health = options.health
    log = options.logger
    mcp_route: list[Any] = []  # the `/mcp` handler, once it is added below
    exempt: Callable[[web.Request], bool] | None = None
    mcp_exempt = tool_prefix is not None and not (guards is not None and guards.mcp_client_header)
    form_paths: frozenset[str] = frozenset()
    if gate is not None:
        # A gate's authorization server takes stock OAuth clients' posts (README, Security).
        from ._oauth_paths import OAUTH_CLIENT_PATHS, TOKEN_PATH

        form_paths = frozenset({TOKEN_PATH})
    if mcp_exempt or gate is not None:
        # `/mcp` takes stock MCP clients, which send no x-local-client (README, Security).
        def exempt(request: web.Request) -> bool:
            if gate is not None and request.path in OAUTH_CLIENT_PATHS:
                return True
            return mcp_exempt and bool(mcp_route) and request.match_info.handler is mcp_route[0]

    if port == 0 and allowed_hosts is None and allowed_origins is None:
        # Built before its socket was bound: take the port each request arrived on.
        middlewares: list[Middleware] = [_guards_by_bound_port(host, guards, exempt, form_paths)]
    else:
        hosts, origins = loopback_allowlist(
            host=host or "127.0.0.1", port=port or None, guards=guards
        )
        if allowed_hosts is not None:
            hosts = frozenset(allowed_hosts)
        if allowed_origins is not None:
            origins = frozenset(allowed_origins)
        chain = guard_middlewares(
            hosts, origins, client_header_exempt=exempt, form_paths=form_paths
        )
        middlewares = list(chain)  # type: ignore[arg-type]
    # Outermost: a request's body is on the clock from its head, whatever answers it.
    middlewares.insert(0, body_deadline_middleware)
    on_prepare: list[Any] = []
    if guards is not None and guards.cors_origins and allowed_origins is None:
        # Loopback only, like `allowed_origins`: the remote app is built with its own allowlist.
        from ._cors import cors

        preflight, prepare_hook = cors(guards.cors_origins)
        middlewares.append(preflight)
        on_prepare.append(prepare_hook)
    if gate is not None:
        # Imported here: only a gated app (the remote listener's) pays for the gate's module.
        from ._gate import gate_middleware

        middlewares.append(gate_middleware(gate))  # type: ignore[arg-type]
    # These travel with the app, so every runner (the remote listener's too) uses them: an
    # over-cap body's connection closes after at most LINGERING_TIME, not aiohttp's 10 s, and a
    # connection must deliver a whole request head within IDLE_TIMEOUT of opening or of its last
    # response, else it closes (aiohttp's keep-alive timer runs from `connection_made` and fires
    # whenever no complete request is waiting; its default is an hour). A client that goes away
    # cancels its handler (aiohttp's `handler_cancellation`), and with it the command it called.
    app = web.Application(
        middlewares=middlewares,
        handler_args={
            "handler_cancellation": True,
            "access_log": None,
            "lingering_time": LINGERING_TIME,
            "keepalive_timeout": IDLE_TIMEOUT,
            "logger": _http_log,
        },
    )
    app[LIFECYCLE_KEY] = lifecycle
    app.on_response_prepare.extend(on_prepare)
    pid = os.getpid()

    async def health_route(request: web.Request) -> web.Response:
        if not lifecycle.ready:
            return web.json_response({"ok": False, "starting": True}, status=503, headers=_NO_STORE)
        extra: dict[str, Any] = {}
        if health is not None:
            try:
                extra = dict(health())
            except Exception as exc:
                log.error("health() failed: %s", type(exc).__name__)
                return web.json_response(
                    {
                        "ok": False,
                        "error": {"code": INTERNAL_ERROR_CODE, "message": INTERNAL_ERROR_MESSAGE},
                    },
                    status=500,
                    headers=_NO_STORE,
                )
        document = {
            **extra,
            "ok": True,
            "version": version,
            "pid": pid,
            "uptime_ms": int((time.monotonic() - lifecycle.started) * 1000),
            "port": lifecycle.port or _bound_port(request),
        }
        return web.json_response(document, headers=_NO_STORE)

    async def version_route(request: web.Request) -> web.Response:
        return web.json_response({"version": version}, headers=_NO_STORE)

    app.router.add_get("/health", health_route)
    app.router.add_get("/version", version_route)
    app.router.add_get("/events", events_handler(hub, ready_data=lambda: {"version": version}))
    app.router.add_post(
        "/rpc/{name}",
        rpc_handler(
            registry=registry,
            create_context=options.create_context,
            format_error=options.format_error,
            body_limit=options.rpc_body_limit,
            logger=log,
            gated=gate is not None,
        ),
    )
    if options.openapi:
        from ._openapi import OPENAPI_PATH, openapi_document

        async def openapi_route(request: web.Request) -> web.Response:
            # Built per request: a registry may add or drop commands while the daemon runs.
            document = openapi_document(registry, version=version, gated=gate is not None)
            return web.json_response(document, headers=_NO_STORE)

        app.router.add_get(OPENAPI_PATH, openapi_route)
    if tool_prefix is not None:
        # Imported here: `mcp` takes over a second to import and most daemons never load it.
        from ._mcp_http import McpHttpHandler

        mcp = McpHttpHandler(options, tasks=tasks)
        mcp_route.append(mcp.handle)  # one bound method: the exemption compares by identity
        app.router.add_route("*", "/mcp", mcp_route[0])
        app.cleanup_ctx.append(mcp.lifespan)
    if options.mount_routes is not None:
        options.mount_routes(app)
    return app
