"""The alert tests, public and white-box: a poll reading of given windows and a mark."""

from __future__ import annotations

from typing import Any

from agent_accounts import AlertMark

__all__ = ["HOUR", "NOW", "T", "mark", "reading"]

NOW = 1_800_000_000.0
HOUR = 3600.0
T = (80.0, 95.0)


def reading(**windows: tuple[float, float | None]) -> Any:
    limits: dict[str, Any] = {}
    for name, (used, resets) in windows.items():
        limits[name] = {"used_percentage": used}
        if resets is not None:
            limits[name]["resets_at"] = resets
    return {"session_id": "usage-poll", "written_at": NOW, "rate_limits": limits}


def mark(level: float, resets: float | None = NOW + HOUR) -> AlertMark:
    return AlertMark(level=level, resets_at=resets)
