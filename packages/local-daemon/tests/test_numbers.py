"""Numbers no float can hold, however spelt, are refused on `/rpc` (400) and `/mcp` (-32602)
before a command runs: a command that answers its argument would otherwise fail to send it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from daemon_support import CLIENT, DaemonProcess, http, running
from local_daemon import Registry

SPELLINGS = ["1e400", "-1e400", "1E+99999", "-0.5e309", "NaN", "Infinity", "-Infinity"]
_MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


def counting_registry(calls: list[Any]) -> Registry:
    registry = Registry()

    @registry.command
    def same(value: Any = None) -> Any:
        """Return `value` unchanged."""
        calls.append(value)
        return value

    return registry


def tools_call(value_text: str, request_id: int = 1) -> bytes:
    params = f'{{"name":"t_same","arguments":{{"value":{value_text}}}}}'
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}'.encode()


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[tuple[int, list[Any]]]:
    calls: list[Any] = []
    async with running(tmp_path, registry=counting_registry(calls), tool_prefix="t") as handle:
        yield handle.port, calls


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_rpc_refuses_with_400_before_the_command_runs(
    daemon: tuple[int, list[Any]], spelling: str
) -> None:
    port, calls = daemon
    for body in (f'{{"value": {spelling}}}', f'{{"value": [1, {{"deep": [{spelling}]}}]}}'):
        status, _, answer = await http(
            port, "POST", "/rpc/same", headers=CLIENT, body=body.encode()
        )
        assert status == 400, answer
        error = json.loads(answer)["error"]
        assert error["code"] == 65
        assert error["message"] in (
            "request body is not valid JSON",
            "request body holds a number beyond the range of a float",
        )
    assert calls == []
    status, _, answer = await http(
        port, "POST", "/rpc/same", headers=CLIENT, body=b'{"value": 1.5e308}'
    )
    assert (status, json.loads(answer)) == (200, {"ok": True, "data": 1.5e308})


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_mcp_refuses_with_invalid_params_before_the_command_runs(
    daemon: tuple[int, list[Any]], spelling: str
) -> None:
    port, calls = daemon
    headers = {**CLIENT, **_MCP_ACCEPT}
    status, _, answer = await http(
        port, "POST", "/mcp", headers=headers, body=tools_call(spelling, 7)
    )
    assert status == 200, answer
    reply = json.loads(answer)
    assert reply["id"] == 7
    assert reply["error"]["code"] == -32602
    # A notification carries no id to answer: 400, as the SDK answers a message it cannot accept.
    note = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%s}}' % (
        spelling.encode()
    )
    status, _, answer = await http(port, "POST", "/mcp", headers=headers, body=note)
    assert status == 400, answer
    assert json.loads(answer)["error"]["code"] == -32602
    assert calls == []


class _Respell(httpx2.AsyncBaseTransport):
    """Sends what the SDK client wrote, with one number respelt as the test asks."""

    def __init__(self, spelling: str) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._spelling = spelling.encode()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        if b"123.25" in body:
            body = body.replace(b"123.25", self._spelling)
            headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
            request = httpx2.Request(request.method, request.url, headers=headers, content=body)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("spelling", ["1e400", "NaN"])
async def test_the_sdk_client_gets_invalid_params(
    daemon: tuple[int, list[Any]], mode: str, spelling: str
) -> None:
    port, calls = daemon
    async with AsyncExitStack() as stack:
        client_http = await stack.enter_async_context(
            httpx2.AsyncClient(transport=_Respell(spelling))
        )
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client_http)
        client = await stack.enter_async_context(Client(transport, mode=mode))
        with pytest.raises(MCPError) as raised:
            await client.call_tool("t_same", {"value": 123.25})
        assert raised.value.error.code == -32602
        result = await client.call_tool("t_same", {"value": 2.5})
    assert result.structured_content == {"ok": True, "data": 2.5}
    assert calls == [2.5]


# --- a fuzz against a real daemon process ------------------------------------------------------

_digits = st.text("0123456789", min_size=1, max_size=6)


@st.composite
def non_finite(draw: st.DrawFn) -> str:
    """One number no float can hold, in any JSON spelling (or a NaN/Infinity literal)."""
    if draw(st.booleans()):
        return draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.sampled_from(["1", "9", "12", "7"]))
    fraction = draw(st.one_of(st.just(""), _digits.map(lambda d: "." + d)))
    e = draw(st.sampled_from(["e", "E"]))
    exponent_sign = draw(st.sampled_from(["", "+"]))
    exponent = draw(st.integers(min_value=309, max_value=10**6))
    return f"{sign}{whole}{fraction}{e}{exponent_sign}{exponent}"


_finite = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
    st.text(max_size=4).map(json.dumps),
    st.sampled_from(["true", "false", "null"]),
)


@st.composite
def document(draw: st.DrawFn) -> str:
    """A JSON value with one non-finite number somewhere inside."""
    text = draw(non_finite())
    for _ in range(draw(st.integers(0, 4))):
        siblings = draw(st.lists(_finite, max_size=2))
        if draw(st.booleans()):
            items = [*siblings, text]
            draw(st.randoms()).shuffle(items)
            text = "[" + ",".join(items) + "]"
        else:
            key = draw(st.text(max_size=4))
            pairs = [f"{json.dumps(str(i))}:{v}" for i, v in enumerate(siblings)]
            pairs.append(f"{json.dumps(key)}:{text}")
            text = "{" + ",".join(pairs) + "}"
    return text


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    daemon = DaemonProcess(
        tmp_path_factory.mktemp("numbers") / "state",
        "--tool-prefix",
        "t",
        target="numbers_registry:registry",
    )
    try:
        daemon.wait_ready()
        yield daemon
    finally:
        log = daemon.stop()
    assert "Traceback" not in log, log
    assert "error" not in log.lower(), log


def _post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    connection = HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", path, body=body, headers={**CLIENT, **headers})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=document())
def test_fuzz_no_5xx_and_no_traceback(served: DaemonProcess, value: str) -> None:
    status, answer = _post(served.port, "/rpc/same", f'{{"value":{value}}}'.encode(), {})
    assert status == 400, answer
    status, answer = _post(served.port, "/mcp", tools_call(value), _MCP_ACCEPT)
    assert status == 200, answer
    assert json.loads(answer)["error"]["code"] == -32602
