"""The usage history under a real `account-cli poll --write`: kill -9 at each of its system calls
on the history file, and a full disk at its append (strace's fault injection, `-P` limiting it to
the history file). Every line stays whole, the poll still succeeds when only the history line
fails, and the next poll appends again. A real full disk (a small tmpfs) at the parsed history
the poll stores for `best` and `run` (`usage-history.summary`) still polls and stores the
reading, and leaves no part of a summary behind.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from pathlib import Path

import pytest
from aiohttp import web

from accounts_cli_support import Home
from accounts_crash_support import strace_prefix
from accounts_disk_support import fill_leaving, small_tmpfs
from accounts_support import UsageServer, account_cli, usage_body

HISTORY = Path("status-cache") / "usage-history.jsonl"
READING = Path("status-cache") / "sessions" / "usage-poll.json"
_CALL = re.compile(r"^(\d+)\s+([a-z0-9_]+)\(")


@pytest.fixture
def changing(server: UsageServer) -> UsageServer:
    """Each answer one percent more, so every poll's reading is a new history line."""
    count = [0]

    async def more(request: web.Request, _: UsageServer) -> web.StreamResponse:
        count[0] += 1
        return web.json_response(usage_body(five=float(count[0])))

    server.handler = more
    return server


async def poll(home: Home, *prefix: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *prefix,
        account_cli(),
        "poll",
        "--write",
        env=home.env(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    assert b"Traceback" not in err
    return proc.returncode, out.decode() + err.decode()


def history_lines(config: Path) -> list[dict[str, object]]:
    raw = (config / HISTORY).read_bytes()
    assert raw.endswith(b"\n")
    return [json.loads(line) for line in raw.splitlines()]  # every line whole


def injected(history: Path, fault: str, log: Path | None = None) -> list[str]:
    """strace limited to the history file (`-P`), injecting `fault` there when given."""
    options = ["-P", str(history), *(["-e", f"inject={fault}"] if fault else [])]
    return strace_prefix(*options, log=log if log is not None else "/dev/null")


async def history_calls(home: Home, config: Path, tmp_path: Path) -> list[tuple[str, int]]:
    """The system calls one poll's append makes on the history file, each as (name, nth of its
    name), in the thread that appends (strace counts `when=` per thread; the summary the poll
    stores after it only reads the file, in another)."""
    log = tmp_path / "reference.log"
    code, _ = await poll(home, *injected(config / HISTORY, "", log))
    assert code == 0
    calls: list[tuple[str, int]] = []
    appender = None
    for line in log.read_text().splitlines():
        found = _CALL.match(line)
        if found and appender is None and found.group(2) == "openat":
            appender = found.group(1)
        if found and found.group(1) == appender:
            name = found.group(2)
            calls.append((name, 1 + sum(n == name for n, _ in calls)))
    assert ("write", 1) in calls
    return calls


async def test_kill_9_at_each_history_call_of_a_poll_leaves_every_line_whole(
    home: Home, changing: UsageServer, tmp_path: Path
) -> None:
    config = home.add("work")
    assert (await poll(home))[0] == 0  # the history exists: the next polls open and append
    calls = await history_calls(home, config, tmp_path)
    assert len(calls) >= 4  # open, fstat, read the last line, write (and close)
    for name, nth in calls:
        before = history_lines(config)
        code, _ = await poll(home, *injected(config / HISTORY, f"{name}:signal=KILL:when={nth}"))
        assert code in (-signal.SIGKILL, 128 + signal.SIGKILL), (name, nth)
        after = history_lines(config)
        assert after[: len(before)] == before
        assert len(after) <= len(before) + 1  # the killed poll's line, whole, or nothing
        # The reading itself was stored before the history line.
        assert json.loads((config / READING).read_text())["session_id"] == "usage-poll"
    before = history_lines(config)
    assert (await poll(home))[0] == 0  # and the next poll appends after whatever was left
    assert len(history_lines(config)) == len(before) + 1


async def test_a_full_disk_at_the_history_append_still_polls_and_stores_the_reading(
    home: Home, changing: UsageServer
) -> None:
    config = home.add("work")
    assert (await poll(home))[0] == 0
    before = history_lines(config)
    code, text = await poll(home, *injected(config / HISTORY, "write:error=ENOSPC"))
    assert (code, text) == (0, "work: five_hour 2%, seven_day 41.5%\n")
    reading = json.loads((config / READING).read_text())
    assert reading["rate_limits"]["five_hour"]["used_percentage"] == 2  # the reading is stored
    assert history_lines(config) == before  # only the history line was lost
    assert (await poll(home))[0] == 0  # room again: appends resume
    assert len(history_lines(config)) == len(before) + 1


async def test_the_poll_stores_the_summary_best_reads_and_a_full_disk_there_still_polls(
    tmp_path: Path, changing: UsageServer
) -> None:
    with small_tmpfs(tmp_path / "disk", size="256k") as disk:
        (disk / "home").mkdir(mode=0o700)
        home = Home(path=disk / "home", url=changing.url)
        config = home.add("work")
        cache = config / "status-cache"
        fill_leaving(disk, 2)  # a page for the reading, one for the history, none for the summary
        code, text = await poll(home)
        assert (code, text) == (0, "work: five_hour 1%, seven_day 41.5%\n")
        assert len(history_lines(config)) == 1  # the reading and its history line are stored
        assert sorted(p.name for p in cache.iterdir()) == ["sessions", HISTORY.name]  # no temp
        (disk / "filler").unlink()
        assert (await poll(home))[0] == 0  # room again: the summary is stored
        stored = json.loads((cache / "usage-history.summary").read_bytes())
        # Two lines, under a frame: none is in the frame, best and run read both on top of it.
        assert (stored["end"], stored["readings"]) == (0, [])
        assert len(history_lines(config)) == 2
