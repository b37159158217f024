"""MCP tasks on `/mcp`: a `tools/call` run as a task, and `tasks/get`, `tasks/result`,
`tasks/cancel` and `tasks/list`, over the daemon's `TaskStore` (`_tasks`).

The wire is the SDK's task types (`mcp_types.Task`, `CreateTaskResult`, `GetTaskResult`, ...):
on the 2026-07-28 revision tasks are the `io.modelcontextprotocol/tasks` extension (advertised
under the server's `extensions`; a call run as a task answers `resultType: "task"`, the shape a
client's `ResultClaim` for "task" parses), on 2025-11-25 the core `tasks` capability and each
tool's `execution.taskSupport`. A call runs as a task when its params carry `task` (a time to
live, optional) or, on 2026-07-28, when the client's capabilities list the extension.

`tasks/result` waits for the task to finish and, when the request asks for progress (a progress
token), forwards the command's newest progress reports while it waits: a client that comes back
keeps seeing progress. `notifications/cancelled` never touches a task (only `tasks/cancel` does).

A task belongs to the authorization context that started it (`REQUEST_CONTEXT`: "loopback", the
remote bearer secret's "bearer", or one remote device's session): `tasks/get`, `tasks/result`
and `tasks/cancel` answer another context's task id exactly as an unknown one, and `tasks/list`
lists the caller's tasks only. Task ids are 144 random bits besides.

Importing this module imports `mcp`.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ._mcp import envelope_result
from ._progress import ProgressSender
from ._tasks import TasksFullError, TaskState, TaskStore

__all__ = [
    "RELATED_TASK_META_KEY",
    "REQUEST_CANCELLED",
    "REQUEST_CONTEXT",
    "TASKS_EXTENSION",
    "ToolCall",
    "install_tasks",
    "open_task_store",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task"
# The revision whose core protocol has tasks (2026-07-28 moved them to the extension).
_CORE_TASKS_VERSION = "2025-11-25"

# What a call cancelled by its client answers, if anyone still reads (the client dropped the
# request when it sent `notifications/cancelled`); the code is JSON-RPC's "request cancelled" as
# LSP defines it, since MCP sends nothing for a cancelled request on a connection that stays.
# A cancelled task's `tasks/result` answers it too.
REQUEST_CANCELLED = -32800

# The authorization context of the `/mcp` request being answered (`_tasks.owner_context`): set
# around each request from the gate's (`AUTH_CONTEXT_KEY`); "loopback" where no gate stands.
REQUEST_CONTEXT: contextvars.ContextVar[str] = contextvars.ContextVar(
    "local_daemon.mcp_context", default="loopback"
)

# Runs one tool call (name, arguments) with a progress sender; answers the tool result.
ToolCall = Callable[[str, Mapping[str, Any] | None, ProgressSender | None], Awaitable[Any]]

_TASK_SUPPORT = {"taskSupport": "optional"}
_CORE_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def _dump(result: types.CallToolResult) -> dict[str, Any]:
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    # Kept era-free: the SDK adds `resultType` when it answers a 2026-07-28 request.
    dumped.pop("resultType", None)
    return dumped


def _error_result(envelope: Mapping[str, Any]) -> dict[str, Any]:
    return _dump(envelope_result(envelope))


def _asks_task(ctx: ServerRequestContext[Any], params: Mapping[str, Any]) -> bool:
    """True when this `tools/call` is to run as a task."""
    if params.get("task") is not None:
        return True
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    meta = params.get("_meta")
    capabilities = meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def open_task_store(directory: Path, *, logger: logging.Logger) -> TaskStore:
    """Return the daemon's task store in `directory`, with what a previous run left there."""
    store = TaskStore(directory, logger=logger)
    store.load(_error_result)
    return store


def install_tasks(server: Server[Any], store: TaskStore, call: ToolCall) -> None:
    """Serve MCP tasks from `store` on `server`: its middleware, handlers and capability."""
    poll = store.limits.poll_interval_ms
    server.extensions[TASKS_EXTENSION] = {}

    def task_of(task_id: str) -> TaskState:
        task = store.get(task_id, REQUEST_CONTEXT.get())
        if task is None:
            raise MCPError(types.INVALID_PARAMS, "Unknown task", data=task_id)
        return task

    def start(ctx: ServerRequestContext[Any], raw: Mapping[str, Any]) -> dict[str, Any]:
        try:
            params = types.CallToolRequestParams.model_validate(raw, by_name=False)
        except ValidationError:
            raise MCPError(types.INVALID_PARAMS, "Invalid request parameters") from None
        ttl = params.task.ttl if params.task is not None else None

        async def run(progress: ProgressSender) -> dict[str, Any]:
            return _dump(await call(params.name, params.arguments, progress))

        try:
            task = store.start(
                run, ttl_ms=ttl, error_result=_error_result, owner=REQUEST_CONTEXT.get()
            )
        except TasksFullError:
            limit = store.limits.max_tasks
            raise MCPError(
                types.INTERNAL_ERROR, f"Too many tasks working (at most {limit})"
            ) from None
        answer: dict[str, Any] = {"task": task.wire(poll)}
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            answer["resultType"] = "task"
            answer["_meta"] = {types.SERVER_INFO_META_KEY: server.server_info_stamp}
        return answer

    async def middleware(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        method, raw = ctx.method, ctx.params
        if method == "tools/call" and isinstance(raw, Mapping) and _asks_task(ctx, raw):
            return start(ctx, raw)
        result = await call_next(ctx)
        if method == "initialize" and isinstance(result, dict):
            if result.get("protocolVersion") == _CORE_TASKS_VERSION:
                capabilities = result.setdefault("capabilities", {})
                capabilities["tasks"] = _CORE_CAPABILITY
        elif (
            method == "tools/list"
            and ctx.protocol_version == _CORE_TASKS_VERSION
            and isinstance(result, dict)
        ):
            for tool in result.get("tools", ()):
                tool.setdefault("execution", _TASK_SUPPORT)
        return result

    async def on_get(
        ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams
    ) -> dict[str, Any]:
        return task_of(params.task_id).wire(poll)

    async def on_result(
        ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        task = task_of(params.task_id)
        asked = progress_token_from_params(ctx.params) is not None
        await store.wait(task, ctx.session.report_progress if asked else None)
        related = {RELATED_TASK_META_KEY: {"taskId": task.task_id}}
        if task.result is None:
            if task.status == "cancelled":
                raise MCPError(REQUEST_CANCELLED, "Request cancelled", data=related)
            raise MCPError(types.INTERNAL_ERROR, task.status_message or "Task failed")
        payload = dict(task.result)
        meta = payload.get("_meta")
        payload["_meta"] = {**(meta if isinstance(meta, dict) else {}), **related}
        return payload

    async def on_cancel(
        ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams
    ) -> dict[str, Any]:
        task = task_of(params.task_id)
        if task.terminal:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Cannot cancel task: already in terminal status '{task.status}'",
            )
        store.cancel(task)
        return task.wire(poll)

    async def on_list(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        # At most `max_tasks`: one page.
        return {"tasks": [task.wire(poll) for task in store.tasks(REQUEST_CONTEXT.get())]}

    server.middleware.append(middleware)
    server.add_request_handler("tasks/get", types.GetTaskRequestParams, on_get)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, on_result)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, on_cancel)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, on_list)
