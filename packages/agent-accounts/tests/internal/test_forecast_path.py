"""`use_now` (what `best` and `run` rank by) goes along the forecast's own path.

A reading minutes old is projected to now the way `window_forecast` projects it to the fill:
the straight line where no pause lies ahead, the day's pace where the days before pause. So
in a lunch break an account's use is not pushed up by its morning's slope, and the projection
reaches 100% at the forecast's fill time.
"""

from __future__ import annotations

import calendar

import pytest

from accounts_trace import DAY, HOUR, Accounts, account_trace
from agent_accounts import RateWindow, UsageReading, window_forecast
from agent_accounts._forecast import use_now

START = float(calendar.timegm((2030, 3, 18, 0, 0, 0)))  # a Monday


def readings_until(end: float, *, every: float = 600.0) -> list[UsageReading]:
    """Account a's recorded use (a day job with a lunch break) read every `every` s."""
    accounts = Accounts(names=("a",), now=START, week_resets={"a": START + 7 * DAY})
    for session in account_trace("a", START, seed=28):
        accounts.assign("a", session)
    out: list[UsageReading] = []
    t = START
    while t <= end:
        accounts.advance_to(t)
        used, resets = accounts.usage("a")["five_hour"]
        window: RateWindow = {"used_percentage": float(round(used))}
        if resets is not None:
            window["resets_at"] = resets
        limits = {"five_hour": window}
        out.append({"session_id": "usage-poll", "written_at": t, "rate_limits": limits})
        t += every
    return out


def test_a_lunch_break_holds_the_use_where_it_was() -> None:
    noon = START + DAY + 12 * HOUR  # Tuesday; a works 9-12 and 13-18
    history = readings_until(noon)
    last = history[-1]["rate_limits"]["five_hour"]["used_percentage"]
    assert 50 < last < 100  # the morning's window is filling, not full
    found = window_forecast("five_hour", history, noon + 1200)
    assert found is not None
    assert found.rate_per_hour > 20  # the line alone would add 7% in these 20 minutes (88%)
    projected = use_now("five_hour", history, noon + 1200)
    assert projected == pytest.approx(last, abs=1.0)


def test_the_projection_reaches_100_at_the_forecast_fill() -> None:
    for end in (START + DAY + 11.5 * HOUR, START + DAY + 16 * HOUR):  # before lunch, afternoon
        history = readings_until(end)
        found = window_forecast("five_hour", history, end)
        assert found is not None
        assert found.full_at is not None
        assert use_now("five_hour", history, found.full_at) == pytest.approx(100, abs=0.5)
        before = use_now("five_hour", history, found.full_at - 600)
        assert before is not None
        assert before < 99.5
