"""Stock MCP clients against the real `local-daemon` CLI, with no extra header anywhere.

The official conformance suite's server scenarios that apply to a tools-only stateless server, the
MCP Inspector CLI (HTTP and stdio), the Python SDK's `mcp.Client(url)` with its defaults, and
Claude Code's `claude mcp list` (HTTP and stdio, offline under a scratch HOME). The node tools come
from tests-integration/node's committed lock (`make setup` runs `npm ci` there), Node 22 included.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from integration_support import served_port
from local_daemon import daemon_paths, read_pid_file
from mcp_clients_product import SIMPLE_TEXT

HERE = Path(__file__).resolve().parent
NODE_DIR = HERE / "node"
BIN = NODE_DIR / "node_modules" / ".bin"
VERSION = "3.2.1-it"
PRODUCT = "mcp_clients_product:registry"
TIMEOUT = 180
# The Inspector gives a server 15 s to connect; a loaded machine may need more.
PATIENT = ("--connect-timeout", "120000")

# The scenarios of `conformance list --server` that a stateless server with tools, resources and
# prompts must pass (subscriptions need a session; logging, completion, sampling, elicitation and
# the other content kinds are features the daemon does not offer).
SCENARIOS = (
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "tools-call-with-progress",
    "dns-rebinding-protection",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
)


@pytest.fixture(scope="module")
def node_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose PATH starts with the locked node tools (and Node 22 itself)."""
    if not (BIN / "conformance").exists():
        # `make setup` normally does this; never skip, install from the committed lock instead.
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--silent"],
            cwd=NODE_DIR,
            check=True,
            timeout=600,
        )
    node = subprocess.run(
        [str(BIN / "node"), "--version"], capture_output=True, text=True, check=True
    )
    assert node.stdout.startswith("v22."), node.stdout
    home = tmp_path_factory.mktemp("home")
    return {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "PYTHONPATH": str(HERE),
        # Claude Code, offline: no updater, telemetry, error reports or other traffic.
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "NO_COLOR": "1",
        # A loaded CI machine can take many seconds to start a Python MCP server.
        "MCP_TIMEOUT": "120000",
        "CI": "true",
    }


def _serve(state: Path, *extra: str, product: str = PRODUCT) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "local_daemon.cli", "serve", product]
    return subprocess.Popen(
        [*argv, "--state-dir", str(state), "--version", VERSION, *extra],
        cwd=HERE,
        env={**os.environ, "PYTHONPATH": str(HERE)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)
    if process.stderr is not None:
        process.stderr.close()


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`local-daemon serve` with tools named by command name (empty prefix) on 127.0.0.1:0."""
    state = tmp_path_factory.mktemp("daemon")
    process = _serve(state, "--tool-prefix", "")
    try:
        yield f"http://localhost:{served_port(state, process)}/mcp"
    finally:
        _stop(process)


@pytest.fixture(scope="module")
def strict_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A daemon that demands x-local-client on /mcp (`--mcp-client-header`)."""
    state = tmp_path_factory.mktemp("strict")
    process = _serve(state, "--tool-prefix", "", "--mcp-client-header")
    try:
        yield f"http://127.0.0.1:{served_port(state, process)}/mcp"
    finally:
        _stop(process)


@pytest.fixture(scope="module")
def attach_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The state dir of a daemon serving a counter (`mcp_counter_product`) for `--attach`."""
    state = tmp_path_factory.mktemp("attach")
    process = _serve(state, "--tool-prefix", "", product="mcp_counter_product:registry")
    try:
        served_port(state, process)
        yield state
    finally:
        _stop(process)


def _attach_command(state: Path) -> list[str]:
    return [sys.executable, "-m", "local_daemon.cli", "mcp-stdio", "--attach", str(state)]


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def _stdio_command() -> list[str]:
    return [sys.executable, "-m", "local_daemon.cli", "mcp-stdio", PRODUCT, "--version", VERSION]


def test_conformance_server_scenarios(
    node_env: dict[str, str], mcp_url: str, tmp_path: Path
) -> None:
    # One node process per scenario, all at once: each spends most of its time starting up.
    running = {
        scenario: subprocess.Popen(
            [
                str(BIN / "conformance"),
                "server",
                "--url",
                mcp_url,
                "--scenario",
                scenario,
                "--output-dir",
                str(tmp_path / scenario),
            ],
            env=node_env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for scenario in SCENARIOS
    }
    failed: dict[str, Any] = {}
    for scenario, process in running.items():
        output, _ = process.communicate(timeout=TIMEOUT)
        checks = [
            check
            for path in sorted((tmp_path / scenario).glob("*/checks.json"))
            for check in json.loads(path.read_text())
        ]
        statuses = {check["id"]: check["status"] for check in checks}
        # INFO checks report what was seen (the suite's 0.2 reports a session id's shape so).
        passed = set(statuses.values()) <= {"SUCCESS", "INFO"} and "SUCCESS" in statuses.values()
        if process.returncode != 0 or not passed:
            failed[scenario] = {"rc": process.returncode, "checks": statuses, "out": output[-2000:]}
    assert not failed, json.dumps(failed, indent=1)


def test_inspector_cli_over_http(node_env: dict[str, str], mcp_url: str, tmp_path: Path) -> None:
    inspector = [str(BIN / "inspector"), "--cli", mcp_url, "--transport", "http", *PATIENT]
    listed = _run([*inspector, "--method", "tools/list"], node_env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["tools"]}
    assert set(tools) == {
        "test_simple_text",
        "test_error_handling",
        "test_tool_with_progress",
        "echo",
    }
    # The progress reporter is no argument: the listing does not show it.
    assert tools["test_tool_with_progress"]["inputSchema"]["properties"] == {}
    echo = tools["echo"]
    assert echo["title"] == "Echo"
    assert echo["annotations"] == {"title": "Echo", "readOnlyHint": True, "idempotentHint": True}
    assert echo["inputSchema"]["properties"]["text"]["description"] == "The text to send back."
    assert echo["inputSchema"]["properties"]["mode"]["enum"] == ["plain", "upper"]
    assert echo["inputSchema"]["properties"]["mode"]["type"] == "string"
    called = _run(
        [
            *inspector,
            "--method",
            "tools/call",
            "--tool-name",
            "echo",
            "--tool-arg",
            "text=hi",
            "--tool-arg",
            "mode=upper",
        ],
        node_env,
        tmp_path,
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["isError"] is False
    assert result["structuredContent"] == {"ok": True, "data": {"text": "HI"}}


def test_inspector_cli_over_stdio(node_env: dict[str, str], tmp_path: Path) -> None:
    called = _run(
        [
            str(BIN / "inspector"),
            "--cli",
            *PATIENT,
            "--cwd",
            str(HERE),
            "-e",
            f"PYTHONPATH={HERE}",
            "--method",
            "tools/call",
            "--tool-name",
            "test_simple_text",
            "--",
            *_stdio_command(),
        ],
        node_env,
        tmp_path,
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["structuredContent"] == {"ok": True, "data": SIMPLE_TEXT}
    assert json.loads(result["content"][0]["text"]) == {"ok": True, "data": SIMPLE_TEXT}


async def test_python_sdk_client_with_defaults(mcp_url: str) -> None:
    reports: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total))

    async with Client(mcp_url) as client:
        listed = await client.list_tools()
        echoed = await client.call_tool("echo", {"text": "sdk", "mode": "upper"})
        refused = await client.call_tool("test_error_handling", {})
        reported = await client.call_tool(
            "test_tool_with_progress", {}, progress_callback=on_progress
        )
    assert reports == [(0, 100), (50, 100), (100, 100)]
    assert reported.structured_content == {"ok": True, "data": "progress reported"}
    names = [tool.name for tool in listed.tools]
    assert names == ["test_simple_text", "test_error_handling", "test_tool_with_progress", "echo"]
    assert not echoed.is_error
    # The client checked the structured result against the tool's outputSchema.
    assert echoed.structured_content == {"ok": True, "data": {"text": "SDK"}}
    assert refused.is_error
    block = refused.content[0]
    assert isinstance(block, types.TextContent)
    assert json.loads(block.text)["error"]["code"] == 65


async def test_attach_sessions_of_stock_clients_share_one_daemon(
    node_env: dict[str, str], attach_state: Path, tmp_path: Path
) -> None:
    """The Python SDK's stdio client and the Inspector CLI each run `mcp-stdio --attach`: two
    relays, one daemon, one counter."""
    params = StdioServerParameters(
        command=sys.executable, args=_attach_command(attach_state)[1:], cwd=HERE
    )
    async with Client(stdio_client(params)) as client:
        first = await client.call_tool("bump", {})
        # While this session stays open, another client attaches and bumps the same counter.
        inspector = [str(BIN / "inspector"), "--cli", *PATIENT, "--cwd", str(HERE)]
        called = await anyio.to_thread.run_sync(
            lambda: _run(
                [
                    *inspector,
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "bump",
                    "--",
                    *_attach_command(attach_state),
                ],
                node_env,
                tmp_path,
            )
        )
        third = await client.call_tool("bump", {})
    assert called.returncode == 0, called.stderr
    second = json.loads(called.stdout)["structuredContent"]
    assert first.structured_content is not None
    assert third.structured_content is not None
    counts = [first.structured_content["data"], second["data"], third.structured_content["data"]]
    assert [count["count"] for count in counts] == [1, 2, 3]
    assert len({count["pid"] for count in counts}) == 1
    assert read_pid_file(daemon_paths(attach_state)) == counts[0]["pid"]


def test_claude_code_shows_connected(
    node_env: dict[str, str], mcp_url: str, strict_url: str, attach_state: Path, tmp_path: Path
) -> None:
    claude = str(BIN / "claude")
    adds = [
        ["mcp", "add", "--transport", "http", "daemon-http", mcp_url],
        ["mcp", "add", "--transport", "http", "strict-http", strict_url],
        ["mcp", "add", "daemon-stdio", "-e", f"PYTHONPATH={HERE}", "--", *_stdio_command()],
        ["mcp", "add", "daemon-attach", "--", *_attach_command(attach_state)],
    ]
    for argv in adds:
        added = _run([claude, *argv], node_env, tmp_path)
        assert added.returncode == 0, added.stderr
    listed = _run([claude, "mcp", "list"], node_env, tmp_path)
    lines = {line.split(":", 1)[0]: line for line in listed.stdout.splitlines() if ":" in line}
    assert "Connected" in lines["daemon-http"], listed.stdout
    assert "Connected" in lines["daemon-stdio"], listed.stdout
    assert "Connected" in lines["daemon-attach"], listed.stdout
    # The control: the same client is turned away where the product demands the header.
    assert "Connected" not in lines["strict-http"], listed.stdout
