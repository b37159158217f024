"""`account-cli run`: the real CLI in a subprocess, exec'ing a real command on the chosen account.

The choice is `best`'s (one rule: `rank_rows`), so the property test drives both commands over
the same random profiles and holds `run`'s account to `best --path`'s. Every run is checked for
what must never happen: a traceback, a canary token in any output, a stderr line that is not a
template.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts_support import (
    CANARY,
    HOUR_MS,
    account_cli,
    check_files,
    credentials,
    env_without_profiles,
    make_profile,
)

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
RUN_LINE = re.compile(
    r"account-cli: run: [a-z0-9_.]+: (switched from [a-z0-9_.]+ \([a-z ]+(below [0-9.]+%)?\): )?"
    rf"(as asked|most room), [0-9.]+% left, (resets {ISO}|reset unknown)"
)
SHOW_DIR = ["sh", "-c", 'printf "%s\\n" "$AGENT_CONFIG_DIR"']
HOUR, DAY = 3600, 24 * 3600


@dataclass
class Done:
    code: int
    out: str
    err: str


@dataclass
class Home:
    path: Path

    def add(self, name: str, *, login: str = "present", **windows: tuple[float, float]) -> Path:
        """A profile with a login (`present`, `refreshable`, `expired`, `refused`, `missing`)
        and, when windows are given, a fresh reading: name=(used %, seconds to its reset)."""
        now_ms = int(time.time() * 1000)
        docs: dict[str, Any] = {
            "present": credentials(expires_at_ms=now_ms + 24 * HOUR_MS),
            "refreshable": credentials(expires_at_ms=now_ms - HOUR_MS),
            "expired": credentials(
                expires_at_ms=now_ms - HOUR_MS,
                extra_block={"refreshTokenExpiresAt": now_ms - 1000},
            ),
            "refused": b"{not json",
            "missing": None,
        }
        profile, _ = make_profile(
            self.path / ".agent-profiles", name, docs[login], seed=login != "missing"
        )
        config = Path(profile.config_dir)
        if windows:
            plant(config, time.time(), **windows)
        return config

    def run(self, *args: str, env: dict[str, str] | None = None) -> Done:
        done = subprocess.run(
            [account_cli(), *args],
            env=env or env_without_profiles(self.path),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        result = Done(done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in result.out + result.err
        assert CANARY not in result.out + result.err
        return result


def plant(config: Path, now: float, **windows: tuple[float, float]) -> None:
    sessions = config / "status-cache" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True, mode=0o700)
    limits = {w: {"used_percentage": u, "resets_at": now + r} for w, (u, r) in windows.items()}
    doc = {"session_id": "usage-poll", "written_at": now - 5, "rate_limits": limits}
    (sessions / "usage-poll.json").write_text(json.dumps(doc))


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    path = tmp_path / "home"
    path.mkdir()
    yield Home(path)
    check_files(tmp_path)


def test_runs_the_command_on_the_account_with_the_most_room(home: Home) -> None:
    home.add("busy", five_hour=(90, HOUR), seven_day=(10, DAY))
    roomy = home.add("roomy", five_hour=(20, HOUR), seven_day=(30, 2 * DAY))
    home.add("nologin", login="missing")
    done = home.run("run", "--", *SHOW_DIR)
    assert (done.code, done.out) == (0, f"{roomy}\n")
    assert RUN_LINE.fullmatch(done.err.rstrip("\n")), done.err
    assert done.err.startswith("account-cli: run: roomy: most room, 70% left, resets ")
    assert done.err.count("\n") == 1
    # The same account `best` names: one rule.
    best = home.run("best", "--path")
    assert best.out == done.out


def test_it_is_the_command_itself_exit_code_stdin_and_environment(home: Home) -> None:
    work = home.add("work", five_hour=(10, HOUR), seven_day=(10, DAY))
    env = env_without_profiles(home.path, KEEP_ME="kept", AGENT_CONFIG_DIR="/elsewhere")
    script = 'read line; printf "%s %s %s\\n" "$line" "$KEEP_ME" "$AGENT_CONFIG_DIR"; exit 7'
    done = subprocess.run(
        [account_cli(), "run", "sh", "-c", script],  # `--` is optional before a plain word
        env=env,
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (7, f"hello kept {work}\n")
    # Its own flags are its own, after `--`.
    done2 = home.run("run", "--", "sh", "-c", "echo $0 $1", "--label", "x")
    assert (done2.code, done2.out) == (0, "--label x\n")


@pytest.mark.parametrize("login", ["expired", "refused", "missing"])
def test_a_dead_login_is_never_chosen_however_much_room_it_has(home: Home, login: str) -> None:
    home.add("dead", login=login, five_hour=(0, HOUR), seven_day=(0, DAY))
    busy = home.add("busy", five_hour=(80, HOUR), seven_day=(10, DAY))
    done = home.run("run", "--", *SHOW_DIR)
    assert (done.code, done.out) == (0, f"{busy}\n")
    done = home.run("run", "--label", "dead", "--", *SHOW_DIR)
    assert (done.code, done.out) == (0, f"{busy}\n")
    assert done.err.startswith(f"account-cli: run: busy: switched from dead (login {login}): ")


def test_a_refreshable_login_counts_as_best_counts_it(home: Home) -> None:
    # The agent client renews an expired access token itself when a refresh token is usable.
    fresh = home.add("fresh", login="refreshable", five_hour=(5, HOUR), seven_day=(5, DAY))
    home.add("busy", five_hour=(80, HOUR), seven_day=(10, DAY))
    assert home.run("run", "--", *SHOW_DIR).out == f"{fresh}\n"


def test_only_dead_logins_or_stale_readings_exit_2_with_each_reason(home: Home) -> None:
    home.add("dead", login="expired", five_hour=(0, HOUR), seven_day=(0, DAY))
    stale = home.add("stale")
    plant(stale, time.time() - 2 * HOUR, five_hour=(1, 3 * HOUR), seven_day=(1, DAY))
    done = home.run("run", "--", "sh", "-c", "echo ran")
    assert (done.code, done.out) == (2, "")
    assert done.err == (
        "account-cli: no account qualifies (dead: login expired; stale: reading stale)\n"
    )


def test_no_account_with_room_exits_75_naming_the_earliest_reset(home: Home) -> None:
    now = time.time()
    home.add("a", five_hour=(100, 2 * HOUR), seven_day=(40, DAY))
    # Two full windows: room again only once both have reset (the later of the two).
    home.add("b", five_hour=(100, HOUR), seven_day=(100, 3 * HOUR))
    home.add("c", login="missing")
    done = home.run("run", "--", "sh", "-c", "echo ran")
    assert (done.code, done.out) == (75, "")
    match = re.fullmatch(
        rf"account-cli: run: no account has room below 100%; room again at ({ISO}) "
        r"\(a: no room; b: no room; c: login missing\)\n",
        done.err,
    )
    assert match, done.err
    at = time.mktime(time.strptime(match[1], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert abs(at - (now + 2 * HOUR)) < 120  # a's five_hour, before b's seven_day


def test_switch_at_leaves_an_account_before_its_limit(home: Home) -> None:
    work = home.add("work", five_hour=(92, HOUR), seven_day=(20, DAY))
    spare = home.add("spare", five_hour=(50, HOUR), seven_day=(70, DAY))
    # Without --switch-at, a label is kept while it has any room at all.
    done = home.run("run", "--label", "work", "--", *SHOW_DIR)
    assert (done.code, done.out) == (0, f"{work}\n")
    assert done.err.startswith("account-cli: run: work: as asked, 8% left, resets ")
    done = home.run("run", "--switch-at", "90", "--label", "work", "--", *SHOW_DIR)
    assert (done.code, done.out) == (0, f"{spare}\n")
    assert done.err.startswith(
        "account-cli: run: spare: switched from work (no room below 90%): most room, 30% left, "
    )
    assert RUN_LINE.fullmatch(done.err.rstrip("\n")), done.err
    # Every account past the line: 75, though each still has a little room.
    done = home.run("run", "--switch-at", "25", "--", *SHOW_DIR)
    assert done.code == 75
    assert done.err.startswith("account-cli: run: no account has room below 25%; room again at ")


def test_a_window_past_its_reset_counts_as_unused(home: Home) -> None:
    # Read before the reset: 100% then, nothing now (the clock has moved past it).
    reset = home.add("reset", five_hour=(100, -60), seven_day=(10, DAY))
    home.add("busy", five_hour=(60, HOUR), seven_day=(10, DAY))
    done = home.run("run", "--", *SHOW_DIR)
    assert (done.code, done.out) == (0, f"{reset}\n")


def test_a_reading_dated_ahead_does_not_hide_a_newer_full_one(home: Home) -> None:
    # A session reading dated 2 h ahead (the clock was ahead when it was written, or stepped
    # back since) says 5%; the poll written since says 100%. It counts as written when its file
    # was, so the newer poll wins and the account has no room.
    config = home.add("work", five_hour=(100, HOUR), seven_day=(10, DAY))
    sessions = config / "status-cache" / "sessions"
    ahead = sessions / "ahead.json"
    doc = {
        "session_id": "ahead",
        "written_at": time.time() + 2 * HOUR,
        "rate_limits": {
            "five_hour": {"used_percentage": 5, "resets_at": time.time() + HOUR},
            "seven_day": {"used_percentage": 5, "resets_at": time.time() + DAY},
        },
    }
    ahead.write_text(json.dumps(doc))
    past = time.time() - 60
    os.utime(ahead, (past, past))
    done = home.run("run", "--", *SHOW_DIR)
    assert done.code == 75, done


def test_an_unknown_label_exits_2(home: Home) -> None:
    home.add("work", five_hour=(10, HOUR), seven_day=(10, DAY))
    done = home.run("run", "--label", "nope", "--", "true")
    assert (done.code, done.out, done.err) == (2, "", "account-cli: no profile labelled 'nope'\n")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["run"], "missing the command to run (-- COMMAND...)"),
        (["run", "--"], "missing the command to run (-- COMMAND...)"),
        (["run", "--switch-at", "0", "true"], "argument --switch-at: not a percentage"),
        (["run", "--switch-at", "101", "true"], "argument --switch-at: not a percentage"),
        (["run", "--switch-at", "nan", "true"], "argument --switch-at: not a percentage"),
        (["run", "--switch-at", "x", "true"], "argument --switch-at: not a percentage"),
        (["run", "--label", "a", "--label", "b", "true"], "argument --label: given twice"),
        (
            ["run", "--switch-at", "sk-ant-oat01-" + "A" * 40, "true"],
            "argument --switch-at: not a percentage",
        ),
    ],
)
def test_usage_errors_exit_64(home: Home, args: list[str], problem: str) -> None:
    done = home.run(*args)
    assert (done.code, done.out) == (64, "")
    assert done.err.startswith(f"account-cli: {problem}")
    assert "usage: account-cli run [-h] [--switch-at PERCENT] [--label LABEL] ..." in done.err


def test_a_command_that_cannot_run_exits_126_or_127(home: Home, tmp_path: Path) -> None:
    home.add("work", five_hour=(10, HOUR), seven_day=(10, DAY))
    done = home.run("run", "--", "no-such-command-" + CANARY.lower())
    assert (done.code, done.out) == (127, "")
    assert done.err.splitlines()[1:] == ["account-cli: run: command not found"]
    not_exec = tmp_path / "script"
    not_exec.write_text("#!/bin/sh\necho hi\n")
    done = home.run("run", "--", str(not_exec))
    assert (done.code, done.out) == (126, "")
    assert done.err.splitlines()[1:] == ["account-cli: run: command cannot be run"]


# --- one rule with `best`, over random profiles -------------------------------------------------

LOGINS = st.sampled_from(["present", "present", "refreshable", "expired", "refused", "missing"])
USE = st.sampled_from([0.0, 10.0, 50.0, 89.5, 90.0, 99.9, 100.0])
RESET = st.sampled_from([-600, HOUR, 2 * HOUR, DAY])
PROFILE = st.tuples(LOGINS, st.tuples(USE, RESET), st.tuples(USE, RESET), st.booleans())


@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=os.environ.get("CI") == "true",
)
@given(profiles=st.lists(PROFILE, min_size=1, max_size=4), switch_at=st.sampled_from([90, 100]))
def test_run_chooses_what_best_chooses(
    tmp_path_factory: pytest.TempPathFactory,
    profiles: list[tuple[str, tuple[float, float], tuple[float, float], bool]],
    switch_at: int,
) -> None:
    home = Home(tmp_path_factory.mktemp("home"))
    for i, (login, five, week, has_reading) in enumerate(profiles):
        if has_reading:
            home.add(f"p{i}", login=login, five_hour=five, seven_day=week)
        else:
            home.add(f"p{i}", login=login)
    best = home.run("best", "--path")
    done = home.run("run", "--switch-at", str(switch_at), "--", *SHOW_DIR)
    room = [
        (100 - max(u if r > 0 else 0.0 for u, r in (five, week)), i)
        for i, (login, five, week, has) in enumerate(profiles)
        if has and login in ("present", "refreshable")
    ]
    if done.code == 0:
        assert RUN_LINE.fullmatch(done.err.rstrip("\n")), done.err
        chosen = int(Path(done.out.strip()).name[1:])
        login, five, week, _ = profiles[chosen]
        assert login in ("present", "refreshable")
        assert all(u < switch_at or r <= 0 for u, r in (five, week))
        # best weighs the same rule with the line at 100%: it agrees whenever the choice has
        # room below 100% (run's line only removes accounts, never reorders them).
        assert best.code == 0
        assert best.out == done.out
    elif done.code == 75:
        assert any(100 - left >= switch_at for left, _ in room)
        assert all(100 - left >= switch_at for left, _ in room)
    else:
        assert done.code == 2
        assert room == []
        assert best.code == 2
        assert best.err == done.err
    check_files(home.path)


def test_python_m_runs_it_too(home: Home) -> None:
    work = home.add("work", five_hour=(10, HOUR), seven_day=(10, DAY))
    done = subprocess.run(
        [sys.executable, "-m", "agent_accounts", "run", "--", *SHOW_DIR],
        env=env_without_profiles(home.path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"{work}\n")


def test_run_and_best_weigh_the_use_forecast_for_now(home: Home) -> None:
    from agent_accounts.io import write_reading

    now = time.time()
    # `fast` read 80% eight minutes ago, climbing 2% a minute: about 96% now.
    fast = home.add("fast")
    for i in range(11):
        t = now - 28 * 60 + i * 120
        write_reading(
            fast,
            {
                "session_id": "usage-poll",
                "written_at": t,
                "rate_limits": {
                    "five_hour": {"used_percentage": 40 + 4 * i, "resets_at": now + 3 * HOUR},
                    "seven_day": {"used_percentage": 10, "resets_at": now + DAY},
                },
            },
        )
    # `steady` has read 88% all along.
    steady = home.add("steady", five_hour=(88, 3 * HOUR), seven_day=(10, DAY))
    done = home.run("run", "--", *SHOW_DIR)
    assert (done.code, done.out) == (0, f"{steady}\n")
    assert done.err.startswith("account-cli: run: steady: most room, 12% left, ")
    assert home.run("best").out == "steady\n"
    # Without its history `fast`'s reading alone (80%) would have won.
    (fast / "status-cache" / "usage-history.jsonl").unlink()
    assert home.run("run", "--", *SHOW_DIR).out == f"{fast}\n"


def test_run_and_best_take_the_day_rhythm_over_the_straight_line(home: Home) -> None:
    """`busy` read 80% eight minutes ago, rising 60 %/h all morning: a straight line puts it at
    88% now, past `steady`'s 84%. Its five days before stopped at this time of day (a lunch
    break from the half hour this reading fell in), so the day's rhythm says about 80%:
    `busy` has the most room."""
    from agent_accounts.io import write_reading

    now = time.time()
    last = now - 8 * 60
    pause = last // 1800 * 1800  # the days before stopped at this half hour
    busy = home.add("busy")

    def reading(t: float, used: float, opened: float) -> dict[str, Any]:
        limits = {
            "five_hour": {"used_percentage": used, "resets_at": opened + 5 * HOUR},
            "seven_day": {"used_percentage": 10, "resets_at": now + DAY},
        }
        return {"session_id": "usage-poll", "written_at": t, "rate_limits": limits}

    opened = last - 80 * 60  # 0% then, 80% at `last`
    for day in range(5, 0, -1):
        start, stop = opened - day * DAY, pause - day * DAY
        for k in range(15):
            t = start + 600 + k * 1200
            write_reading(busy, reading(t, (min(t, stop) - start) * 60 / HOUR, start))
    today = [reading(opened + k * 600, k * 10.0, opened) for k in range(1, 9)]
    for doc in today:
        write_reading(busy, doc)
    steady = home.add("steady", five_hour=(84, 3 * HOUR), seven_day=(10, DAY))
    done = home.run("run", "--", *SHOW_DIR)
    assert (done.code, done.out) == (0, f"{busy}\n"), done.err
    assert done.err.startswith("account-cli: run: busy: most room, ")
    assert home.run("best").out == "busy\n"
    # Not vacuous: with only today's readings (the straight line), `steady` wins.
    (busy / "status-cache" / "usage-history.jsonl").unlink()
    for doc in today:
        write_reading(busy, doc)
    assert home.run("run", "--", *SHOW_DIR).out == f"{steady}\n"
    assert home.run("best").out == "steady\n"
