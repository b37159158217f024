"""`best` and `run` rank by the day's rhythm, end to end through the CLI.

Account a's history is a day job with a lunch break (`accounts_trace`); at 12:09 on its second
day its last reading (12:00) says it was filling fast all morning. The straight line pushes it
up by its morning slope for those nine minutes; the days before say a pauses for lunch now, so
its use is still what it read. Account b, with no history, reads a little more than a did.
By the rhythm a has more room and is the pick; by the straight line (the same readings without
the day before, so no rhythm to tell) b is. Both commands run on a simulated clock.
"""

from __future__ import annotations

import calendar
import subprocess
import sys
from pathlib import Path
from typing import Any

from accounts_simclock import SimClock
from accounts_support import CANARY, account_cli, env_without_profiles, make_profile
from accounts_trace import DAY, HOUR, Accounts, account_trace
from agent_accounts.io import write_reading

START = float(calendar.timegm((2030, 3, 18, 0, 0, 0)))  # a Monday
NOON = START + DAY + 12 * HOUR  # Tuesday; a works 9-12 and 13-18
NOW = NOON + 540  # both readings are nine minutes old: fresh
WEEK = {"used_percentage": 10.0, "resets_at": START + 7 * DAY}


def _a_readings(since: float) -> list[dict[str, Any]]:
    """Account a's recorded use, read every ten minutes from `since` to noon."""
    accounts = Accounts(names=("a",), now=START, week_resets={"a": START + 7 * DAY})
    for session in account_trace("a", START, seed=28):
        accounts.assign("a", session)
    out: list[dict[str, Any]] = []
    t = START
    while t <= NOON:
        accounts.advance_to(t)
        used, resets = accounts.usage("a")["five_hour"]
        five: dict[str, float] = {"used_percentage": float(round(used))}
        if resets is not None:
            five["resets_at"] = resets
        if t >= since:
            limits = {"five_hour": five, "seven_day": WEEK}
            out.append({"session_id": "usage-poll", "written_at": t, "rate_limits": limits})
        t += 600
    return out


def _pick(tmp_path: Path, *, since: float) -> tuple[str, str]:
    """Write a's history from `since` and b's one reading; return what `best` and `run` pick."""
    root = tmp_path / ".agent-profiles"
    a, _ = make_profile(root, "a", now=NOW)
    b, _ = make_profile(root, "b", now=NOW)
    readings = _a_readings(since)
    for reading in readings:
        write_reading(a.config_dir, reading)
    last = readings[-1]["rate_limits"]["five_hour"]
    assert 50 < last["used_percentage"] < 95  # the morning's window is filling, not full
    five = {**last, "used_percentage": last["used_percentage"] + 2}
    limits = {"five_hour": five, "seven_day": WEEK}
    write_reading(
        b.config_dir, {"session_id": "usage-poll", "written_at": NOON, "rate_limits": limits}
    )
    clock = SimClock.create(tmp_path, NOW)
    env = env_without_profiles(tmp_path, **clock.env())
    best = subprocess.run(
        [account_cli(), "best"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    run = subprocess.run(
        [
            account_cli(),
            "run",
            "--",
            sys.executable,
            "-c",
            "import os; print(os.environ['AGENT_CONFIG_DIR'])",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    for done in (best, run):
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        assert CANARY not in done.stdout + done.stderr
    return best.stdout.strip(), Path(run.stdout.strip()).name


def test_the_rhythm_makes_the_account_in_its_lunch_break_the_pick(tmp_path: Path) -> None:
    assert _pick(tmp_path, since=START) == ("a", "a")


def test_without_a_day_of_history_the_straight_line_picks_the_other(tmp_path: Path) -> None:
    # The same readings from 08:00 on: no day before to tell a rhythm, so a's morning slope
    # carries it past b in those nine minutes.
    assert _pick(tmp_path, since=NOON - 4 * HOUR) == ("b", "b")
