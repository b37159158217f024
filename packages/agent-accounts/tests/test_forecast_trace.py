"""The forecast over forty replayed weeks: issue 28's "within 10%", on more than one trace.

`test_replay` drives the CLI through one week (seed 28). This drives `window_forecast` through
forty (seeds 0-39), in-process: the same three accounts' traces (`accounts_trace`), read at the
replay timer's times (every half hour from 07:00 to 23:00, and a poll period before each of the
machine's sessions starts) in whole percents, as the endpoint gives them. At half of each window
that fills later (after the first day: no daily rhythm before it), the forecast is measured
against the window's true fill, as a share of the time left to it:

- strictly: how far from the time it filled;
- beyond what the history cannot tell: how far outside the times the trace could have filled
  at from the same history (`fill_range`: bursts in phase or flipped, blocks not yet started at
  their earliest or latest). A forecast that the window does not fill counts as its reset.

Measured (printed with `-s`): 263 windows, the median strict error 2.6%; 31 off by over 10%
strictly and 4 beyond what the history tells, all four on a Tuesday, when the history holds a
single day: a five-hour window that filled at 18:59, a minute before the working day ends, given
as not filling (3% short by then); one given as filling at 11:58, two minutes before lunch, that
was at 95% at noon and filled after it; one given as filling at 12:53, inside the lunch break
(Monday filled then, so the profile counts that half hour busy); and one six minutes late, 10.5%.
"""

from __future__ import annotations

import calendar
import statistics
import sys

from accounts_trace import (
    DAY,
    FIVE_H,
    WEEK,
    Accounts,
    account_trace,
    fill_range,
    week_of_sessions,
)
from agent_accounts import RateWindow, UsageReading, window_forecast

START = float(calendar.timegm((2030, 3, 18, 0, 0, 0)))  # a Monday
NAMES = ("a", "b", "c")
RESETS = {"a": START + 5 * DAY + 8 * 3600, "b": START + 6 * DAY + 20 * 3600, "c": START + 7 * 3600}
"""Each account's week resets on its own day: Saturday 08:00, Sunday 20:00, Monday 07:00."""
PERIOD = 150.0
SEEDS = range(40)


def reading_times(seed: int) -> list[float]:
    """The replay timer's runs: every half hour from 07:00 to 23:00, a period before each
    session of the machine's week starts."""
    times = {
        START + day * DAY + half_hour * 1800 for day in range(7) for half_hour in range(14, 47)
    }
    times |= {session.start - PERIOD for session in week_of_sessions(START, seed=seed)}
    return sorted(times)


def replay(seed: int) -> tuple[Accounts, dict[str, list[UsageReading]]]:
    """The week of trace `seed`: the true meter, and each account's readings in whole percents."""
    accounts = Accounts(names=NAMES, now=START - 3600, week_resets=RESETS)
    for name in NAMES:
        for session in account_trace(name, START, seed=seed):
            accounts.assign(name, session)
    history: dict[str, list[UsageReading]] = {name: [] for name in NAMES}
    for at in reading_times(seed):
        accounts.advance_to(at)
        for name in NAMES:
            limits: dict[str, RateWindow] = {}
            for window, (used, resets) in accounts.usage(name).items():
                limits[window] = {"used_percentage": float(round(used))}
                if resets is not None:
                    limits[window]["resets_at"] = resets
            reading: UsageReading = {
                "session_id": "usage-poll",
                "written_at": at,
                "rate_limits": limits,
            }
            history[name].append(reading)
    accounts.advance_to(START + WEEK)
    return accounts, history


def errors(seed: int) -> list[tuple[str, float, float]]:
    """(window, strict error, error beyond the trace's range) of each window of week `seed`
    that fills after its half, as shares of the time left at the half."""
    accounts, history = replay(seed)
    found: list[tuple[str, float, float]] = []
    for filled in accounts.filled:
        half = filled.opened + (FIVE_H if filled.window == "five_hour" else WEEK) / 2
        if filled.full_at <= half or half < START + DAY:
            continue
        seen = [r for r in history[filled.account] if r["written_at"] <= half]
        forecast = window_forecast(filled.window, seen, half)
        assert forecast is not None, (seed, filled)
        full_at = filled.resets_at if forecast.full_at is None else forecast.full_at
        low, high = fill_range(
            filled, half, start=START, seed=seed, week_resets=RESETS[filled.account]
        )
        assert low <= filled.full_at <= high  # the true way is one of the ways
        left = filled.full_at - half
        beyond = max(0.0, low - full_at, full_at - high)
        found.append((filled.window, abs(full_at - filled.full_at) / left, beyond / left))
    return found


def test_forty_weeks_of_forecasts_hold_within_ten_percent_of_what_the_history_can_tell() -> None:
    found = [row for seed in SEEDS for row in errors(seed)]
    strict = [error for _, error, _ in found]
    beyond = [error for _, _, error in found]
    print(
        f"{len(found)} windows; median strict error {statistics.median(strict):.3f}; "
        f"{sum(e > 0.10 for e in strict)} over 10% strictly, {sum(e > 0.10 for e in beyond)} "
        "beyond what the history tells",
        file=sys.stderr,
    )
    assert len(found) >= 250
    assert {window for window, _, _ in found} == {"five_hour", "seven_day"}
    # Every week within 10% of what its history can tell (its last percent, a pause's edge).
    assert all(error <= 0.10 for window, _, error in found if window == "seven_day")
    # A five-hour window: within 10% beyond it but for one in fifty (fills at a pause's edge),
    # and within 5% strictly for half of them.
    assert sum(error > 0.10 for error in beyond) <= len(found) / 50
    assert statistics.median(strict) <= 0.05
