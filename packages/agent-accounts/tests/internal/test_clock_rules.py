"""The clock rules on injected times: `counted_time`, the ranking of readings dated ahead, and
`RefreshLocks.judge_ahead` (a lock dir whose mtime stays ahead is stale; one rewritten is not)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_accounts.io import read_usage
from agent_accounts.io._lock_dirs import CLOCK_AHEAD_S, lock_paths
from agent_accounts.io._locks import LockHeldError, RefreshLocks
from agent_accounts.io._readings import counted_time

NOW = 1_800_000_000.0
times = st.floats(min_value=NOW - 10 * 86400, max_value=NOW + 10 * 86400)


@given(times, times)
def test_a_reading_never_counts_as_written_more_than_a_minute_ahead(
    written: float, mtime: float
) -> None:
    counted = counted_time(written, mtime, NOW)
    assert counted <= NOW + CLOCK_AHEAD_S
    if written <= NOW + CLOCK_AHEAD_S:
        assert counted == written  # the reading's own date, whichever way the clock went
    else:
        assert counted == min(mtime, NOW)


def plant(config: Path, name: str, written: float, mtime: float, five: float) -> None:
    sessions = config / "status-cache" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    doc = {
        "session_id": name,
        "written_at": written,
        "rate_limits": {"five_hour": {"used_percentage": five}},
    }
    path = sessions / f"{name}.json"
    path.write_text(json.dumps(doc))
    os.utime(path, (mtime, mtime))


def test_a_clock_stepped_back_ranks_a_reading_of_unknown_time_last(tmp_path: Path) -> None:
    # Written at NOW + 2 h by a clock that was ahead (its file too); then a poll at NOW - 60.
    plant(tmp_path, "ahead", NOW + 7200, NOW + 7200, 10)
    plant(tmp_path, "usage-poll", NOW - 60, NOW - 60, 97)
    usage = read_usage(tmp_path, now=NOW)
    assert usage is not None
    assert usage.reading["rate_limits"]["five_hour"]["used_percentage"] == 97
    assert usage.age_seconds == 60
    # Alone, it counts as written now.
    os.unlink(tmp_path / "status-cache/sessions/usage-poll.json")
    alone = read_usage(tmp_path, now=NOW)
    assert alone is not None
    assert (alone.age_seconds, alone.reading["written_at"]) == (0, NOW)


def test_a_reading_from_another_clock_counts_from_its_file(tmp_path: Path) -> None:
    plant(tmp_path, "other-clock", NOW + 7200, NOW - 30, 10)
    plant(tmp_path, "usage-poll", NOW - 60, NOW - 60, 97)
    usage = read_usage(tmp_path, now=NOW)
    assert usage is not None
    assert usage.file.endswith("other-clock.json")  # written 30 s ago, after the poll
    assert usage.age_seconds == 30


def test_a_clock_stepped_forward_keeps_the_order(tmp_path: Path) -> None:
    plant(tmp_path, "a", NOW - 3 * 86400, NOW - 3 * 86400, 1)
    plant(tmp_path, "b", NOW - 2 * 86400, NOW - 2 * 86400, 2)
    usage = read_usage(tmp_path, now=NOW)
    assert usage is not None
    assert usage.file.endswith("b.json")
    assert usage.age_seconds == 2 * 86400


def _locks(config: Path) -> RefreshLocks:
    return RefreshLocks(config_dir=str(config), read_record=lambda path: None)


async def test_a_lock_dir_that_stays_ahead_is_judged_stale(tmp_path: Path) -> None:
    config = tmp_path / "work"
    config.mkdir()
    lock = Path(lock_paths(str(config))[0])
    lock.mkdir()
    os.utime(lock, (NOW * 2, NOW * 2))
    locks = _locks(config)
    await locks.judge_ahead(wait=0.05)
    locks.acquire()
    try:
        assert lock.is_dir()  # ours now
        assert lock.stat().st_mtime < NOW * 2
    finally:
        locks.release()
    assert not lock.exists()


async def test_a_lock_dir_rewritten_meanwhile_is_a_live_holders(tmp_path: Path) -> None:
    config = tmp_path / "work"
    config.mkdir()
    lock = Path(lock_paths(str(config))[0])
    lock.mkdir()
    os.utime(lock, (NOW * 2, NOW * 2))
    locks = _locks(config)

    async def beat() -> None:
        await asyncio.sleep(0.02)
        os.utime(lock)  # the live holder's next beat, with the clock as it now is

    await asyncio.gather(locks.judge_ahead(wait=0.1), beat())
    with pytest.raises(LockHeldError):
        locks.acquire()
    assert lock.is_dir()
