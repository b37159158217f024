"""MCP over streamable HTTP through the `mcp` package's own client, and the projection functions."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from daemon_mcp_fixture import (
    CANARY,
    ERROR_COMMANDS,
    TOOL_PREFIX,
    VERSION,
    FixtureRegistry,
    context_factory,
)
from daemon_raw_http import raw_request, serve_app
from local_daemon import (
    DEFAULT_RPC_BODY_LIMIT,
    AuthRecord,
    RpcBodyLimit,
    build_http_app,
    create_mcp_server,
    invoke_tool,
    list_tools,
)

CLIENT_HEADERS = {"x-local-client": "pytest-mcp"}


class Recorder:
    """A create_context that records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, AuthRecord | None]] = []

    def __call__(self, surface: str, auth: AuthRecord | None) -> dict[str, Any]:
        self.calls.append((surface, auth))
        return context_factory(surface, auth)


@asynccontextmanager
async def mcp_port(
    registry: Any = None, create_context: Any = None, max_body_bytes: int | None = None
) -> AsyncIterator[int]:
    """Serve the app `build_http_app` builds with a tool prefix (its `/mcp` as a daemon has it)."""
    app = build_http_app(
        registry=registry or FixtureRegistry(),
        tool_prefix=TOOL_PREFIX,
        version=VERSION,
        create_context=create_context,
        rpc_body_limit=None if max_body_bytes is None else RpcBodyLimit(max_bytes=max_body_bytes),
    )
    async with serve_app(app) as port:
        yield port


@asynccontextmanager
async def mcp_client(port: int, mode: str) -> AsyncIterator[Client]:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=CLIENT_HEADERS))
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
        client = await stack.enter_async_context(Client(transport, mode=mode))
        yield client


async def expected_envelope(name: str, args: dict[str, Any], context: Any) -> dict[str, Any]:
    result = await invoke_tool(
        FixtureRegistry(), f"{TOOL_PREFIX}_{name}", args, tool_prefix=TOOL_PREFIX, context=context
    )
    return envelope_of(result)


def envelope_of(result: types.CallToolResult) -> dict[str, Any]:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    parsed = json.loads(block.text)
    assert isinstance(parsed, dict)
    assert result.structured_content == parsed
    return parsed


MODES = ["legacy", "auto"]  # the initialize handshake and the 2026-07-28 per-request era


@pytest.mark.parametrize("mode", MODES)
async def test_http_client_lists_tools(mode: str) -> None:
    async with mcp_port() as port, mcp_client(port, mode) as client:
        listed = await client.list_tools()
        called = await client.call_tool("fx_echo", {"text": "x"})
    assert envelope_of(called) == {"ok": True, "data": {"text": "x"}}
    names = {tool.name: tool for tool in listed.tools}
    assert set(names) == {f"fx_{info.name}" for info in FixtureRegistry().commands()}
    echo = names["fx_echo"]
    assert echo.description == "Echo the text back."
    assert echo.input_schema["required"] == ["text"]


@pytest.mark.parametrize("mode", MODES)
async def test_http_success_envelope_and_context(mode: str) -> None:
    recorder = Recorder()
    async with mcp_port(create_context=recorder) as port, mcp_client(port, mode) as client:
        echoed = await client.call_tool("fx_echo", {"text": "héllo"})
        added = await client.call_tool("fx_add", {"a": 2, "b": 40})
        who = await client.call_tool("fx_whoami", {})
    assert not echoed.is_error
    assert envelope_of(echoed) == {"ok": True, "data": {"text": "héllo"}}
    assert envelope_of(added) == await expected_envelope("add", {"a": 2, "b": 40}, None)
    assert envelope_of(who) == {"ok": True, "data": {"context": {"surface": "mcp", "auth": None}}}
    assert recorder.calls == [("mcp", None)] * 3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", ERROR_COMMANDS)
async def test_http_error_envelopes_match_invoke(mode: str, command: str) -> None:
    async with mcp_port() as port, mcp_client(port, mode) as client:
        result = await client.call_tool(f"fx_{command}", {})
    assert result.is_error
    got = envelope_of(result)
    assert got == await expected_envelope(command, {}, None)
    assert got["ok"] is False
    assert CANARY not in json.dumps(got)


@pytest.mark.parametrize("mode", MODES)
async def test_http_unknown_tool(mode: str) -> None:
    async with mcp_port() as port, mcp_client(port, mode) as client:
        unknown = await client.call_tool("fx_nope", {})
        # A command name without the prefix is no tool, even though `echo` exists.
        bare = await client.call_tool("echo", {"text": "x"})
    assert unknown.is_error
    assert envelope_of(unknown)["error"]["code"] == 64
    assert bare.is_error
    assert envelope_of(bare)["error"]["code"] == 64


async def test_http_create_context_failure_is_an_error_envelope() -> None:
    def broken(surface: str, auth: AuthRecord | None) -> Any:
        raise RuntimeError(CANARY)

    async with mcp_port(create_context=broken) as port, mcp_client(port, "legacy") as client:
        result = await client.call_tool("fx_echo", {"text": "x"})
    assert result.is_error
    got = envelope_of(result)
    assert got == await expected_envelope("crash", {}, None)
    assert CANARY not in json.dumps(got)


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
async def test_http_stateless_refuses_other_methods(method: str) -> None:
    async with mcp_port() as port:
        # JSON, so the guards (which refuse other bodies first) let it reach `/mcp`.
        headers = {**CLIENT_HEADERS, "Content-Type": "application/json"}
        resp = await raw_request(port, method, "/mcp", headers=headers)
    assert resp.status == 405
    assert resp.headers["Allow"] == "POST"


async def test_http_each_request_stands_alone() -> None:
    # No session id is handed out, and a call works without any initialize on this connection.
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "fx_add", "arguments": {"a": 1, "b": 2}},
        }
    ).encode()
    headers = {
        **CLIENT_HEADERS,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    async with mcp_port() as port:
        resp = await raw_request(port, "POST", "/mcp", headers=headers, body=body)
    assert resp.status == 200
    assert "mcp-session-id" not in resp.headers
    assert resp.headers["Content-Type"].startswith("application/json")
    answer = json.loads(resp.body)
    assert answer["id"] == 7
    assert json.loads(answer["result"]["content"][0]["text"]) == {"ok": True, "data": 3}


async def test_http_body_over_the_cap_is_413() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 2048 + b'"}}'
    headers = {**CLIENT_HEADERS, "Content-Type": "application/json", "Accept": "application/json"}
    async with mcp_port(max_body_bytes=1024) as port:
        resp = await raw_request(port, "POST", "/mcp", headers=headers, body=body)
    assert resp.status == 413
    assert DEFAULT_RPC_BODY_LIMIT == 1024 * 1024  # /mcp's cap unless the daemon sets another


def test_list_tools_names_and_schemas() -> None:
    tools = list_tools(FixtureRegistry(), tool_prefix="acme")
    assert [tool.name for tool in tools] == [
        f"acme_{info.name}" for info in FixtureRegistry().commands()
    ]
    assert all(tool.input_schema["type"] == "object" for tool in tools)


async def test_invoke_tool_directly() -> None:
    ok = await invoke_tool(
        FixtureRegistry(), "acme_add", {"a": 1, "b": 1}, tool_prefix="acme", context=None
    )
    assert not ok.is_error
    assert envelope_of(ok) == {"ok": True, "data": 2}
    refused = await invoke_tool(FixtureRegistry(), "acme_forbidden", None, tool_prefix="acme")
    assert refused.is_error
    assert envelope_of(refused) == {"ok": False, "error": {"code": 77, "message": "not for you"}}


async def test_create_mcp_server_in_process() -> None:
    recorder = Recorder()
    server = create_mcp_server(
        FixtureRegistry(), tool_prefix=TOOL_PREFIX, version=VERSION, create_context=recorder
    )
    async with Client(server, mode="legacy") as client:
        assert client.session.initialize_result is not None
        info = client.session.initialize_result.server_info
        assert (info.name, info.version) == (TOOL_PREFIX, VERSION)
        who = await client.call_tool("fx_whoami", {})
    assert envelope_of(who)["data"] == {"context": {"surface": "mcp", "auth": None}}
    assert recorder.calls == [("mcp", None)]


def test_importing_the_package_does_not_import_mcp() -> None:
    code = (
        "import sys, local_daemon\n"
        "assert 'mcp' not in sys.modules, 'mcp imported eagerly'\n"
        "assert callable(local_daemon.create_mcp_server)\n"
        "assert 'mcp' in sys.modules\n"
        "names = {'create_mcp_server', 'invoke_tool', 'list_tools', 'run_mcp_stdio'}\n"
        "assert names <= set(dir(local_daemon))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_lazy_names_are_the_implementations() -> None:
    import local_daemon
    from local_daemon import _mcp

    assert local_daemon.create_mcp_server is _mcp.create_mcp_server
    assert local_daemon.invoke_tool is _mcp.invoke_tool
    assert local_daemon.list_tools is _mcp.list_tools
    assert local_daemon.run_mcp_stdio is _mcp.run_mcp_stdio
    with pytest.raises(AttributeError):
        _ = local_daemon.no_such_name
