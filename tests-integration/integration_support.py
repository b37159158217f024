"""Helpers for the cross-package suite: a daemon in this loop, SSE reading, canary homes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from local_daemon import start_daemon

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
