"""`/mcp` on a real daemon: stock clients need no `x-local-client`, browsers stay out.

The Host guard, the Origin guard and the JSON content type still apply to `/mcp`, and no CORS
preflight is ever granted; `Guards(mcp_client_header=True)` puts the header rule back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from daemon_support import http, running
from local_daemon import Guards

JSON = "application/json"
ACCEPT = "application/json, text/event-stream"
LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "d_echo", "arguments": {"text": "hi"}},
    }
).encode()


async def post_mcp(
    port: int, headers: dict[str, str] | None = None, body: bytes = LIST
) -> tuple[int, dict[str, str], Any]:
    all_headers = {"Content-Type": JSON, "Accept": ACCEPT, **(headers or {})}
    host = all_headers.pop("Host", None)
    status, got, payload = await http(
        port, "POST", "/mcp", headers=all_headers, body=body, host=host
    )
    return status, got, json.loads(payload) if payload.startswith(b"{") else None


@pytest.fixture
async def port(tmp_path: Path) -> int:  # type: ignore[misc]
    async with running(tmp_path, tool_prefix="d") as handle:
        yield handle.port


async def test_stock_client_without_header_lists_and_calls(port: int) -> None:
    status, _, listed = await post_mcp(port)
    assert status == 200
    assert "d_echo" in {tool["name"] for tool in listed["result"]["tools"]}
    status, _, called = await post_mcp(port, body=CALL)
    assert status == 200
    assert json.loads(called["result"]["content"][0]["text"]) == {
        "ok": True,
        "data": {"text": "hi"},
    }


async def test_same_origin_page_of_the_daemon_itself_is_allowed(port: int) -> None:
    status, _, _ = await post_mcp(port, {"Origin": f"http://127.0.0.1:{port}"})
    assert status == 200


@pytest.mark.parametrize("host", ["evil.test", "localhost.evil.test", "127.0.0.2", ""])
async def test_foreign_host_is_403(port: int, host: str) -> None:
    # DNS rebinding: a page on evil.test that resolves to 127.0.0.1 still sends Host: evil.test.
    status, _, answer = await post_mcp(port, {"Host": host})
    assert status == 403
    assert answer["error"]["message"] == "Host not allowed"


@pytest.mark.parametrize("origin", ["http://evil.test", "null", "http://127.0.0.1:1"])
async def test_foreign_origin_is_403(port: int, origin: str) -> None:
    status, _, answer = await post_mcp(port, {"Origin": origin})
    assert status == 403
    assert answer["error"]["message"] == "Origin not allowed"


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
)
async def test_form_and_simple_content_types_are_415(port: int, content_type: str) -> None:
    # The content types a page may send without a preflight never reach the MCP transport.
    status, _, answer = await post_mcp(port, {"Content-Type": content_type})
    assert status == 415
    assert answer["ok"] is False


async def test_cors_preflight_is_never_granted(port: int) -> None:
    status, headers, _ = await http(
        port,
        "OPTIONS",
        "/mcp",
        headers={
            "Origin": "http://evil.test",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert status >= 400
    assert not any(name.lower().startswith("access-control-") for name in headers)
    # Not even for an allowed origin: the daemon never speaks CORS at all.
    status, headers, _ = await http(
        port,
        "OPTIONS",
        "/mcp",
        headers={"Origin": f"http://127.0.0.1:{port}", "Access-Control-Request-Method": "POST"},
    )
    assert not any(name.lower().startswith("access-control-") for name in headers)


async def test_answers_carry_no_cors_headers(port: int) -> None:
    _, headers, _ = await post_mcp(port, {"Origin": f"http://127.0.0.1:{port}"})
    assert not any(name.lower().startswith("access-control-") for name in headers)


@pytest.mark.parametrize("path", ["/rpc/echo", "/mcpx", "/mcp/", "/MCP"])
async def test_other_routes_still_demand_the_header(port: int, path: str) -> None:
    # The exemption belongs to the `/mcp` route itself, not to a path prefix or spelling.
    status, _, _ = await http(
        port, "POST", path, headers={"Content-Type": JSON}, body=b'{"text": "x"}'
    )
    assert status == 403


async def test_product_may_demand_the_header_on_mcp(tmp_path: Path) -> None:
    guards = Guards(mcp_client_header=True)
    async with running(tmp_path, tool_prefix="d", guards=guards) as handle:
        status, _, answer = await post_mcp(handle.port)
        assert status == 403
        assert "x-local-client" in answer["error"]["message"]
        status, _, _ = await post_mcp(handle.port, {"x-local-client": "my-agent"})
        assert status == 200


async def test_without_a_tool_prefix_there_is_no_mcp_and_no_exemption(tmp_path: Path) -> None:
    async with running(tmp_path) as handle:
        status, _, _ = await post_mcp(handle.port)
        assert status == 403
        status, _, _ = await post_mcp(handle.port, {"x-local-client": "t"})
        assert status == 404
