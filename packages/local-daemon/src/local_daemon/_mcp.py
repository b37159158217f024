"""The MCP projection of a command registry: tools/list and tools/call, over stdio and for the
HTTP bridge (`_mcp_http`); its resources and prompts, and every icon, through `_mcp_content`.

Built on the `mcp` SDK's low-level `Server`; the protocol is never written by hand. Tool names are
`<tool_prefix>_<command>`; a call answers the command's RPC envelope as JSON text and structured
content (`isError` on failure). `REQUEST_AUTH` carries the gate's record of the HTTP request being
answered to `create_context("mcp", auth)`.

Importing this module imports `mcp` (over a second): the package imports it only when MCP is used.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import logging
import math
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from types import TracebackType
from typing import Any, ParamSpec, Self

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import SessionMessage

from ._errors import UnknownCommandError
from ._invoke import failure_outcome, invoke
from ._mcp_content import content_handlers, mcp_icons
from ._progress import ProgressSender
from ._types import (
    AuthRecord,
    CommandInfo,
    CommandRegistry,
    ContextFactory,
    ErrorFormatter,
)

__all__ = [
    "NOT_FINITE",
    "REQUEST_AUTH",
    "create_mcp_server",
    "envelope_result",
    "invoke_tool",
    "list_tools",
    "run_mcp_stdio",
    "tool_caller",
    "tool_name_for",
]

_log = logging.getLogger("local_daemon")
_P = ParamSpec("_P")

# The gate's record of the `/mcp` request being answered (None on loopback and over stdio): set
# around each request, read by the tool-call handler, which the SDK may run in tasks it spawns
# (they copy the request task's context).
REQUEST_AUTH: contextvars.ContextVar[AuthRecord | None] = contextvars.ContextVar(
    "local_daemon.mcp_auth", default=None
)


# What a message holding a non-finite number is answered, on `/mcp` and over stdio alike: the
# error the SDK gives invalid request parameters, before anything runs.
NOT_FINITE = types.ErrorData(
    code=types.INVALID_PARAMS,
    message="Invalid request parameters",
    data="a number is not finite (NaN, Infinity or beyond a float)",
)


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
        icons=mcp_icons(getattr(info, "icons", ())),
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


def tool_caller(
    registry: CommandRegistry,
    *,
    tool_prefix: str | None,
    create_context: ContextFactory | None,
    format_error: ErrorFormatter | None,
    logger: logging.Logger,
) -> Callable[
    [str, Mapping[str, Any] | None, ProgressSender | None], Awaitable[types.CallToolResult]
]:
    """Return what answers one `tools/call` (name, arguments, progress sender): the context
    built for the request being answered (`REQUEST_AUTH`), then `invoke_tool`."""

    async def call_tool(
        name: str, arguments: Mapping[str, Any] | None, progress: ProgressSender | None
    ) -> types.CallToolResult:
        context = None
        if create_context is not None:
            try:
                context = create_context("mcp", REQUEST_AUTH.get())
            except Exception as exc:
                # Reported through the envelope exactly like a command that raised it.
                failed = failure_outcome(exc, format_error=format_error, logger=logger)
                return envelope_result(failed.envelope)
        return await invoke_tool(
            registry,
            name,
            arguments,
            tool_prefix=tool_prefix,
            context=context,
            format_error=format_error,
            logger=logger,
            progress=progress,
        )

    return call_tool


def create_mcp_server(
    registry: CommandRegistry,
    *,
    tool_prefix: str | None,
    version: str,
    create_context: ContextFactory | None = None,
    format_error: ErrorFormatter | None = None,
    logger: logging.Logger | None = None,
) -> Server[Any]:
    """Build the low-level MCP `Server` exposing `registry`'s commands as tools, and its
    resources and prompts when it has any (the capabilities are declared only then).

    The registry's `title` and `icons` attributes, when present, describe the server itself.
    """
    log = logger or _log

    def make_context() -> Any:
        return None if create_context is None else create_context("mcp", REQUEST_AUTH.get())

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

    call_tool = tool_caller(
        registry,
        tool_prefix=tool_prefix,
        create_context=create_context,
        format_error=format_error,
        logger=log,
    )

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # The SDK's own reporter: `notifications/progress` on this request's stream, sent only
        # when the client asked for progress (a token in `_meta`).
        asked = progress_token_from_params(ctx.params) is not None
        return await call_tool(
            params.name, params.arguments, ctx.session.report_progress if asked else None
        )

    def input_schema(name: str) -> Mapping[str, Any] | None:
        command = _command_for(tool_prefix, name)
        for info in registry.commands():
            if info.name == command:
                return info.input_schema
        return None

    title = getattr(registry, "title", None)
    return Server(
        tool_prefix or "local-daemon",
        version=version,
        title=title if isinstance(title, str) else None,
        icons=mcp_icons(getattr(registry, "icons", ())),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        get_tool_input_schema=input_schema,
        **content_handlers(
            registry, make_context=make_context, format_error=format_error, logger=log
        ),
    )


def _over_stdio(
    create: Callable[_P, Server[Any]],
) -> Callable[_P, Coroutine[Any, Any, None]]:
    """Make `run_mcp_stdio` out of `create`: the same arguments, typed, declared once."""

    async def run_mcp_stdio(*args: _P.args, **options: _P.kwargs) -> None:
        """Serve `registry` as MCP tools over this process's stdin and stdout until stdin
        closes; the arguments are `create_mcp_server`'s."""
        from mcp.server.stdio import stdio_server

        logger = options.get("logger")
        server = create(*args, **options)
        async with stdio_server() as (read_stream, write_stream):
            log = logger if isinstance(logger, logging.Logger) else _log
            finite = _FiniteOnly(read_stream, write_stream, log)
            await server.run(finite, write_stream, server.create_initialization_options())

    # What `help()` and `inspect.signature` show: `create`'s arguments, answering None.
    run_mcp_stdio.__signature__ = inspect.signature(create).replace(  # type: ignore[attr-defined]
        return_annotation="None"
    )
    return run_mcp_stdio


run_mcp_stdio = _over_stdio(create_mcp_server)


def _holds_non_finite(value: Any) -> bool:
    # Iterative: a message may nest as deep as the SDK's parser allows.
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


class _FiniteOnly:
    """The stdio read stream, less every message holding a non-finite number.

    The SDK's stdio transport parses each line itself, and its parser takes `NaN`, `Infinity` and
    `1e400` (as infinity); any number that is not finite after that parse was one of them. A
    request is answered `NOT_FINITE` to its id on the write stream; a notification is dropped.
    """

    def __init__(self, inner: Any, write_stream: Any, logger: logging.Logger) -> None:
        self._inner = inner
        self._write = write_stream
        self._log = logger

    @property
    def last_context(self) -> contextvars.Context | None:
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            if not isinstance(item, SessionMessage):
                return item
            message = item.message
            if not _holds_non_finite(
                [getattr(message, "params", None), getattr(message, "result", None)]
            ):
                return item
            request_id = getattr(message, "id", None)
            if isinstance(message, types.JSONRPCRequest) and request_id is not None:
                refusal = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=NOT_FINITE)
                await self._write.send(SessionMessage(refusal))
            else:
                self._log.warning("dropped an MCP message holding a non-finite number")

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()
