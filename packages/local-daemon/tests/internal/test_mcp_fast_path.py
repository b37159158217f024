"""The `/mcp` single-exchange path answers exactly as the SDK's own stateless JSON transport.

A daemon's `/mcp` (handler lifespan held) answers a well-formed JSON-RPC request through the SDK's
`ServerRunner` directly; a bare mount (no lifespan) sends every request through the SDK's
`StreamableHTTPSessionManager`. The same requests go to both and the answers must match: status,
content type and JSON body. Whatever the fast path does not take (notifications, batches, bad
JSON, other protocol versions, chunked bodies) must reach the SDK's transport intact.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import ClientSession, web
from multidict import CIMultiDict

from daemon_mcp_fixture import CANARY, TOOL_PREFIX, VERSION, FixtureRegistry, context_factory
from daemon_raw_http import RawResponse, raw_request, serve_app
from local_daemon import RpcBodyLimit
from local_daemon._config import AppOptions
from local_daemon._mcp_http import McpHttpHandler

ACCEPT = "application/json, text/event-stream"
INIT_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}


def rpc(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(name: str, arguments: Any = None, request_id: Any = 1) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return rpc("tools/call", params, request_id)


# Requests the fast path answers itself, each with what makes it interesting.
REQUESTS: list[tuple[str, Any, dict[str, str]]] = [
    ("initialize", rpc("initialize", INIT_PARAMS), {}),
    ("initialize, newest", rpc("initialize", {**INIT_PARAMS, "protocolVersion": "2025-11-25"}), {}),
    ("initialize, unknown version", rpc("initialize", {**INIT_PARAMS, "protocolVersion": "1"}), {}),
    ("ping", rpc("ping"), {}),
    ("ping, string id", rpc("ping", request_id="abc"), {}),
    ("tools/list", rpc("tools/list"), {"MCP-Protocol-Version": "2025-06-18"}),
    ("tools/list, cursor", rpc("tools/list", {"cursor": "x"}), {}),
    ("tools/call ok", call("fx_echo", {"text": "héllo"}), {"MCP-Protocol-Version": "2025-11-25"}),
    ("tools/call refused", call("fx_forbidden", {}), {}),
    ("tools/call crash", call("fx_crash", {}), {}),
    ("tools/call unknown", call("fx_nope", {}), {}),
    ("tools/call no arguments", call("fx_whoami"), {}),
    ("tools/call bad params", rpc("tools/call", {"arguments": {}}), {}),
    ("unknown method", rpc("resources/list"), {}),
    ("made-up method", rpc("no/such/method", {"a": 1}), {}),
    ("wildcard accept", rpc("ping"), {"Accept": "*/*"}),
    ("json only accept", rpc("ping"), {"Accept": "application/json"}),
    ("_meta in params", rpc("tools/list", {"_meta": {"progressToken": 3}}), {}),
]

# Requests the fast path must hand to the SDK's transport.
HANDED_OVER: list[tuple[str, bytes, dict[str, str]]] = [
    (
        "notification",
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        {},
    ),
    ("batch", json.dumps([rpc("ping"), rpc("ping", request_id=2)]).encode(), {}),
    ("bad json", b'{"jsonrpc": "2.0", "id": 1, "method": ', {}),
    ("params not an object", json.dumps(rpc("tools/call", [1, 2])).encode(), {}),
    ("null id", json.dumps(rpc("ping", request_id=None)).encode(), {}),
    ("boolean id", json.dumps(rpc("ping", request_id=True)).encode(), {}),
    ("empty body", b"", {}),
    ("not json-rpc", json.dumps({"id": 1, "method": "ping"}).encode(), {}),
    ("a response", json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode(), {}),
    ("sse only accept", json.dumps(rpc("ping")).encode(), {"Accept": "text/event-stream"}),
    ("no accept", json.dumps(rpc("ping")).encode(), {"Accept": ""}),
    (
        "modern protocol",
        json.dumps(rpc("tools/list")).encode(),
        {"MCP-Protocol-Version": "2026-07-28"},
    ),
    ("unknown protocol", json.dumps(rpc("ping")).encode(), {"MCP-Protocol-Version": "1999-01-01"}),
]


@asynccontextmanager
async def served(held: bool) -> AsyncIterator[tuple[int, McpHttpHandler]]:
    app = web.Application()
    handler = McpHttpHandler(
        AppOptions(
            registry=FixtureRegistry(),
            tool_prefix=TOOL_PREFIX,
            version=VERSION,
            create_context=context_factory,
            rpc_body_limit=RpcBodyLimit(max_bytes=4096),
        )
    )
    app.router.add_route("*", "/mcp", handler.handle)
    if held:
        app.cleanup_ctx.append(handler.lifespan)
    async with serve_app(app) as port:
        yield port, handler


async def post(port: int, body: bytes, headers: dict[str, str]) -> RawResponse:
    all_headers = {"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    if all_headers["Accept"] == "":
        del all_headers["Accept"]
    return await raw_request(port, "POST", "/mcp", headers=all_headers, body=body)


def comparable(resp: RawResponse) -> tuple[int, str, Any]:
    kind = resp.headers.get("Content-Type", "").split(";")[0]
    try:
        body: Any = json.loads(resp.body) if resp.body else None
    except ValueError:
        body = resp.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        # The SDK's transport-level error texts quote pydantic's message, with its version.
        body["error"].pop("message", None)
    return resp.status, kind, body


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the requests that reach the SDK's session manager."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    seen = {"manager": 0}
    real = StreamableHTTPSessionManager.handle_request

    async def counting(self: Any, scope: Any, receive: Any, send: Any) -> None:
        seen["manager"] += 1
        await real(self, scope, receive, send)

    monkeypatch.setattr(StreamableHTTPSessionManager, "handle_request", counting)
    return seen


@pytest.mark.parametrize(("label", "message", "headers"), REQUESTS, ids=[r[0] for r in REQUESTS])
async def test_fast_path_answers_like_the_sdk_transport(
    label: str, message: Any, headers: dict[str, str], counted: dict[str, int]
) -> None:
    body = json.dumps(message).encode()
    async with served(held=False) as (port, _):
        expected = await post(port, body, headers)
    assert counted["manager"] == 1
    async with served(held=True) as (port, _):
        got = await post(port, body, headers)
    assert counted["manager"] == 1, "the fast path handed it over"
    assert comparable(got) == comparable(expected), label
    assert CANARY.encode() not in got.body
    assert "mcp-session-id" not in got.headers


@pytest.mark.parametrize(("label", "body", "headers"), HANDED_OVER, ids=[r[0] for r in HANDED_OVER])
async def test_everything_else_reaches_the_sdk_transport(
    label: str, body: bytes, headers: dict[str, str], counted: dict[str, int]
) -> None:
    async with served(held=False) as (port, _):
        expected = await post(port, body, headers)
    async with served(held=True) as (port, _):
        got = await post(port, body, headers)
    assert counted["manager"] == 2, "both went through the SDK's transport"
    assert comparable(got) == comparable(expected), label


async def test_chunked_and_oversized_bodies_reach_the_sdk_transport(
    counted: dict[str, int],
) -> None:
    ping = json.dumps(rpc("ping")).encode()
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}

    async def chunks() -> AsyncIterator[bytes]:
        yield ping[:5]
        yield ping[5:]

    async with served(held=True) as (port, _):
        async with (
            ClientSession() as session,
            session.post(f"http://127.0.0.1:{port}/mcp", data=chunks(), headers=headers) as resp,
        ):
            assert resp.headers.get("Content-Type", "").startswith("application/json")
            got = RawResponse(status=resp.status, headers=CIMultiDict(), body=await resp.read())
        big = json.dumps(rpc("ping", {"pad": "x" * 8192})).encode()
        too_big = await raw_request(port, "POST", "/mcp", headers=headers, body=big)
    assert got.status == 200
    assert json.loads(got.body)["result"] == {}
    assert too_big.status == 413
    assert counted["manager"] == 2


async def test_fast_path_calls_the_command_once_with_the_mcp_context() -> None:
    async with served(held=True) as (port, _):
        resp = await post(port, json.dumps(call("fx_whoami", {})).encode(), {})
    result = json.loads(resp.body)["result"]
    assert result["structuredContent"] == {
        "ok": True,
        "data": {"context": {"surface": "mcp", "auth": None}},
    }
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["isError"] is False


class BrokenListing(FixtureRegistry):
    def commands(self) -> Any:
        raise RuntimeError(CANARY)


@pytest.mark.parametrize("held", [True, False])
async def test_a_failing_listing_is_a_fixed_internal_error(
    held: bool, caplog: pytest.LogCaptureFixture
) -> None:
    app = web.Application()
    handler = McpHttpHandler(
        AppOptions(registry=BrokenListing(), tool_prefix=TOOL_PREFIX, version=VERSION)
    )
    app.router.add_route("*", "/mcp", handler.handle)
    if held:
        app.cleanup_ctx.append(handler.lifespan)
    with caplog.at_level(logging.DEBUG):
        async with serve_app(app) as port:
            resp = await post(port, json.dumps(rpc("tools/list")).encode(), {})
    assert resp.status == 200
    assert json.loads(resp.body)["error"] == {"code": -32603, "message": "Internal server error"}
    assert CANARY.encode() not in resp.body
    assert CANARY not in caplog.text
    assert "tools/list failed: RuntimeError" in caplog.text
