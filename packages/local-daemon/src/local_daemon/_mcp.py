"""The MCP projection of a command registry: tools/list and tools/call over HTTP and stdio.

Built on the `mcp` SDK's low-level `Server` and its streamable-HTTP transport; the protocol is
never written by hand. `/mcp` is stateless: every HTTP request gets its own transport from the
SDK's stateless session manager, bridged from aiohttp to ASGI; the `Server` (a table of handlers
holding no state) and the manager are built once per app.

Importing this module imports `mcp` (over a second): the package imports it only when MCP is used.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from aiohttp import hdrs, web
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
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

from ._errors import UnknownCommandError
from ._invoke import failure_outcome, invoke
from ._progress import ProgressSender
from ._types import (
    AUTH_RECORD_KEY,
    AuthRecord,
    CommandInfo,
    CommandRegistry,
    ContextFactory,
    ErrorFormatter,
)

__all__ = [
    "DEFAULT_MCP_BODY_LIMIT",
    "McpHttpHandler",
    "create_mcp_server",
    "invoke_tool",
    "list_tools",
    "mcp_http_handler",
    "run_mcp_stdio",
    "tool_name_for",
]

_log = logging.getLogger("local_daemon")

# A tools/call body carries one command's arguments, so it gets the RPC default cap.
DEFAULT_MCP_BODY_LIMIT = 1024 * 1024

# The daemon's own guards (Host allowlist, Origin allowlist, JSON content type) run before /mcp
# with the listener's allowlist; a second, differently
# configured allowlist inside the transport could only disagree with them, so it is off.
_TRANSPORT_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)

# The gate's record of the `/mcp` request being answered (None on loopback and over stdio): set
# around each request, read by the tool-call handler, which the SDK may run in tasks it spawns
# (they copy the request task's context).
_REQUEST_AUTH: contextvars.ContextVar[AuthRecord | None] = contextvars.ContextVar(
    "local_daemon.mcp_auth", default=None
)

_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"upgrade"})


def tool_name_for(tool_prefix: str | None, command: str) -> str:
    """Return the MCP tool name of `command`: `<tool_prefix>_<command>`, or `command` alone when
    there is no prefix (`None` or empty)."""
    return f"{tool_prefix}_{command}" if tool_prefix else command


def _command_for(tool_prefix: str | None, tool_name: str) -> str | None:
    if not tool_prefix:
        return tool_name
    head = tool_prefix + "_"
    if tool_name.startswith(head) and len(tool_name) > len(head):
        return tool_name[len(head) :]
    return None


def list_tools(registry: CommandRegistry, *, tool_prefix: str | None) -> list[types.Tool]:
    """Return every command of `registry` as an MCP tool named `<tool_prefix>_<command>`."""
    return [_tool(tool_prefix, info) for info in registry.commands()]


def _tool(tool_prefix: str | None, info: CommandInfo) -> types.Tool:
    schema = dict(info.input_schema)
    schema.setdefault("type", "object")
    # `getattr`: a hand-written registry may hand over an older or a look-alike CommandInfo.
    title = getattr(info, "title", None)
    hints = {
        "read_only_hint": getattr(info, "read_only", None),
        "destructive_hint": getattr(info, "destructive", None),
        "idempotent_hint": getattr(info, "idempotent", None),
    }
    annotations = None
    if title is not None or any(value is not None for value in hints.values()):
        annotations = types.ToolAnnotations(title=title, **hints)
    output_schema = getattr(info, "output_schema", None)
    return types.Tool(
        name=tool_name_for(tool_prefix, info.name),
        title=title,
        description=info.description or None,
        input_schema=schema,
        output_schema=dict(output_schema) if output_schema is not None else None,
        annotations=annotations,
    )


async def invoke_tool(
    registry: CommandRegistry,
    tool_name: str,
    arguments: Mapping[str, Any] | None,
    *,
    tool_prefix: str | None,
    context: Any = None,
    format_error: ErrorFormatter | None = None,
    logger: logging.Logger | None = None,
    progress: ProgressSender | None = None,
) -> types.CallToolResult:
    """Call the command behind `tool_name`; answer its RPC envelope, `isError` on failure.

    `progress`, when given, receives the command's `Progress` reports.
    """
    log = logger or _log
    command = _command_for(tool_prefix, tool_name)
    if command is None:
        # A name without the prefix is unknown even if a command of that exact name exists.
        unknown = UnknownCommandError(tool_name)
        return envelope_result(
            failure_outcome(unknown, format_error=format_error, logger=log).envelope
        )
    outcome = await invoke(
        registry,
        command,
        dict(arguments) if arguments is not None else {},
        context,
        format_error=format_error,
        logger=log,
        progress=progress,
    )
    return envelope_result(outcome.envelope, text=outcome.body)


def envelope_result(
    envelope: Mapping[str, Any], *, text: str | None = None
) -> types.CallToolResult:
    """Wrap an RPC envelope as a tool result: JSON text plus the same object, structured.

    `text` is the envelope already encoded (as `/rpc` sends it), when the call has it.
    """
    if text is None:
        text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    # Built without re-validation: every field is already of its type (a str, a dict, a bool).
    return types.CallToolResult.model_construct(
        content=[types.TextContent.model_construct(type="text", text=text)],
        structured_content=dict(envelope),
        is_error=not envelope.get("ok", False),
    )


def create_mcp_server(
    registry: CommandRegistry,
    *,
    tool_prefix: str | None,
    version: str,
    create_context: ContextFactory | None = None,
    format_error: ErrorFormatter | None = None,
    logger: logging.Logger | None = None,
) -> Server[Any]:
    """Build the low-level MCP `Server` exposing `registry`'s commands as tools."""
    log = logger or _log

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            return types.ListToolsResult(tools=list_tools(registry, tool_prefix=tool_prefix))
        except Exception as exc:
            # The SDK's transport would put the exception's text on the wire; the type only goes
            # to the log, and the client sees a fixed internal error.
            log.error("tools/list failed: %s", type(exc).__name__)
            raise MCPError(types.INTERNAL_ERROR, "Internal server error") from None

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        context = None
        if create_context is not None:
            try:
                context = create_context("mcp", _REQUEST_AUTH.get())
            except Exception as exc:
                # Reported through the envelope exactly like a command that raised it.
                failed = failure_outcome(exc, format_error=format_error, logger=log)
                return envelope_result(failed.envelope)
        # The SDK's own reporter: `notifications/progress` on this request's stream, sent only
        # when the client asked for progress (a token in `_meta`).
        asked = progress_token_from_params(ctx.params) is not None
        return await invoke_tool(
            registry,
            params.name,
            params.arguments,
            tool_prefix=tool_prefix,
            context=context,
            format_error=format_error,
            logger=log,
            progress=ctx.session.report_progress if asked else None,
        )

    def input_schema(name: str) -> Mapping[str, Any] | None:
        command = _command_for(tool_prefix, name)
        for info in registry.commands():
            if info.name == command:
                return info.input_schema
        return None

    return Server(
        tool_prefix or "local-daemon",
        version=version,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        get_tool_input_schema=input_schema,
    )


async def run_mcp_stdio(
    registry: CommandRegistry,
    *,
    tool_prefix: str | None,
    version: str,
    create_context: ContextFactory | None = None,
    format_error: ErrorFormatter | None = None,
    logger: logging.Logger | None = None,
) -> None:
    """Serve `registry` as MCP tools over this process's stdin and stdout until stdin closes."""
    from mcp.server.stdio import stdio_server

    server = create_mcp_server(
        registry,
        tool_prefix=tool_prefix,
        version=version,
        create_context=create_context,
        format_error=format_error,
        logger=logger,
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class _AsgiBridge:
    """One aiohttp request seen as an ASGI HTTP connection: body in through `receive`, answer out
    through `send` into a `web.StreamResponse` that streams as the ASGI app writes."""

    def __init__(self, request: web.Request, body: bytes | None = None) -> None:
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


def _jsonrpc_error(status: int, message: str, **headers: str) -> web.Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    return web.json_response(body, status=status, headers=headers or None)


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


# What a call cancelled by its client answers, if anyone still reads (the client dropped the
# request when it sent `notifications/cancelled`); the code is JSON-RPC's "request cancelled" as
# LSP defines it, since MCP sends nothing for a cancelled request on a connection that stays.
REQUEST_CANCELLED = -32800


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


def _asks_progress(raw: Any) -> bool:
    """True for a `tools/call` request carrying a progress token."""
    return (
        isinstance(raw, dict)
        and raw.get("method") == "tools/call"
        and "id" in raw
        and progress_token_from_params(raw.get("params")) is not None
    )


class McpHttpHandler:
    """The aiohttp handler for `/mcp`: stateless, one transport per request.

    The `Server` (a table of handlers) and the SDK's session manager are built once. While
    `lifespan` (an aiohttp cleanup context) runs, the manager's task group is held open in one
    background task and every request only gets its own stateless transport from it; outside it
    (the handler mounted on a bare app) each request builds and runs a manager of its own, which
    is correct but slower.
    """

    def __init__(
        self,
        *,
        registry: CommandRegistry,
        tool_prefix: str | None,
        version: str,
        create_context: ContextFactory | None,
        format_error: ErrorFormatter | None,
        logger: logging.Logger,
        max_body_bytes: int = DEFAULT_MCP_BODY_LIMIT,
    ) -> None:
        self._logger = logger
        self._max_body_bytes = max_body_bytes
        self._server = create_mcp_server(
            registry,
            tool_prefix=tool_prefix,
            version=version,
            create_context=create_context,
            format_error=format_error,
            logger=logger,
        )
        # The SDK's one default middleware opens an OpenTelemetry span per message even with no
        # exporter installed (a quarter of a tool call's cost); the SDK documents dropping it.
        self._server.middleware.clear()
        tracker = _CallTracker()
        self._server.middleware.append(tracker.middleware)
        self._server.add_notification_handler(
            "notifications/cancelled", types.CancelledNotificationParams, tracker.on_cancelled
        )
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
            stop.set()
            await holder

    def _read_first(self, request: web.Request) -> bool:
        """True when the body is read here first: sized and under the cap (else the SDK's
        transport reads it and answers 413 and the like)."""
        length = request.content_length
        return length is not None and length <= self._max_body_bytes

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
        token = _REQUEST_AUTH.set(request.get(AUTH_RECORD_KEY))
        try:
            return await self._handle(request)
        finally:
            _REQUEST_AUTH.reset(token)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method != hdrs.METH_POST:
            # Stateless: no standalone GET stream to open and no session to DELETE.
            return _jsonrpc_error(405, "Method Not Allowed", Allow="POST")
        manager = self._manager
        body: bytes | None = None
        if manager is not None and self._read_first(request):
            length = request.content_length or 0
            try:
                body = await request.content.readexactly(length) if length else b""
            except asyncio.IncompleteReadError:
                return _jsonrpc_error(400, "Bad Request")  # the body ended early
            try:
                raw: Any = pydantic_core.from_json(body)
            except ValueError:
                raw = None
            has_json, has_sse = check_accept_headers(_Headers(request))  # type: ignore[arg-type]
            if has_sse and _asks_progress(raw):
                # Progress needs a stream for the notifications: the SDK's SSE transport.
                manager = self._stream_manager
            elif has_json and self._handshake_era(request):
                answer = await self._single_exchange(request, raw)
                if answer is not None:
                    return answer
        bridge = _AsgiBridge(request, body)
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


def mcp_http_handler(
    *,
    registry: CommandRegistry,
    tool_prefix: str | None,
    version: str,
    create_context: ContextFactory | None,
    format_error: ErrorFormatter | None,
    logger: logging.Logger,
    max_body_bytes: int = DEFAULT_MCP_BODY_LIMIT,
) -> McpHttpHandler:
    """Return the `/mcp` handler: route `.handle`, and add `.lifespan` to `app.cleanup_ctx`."""
    return McpHttpHandler(
        registry=registry,
        tool_prefix=tool_prefix,
        version=version,
        create_context=create_context,
        format_error=format_error,
        logger=logger,
        max_body_bytes=max_body_bytes,
    )
