"""`/mcp` over HTTP: the aiohttp handler that bridges each request to the `mcp` SDK's stateless
streamable-HTTP transport (ASGI), with a fast path for one JSON-answered request.

`/mcp` is stateless: every HTTP request gets its own transport from the SDK's stateless session
manager, bridged from aiohttp to ASGI (`_asgi.AsgiBridge`); the `Server` (a table of handlers
holding no state, from `_mcp.create_mcp_server`) and the managers are built once per app. A
well-formed request answered as JSON skips the transport and runs through the SDK's `ServerRunner`
directly (`_single_exchange`), as the SDK's stateless JSON transport would answer it;
`notifications/cancelled` reaches the call it names through `_CallTracker`.

Importing this module imports `mcp`: `build_http_app` imports it only when a tool prefix is set.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import mcp_types as types
from aiohttp import hdrs, web
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.runner import ServerRunner
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import (
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.message import MessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ._asgi import AsgiBridge
from ._bodies import (
    BodyIncompleteError,
    BodyTooLargeError,
    read_body,
)
from ._config import AppOptions
from ._json import NonFiniteNumberError, parse_json
from ._mcp import NOT_FINITE, REQUEST_AUTH, create_mcp_server, tool_caller
from ._mcp_tasks import REQUEST_CANCELLED, REQUEST_CONTEXT, install_tasks
from ._tasks import TaskStore
from ._types import (
    AUTH_CONTEXT_KEY,
    AUTH_RECORD_KEY,
)

__all__ = ["REQUEST_CANCELLED", "McpHttpHandler"]

# The daemon's own guards (Host allowlist, Origin allowlist, JSON content type) run before /mcp
# with the listener's allowlist; a second, differently
# configured allowlist inside the transport could only disagree with them, so it is off.
_TRANSPORT_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _jsonrpc_error(status: int, message: str, **headers: str) -> web.Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    return web.json_response(body, status=status, headers=headers or None)


def _not_finite(body: bytes | bytearray) -> web.Response:
    """Refuse a message holding a non-finite number before anything runs: the error the SDK gives
    invalid request parameters, to the request's id (HTTP 200) or, without one, with HTTP 400."""
    try:
        message = json.loads(body)  # lenient this once: only to find the id
    except (ValueError, RecursionError):
        message = None
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    error = NOT_FINITE.model_dump(exclude_none=True)
    answer = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return web.json_response(answer, status=400 if request_id is None else 200)


_SINGLE_EXCHANGE = TransportContext(kind="streamable-http", can_send_request=False)
_JSON_TYPE = "application/json"


class _Exchange:
    """The SDK's `DispatchContext` for one JSON-answered request of a stateless server.

    Like the SDK's own stateless JSON transport: the server cannot send requests (no session for
    the reply to reach) and notifications have no wire (the answer is one JSON document).
    """

    can_send_request = False
    transport = _SINGLE_EXCHANGE
    message_metadata: MessageMetadata = None

    def __init__(self, request_id: types.RequestId) -> None:
        self.request_id = request_id
        self.cancel_requested = anyio.Event()

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


class _Headers:
    """What `check_accept_headers` reads of a request: its headers."""

    def __init__(self, request: web.Request) -> None:
        self.headers = request.headers


class _Call:
    """One tool call in flight: the task running it, and whether its client cancelled it."""

    __slots__ = ("cancelled", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.cancelled = False


class _CallTracker:
    """Tool calls in flight on a stateless `/mcp`, so `notifications/cancelled` can reach them.

    A stateless server has no session: the cancel arrives in a POST of its own and names only a
    request id, which each client numbers by itself. A cancel stops the call with that id only
    when exactly one is in flight; when two clients' calls share it neither is touched (a
    client that closes the call's stream still cancels it, through the disconnect).

    The call's task is cancelled directly and the cancel taken back (`uncancel`) once it has
    unwound to here: the same thing an anyio cancel scope does, at a fraction of its cost on
    every call.
    """

    def __init__(self) -> None:
        self._calls: dict[types.RequestId, list[_Call]] = {}

    async def middleware(self, ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        """The SDK middleware that tracks each `tools/call` while it runs."""
        request_id = ctx.request_id
        task = asyncio.current_task()
        if request_id is None or ctx.method != "tools/call" or task is None:
            return await call_next(ctx)
        key = _id_key(request_id)
        call = _Call(task)
        calls = self._calls.setdefault(key, [])
        calls.append(call)
        try:
            return await call_next(ctx)
        except asyncio.CancelledError:
            # Anyone else's cancel (a disconnect, the daemon closing) goes on unwinding.
            if not call.cancelled or task.uncancel() > 0:
                raise
            raise MCPError(REQUEST_CANCELLED, "Request cancelled") from None
        finally:
            calls.remove(call)
            if not calls:
                del self._calls[key]

    async def on_cancelled(
        self, ctx: ServerRequestContext[Any], params: types.CancelledNotificationParams
    ) -> None:
        """The SDK notification handler for `notifications/cancelled`."""
        if params.request_id is None:
            return
        calls = self._calls.get(_id_key(params.request_id))
        if calls is not None and len(calls) == 1 and not calls[0].cancelled:
            # Registered means still inside `call_next`: the cancel lands in the call.
            calls[0].cancelled = True
            calls[0].task.cancel()


def _id_key(request_id: types.RequestId) -> types.RequestId:
    # "7" and 7 are one request id to the SDK's dispatchers (and to the TS SDK).
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            return request_id
    return request_id


# Requests whose answer may wait on a command, and so may send progress first.
_PROGRESS_METHODS = frozenset({"tools/call", "tasks/result"})


def _asks_progress(raw: Any) -> bool:
    """True for a `tools/call` or `tasks/result` request carrying a progress token."""
    return (
        isinstance(raw, dict)
        and raw.get("method") in _PROGRESS_METHODS
        and "id" in raw
        and progress_token_from_params(raw.get("params")) is not None
    )


class McpHttpHandler:
    """The aiohttp handler for `/mcp` of an app built from `options`: stateless, one transport
    per request; route `.handle` and add `.lifespan` to `app.cleanup_ctx`.

    The `Server` (a table of handlers) and the SDK's session manager are built once. While
    `lifespan` (an aiohttp cleanup context) runs, the manager's task group is held open in one
    background task and every request only gets its own stateless transport from it; outside it
    (the handler mounted on a bare app) each request builds and runs a manager of its own, which
    is correct but slower.
    """

    def __init__(self, options: AppOptions, *, tasks: TaskStore | None = None) -> None:
        self._logger = options.logger
        self._max_body_bytes = options.rpc_body_limit.max_bytes
        self._server = create_mcp_server(
            options.registry,
            tool_prefix=options.tool_prefix,
            version=options.version,
            create_context=options.create_context,
            format_error=options.format_error,
            logger=options.logger,
        )
        # The SDK's one default middleware opens an OpenTelemetry span per message even with no
        # exporter installed (a quarter of a tool call's cost); the SDK documents dropping it.
        self._server.middleware.clear()
        tracker = _CallTracker()
        self._server.middleware.append(tracker.middleware)
        self._server.add_notification_handler(
            "notifications/cancelled", types.CancelledNotificationParams, tracker.on_cancelled
        )
        # Calls run as tasks: the daemon's store (kept in its state dir), else one of this
        # app's own, in memory, closed with it.
        self._own_tasks = tasks is None
        self.tasks = tasks if tasks is not None else TaskStore(logger=options.logger)
        call = tool_caller(
            options.registry,
            tool_prefix=options.tool_prefix,
            create_context=options.create_context,
            format_error=options.format_error,
            logger=options.logger,
        )
        install_tasks(self._server, self.tasks, call)
        self._manager: StreamableHTTPSessionManager | None = None
        # Answers as a stream: tool calls that asked for progress (and accept SSE).
        self._stream_manager: StreamableHTTPSessionManager | None = None
        self._lifespan_state: Any = None

    def _new_manager(self, *, json_response: bool = True) -> StreamableHTTPSessionManager:
        return StreamableHTTPSessionManager(
            app=self._server,
            json_response=json_response,
            stateless=True,
            security_settings=_TRANSPORT_SECURITY,
            max_request_body_size=self._max_body_bytes,
        )

    async def lifespan(self, app: web.Application) -> AsyncIterator[None]:
        """Hold one session manager open from the app's start-up to its cleanup."""
        manager = self._new_manager()
        stream_manager = self._new_manager(json_response=False)
        ready = asyncio.Event()
        stop = asyncio.Event()

        async def hold() -> None:
            # anyio's task group must be entered and left in one task: this one.
            server = self._server
            async with manager.run(), stream_manager.run(), server.lifespan(server) as state:
                self._manager, self._lifespan_state = manager, state
                self._stream_manager = stream_manager
                ready.set()
                await stop.wait()

        holder = asyncio.ensure_future(hold())
        waiting = asyncio.ensure_future(ready.wait())
        await asyncio.wait({holder, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            waiting.cancel()
            await holder  # raises what stopped it
        try:
            yield
        finally:
            self._manager = self._stream_manager = None
            if self._own_tasks:
                await self.tasks.close()
            stop.set()
            await holder

    @staticmethod
    def _handshake_era(request: web.Request) -> bool:
        """True for a handshake-era protocol version header (or none); the 2026-07-28 era and
        unknown versions take the SDK's modern entry."""
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS

    async def _single_exchange(self, request: web.Request, raw: Any) -> web.Response | None:
        """Answer one JSON-RPC request through the SDK's `serve_one`, as the SDK's stateless
        JSON transport would, without its per-request transport, streams and tasks.

        Anything but a well-formed request (a notification, a response, a batch, bad JSON)
        answers None and goes through the SDK's transport with the body already read.
        """
        if not (isinstance(raw, dict) and "method" in raw and "id" in raw):
            return None  # a notification, a response, a batch: the SDK's transport
        try:
            # What the SDK's message union resolves an object with `method` and `id` to.
            message = types.JSONRPCRequest.model_validate(raw, by_name=False)
        except ValidationError:
            return None
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        # The SDK's stateless path: a born-ready connection at the header's version.
        connection = Connection.from_envelope(
            version if version is not None else types.DEFAULT_NEGOTIATED_VERSION, None, None
        )
        # `serve_one` without its shielded, time-bounded unwind of the connection's exit stack
        # (an anyio cancel scope per request): none of this server's handlers registers cleanup
        # there, so the stack is empty and closes plainly.
        runner = ServerRunner(self._server, connection, self._lifespan_state)
        try:
            result = await runner.on_request(_Exchange(message.id), message.method, message.params)
        except Exception as exc:
            # MCPError and ValidationError keep their codes; anything else is a generic
            # internal error with nothing of the exception on the wire or in the log but its type.
            error = handler_exception_to_error_data(exc)
            if error is None:
                self._logger.error("mcp request failed: %s", type(exc).__name__)
                error = types.ErrorData(code=types.INTERNAL_ERROR, message="Internal server error")
            reply = types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
            text = reply.model_dump_json(by_alias=True, exclude_unset=True)
        else:
            # `result` is already the wire form (the SDK serialised it): frame it as is.
            text = json.dumps(
                {"jsonrpc": "2.0", "id": message.id, "result": result},
                ensure_ascii=False,
                separators=(",", ":"),
            )
        finally:
            await connection.exit_stack.aclose()
        return web.Response(body=text.encode(), content_type=_JSON_TYPE)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one request on `/mcp`: the route handler (`add_route("*", "/mcp", h.handle)`)."""
        # Behind the remote gate the request carries its credential record; tool calls hand it
        # to `create_context("mcp", auth)` as `/rpc` does.
        token = REQUEST_AUTH.set(request.get(AUTH_RECORD_KEY))
        owner = REQUEST_CONTEXT.set(request.get(AUTH_CONTEXT_KEY, "loopback"))
        try:
            return await self._handle(request)
        finally:
            REQUEST_CONTEXT.reset(owner)
            REQUEST_AUTH.reset(token)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method != hdrs.METH_POST:
            # Stateless: no standalone GET stream to open and no session to DELETE.
            return _jsonrpc_error(405, "Method Not Allowed", Allow="POST")
        manager = self._manager
        body: bytes | bytearray | None = None
        length = request.content_length
        # A declared body over the cap is left to the SDK's transport, which answers 413 without
        # reading it; any other body is read here, on the clock and within the body budget.
        if length is None or length <= self._max_body_bytes:
            try:
                body = await read_body(request, self._max_body_bytes)
            except BodyTooLargeError:
                return _jsonrpc_error(413, "Request body too large")  # chunked, past the cap
            except BodyIncompleteError:
                return _jsonrpc_error(400, "Bad Request")
            try:
                raw: Any = parse_json(body)
            except NonFiniteNumberError:
                return _not_finite(body)
            except (ValueError, RecursionError):
                raw = None  # the SDK's transport answers it as it would
            if manager is not None and length is not None:
                has_json, has_sse = check_accept_headers(_Headers(request))  # type: ignore[arg-type]
                if has_sse and _asks_progress(raw):
                    # Progress needs a stream for the notifications: the SDK's SSE transport.
                    manager = self._stream_manager
                elif has_json and self._handshake_era(request):
                    answer = await self._single_exchange(request, raw)
                    if answer is not None:
                        return answer
        bridge = AsgiBridge(request, body)
        try:
            if manager is not None:
                await manager.handle_request(bridge.scope, bridge.receive, bridge.send)
            else:
                alone = self._new_manager()
                async with alone.run():
                    await alone.handle_request(bridge.scope, bridge.receive, bridge.send)
        except Exception as exc:
            # The type only: a traceback could carry argument values.
            self._logger.error("mcp request failed: %s", type(exc).__name__)
            if bridge.response is None:
                return _jsonrpc_error(500, "Internal Server Error")
        if bridge.response is None:
            return _jsonrpc_error(500, "Internal Server Error")
        if not bridge.finished:
            bridge.finished = True
            await bridge.response.write_eof()
        return bridge.response
