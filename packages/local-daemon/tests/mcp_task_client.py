"""The MCP SDK's client speaking tasks to `/mcp`: its extension hooks (`ClientExtension`, a
`ResultClaim` for `resultType: "task"`) and `send_request` with the SDK's task types.

`python -m mcp_task_client start URL TOOL ARGS_JSON` starts a call as a task, prints
`task <id>` and then waits on `tasks/result` (a test kills it there); `... result URL TASK_ID`
prints each progress report as `progress <n>` and then the result as `result <json>`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from pydantic import TypeAdapter

__all__ = [
    "TASKS_EXTENSION",
    "TaskCreated",
    "TasksExtension",
    "cancel_task",
    "get_task",
    "list_tasks",
    "start_task",
    "task_client",
    "task_result",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
HEADERS = {"x-local-client": "pytest-mcp-tasks"}


class TaskCreated(types.Result):
    """A `tools/call` answered with a task (the extension's `resultType: "task"`)."""

    result_type: Literal["task"] = "task"
    task: types.Task


async def task_result(
    client: Client,
    task_id: str,
    on_progress: ProgressFnT | None = None,
) -> types.CallToolResult:
    """Wait on `tasks/result` for the call's own result (progress to `on_progress`)."""
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await client.session.send_request(
        request, types.CallToolResult, progress_callback=on_progress
    )


async def get_task(client: Client, task_id: str) -> types.GetTaskResult:
    """`tasks/get`."""
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.GetTaskResult)


async def cancel_task(client: Client, task_id: str) -> types.CancelTaskResult:
    """`tasks/cancel`."""
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CancelTaskResult)


async def list_tasks(client: Client) -> types.ListTasksResult:
    """`tasks/list`."""
    return await client.session.send_request(types.ListTasksRequest(), types.ListTasksResult)


async def start_task(
    client: Client, tool: str, arguments: dict[str, Any], *, ttl_ms: int | None = None
) -> types.Task:
    """`tools/call` with `task` in its params; answer the task the server created."""
    params = types.CallToolRequestParams(
        name=tool, arguments=arguments, task=types.TaskMetadata(ttl=ttl_ms)
    )
    created = await client.session.send_request(
        types.CallToolRequest(params=params), TypeAdapter(TaskCreated)
    )
    return created.task


async def _resolve(created: TaskCreated, ctx: ClaimContext) -> types.CallToolResult:
    request = types.GetTaskPayloadRequest(
        params=types.GetTaskPayloadRequestParams(task_id=created.task.task_id)
    )
    return await ctx.session.send_request(request, types.CallToolResult)


class TasksExtension(ClientExtension):
    """The tasks extension as a client declares it: a task answer is waited out through
    `tasks/result`, so `Client.call_tool` returns the call's own result."""

    identifier = TASKS_EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=_resolve)]


@asynccontextmanager
async def task_client(url: str, *, mode: str = "auto", tasks: bool = True) -> AsyncIterator[Client]:
    """The SDK's client on `url` (streamable HTTP), declaring the tasks extension."""
    async with AsyncExitStack() as stack:
        # A long read timeout: a socket-activated daemon answers its first request only once
        # it has started (importing `mcp` takes seconds on a loaded machine).
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=HEADERS, timeout=httpx2.Timeout(120.0))
        )
        transport = streamable_http_client(url, http_client=http)
        extensions = [TasksExtension()] if tasks else None
        client = await stack.enter_async_context(
            Client(transport, mode=mode, extensions=extensions)
        )
        yield client


async def _main(argv: list[str]) -> None:
    command, url = argv[0], argv[1]
    async with task_client(url) as client:
        if command == "start":
            task = await start_task(client, argv[2], json.loads(argv[3]))
            print("task", task.task_id, flush=True)
            await task_result(client, task.task_id)
            print("finished", flush=True)
        elif command == "result":

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                print("progress", progress, flush=True)

            result = await task_result(client, argv[2], on_progress)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            print("result", json.dumps(dumped), flush=True)
        else:
            raise SystemExit(f"unknown command {command}")


def main() -> None:
    asyncio.run(_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
