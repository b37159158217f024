"""`read_usage_history(..., tail_bytes=, older_lines=)`, what `best` and `run` read at start-up:
every line of the newest `tail_bytes` (the current window, dense) and at most `older_lines` of
the rest, evenly spaced with the newest of each stride kept (the days of rhythm a forecast goes
by), at a bounded cost whatever the history's size."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import pytest

from accounts_support import check_files, make_profile
from agent_accounts import UsageReading
from agent_accounts.io import read_usage_history, write_reading

T0 = 1_800_000_000.0
LINES = 300


def reading(t: float, five: float) -> dict[str, object]:
    return {
        "session_id": "usage-poll",
        "written_at": t,
        "rate_limits": {"five_hour": {"used_percentage": five, "resets_at": T0 + 86400}},
        "source": "oauth-usage",
    }


@pytest.fixture
def config(tmp_path: Path) -> Path:
    profile, _ = make_profile(tmp_path / ".agent-profiles", "work", now=T0)
    config = Path(profile.config_dir)
    for i in range(LINES):
        write_reading(config, reading(T0 + i * 150, i / 10))
    return config


def times(readings: Sequence[UsageReading]) -> list[float]:
    return [r["written_at"] for r in readings]


def test_the_tail_is_whole_and_the_rest_thinned_evenly(config: Path, tmp_path: Path) -> None:
    now = T0 + LINES * 150
    everything = times(read_usage_history(config, now=now))
    assert len(everything) == LINES
    tail = times(read_usage_history(config, now=now, tail_bytes=4096))
    got = times(read_usage_history(config, now=now, tail_bytes=4096, older_lines=20))
    assert got[-len(tail) :] == tail  # the dense tail, every line of it
    older = got[: -len(tail)]
    assert 0 < len(older) <= 20
    assert set(older) <= set(everything[: -len(tail)])
    assert older[-1] == everything[-len(tail) - 1]  # the newest of the rest is kept
    gaps = {round(b - a) for a, b in itertools.pairwise(older)}
    assert len(gaps) == 1  # evenly spaced
    assert times(read_usage_history(config, now=now, tail_bytes=4096, older_lines=0)) == tail
    big = read_usage_history(config, now=now, tail_bytes=4096, older_lines=LINES)
    assert times(big) == everything
    check_files(tmp_path)


def test_a_negative_older_lines_is_refused(config: Path) -> None:
    with pytest.raises(ValueError, match="older_lines"):
        read_usage_history(config, now=T0, tail_bytes=4096, older_lines=-1)
