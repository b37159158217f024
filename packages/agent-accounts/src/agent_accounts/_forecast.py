"""When a usage window fills, from its history: a least-squares slope and an interval.

The points are a window's `(written_at, used_percentage)` from a profile's usage history, kept
only for the current window: those with the newest point's `resets_at` (within two minutes), or
with no reset time, those after the last drop in use, and only those at or before `now`; led by
the window's opening (0% at its length before its reset) when the history reaches back past it,
a known point its first reading comes up to a poll after. The central forecast extends the slope
over the whole current window so far from the newest point to 100%. When the history spans a day
and shows the account pausing before that line's fill (a night, a lunch break, the end of a
working day: a half hour at under a quarter of the line's pace), it instead goes forward half
hour by half hour, each half hour of the day at the pace the history shows for it, scaled to the
current window's use: work hours fill a week and nights do not, and a five-hour window filling
through lunch fills after it (a straight line lands the first in the night and the second in the
lunch break). The interval takes the steeper and the gentler of the overall slope and the recent
one (the last tenth of the window's length), so a burst shows as an early bound, a lull as a
late one, widened to hold the central time. A time past the window's reset is no forecast (it
resets first). Pure and light: plain tuples, no `typing` or `dataclasses` (`best` and `run` use
it at start-up); `_pace` wraps it.
"""

from __future__ import annotations

import itertools
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
_DAY: Final = 86400.0
_BIN_S: Final = 1800.0
_BINS: Final = 48
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
    return _current(_all_points(name, history, now))


def _all_points(
    name: str, history: Iterable[UsageReading], now: float
) -> list[tuple[float, float, float | None]]:
    """Every reading's point of window `name` at or before `now`, oldest first."""
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
    return points


def _current(
    points: list[tuple[float, float, float | None]],
) -> list[tuple[float, float, float | None]]:
    """The points of the newest window among `points` (oldest first)."""
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


def _day_profile(
    points: Sequence[tuple[float, float, float | None]], length: float
) -> list[float] | None:
    """Use per second in each half hour of the day (UTC), from the rise between consecutive
    points of one window (every window the history holds, each `length` seconds long); None
    when the points span under a day (no daily rhythm to tell) or show no rise.

    A new window opened at 0% `length` before its reset, so a pair across a reset counts from
    then. A full window shows no pace: the time it was full is unseen. A pair that reaches 100%
    filled inside it at the pace of the half hour or more before it when that pace fills it in
    time (the rest of the pair unseen); else when it filled is not known and the pair is unseen,
    but its half hours are at least as busy as its rise over its whole length.
    A half hour seen for under half its length (a few minutes of whole-percent readings are
    mostly rounding) takes the busier of the nearest measured half hours either side: an
    account that was full at that time of day was in use then, so the end of a lunch break it
    filled right after, or a working day's last hour, counts as busy (and at least as busy as
    a pair that filled there rose).
    """
    if not points or points[-1][0] - points[0][0] < _DAY:
        return None
    risen = [0.0] * _BINS
    seen = [0.0] * _BINS
    floor = [0.0] * _BINS  # a pair that filled at an unknown time: its least pace
    run: list[tuple[float, float]] = []  # the points so far of the window the pair is in
    for (t_before, u_before, r0), (t1, u1, r1) in itertools.pairwise(points):
        t0, u0 = t_before, u_before
        same = r0 == r1 or (r0 is not None and r1 is not None and abs(r0 - r1) < RESET_TOLERANCE_S)
        if t1 <= t0 or not same or u1 < u0 - 0.5:
            run = []
            if r1 is None or not t0 <= r1 - length < t1:
                continue  # a reset between them, its new window's start unknown
            t0, u0 = r1 - length, 0.0  # a new window: it opened at 0% `length` before its reset
        run.append((t0, u0))
        if u0 >= 100:
            continue  # a full window: the pace is not known
        rate = max(0.0, u1 - u0) / (t1 - t0)
        end = t1
        if u1 >= 100:
            # Full inside the pair: at the pace of the half hour or more before it, if that
            # fills it in time (the rest of the pair unseen), else when is not known.
            span = min((t0 - t for t, _ in run if t0 - t >= _BIN_S), default=None)
            pace = 0.0 if span is None else (u0 - next(u for t, u in run if t0 - t == span)) / span
            if pace <= 0 or t0 + (100 - u0) / pace > t1:
                # When it filled is not known; it rose at least this fast while it was in use.
                least = (100 - u0) / (t1 - t0)
                for b in range(int(t0 // _BIN_S), math.ceil(t1 / _BIN_S)):
                    floor[b % _BINS] = max(floor[b % _BINS], least)
                continue
            end, rate = t0 + (100 - u0) / pace, pace
        t = t0
        while t < end:  # spread the rise over the time it took (a night's gap included)
            edge = min(end, (math.floor(t / _BIN_S) + 1) * _BIN_S)
            risen[int(t // _BIN_S) % _BINS] += rate * (edge - t)
            seen[int(t // _BIN_S) % _BINS] += edge - t
            t = edge
    if not any(s >= _BIN_S / 2 for s in seen) or not any(risen):
        return None
    measured: list[float | None] = [
        risen[b] / seen[b] if seen[b] >= _BIN_S / 2 else None for b in range(_BINS)
    ]
    rates: list[float] = []
    for b, shown in enumerate(measured):
        if shown is not None:
            rates.append(shown)
            continue
        # Unseen: the busier of the nearest measured half hours either side.
        after = next(r for k in range(_BINS) if (r := measured[(b + k) % _BINS]) is not None)
        before = next(r for k in range(_BINS) if (r := measured[(b - k) % _BINS]) is not None)
        rates.append(max(after, before, floor[b]))
    return rates


def _expected(rates: Sequence[float], start: float, end: float) -> float:
    """The rise `rates` give between `start` and `end`."""
    total, t = 0.0, start
    while t < end:
        edge = min(end, (math.floor(t / _BIN_S) + 1) * _BIN_S)
        total += rates[int(t // _BIN_S) % _BINS] * (edge - t)
        t = edge
    return total


def _fills_by_day(
    t: float, used: float, rates: Sequence[float], resets: float | None
) -> float | None:
    """When use reaches 100% from `(t, used)` if each half hour of the day keeps its rate."""
    left = 100 - used
    if left <= 0:
        return t
    end = resets if resets is not None else t + 7 * _DAY
    while t < end:
        edge = min(end, (math.floor(t / _BIN_S) + 1) * _BIN_S)
        rate = rates[int(t // _BIN_S) % _BINS]
        if rate * (edge - t) >= left:
            return t + left / rate
        left -= rate * (edge - t)
        t = edge
    return None


def _pauses(rates: Sequence[float], start: float, end: float, pace: float) -> bool:
    """Whether `rates` hold a half hour under a quarter of `pace` between `start` and `end`."""
    t = start
    while t < end:
        if rates[int(t // _BIN_S) % _BINS] < pace / 4:
            return True
        t = (math.floor(t / _BIN_S) + 1) * _BIN_S
    return False


def _opened(
    points: list[tuple[float, float, float | None]],
    every: Sequence[tuple[float, float, float | None]],
    length: float,
) -> list[tuple[float, float, float | None]]:
    """The current window's points led by its opening, at 0% `length` before its reset, when
    the history reaches back past it (a known point of the window that its first reading, up to
    a poll period later, does not show); else the points as they are."""
    resets = points[-1][2]
    if resets is None or not every[0][0] <= resets - length < points[0][0]:
        return points
    return [(resets - length, 0.0, resets), *points]


def _model(
    name: str, history: Iterable[UsageReading], now: float
) -> tuple[list[tuple[float, float, float | None]], float, list[float] | None] | None:
    """The current window's points (led by its opening when the history shows it: `_opened`),
    their overall slope (% per second) and, when the days before show the account pausing
    before that slope's fill, the pace of each half hour of the day scaled to this window (else
    None: the straight line). None without a slope of its readings, or when the window has
    reset by `now`."""
    every = _all_points(name, history, now)
    points = _current(every)
    if _slope(points) is None:
        return None
    length = _WINDOW_SECONDS.get(name, 5 * 3600)
    points = _opened(points, every, length)
    overall = _slope(points)
    if overall is None:
        return None
    t, used, resets = points[-1]
    if resets is not None and resets <= now:
        return None
    profile = _day_profile(every, length)
    expected = 0.0 if profile is None else _expected(profile, points[0][0], t)
    if profile is None or expected <= 0 or used <= points[0][1]:
        return points, overall, None
    scale = (used - points[0][1]) / expected
    rates = [rate * scale for rate in profile]
    line = _fills(t, used, overall, resets)
    end = line if line is not None else (resets if resets is not None else t + 7 * _DAY)
    if overall > 0 and not _pauses(rates, t, end, overall):
        return points, overall, None  # no pause ahead: the straight line is the better guess
    return points, overall, rates


def forecast_window(name: str, history: Iterable[UsageReading], now: float) -> Forecast | None:
    """Forecast when window `name` fills: `(full_at, earliest, latest, %/h, t, used, resets_at)`.

    None when the history has no slope for the current window (fewer than two points, spanning
    under `MIN_SPAN_S`) or the window has already reset at `now`. A bound or the central time is
    None when that slope does not reach 100% before the reset.
    """
    found = _model(name, history, now)
    if found is None:
        return None
    points, overall, rates = found
    t, used, resets = points[-1]
    length = _WINDOW_SECONDS.get(name, 5 * 3600)
    recent = _slope([p for p in points if p[0] >= t - length / 10])
    if recent is None:
        recent = overall
    earliest = _fills(t, used, max(overall, recent), resets)
    latest = _fills(t, used, min(overall, recent), resets)
    if rates is None:
        central = _fills(t, used, overall, resets)
    else:
        # The days before pause where the line does not (a night, a lunch break, the end of a
        # working day): each half hour of the day keeps the pace it had, scaled to this window.
        central = _fills_by_day(t, used, rates, resets)
        if central is not None:
            earliest = central if earliest is None else min(earliest, central)
        latest = None if central is None or latest is None else max(latest, central)
    return (central, earliest, latest, overall * 3600, t, used, resets)


def use_now(name: str, history: Iterable[UsageReading], now: float) -> float | None:
    """Return the use window `name` has reached by `now` on its forecast's path (capped at 100).

    None without a forecast. `best` and `run` weigh a reading minutes old by this instead of its
    value then: an account filling fast has less room now than its last reading says. The path
    is the forecast's: the overall slope, or the day's pace where the days before pause.
    """
    found = _model(name, history, now)
    if found is None:
        return None
    points, overall, rates = found
    t, used, _ = points[-1]
    risen = overall * (now - t) if rates is None else _expected(rates, t, now)
    return min(100.0, max(used, used + risen))
