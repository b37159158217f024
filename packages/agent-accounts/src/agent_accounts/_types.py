"""JSON shapes shared by the pure core and the I/O layer."""

from __future__ import annotations

from typing import NotRequired, TypedDict

__all__ = ["RateWindow", "UsageReading"]


class RateWindow(TypedDict):
    """One rate-limit window: percentage used (0..100) and, when known, its reset time."""

    used_percentage: float
    resets_at: NotRequired[float]


class UsageReading(TypedDict):
    """A usage reading as written to and read from `usage-poll.json` (the spec's exact keys)."""

    session_id: str
    written_at: float
    rate_limits: dict[str, RateWindow]
    source: NotRequired[str]
    account: NotRequired[str]
