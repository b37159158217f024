"""`Guards.cors_origins`: preflights granted to the listed origins only, on a real daemon; the
Host and Origin guards still apply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from daemon_support import demo_registry, http, running
from local_daemon import Guards

INSPECTOR = "http://localhost:6274"
JSON = "application/json"
LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()


def preflight_headers(
    origin: str, headers: str = "content-type,mcp-protocol-version"
) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": headers,
    }


def cors_headers(headers: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name.startswith("access-control-")}


@pytest.fixture
async def port(tmp_path: Path) -> Any:
    async with running(
        tmp_path,
        registry=demo_registry(),
        tool_prefix="d",
        guards=Guards(cors_origins=(INSPECTOR + "/",)),
    ) as handle:
        yield handle.port


@pytest.mark.parametrize("path", ["/mcp", "/rpc/echo"])
async def test_listed_origin_gets_its_preflight(port: int, path: str) -> None:
    status, headers, body = await http(port, "OPTIONS", path, headers=preflight_headers(INSPECTOR))
    assert status == 204, body
    assert headers["access-control-allow-origin"] == INSPECTOR
    allowed = {name.strip().lower() for name in headers["access-control-allow-headers"].split(",")}
    assert {"content-type", "mcp-session-id", "mcp-protocol-version", "accept"} <= allowed
    assert "POST" in headers["access-control-allow-methods"]
    assert headers["access-control-expose-headers"] == "Mcp-Session-Id"
    assert "Origin" in headers["vary"]
    assert "access-control-allow-credentials" not in headers


async def test_listed_origin_then_calls_mcp_and_reads_the_answer(port: int) -> None:
    status, headers, body = await http(
        port,
        "POST",
        "/mcp",
        headers={"Origin": INSPECTOR, "Content-Type": JSON, "Accept": f"{JSON}, text/event-stream"},
        body=LIST,
    )
    assert status == 200, body
    assert headers["access-control-allow-origin"] == INSPECTOR
    assert headers["access-control-expose-headers"] == "Mcp-Session-Id"
    assert "d_echo" in body.decode()


@pytest.mark.parametrize(
    "origin", ["http://evil.test", "http://localhost:6275", "https://localhost:6274", "null"]
)
async def test_other_origins_get_no_cors_and_stay_403(port: int, origin: str) -> None:
    status, headers, _ = await http(port, "OPTIONS", "/mcp", headers=preflight_headers(origin))
    assert status >= 400
    assert cors_headers(headers) == {}
    status, headers, _ = await http(
        port, "POST", "/mcp", headers={"Origin": origin, "Content-Type": JSON}, body=LIST
    )
    assert status == 403
    assert cors_headers(headers) == {}


async def test_host_guard_still_applies_to_a_listed_origin(port: int) -> None:
    for method in ("OPTIONS", "POST"):
        status, headers, body = await http(
            port,
            method,
            "/mcp",
            headers={**preflight_headers(INSPECTOR), "Content-Type": JSON},
            body=LIST,
            host="attacker.example",
        )
        assert status == 403, body
        assert json.loads(body)["error"]["message"] == "Host not allowed"
        assert cors_headers(headers) == {}


async def test_content_type_guard_still_applies_to_a_listed_origin(port: int) -> None:
    status, headers, _ = await http(
        port, "POST", "/mcp", headers={"Origin": INSPECTOR, "Content-Type": "text/plain"}, body=LIST
    )
    assert status == 415
    assert cors_headers(headers) == {}


async def test_none_by_default(tmp_path: Path) -> None:
    async with running(tmp_path, tool_prefix="d") as handle:
        status, headers, _ = await http(
            handle.port, "OPTIONS", "/mcp", headers=preflight_headers(INSPECTOR)
        )
        assert status >= 400
        assert cors_headers(headers) == {}
        assert "vary" not in headers


@pytest.mark.slow
async def test_serve_cors_origin_flag(tmp_path: Path) -> None:
    import asyncio

    from daemon_support import DaemonProcess

    daemon = DaemonProcess(
        tmp_path / "state",
        "--tool-prefix",
        "d",
        "--cors-origin",
        INSPECTOR,
        "--cors-origin",
        "https://a.test",
    )
    try:
        port = await asyncio.to_thread(daemon.wait_ready)
        for origin in (INSPECTOR, "https://a.test"):
            status, headers, _ = await http(
                port, "OPTIONS", "/mcp", headers=preflight_headers(origin)
            )
            assert status == 204
            assert headers["access-control-allow-origin"] == origin
        status, headers, _ = await http(
            port, "OPTIONS", "/mcp", headers=preflight_headers("https://b.test")
        )
        assert status >= 400
        assert cors_headers(headers) == {}
    finally:
        stderr = await asyncio.to_thread(daemon.stop)
    assert "Traceback" not in stderr
