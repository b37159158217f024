"""Shared helpers for the refresh tests: canary credentials and a rotating local token server."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

CANARY = "CANARY"
# The refresh's test seam (`AGENT_ACCOUNTS_TEST_PAUSE=<step>:<marker>`, see io/_pause.py; kept in
# line with it by tests/internal/test_pause_seam.py): a refresh waits at a step while the marker
# file exists.
PAUSE_ENV = "AGENT_ACCOUNTS_TEST_PAUSE"
PAUSE_STEPS = ("config-locked", "locked", "requested", "temp-written", "before-replace", "renamed")
LOCK_NAMES = (".oauth_refresh.lock", ".oauth_refresh.lock.holder")


def canary_token(kind: str) -> str:
    """Return a fresh synthetic token that is a valid b64token and carries the canary marker."""
    return f"sk-ant-{kind}01-{CANARY}{secrets.token_hex(12)}"


def credentials(
    *,
    expires_at_ms: int,
    access: str | None = None,
    refresh: str | None = None,
    extra_block: dict[str, Any] | None = None,
    extra_top: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a credentials document in the agent client's shape, with other keys to preserve."""
    block: dict[str, Any] = {
        "accessToken": access or canary_token("oat"),
        "refreshToken": refresh or canary_token("ort"),
        "expiresAt": expires_at_ms,
        "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "max",
    }
    block.update(extra_block or {})
    doc: dict[str, Any] = {"agentOauth": block, "mcpOAuth": {"srv|1": {"note": "ü / \u2028"}}}
    doc.update(extra_top or {})
    return doc


def dump(doc: dict[str, Any], indent: str | None = None) -> bytes:
    """Serialise as `JSON.stringify(doc, null, indent)` would for these documents (str keys, no
    floats that print differently, non-ASCII as is): compact, or one key a line."""
    if not indent:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    return json.dumps(doc, ensure_ascii=False, indent=indent).encode()


def write_file(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write `data` atomically (temp and rename), as the agent client's careful writers do."""
    temp = path.with_name(f".writer.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.rename(temp, path)


def leftovers(config_dir: Path) -> list[str]:
    """List lock dirs, holder records and temp files left in or beside the config dir."""
    names = [n for n in os.listdir(config_dir) if n in LOCK_NAMES or n.endswith(".tmp")]
    legacy = Path(os.path.realpath(config_dir) + ".lock")
    if legacy.exists():
        names.append(str(legacy))
    return names


def assert_no_canary(*values: object) -> None:
    """Assert the canary marker appears in none of `values` (repr, str and JSON where possible)."""
    for value in values:
        for text in (repr(value), str(value)):
            assert CANARY not in text, text[:200]


def files_without_canary(root: Path, allowed: Iterable[Path]) -> None:
    """Assert no file under `root` except `allowed` holds the canary."""
    allow = {p.resolve() for p in allowed}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.resolve() not in allow:
            assert CANARY.encode() not in path.read_bytes(), path


async def serve_loopback(app: web.Application, **options: Any) -> tuple[web.AppRunner, str]:
    """Serve `app` on 127.0.0.1 at a free port; return its runner (to clean up) and base URL.

    `options` go to `web.AppRunner` (`shutdown_timeout`); the access log is off.
    """
    runner = web.AppRunner(app, access_log=None, **options)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


@dataclass
class TokenServer:
    """A local OAuth token endpoint that rotates single-use refresh tokens.

    Every refresh token it issued (or was seeded with) works once; a spent or unknown one gets a
    400 whose body and headers echo it back (a leaky server). Each successful exchange returns a
    new access token and a new refresh token, with their canaries.
    """

    valid: set[str] = field(default_factory=set)
    spent: set[str] = field(default_factory=set)
    received: list[str] = field(default_factory=list)
    exchanges: int = 0
    rejected: int = 0
    usage_requests: int = 0
    expires_in: int = 3600
    delay: float = 0.0
    runner: web.AppRunner | None = None
    url: str = ""

    def seed(self, refresh_token: str) -> None:
        """Accept `refresh_token` once."""
        self.valid.add(refresh_token)

    async def _token(self, request: web.Request) -> web.Response:
        body = await request.json()
        token = body.get("refresh_token")
        self.received.append(token)
        if self.delay:
            await asyncio.sleep(self.delay)
        if token not in self.valid:
            self.rejected += 1
            return web.json_response(
                {"error": "invalid_grant", "echo": token},
                status=400,
                headers={"x-echo": str(token)},
            )
        self.valid.discard(token)
        self.spent.add(token)
        self.exchanges += 1
        new_refresh = canary_token("ort")
        self.valid.add(new_refresh)
        return web.json_response(
            {
                "access_token": canary_token("oat"),
                "refresh_token": new_refresh,
                "expires_in": self.expires_in,
                "token_type": "Bearer",
            },
            headers={"x-echo-refresh": new_refresh},
        )

    async def _usage(self, request: web.Request) -> web.Response:
        self.usage_requests += 1
        return web.json_response(
            {
                "five_hour": {"utilization": 23.0, "resets_at": "2030-01-01T00:00:00Z"},
                "seven_day": {"utilization": 41.5, "resets_at": None},
            }
        )

    async def start(self) -> str:
        """Start on 127.0.0.1:0 and return the base URL."""
        app = web.Application()
        app.router.add_post("/v1/oauth/token", self._token)
        app.router.add_get("/api/oauth/usage", self._usage)
        self.runner, self.url = await serve_loopback(app)
        return self.url

    async def stop(self) -> None:
        """Stop the server."""
        if self.runner is not None:
            await self.runner.cleanup()


# --- the real-process race ---------------------------------------------------------------------

RACE_MARGIN_EXPIRES_IN = 300  # 5 min: always due for the CLI's 10-minute margin


@dataclass
class RaceOutcome:
    """What one race saw: per-round wall times, the server's ledger, and every process's output."""

    round_seconds: list[float]
    exchanges: int
    received: list[str]
    rejected: int
    writer_refreshes: int
    outputs: list[tuple[int, str, str]]
    invalid_samples: int
    final_refresh_valid: bool
    leftovers: list[str]


def account_cli() -> str:
    """Return the installed `account-cli` script beside this interpreter."""
    import sys

    return str(Path(sys.executable).with_name("account-cli"))


async def _agent_client_writer(
    config_dir: Path, server: TokenServer, stop: asyncio.Event, partial: list[bool]
) -> int:
    """Play the agent client: refresh under the proper-lockfile lock, writing the new file either
    atomically (temp and rename) or in place in two halves, as the real client sometimes does."""
    import httpx

    lock = config_dir / ".oauth_refresh.lock"
    path = config_dir / ".credentials.json"
    done = 0
    async with httpx.AsyncClient() as client:
        turn = 0
        while not stop.is_set():
            # Not back to back: on a loaded machine a writer refreshing every few ms would win
            # every race, and the CLI runs (what the race is about) would never refresh.
            await asyncio.sleep(1.0)
            try:
                os.mkdir(lock)
            except FileExistsError:
                continue
            try:
                doc = json.loads(path.read_bytes())
                token = doc["agentOauth"]["refreshToken"]
                response = await client.post(
                    f"{server.url}/v1/oauth/token",
                    json={"grant_type": "refresh_token", "refresh_token": token},
                )
                if response.status_code != 200:
                    raise AssertionError("the writer's own token was spent by someone")
                body = response.json()
                doc["agentOauth"]["accessToken"] = body["access_token"]
                doc["agentOauth"]["refreshToken"] = body["refresh_token"]
                doc["agentOauth"]["expiresAt"] = int(time.time() * 1000) + 300_000
                data = dump(doc)
                turn += 1
                if turn % 2:
                    write_file(path, data)
                else:
                    partial[0] = True
                    with open(path, "r+b") as handle:
                        handle.truncate(0)
                        handle.write(data[: len(data) // 2])
                        handle.flush()
                        await asyncio.sleep(0.01)  # a reader may see half a file here
                        handle.write(data[len(data) // 2 :])
                    partial[0] = False
                done += 1
            finally:
                os.rmdir(lock)
    return done


async def _monitor(path: Path, stop: asyncio.Event, partial: list[bool], bad: list[int]) -> None:
    while not stop.is_set():
        await asyncio.sleep(0.002)
        if partial[0]:
            continue  # the writer, not a refresher, is mid-way through an in-place write
        try:
            doc = json.loads(path.read_bytes())
            if not isinstance(doc["agentOauth"]["refreshToken"], str):
                bad[0] += 1
        except (OSError, ValueError, KeyError, TypeError):
            bad[0] += 1


async def run_race(
    home: Path, *, processes: int, rounds: int, command: list[str] | None = None
) -> RaceOutcome:
    """Race `processes` `account-cli poll --write --refresh` runs per round, plus an agent-client
    writer, against one rotating token server; return what happened."""
    config_dir = home / ".agent"
    config_dir.mkdir(parents=True, mode=0o700, exist_ok=True)
    server = TokenServer(expires_in=RACE_MARGIN_EXPIRES_IN)
    await server.start()
    first = canary_token("ort")
    server.seed(first)
    doc = credentials(expires_at_ms=int(time.time() * 1000) + 120_000, refresh=first)
    write_file(config_dir / ".credentials.json", dump(doc))
    env = {
        **os.environ,
        "HOME": str(home),
        "AGENT_AUTH_URL": server.url,
        "AGENT_API_BASE_URL": server.url,
    }
    env.pop("AGENT_PROFILE_ROOT", None)
    env.pop("AGENT_CONFIG_DIRS", None)
    env.pop("AGENT_CONFIG_DIR", None)
    argv = command or [account_cli(), "poll", "--write", "--refresh"]
    stop = asyncio.Event()
    partial = [False]
    bad = [0]
    writer = asyncio.create_task(_agent_client_writer(config_dir, server, stop, partial))
    monitor = asyncio.create_task(_monitor(config_dir / ".credentials.json", stop, partial, bad))
    outputs: list[tuple[int, str, str]] = []
    times: list[float] = []
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            procs = [
                await asyncio.create_subprocess_exec(
                    *argv,
                    env=env,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                for _ in range(processes)
            ]
            for proc in procs:
                out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
                assert proc.returncode is not None
                outputs.append((proc.returncode, out.decode(), err.decode()))
            times.append(time.perf_counter() - started)
    finally:
        stop.set()
        writer_refreshes = await writer
        await monitor
        await server.stop()
    final = json.loads((config_dir / ".credentials.json").read_bytes())
    return RaceOutcome(
        round_seconds=times,
        exchanges=server.exchanges,
        received=list(server.received),
        rejected=server.rejected,
        writer_refreshes=writer_refreshes,
        outputs=outputs,
        invalid_samples=bad[0],
        final_refresh_valid=final["agentOauth"]["refreshToken"] in server.valid,
        leftovers=leftovers(config_dir),
    )
