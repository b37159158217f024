"""`local-daemon mcp-stdio --attach DIR [--start MODULE:ATTR]`: stdio sessions sharing one daemon.

Real processes throughout: the relay is the CLI, the daemon is `local-daemon serve`, the clients
are the `mcp` SDK's stdio client (both protocol eras) or raw JSON-RPC lines where a test needs
the relay's exit code.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from daemon_support import TESTS_DIR, DaemonProcess
from local_daemon import daemon_paths, read_pid_file, write_pid_file

PRODUCT = "attach_product:registry"
MODERN = "2026-07-28"  # pinned: "auto" would fall back to the handshake while a daemon starts
ENV = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test-client", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _relay_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "local_daemon.cli", "mcp-stdio", *args]


def _cli(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _relay_argv(*args),
        input=stdin,
        env=ENV,
        cwd=TESTS_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _call(request_id: int, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments or {}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _lines(*messages: dict[str, Any]) -> str:
    return "".join(json.dumps(message) + "\n" for message in messages)


def _stop_daemon_of(state: Path) -> None:
    pid = read_pid_file(daemon_paths(state))
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and read_pid_file(daemon_paths(state)) == pid:
        time.sleep(0.02)  # bounded: the daemon removes its pid file as it closes


@pytest.fixture(scope="module")
def strict_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A daemon whose `/mcp` demands x-local-client (`--mcp-client-header`); tools unprefixed."""
    state = tmp_path_factory.mktemp("strict") / "state"
    daemon = DaemonProcess(state, "--tool-prefix", "", "--mcp-client-header", target=PRODUCT)
    try:
        daemon.wait_ready()
        yield state
    finally:
        daemon.stop()


# -- no daemon, refusals, usage ---------------------------------------------------------------


def test_no_daemon_is_69_with_one_clear_line(tmp_path: Path) -> None:
    result = _cli("--attach", str(tmp_path / "state"))
    assert (result.returncode, result.stdout) == (69, "")
    assert result.stderr == (
        f"local-daemon: no daemon is running for {tmp_path / 'state'} (no daemon.pid)"
        " (pass --start MODULE:ATTR to start one)\n"
    )


def test_a_stale_pid_file_is_no_daemon(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    paths = daemon_paths(tmp_path / "state")
    write_pid_file(paths, int(gone), meta={"port": 9, "host": "127.0.0.1", "tool_prefix": ""})
    result = _cli("--attach", str(paths.state_dir))
    assert result.returncode == 69
    assert f"is stale: process {gone} is not running" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--start", PRODUCT], "--start needs --attach DIR"),
        ([PRODUCT, "--attach", "s"], "give MODULE:ATTR or --attach DIR, not both"),
        (["--attach", "s", "--start", "nocolon"], "--start expects MODULE:ATTR"),
        (["--attach", "s", "--start", PRODUCT, "--start-timeout", "0"], "--start-timeout must"),
        (["--attach", "s", "--tool-prefix", "acme"], "--tool-prefix only applies with --start"),
        (["--attach", "s", "--version", "1.2"], "--version only applies with --start"),
    ],
)
def test_usage_errors_are_64(args: list[str], problem: str, tmp_path: Path) -> None:
    result = _cli(*args)
    assert result.returncode == 64, result.stderr
    assert result.stderr.startswith(f"local-daemon: {problem}")
    assert "usage: local-daemon mcp-stdio" in result.stderr
    assert not (TESTS_DIR / "s").exists()


# find_daemon's identity checks on hand-made state files: tests/internal/test_attach_identity.py


# -- one daemon, several sessions -------------------------------------------------------------


def _structured(result: types.CallToolResult) -> Any:
    assert not result.is_error, result
    return result.structured_content


async def test_start_race_two_sessions_share_one_daemon(tmp_path: Path) -> None:
    """Two sessions attach with --start at the same moment: one daemon starts, both see its
    counter (one session in each protocol era the SDK speaks)."""
    state = tmp_path / "state"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "local_daemon.cli", "mcp-stdio", "--attach", str(state), "--start", PRODUCT],
        env={"PYTHONPATH": str(TESTS_DIR)},
        cwd=TESTS_DIR,
    )
    counts: dict[str, Any] = {}
    versions: dict[str, str | None] = {}
    both_open = anyio.Event()
    opened: list[str] = []

    async def session(mode: str, errlog: IO[str]) -> None:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:  # type: ignore[arg-type]
            opened.append(mode)
            if len(opened) == 2:
                both_open.set()
            with anyio.fail_after(120):
                await both_open.wait()  # both sessions live at once, then both call
            counts[mode] = _structured(await client.call_tool("bump", {}))["data"]
            versions[mode] = client.session.protocol_version

    try:
        with tempfile.TemporaryFile("w+") as errlog:
            async with anyio.create_task_group() as group:
                group.start_soon(session, "legacy", errlog)
                group.start_soon(session, MODERN, errlog)
            errlog.seek(0)
            stderr = errlog.read()
    finally:
        _stop_daemon_of(state)
    assert sorted(count["count"] for count in counts.values()) == [1, 2]
    assert len({count["pid"] for count in counts.values()}) == 1
    # The 2026 era's per-request envelope went through too (its HTTP headers are the relay's).
    assert versions == {"legacy": "2025-11-25", MODERN: MODERN}
    assert "Traceback" not in stderr
    log = (state / "daemon.log").read_text()
    assert log.count("serving http://") == 1, log  # exactly one daemon was started
    assert "already running" not in log, log


def test_the_relay_passes_the_guards_and_imports_no_aiohttp(strict_daemon: Path) -> None:
    """The relay is a legitimate local client: x-local-client on a daemon that demands it, Host
    127.0.0.1:<port>, no Origin; and it loads mcp but never aiohttp (`python -X importtime`)."""
    stdin = _lines(INITIALIZE, INITIALIZED, _call(2, "bump"))
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *_relay_argv("--attach", str(strict_daemon))[1:]],
        input=stdin,
        env=ENV,
        cwd=TESTS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2]
    assert answers[1]["result"]["structuredContent"]["ok"] is True
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert "mcp.client.streamable_http" in imported
    assert not {name for name in imported if name.split(".")[0] == "aiohttp"}


@pytest.mark.parametrize("when", ["mid_call", "idle"])
def test_a_daemon_that_dies_ends_the_session_with_a_clear_line(when: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = DaemonProcess(state, "--tool-prefix", "", target=PRODUCT)
    mark = tmp_path / "mark"
    relay: subprocess.Popen[str] | None = None
    try:
        daemon.wait_ready()
        relay = subprocess.Popen(
            _relay_argv("--attach", str(state)),
            env=ENV,
            cwd=TESTS_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert relay.stdin is not None
        assert relay.stdout is not None
        assert relay.stderr is not None
        relay.stdin.write(_lines(INITIALIZE, INITIALIZED))
        if when == "mid_call":
            relay.stdin.write(_lines(_call(2, "hold", {"mark": str(mark)})))
        relay.stdin.flush()
        assert json.loads(relay.stdout.readline())["id"] == 1  # the session is up
        if when == "mid_call":
            deadline = time.monotonic() + 60
            while not mark.exists():  # bounded: the command writes it as it starts
                assert time.monotonic() < deadline, "the call never reached the daemon"
                time.sleep(0.02)
        daemon.process.send_signal(signal.SIGKILL)
        relay.wait(timeout=60)  # stdin stays open: the relay ends by itself
        out, err = relay.stdout.read(), relay.stderr.read()
    finally:
        if relay is not None:
            if relay.poll() is None:
                relay.kill()
                relay.wait(timeout=30)
            for stream in (relay.stdin, relay.stdout, relay.stderr):
                if stream is not None:
                    stream.close()
        daemon.stop()
    assert relay.returncode == 69, err
    assert err == (
        f"local-daemon: the daemon for {state} (pid {daemon.process.pid}) went away;"
        " this MCP session ends\n"
    )
    answers = [json.loads(line) for line in out.splitlines()]
    if when == "mid_call":
        # The open call fails instead of waiting forever.
        assert [(a["id"], a["error"]["code"]) for a in answers] == [(2, types.CONNECTION_CLOSED)]
    else:
        assert answers == []


def test_start_reports_a_daemon_that_cannot_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = _cli("--attach", str(state), "--start", "no_such_module_here:registry")
    assert (result.returncode, result.stdout) == (69, "")
    line = result.stderr.strip()
    assert line.startswith("local-daemon: the daemon it started exited with code 64 before")
    assert "cannot import 'no_such_module_here'" in line
    assert line.endswith(f"(its output: {state / 'daemon.log'})")
    assert not (state / "daemon.pid").exists()


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():  # bounded: the command in the daemon writes it
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_progress_and_cancel_pass_through_the_relay(
    mode: str, strict_daemon: Path, tmp_path: Path
) -> None:
    """Progress notifications stream back through the relay as the daemon sends them, and a
    client's cancel (a notification in the handshake era, the POST dropped in 2026) reaches the
    command in the daemon."""
    got: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        got.append((progress, total, message))

    params = StdioServerParameters(
        command=sys.executable, args=_relay_argv("--attach", str(strict_daemon))[1:]
    )
    mark = tmp_path / "call"
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            stepped = await client.call_tool("steps", {"n": 4}, progress_callback=on_progress)
            call = asyncio.ensure_future(
                client.call_tool("wait_cancel", {"mark": str(mark)}, progress_callback=on_progress)
            )
            await anyio.to_thread.run_sync(_wait_for, mark.with_suffix(".started"))
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            # While the session is still open: the cancel did it, not the relay going away.
            await anyio.to_thread.run_sync(_wait_for, mark.with_suffix(".cancelled"))
        errlog.seek(0)
        assert "Traceback" not in errlog.read()
    assert _structured(stepped) == {"ok": True, "data": 4}
    assert got[:4] == [(float(step), 4.0, f"step {step}") for step in range(1, 5)]
