"""The refresh-lock tests, public and white-box: a token server whose tokens are due again at
once (`due_token_server`), a due login, and where the locks and the holder record sit."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from accounts_refresh_support import TokenServer, canary_token, credentials, dump, write_file
from agent_accounts.io import Profile, refresh_if_needed

__all__ = [
    "MARGIN",
    "config_lock",
    "due_token_server",
    "now_ms",
    "record",
    "refresh",
    "seed_due",
    "wait_for",
]

MARGIN = 10 * 60 * 1000


def now_ms() -> int:
    import time

    return int(time.time() * 1000)


@contextlib.asynccontextmanager
async def due_token_server() -> AsyncIterator[TokenServer]:
    """Run a local token server whose tokens are due again at once (5 min, inside the 10-minute
    margin); the `server` fixture of test_locks and tests/internal."""
    srv = TokenServer(expires_in=300)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


def seed_due(profile: Profile, server: TokenServer) -> str:
    token = canary_token("ort")
    server.seed(token)
    write_file(
        Path(profile.config_dir) / ".credentials.json",
        dump(credentials(expires_at_ms=now_ms() - 1000, refresh=token)),
    )
    return token


def config_lock(profile: Profile) -> Path:
    return Path(profile.config_dir) / ".oauth_refresh.lock"


def record(profile: Profile) -> Path:
    return Path(profile.config_dir) / ".oauth_refresh.lock.holder"


async def refresh(profile: Profile, server: TokenServer, **kwargs: Any) -> Any:
    return await refresh_if_needed(profile, margin_ms=MARGIN, auth_url=server.url, **kwargs)


async def wait_for(path: Path, proc: asyncio.subprocess.Process | None = None) -> None:
    for _ in range(3000):
        if path.exists():
            return
        if proc is not None and proc.returncode is not None:
            break
        await asyncio.sleep(0.005)
    raise AssertionError(f"{path} never appeared")
