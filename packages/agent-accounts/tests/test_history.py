"""Usage history: every stored reading appended, bounded, gated on read; `account-cli history`.

History survives a kill -9 during appends (every line whole) and a full disk (the poll still
succeeds); a planted file is never written through nor read; the CLI runs as a subprocess.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accounts_disk_support import fill_leaving, small_tmpfs
from accounts_history_support import HISTORY, T0, poll_reading
from accounts_support import (
    CANARY,
    account_cli,
    check_files,
    env_without_profiles,
    make_profile,
)
from agent_accounts.io import (
    read_usage_history,
    write_reading,
    write_session_reading,
)


@pytest.fixture
def config(tmp_path: Path) -> Iterator[Path]:
    profile, _ = make_profile(tmp_path / ".agent-profiles", "work", now=T0)
    yield Path(profile.config_dir)
    check_files(tmp_path)


def lines_of(config: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (config / HISTORY).read_text().splitlines()]


def test_each_stored_reading_is_appended_and_read_back_in_order(config: Path) -> None:
    write_reading(config, poll_reading(T0, 10))
    write_reading(config, poll_reading(T0 + 150, 12, seven_day_opus=3))
    session = poll_reading(T0 + 200, 13) | {"session_id": "s1", "source": "statusline"}
    write_session_reading(config, "s1", session)
    got = read_usage_history(config, now=T0 + 300)
    assert [r["written_at"] for r in got] == [T0, T0 + 150, T0 + 200]
    assert got[1]["rate_limits"]["seven_day_opus"] == {"used_percentage": 3}
    assert got[2]["source"] == "statusline"
    assert os.stat(config / HISTORY).st_mode & 0o777 == 0o600
    assert read_usage_history(config, now=T0 + 300, since=T0 + 100) == got[1:]


def test_an_unchanged_reading_is_kept_once_per_ten_minutes(config: Path) -> None:
    for i in range(8):  # the same windows every 150 s for 17.5 minutes
        write_reading(config, poll_reading(T0 + i * 150, 10))
    assert [line["written_at"] for line in lines_of(config)] == [T0, T0 + 600]
    write_reading(config, poll_reading(T0 + 1300, 11))  # a change is always kept
    assert len(lines_of(config)) == 3


def test_the_clock_moved_back_and_forth(config: Path) -> None:
    write_reading(config, poll_reading(T0, 10))
    write_reading(config, poll_reading(T0 + 7200, 30))  # written by a clock two hours ahead
    write_reading(config, poll_reading(T0 + 300, 12))  # the clock stepped back since
    # Read at T0 + 600: the reading dated ahead cannot be placed, so it is left out.
    assert [r["written_at"] for r in read_usage_history(config, now=T0 + 600)] == [T0, T0 + 300]
    # Read once the clock has passed it: all three, in time order.
    later = read_usage_history(config, now=T0 + 7200)
    assert [r["written_at"] for r in later] == [T0, T0 + 300, T0 + 7200]


def test_a_planted_history_is_never_written_through_nor_read(config: Path, tmp_path: Path) -> None:
    write_reading(config, poll_reading(T0, 10))
    target = tmp_path / "elsewhere"
    target.write_text("")
    history = config / HISTORY
    history.unlink()
    history.symlink_to(target)
    write_reading(config, poll_reading(T0 + 60, 11))  # the reading itself is stored
    assert target.read_text() == ""
    assert read_usage_history(config, now=T0 + 600) == []
    history.unlink()
    history.write_text(json.dumps(poll_reading(T0, 1)) + "\n")
    history.chmod(0o644)  # group- and world-readable: not this library's file
    write_reading(config, poll_reading(T0 + 120, 12))
    assert len(history.read_text().splitlines()) == 1
    assert read_usage_history(config, now=T0 + 600) == []


def test_a_bad_line_is_skipped_and_the_next_append_starts_a_new_one(config: Path) -> None:
    write_reading(config, poll_reading(T0, 10))
    with open(config / HISTORY, "ab") as handle:
        handle.write(b'{"session_id": "usage-poll", "written_at": 18')  # cut short
    write_reading(config, poll_reading(T0 + 60, 11))
    raw = (config / HISTORY).read_bytes().splitlines()
    assert len(raw) == 3
    got = read_usage_history(config, now=T0 + 600)
    assert [r["written_at"] for r in got] == [T0, T0 + 60]


APPENDER = """
import sys, time
from agent_accounts.io import write_reading
config, n = sys.argv[1], int(sys.argv[2])
t = 1_800_000_000.0 + n * 1000
i = 0
while True:
    i += 1
    write_reading(config, {"session_id": "usage-poll", "written_at": t + i,
                           "rate_limits": {"five_hour": {"used_percentage": i % 100}}})
"""


def test_kill_9_during_appends_leaves_every_line_whole(config: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(config), str(n)]) for n in range(4)
    ]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until each has appended a few hundred lines
            if (config / HISTORY).exists() and len((config / HISTORY).read_bytes()) > 60_000:
                break
            time.sleep(0.05)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.wait(timeout=30)
    raw = (config / HISTORY).read_bytes()
    assert raw.endswith(b"\n")
    for line in raw.splitlines():
        json.loads(line)  # every line whole
    assert len(read_usage_history(config, now=T0 + 10**6)) == len(raw.splitlines())


@pytest.mark.parametrize("free_pages", [0, 1])
def test_a_full_disk_keeps_the_reading_and_every_history_line_whole(
    tmp_path: Path, free_pages: int
) -> None:
    with small_tmpfs(tmp_path / "disk", size="256k") as disk:
        profile, _ = make_profile(disk, "work", now=T0)
        config = Path(profile.config_dir)
        write_reading(config, poll_reading(T0, 10))
        fill_leaving(disk, free_pages)
        written = 0
        for i in range(1, 200):
            try:
                write_reading(config, poll_reading(T0 + i * 60, 10 + i % 90))
                written += 1
            except OSError:
                break  # the reading's own write found the disk full: that is the poll's error
        (disk / "filler").unlink()
        write_reading(config, poll_reading(T0 + 20_000, 99))  # room again: appends resume
        got = read_usage_history(config, now=T0 + 30_000)
        assert got[0]["written_at"] == T0
        assert got[-1]["rate_limits"]["five_hour"]["used_percentage"] == 99
        # Every line is whole but lines a full disk cut short, which the reader skipped.
        whole = [line for line in (config / HISTORY).read_bytes().splitlines() if line]
        assert len(got) <= len(whole) <= len(got) + written


# --- account-cli history --------------------------------------------------------------------


def cli(home: Path, *args: str, tty: bool = False) -> tuple[int, str, str]:
    env = env_without_profiles(home, COLUMNS="120")
    if not tty:
        done = subprocess.run(
            [account_cli(), *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert "Traceback" not in done.stdout + done.stderr
        assert CANARY not in done.stdout + done.stderr
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [account_cli(), *args], env=env, stdout=follower, stderr=subprocess.PIPE, text=False
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, b"".join(chunks).decode(), err.decode()


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "home"
    now = time.time()
    for name, start in (("work", 20.0), ("spare", 5.0)):
        profile, _ = make_profile(path / ".agent-profiles", name, now=now)
        for i in range(13):  # the last hour, every five minutes
            t = now - 3600 + i * 300
            doc = {
                "session_id": "usage-poll",
                "written_at": t,
                "source": "oauth-usage",
                "rate_limits": {
                    "five_hour": {"used_percentage": start + i * 5, "resets_at": now + 2 * 3600},
                    "seven_day": {"used_percentage": 30.0, "resets_at": now + 3 * 86400},
                },
            }
            write_reading(profile.config_dir, doc)
    yield path
    check_files(tmp_path)


def test_history_prints_a_table_and_forecasts(home: Path) -> None:
    code, out, err = cli(home, "history", "work")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "work: 13 reading(s)"
    assert re.fullmatch(r"  time +five_hour +seven_day +source", lines[1])
    assert re.fullmatch(r"  \S+Z +20% +30% +oauth-usage", lines[2])
    assert re.fullmatch(r"  \S+Z +80% +30% +oauth-usage", lines[14])
    # 60 points in an hour: 100% in another 20 minutes, well before the reset.
    match = re.fullmatch(r"  five_hour: full at (\S+) \((\S+) \.\. (\S+)\)", lines[15])
    assert match, lines[15]
    full = time.mktime(time.strptime(match[1], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert abs(full - (time.time() + 20 * 60)) < 180
    assert lines[16].startswith("  seven_day: not full before its reset")


def test_history_json_window_since_and_every_profile(home: Path) -> None:
    code, out, _ = cli(home, "history", "--json", "--window", "five_hour", "--since", "30m")
    assert code == 0
    doc = json.loads(out)
    assert [p["label"] for p in doc["profiles"]] == ["spare", "work"]
    work = doc["profiles"][1]
    assert 6 <= len(work["readings"]) <= 7  # the last half hour of the hour
    assert all(set(r["rate_limits"]) == {"five_hour"} for r in work["readings"])
    assert set(work["forecast"]) == {"five_hour"}
    assert work["forecast"]["five_hour"]["rate_per_hour"] == pytest.approx(60, rel=0.01)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 60))
    code, out, _ = cli(home, "history", "work", "--json", "--since", since)
    assert json.loads(out)["profiles"][0]["readings"] == []


def test_history_on_a_terminal_draws_sparklines(home: Path) -> None:
    code, out, err = cli(home, "history", "spare", tty=True)
    assert (code, err) == (0, "")
    lines = out.replace("\r\n", "\n").splitlines()
    assert lines[0] == "spare: 13 reading(s)"
    assert re.fullmatch(r"  five_hour [▁▂▃▄▅▆▇█]{13} 65% now; full at \S+ \(.+\)", lines[1])
    assert lines[2].startswith("  seven_day ▃▃▃▃▃▃▃▃▃▃▃▃▃ 30% now; not full before its reset")


@pytest.mark.parametrize(
    ("args", "code", "problem"),
    [
        (["history", "nope"], 2, "account-cli: no profile labelled 'nope'"),
        (["history", "--since", "yesterday"], 64, "account-cli: argument --since: not a time"),
        (["history", "--since=-5m"], 64, "account-cli: argument --since: not a time"),
        (["history", "--window", "Five"], 64, "account-cli: argument --window: not a window name"),
        (["history", "--json", "--json"], 64, "account-cli: argument --json: given twice"),
    ],
)
def test_history_refusals(home: Path, args: list[str], code: int, problem: str) -> None:
    got, out, err = cli(home, *args)
    assert (got, out) == (code, "")
    assert err.startswith(problem)
