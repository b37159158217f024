"""`window_forecast` and the pace's forecast: when a window fills, from its usage history.

Replayed traces (a steady one, one with a daily rhythm and noise over seven days, bursts in five
hours): at half the window elapsed the forecast of the fill time is within 10% of the trace's
own fill time, measured from that moment. The clock moves both ways: readings after `now` are
not used, and a window that has reset by `now` has no forecast.
"""

from __future__ import annotations

import math
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_accounts import (
    RateWindow,
    UsageReading,
    WindowForecast,
    reading_pace,
    window_forecast,
)

H = 3600
DAY = 24 * H
T0 = 1_800_000_000.0


def trace(
    name: str, length: float, rate_at: object, *, step: float, seed: int = 0
) -> tuple[list[UsageReading], float | None]:
    """Readings every `step` s over one window starting at T0, with use growing at
    `rate_at(t)` %/s; return them and the time the use reaches 100% (None if it never does)."""
    assert callable(rate_at)
    rng = random.Random(seed)
    resets = T0 + length
    readings: list[UsageReading] = []
    used, t, full = 0.0, T0, None
    while t < resets:
        reading: UsageReading = {
            "session_id": "usage-poll",
            "written_at": t,
            "rate_limits": {name: {"used_percentage": round(used, 1), "resets_at": resets}},
        }
        readings.append(reading)
        # Integrate in small steps so the true fill time is the trace's own.
        for _ in range(10):
            used += max(0.0, rate_at(t)) * step / 10 * (1 + rng.uniform(-0.05, 0.05))
            t += step / 10
            if full is None and used >= 100:
                full = t
    return readings, full


def forecast_at_half(readings: list[UsageReading], name: str, length: float) -> WindowForecast:
    now = T0 + length / 2
    seen = [r for r in readings if r["written_at"] <= now]
    found = window_forecast(name, readings, now)
    assert found is not None
    assert found == window_forecast(name, seen, now)  # readings after now are not used
    return found


def test_a_steady_trace_is_forecast_to_the_minute() -> None:
    rate = 100 / (4 * H)  # full after four of the five hours
    readings, full = trace("five_hour", 5 * H, lambda t: rate, step=150)
    assert full is not None
    found = forecast_at_half(readings, "five_hour", 5 * H)
    assert found.full_at is not None
    assert abs(found.full_at - full) <= 60
    assert found.rate_per_hour == pytest.approx(25, rel=0.05)


def test_a_week_with_a_daily_rhythm_is_within_ten_percent_at_half_the_window() -> None:
    # Work hours only: 9:00-18:00 each day at a pace that fills the week on day six.
    def rate(t: float) -> float:
        hour = (t - T0) % DAY / H
        return 100 / (5.5 * 9 * H) if 9 <= hour < 18 else 0.0

    readings, full = trace("seven_day", 7 * DAY, rate, step=600, seed=7)
    assert full is not None
    found = forecast_at_half(readings, "seven_day", 7 * DAY)
    now = T0 + 3.5 * DAY
    assert found.full_at is not None
    assert abs(found.full_at - full) <= 0.10 * (full - now)
    # The recent slope (a tenth of the week: mostly night) gives the interval around it.
    assert found.earliest is not None
    assert found.earliest <= found.full_at
    assert found.latest is None or found.latest >= found.full_at


def test_bursty_five_hours_is_within_ten_percent_at_half_the_window() -> None:
    def rate(t: float) -> float:
        minute = (t - T0) % 1800 / 60
        return 100 / (4.2 * H) * (1.6 if minute < 15 else 0.4)

    readings, full = trace("five_hour", 5 * H, rate, step=30, seed=3)
    assert full is not None
    found = forecast_at_half(readings, "five_hour", 5 * H)
    assert found.full_at is not None
    assert abs(found.full_at - full) <= 0.10 * (full - (T0 + 2.5 * H))


def working_days(
    days: int, blocks: list[tuple[float, float]], rate: float, *, step: float
) -> tuple[list[UsageReading], list[tuple[float, float]]]:
    """`days` days from T0 (midnight UTC) of use at `rate` %/h in each day's `blocks` (hours),
    a five-hour window opening at the first use after the last one reset and use stopping at
    100%; readings every `step` s. Return them and each window's `(opened, full_at)`."""
    readings: list[UsageReading] = []
    fills: list[tuple[float, float]] = []
    opened: float | None = None
    used, t = 0.0, T0
    while t < T0 + days * DAY:
        if opened is not None and t >= opened + 5 * H:
            opened, used = None, 0.0
        if round(t - T0) % round(step) == 0:
            window: RateWindow = {"used_percentage": float(round(used))}
            if opened is not None:
                window["resets_at"] = opened + 5 * H
            limits = {"five_hour": window}
            readings.append({"session_id": "usage-poll", "written_at": t, "rate_limits": limits})
        hour = (t - T0) % DAY / H
        if any(a <= hour < b for a, b in blocks) and used < 100:
            if opened is None:
                opened = t
            used += rate / 60
            if used >= 100:
                fills.append((opened, t + 60 - (used - 100) / rate * H))
                used = 100.0
        t += 60
    return readings, fills


def test_a_five_hour_window_filling_after_lunch_is_forecast_past_the_break() -> None:
    # A day job: 9-12 and 13-18 at 27 %/h. The morning's window reaches ~80% by noon and fills
    # after lunch; a straight line through its first half lands the fill inside the break.
    readings, fills = working_days(3, [(9, 12), (13, 18)], 27.0, step=150)
    opened, full = next((o, f) for o, f in fills if o >= T0 + 2 * DAY)  # the third morning
    now = opened + 2.5 * H
    found = window_forecast("five_hour", [r for r in readings if r["written_at"] <= now], now)
    assert found is not None
    assert found.full_at is not None
    assert abs(found.full_at - full) <= 0.10 * (full - now)
    seen = [r for r in readings if r["written_at"] <= now][-1]
    line = (
        now + (100 - seen["rate_limits"]["five_hour"]["used_percentage"]) / found.rate_per_hour * H
    )
    assert abs(line - full) > 0.25 * (full - now)  # not vacuous: the line alone is far off
    # The afternoon's window fills with no pause ahead of it: the straight line, to the minute.
    opened, full = next((o, f) for o, f in fills if o >= T0 + 2 * DAY + 13 * H)
    now = opened + 2.5 * H
    found = window_forecast("five_hour", [r for r in readings if r["written_at"] <= now], now)
    assert found is not None
    assert found.full_at is not None
    assert abs(found.full_at - full) <= 0.10 * (full - now)


def test_a_day_the_window_was_full_still_tells_the_pace_after_it() -> None:
    # Use resumes at 13:00 after lunch and the window fills by 13:30 each day, so the history
    # has no reading of the 13:30-14:00 pace (full) and only a reading at 100% after 13:00:
    # the forecast still takes the afternoon as busy, not idle.
    readings, fills = working_days(3, [(9, 12), (13, 18)], 30.0, step=1800)
    opened, full = next((o, f) for o, f in fills if o >= T0 + 2 * DAY)
    now = opened + 2.5 * H
    found = window_forecast("five_hour", [r for r in readings if r["written_at"] <= now], now)
    assert found is not None
    assert found.full_at is not None
    assert abs(found.full_at - full) <= 0.10 * (full - now)


def test_a_window_not_filling_before_its_reset_has_no_full_time() -> None:
    readings, full = trace("five_hour", 5 * H, lambda t: 100 / (10 * H), step=300)
    assert full is None
    found = forecast_at_half(readings, "five_hour", 5 * H)
    assert (found.full_at, found.latest) == (None, None)
    assert found.rate_per_hour == pytest.approx(10, rel=0.05)


def test_no_forecast_without_a_slope_or_after_the_reset() -> None:
    readings, _ = trace("five_hour", 5 * H, lambda t: 0.01, step=60)
    assert window_forecast("five_hour", readings[:1], T0 + 60) is None  # one reading
    assert window_forecast("five_hour", readings[:3], T0 + 180) is None  # two minutes of them
    assert window_forecast("seven_day", readings, T0 + H) is None  # a window it never read
    assert window_forecast("five_hour", readings, T0 + 5 * H + 1) is None  # reset by now
    with pytest.raises(ValueError, match="finite"):
        window_forecast("five_hour", readings, math.nan)


def test_a_new_window_starts_the_slope_again() -> None:
    # The last window was filling fast; the new one (a later reset) has barely begun.
    old, _ = trace("five_hour", 5 * H, lambda t: 100 / (2 * H), step=300)
    new_start = T0 + 5 * H
    new: list[UsageReading] = [
        {
            "session_id": "usage-poll",
            "written_at": new_start + i * 600,
            "rate_limits": {"five_hour": {"used_percentage": i, "resets_at": new_start + 5 * H}},
        }
        for i in range(6)
    ]
    found = window_forecast("five_hour", [*old, *new], new_start + 3000)
    assert found is not None
    assert found.points == 6
    assert found.rate_per_hour == pytest.approx(6, rel=0.01)


def test_a_window_opening_the_history_shows_is_its_first_point() -> None:
    """A five-hour window opens at 0% five hours before its reset, and its first reading comes
    up to a poll later. When the history reaches back past the opening (the window before), the
    slope runs from there: the use of that first half hour counts."""

    def reading(t: float, used: float, resets: float) -> UsageReading:
        limits: dict[str, RateWindow] = {
            "five_hour": {"used_percentage": used, "resets_at": resets}
        }
        return {"session_id": "usage-poll", "written_at": t, "rate_limits": limits}

    opened = T0 + 6 * H
    before = [reading(T0 + k * 600, 10.0 + k, T0 + 5 * H) for k in range(6)]
    since = [reading(opened + k * 1800, u, opened + 5 * H) for k, u in ((1, 30), (2, 40), (3, 50))]
    found = window_forecast("five_hour", [*before, *since], opened + 1.5 * H)
    assert found is not None
    assert found.points == 3  # the readings it rests on
    # Least squares over (0 h, 0%) (0.5 h, 30%) (1 h, 40%) (1.5 h, 50%): 32 %/h.
    assert found.rate_per_hour == pytest.approx(32)
    assert found.full_at == pytest.approx(opened + 1.5 * H + 50 / 32 * H)
    # A history that begins inside the window does not show when it opened: its readings alone.
    alone = window_forecast("five_hour", since, opened + 1.5 * H)
    assert alone is not None
    assert alone.rate_per_hour == pytest.approx(20)


def test_the_pace_carries_the_forecast() -> None:
    readings, _ = trace("five_hour", 5 * H, lambda t: 100 / (4 * H), step=150)
    now = T0 + 2.5 * H
    seen = [r for r in readings if r["written_at"] <= now]
    paces = reading_pace(seen[-1], now, history=seen)
    forecast = paces["five_hour"].forecast
    assert forecast is not None
    assert paces["five_hour"].to_json()["forecast"] == forecast.to_json()
    assert reading_pace(seen[-1], now)["five_hour"].forecast is None


point_st = st.tuples(st.floats(0, 5 * H), st.floats(0, 100))


@settings(
    max_examples=300, deadline=None, database=None, derandomize=os.environ.get("CI") == "true"
)
@given(points=st.lists(point_st, min_size=0, max_size=30), now=st.floats(-H, 6 * H))
def test_forecast_bounds_hold_for_any_history_and_any_clock(
    points: list[tuple[float, float]], now: float
) -> None:
    resets = T0 + 5 * H
    history: list[UsageReading] = [
        {
            "session_id": "s",
            "written_at": T0 + t,
            "rate_limits": {"five_hour": {"used_percentage": u, "resets_at": resets}},
        }
        for t, u in points
    ]
    found = window_forecast("five_hour", history, T0 + now)
    if found is None:
        return
    assert T0 + now < resets
    for at in (found.full_at, found.earliest, found.latest):
        assert at is None or at <= resets
    if found.full_at is not None and found.earliest is not None:
        assert found.earliest <= found.full_at
    if found.full_at is not None and found.latest is not None:
        assert found.latest >= found.full_at
    assert 2 <= found.points <= len(points)
