"""When a usage window fills, from its history: a least-squares slope and an interval.

The points are a window's `(written_at, used_percentage)` from a profile's usage history, kept
only for the current window: those with the newest point's `resets_at` (within two minutes), or
with no reset time, those after the last drop in use, and only those at or before `now`. The
central forecast extends the slope over the whole current window so far from the newest point
to 100%; the interval takes the steeper and the gentler of that slope and the recent one (the
last tenth of the window's length), so a burst shows as an early bound, a lull as a late one. A
time past the window's reset is no forecast (it resets first). Pure and light: plain tuples,
no `typing` or `dataclasses` (`best` and `run` use it at start-up); `_pace` wraps it.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Final

    from ._types import UsageReading

    # (full_at, earliest, latest, rate in % per hour, newest point's time, its use, resets_at)
    Forecast = tuple[float | None, float | None, float | None, float, float, float, float | None]

__all__ = ["MIN_SPAN_S", "RESET_TOLERANCE_S", "forecast_points", "forecast_window", "use_now"]

RESET_TOLERANCE_S: Final = 120.0
"""Two points whose `resets_at` differ by less than this belong to the same window."""
MIN_SPAN_S: Final = 300.0
"""The points must span at least this long for a slope."""
_WINDOW_SECONDS: Final = {
    "five_hour": 5 * 3600,
    "seven_day": 7 * 86400,
    "seven_day_opus": 7 * 86400,
    "seven_day_sonnet": 7 * 86400,
    "seven_day_oauth_apps": 7 * 86400,
}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def forecast_points(
    name: str, history: Iterable[UsageReading], now: float
) -> list[tuple[float, float, float | None]]:
    """Return the current window's points `(t, used, resets_at)` from `history`, oldest first."""
    points: list[tuple[float, float, float | None]] = []
    for reading in history:
        window = reading["rate_limits"].get(name)
        t = _number(reading["written_at"])
        if window is None or t is None or t > now:
            continue
        used = _number(window["used_percentage"])
        if used is not None:
            points.append((t, used, _number(window.get("resets_at"))))
    points.sort(key=lambda p: p[0])
    if not points:
        return []
    reset = points[-1][2]
    if reset is not None:
        kept = [p for p in points if p[2] is not None and abs(p[2] - reset) < RESET_TOLERANCE_S]
    else:
        kept = points
    # A drop in use starts a new window (a reset whose time was not told).
    start = 0
    for i in range(1, len(kept)):
        if kept[i][1] < kept[i - 1][1] - 0.5:
            start = i
    return kept[start:]


def _slope(points: Sequence[tuple[float, float, float | None]]) -> float | None:
    """Least-squares slope of use against time (% per second); None without a spread in time."""
    if len(points) < 2 or points[-1][0] - points[0][0] < MIN_SPAN_S:
        return None
    mean_t = sum(p[0] for p in points) / len(points)
    mean_u = sum(p[1] for p in points) / len(points)
    spread = sum((p[0] - mean_t) ** 2 for p in points)
    if spread <= 0:
        return None
    return sum((p[0] - mean_t) * (p[1] - mean_u) for p in points) / spread


def _fills(t: float, used: float, slope: float | None, resets: float | None) -> float | None:
    if used >= 100:
        return t
    if slope is None or slope <= 0:
        return None
    at = t + (100 - used) / slope
    return None if resets is not None and at > resets else at


def forecast_window(name: str, history: Iterable[UsageReading], now: float) -> Forecast | None:
    """Forecast when window `name` fills: `(full_at, earliest, latest, %/h, t, used, resets_at)`.

    None when the history has no slope for the current window (fewer than two points, spanning
    under `MIN_SPAN_S`) or the window has already reset at `now`. A bound or the central time is
    None when that slope does not reach 100% before the reset.
    """
    points = forecast_points(name, history, now)
    overall = _slope(points)
    if overall is None:
        return None
    t, used, resets = points[-1]
    if resets is not None and resets <= now:
        return None
    length = _WINDOW_SECONDS.get(name, 5 * 3600)
    recent_points = [p for p in points if p[0] >= t - length / 10]
    recent = _slope(recent_points)
    if recent is None:
        recent = overall
    central = _fills(t, used, overall, resets)
    steep, gentle = max(overall, recent), min(overall, recent)
    return (
        central,
        _fills(t, used, steep, resets),
        _fills(t, used, gentle, resets),
        overall * 3600,
        t,
        used,
        resets,
    )


def use_now(name: str, history: Iterable[UsageReading], now: float) -> float | None:
    """Return the use window `name` has reached by `now` at its overall slope (capped at 100).

    None without a forecast. `best` and `run` weigh a reading minutes old by this instead of its
    value then: an account filling fast has less room now than its last reading says.
    """
    found = forecast_window(name, history, now)
    if found is None:
        return None
    rate, t, used = found[3], found[4], found[5]
    return min(100.0, max(used, used + rate / 3600 * (now - t)))
