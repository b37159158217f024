"""Pace of a usage window and the best account now: pure computations, `now` always passed in.

Pace compares how much of a window is used with how much of its time has elapsed, and projects
when it reaches 100% at the current pace. A window's start is its reset time minus its length,
so both need to be known; a window of unknown length or without a reset time has no pace.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from ._login import LoginExpired, LoginState
from ._types import RateWindow, UsageReading

__all__ = [
    "DEFAULT_BEST_WINDOWS",
    "FRESH_READING_S",
    "WINDOW_SECONDS",
    "BestCandidate",
    "BestChoice",
    "NoBest",
    "RejectReason",
    "WindowPace",
    "choose_best",
    "reading_pace",
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

FRESH_READING_S: Final = 600
"""A reading older than this (four missed 150 s polls) is stale for `choose_best`."""

DEFAULT_BEST_WINDOWS: Final = ("five_hour", "seven_day")


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

    def to_json(self) -> dict[str, object]:
        """Return the JSON form `account-cli status --json` prints."""
        return {
            "used_percentage": self.used_percentage,
            "elapsed_percentage": None
            if self.elapsed_percentage is None
            else round(self.elapsed_percentage, 2),
            "resets_at": self.resets_at,
            "projected_full_at": self.projected_full_at,
        }


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def window_pace(name: str, window: RateWindow, now: float) -> WindowPace:
    """Compute one window's pace at `now` (epoch seconds). Raises ValueError for a bad `now`."""
    at = _finite(now)
    if at is None:
        raise ValueError("now must be a finite number of epoch seconds")
    used = window["used_percentage"]
    resets = _finite(window.get("resets_at"))
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


def reading_pace(reading: UsageReading, now: float) -> dict[str, WindowPace]:
    """Compute the pace of every window of a reading at `now`, keyed by window name."""
    return {name: window_pace(name, window, now) for name, window in reading["rate_limits"].items()}


# ---- the best account now ------------------------------------------------------------------


RejectReason: TypeAlias = Literal[
    "login missing",
    "login expired",
    "login refused",
    "login unreadable",
    "no reading",
    "reading stale",
    "window missing",
]


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
    """No profile qualifies; `rejected` names each profile and why, in the candidates' order."""

    rejected: tuple[tuple[str, RejectReason], ...]


def _reject(
    candidate: BestCandidate, windows: Sequence[str], now: float, max_age_s: float
) -> RejectReason | None:
    login = candidate.login
    if login is None:
        return "login unreadable"
    if login.status == "missing":
        return "login missing"
    if login.status == "refused":
        return "login refused"
    if isinstance(login, LoginExpired) and not login.can_refresh:
        return "login expired"
    reading = candidate.reading
    if reading is None:
        return "no reading"
    if now - reading["written_at"] > max_age_s:
        return "reading stale"
    if any(name not in reading["rate_limits"] for name in windows):
        return "window missing"
    return None


def _headroom(reading: UsageReading, windows: Sequence[str], now: float) -> tuple[float, float]:
    """Return (headroom %, the earliest reset among the windows that bind it, inf if none)."""
    rows: list[tuple[float, float]] = []
    for name in windows:
        window = reading["rate_limits"][name]
        resets = _finite(window.get("resets_at"))
        # A window whose reset has passed since the reading starts again from nothing.
        used = 0.0 if resets is not None and resets <= now else float(window["used_percentage"])
        rows.append((100.0 - used, math.inf if resets is None else resets))
    headroom = min(room for room, _ in rows)
    return headroom, min(resets for room, resets in rows if room == headroom)


def choose_best(
    candidates: Iterable[BestCandidate],
    now: float,
    *,
    windows: Sequence[str] = DEFAULT_BEST_WINDOWS,
    max_age_s: float = FRESH_READING_S,
) -> BestChoice | NoBest:
    """Pick the profile with the most headroom over `windows` at `now` (epoch seconds).

    A profile qualifies when its login is present, or expired with a usable refresh token, and its
    newest reading is at most `max_age_s` old and holds every named window. Headroom is 100 minus
    the highest use among the named windows (a window past its reset counts as unused). Ties go
    to the earlier reset of the binding windows (unknown resets last), then to the label.
    Raises ValueError for an empty `windows` or a bad `now`.
    """
    if _finite(now) is None:
        raise ValueError("now must be a finite number of epoch seconds")
    if not windows:
        raise ValueError("windows must name at least one window")
    rejected: list[tuple[str, RejectReason]] = []
    best: tuple[float, float, str, BestCandidate] | None = None
    for candidate in candidates:
        reason = _reject(candidate, windows, now, max_age_s)
        if reason is not None or candidate.reading is None:
            rejected.append((candidate.label, reason or "no reading"))
            continue
        headroom, resets = _headroom(candidate.reading, windows, now)
        key = (-headroom, resets, candidate.label, candidate)
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        return NoBest(rejected=tuple(rejected))
    headroom, resets, _, chosen = -best[0], best[1], best[2], best[3]
    return BestChoice(
        label=chosen.label,
        config_dir=chosen.config_dir,
        headroom_percentage=headroom,
        resets_at=None if math.isinf(resets) else resets,
        windows=tuple(windows),
    )
