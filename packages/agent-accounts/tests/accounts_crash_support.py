"""Crash harness: a real `account-cli poll --write --refresh` killed at chosen system calls.

A reference run under `strace -f` lists the CLI's system calls. Every call from the first lock
step to the final release that changes state on disk or on the wire is a kill point, killed at
its entry (the call never runs) and at the call right after it (it ran): between two such calls
nothing the next run can see differs, so these points cover every distinct state a crash can
leave. Each point is then run with `strace -e inject=<call>:signal=KILL:when=<n>` (counted per
call, as strace counts), and the next two runs must clean up after it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accounts_refresh_support import (
    CANARY,
    TokenServer,
    account_cli,
    canary_token,
    credentials,
    dump,
    leftovers,
    write_file,
)

# The journal as the README documents it: these two files in the config dir, one JSON object a
# line with `t`, `pid`, `proc` and `event`; a login is named by its generation.
JOURNAL_NAME = ".oauth_refresh.journal"
ROTATED_NAME = ".oauth_refresh.journal.1"


def generation(token: str) -> str:
    """A login's name in the journal: the first 8 hex digits of its refresh token's SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()[:8]


def journal_lines(config: Path) -> list[dict[str, Any] | None]:
    """Each line of both journal files, oldest first: its JSON object, or None for a bad line."""
    raw = b"".join(
        (config / name).read_bytes()
        for name in (ROTATED_NAME, JOURNAL_NAME)
        if (config / name).exists()
    )
    lines: list[dict[str, Any] | None] = []
    for line in raw.split(b"\n"):
        if not line:
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            doc = None
        whole = isinstance(doc, dict) and {"t", "pid", "proc", "event"} <= doc.keys()
        lines.append(doc if whole else None)
    return lines


def journal_entry_line(**fields: object) -> bytes:
    """One journal line as this library writes it (compact JSON, ASCII, a newline)."""
    return (json.dumps(fields, separators=(",", ":")) + "\n").encode("ascii")


def explain_row(env: dict[str, str], label: str = "default") -> dict[str, Any]:
    """One profile's row of `account-cli explain --json`, run as a user runs it."""
    done = subprocess.run(
        [account_cli(), "explain", label, "--json"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b""), done
    assert CANARY.encode() not in done.stdout
    (row,) = json.loads(done.stdout)["profiles"]
    assert isinstance(row, dict)
    return row


# Calls that change what the next run (or the token server) sees, and the response read that
# opens the one window no design can close.
EFFECTS = frozenset(
    {
        "mkdir",
        "rmdir",
        "rename",
        "renameat2",
        "unlink",
        "write",
        "pwrite64",
        "ftruncate",
        "fallocate",
        "fsync",
        "utimensat",
        "connect",
        "sendto",
        "recvfrom",
    }
)
_LINE = re.compile(r"^(\d+)\s+([a-z0-9_]+)\((.*)$")
DUE_IN_MS = 120_000  # due for the CLI's 10-minute margin
CLI_TIMEOUT_S = 120


def strace() -> str:
    """Return the strace binary (`make setup` installs the Debian package)."""
    found = shutil.which("strace")
    assert found is not None, "strace missing: run make setup (apt-get install strace)"
    return found


def strace_prefix(*options: str, log: str | os.PathLike[str] = "/dev/null") -> list[str]:
    """The command prefix that runs a CLI under strace with `options` (`-e trace=...`,
    `-e inject=...`, `-P path`), following children, logging to `log`."""
    return [strace(), "-f", "-qq", "-e", "signal=none", "-o", os.fspath(log), *options]


@dataclass(frozen=True, slots=True)
class KillPoint:
    """Kill at the entry of the `nth` call of `syscall` (counted per call, from exec)."""

    syscall: str
    nth: int
    what: str


@dataclass
class Scene:
    """One profile, one token server, the login it started with."""

    home: Path
    config: Path
    server: TokenServer
    original: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def credentials(self) -> Path:
        return self.config / ".credentials.json"


async def new_scene(root: Path) -> Scene:
    """Make a home with one due login and a rotating token server that knows it."""
    home = root / "home"
    config = home / ".agent"
    config.mkdir(parents=True, mode=0o700)
    server = TokenServer(expires_in=300)  # 5 min: due again for the next run's 10-minute margin
    await server.start()
    token = canary_token("ort")
    server.seed(token)
    doc = credentials(expires_at_ms=int(time.time() * 1000) + DUE_IN_MS, refresh=token)
    write_file(config / ".credentials.json", dump(doc))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    env.update(HOME=str(home), AGENT_AUTH_URL=server.url, AGENT_API_BASE_URL=server.url)
    return Scene(home=home, config=config, server=server, original=token, env=env)


async def run_cli(scene: Scene, prefix: list[str]) -> int:
    """Run `account-cli poll --write --refresh` (under `prefix`); return its exit status."""
    proc = await asyncio.create_subprocess_exec(
        *prefix,
        account_cli(),
        "poll",
        "--write",
        "--refresh",
        env=scene.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        return await asyncio.wait_for(proc.wait(), CLI_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise


def kill_points(log: str) -> list[KillPoint]:
    """List the kill points of a reference `strace -f` log (see the module docstring)."""
    counts: Counter[str] = Counter()
    calls: list[tuple[str, int, str]] = []
    main_pid: str | None = None
    for line in log.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue  # `<... resumed>`, signals, exits
        pid, name, rest = match.groups()
        main_pid = main_pid or pid
        if pid != main_pid:
            continue
        counts[name] += 1
        calls.append((name, counts[name], rest[:120]))
    marks = [i for i, (_, _, rest) in enumerate(calls) if ".oauth_refresh.lock" in rest]
    assert marks, "the reference run took no lock"
    first, last = marks[0], marks[-1]
    points: dict[tuple[str, int], KillPoint] = {}
    for index in range(first, last + 1):
        name, nth, rest = calls[index]
        if name not in EFFECTS:
            continue
        points.setdefault((name, nth), KillPoint(syscall=name, nth=nth, what=f"at {name}({rest}"))
        if index + 1 < len(calls):
            after, after_nth, _ = calls[index + 1]
            key = (after, after_nth)
            points.setdefault(key, KillPoint(syscall=after, nth=after_nth, what=f"after {name}"))
    return list(points.values())


async def reference_log(root: Path) -> str:
    """Run the CLI under `strace -f` and return the log of the second run.

    The first run of freshly installed sources writes their bytecode caches (extra `openat`s,
    `rename`s); the second counts calls as every later run makes them.
    """
    for attempt in range(2):
        scene = await new_scene(root / f"run{attempt}")
        log = root / f"reference{attempt}.strace"
        try:
            prefix = strace_prefix(log=log)
            code = await run_cli(scene, prefix)
        finally:
            await scene.server.stop()
        assert code == 0
    return log.read_text(encoding="utf-8", errors="replace")


@dataclass
class Outcome:
    """What one crash and the two runs after it did."""

    point: str
    killed: bool
    category: str
    results: list[str]


def _refresh_token(path: Path) -> str | None:
    try:
        # A temp file killed before its ftruncate holds the whole login, then allocated NULs.
        doc = json.loads(path.read_bytes().rstrip(b"\0"))
    except (OSError, ValueError):
        return None
    block = doc.get("agentOauth") if isinstance(doc, dict) else None
    token = block.get("refreshToken") if isinstance(block, dict) else None
    return token if isinstance(token, str) else None


def _journal_entries(config: Path, point: str) -> list[dict[str, Any]]:
    """The journal after a crash: every line whole and valid (one write each), no token in it."""
    for name in (ROTATED_NAME, JOURNAL_NAME):
        if (config / name).exists():
            assert CANARY.encode() not in (config / name).read_bytes(), point
    entries = journal_lines(config)
    assert None not in entries, (point, entries[-4:])
    return [e for e in entries if e is not None]


def _on_disk(config: Path) -> set[str]:
    """Refresh tokens held by a complete login in any file of the config dir."""
    found = set()
    for path in config.iterdir():
        if path.is_file() and not path.is_symlink():
            token = _refresh_token(path)
            if token is not None:
                found.add(token)
    return found


def _check_story_after_crash(
    scene: Scene, point: str, crashed_token: str | None, *, lost_in_window: bool
) -> None:
    """What `explain` tells right after the crash, before any other run: what happened here."""
    told = explain_row(scene.env)
    assert told["verdict"] != "changed-elsewhere", (point, told)
    assert "not by this library" not in " ".join(told["story"]), (point, told)
    journal = _journal_entries(scene.config, point)
    outcome = [e for e in journal if e["event"] in ("refreshed", "failed", "elsewhere")]
    if crashed_token != scene.original:
        # The new login is in the file: refreshed here, whether or not the outcome was recorded.
        assert told["verdict"] == "intact", (point, told)
        if not outcome:
            assert "refreshed here" in told["summary"], (point, told)
            assert "the process died before recording the outcome" in told["summary"], (point, told)
    elif set(scene.server.spent) and not lost_in_window and not outcome:
        # The answer is whole on disk in a temp file: never "it never reached the file".
        assert told["verdict"] == "intact", (point, told)
        assert "its answer is on disk in a temp file" in told["summary"], (point, told)
    elif lost_in_window:
        assert told["verdict"] == "unknown", (point, told)
        assert "died before its answer was on disk" in told["summary"], (point, told)


async def recover(scene: Scene, point: str, *, killed: bool) -> Outcome:
    """After a crashed run, check what it left and what the next two runs do."""
    from agent_accounts.io import Profile, refresh_if_needed

    server = scene.server
    issued = set(server.valid) | set(server.spent)  # every token the server ever knew
    # A credentials file is always the old login or a new one, never a mix or a part.
    crashed_token = _refresh_token(scene.credentials)
    assert crashed_token in issued, (point, "credentials file is no login the server issued")
    spent_by_crash = set(server.spent)
    new_tokens = set(server.valid) - {scene.original}
    reached_disk = _on_disk(scene.config) & (new_tokens | {scene.original})
    lost_in_window = bool(new_tokens) and not (new_tokens & reached_disk)

    _check_story_after_crash(scene, point, crashed_token, lost_in_window=lost_in_window)

    profile = Profile(label="default", config_dir=str(scene.config))
    results = []
    for _ in range(2):
        result = await refresh_if_needed(profile, margin_ms=600_000, auth_url=server.url)
        results.append(getattr(result, "failure_text", result.status))
        assert result.status != "locked", (point, "a lock the crash left still blocks")
        token = _refresh_token(scene.credentials)
        assert token in issued | set(server.valid), (point, "credentials file is no login")
    # No stuck lock and nothing left behind: lock dirs, records, temp files.
    assert leftovers(scene.config) == [], (point, leftovers(scene.config))
    journal = _journal_entries(scene.config, point)
    # Every change of the file was this library's: none is journaled as made elsewhere.
    assert not [e for e in journal if e["event"] in ("changed", "gone")], (point, journal)
    final = _refresh_token(scene.credentials)
    received = Counter(server.received)
    if lost_in_window:
        # The one window: the answer was only in the dead process's memory. The next run may
        # send the spent token once more (refused), then never again.
        assert final not in server.valid, point
        assert results[0] == "http-400", (point, results)
        assert results[1] == "login-required", (point, results)
        assert all(n <= 2 for n in received.values()), (point, received)
        # The journal tells it: the killed run spent the token, the next one was refused.
        told = explain_row(scene.env)
        assert told["verdict"] == "logged-out", (point, told)
        assert "was spent by account-cli pid " in told["summary"], told
        assert "its answer never reached the file" in told["summary"], told
        category = "window: answer in memory only, login lost"
    else:
        # Any login that reached the disk survives, and no token was ever sent twice.
        assert final in server.valid, (point, results)
        assert all(n == 1 for n in received.values()), (point, received)
        if not spent_by_crash:
            category = "before the request: old login kept, refreshed after"
        elif results[0] == "refreshed" and crashed_token == scene.original:
            category = "answer on disk: rolled forward"
            assert any(e.get("rolled") for e in journal), (point, "roll-forward not journaled")
        else:
            category = "new login installed before the crash"
        told = explain_row(scene.env)
        assert told["verdict"] == "intact", (point, told)
    return Outcome(point=point, killed=killed, category=category, results=results)
