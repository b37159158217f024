"""The best account now, on plain values: the ranking `choose_best` wraps in its dataclasses.

`account-cli best` and `account-cli run` rank every profile on each run (scripts call them before
starting an agent), so the rules live apart from the dataclasses: this module imports neither
`typing` nor `dataclasses` (see `_login_rules`). One rule for both commands: a usable login, a
fresh reading holding every named window, room in every one of them (use below `full_at`, a
window past its reset counting as unused), then the most headroom, the earlier binding reset and
the label.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Final

    from ._types import RateWindow, UsageReading

    # (label, login status or None when unreadable, can_refresh, newest reading or None)
    Row = tuple[str, str | None, bool, UsageReading | None]

__all__ = ["FRESH_READING_S", "NO_ROOM", "rank_rows"]

FRESH_READING_S: Final = 600
"""A reading older than this (four missed 150 s polls) is stale for `choose_best`."""
NO_ROOM: Final = "no room"
"""The rejection of a profile with a window at or past `full_at` (it has room again later)."""


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


def _used(window: RateWindow, now: float) -> tuple[float, float]:
    """Return (use %, reset or inf): a window whose reset has passed starts again from nothing."""
    resets = finite(window.get("resets_at"))
    used = 0.0 if resets is not None and resets <= now else float(window["used_percentage"])
    return used, math.inf if resets is None else resets


def _headroom(reading: UsageReading, windows: Sequence[str], now: float) -> tuple[float, float]:
    """Return (headroom %, the earliest reset among the windows that bind it, inf if none)."""
    rows = [_used(reading["rate_limits"][name], now) for name in windows]
    top = max(used for used, _ in rows)
    return 100.0 - top, min(resets for used, resets in rows if used == top)


def _free_at(reading: UsageReading, windows: Sequence[str], now: float, full_at: float) -> float:
    """Return when every window at or past `full_at` has reset (inf when one's reset is unknown)."""
    rows = [_used(reading["rate_limits"][name], now) for name in windows]
    return max(resets for used, resets in rows if used >= full_at)


def rank_rows(
    rows: Iterable[Row],
    now: float,
    windows: Sequence[str],
    max_age_s: float,
    full_at: float = 100.0,
) -> tuple[int, float, float] | list[tuple[str, str, float | None]]:
    """Return (index, headroom %, binding reset or inf) of the best row, or every rejection.

    The rules of `choose_best`; `now` must be finite, `windows` non-empty and `full_at` in
    (0, 100]. A rejection is (label, reason, free at): `free at` is set for `NO_ROOM` only, the
    time every full window of that row has reset (inf when a reset time is unknown).
    """
    rejected: list[tuple[str, str, float | None]] = []
    best: tuple[float, float, str, int] | None = None
    for index, row in enumerate(rows):
        reason = _reject(row, windows, now, max_age_s)
        reading = row[3]
        if reason is not None or reading is None:
            rejected.append((row[0], reason or "no reading", None))
            continue
        headroom, resets = _headroom(reading, windows, now)
        if 100.0 - headroom >= full_at:
            rejected.append((row[0], NO_ROOM, _free_at(reading, windows, now, full_at)))
            continue
        key = (-headroom, resets, row[0], index)
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        return rejected
    return best[3], -best[0], best[1]
