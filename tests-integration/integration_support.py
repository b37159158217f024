"""Helpers for the cross-package suite: a daemon in this loop or a `serve` process, SSE reading,
canary homes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from local_daemon import daemon_paths, read_pid_file, start_daemon

CLIENT = {"content-type": "application/json", "x-local-client": "integration-suite"}


@asynccontextmanager
async def running_daemon(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[str, Any]]:
    """Start a daemon on 127.0.0.1:0 with `options`; yield its base URL and handle."""
    handle = await start_daemon(
        version="it-1", state_dir=str(tmp_path / "state"), port=0, **options
    )
    try:
        yield f"http://127.0.0.1:{handle.port}", handle
    finally:
        await handle.close()


def served_port(
    state: Path, process: subprocess.Popen[bytes], *, log: Path | None = None, limit: float = 60.0
) -> int:
    """Wait until `process` serves for `state` (its pid file names it); return the port
    `daemon.meta.json` names. A daemon that exits first fails with its stderr (or `log`)."""

    def story() -> str:
        if log is not None:
            return log.read_text(errors="replace")
        return process.stderr.read().decode(errors="replace") if process.stderr else ""

    paths = daemon_paths(state)
    deadline = time.monotonic() + limit
    while read_pid_file(paths) != process.pid:  # bounded: the pid file appears once it serves
        assert process.poll() is None, story()
        assert time.monotonic() < deadline, "the daemon never wrote its pid file"
        time.sleep(0.02)
    # The metadata file is written before the pid file (the spec's readiness order).
    return int(json.loads(paths.meta_file.read_bytes())["port"])


async def rpc(
    session: aiohttp.ClientSession, base: str, name: str, args: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    """POST /rpc/<name> and return the status and the envelope."""
    async with session.post(f"{base}/rpc/{name}", json=args or {}, headers=CLIENT) as resp:
        return resp.status, await resp.json()


async def next_event(resp: aiohttp.ClientResponse, wanted: str, *, limit: float = 20.0) -> str:
    """Read SSE lines until an event named `wanted` arrives; return its data."""
    event = None
    async with asyncio.timeout(limit):
        while True:
            raw = await resp.content.readline()
            if not raw:
                raise AssertionError("event stream closed")
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == wanted:
                return line.split(":", 1)[1].strip()
            elif line == "":
                if event == wanted:
                    return ""
                event = None


def write_credentials(config_dir: Path, *, token: str, refresh: str, expires_at_ms: int) -> None:
    """Write a 0600 credentials file with an OAuth block."""
    config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = config_dir / ".credentials.json"
    path.write_text(
        json.dumps(
            {
                "agentOauth": {
                    "accessToken": token,
                    "refreshToken": refresh,
                    "expiresAt": expires_at_ms,
                    "scopes": ["user:inference"],
                    "subscriptionType": "max",
                }
            }
        ),
        encoding="utf-8",
    )
    path.chmod(0o600)
