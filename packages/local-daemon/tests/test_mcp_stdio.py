"""MCP over stdio: the `mcp` package's stdio client against `python -m daemon_mcp_fixture`."""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from daemon_mcp_fixture import CANARY, ERROR_COMMANDS, TOOL_PREFIX, VERSION, FixtureRegistry

TESTS_DIR = Path(__file__).resolve().parent


def envelope_of(result: types.CallToolResult) -> dict[str, Any]:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    parsed = json.loads(block.text)
    assert isinstance(parsed, dict)
    return parsed


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_client_lists_and_calls_tools(mode: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "daemon_mcp_fixture"],
        env={"PYTHONPATH": str(TESTS_DIR)},
        cwd=TESTS_DIR,
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            if mode == "legacy":
                assert client.session.initialize_result is not None
                info = client.session.initialize_result.server_info
                assert (info.name, info.version) == (TOOL_PREFIX, VERSION)
            listed = await client.list_tools()
            echoed = await client.call_tool("fx_echo", {"text": "over stdio"})
            who = await client.call_tool("fx_whoami", {})
            errors = {name: await client.call_tool(f"fx_{name}", {}) for name in ERROR_COMMANDS}
            unknown = await client.call_tool("fx_missing", {})
        errlog.seek(0)
        stderr = errlog.read()

    assert [tool.name for tool in listed.tools] == [
        f"fx_{info.name}" for info in FixtureRegistry().commands()
    ]
    assert not echoed.is_error
    assert envelope_of(echoed) == {"ok": True, "data": {"text": "over stdio"}}
    # create_context ran in the server process with surface "mcp" and no auth record
    assert envelope_of(who) == {"ok": True, "data": {"context": {"surface": "mcp", "auth": None}}}
    codes = {name: envelope_of(result)["error"]["code"] for name, result in errors.items()}
    assert codes["too_big"] == 64
    assert codes["bad_args"] == 65
    assert codes["limited"] == 75
    assert codes["forbidden"] == 77
    assert all(result.is_error for result in errors.values())
    assert CANARY not in json.dumps(envelope_of(errors["crash"]))
    assert CANARY not in stderr
    assert unknown.is_error
    assert envelope_of(unknown)["error"]["code"] == 64


@pytest.mark.parametrize(
    ("prefix_args", "prefix"), [([], ""), (["--tool-prefix", "acme"], "acme_")]
)
async def test_cli_mcp_stdio_names_tools(prefix_args: list[str], prefix: str) -> None:
    # `local-daemon mcp-stdio MODULE:ATTR` runs without --tool-prefix: tools are the command names.
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "local_daemon.cli",
            "mcp-stdio",
            "daemon_mcp_fixture:registry",
            *prefix_args,
            "--version",
            "4.5.6",
        ],
        env={"PYTHONPATH": str(TESTS_DIR)},
        cwd=TESTS_DIR,
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            assert client.session.initialize_result is not None
            assert client.session.initialize_result.server_info.version == "4.5.6"
            listed = await client.list_tools()
            echoed = await client.call_tool(f"{prefix}echo", {"text": "bare"})
            other = await client.call_tool("acme_echo" if not prefix else "echo", {"text": "x"})
    assert [tool.name for tool in listed.tools] == [
        f"{prefix}{info.name}" for info in FixtureRegistry().commands()
    ]
    assert envelope_of(echoed) == {"ok": True, "data": {"text": "bare"}}
    assert other.is_error
    assert envelope_of(other)["error"]["code"] == 64


_RESPELT = {"123.25": "NaN", "124.25": "1e400", "125.25": "-Infinity", "126.25": "1E+99999"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_cli_mcp_stdio_refuses_non_finite_numbers_with_invalid_params(mode: str) -> None:
    # The SDK client cannot write NaN or 1e400 itself: `sed` respells four finite numbers on the
    # way to `local-daemon mcp-stdio`, as a client that writes them would send them.
    respell = " ".join(f"-e s/{finite}/{spelt}/" for finite, spelt in _RESPELT.items())
    serve = shlex.join(
        [sys.executable, "-m", "local_daemon.cli", "mcp-stdio", "numbers_registry:registry"]
    )
    params = StdioServerParameters(
        command="sh",
        args=["-c", f"sed -u {respell} | exec {serve}"],
        env={"PYTHONPATH": str(TESTS_DIR)},
        cwd=TESTS_DIR,
    )
    codes: list[int] = []
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            for finite in _RESPELT:
                with pytest.raises(MCPError) as raised:
                    await client.call_tool("same", {"value": [1, {"deep": float(finite)}]})
                codes.append(raised.value.error.code)
            kept = await client.call_tool("same", {"value": 1.5e308})
        errlog.seek(0)
        stderr = errlog.read()
    assert codes == [types.INVALID_PARAMS] * len(_RESPELT)
    # The session goes on: a finite number is answered as it came.
    assert envelope_of(kept) == {"ok": True, "data": 1.5e308}
    assert "Traceback" not in stderr, stderr
