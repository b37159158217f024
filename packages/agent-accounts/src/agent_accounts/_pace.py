"""Pace of a usage window and the best account now: pure computations, `now` always passed in.

Pace compares how much of a window is used with how much of its time has elapsed, and projects
when it reaches 100% at the current pace. A window's start is its reset time minus its length,
so both need to be known; a window of unknown length or without a reset time has no pace.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal, TypeAlias, cast, get_args

from ._best import FRESH_READING_S, finite, rank_rows
from ._forecast import forecast_window
from ._login import LoginExpired, LoginPresent, LoginState
from ._types import RateWindow, UsageReading

__all__ = [
    "DEFAULT_BEST_WINDOWS",
    "FRESH_READING_S",
    "WINDOW_SECONDS",
    "BestCandidate",
    "BestChoice",
    "NoBest",
    "RejectReason",
    "WindowForecast",
    "WindowPace",
    "choose_best",
    "reading_pace",
    "window_forecast",
    "window_pace",
]

_HOUR: Final = 3600
_WEEK: Final = 7 * 24 * _HOUR
WINDOW_SECONDS: Final[Mapping[str, int]] = {
    "five_hour": 5 * _HOUR,
    "seven_day": _WEEK,
    "seven_day_opus": _WEEK,
    "seven_day_sonnet": _WEEK,
    "seven_day_oauth_apps": _WEEK,
}
"""The length of each known window in seconds; any other window has no pace."""

DEFAULT_BEST_WINDOWS: Final = ("five_hour", "seven_day")


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowForecast:
    """When a window fills at the pace of its history (epoch seconds; None: not before reset).

    `full_at` extends the least-squares slope of the whole current window so far from its newest
    point to 100%; `earliest` and `latest` take the steeper and the gentler of that slope and
    the recent one (the last tenth of the window's length). `rate_per_hour` is the overall slope
    in percentage points per hour; `points` how many readings it rests on.
    """

    window: str
    full_at: float | None
    earliest: float | None
    latest: float | None
    rate_per_hour: float
    points: int

    def to_json(self) -> dict[str, object]:
        """Return the JSON form `account-cli status --json` and `history --json` print."""
        return {
            "full_at": self.full_at,
            "earliest": self.earliest,
            "latest": self.latest,
            "rate_per_hour": round(self.rate_per_hour, 3),
            "points": self.points,
        }


def window_forecast(
    name: str, history: Iterable[UsageReading], now: float
) -> WindowForecast | None:
    """Forecast when window `name` fills from a profile's usage history, at `now`.

    None when the history holds no slope for the current window (fewer than two readings of
    it, spanning under five minutes) or the window has reset by `now`. Raises ValueError for a
    bad `now`.
    """
    if finite(now) is None:
        raise ValueError("now must be a finite number of epoch seconds")
    readings = list(history)
    found = forecast_window(name, readings, now)
    if found is None:
        return None
    from ._forecast import forecast_points

    full_at, earliest, latest, rate = found[0], found[1], found[2], found[3]
    return WindowForecast(
        window=name,
        full_at=full_at,
        earliest=earliest,
        latest=latest,
        rate_per_hour=rate,
        points=len(forecast_points(name, readings, now)),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowPace:
    """One window's pace at `now`.

    `elapsed_percentage` is None when the window's length or reset time is unknown; it is clamped
    to 0..100 (a reading from before the window began, or from a window that has since reset).
    `projected_full_at` (epoch seconds) is when the window reaches 100% at the pace so far, or
    None: nothing used yet, no time elapsed, the window already reset, or the pace does not reach
    100% before the reset. A window already at 100% is full at `now`.
    """

    window: str
    used_percentage: float
    elapsed_percentage: float | None
    resets_at: float | None
    projected_full_at: float | None
    forecast: WindowForecast | None = None

    def to_json(self) -> dict[str, object]:
        """Return the JSON form `account-cli status --json` prints."""
        return {
            "used_percentage": self.used_percentage,
            "elapsed_percentage": None
            if self.elapsed_percentage is None
            else round(self.elapsed_percentage, 2),
            "resets_at": self.resets_at,
            "projected_full_at": self.projected_full_at,
            "forecast": None if self.forecast is None else self.forecast.to_json(),
        }


def window_pace(name: str, window: RateWindow, now: float) -> WindowPace:
    """Compute one window's pace at `now` (epoch seconds). Raises ValueError for a bad `now`."""
    at = finite(now)
    if at is None:
        raise ValueError("now must be a finite number of epoch seconds")
    used = window["used_percentage"]
    resets = finite(window.get("resets_at"))
    length = WINDOW_SECONDS.get(name)
    if resets is None or length is None:
        return WindowPace(
            window=name,
            used_percentage=used,
            elapsed_percentage=None,
            resets_at=resets,
            projected_full_at=None,
        )
    start = resets - length
    elapsed = min(max(at - start, 0.0), float(length))
    projected: float | None = None
    if at < resets:
        if used >= 100:
            projected = at
        elif used > 0 and elapsed > 0:
            full = start + elapsed * 100 / used
            projected = full if full <= resets else None
    return WindowPace(
        window=name,
        used_percentage=used,
        elapsed_percentage=elapsed * 100 / length,
        resets_at=resets,
        projected_full_at=projected,
    )


def reading_pace(
    reading: UsageReading, now: float, *, history: Iterable[UsageReading] = ()
) -> dict[str, WindowPace]:
    """Compute the pace of every window of a reading at `now`, keyed by window name.

    With the profile's usage `history`, each window's pace carries its `forecast`.
    """
    readings = list(history)
    paces = {}
    for name, window in reading["rate_limits"].items():
        pace = window_pace(name, window, now)
        if readings:
            found = window_forecast(name, readings, now)
            if found is not None:
                pace = replace(pace, forecast=found)
        paces[name] = pace
    return paces


# ---- the best account now ------------------------------------------------------------------


RejectReason: TypeAlias = Literal[
    "login missing",
    "login expired",
    "login refused",
    "login unreadable",
    "no reading",
    "reading stale",
    "window missing",
    "no room",
]
_REASONS: Final = frozenset(get_args(RejectReason))


@dataclass(frozen=True, slots=True, kw_only=True)
class BestCandidate:
    """One profile as `choose_best` sees it: its login state and newest reading (or None)."""

    label: str
    config_dir: str
    login: LoginState | None
    reading: UsageReading | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BestChoice:
    """The chosen profile: its headroom (100 minus the highest use over the windows, in %)."""

    label: str
    config_dir: str
    headroom_percentage: float
    resets_at: float | None
    windows: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NoBest:
    """No profile qualifies; `rejected` names each profile and why, in the candidates' order.

    `free_at` (epoch seconds) is the earliest time a profile rejected for `no room` has room
    again (every window of it at or past the limit has reset); None when no profile was rejected
    for that, or when none of them tells its reset time.
    """

    rejected: tuple[tuple[str, RejectReason], ...]
    free_at: float | None = None


def choose_best(
    candidates: Iterable[BestCandidate],
    now: float,
    *,
    windows: Sequence[str] = DEFAULT_BEST_WINDOWS,
    max_age_s: float = FRESH_READING_S,
    full_at: float = 100.0,
) -> BestChoice | NoBest:
    """Pick the profile with the most headroom over `windows` at `now` (epoch seconds).

    A profile qualifies when its login is present, or expired with a usable refresh token, its
    newest reading is at most `max_age_s` old and holds every named window, and every named
    window has room: its use is below `full_at` percent (a window past its reset counts as
    unused). Headroom is 100 minus the highest use among the named windows. Ties go to the
    earlier reset of the binding windows (unknown resets last), then to the label. Raises
    ValueError for an empty `windows`, a bad `now` or a `full_at` outside (0, 100].
    """
    if finite(now) is None:
        raise ValueError("now must be a finite number of epoch seconds")
    if not windows:
        raise ValueError("windows must name at least one window")
    limit = finite(full_at)
    if limit is None or not 0 < limit <= 100:
        raise ValueError("full_at must be a percentage above 0 and at most 100")
    listed = list(candidates)
    ranked = rank_rows(
        (
            (
                c.label,
                None if c.login is None else c.login.status,
                isinstance(c.login, LoginExpired | LoginPresent) and c.login.can_refresh,
                c.reading,
            )
            for c in listed
        ),
        now,
        windows,
        max_age_s,
        limit,
    )
    if isinstance(ranked, list):
        free = [at for _, _, at in ranked if at is not None and not math.isinf(at)]
        return NoBest(
            rejected=tuple((label, _reason(reason)) for label, reason, _ in ranked),
            free_at=min(free, default=None),
        )
    index, headroom, resets = ranked
    chosen = listed[index]
    return BestChoice(
        label=chosen.label,
        config_dir=chosen.config_dir,
        headroom_percentage=headroom,
        resets_at=None if math.isinf(resets) else resets,
        windows=tuple(windows),
    )


def _reason(text: str) -> RejectReason:
    assert text in _REASONS
    return cast(RejectReason, text)
