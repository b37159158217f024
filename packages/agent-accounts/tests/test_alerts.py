"""Usage alerts: the pure crossing rules (a table), the marks on disk, and `poll --write
--alert-at` as a real subprocess against a local usage server, with a real hook, a fake
`notify-send` on PATH (and none), and the journal's warning prefix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from accounts_alerts_support import HOUR, NOW, T, mark, reading
from accounts_cli_support import Home
from accounts_support import CANARY, UsageServer, account_cli
from agent_accounts import Alert, AlertMark, alert_crossings, parse_alert_thresholds

# ---- the pure rules -------------------------------------------------------------------------------

CASES: list[tuple[str, dict[str, AlertMark], Any, list[float], dict[str, AlertMark]]] = [
    ("below every threshold", {}, reading(five_hour=(79.9, NOW + HOUR)), [], {}),
    ("crossing the first", {}, reading(five_hour=(80, NOW + HOUR)), [80], {"five_hour": mark(80)}),
    (
        "a jump past both fires once, at the highest",
        {},
        reading(five_hour=(96, NOW + HOUR)),
        [95],
        {"five_hour": mark(95)},
    ),
    (
        "staying above fires nothing more",
        {"five_hour": mark(80)},
        reading(five_hour=(90, NOW + HOUR)),
        [],
        {"five_hour": mark(80)},
    ),
    (
        "the next threshold in the same period fires",
        {"five_hour": mark(80)},
        reading(five_hour=(95, NOW + HOUR)),
        [95],
        {"five_hour": mark(95)},
    ),
    (
        "the reset time's jitter is the same period",
        {"five_hour": mark(95)},
        reading(five_hour=(99, NOW + HOUR + 1.7)),
        [],
        {"five_hour": mark(95)},
    ),
    (
        "a new window period fires again",
        {"five_hour": mark(95)},
        reading(five_hour=(85, NOW + 5 * HOUR)),
        [80],
        {"five_hour": mark(80, NOW + 5 * HOUR)},
    ),
    (
        "a passed reset forgets the mark (reset), and the low use after it fires nothing",
        {"five_hour": mark(95, NOW - 601)},
        reading(five_hour=(3, NOW + 5 * HOUR)),
        [],
        {},
    ),
    (
        "just past the marked reset, a late reading of the old period fires nothing",
        {"five_hour": mark(95, NOW - 1)},
        reading(five_hour=(99, NOW + 1)),
        [],
        {"five_hour": mark(95, NOW - 1)},
    ),
    (
        "just past the marked reset, the new period's reading starts afresh",
        {"five_hour": mark(95, NOW - 1)},
        reading(five_hour=(82, NOW + 5 * HOUR)),
        [80],
        {"five_hour": mark(80, NOW + 5 * HOUR)},
    ),
    (
        "a reading of a window past its reset is stale: nothing",
        {},
        reading(five_hour=(99, NOW - 10)),
        [],
        {},
    ),
    (
        "a reading of an older period than the mark changes nothing",
        {"five_hour": mark(80, NOW + 5 * HOUR)},
        reading(five_hour=(99, NOW + HOUR)),
        [],
        {"five_hour": mark(80, NOW + 5 * HOUR)},
    ),
    (
        "no reset time: staying above fires nothing more",
        {"seven_day": mark(80, None)},
        reading(seven_day=(85, None)),
        [],
        {"seven_day": mark(80, None)},
    ),
    (
        "no reset time: falling below every threshold re-arms",
        {"seven_day": mark(95, None)},
        reading(seven_day=(10, None)),
        [],
        {},
    ),
    (
        "a reset time learnt later keeps the level",
        {"seven_day": mark(80, None)},
        reading(seven_day=(85, NOW + HOUR)),
        [],
        {"seven_day": mark(80, NOW + HOUR)},
    ),
    (
        "windows are independent; other marks are kept",
        {"seven_day_opus": mark(80)},
        reading(five_hour=(81, NOW + HOUR), seven_day=(50, NOW + HOUR)),
        [80],
        {"seven_day_opus": mark(80), "five_hour": mark(80)},
    ),
]


@pytest.mark.parametrize(
    ("marks", "given", "fired", "after"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_alert_crossings(
    marks: dict[str, AlertMark], given: Any, fired: list[float], after: dict[str, AlertMark]
) -> None:
    new, alerts = alert_crossings(given, marks, T, NOW)
    assert [a.threshold for a in alerts] == fired
    assert new == after


def test_an_alert_carries_the_window_use_and_reset() -> None:
    _, alerts = alert_crossings(reading(seven_day=(96.5, NOW + HOUR)), {}, T, NOW)
    assert alerts == [
        Alert(window="seven_day", used_percentage=96.5, threshold=95, resets_at=NOW + HOUR)
    ]


def test_no_thresholds_fire_nothing() -> None:
    assert alert_crossings(reading(five_hour=(99, NOW + HOUR)), {}, (), NOW) == ({}, [])


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("80,95", (80.0, 95.0)),
        ("95, 80,80", (80.0, 95.0)),
        ("100", (100.0,)),
        ("12.5", (12.5,)),
        ("", None),
        ("80,", None),
        ("0", None),
        ("101", None),
        ("-5", None),
        ("nan", None),
        ("inf", None),
        ("eighty", None),
        ("1" * 17, None),
    ],
)
def test_parse_alert_thresholds(text: str, parsed: tuple[float, ...] | None) -> None:
    assert parse_alert_thresholds(text) == parsed


# ---- poll --write --alert-at as a real subprocess ------------------------------------------------


def answer(five: float, resets: str = "2099-01-01T05:00:00Z") -> Any:
    async def handler(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.json_response(
            {
                "five_hour": {"utilization": five, "resets_at": resets},
                "seven_day": {"utilization": 10.0, "resets_at": "2099-01-05T00:00:00Z"},
            }
        )

    return handler


def fake_notify_send(bin_dir: Path, log: Path) -> None:
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "notify-send"
    tool.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> {log}\necho >> {log}\n')
    tool.chmod(0o755)


async def test_poll_fires_each_crossing_once_through_every_channel(
    home: Home, server: UsageServer, tmp_path: Path
) -> None:
    work = home.add("work")
    hook_log = tmp_path / "hook"
    notify_log = tmp_path / "notify"
    fake_notify_send(tmp_path / "bin", notify_log)
    hook = f"env > {hook_log}.$AGENT_ALERT_THRESHOLD; exit 0"
    env = home.env(
        PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        MY_SERVICE_TOKEN=CANARY,
        AGENT_ALERT_EXEC=hook,
    )
    server.handler = answer(85.0)
    run = await home.run("poll", "--write", "--alert-at", "80,95", env=env)
    assert run.code == 0
    assert run.err == (
        "account-cli: work: five_hour at 85% (crossed 80%), resets 2099-01-01T05:00:00Z\n"
    )
    hook_env = dict(
        line.split("=", 1)
        for line in Path(f"{hook_log}.80").read_text().splitlines()
        if "=" in line
    )
    assert {k: v for k, v in hook_env.items() if k.startswith("AGENT_ALERT_")} == {
        "AGENT_ALERT_LABEL": "work",
        "AGENT_ALERT_WINDOW": "five_hour",
        "AGENT_ALERT_PERCENTAGE": "85",
        "AGENT_ALERT_THRESHOLD": "80",
        "AGENT_ALERT_RESETS_AT": "2099-01-01T05:00:00Z",
        "AGENT_ALERT_RESETS_AT_EPOCH": "4070926800",
        "AGENT_ALERT_EXEC": hook,
    }
    assert "MY_SERVICE_TOKEN" not in hook_env
    assert (work / "status-cache" / "usage-alerts.state").exists()  # the README's marks file
    assert notify_log.read_text() == (
        "--app-name=account-cli|--urgency=normal|work: five_hour at 85%|"
        "work: five_hour at 85% (crossed 80%), resets 2099-01-01T05:00:00Z|\n"
    )

    # The next timer tick, still above: nothing repeats.
    run = await home.run("poll", "--write", "--alert-at", "80,95", env=env)
    assert (run.code, run.err) == (0, "")
    assert len(notify_log.read_text().splitlines()) == 1

    server.handler = answer(96.0)
    run = await home.run("poll", "--write", "--alert-at", "80,95", env=env)
    assert run.err.startswith("account-cli: work: five_hour at 96% (crossed 95%)")
    assert Path(f"{hook_log}.95").exists()

    # A new window period: the first crossing in it fires again.
    server.handler = answer(81.0, "2099-01-01T10:00:00Z")
    Path(f"{hook_log}.80").unlink()
    run = await home.run("poll", "--write", "--alert-at", "80,95", env=env)
    assert run.err.startswith("account-cli: work: five_hour at 81% (crossed 80%)")
    assert Path(f"{hook_log}.80").exists()
    for log in tmp_path.glob("hook.*"):
        assert CANARY not in log.read_text()
        log.unlink()  # the parent's other variables are the user's own


async def test_without_notify_send_and_with_a_failing_hook(
    home: Home, server: UsageServer, tmp_path: Path
) -> None:
    home.add("work")
    bare = tmp_path / "bare"
    bare.mkdir()
    server.handler = answer(99.0)
    env = home.env(PATH=str(bare), AGENT_ALERT_AT="90")  # no notify-send, not even sh on PATH
    run = await home.run("poll", "--write", "--alert-exec", "exit 7", env=env)
    assert run.code == 1
    assert run.err.splitlines() == [
        "account-cli: work: five_hour at 99% (crossed 90%), resets 2099-01-01T05:00:00Z",
        "account-cli: work: alert hook failed: exit 7",
    ]
    assert run.lines == ["work: five_hour 99%, seven_day 10%"]


async def test_the_journal_gets_a_warning_line(
    home: Home, server: UsageServer, tmp_path: Path
) -> None:
    import asyncio

    home.add("work")
    server.handler = answer(97.0)
    journal = tmp_path / "journal"
    with journal.open("wb") as stream:
        st = os.fstat(stream.fileno())
        env = home.env(JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}", PATH="/nonexistent")
        proc = await asyncio.create_subprocess_exec(
            account_cli(),
            "poll",
            "--write",
            "--alert-at",
            "95",
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stream,
        )
        assert await asyncio.wait_for(proc.wait(), 60) == 0
    assert journal.read_text().startswith("<4>account-cli: work: five_hour at 97% (crossed 95%)")


@pytest.mark.parametrize(
    ("args", "env", "problem"),
    [
        (["--alert-at", "80"], {}, "--alert-at needs --write"),
        (["--write", "--alert-at", "80,x"], {}, "argument --alert-at: not a list of percentages"),
        (["--write"], {"AGENT_ALERT_AT": "200"}, "AGENT_ALERT_AT: not a list of percentages"),
        (["--write", "--alert-exec", "true"], {}, "--alert-exec needs --alert-at"),
        (
            ["--write", "--alert-at", "80", "--alert-at", "90"],
            {},
            "argument --alert-at: given twice",
        ),
        (["--max-age", "5", "--max-age", "6"], {}, "argument --max-age: given twice"),
    ],
)
async def test_alert_usage_errors(
    home: Home, args: list[str], env: dict[str, str], problem: str
) -> None:
    home.add("work")
    run = await home.run("poll", *args, env=home.env(**env))
    assert run.code == 64
    assert run.err.startswith(f"account-cli: {problem}")
