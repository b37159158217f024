"""The parsed history `poll --write` stores for `best` and `run` (`io._history_summary`).

With the summary, the same readings reach the forecast as from the history files, so the same
account is chosen with the same headroom (the property test, over random histories with their
thinning, lines dated ahead, junk lines, a rotated file and lines appended after the summary
was stored); the summary holds while lines are appended within its frame (they are read on
top of it) and not past it; one cut short at any byte, altered or planted is not used.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts_disk_support import fill_leaving, small_tmpfs
from accounts_history_support import HISTORY, T0, poll_reading
from accounts_support import CANARY, exception_text, make_profile
from agent_accounts import UsageReading
from agent_accounts._best import FRESH_READING_S, rank_rows
from agent_accounts._forecast import forecast_window
from agent_accounts.io import _gate, read_usage_history, write_reading
from agent_accounts.io import _history_summary as summary_module
from agent_accounts.io._choice import profile_rows, store_choice_summary
from agent_accounts.io._history import HISTORY_FILE, framed_history, history_line
from agent_accounts.io._history_summary import (
    FRAME_BYTES,
    SUMMARY_FILE,
    SUMMARY_SESSION,
    read_weighed_history,
    store_history_summary,
)

SUMMARY = Path("status-cache") / SUMMARY_FILE
WINDOWS = ("five_hour", "seven_day")


def seen(readings: list[UsageReading]) -> list[tuple[float, object]]:
    """What the forecast reads of each reading, in order."""
    return [(r["written_at"], r["rate_limits"]) for r in readings]


def weighed(config: Path, now: float, tail: int = 32 * 1024, older: int = 96) -> list[UsageReading]:
    return read_weighed_history(
        str(config), now=now, since=now - 7 * 86400, tail_bytes=tail, older_lines=older
    )


def from_files(
    config: Path, now: float, tail: int = 32 * 1024, older: int = 96
) -> list[UsageReading]:
    return read_usage_history(
        config, now=now, since=now - 7 * 86400, tail_bytes=tail, older_lines=older
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    profile, _ = make_profile(tmp_path / ".agent-profiles", "work", now=T0)
    config = Path(profile.config_dir)
    for i in range(40):
        write_reading(config, poll_reading(T0 + i * 150, i / 2, 10 + i / 8))
    return config


LINE = st.tuples(
    st.floats(0, 8 * 86400),  # seconds after T0
    st.one_of(st.integers(0, 100), st.floats(0, 100)),
    st.one_of(st.integers(0, 100), st.floats(0, 100)),
    st.sampled_from([None, 3600.0, 5 * 3600.0]),  # five_hour's reset after T0 (None: no reset)
    st.booleans(),  # junk instead of the line
)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=os.environ.get("CI") == "true",
)
@given(
    lines=st.lists(LINE, min_size=10, max_size=120),  # frames of 1 KiB hold about 6
    rotated=st.integers(0, 60),
    appended=st.integers(0, 20),  # of the lines, how many are appended after the poll
    tail=st.sampled_from([2048, 4096, 32 * 1024]),
    frame=st.sampled_from([1024, 4096]),
    older=st.integers(0, 12),
    now=st.floats(0, 9 * 86400),
)
def test_the_summary_gives_the_forecast_what_the_history_gives(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[tuple[float, float, float, float | None, bool]],
    rotated: int,
    appended: int,
    tail: int,
    frame: int,
    older: int,
    now: float,
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(summary_module, "FRAME_BYTES", frame)  # a frame of fewer lines
        since = max(rotated, len(lines) - appended)
        check_summary(tmp_path_factory, lines, rotated, since, tail, older, now)


def check_summary(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[tuple[float, float, float, float | None, bool]],
    rotated: int,
    appended: int,
    tail: int,
    older: int,
    now: float,
) -> None:
    config = tmp_path_factory.mktemp("config")
    data = []
    for t, five, week, reset, junk in lines:
        five_hour = {"used_percentage": five} | ({} if reset is None else {"resets_at": T0 + reset})
        limits = {"five_hour": five_hour, "seven_day": {"used_percentage": week, "resets_at": T0}}
        line = history_line(
            {"session_id": "usage-poll", "written_at": T0 + t, "rate_limits": limits}  # type: ignore[typeddict-item]
        )
        assert line is not None
        data.append(b'{"written_at": 1}\n' if junk else line)
    (config / "status-cache").mkdir(mode=0o700)
    (config / HISTORY.with_suffix(".jsonl.1")).write_bytes(b"".join(data[:rotated]))
    (config / HISTORY).write_bytes(b"".join(data[rotated:appended]))
    for path in (config / "status-cache").iterdir():
        path.chmod(0o600)
    assert store_history_summary(str(config), tail_bytes=tail, older_lines=older)
    stored_at = (config / HISTORY).stat().st_size
    with (config / HISTORY).open("ab") as log:  # lines appended since the poll stored it
        log.write(b"".join(data[appended:]))
    grain = summary_module.FRAME_BYTES
    holds = (config / HISTORY).stat().st_size // grain == stored_at // grain
    got = weighed(config, T0 + now, tail, older)
    # While the file grew within its frame, every reading of the frame came from the summary
    # and every later one from the file; past it, none came from the summary.
    everything = read_weighed_history(
        str(config), now=T0 + 30 * 86400, since=0.0, tail_bytes=tail, older_lines=older
    )
    cache = str(config / "status-cache")
    frame, after, _, _ = framed_history(
        cache, uid=os.getuid(), tail_bytes=tail, older_lines=older, frame_bytes=grain
    )
    from_summary = sum(r["session_id"] == SUMMARY_SESSION for r in everything)
    assert from_summary == (len(frame) if holds else 0)
    assert len(everything) == len(frame) + len(after)
    (config / SUMMARY).unlink()
    expected = weighed(config, T0 + now, tail, older)  # the history itself
    assert seen(got) == seen(expected)
    for name in WINDOWS:
        assert forecast_window(name, got, T0 + now) == forecast_window(name, expected, T0 + now)
    # Every line of the newest `tail` bytes is weighed (the lines before are a thinned few).
    newest = read_usage_history(config, now=T0 + now, since=T0 + now - 7 * 86400, tail_bytes=tail)
    assert all(item in seen(got) for item in seen(newest))


def test_best_and_run_rank_the_same_with_and_without_the_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three accounts over two days of readings (a day's rhythm, a straight climb, a flat one):
    the rows `best` and `run` rank and their verdict are the same, summaries stored or not."""
    configs = []
    for name, pace in (("a", 9.0), ("b", 12.0), ("c", 0.0)):
        profile, _ = make_profile(tmp_path / ".agent-profiles", name, now=T0)
        config = Path(profile.config_dir)
        lines = []
        for k in range(2 * 24 * 6):  # every ten minutes for two days, idle at night
            t = T0 - 2 * 86400 + k * 600
            hour = t % 86400 / 3600
            used = min(100.0, (t % (5 * 3600)) / 3600 * pace) if 8 <= hour < 18 else 1.0
            lines.append(history_line(poll_reading(t, round(used), 20 + k / 100)))  # type: ignore[arg-type]
        (config / "status-cache").mkdir(mode=0o700)
        (config / HISTORY).write_bytes(b"".join(line or b"" for line in lines))
        (config / HISTORY).chmod(0o600)
        write_reading(config, poll_reading(T0, 50, 22))
        configs.append(str(config))
    monkeypatch.setenv("AGENT_CONFIG_DIRS", os.pathsep.join(configs))
    now = T0 + 240
    before = profile_rows(WINDOWS, now=now)
    assert all(store_choice_summary(config) for config in configs)
    assert all(weighed(Path(c), now)[0]["session_id"] == SUMMARY_SESSION for c in configs)
    after = profile_rows(WINDOWS, now=now)
    assert after == before
    for full_at in (100.0, 90.0, 50.0):
        verdict = rank_rows(after[1], now, WINDOWS, FRESH_READING_S, full_at)
        assert verdict == rank_rows(before[1], now, WINDOWS, FRESH_READING_S, full_at)


def test_lines_appended_within_the_frame_are_read_on_top_of_the_summary(config: Path) -> None:
    for i in range(40, 120):  # 120 lines: the current file past its first frame
        write_reading(config, poll_reading(T0 + i * 150, i / 4, 10 + i / 8))
    assert store_choice_summary(str(config))
    size = (config / HISTORY).stat().st_size
    assert size >= FRAME_BYTES
    write_reading(config, poll_reading(T0 + 120 * 150, 31))
    got = weighed(config, T0 + 20000)
    assert got[0]["session_id"] == SUMMARY_SESSION  # the summary still holds
    assert got[-1]["session_id"] == "usage-poll"  # the line appended since, read on top
    assert got[-1]["rate_limits"]["five_hour"]["used_percentage"] == 31
    summary = (config / SUMMARY).read_bytes()
    (config / SUMMARY).unlink()
    assert seen(weighed(config, T0 + 20000)) == seen(got)  # as the history itself gives
    (config / SUMMARY).write_bytes(summary)
    (config / SUMMARY).chmod(0o600)
    i = 121
    while (config / HISTORY).stat().st_size // FRAME_BYTES == size // FRAME_BYTES:
        write_reading(config, poll_reading(T0 + i * 150, i / 4))  # into the next frame
        i += 1
    got = weighed(config, T0 + 30000)
    assert {r["session_id"] for r in got} == {"usage-poll"}  # no longer holds: the history
    assert store_choice_summary(str(config))  # the next poll stores it again
    assert weighed(config, T0 + 30000)[0]["session_id"] == SUMMARY_SESSION
    assert seen(weighed(config, T0 + 30000)) == seen(got)


def test_a_line_torn_across_the_frame_edge_is_not_read_on_top(config: Path) -> None:
    for i in range(40, 120):
        write_reading(config, poll_reading(T0 + i * 150, i / 4, 10 + i / 8))
    size = (config / HISTORY).stat().st_size
    edge = (size // FRAME_BYTES + 1) * FRAME_BYTES
    with (config / HISTORY).open("ab") as log:  # a full disk cut a line that crosses the edge
        log.write(b'{"session_id": "usage-poll", "written_at": ' + b" " * (edge - size))
    assert store_choice_summary(str(config))  # its frame ends where the file does
    with (config / HISTORY).open("ab") as log:  # the next line lands on the torn one
        log.write(history_line(poll_reading(T0 + 121 * 150, 40)) or b"")  # type: ignore[arg-type]
    got = weighed(config, T0 + 20000)
    assert {r["session_id"] for r in got} == {"usage-poll"}  # no line ends at the frame's end
    assert all(r["rate_limits"]["five_hour"]["used_percentage"] != 40 for r in got)


def test_a_line_appended_while_the_lines_on_top_are_read_is_not_missed(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(40, 120):
        write_reading(config, poll_reading(T0 + i * 150, i / 4, 10 + i / 8))
    assert store_choice_summary(str(config))
    write_reading(config, poll_reading(T0 + 120 * 150, 41))
    appended: list[str] = []

    def append(path: str) -> None:  # between the history's lstat and its read
        if path.endswith(HISTORY_FILE) and not appended:
            appended.append(path)
            write_reading(config, poll_reading(T0 + 121 * 150, 42))

    monkeypatch.setattr(_gate, "after_lstat", append)
    got = weighed(config, T0 + 20000)
    assert appended
    used = [r["rate_limits"]["five_hour"]["used_percentage"] for r in got[-2:]]
    assert used == [41, 42]  # the line read on top was not shifted out by the new one


def test_no_cut_short_or_altered_summary_is_used(config: Path) -> None:
    for i in range(40, 120):  # the current file past its first frame
        write_reading(config, poll_reading(T0 + i * 150, i / 4, 10 + i / 8))
    expected = seen(weighed(config, T0 + 20000))
    assert store_choice_summary(str(config))
    path = config / SUMMARY
    whole = path.read_bytes()
    doc = json.loads(whole)
    rows, current, end = doc["readings"], doc["key"][-2], doc["end"]  # its frame is third
    altered = [
        {**doc, "key": [*doc["key"][:-2], [*current[:2], current[2] - 1, *current[3:]], None]},
        {**doc, "end": end - 1},
        {**doc, "end": end + 1},
        {**doc, "end": str(end)},
        {**doc, "end": -1},
        {"key": doc["key"], "readings": rows},
        {**doc, "readings": [*rows[:-1], [rows[-1][0], [["five_hour", 101, None]]]]},
        {**doc, "readings": [*rows[:-1], [rows[-1][0], [["five_hour", "9", None]]]]},
        {**doc, "readings": [*rows[:-1], [str(rows[-1][0]), rows[-1][1]]]},
        {**doc, "readings": [*rows[:-1], [rows[-1][0], []]]},
        {**doc, "readings": [*rows[:-1], [rows[-1][0], [["Five", 1, None]]]]},
        {**doc, "readings": [*rows[:-1], [rows[-1][0], [["five_hour", 1, None]] * 2]]},
        {**doc, "readings": {}},
        [doc],
    ]
    cuts = [*range(0, len(whole) - 64, 61), *range(len(whole) - 64, len(whole))]
    variants = [whole[:cut] for cut in cuts]
    variants += [json.dumps(v).encode() for v in altered]
    variants.append(whole.replace(b"]]]]}", b"]]],[NaN,[]]]}"))
    for data in variants:
        path.write_bytes(data)
        got = weighed(config, T0 + 20000)
        assert seen(got) == expected
        assert got[0]["session_id"] == "usage-poll", data[-60:]
    path.write_bytes(whole)
    assert weighed(config, T0 + 20000)[0]["session_id"] == SUMMARY_SESSION
    path.chmod(0o644)  # not owner-only: refused by the gate
    assert weighed(config, T0 + 20000)[0]["session_id"] == "usage-poll"
    path.unlink()
    path.symlink_to(config / HISTORY)
    assert weighed(config, T0 + 20000)[0]["session_id"] == "usage-poll"
    history = (config / HISTORY).read_bytes()
    assert store_choice_summary(str(config))  # replaces the planted symlink, never follows it
    assert (config / HISTORY).read_bytes() == history
    assert not path.is_symlink()
    assert weighed(config, T0 + 20000)[0]["session_id"] == SUMMARY_SESSION


def test_a_full_disk_stores_no_summary_and_leaves_nothing_behind(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "disk", size="256k") as disk:
        profile, _ = make_profile(disk, "work", now=T0)
        config = Path(profile.config_dir)
        for i in range(40):
            write_reading(config, poll_reading(T0 + i * 150, i / 2))
        fill_leaving(disk, 0)
        assert not store_choice_summary(str(config))
        assert sorted(p.name for p in (config / "status-cache").iterdir()) == [
            "sessions",
            "usage-history.jsonl",
        ]
        assert seen(weighed(config, T0 + 7000)) == seen(from_files(config, T0 + 7000))


def test_an_unexpected_read_error_is_redacted_without_a_chain(tmp_path: Path) -> None:
    # A path component over NAME_MAX: lstat fails with ENAMETOOLONG, quoting the path.
    config = tmp_path / (f"sk-ant-oat01-{CANARY}" + "a" * 300)
    for read in (weighed, from_files):
        with pytest.raises(OSError) as caught:
            read(config, T0)
        assert caught.value.__cause__ is None
        assert caught.value.__context__ is None
        assert CANARY not in exception_text(caught.value)
