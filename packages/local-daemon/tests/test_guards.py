"""The four guards on a real server on 127.0.0.1:0, with raw Host and Origin headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon_support import http, running
from local_daemon import Guards

JSON = "application/json"


@pytest.fixture
async def port(tmp_path: Path) -> int:  # type: ignore[misc]
    async with running(
        tmp_path,
        guards=Guards(allowed_hosts=("dev.test",), allowed_origins=("http://app.test:5173",)),
    ) as handle:
        yield handle.port


def loopback_hosts(port: int) -> list[str]:
    names = ["localhost", "127.0.0.1", "[::1]", "LOCALHOST"]
    return [*names, *(f"{name}:{port}" for name in names), "dev.test", f"dev.test:{port}"]


async def test_allowed_hosts(port: int) -> None:
    for host in loopback_hosts(port):
        status, _, _ = await http(port, "GET", "/version", host=host)
        assert status == 200, host


@pytest.mark.parametrize(
    "host",
    ["evil.test", "localhost.evil.test", "127.0.0.2", "localhost:1", "", "[::2]", "0.0.0.0"],
)
async def test_foreign_host_is_403_on_every_route(port: int, host: str) -> None:
    for method, path in [("GET", "/health"), ("GET", "/events"), ("POST", "/rpc/echo")]:
        status, _, _ = await http(
            port,
            method,
            path,
            host=host,
            headers={"x-local-client": "t", "Content-Type": JSON},
            body=b'{"text": "x"}' if method == "POST" else None,
        )
        assert status == 403, (host, path)


async def test_missing_host_is_403(port: int) -> None:
    # HTTP/1.0 lets a client omit Host; the allowlist still applies.
    import asyncio

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /version HTTP/1.0\r\n\r\n")
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    await writer.wait_closed()
    assert data.split(b" ")[1] == b"403"


async def post(port: int, headers: dict[str, str]) -> int:
    status, _, _ = await http(port, "POST", "/rpc/echo", headers=headers, body=b'{"text": "x"}')
    return status


async def test_origin_rules(port: int) -> None:
    for origin in [
        f"http://127.0.0.1:{port}",
        f"https://localhost:{port}",
        "http://localhost",
        f"http://[::1]:{port}",
        "http://app.test:5173",
        "HTTP://APP.TEST:5173/",
    ]:
        assert await post(port, {"Origin": origin, "Content-Type": JSON}) == 200, origin
    for origin in ["http://evil.test", "null", f"http://127.0.0.1:{port + 1}", "file://"]:
        assert await post(port, {"Origin": origin, "Content-Type": JSON}) == 403, origin
        # A foreign Origin is refused even with the client header.
        headers = {"Origin": origin, "Content-Type": JSON, "x-local-client": "t"}
        assert await post(port, headers) == 403, origin


async def test_client_header_rule(port: int) -> None:
    assert await post(port, {"Content-Type": JSON}) == 403
    assert await post(port, {"Content-Type": JSON, "x-local-client": "  "}) == 403
    assert await post(port, {"Content-Type": JSON, "x-local-client": "cli"}) == 200


async def test_content_type_rule(port: int) -> None:
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]:
        headers = {"Content-Type": content_type, "x-local-client": "t"}
        assert await post(port, headers) == 415, content_type
    assert await post(port, {"x-local-client": "t"}) == 415
    headers = {"Content-Type": "application/json; charset=utf-8", "x-local-client": "t"}
    assert await post(port, headers) == 200


async def test_order_host_before_origin_before_type(port: int) -> None:
    # Every rule broken at once: the first rule in the spec's order answers.
    headers = {"Origin": "http://evil.test", "Content-Type": "text/plain"}
    status, _, _ = await http(
        port, "POST", "/rpc/echo", host="evil.test", headers=headers, body=b"x"
    )
    assert status == 403
    assert await post(port, {"Origin": "http://evil.test", "Content-Type": "text/plain"}) == 403
    assert await post(port, {"Content-Type": "text/plain"}) == 403


async def test_get_needs_no_client_header(port: int) -> None:
    status, _, body = await http(port, "GET", "/health")
    assert status == 200
    assert b'"ok": true' in body


async def test_non_default_host_is_allowed(tmp_path: Path) -> None:
    async with running(tmp_path, host="127.0.0.2") as handle:
        for host in ["127.0.0.2", f"127.0.0.2:{handle.port}", "localhost"]:
            status, _, _ = await http(
                handle.port, "GET", "/version", host=host, address="127.0.0.2"
            )
            assert status == 200, host
        status, _, _ = await http(
            handle.port, "GET", "/version", host="127.0.0.3", address="127.0.0.2"
        )
        assert status == 403
