"""A call that outlives its connection, end to end (issue 29's done-when): a task started over
`/mcp` by the SDK's client in a process that is then SIGKILLed returns its result, and its
progress, to a new client process; the daemon restarted under socket activation still has it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from activation_support import free_port, socket_activated, wait_listening
from daemon_support import TESTS_DIR
from mcp_task_client import get_task, task_client, task_result

_LINE_WAIT = 120.0  # a guard against a hang, never a measure


async def client_process(*argv: str) -> asyncio.subprocess.Process:
    """`python -m mcp_task_client ARGV...`, stdout piped."""
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcp_task_client",
        *argv,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def line(process: asyncio.subprocess.Process) -> list[str]:
    assert process.stdout is not None
    raw = await asyncio.wait_for(process.stdout.readline(), _LINE_WAIT)
    assert raw, "the client process ended early"
    return raw.decode().rstrip("\n").split(" ", 1)


async def stop(daemon: subprocess.Popen[bytes]) -> None:
    daemon.send_signal(signal.SIGTERM)
    _, err = await asyncio.to_thread(daemon.communicate, timeout=60)
    assert daemon.returncode == 0, err.decode("utf-8", "replace")


@pytest.mark.slow
async def test_a_killed_clients_task_returns_to_a_new_client_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    port = free_port()
    state = tmp_path / "state"
    gate = tmp_path / "gate"
    url = f"http://127.0.0.1:{port}/mcp"
    serve = ("task_registry:registry", state, "--tool-prefix", "tk")
    daemon = socket_activated(port, *serve)
    try:
        await wait_listening(port)
        first = await client_process("start", url, "tk_gated", json.dumps({"gate": str(gate)}))
        kind, task_id = await line(first)
        assert kind == "task"
        # The first client is waiting on `tasks/result` when it dies.
        first.kill()
        assert await first.wait() == -signal.SIGKILL

        second = await client_process("result", url, task_id)
        # The command's newest report reaches the new client at once...
        assert await line(second) == ["progress", "1.0"]
        gate.touch()
        # ... and the rest as the command goes on, then the call's own result.
        assert await line(second) == ["progress", "2.0"]
        kind, payload = await line(second)
        assert kind == "result"
        assert await second.wait() == 0
        result = json.loads(payload)
        assert result["structuredContent"] == {"ok": True, "data": {"gate": "opened"}}
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    finally:
        await stop(daemon)

    record = state / "tasks" / f"{task_id}.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600

    # A new daemon on the same state dir, started by its first connection.
    daemon = socket_activated(port, *serve)
    try:
        await wait_listening(port)
        async with task_client(url) as client:
            kept = await get_task(client, task_id)
            again = await task_result(client, task_id)
    finally:
        await stop(daemon)
    assert kept.status == "completed"
    assert again.structured_content == {"ok": True, "data": {"gate": "opened"}}
