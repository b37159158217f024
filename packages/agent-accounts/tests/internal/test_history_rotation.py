"""White-box: the history's rotation and tail read at a small size (`HISTORY_MAX_BYTES` patched
down, so a few dozen readings rotate it instead of a mebibyte of them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import agent_accounts.io._history as history_module
from accounts_history_support import HISTORY, T0, poll_reading
from accounts_support import check_files, make_profile
from agent_accounts.io import read_usage_history, write_reading


@pytest.fixture
def config(tmp_path: Path) -> Iterator[Path]:
    profile, _ = make_profile(tmp_path / ".agent-profiles", "work", now=T0)
    yield Path(profile.config_dir)
    check_files(tmp_path)


def test_it_rotates_by_size_and_reads_both_files(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "HISTORY_MAX_BYTES", 2048)
    for i in range(60):
        write_reading(config, poll_reading(T0 + i * 60, i))
    current = config / HISTORY
    rotated = current.with_name(current.name + ".1")
    assert current.stat().st_size <= 2048
    assert rotated.stat().st_size <= 2048
    got = read_usage_history(config, now=T0 + 3600)
    assert [r["written_at"] for r in got] == sorted(r["written_at"] for r in got)
    assert got[-1]["rate_limits"]["five_hour"]["used_percentage"] == 59
    assert len(got) < 60  # the oldest went with the rotation before last


def test_a_tail_read_returns_only_the_newest_whole_lines(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "HISTORY_MAX_BYTES", 8192)
    for i in range(60):
        write_reading(config, poll_reading(T0 + i * 60, i))
    now = T0 + 3600
    everything = read_usage_history(config, now=now)
    current = (config / HISTORY).read_bytes()
    # What `best` and `run` read: the newest lines within the tail, each whole, none older.
    tail = read_usage_history(config, now=now, tail_bytes=2048)
    assert 0 < len(tail) < len(current.splitlines())
    assert tail == everything[-len(tail) :]
    assert sum(len(line) + 1 for line in current.splitlines()[-len(tail) :]) <= 2048
    # A tail longer than the current file reaches into the rotated one, newest lines first.
    longer = read_usage_history(config, now=now, tail_bytes=len(current) + 2048)
    assert len(current.splitlines()) < len(longer) < len(everything)
    assert longer == everything[-len(longer) :]
    # A tail longer than both reads them whole.
    assert read_usage_history(config, now=now, tail_bytes=10**6) == everything
    with pytest.raises(ValueError, match="tail_bytes"):
        read_usage_history(config, now=now, tail_bytes=100)
