"""`account-cli statusline` and `statusline-tee` without `--then`: the line a person reads.

Every run is a real `account-cli` subprocess whose clock is fixed (`accounts_simclock`: a
`sitecustomize` on its PYTHONPATH reads the time from a file the test never moves), over homes
holding readings with known reset times, so each answer is compared byte for byte: countdowns,
labels, colours, `NO_COLOR`, stale readings and windows that have already reset. `--format
pipe` is held to `status --statusline`.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accounts_cli_support import HEAVY, HEAVY_TOP_LEVEL
from accounts_simclock import SimClock
from accounts_support import CANARY, account_cli, add_profile

NOW = 1_700_000_000.0  # in the past: files written now are never stale to this clock
MIN, HOUR, DAY = 60, 3600, 86400
GREEN, YELLOW, RED, OFF = "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[0m"


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def clock(tmp_path: Path) -> SimClock:
    """The children's clock, fixed at NOW (`accounts_simclock`)."""
    return SimClock.fixed(tmp_path, NOW)


def cli(
    home_dir: Path,
    clock: SimClock,
    *args: str,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    **more: str,
) -> Run:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENT_") and k not in ("NO_COLOR", "PYTHONPATH")
    }
    base.update(HOME=str(home_dir), **clock.env())
    done = subprocess.run(
        [account_cli(), *args],
        input=stdin,
        env={**base, **(env or {}), **more},
        capture_output=True,
        timeout=60,
        check=False,
    )
    run = Run(done.returncode, done.stdout.decode(), done.stderr.decode())
    assert "Traceback" not in run.out + run.err
    assert CANARY not in run.out + run.err
    return run


def profile(home_dir: Path, name: str) -> Path:
    return add_profile(home_dir, name, now=NOW)


def plant(
    config: Path,
    five: float,
    week: float,
    *,
    five_reset: float | None = None,
    week_reset: float | None = None,
    age: float = 5,
    name: str = "r.json",
) -> None:
    limits: dict[str, dict[str, Any]] = {
        "five_hour": {"used_percentage": five},
        "seven_day": {"used_percentage": week},
    }
    if five_reset is not None:
        limits["five_hour"]["resets_at"] = five_reset
    if week_reset is not None:
        limits["seven_day"]["resets_at"] = week_reset
    doc = {"session_id": "s", "written_at": NOW - age, "rate_limits": limits}
    sessions = config / "status-cache" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / name).write_text(json.dumps(doc))


# 1h47m30s and 3d1h30m left: a countdown rounds up to the unit it shows.
FIVE_RESET = NOW + HOUR + 47 * MIN + 30
WEEK_RESET = NOW + 3 * DAY + HOUR + 30 * MIN


def one_account(home_dir: Path, five: float = 23.9, week: float = 41) -> None:
    plant(profile(home_dir, ".agent"), five, week, five_reset=FIVE_RESET, week_reset=WEEK_RESET)


def test_one_account_reads_as_a_person_would_say_it(home_dir: Path, clock: SimClock) -> None:
    one_account(home_dir)
    run = cli(home_dir, clock, "statusline", "--no-color")
    assert (run.code, run.out, run.err) == (0, "5h 23% 1h48m · 7d 41% 3d2h\n", "")


@pytest.mark.parametrize(
    ("five", "week", "colours"),
    [
        (0, 49.9, (GREEN, GREEN)),
        (50, 79.9, (YELLOW, YELLOW)),
        (80, 100, (RED, RED)),
    ],
)
def test_each_percentage_is_coloured_by_its_threshold(
    home_dir: Path, clock: SimClock, five: float, week: float, colours: tuple[str, str]
) -> None:
    one_account(home_dir, five, week)
    run = cli(home_dir, clock, "statusline")
    five_text, week_text = f"{int(five)}%", f"{int(week)}%"
    assert run.out == (
        f"5h {colours[0]}{five_text}{OFF} 1h48m · 7d {colours[1]}{week_text}{OFF} 3d2h\n"
    )
    assert (run.code, run.err) == (0, "")


@pytest.mark.parametrize(("value", "coloured"), [("1", False), ("", True), (None, True)])
def test_no_color_is_honoured_when_set_and_not_empty(
    home_dir: Path, clock: SimClock, value: str | None, coloured: bool
) -> None:
    one_account(home_dir)
    run = cli(home_dir, clock, "statusline", env=None if value is None else {"NO_COLOR": value})
    assert ("\x1b[" in run.out) is coloured
    assert run.out.replace(GREEN, "").replace(OFF, "") == "5h 23% 1h48m · 7d 41% 3d2h\n"


def test_several_accounts_each_get_a_labelled_line_the_current_one_first(
    home_dir: Path, clock: SimClock
) -> None:
    one_account(home_dir)
    plant(profile(home_dir, "work"), 100, 7, five_reset=NOW + 59, week_reset=NOW + 6 * DAY + 1)
    profile(home_dir, "spare")  # no reading: left out, as in the pipe rows
    plant(profile(home_dir, "ahead"), 5, 5, five_reset=NOW + 5 * HOUR, week_reset=NOW + 7 * DAY)
    run = cli(home_dir, clock, "statusline", "--no-color")
    assert run.out == (
        "default 5h 23% 1h48m · 7d 41% 3d2h\n"
        "ahead 5h 5% 5h · 7d 5% 7d\n"
        "work 5h 100% 1m · 7d 7% 6d1h\n"
    )
    # AGENT_CONFIG_DIR names the current account: it leads, under its own label.
    run = cli(
        home_dir,
        clock,
        "statusline",
        "--no-color",
        AGENT_CONFIG_DIR=str(home_dir / ".agent-profiles/work"),
    )
    assert run.out.splitlines()[0] == "work 5h 100% 1m · 7d 7% 6d1h"
    assert run.out.splitlines()[1:] == [
        "default 5h 23% 1h48m · 7d 41% 3d2h",
        "ahead 5h 5% 5h · 7d 5% 7d",
    ]


def test_an_account_without_a_reading_says_so(home_dir: Path, clock: SimClock) -> None:
    profile(home_dir, ".agent")
    assert cli(home_dir, clock, "statusline").out == "no usage reading yet\n"
    plant(profile(home_dir, "work"), 1, 2)
    assert cli(home_dir, clock, "statusline").out == (
        f"default no usage reading yet\nwork 5h {GREEN}1%{OFF} · 7d {GREEN}2%{OFF}\n"
    )


def test_no_home_at_all_is_no_reading_and_exit_0(tmp_path: Path, clock: SimClock) -> None:
    run = cli(tmp_path / "nowhere", clock, "statusline")
    assert (run.code, run.out, run.err) == (0, "no usage reading yet\n", "")


def test_a_window_past_its_reset_and_a_stale_reading(home_dir: Path, clock: SimClock) -> None:
    # The five-hour window reset 10 minutes ago: its use is the old window's, so none is shown.
    plant(
        profile(home_dir, ".agent"),
        90,
        30,
        five_reset=NOW - 600,
        week_reset=NOW + DAY,
        age=2 * HOUR + 5,
    )
    run = cli(home_dir, clock, "statusline", "--no-color")
    assert run.out == "5h reset · 7d 30% 1d · read 2h1m ago\n"


def test_a_window_without_a_reset_time_shows_its_use_only(home_dir: Path, clock: SimClock) -> None:
    plant(profile(home_dir, ".agent"), 12.5, 99.99, week_reset=NOW + 1)
    assert cli(home_dir, clock, "statusline", "--no-color").out == "5h 12% · 7d 99% 1m\n"


def test_labels_that_could_carry_escapes_are_left_out_and_tokens_redacted(
    home_dir: Path, clock: SimClock
) -> None:
    one_account(home_dir)
    plant(profile(home_dir, "esc\x1b[2Jape"), 1, 1)
    plant(profile(home_dir, f"sk-ant-oat01-{CANARY}"), 2, 2)
    run = cli(home_dir, clock, "statusline", "--no-color")
    assert run.out == "default 5h 23% 1h48m · 7d 41% 3d2h\n[REDACTED] 5h 2% · 7d 2%\n"
    assert "\x1b" not in run.out


def test_format_pipe_is_status_statusline_byte_for_byte(home_dir: Path, clock: SimClock) -> None:
    one_account(home_dir)
    plant(profile(home_dir, "work"), 100, 7, five_reset=NOW + 59, week_reset=NOW + 6 * DAY)
    pipe = cli(home_dir, clock, "statusline", "--format", "pipe")
    spec = cli(home_dir, clock, "status", "--statusline")
    assert pipe == spec
    assert pipe.out == "23|41|1700006450|1700264600|||||5\nother|work|100|7|5|\n"


# ---- statusline-tee without --then ---------------------------------------------------------------

PAYLOAD = {
    "session_id": "3f2a9c1e-4b5d-4e6f-8a7b-9c0d1e2f3a4b",
    "rate_limits": {
        "five_hour": {"used_percentage": 61, "resets_at": NOW + 2 * HOUR},
        "seven_day": {"used_percentage": 85.5, "resets_at": NOW + 2 * DAY + 1},
    },
}


def test_the_tee_prints_the_human_line_of_the_reading_it_just_kept(
    home_dir: Path, clock: SimClock
) -> None:
    profile(home_dir, ".agent")
    run = cli(home_dir, clock, "statusline-tee", stdin=json.dumps(PAYLOAD).encode())
    assert (run.code, run.err) == (0, "")
    assert run.out == f"5h {YELLOW}61%{OFF} 2h · 7d {RED}85%{OFF} 2d1h\n"
    run = cli(home_dir, clock, "statusline-tee", "--no-color", stdin=json.dumps(PAYLOAD).encode())
    assert run.out == "5h 61% 2h · 7d 85% 2d1h\n"
    run = cli(
        home_dir, clock, "statusline-tee", "--format", "pipe", stdin=json.dumps(PAYLOAD).encode()
    )
    assert run.out == "61|85|1700007200|1700172801|||||0\n"


@pytest.mark.parametrize("flags", [["--format", "pipe"], ["--no-color"], ["--format", "human"]])
def test_the_tee_refuses_line_flags_beside_then(
    home_dir: Path, clock: SimClock, flags: list[str]
) -> None:
    run = cli(home_dir, clock, "statusline-tee", "--then", "cat", *flags)
    assert run.code == 64
    assert run.out == ""
    assert run.err.startswith(
        "account-cli: --format and --no-color are for the tee's own line, not --then's\n"
        "usage: account-cli statusline-tee"
    )


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--format", "json"], "argument --format: invalid choice: 'json' (choose from"),
        (["--no-color", "--no-color"], "argument --no-color: given twice"),
        (["--format", "pipe", "--format", "pipe"], "argument --format: given twice"),
        (["--then", "x"], "unrecognized arguments: --then x"),
    ],
)
def test_statusline_usage_errors(
    home_dir: Path, clock: SimClock, args: list[str], problem: str
) -> None:
    run = cli(home_dir, clock, "statusline", *args)
    assert run.code == 64
    assert run.err.startswith(f"account-cli: {problem}")
    assert "usage: account-cli statusline [-h]" in run.err


# ---- what the human line loads ------------------------------------------------------------------

PROBE = """
import json, sys
sys.argv = ["account-cli", *json.loads(sys.argv[1])]
del sys.modules["json"], json
from agent_accounts.cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write(repr(sorted(sys.modules)))
"""


@pytest.mark.parametrize("args", [["statusline"], ["statusline-tee"]])
def test_the_human_line_loads_no_heavy_module(home_dir: Path, args: list[str]) -> None:
    one_account(home_dir)
    plant(profile(home_dir, "work"), 1, 2)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "COV", "PYTHON"))}
    env["HOME"] = str(home_dir)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        input=json.dumps(PAYLOAD).encode(),
        env=env,
        capture_output=True,
        timeout=60,
        check=True,
    )
    modules = set(ast.literal_eval(done.stderr.decode()))
    assert done.stdout.decode().startswith("default 5h ")
    heavy = {m for m in modules if m.split(".")[0] in HEAVY_TOP_LEVEL or m in HEAVY}
    assert heavy == set()


# ---- text `status`: reset countdowns and local times --------------------------------------------


@pytest.mark.parametrize(
    ("zone", "reset", "full", "past", "next_year"),
    [
        (
            "Asia/Kolkata",
            "Wed 15 Nov 06:43 IST",
            "Wed 15 Nov 04:13 IST",
            "Wed 15 Nov 03:33 IST",
            "Sun 14 Jan 2024 03:43 IST",
        ),
        (
            "UTC",
            "Wed 15 Nov 01:13 UTC",
            "Tue 14 Nov 22:43 UTC",
            "Tue 14 Nov 22:03 UTC",
            "Sat 13 Jan 2024 22:13 UTC",
        ),
    ],
)
def test_status_text_shows_reset_countdowns_and_local_times(
    home_dir: Path, clock: SimClock, zone: str, reset: str, full: str, past: str, next_year: str
) -> None:
    # Two hours into the five-hour window (40%) with 80% used: full half an hour from now.
    limits = {
        "five_hour": {"used_percentage": 80, "resets_at": NOW + 3 * HOUR},
        "seven_day": {"used_percentage": 10, "resets_at": NOW - 600},
        "seven_day_opus": {"used_percentage": 0, "resets_at": NOW + 60 * DAY},
    }
    doc = {"session_id": "usage-poll", "written_at": NOW - 30, "rate_limits": limits}
    sessions = profile(home_dir, ".agent") / "status-cache/sessions"
    sessions.mkdir(parents=True)
    (sessions / "usage-poll.json").write_text(json.dumps(doc))
    run = cli(home_dir, clock, "status", TZ=zone)
    assert (run.code, run.err) == (0, "")
    assert run.out.splitlines()[1:] == [
        f"  five_hour: 80% used, 40% elapsed, resets in 3h ({reset}), 100% projected at {full}",
        f"  seven_day: 10% used, 100% elapsed, reset 10m ago ({past}), 100% not projected",
        # A reset in another year than now's names its year (the window is clamped: none of
        # it has elapsed).
        f"  seven_day_opus: 0% used, 0% elapsed, resets in 60d ({next_year}), 100% not projected",
    ]
