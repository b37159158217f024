"""Freshness: the reading that lets `poll --max-age` or `poll --period` skip a profile, and what
is dated ahead.

A poll is skipped only when a fresh reading carries every window the poll would write (those
of the poller's last reading, `usage-poll.json`; with none on disk the poll is never skipped,
since what it would write is unknown) and every window an alert watches (each window an alert
mark names, when alerts are on). A status-line session's reading carries only `five_hour` and
`seven_day`, so with per-model windows (`seven_day_opus`) only the poller's own reading can
skip a poll: skipping on a session reading would stop every per-model reading and alert.
`poll --period` lets a session's reading skip it while those per-model windows are at most ten
minutes old (`period_skip_reading`): one request per account in use per ten minutes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from agent_accounts._best import FRESH_READING_S
from agent_accounts._types import UsageReading

from ._alerts import read_alert_marks
from ._lock_dirs import lock_ahead
from ._readings import (
    USAGE_FILE,
    clock_ahead,
    fresh_reading,
    poll_windows,
    sessions_dir,
    windows_by_newest,
)

__all__ = ["clock_ahead_notes", "older_windows", "period_skip_reading", "poll_skip_reading"]

_SESSION_WINDOWS = ("five_hour", "seven_day")
"""The windows a status-line session's reading carries."""


def older_windows(
    config_dir: str, *, shown: Iterable[str], now: float
) -> dict[str, dict[str, float]]:
    """Return the windows the newest reading lacks, each from the newest reading carrying it.

    `status` shows the newest reading; a status-line session's carries only `five_hour` and
    `seven_day`, so the per-model windows (`seven_day_opus`) come from the poller's older one,
    each with `used_percentage`, `resets_at` when known and `age_seconds`.
    """
    have = set(shown)
    older: dict[str, dict[str, float]] = {}
    for name, (window, written, _) in windows_by_newest(config_dir, now=now).items():
        if name not in have:
            entry: dict[str, float] = {"used_percentage": window["used_percentage"]}
            if "resets_at" in window:
                entry["resets_at"] = window["resets_at"]
            entry["age_seconds"] = max(0, math.floor(now - written))
            older[name] = entry
    return older


def _span(seconds: float) -> str:
    """`2h00m`, `5m03s` or `42s`, to the nearest minute past an hour."""
    if seconds >= 3570:
        minutes = round(seconds / 60)
        return f"{minutes // 60}h{minutes % 60:02d}m"
    whole = round(seconds)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


def clock_ahead_notes(config_dir: str, *, now: float) -> list[str]:
    """Say what in a profile is dated more than a minute ahead of `now`, one phrase each.

    Readings so dated count as written when their file was, or now (`counted_time`); a lock dir
    so dated is stale once it stays ahead (`RefreshLocks.judge_ahead`). `status` prints these
    once per profile (`clock ahead: ...`), so a clock stepped back is seen, not guessed.
    """
    notes = []
    readings = clock_ahead(config_dir, now=now)
    if readings:
        names = ", ".join(name for name, _ in readings)
        most = max(ahead for _, ahead in readings)
        notes.append(
            f"{len(readings)} reading(s) dated up to {_span(most)} ahead ({names}), "
            "counted as written when their file was, or now"
        )
    lock = lock_ahead(config_dir, now)
    if lock is not None:
        notes.append(
            f"refresh lock dated {_span(lock)} ahead, taken over by the next refresh "
            "if it stays ahead"
        )
    return notes


def poll_skip_reading(
    config_dir: str, *, max_age: float, now: float, alerting: bool
) -> tuple[UsageReading, int] | None:
    """Return the reading (and its age) that lets `poll --max-age` skip this profile, or None."""
    if not os.path.lexists(os.path.join(sessions_dir(config_dir), USAGE_FILE)):
        return None  # the poll's windows are unknown until it has written once
    needed = set(poll_windows(config_dir))
    if alerting:
        needed.update(read_alert_marks(config_dir))
    return fresh_reading(config_dir, max_age=max_age, now=now, windows=sorted(needed))


def period_skip_reading(
    config_dir: str, *, max_age: float, now: float, alerting: bool
) -> tuple[UsageReading, int] | None:
    """Return the reading (and its age) that lets `poll --period` skip this profile, or None.

    A reading younger than `max_age` (the period, or `--max-age`) that carries the windows a
    session reports (`five_hour`, `seven_day`, those of them the poll writes) is the account's
    truth, a status-line session's as much as the poller's own, while every window the poll
    writes (and every window an alert marks) is at most `FRESH_READING_S` (10 minutes) old: so
    an account in use is polled once per ten minutes, for its per-model windows, and one no
    session uses is polled every period.
    A reading whose date cannot be told never skips (`fresh_reading`).
    """
    if not os.path.lexists(os.path.join(sessions_dir(config_dir), USAGE_FILE)):
        return None  # the poll's windows are unknown until it has written once
    needed = set(poll_windows(config_dir))
    if alerting:
        needed.update(read_alert_marks(config_dir))
    if fresh_reading(config_dir, max_age=FRESH_READING_S, now=now, windows=sorted(needed)) is None:
        return None
    main = [w for w in _SESSION_WINDOWS if w in needed] or sorted(needed)
    return fresh_reading(config_dir, max_age=max_age, now=now, windows=main)
