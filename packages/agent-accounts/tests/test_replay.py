"""Issue 28's done-when, replayed: a week of usage over three accounts on a simulated clock.

The trace (`accounts_trace`): each account's recorded use over a week (a day job, a long day with
evenings, a light every-day user; 15-minute bursts, lunch breaks, idle nights, five-hour windows
opening at first use and resetting five hours on, weekly windows resetting on different days,
use stopping at 100%), and the sessions this machine starts in that week (bursts in working
hours, two evenings, a short weekend block). A local usage server answers from the trace at the
simulated time. Every child (`account-cli run`, `account-cli poll`) runs on the test's clock
(`accounts_simclock`): its sleeps move the simulated time, and the server dates each request by
the same clock. The timer's `poll --write --period 150` runs every half hour of the day, a
period before each session starts, and every period through a few whole sessions; before each
of its runs, the sessions running on this machine draw their status lines (a reading of the
account each runs on, five seconds old); `account-cli run` starts each session. Then:

- no session starts on an account over its limit while another has room, and `run` refuses
  (exit 75) only when none has room its readings could show: the endpoint and the status line
  give whole percents, so an account at 99.6% reads 100% to every tool (`RESOLUTION`);
- no two requests come within a second of each other, and a request for an account whose status
  line was fresh (drawn less than a period before) comes at least ten minutes after the
  previous one for that account (the poll's per-model window is what it still fetches);
- at half of each window that fills later, the forecast from the history the replay wrote is
  within 10% of the time left to a time the trace could have filled at, from the same history
  (`check_forecasts`).

The timer's runs go through one child that calls the CLI's `main` per run (`DRIVER`): the same
code and clock as a fresh process each time, without paying a process start per run; `run` is
a fresh process each session, as it execs the session's command.
"""

from __future__ import annotations

import asyncio
import calendar
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from accounts_simclock import SimClock
from accounts_support import (
    CANARY,
    UsageServer,
    account_cli,
    check_files,
    env_without_profiles,
    make_profile,
)
from accounts_trace import (
    DAY,
    FIVE_H,
    WEEK,
    Accounts,
    Session,
    account_trace,
    fill_range,
    week_of_sessions,
)
from agent_accounts import window_forecast
from agent_accounts.io import read_usage_history, write_session_reading

START = float(calendar.timegm((2030, 3, 18, 0, 0, 0)))  # a Monday, ahead of any file's mtime
SEED = 28
NAMES = ("a", "b", "c")
PERIOD = 150.0
OPUS = 0.4
"""The share of the week's use that counts in its per-model window too."""
DENSE_EVERY = 30  # through every 30th session, the timer runs every PERIOD
RESOLUTION = 1.0
"""The readings' grain: the usage endpoint and the status line report whole percents."""

DRIVER = """\
import contextlib, io, json, sys
from agent_accounts.cli import main

for line in sys.stdin:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(json.loads(line))
        except SystemExit as done:
            code = done.code
    print(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue()}), flush=True)
"""


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@dataclass
class Week:
    """The replay's state: the true meter, the clock, the profiles and what was seen."""

    clock: SimClock
    accounts: Accounts
    configs: dict[str, Path]
    env: dict[str, str]
    home: Path
    requests: list[tuple[float, str]] = field(default_factory=list)
    starts: list[tuple[float, str | None, dict[str, float]]] = field(default_factory=list)
    """Each session's start: when, the account `run` chose (None: refused), each one's true use."""
    status_lines_at: dict[str, list[float]] = field(default_factory=dict)
    running: list[tuple[str, Session]] = field(default_factory=list)

    def now(self) -> float:
        """The simulated time, with the true meter brought up to it."""
        now = self.clock.now()
        self.accounts.advance_to(now)
        return now

    def status_lines(self) -> None:
        """Each running session redraws its status line: its account's use, seconds old."""
        now = self.now()
        for name in NAMES:
            running = [s for n, s in self.running if n == name and s.start <= now < s.end]
            if not running:
                continue
            limits: dict[str, dict[str, float]] = {}
            for window, (used, resets) in self.accounts.usage(name).items():
                limits[window] = {"used_percentage": round(used)}
                if resets is not None:  # a five-hour window not yet open has no reset time
                    limits[window]["resets_at"] = resets
            session_id = f"s{int(running[0].start)}"
            reading = {
                "session_id": session_id,
                "written_at": now - 5,
                "rate_limits": limits,
                "source": "statusline",
            }
            write_session_reading(self.configs[name], session_id, reading)
            self.status_lines_at.setdefault(name, []).append(now - 5)


async def usage_answer(week: Week, request: web.Request) -> web.Response:
    """The provider's usage endpoint over the true meter, dated by the simulated clock."""
    token = request.headers["authorization"].removeprefix("Bearer ")
    name = next(n for n, c in week.configs.items() if token_of(c) == token)
    week.requests.append((week.now(), name))
    usage = week.accounts.usage(name)
    body = {}
    for window, (used, resets) in usage.items():
        body[window] = {"utilization": float(round(used)), "resets_at": resets and iso(resets)}
    # A per-model window, which only the poll reads: a session's status line does not carry it.
    opus = float(round(usage["seven_day"][0] * OPUS))
    body["seven_day_opus"] = {**body["seven_day"], "utilization": opus}
    return web.json_response(body)


def token_of(config: Path) -> str:
    doc = json.loads((config / ".credentials.json").read_text())
    return str(doc["agentOauth"]["accessToken"])


@pytest.fixture
async def server() -> AsyncIterator[UsageServer]:
    async with UsageServer() as running:
        yield running


async def start_timer(env: dict[str, str], home: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        DRIVER,
        env=env,
        cwd=home,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )


async def tick(week: Week, timer: asyncio.subprocess.Process, at: float) -> None:
    """One run of the poll timer at `at` (after the running sessions' status lines)."""
    week.clock.advance_to(at)
    week.status_lines()
    assert timer.stdin is not None
    assert timer.stdout is not None
    timer.stdin.write(json.dumps(["poll", "--write", "--period", str(PERIOD)]).encode() + b"\n")
    await timer.stdin.drain()
    done = json.loads(await asyncio.wait_for(timer.stdout.readline(), 60))
    assert (done["code"], done["err"]) == (0, ""), done
    assert CANARY not in done["out"]


async def start_session(week: Week, session: Session) -> None:
    """`account-cli run` for the session at its start; the session goes where it chose."""
    now = week.clock.advance_to(session.start)
    week.now()
    use = {n: max(used for used, _ in week.accounts.usage(n).values()) for n in NAMES}
    proc = await asyncio.create_subprocess_exec(
        account_cli(),
        "run",
        "--",
        "sh",
        "-c",
        'printf %s "$AGENT_CONFIG_DIR"',
        env=week.env,
        cwd=week.home,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert CANARY not in (out + err).decode()
    if proc.returncode == 75:
        assert out == b""
        assert err.startswith(b"account-cli: run: no account has room below 100%; room again at ")
        week.starts.append((now, None, use))
        return
    assert proc.returncode == 0, (proc.returncode, err)
    chosen = Path(out.decode()).name
    week.starts.append((now, chosen, use))
    week.running.append((chosen, Session(start=now, end=max(now, session.end), rate=0.0)))


async def test_a_week_over_three_accounts_is_never_stopped_while_one_has_room(
    tmp_path: Path, server: UsageServer
) -> None:
    clock = SimClock.create(tmp_path, START - 3600)
    # Each account's week resets on its own day: Saturday 08:00, Sunday 20:00, Monday 07:00.
    resets = {"a": START + 5 * DAY + 8 * 3600, "b": START + 6 * DAY + 20 * 3600}
    resets["c"] = START + 7 * 3600
    accounts = Accounts(names=NAMES, now=START - 3600, week_resets=resets)
    for name in NAMES:
        for used in account_trace(name, START, seed=SEED):
            accounts.assign(name, used)
    home = tmp_path / "home"
    configs = {
        n: Path(make_profile(home / ".agent-profiles", n, now=START + WEEK)[0].config_dir)
        for n in NAMES
    }
    # The profile root is named relative to the children's working directory (`home`): each
    # profile's config dir, which the poll hashes into its phase with the machine's name (the
    # clock's `simclock`), is then the same string on every run, so the replay is too.
    env = env_without_profiles(
        home, AGENT_API_BASE_URL=server.url, AGENT_PROFILE_ROOT=".agent-profiles", **clock.env()
    )
    week = Week(clock=clock, accounts=accounts, configs=configs, env=env, home=home)

    async def handler(request: web.Request, running: UsageServer) -> web.StreamResponse:
        return await usage_answer(week, request)

    server.handler = handler
    sessions = week_of_sessions(START, seed=SEED)
    timer = await start_timer(env, home)
    try:
        for event, at, session in timeline(sessions):
            if event == "tick":
                await tick(week, timer, at)
            else:
                await start_session(week, session)
    finally:
        if timer.stdin is not None:
            timer.stdin.close()
        await asyncio.wait_for(timer.wait(), 30)
    week.clock.advance_to(START + WEEK)
    week.now()
    report(week, sessions)
    check_forecasts(week, resets)
    check_choices(week)
    check_requests(week)
    check_files(tmp_path)


def timeline(sessions: list[Session]) -> list[tuple[str, float, Session]]:
    """The week's events in time order: the timer's runs and the sessions' starts.

    The timer runs every half hour from 07:00 to 23:00 (a coarse stand-in for its 150 s: the
    history a forecast reads), a period before each session starts (so `run` sees readings as
    fresh as the timer keeps them), and every period through every DENSE_EVERY-th session.
    """
    ticks: set[float] = set()
    for day in range(7):
        for half_hour in range(14, 47):
            ticks.add(START + day * DAY + half_hour * 1800)
    for index, session in enumerate(sessions):
        ticks.add(session.start - PERIOD)
        if index % DENSE_EVERY == 0:
            at = session.start + PERIOD
            while at < session.end:
                ticks.add(at)
                at += PERIOD
    events: list[tuple[str, float, Session]] = []
    kept = -PERIOD
    for at in sorted(ticks):
        if at - kept >= PERIOD:  # one run at a time: each spreads over a period
            events.append(("tick", at, sessions[0]))
            kept = at
    events += [("start", s.start, s) for s in sessions]
    events.sort(key=lambda e: (e[1], e[0] == "start"))
    return events


def report(week: Week, sessions: list[Session]) -> None:
    refused = sum(1 for _, chosen, _ in week.starts if chosen is None)
    print(
        f"{len(sessions)} sessions, {refused} refused, {len(week.requests)} requests, "
        f"{len(week.accounts.filled)} windows filled",
        file=sys.stderr,
    )


def check_choices(week: Week) -> None:
    """No start on a full account while another had room; a refusal only when none had room
    that whole-percent readings show (an account at 99.6% reads 100%: the grain, not `run`)."""
    for at, chosen, use in week.starts:
        room = {name: used < 100 for name, used in use.items()}
        if chosen is None:
            shown = {name: used < 100 - RESOLUTION for name, used in use.items()}
            assert not any(shown.values()), (iso(at), use)  # refused only when none has room
        else:
            assert room[chosen] or not any(room.values()), (iso(at), chosen, use)
    # Not vacuous: some sessions started while an account was full, and some found none free.
    assert any(chosen and max(use.values()) >= 100 for _, chosen, use in week.starts)
    assert any(chosen is None for _, chosen, _ in week.starts)


def check_requests(week: Week) -> None:
    times = sorted(t for t, _ in week.requests)
    for first, second in itertools.pairwise(times):
        assert second - first >= 1.0, (iso(first), iso(second))
    checked = 0
    for name in NAMES:
        mine = [t for t, n in week.requests if n == name]
        lines = week.status_lines_at.get(name, [])
        for before, after in itertools.pairwise(mine):
            # Fresh: a status line drawn less than a period before the poll decided.
            if any(after - PERIOD < drawn <= after for drawn in lines):
                checked += 1
                assert after - before >= 600, (name, iso(before), iso(after))
    print(f"{checked} requests made while a status line was fresh", file=sys.stderr)
    assert checked


def check_forecasts(week: Week, resets: dict[str, float]) -> None:
    """At half of each window that filled later, the forecast from the history the replay wrote
    is within 10% of the time left of a time the trace could have filled at (`fill_range`).

    The readings cannot tell the trace's 15-minute bursts from its lulls (a half hour holds one
    of each), nor when a block that has not started will (the trace moves each by up to ten
    minutes from day to day). Either moves a five-hour window's fill by minutes, and across a
    pause by hours; so the forecast is held to 10% beyond the times every such way of going on
    from the half gives (the true one among them). A forecast that the window does not fill
    before its reset counts as its reset time. Windows whose half lies in the first day are
    left out: no daily rhythm yet. `test_forecast_trace` holds the same over forty weeks.
    """
    errors: dict[str, list[float]] = {"five_hour": [], "seven_day": []}
    beyond: list[float] = []
    for filled in week.accounts.filled:
        length = FIVE_H if filled.window == "five_hour" else WEEK
        half = filled.opened + length / 2
        if filled.full_at <= half or half < START + DAY:
            continue  # filled by its half, or in the first day (no daily rhythm to go by)
        history = read_usage_history(week.configs[filled.account], now=half)
        found = window_forecast(filled.window, history, half)
        assert found is not None, filled
        full_at = filled.resets_at if found.full_at is None else found.full_at
        left = filled.full_at - half
        errors[filled.window].append(round(abs(full_at - filled.full_at) / left, 3))
        low, high = fill_range(
            filled, half, start=START, seed=SEED, week_resets=resets[filled.account]
        )
        beyond.append(round(max(0.0, low - full_at, full_at - high) / left, 3))
    print(f"forecast errors at half the window: {errors}", file=sys.stderr)
    print(f"errors beyond what the trace could have done: {beyond}", file=sys.stderr)
    assert len(errors["seven_day"]) >= 2
    assert len(errors["five_hour"]) >= 5
    assert all(error <= 0.10 for error in beyond), (errors, beyond)
