"""Clocks stepped both ways: a reading or a lock dir dated hours ahead never hides a newer reading
nor blocks a refresh.

Every case runs the real `account-cli` in a subprocess over real files whose dates are moved with
`os.utime` (a clock stepped back after they were written leaves both their `written_at` and their
mtime ahead; another machine's clock leaves only `written_at` ahead). The rules: a reading dated
more than a minute ahead counts as written when its file was, or now, whichever is earlier; one
whose file is dated ahead too ranks behind every reading whose time is known; a lock dir whose
mtime stays ahead across two reads is stale. `status` says each once (`clock ahead: ...`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from aiohttp import web

from accounts_cli_support import Home, plant_reading
from accounts_crash_support import Scene, new_scene
from accounts_support import UsageServer
from agent_accounts.io import read_usage

HOURS_2 = 2 * 3600.0


def answer(five: float, opus: float = 30.0) -> object:
    async def handler(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.json_response(
            {
                "five_hour": {"utilization": five, "resets_at": "2099-01-01T05:00:00Z"},
                "seven_day": {"utilization": 20.0, "resets_at": "2099-01-05T00:00:00Z"},
                "seven_day_opus": {"utilization": opus, "resets_at": "2099-01-05T00:00:00Z"},
            }
        )

    return handler


def date_ahead(config: Path, name: str, ahead: float, *, file_too: bool = True) -> Path:
    """Plant a session reading at 10% dated `ahead` s from now (its file too, or not)."""
    when = time.time() + ahead
    plant_reading(config, name, when, five_hour=10.0, seven_day=10.0)
    path = config / "status-cache" / "sessions" / f"{name}.json"
    if file_too:
        os.utime(path, (when, when))
    return path


async def test_a_reading_dated_hours_ahead_hides_no_newer_reading_in_any_view(
    home: Home, server: UsageServer
) -> None:
    default = home.add(".agent")
    spare = home.add("spare")
    date_ahead(default, "stepped-session", HOURS_2)  # written before the clock stepped back
    server.handler = answer(97.0)  # type: ignore[assignment]
    only_default = home.env(AGENT_CONFIG_DIRS=str(default))
    polled = await home.run("poll", "--write", "--alert-at", "95", env=only_default)
    # The alert sees the poll's 97%, not the older 10% dated ahead.
    assert polled.err == (
        "account-cli: default: five_hour at 97% (crossed 95%), resets 2099-01-01T05:00:00Z\n"
    )
    plant_reading(spare, "spare-session", time.time() - 5, five_hour=50.0, seven_day=50.0)

    status = await home.run("status")
    assert status.lines[0].startswith("default: login present; five_hour 97%, seven_day 20%")
    notes = [line for line in status.lines if "clock ahead" in line]
    assert notes == [
        "  clock ahead: 1 reading(s) dated up to 2h00m ahead (stepped-session.json), "
        "counted as written when their file was, or now"
    ]
    doc = json.loads((await home.run("status", "--json")).out)
    first = doc["profiles"][0]
    assert first["usage"]["rate_limits"]["five_hour"]["used_percentage"] == 97
    assert first["clockAhead"] == [notes[0].removeprefix("  clock ahead: ")]

    line = await home.run("status", "--statusline", env=home.env(AGENT_CONFIG_DIR=str(default)))
    assert line.lines[0].startswith("97|20|")
    best = await home.run("best")
    assert best.lines == ["spare"]  # not the exhausted account


async def test_a_reading_from_a_clock_ahead_counts_as_written_when_its_file_was(
    home: Home, server: UsageServer
) -> None:
    work = home.add("work")
    plant_reading(work, "usage-poll", time.time() - 900, five_hour=1.0, seven_day=2.0)
    # Another machine's clock: dated two hours ahead, but its file was written five seconds ago.
    path = date_ahead(work, "other-clock", HOURS_2, file_too=False)
    os.utime(path, (time.time() - 5, time.time() - 5))
    usage = read_usage(work)
    assert usage is not None
    assert usage.file == str(path)
    assert 5 <= usage.age_seconds < 60
    assert usage.reading["written_at"] <= time.time()
    run = await home.run("poll", "--write", "--max-age", "120")
    assert run.lines[0].startswith("work: five_hour 10%, seven_day 10% (")
    assert run.lines[0].endswith("s old, not polled)")
    assert server.requests == []
    # Its file dated ahead too: when it was written cannot be told, so it never skips a poll.
    os.utime(path, (time.time() + HOURS_2, time.time() + HOURS_2))
    run = await home.run("poll", "--write", "--max-age", "120")
    assert run.lines == ["work: five_hour 23%, seven_day 41.5%"]
    assert len(server.requests) == 1


async def test_a_clock_stepped_forward_ages_readings_without_hiding_any(
    home: Home, server: UsageServer
) -> None:
    work = home.add("work")
    # Written before a step forward: dated far in the past; the newest is still the newest.
    plant_reading(work, "older", time.time() - 3 * 86400, five_hour=5.0, seven_day=5.0)
    plant_reading(work, "newer", time.time() - 2 * 86400, five_hour=7.0, seven_day=7.0)
    status = await home.run("status")
    assert "five_hour 7%, seven_day 7%" in status.lines[0]
    assert not [line for line in status.lines if "clock ahead" in line]
    best = await home.run("best")
    assert best.code == 2  # stale, said so: never picked on an old reading
    assert "work: reading stale" in best.err


# ---- lock dirs dated ahead ------------------------------------------------------------------


NODE_DIR = Path(__file__).resolve().parent / "node"
# The agent client's lock as it takes it (`stale: 60000`, so proper-lockfile beats every 30 s),
# run by a node whose clock is two hours ahead of ours: every mtime it sets is dated ahead, as a
# live holder's last beat is right after our clock stepped back.
NODE_HOLDER_AHEAD = """
const realNow = Date.now;
Date.now = () => realNow() + 2 * 3600 * 1000;
const lockfile = require('proper-lockfile');
const [dir, lockPath] = process.argv.slice(1);
lockfile.lock(dir, { lockfilePath: lockPath, stale: 60000, realpath: false,
                     onCompromised: () => { console.log('compromised'); process.exit(3); } })
  .then((release) => {
    console.log('locked');
    process.stdin.once('data', async () => { await release(); console.log('released');
                                            process.exit(0); });
  }, (err) => { console.log('error ' + err.code); process.exit(1); });
"""


async def _refresh_run(scene: Scene) -> tuple[str, str]:
    refresh = await asyncio.create_subprocess_exec(
        *_cli("poll", "--write", "--refresh"),
        env=scene.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(refresh.communicate(), 300)
    return out.decode(), err.decode()


async def _dead_lock_ahead_is_taken_over(scene: Scene) -> None:
    lock = scene.config / ".oauth_refresh.lock"
    lock.mkdir(mode=0o700)
    ahead = time.time() + HOURS_2
    os.utime(lock, (ahead, ahead))  # left by a holder whose clock was two hours ahead
    status = await asyncio.create_subprocess_exec(
        *_cli("status"), env=scene.env, stdout=asyncio.subprocess.PIPE
    )
    text = (await status.communicate())[0].decode()
    assert "refresh lock held" not in text  # not "held 0s"
    assert text.count("clock ahead: refresh lock dated 2h00m ahead") == 1
    out, err = await _refresh_run(scene)
    assert "token refresh locked" not in err
    assert "default: token refreshed" in out
    assert not lock.exists()  # taken over, then released
    assert len(scene.server.received) == 1


async def _live_holder_after_a_step_back_keeps_its_lock(scene: Scene) -> None:
    lock = scene.config / ".oauth_refresh.lock"
    lock.mkdir(mode=0o700)
    ahead = time.time() + HOURS_2
    os.utime(lock, (ahead, ahead))
    stop = asyncio.Event()

    async def holder() -> None:
        # A live holder beats every few seconds with the clock as it now is.
        await asyncio.sleep(2)
        while not stop.is_set():
            os.utime(lock)
            await asyncio.sleep(2)

    beat = asyncio.create_task(holder())
    _, err = await _refresh_run(scene)
    stop.set()
    await beat
    assert "token refresh locked" in err
    assert lock.exists()
    assert scene.server.received == []


async def _proper_lockfile_holder_ahead_keeps_its_lock(scene: Scene) -> None:
    lock = scene.config / ".oauth_refresh.lock"
    holder = await asyncio.create_subprocess_exec(
        "node",
        "-e",
        NODE_HOLDER_AHEAD,
        str(scene.config),
        str(lock),
        cwd=NODE_DIR,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdin is not None
    assert holder.stdout is not None
    try:
        assert (await holder.stdout.readline()).strip() == b"locked"
        assert lock.stat().st_mtime > time.time() + HOURS_2 - 60  # dated ahead from the start
        _, err = await _refresh_run(scene)
        assert "token refresh locked" in err
        assert scene.server.received == []
        holder.stdin.write(b"\n")
        await holder.stdin.drain()
        # Never judged stale: the holder was not compromised and releases its own lock.
        assert (await holder.stdout.readline()).strip() == b"released"
    finally:
        if holder.returncode is None:
            holder.kill()
        await holder.wait()
    assert not lock.exists()


@pytest.mark.slow
async def test_a_lock_dir_dated_ahead_is_stale_only_when_no_live_holder_beats(
    tmp_path: Path,
) -> None:
    """A dead lock dated hours ahead is taken over; a live holder's never is, whether ours beats
    after a clock step back or the real proper-lockfile (agent client's options, 30 s beats) runs
    on a clock two hours ahead. One run each, side by side: each waits the 60 s recheck."""
    scenes = [await new_scene(tmp_path / name) for name in ("dead", "beating", "lockfile")]
    try:
        await asyncio.gather(
            _dead_lock_ahead_is_taken_over(scenes[0]),
            _live_holder_after_a_step_back_keeps_its_lock(scenes[1]),
            _proper_lockfile_holder_ahead_keeps_its_lock(scenes[2]),
        )
    finally:
        for scene in scenes:
            await scene.server.stop()


def _cli(*args: str) -> list[str]:
    from accounts_refresh_support import account_cli

    return [account_cli(), *args]


# ---- per-model windows: alerts see what they watch --------------------------------------------


async def test_max_age_polls_when_the_fresh_reading_lacks_a_watched_window(
    home: Home, server: UsageServer
) -> None:
    default = home.add(".agent")
    # The README's setup: the poller wrote a per-model window before; the status-line tee keeps
    # a fresh session reading that carries only five_hour and seven_day.
    plant_reading(
        default, "usage-poll", time.time() - 200, five_hour=5.0, seven_day=5.0, seven_day_opus=30.0
    )
    plant_reading(default, "tee-session", time.time() - 5, five_hour=6.0, seven_day=6.0)
    server.handler = answer(40.0, opus=97.0)  # type: ignore[assignment]
    run = await home.run("poll", "--write", "--max-age", "140", "--alert-at", "95")
    assert len(server.requests) == 1  # not skipped: the fresh reading lacks seven_day_opus
    assert run.err == (
        "account-cli: default: seven_day_opus at 97% (crossed 95%), resets 2099-01-05T00:00:00Z\n"
    )
    # The next prompt's session reading is newer than the poll's again: the alert state and
    # status still see seven_day_opus, from the newest reading that carries it.
    plant_reading(default, "tee-session", time.time(), five_hour=41.0, seven_day=21.0)
    status = await home.run("status")
    assert status.lines[0].startswith("default: login present; five_hour 41%, seven_day 21%")
    assert any(line.startswith("  seven_day_opus 97% (") for line in status.lines), status.lines
    again = await home.run("poll", "--write", "--max-age", "140", "--alert-at", "95")
    assert again.err == ""  # fired once for its period, not again
    assert len(server.requests) == 1  # the poll's reading is fresh and has every window
    assert again.lines[0].endswith("s old, not polled)")


async def test_the_tee_shows_its_own_reading_over_one_dated_hours_ahead(home: Home) -> None:
    default = home.add(".agent")
    date_ahead(default, "stepped-session", HOURS_2)
    payload = {
        "session_id": "now-session",
        "rate_limits": {
            "five_hour": {"used_percentage": 55, "resets_at": 4102444800},
            "seven_day": {"used_percentage": 66, "resets_at": 4102444800},
        },
    }
    proc = await asyncio.create_subprocess_exec(
        *_cli("statusline-tee", "--format", "pipe"),
        env=home.env(AGENT_CONFIG_DIR=str(default)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(json.dumps(payload).encode()), 60)
    assert (proc.returncode, err) == (0, b"")
    assert out.decode().splitlines()[0].startswith("55|66|")
