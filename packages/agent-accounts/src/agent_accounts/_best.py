"""The best account now, on plain values: the ranking `choose_best` wraps in its dataclasses.

`account-cli best` ranks every profile on each run (scripts call it before starting an agent),
so the rules live apart from the dataclasses: this module imports neither `typing` nor
`dataclasses` (see `_login_rules`).
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Final

    from ._types import UsageReading

    # (label, login status or None when unreadable, can_refresh, newest reading or None)
    Row = tuple[str, str | None, bool, UsageReading | None]

__all__ = ["FRESH_READING_S", "rank_rows"]

FRESH_READING_S: Final = 600
"""A reading older than this (four missed 150 s polls) is stale for `choose_best`."""


def finite(value: object) -> float | None:
    """Return a finite int or float as a float (not a bool); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _reject(row: Row, windows: Sequence[str], now: float, max_age_s: float) -> str | None:
    _, status, can_refresh, reading = row
    if status is None:
        return "login unreadable"
    if status == "missing":
        return "login missing"
    if status == "refused":
        return "login refused"
    if status == "expired" and not can_refresh:
        return "login expired"
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
        resets = finite(window.get("resets_at"))
        # A window whose reset has passed since the reading starts again from nothing.
        used = 0.0 if resets is not None and resets <= now else float(window["used_percentage"])
        rows.append((100.0 - used, math.inf if resets is None else resets))
    headroom = min(room for room, _ in rows)
    return headroom, min(resets for room, resets in rows if room == headroom)


def rank_rows(
    rows: Iterable[Row], now: float, windows: Sequence[str], max_age_s: float
) -> tuple[int, float, float] | list[tuple[str, str]]:
    """Return (index, headroom %, binding reset or inf) of the best row, or every rejection.

    The rules of `choose_best`; `now` must be finite and `windows` non-empty.
    """
    rejected: list[tuple[str, str]] = []
    best: tuple[float, float, str, int] | None = None
    for index, row in enumerate(rows):
        reason = _reject(row, windows, now, max_age_s)
        reading = row[3]
        if reason is not None or reading is None:
            rejected.append((row[0], reason or "no reading"))
            continue
        headroom, resets = _headroom(reading, windows, now)
        key = (-headroom, resets, row[0], index)
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        return rejected
    return best[3], -best[0], best[1]
