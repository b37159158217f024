"""account-cli as a real subprocess: HOME in a temp dir, AGENT_API_BASE_URL at a local server.

Every run is checked for the things that must never happen: a traceback, a canary token on
stdout or stderr, an exit code outside 0, 1, 2 and 64, or a stderr line that is not a template.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from accounts_cli_support import Home, plant_reading, run_cli
from accounts_support import CANARY, HOUR_MS, UsageServer, account_cli, credentials, usage_body

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|\+00:00)"
LOCAL = r"\w{3} \d{1,2} \w{3}(?: \d{4})? \d\d:\d\d \S+"  # `Sat 28 Nov 14:32 CET`, local time
pytestmark = pytest.mark.usefixtures("no_canary_in_files")


# --- poll ---------------------------------------------------------------------------------------


async def test_poll_prints_one_line_per_profile_and_writes_nothing(
    home: Home, server: UsageServer
) -> None:
    default = home.add(".agent")
    home.add("work")
    home.add("nologin", seed=False)
    run = await home.run("poll")
    assert run.code == 0
    assert run.err == ""
    assert run.lines == [
        "default: five_hour 23%, seven_day 41.5%",
        "nologin: no login, skipped",
        "work: five_hour 23%, seven_day 41.5%",
    ]
    assert len(server.requests) == 2
    assert {r["vendor-beta"] for r in server.requests} == {"oauth-2025-04-20"}
    assert not (default / "status-cache").exists()


async def test_poll_write_stores_readings_then_backs_off_after_a_429(
    home: Home, server: UsageServer
) -> None:
    work = home.add("work")
    run = await home.run("poll", "--write")
    assert (run.code, run.lines, run.err) == (0, ["work: five_hour 23%, seven_day 41.5%"], "")
    stored = json.loads((work / "status-cache/sessions/usage-poll.json").read_bytes())
    assert stored["session_id"] == "usage-poll"
    assert stored["account"] == "work"
    assert stored["rate_limits"]["seven_day"]["used_percentage"] == 41.5

    async def limited(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.Response(status=429, text=request.headers["authorization"])

    server.handler = limited
    run = await home.run("poll", "--write")
    assert run.code == 1
    assert run.err == "account-cli: work: poll failed: http-429\n"
    assert (work / "status-cache" / "usage-poll.backoff").exists()

    run = await home.run("poll", "--write")
    assert run.code == 0
    assert run.err == ""
    assert re.fullmatch(rf"work: rate limited, skipped until {ISO}", run.out.strip()), run.out
    assert len(server.requests) == 2  # the backing-off run sent nothing


async def test_poll_write_reports_a_failed_usage_write(home: Home) -> None:
    work = home.add("work")
    (work / "status-cache/sessions/usage-poll.json").mkdir(parents=True)
    run = await home.run("poll", "--write")
    assert run.code == 1
    assert run.err == "account-cli: work: usage write failed\n"


async def test_login_problems_exit_2_and_win_over_failures(home: Home, server: UsageServer) -> None:
    home.add("expired", credentials(expires_at_ms=int(time.time() * 1000) - HOUR_MS))
    wide = home.add("wide")
    os.chmod(wide / ".credentials.json", 0o644)
    home.add("broken", b"{not json")
    home.add("failing")

    async def fail_all(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.Response(status=500, text=request.headers["authorization"])

    server.handler = fail_all
    run = await home.run("poll")
    assert run.code == 2
    assert run.out == ""
    assert sorted(run.err.splitlines()) == [
        "account-cli: broken: login refused (malformed)",
        "account-cli: expired: login expired",
        "account-cli: failing: poll failed: http-500",
        "account-cli: wide: login refused (mode-too-wide)",
    ]


async def test_a_failure_alone_exits_1(home: Home, server: UsageServer) -> None:
    home.add("work")
    home.add("fine")

    async def one_fails(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        if len(srv.requests) == 1:
            return web.Response(status=503)
        return web.json_response(usage_body())

    server.handler = one_fails
    run = await home.run("poll")
    assert run.code == 1
    assert len(run.lines) == 1
    assert len(run.err.splitlines()) == 1


async def test_a_server_echoing_the_token_everywhere_leaks_nothing(
    home: Home, server: UsageServer
) -> None:
    home.add("body")
    home.add("error")
    home.add("moved")

    async def leaky(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        token = request.headers["authorization"]
        which = len(srv.requests) % 3
        if which == 1:
            body = usage_body(extra_usage={"echo": token})
            return web.json_response(body, headers={"x-echo": token})
        if which == 2:
            return web.json_response({"error": token}, status=401, headers={"x-echo": token})
        location = f"{srv.url}/elsewhere?t={token.removeprefix('Bearer ')}"
        return web.Response(status=307, headers={"location": location}, text=token)

    server.handler = leaky
    for args in (["poll"], ["poll", "--write"]):
        run = await home.run(*args)  # run_cli asserts no canary in either stream
        assert run.code == 1
        assert len(run.lines) == 1
        assert sorted(re.sub(r"^account-cli: \w+: ", "", e) for e in run.err.splitlines()) == [
            "poll failed: http-307",
            "poll failed: http-401",
        ]
    assert server.other_hits == []


async def test_a_refused_base_url_is_a_fixed_line(home: Home, server: UsageServer) -> None:
    home.add("work")
    env = home.env(AGENT_API_BASE_URL=f"http://user:{CANARY}@example.com")
    run = await home.run("poll", env=env)
    assert run.code == 64
    assert run.err == (
        "account-cli: configuration refused (check AGENT_API_BASE_URL and AGENT_AUTH_URL)\n"
    )
    assert server.requests == []


# --- status -------------------------------------------------------------------------------------


async def test_status_reports_login_and_reading_without_a_request(
    home: Home, server: UsageServer
) -> None:
    default = home.add(".agent")
    home.add("work")
    plant_reading(default, "s1", time.time() - 30, five_hour=23, seven_day=41.5)
    run = await home.run("status")
    assert run.code == 0
    assert run.err == ""
    assert re.fullmatch(
        r"default: login present; five_hour 23%, seven_day 41.5% \(\d+s old\)", run.lines[0]
    )
    # Under each reading, one line per window: used, elapsed, the reset (a countdown and the local
    # time), and when 100% comes at this pace. (These windows reset in 2030: none of their time
    # has elapsed yet; test_humanline.py pins these lines with a fixed clock and zone.)
    for line, used in zip(run.lines[1:3], ("five_hour: 23%", "seven_day: 41.5%"), strict=True):
        assert re.fullmatch(
            rf"  {used} used, 0% elapsed, resets in \d+d(?:\d+h)? \({LOCAL}\), 100% not projected",
            line,
        ), line
    assert run.lines[3] == "work: login present; no reading"
    assert server.requests == []


def plant_paced(config: Path, **windows: tuple[float, float | None]) -> float:
    """Plant a fresh reading whose windows reset after the given seconds; return now."""
    now = time.time()
    sessions = config / "status-cache" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    limits: dict[str, Any] = {}
    for name, (used, resets_in) in windows.items():
        limits[name] = {"used_percentage": used}
        if resets_in is not None:
            limits[name]["resets_at"] = now + resets_in
    doc = {"session_id": "usage-poll", "written_at": now - 5, "rate_limits": limits}
    (sessions / "usage-poll.json").write_text(json.dumps(doc))
    return now


async def test_status_shows_pace_for_every_window_the_per_model_ones_included(home: Home) -> None:
    work = home.add("work")
    week = 7 * 24 * 3600
    now = plant_paced(
        work,
        seven_day_sonnet=(50, week - 24 * 3600),  # one day of seven gone, half used
        five_hour=(80, 3 * 3600),  # 40% of five hours gone, 80% used
        seven_day=(10, 6 * 24 * 3600),
        seven_day_opus=(3, None),
    )
    run = await home.run("status")
    assert (run.code, run.err) == (0, "")
    assert run.lines[0].startswith(
        "work: login present; five_hour 80%, seven_day 10%, seven_day_opus 3%, "
        "seven_day_sonnet 50% ("
    )
    assert re.fullmatch(
        rf"  five_hour: 80% used, 40% elapsed, resets in (?:3h|2h\d+m) \({LOCAL}\), "
        rf"100% projected at {LOCAL}",
        run.lines[1],
    ), run.lines[1]
    assert re.fullmatch(
        rf"  seven_day: 10% used, 14% elapsed, resets in (?:6d|5d23h) \({LOCAL}\), 100% not projected",
        run.lines[2],
    ), run.lines[2]
    assert run.lines[3] == "  seven_day_opus: 3% used, elapsed unknown, 100% not projected"
    assert re.fullmatch(
        rf"  seven_day_sonnet: 50% used, 14% elapsed, resets in (?:6d|5d23h) \({LOCAL}\), "
        rf"100% projected at {LOCAL}",
        run.lines[4],
    ), run.lines[4]
    run = await home.run("status", "--json")
    pace = json.loads(run.out)["profiles"][0]["usage"]["pace"]
    assert list(pace) == ["five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet"]
    assert pace["five_hour"]["used_percentage"] == 80
    assert pace["five_hour"]["elapsed_percentage"] == pytest.approx(40, abs=0.1)
    # 80% in two hours: 100% two and a half hours after the start, half an hour from now.
    assert pace["five_hour"]["projected_full_at"] == pytest.approx(now + 1800, abs=60)
    assert pace["seven_day"]["projected_full_at"] is None
    assert pace["seven_day_opus"] == {
        "used_percentage": 3,
        "elapsed_percentage": None,
        "resets_at": None,
        "projected_full_at": None,
        "forecast": None,  # no history: written by hand, not by the poller
    }
    assert pace["seven_day_sonnet"]["projected_full_at"] == pytest.approx(now + 24 * 3600, abs=60)


async def test_status_exits_2_for_a_missing_login(home: Home) -> None:
    home.add("work")
    home.add("nologin", seed=False)
    run = await home.run("status")
    assert run.code == 2
    assert run.err == ""  # said once, in the profile's line
    assert "nologin: login missing; no reading" in run.lines
    run = await home.run("status", "--json")
    assert run.code == 2
    assert run.err == "account-cli: nologin: login missing\n"  # beside JSON: once, on stderr


async def test_status_json_has_the_spec_keys(home: Home, tmp_path: Path) -> None:
    default = home.add(".agent")
    home.add("gone", seed=False)
    plant_reading(default, "s1", time.time() - 5, five_hour=23, seven_day=41.5)
    run = await home.run("status", "--json")
    assert run.code == 2
    doc = json.loads(run.out)
    assert list(doc) == ["profiles"]
    first, second = doc["profiles"]
    # The spec's keys, then the refresh lock (null, or its age) and what is dated ahead of now.
    assert list(first) == [
        "label",
        "configDir",
        "login",
        "usage",
        "refreshLock",
        "clockAhead",
        "configDirProblem",
    ]
    assert first["configDirProblem"] is None
    assert first["refreshLock"] is None
    assert first["clockAhead"] == []
    assert first["label"] == "default"
    assert first["configDir"] == str(default)
    assert first["login"]["status"] == "present"
    assert set(first["login"]) <= {
        "status",
        "expiresAt",
        "canRefresh",
        "subscriptionType",
        "rateLimitTier",
    }
    assert list(first["usage"]) == [
        "written_at",
        "age_seconds",
        "rate_limits",
        "pace",
        "older_windows",
    ]
    assert first["usage"]["older_windows"] == {}
    assert list(first["usage"]["pace"]) == ["five_hour", "seven_day"]
    assert first["usage"]["age_seconds"] >= 5
    assert second == {
        "label": "gone",
        "configDir": str(home.profiles / "gone"),
        "login": {"status": "missing"},
        "usage": None,
        "refreshLock": None,
        "clockAhead": [],
        "configDirProblem": None,
    }


async def test_status_reports_an_unreadable_login(home: Home, tmp_path: Path) -> None:
    not_a_dir = tmp_path / "plain-file"
    not_a_dir.write_text("")
    env = home.env(AGENT_CONFIG_DIRS=str(not_a_dir))
    run = await home.run("status", "--json", env=env)
    assert run.code == 1
    problem = f"config dir {not_a_dir} is not a directory (fix AGENT_CONFIG_DIRS)"
    assert run.err == f"account-cli: plain-file: {problem}\n"
    (row,) = json.loads(run.out)["profiles"]
    assert row["login"] == {"status": "unreadable"}
    assert row["configDirProblem"] == problem
    run = await home.run("status", env=env)
    assert (run.code, run.out, run.err) == (1, f"plain-file: {problem}\n", "")


# --- status --statusline ------------------------------------------------------------------------


async def test_statusline_without_readings_is_unknown(home: Home) -> None:
    home.add(".agent")
    run = await home.run("status", "--statusline")
    assert (run.code, run.out, run.err) == (0, "unknown|unknown|||||||\n", "")


async def test_statusline_formats_floors_and_falls_back(home: Home) -> None:
    default = home.add(".agent")
    work = home.add("work")
    home.add("quiet")  # no reading: no line
    now = time.time()
    plant_reading(default, "old", now - 100, five_hour=23.9, seven_day=41.5)
    plant_reading(default, "newer", now - 10, five_hour=99)  # lacks seven_day: skipped
    plant_reading(work, "w", now - 50, five_hour=7.99, seven_day=100)
    run = await home.run("status", "--statusline")
    assert run.code == 0
    assert run.err == ""
    first, *others = run.lines
    match = re.fullmatch(r"23\|41\|1893456000\|1893456000\|\|\|\|\|(\d+)", first)
    assert match, first
    assert 100 <= int(match[1]) < 100 + 60
    assert len(others) == 1
    other = re.fullmatch(r"other\|work\|7\|100\|(\d+)\|", others[0])
    assert other, others[0]
    assert 50 <= int(other[1]) < 50 + 60


async def test_statusline_follows_agent_config_dir(home: Home) -> None:
    default = home.add(".agent")
    work = home.add("work")
    now = time.time()
    plant_reading(default, "d", now, five_hour=1, seven_day=2)
    plant_reading(work, "w", now, five_hour=3, seven_day=4)
    run = await home.run("status", "--statusline", env=home.env(AGENT_CONFIG_DIR=str(work)))
    assert run.lines[0].startswith("3|4|")
    assert re.fullmatch(r"other\|default\|1\|2\|\d+\|", run.lines[1])
    assert len(run.lines) == 2


async def test_statusline_with_broken_files_still_exits_0_with_empty_stderr(
    home: Home, tmp_path: Path
) -> None:
    default = home.add(".agent")
    sessions = default / "status-cache" / "sessions"
    sessions.mkdir(parents=True)
    os.mkfifo(sessions / "fifo.json")
    (sessions / "bad.json").write_bytes(b"\xff{")
    (sessions / "dir.json").mkdir()
    (sessions / "link.json").symlink_to(tmp_path / "nowhere")
    (default / ".credentials.json").unlink()
    (default / ".credentials.json").symlink_to(tmp_path / "nowhere")
    odd = home.add("odd")
    (odd / "status-cache").write_text("not a dir")
    looped = home.add("looped")
    (looped / "status-cache").symlink_to(looped / "status-cache")
    ok = home.add("ok")
    plant_reading(ok, "k", time.time(), five_hour=5, seven_day=6)
    run = await home.run("status", "--statusline")
    assert run.code == 0
    assert run.err == ""
    assert run.lines[0] == "unknown|unknown|||||||"
    assert [line.split("|")[:4] for line in run.lines[1:]] == [["other", "ok", "5", "6"]]

    # A home whose profile root is a file, an empty HOME, and a config dir that is a file.
    (home.profiles).rename(tmp_path / "moved")
    (home.profiles).write_text("")
    for env in (home.env(), home.env(AGENT_CONFIG_DIR=str(home.profiles)), {"PATH": "/usr/bin"}):
        run = await home.run("status", "--statusline", env=env)
        assert (run.code, run.out, run.err) == (0, "unknown|unknown|||||||\n", "")


async def test_statusline_imports_neither_httpx_nor_typer(home: Home) -> None:
    default = home.add(".agent")
    plant_reading(default, "d", time.time(), five_hour=1, seven_day=2)
    run = await run_cli(
        ["status", "--statusline"],
        home.env(),
        argv0=[sys.executable, "-X", "importtime", account_cli()],
    )
    assert run.code == 0
    assert run.lines[0].startswith("1|2|")
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.err.splitlines() if "|" in line}
    assert "agent_accounts.io._readings" in imported  # the probe sees the library's imports
    heavy = {
        m
        for m in imported
        if m.split(".")[0] in {"httpx", "httpcore", "typer", "click", "aiohttp", "rich"}
        or m in {"typing", "dataclasses", "inspect", "datetime", "agent_accounts._pace"}
    }
    assert heavy == set()


# --- usage errors -------------------------------------------------------------------------------


# Every bad invocation: its exact first stderr line (the problem, named) and its exit code; the
# second line is always the usage of the command in question.
POLL_USAGE = (
    "usage: account-cli poll [-h] [--write] [--refresh] [--max-age SECONDS]\n"
    "                        [--period SECONDS] [--alert-at PERCENTS]\n"
    "                        [--alert-exec CMD] [--json]"
)
STATUS_USAGE = "usage: account-cli status [-h] [--json | --statusline]"
BEST_USAGE = "usage: account-cli best [-h] [--window NAME] [--json | --path]"
TOP_USAGE = (
    "usage: account-cli [-h] [--version]\n"
    "                   {best,explain,history,poll,run,status,statusline,statusline-tee,units}\n"
    "                   ..."
)
EXPLAIN_USAGE = "usage: account-cli explain [-h] [--json] [LABEL]"
WINDOWS = "(five_hour, seven_day, seven_day_opus, seven_day_sonnet or seven_day_oauth_apps)"
BAD_INVOCATIONS: list[tuple[list[str], str, str]] = [
    (
        [],
        "missing command (best, explain, history, poll, run, status, statusline, statusline-tee or units)",
        TOP_USAGE,
    ),
    (
        ["nope"],
        "unknown command 'nope' (best, explain, history, poll, run, status, statusline, statusline-tee or units)",
        TOP_USAGE,
    ),
    (
        ["Poll"],
        "unknown command 'Poll' (best, explain, history, poll, run, status, statusline, statusline-tee or units)",
        TOP_USAGE,
    ),
    (
        ["Best"],
        "unknown command 'Best' (best, explain, history, poll, run, status, statusline, statusline-tee or units)",
        TOP_USAGE,
    ),
    (["best", "--write"], "unrecognized arguments: --write", BEST_USAGE),
    (["best", "extra"], "unrecognized arguments: extra", BEST_USAGE),
    (["best", "--win", "five_hour"], "unrecognized arguments: --win five_hour", BEST_USAGE),
    (["best", "--window"], "argument --window: expected one argument", BEST_USAGE),
    (
        ["best", "--window", "Five-Hour"],
        f"argument --window: unknown window 'Five-Hour' {WINDOWS}",
        BEST_USAGE,
    ),
    (["best", "--window="], f"argument --window: unknown window '' {WINDOWS}", BEST_USAGE),
    (
        ["best", "--window", "nosuch"],
        f"argument --window: unknown window 'nosuch' {WINDOWS}",
        BEST_USAGE,
    ),
    (
        ["best", "--window", "five_hour", "--window", "seven_day_haiku"],
        f"argument --window: unknown window 'seven_day_haiku' {WINDOWS}",
        BEST_USAGE,
    ),
    (["best", "--json", "--json"], "argument --json: given twice", BEST_USAGE),
    (["best", "--path", "--path"], "argument --path: given twice", BEST_USAGE),
    (["best", "--json", "--path"], "argument --path: not allowed with argument --json", BEST_USAGE),
    (["best", "--path", "--json"], "argument --json: not allowed with argument --path", BEST_USAGE),
    (["best", "--path=x"], "argument --path: ignored explicit argument 'x'", BEST_USAGE),
    (
        ["best", "--window", "sk-ant-oat01-" + "A" * 40],
        f"argument --window: unknown window '[REDACTED]' {WINDOWS}",
        BEST_USAGE,
    ),
    (["explain", "a", "b"], "unrecognized arguments: b", EXPLAIN_USAGE),
    (["explain", "--json", "--json"], "argument --json: given twice", EXPLAIN_USAGE),
    (["explain", "--path"], "unrecognized arguments: --path", EXPLAIN_USAGE),
    (["poll", "--nope"], "unrecognized arguments: --nope", POLL_USAGE),
    (["poll", "--wri"], "unrecognized arguments: --wri", POLL_USAGE),  # no abbreviations
    (["poll", "extra"], "unrecognized arguments: extra", POLL_USAGE),
    (["poll", "--write", "--write"], "argument --write: given twice", POLL_USAGE),
    (["poll", "--refresh"], "--refresh needs --write", POLL_USAGE),
    (["poll", "--refresh", "--refresh", "--write"], "argument --refresh: given twice", POLL_USAGE),
    (["poll", "--write=yes"], "argument --write: ignored explicit argument 'yes'", POLL_USAGE),
    (["status", "--write"], "unrecognized arguments: --write", STATUS_USAGE),
    (["status", "--json", "--json"], "argument --json: given twice", STATUS_USAGE),
    (
        ["status", "--json", "--statusline"],
        "argument --statusline: not allowed with argument --json",
        STATUS_USAGE,
    ),
    (
        ["status", "--statusline", "--json"],
        "argument --json: not allowed with argument --statusline",
        STATUS_USAGE,
    ),
    (
        ["status", "--statusline", "--statusline"],
        "argument --statusline: given twice",
        STATUS_USAGE,
    ),
    (
        ["status", "--statusline=1"],
        "argument --statusline: ignored explicit argument '1'",
        STATUS_USAGE,
    ),
    (["--write", "poll"], "unrecognized arguments: --write", POLL_USAGE),
    # A pasted token is named only redacted.
    (
        ["poll", "--token=sk-ant-oat01-" + "A" * 40],
        "unrecognized arguments: --token=[REDACTED]",
        POLL_USAGE,
    ),
]


@pytest.mark.parametrize(
    ("args", "problem", "usage"),
    BAD_INVOCATIONS,
    ids=[" ".join(a) or "(none)" for a, _, _ in BAD_INVOCATIONS],
)
async def test_a_bad_invocation_names_its_problem_and_exits_64(
    home: Home, server: UsageServer, args: list[str], problem: str, usage: str
) -> None:
    home.add("work")
    run = await home.run(*args)
    assert (run.code, run.out, run.err) == (64, "", f"account-cli: {problem}\n{usage}\n")
    assert server.requests == []


# A config dir that cannot be read, per command: (args, exit, stdout, stderr), with `{dir}` the
# dir and `{what}` what is wrong with it and what to do; never "login missing" or "No journal yet".
MISSING = "does not exist (log in there with the agent client, or fix AGENT_CONFIG_DIRS)"
LOCKED_OUT = (
    "cannot be read: permission denied (run as its owner, or let the owner in: chmod u+rwx {dir})"
)
BAD_CONFIG_DIRS: list[tuple[list[str], int, str, str]] = [
    (["status"], 0, "{label}: config dir {dir} {what}\n", ""),
    (["status", "--json"], 0, "", "account-cli: {label}: config dir {dir} {what}\n"),
    (["best"], 2, "", "account-cli: no account qualifies ({label}: config dir {dir} {what})\n"),
    (["explain"], 1, "{label}: Config dir {dir} {what}.\n", ""),
]


def _no_dac_override() -> list[str]:
    """A prefix that runs a command without root's power to read any file, or nothing if not root."""
    if os.geteuid() != 0:
        return []
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", account_cli()]


@pytest.mark.parametrize(("args", "code", "out", "err"), BAD_CONFIG_DIRS)
@pytest.mark.parametrize("case", ["listed-missing", "unreadable"])
async def test_a_config_dir_that_cannot_be_read_is_named_with_what_to_do(
    home: Home, args: list[str], code: int, out: str, err: str, case: str
) -> None:
    if case == "listed-missing":
        config, label, what = "/nonexistent", "nonexistent", MISSING
        env, argv0 = home.env(AGENT_CONFIG_DIRS=config), None
        expected_code = code or 2  # status: the login is missing
    else:
        config = str(home.add(".agent"))
        label, what = "default", LOCKED_OUT.format(dir=config)
        os.chmod(config, 0)
        env, argv0 = home.env(), _no_dac_override() or None
        expected_code = code or 1  # status: the login cannot be read
    try:
        run = await run_cli(args, env, argv0=argv0)
    finally:
        if case == "unreadable":
            os.chmod(config, 0o700)
    fill = {"label": label, "dir": config, "what": what}
    if args == ["status", "--json"]:
        (row,) = json.loads(run.out)["profiles"]
        assert row["configDirProblem"] == f"config dir {config} {what}"
        assert (run.code, run.err) == (expected_code, err.format(**fill))
    else:
        assert (run.code, run.out, run.err) == (
            expected_code,
            out.format(**fill),
            err.format(**fill),
        )


async def test_status_says_each_problem_once(home: Home) -> None:
    home.add("nologin", seed=False)
    home.add("dead", credentials(expires_at_ms=int(time.time() * 1000) - HOUR_MS))
    run = await home.run("status")
    assert run.code == 2
    said = run.out + run.err
    assert said.count("login missing") == 1
    assert said.count("login expired") == 1
    assert run.err == ""


@pytest.mark.parametrize(
    "args",
    [["-h"], ["--help"], ["poll", "-h"], ["status", "--help"], ["best", "-h"], ["explain", "-h"]],
)
async def test_h_and_help_print_the_help_and_exit_0(home: Home, args: list[str]) -> None:
    run = await home.run(*args)
    assert (run.code, run.err) == (0, "")
    assert run.out.startswith("usage: account-cli")
    assert "--help" in run.out


async def test_status_and_poll_without_profiles_say_where_they_looked(home: Home) -> None:
    for command in ("status", "poll"):
        run = await home.run(command)
        assert (run.code, run.err) == (0, "")
        assert run.out == (
            f"no profiles found (searched {home.path}/.agent and {home.path}/.agent-profiles/*)\n"
        )
    run = await home.run("status", env=home.env(AGENT_PROFILE_ROOT=str(home.path / "elsewhere")))
    assert run.out == (
        f"no profiles found (searched {home.path}/.agent and {home.path}/elsewhere/*)\n"
    )
    run = await home.run("status", "--json")
    assert (run.code, json.loads(run.out)) == (0, {"profiles": []})


async def test_help_exits_0(home: Home) -> None:
    run = await home.run("--help")
    assert run.code == 0
    assert "poll" in run.out
    assert "status" in run.out


@pytest.mark.parametrize("module", ["agent_accounts", "agent_accounts.cli"])
async def test_module_entry_point_runs_the_same_cli(home: Home, module: str) -> None:
    home.add(".agent")
    run = await run_cli(
        ["status", "--statusline"], home.env(), argv0=[sys.executable, "-m", module]
    )
    assert (run.code, run.out, run.err) == (0, "unknown|unknown|||||||\n", "")


async def test_version_prints_the_installed_distribution_version(home: Home) -> None:
    from importlib.metadata import version

    for argv0 in ([account_cli()], [sys.executable, "-m", "agent_accounts"]):
        run = await run_cli(["--version"], home.env(), argv0=argv0)
        assert (run.code, run.out, run.err) == (0, f"account-cli {version('agent-accounts')}\n", "")


# --- best ---------------------------------------------------------------------------------------


async def test_best_picks_the_most_headroom_among_usable_fresh_profiles(home: Home) -> None:
    hour, day = 3600, 24 * 3600
    now_ms = int(time.time() * 1000)
    busy = home.add("busy")
    plant_paced(busy, five_hour=(90, hour), seven_day=(10, day), seven_day_opus=(5, day))
    roomy = home.add("roomy")
    plant_paced(roomy, five_hour=(20, hour), seven_day=(30, day), seven_day_opus=(60, day))
    # An expired login that can refresh qualifies, and has the most headroom over seven_day.
    refreshable = home.add("refreshable", credentials(expires_at_ms=now_ms - hour * 1000))
    plant_paced(refreshable, five_hour=(25, hour), seven_day=(5, day))
    # The emptiest accounts are out: no refresh token, a stale reading, no login at all.
    dead = home.add(
        "dead",
        credentials(
            expires_at_ms=now_ms - 1000, extra_block={"refreshTokenExpiresAt": now_ms - 1000}
        ),
    )
    plant_paced(dead, five_hour=(0, hour), seven_day=(0, day))
    stale = home.add("stale")
    plant_reading(stale, "old", time.time() - 3600, five_hour=0, seven_day=0)
    home.add("nologin", seed=False)

    run = await home.run("best")
    assert (run.code, run.out, run.err) == (0, "refreshable\n", "")
    run = await home.run("best", "--path")
    assert (run.code, run.out, run.err) == (0, f"{refreshable}\n", "")
    run = await home.run("best", "--window", "five_hour")
    assert (run.code, run.out) == (0, "roomy\n")
    run = await home.run("best", "--window", "seven_day_opus", "--json")
    assert run.code == 0
    doc = json.loads(run.out)
    assert doc == {
        "label": "busy",
        "configDir": str(busy),
        "headroom_percentage": 95,
        "resets_at": doc["resets_at"],
        "windows": ["seven_day_opus"],
    }
    assert doc["resets_at"] == pytest.approx(time.time() + day, abs=120)


async def test_best_exits_2_with_each_reason_when_none_qualifies(home: Home) -> None:
    now_ms = int(time.time() * 1000)
    dead = home.add(
        "dead",
        credentials(
            expires_at_ms=now_ms - 1000, extra_block={"refreshTokenExpiresAt": now_ms - 1000}
        ),
    )
    plant_reading(dead, "s", time.time(), five_hour=1, seven_day=1)
    stale = home.add("stale")
    plant_reading(stale, "s", time.time() - 3600, five_hour=1, seven_day=1)
    home.add("nologin", seed=False)
    home.add("noreading")
    run = await home.run("best")
    assert (run.code, run.out) == (2, "")
    assert run.err == (
        "account-cli: no account qualifies (dead: login expired; nologin: login missing; "
        "noreading: no reading; stale: reading stale)\n"
    )
    run = await home.run("best", "--window", "seven_day_opus", "--path")
    assert run.code == 2
    assert "stale: reading stale" in run.err


async def test_best_without_profiles_exits_2(home: Home) -> None:
    run = await home.run("best", "--json")
    assert (run.code, run.out, run.err) == (
        2,
        "",
        "account-cli: no account qualifies (no profiles found)\n",
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["status"], 128 + 13),
        (["status", "--json"], 128 + 13),
        (["status", "--statusline"], 0),  # the status line always exits 0 (spec)
    ],
)
def test_a_reader_that_went_away_ends_quietly(home: Home, args: list[str], code: int) -> None:
    # `account-cli status | head -0`: the pipe's read end is closed before the first write.
    plant_reading(home.add(".agent"), "s1", time.time() - 30, five_hour=23, seven_day=41.5)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [account_cli(), *args],
            env=home.env(),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.stderr == b""
    assert proc.returncode == code
