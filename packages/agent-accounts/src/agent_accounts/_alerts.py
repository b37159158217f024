"""Usage alerts: which windows of a reading crossed a threshold upward, once per window period.

Pure: the caller passes the reading, the marks kept from the last run, the thresholds and `now`,
and gets the new marks and the alerts to fire. A mark remembers, per window, the highest
threshold already fired and the window's reset time, which names its period:

- a threshold fires when the window's use is at or above it and above the mark's level;
  only the highest one crossed fires (50% to 96% with 80 and 95 is one alert, at 95);
- staying above fires nothing more in the same period;
- a new period (the reset time moved on by more than `PERIOD_TOLERANCE_S`, or the marked reset
  time is more than that in the past) starts from no level, so the first crossing in it fires
  again; the mark keeps the period's first reset time, so jitter never creeps it forward;
- a window with no reset time has no known period: its level re-arms once use falls below the
  lowest threshold;
- a window whose reset time is already past, or older than the mark's period, is stale and
  changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ._numbers import plain_number
from ._types import UsageReading

__all__ = [
    "PERIOD_TOLERANCE_S",
    "Alert",
    "AlertMark",
    "alert_crossings",
    "parse_alert_thresholds",
]

PERIOD_TOLERANCE_S: Final = 600.0
"""Reset times that differ by at most this much name the same period (the endpoint's jitter)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Alert:
    """One window that crossed `threshold` upward: now at `used_percentage`."""

    window: str
    used_percentage: float
    threshold: float
    resets_at: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertMark:
    """The highest threshold fired for a window in the period that ends at `resets_at`."""

    level: float
    resets_at: float | None


def parse_alert_thresholds(text: str) -> tuple[float, ...] | None:
    """Parse `80,95` into sorted distinct percentages in (0, 100]; None when invalid or empty."""
    values: set[float] = set()
    for part in text.split(","):
        item = part.strip()
        if not item or len(item) > 16:
            return None
        try:
            value = float(item)
        except ValueError:
            return None
        if not math.isfinite(value) or not 0 < value <= 100:
            return None
        values.add(value)
    return tuple(sorted(values)) if values else None


def _new_period(mark: AlertMark, resets_at: float | None, now: float) -> bool:
    if mark.resets_at is None:
        return False
    if now >= mark.resets_at + PERIOD_TOLERANCE_S:
        return True
    return resets_at is not None and resets_at > mark.resets_at + PERIOD_TOLERANCE_S


def alert_crossings(
    reading: UsageReading,
    marks: Mapping[str, AlertMark],
    thresholds: Sequence[float],
    now: float,
) -> tuple[dict[str, AlertMark], list[Alert]]:
    """Return the marks after `reading` and the alerts it fires (see the module docstring)."""
    levels = sorted(t for t in thresholds if 0 < t <= 100)
    kept = {
        name: mark
        for name, mark in marks.items()
        if mark.resets_at is None or now < mark.resets_at + PERIOD_TOLERANCE_S
    }
    alerts: list[Alert] = []
    if not levels:
        return kept, alerts
    for name, window in reading["rate_limits"].items():
        used = plain_number(window.get("used_percentage"))
        if used is None:
            continue
        resets = plain_number(window.get("resets_at"))
        if resets is not None and resets <= now:
            continue  # the window has reset since this reading: its use is of a past period
        previous = kept.get(name) or marks.get(name)
        level = 0.0
        period = resets
        if previous is not None and not _new_period(previous, resets, now):
            if (
                resets is not None
                and previous.resets_at is not None
                and resets < previous.resets_at - PERIOD_TOLERANCE_S
            ):
                continue  # a reading of an older period than the one marked
            level = previous.level
            if previous.resets_at is not None:
                period = previous.resets_at  # the period's first reset time, not its jitter
            if previous.resets_at is None and resets is None and used < levels[0]:
                level = 0.0  # no known period: re-armed once use falls below every threshold
        crossed = [t for t in levels if level < t <= used]
        if crossed:
            level = crossed[-1]
            alerts.append(
                Alert(window=name, used_percentage=float(used), threshold=level, resets_at=resets)
            )
        if level > 0:
            kept[name] = AlertMark(level=level, resets_at=period)
        else:
            kept.pop(name, None)
    return kept, alerts
