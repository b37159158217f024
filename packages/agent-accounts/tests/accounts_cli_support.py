"""`account-cli` as a real subprocess for the CLI tests: a HOME under a temp dir whose profiles a
test adds, the env pointing at a local usage server, and one runner that checks every run for
what must never happen (a traceback, the canary on stdout or stderr, an exit code outside 0, 1, 2
and 64, a stderr line that is not one of the spec's templates)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accounts_support import CANARY, account_cli, add_profile, env_without_profiles

__all__ = [
    "HEAVY",
    "HEAVY_TOP_LEVEL",
    "STDERR_LINE",
    "Home",
    "Run",
    "plant_reading",
    "run_cli",
]

# Heavy modules the status line used to load: neither status line (`statusline`, the human line)
# may import them.
HEAVY_TOP_LEVEL = {
    "httpx",
    "httpcore",
    "anyio",
    "typer",
    "click",
    "rich",
    "aiohttp",
    "asyncio",
}
HEAVY = {
    "typing",
    "dataclasses",
    "inspect",
    "ast",
    "dis",
    "tokenize",
    "datetime",
    "contextlib",
    "ssl",
    "secrets",
    "hashlib",
    "urllib.parse",
    "ipaddress",
    "shutil",
    "importlib.metadata",
}

STDERR_LINE = re.compile(
    r"account-cli: no account qualifies \(.+\)"
    r"|account-cli: no profile labelled '[^'\n]+'"
    r"|account-cli: [^:\n]+: (login (missing|expired|unreadable|refused \([a-z-]+\))"
    r"|config dir .+ \(.+\)"
    r"|poll failed: [a-z0-9-]+|usage write failed|usage unreadable"
    r"|token refresh failed: [a-z0-9-]+"
    r"|[a-z0-9_]+ at [0-9.]+% \(crossed [0-9.]+%\), resets (unknown|\S+)"
    r"|alert hook (failed: exit -?\d+|timed out after \S+|could not start)"
    r"|alert state write failed; alerts held back)"
)


@dataclass
class Run:
    """One finished run: exit code, stdout and stderr."""

    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@dataclass
class Home:
    """A HOME with a default profile and `.agent-profiles/<name>` ones, and the env to run in."""

    path: Path
    url: str

    @property
    def profiles(self) -> Path:
        return self.path / ".agent-profiles"

    def add(
        self, name: str, doc: dict[str, Any] | bytes | None = None, *, seed: bool = True
    ) -> Path:
        """Add profile `name` (`.agent` is the default account) with a login valid for a day."""
        return add_profile(self.path, name, doc, seed=seed, now=time.time())

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a run: HOME here, the server's URL, no caller's profile variables."""
        return env_without_profiles(self.path, **{"AGENT_API_BASE_URL": self.url, **extra})

    async def run(self, *args: str, env: dict[str, str] | None = None) -> Run:
        """Run `account-cli *args` in this HOME (or `env`) and check the run."""
        return await run_cli(list(args), env or self.env())


async def run_cli(args: list[str], env: dict[str, str], argv0: list[str] | None = None) -> Run:
    """Run `account-cli` (or `argv0`) with `args` and `env`; assert nothing that must never
    happen did (stderr lines are checked against the templates unless usage failed or `-X` ran)."""
    proc = await asyncio.create_subprocess_exec(
        *(argv0 or [account_cli()]),
        *args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    run = Run(proc.returncode, out.decode(), err.decode())
    assert "Traceback" not in run.err + run.out
    assert CANARY not in run.err + run.out
    assert run.code in (0, 1, 2, 64), run
    if run.code != 64 and "-X" not in (argv0 or []):
        for line in run.err.splitlines():
            assert STDERR_LINE.fullmatch(line), line
    return run


def plant_reading(config: Path, name: str, written_at: float, **windows: float) -> None:
    """Plant session file `name` in profile `config`: `windows` at their percentages, each
    resetting at 2030-01-01."""
    sessions = config / "status-cache" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    limits = {
        w: {"used_percentage": pct, "resets_at": 1_893_456_000.7} for w, pct in windows.items()
    }
    doc = {"session_id": name, "written_at": written_at, "rate_limits": limits}
    (sessions / f"{name}.json").write_text(json.dumps(doc))
