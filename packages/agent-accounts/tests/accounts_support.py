"""Shared helpers for the I/O and CLI tests: profiles with canary credentials, leak checks and a
scripted local usage server on 127.0.0.1:0."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import traceback
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from accounts_refresh_support import (
    CANARY,
    account_cli,
    assert_no_canary,
    canary_token,
    credentials,
    dump,
    serve_loopback,
    write_file,
)
from agent_accounts.io import Profile

__all__ = [
    "CANARY",
    "HOUR_MS",
    "NOW",
    "Handler",
    "UsageServer",
    "account_cli",
    "add_profile",
    "answer_ok",
    "assert_no_canary",
    "canary_token",
    "check_files",
    "check_logs",
    "credentials",
    "dump",
    "env_without_profiles",
    "exception_text",
    "json_bytes",
    "make_profile",
    "quiet_logs",
    "reading",
    "seed_credentials",
    "tree_of",
    "usage_body",
    "write_file",
]

NOW = 1_760_000_000.0  # epoch seconds used where a test passes `now`
HOUR_MS = 3_600_000


def seed_credentials(
    config_dir: Path, doc: dict[str, Any] | bytes | None = None, *, mode: int = 0o600
) -> str:
    """Write `.credentials.json` (a fresh canary login valid for a day after NOW by default);
    return the access token, or "" when `doc` is raw bytes."""
    if doc is None:
        doc = credentials(expires_at_ms=int(NOW * 1000) + 24 * HOUR_MS)
    data = doc if isinstance(doc, bytes) else dump(doc)
    write_file(config_dir / ".credentials.json", data, mode)
    if isinstance(doc, bytes):
        return ""
    block = doc.get("agentOauth")
    token = block.get("accessToken", "") if isinstance(block, dict) else ""
    return token if isinstance(token, str) else ""


def make_profile(
    root: Path,
    name: str,
    doc: dict[str, Any] | bytes | None = None,
    *,
    seed: bool = True,
    now: float = NOW,
) -> tuple[Profile, str]:
    """Create `root/name` (0700) with canary credentials valid a day after `now`; return the
    profile (labelled `name` without a leading dot) and its access token."""
    config = root / name
    config.mkdir(parents=True, mode=0o700, exist_ok=True)
    token = ""
    if seed:
        if doc is None:
            doc = credentials(expires_at_ms=int(now * 1000) + 24 * HOUR_MS)
        token = seed_credentials(config, doc)
    return Profile(label=name.lstrip("."), config_dir=str(config)), token


def add_profile(
    home: Path,
    name: str,
    doc: dict[str, Any] | bytes | None = None,
    *,
    seed: bool = True,
    now: float = NOW,
) -> Path:
    """Create profile `name` in HOME `home` (`.agent` is the default account, any other name goes
    under `.agent-profiles`) as `make_profile` does; return its config dir."""
    parent = home if name == ".agent" else home / ".agent-profiles"
    profile, _ = make_profile(parent, name, doc, seed=seed, now=now)
    return Path(profile.config_dir)


def usage_body(five: float = 23.0, week: float = 41.5, **extra: Any) -> dict[str, Any]:
    """A usage endpoint body with both common windows and an ignored extra key."""
    body: dict[str, Any] = {
        "five_hour": {"utilization": five, "resets_at": "2030-01-01T00:00:00Z"},
        "seven_day": {"utilization": week, "resets_at": None},
        "extra_usage": {"is_enabled": False},
    }
    body.update(extra)
    return body


def reading(
    written_at: float, *, windows: Iterable[str] = ("five_hour", "seven_day"), **extra: Any
) -> dict[str, Any]:
    """A valid usage-poll reading with `windows` at 10%, resetting at 2030-01-01."""
    doc: dict[str, Any] = {
        "session_id": "usage-poll",
        "written_at": written_at,
        "rate_limits": {w: {"used_percentage": 10, "resets_at": 1_893_456_000} for w in windows},
    }
    doc.update(extra)
    return doc


def exception_text(exc: BaseException) -> str:
    """Everything an exception can show: str, repr, notes and the formatted traceback."""
    return "\n".join(
        [str(exc), repr(exc), *getattr(exc, "__notes__", []), *traceback.format_exception(exc)]
    )


def check_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Assert no log record (any logger, httpx and httpcore included) holds the canary."""
    for record in caplog.records:
        assert CANARY not in record.getMessage(), record.name
        assert CANARY not in repr(record.args), record.name


def check_files(root: Path) -> None:
    """Assert no file under `root` holds the canary, except credentials files (the library's
    `.credentials.json` and the ones tests plant, all named `*credentials.json`)."""
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file() or path.name.endswith("credentials.json"):
            continue
        assert CANARY.encode() not in path.read_bytes(), path


Handler = Callable[[web.Request, "UsageServer"], Awaitable[web.StreamResponse]]


async def answer_ok(request: web.Request, server: UsageServer) -> web.StreamResponse:
    """Answer the default usage body."""
    return web.json_response(usage_body())


@dataclass
class UsageServer:
    """A real aiohttp usage endpoint on 127.0.0.1:0 whose answer a test scripts with `handler`.

    It records the headers of every usage request and counts requests to any other path
    (a redirect target must see none). `release` ends every stalled or held handler at stop.
    """

    handler: Handler = answer_ok
    requests: list[dict[str, str]] = field(default_factory=list)
    other_hits: list[str] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""
    runner: web.AppRunner | None = None

    def token_of(self, index: int = 0) -> str:
        """The bearer token the `index`-th usage request carried."""
        return self.requests[index]["authorization"].removeprefix("Bearer ")

    async def _usage(self, request: web.Request) -> web.StreamResponse:
        self.requests.append({k.lower(): v for k, v in request.headers.items()})
        return await self.handler(request, self)

    async def _other(self, request: web.Request) -> web.StreamResponse:
        self.other_hits.append(request.path)
        return web.json_response(usage_body())

    async def start(self) -> str:
        """Listen on 127.0.0.1:0 and return the base URL."""
        app = web.Application()
        app.router.add_get("/api/oauth/usage", self._usage)
        app.router.add_route("*", "/{tail:.*}", self._other)
        self.runner, self.url = await serve_loopback(app, shutdown_timeout=1.0)
        return self.url

    async def stop(self) -> None:
        """Release held handlers and stop listening."""
        self.release.set()
        if self.runner is not None:
            await self.runner.cleanup()

    async def __aenter__(self) -> UsageServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def hold(self, seconds: float = 30.0) -> None:
        """Wait until the server stops (bounded)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.release.wait(), seconds)


def json_bytes(value: Any) -> bytes:
    """Compact JSON bytes."""
    return json.dumps(value, separators=(",", ":")).encode()


def quiet_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Capture every logger at DEBUG, httpx and httpcore included."""
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "aiohttp", "agent_accounts"):
        caplog.set_level(logging.DEBUG, logger=name)


def tree_of(root: Path) -> list[str]:
    """Every path under `root`, relative and sorted (to compare before and after)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def env_without_profiles(home: Path, **extra: str) -> dict[str, str]:
    """The process environment with HOME at `home` and no profile variables of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    env["HOME"] = str(home)
    env.update(extra)
    return env
