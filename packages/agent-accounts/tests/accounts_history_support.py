"""The usage history's tests, public and white-box: where the history file sits and a poll
reading at a given time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["HISTORY", "T0", "poll_reading"]

HISTORY = Path("status-cache") / "usage-history.jsonl"
T0 = 1_800_000_000.0


def poll_reading(t: float, five: float, week: float = 10.0, **extra: float) -> dict[str, Any]:
    """Return a `usage-poll` reading written at `t` with these window percents."""
    limits = {
        "five_hour": {"used_percentage": five, "resets_at": T0 + 5 * 3600},
        "seven_day": {"used_percentage": week, "resets_at": T0 + 7 * 86400},
    }
    limits.update({k: {"used_percentage": v} for k, v in extra.items()})
    return {
        "session_id": "usage-poll",
        "written_at": t,
        "rate_limits": limits,
        "source": "oauth-usage",
    }
