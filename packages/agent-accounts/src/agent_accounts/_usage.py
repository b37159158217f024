"""Usage readings: validating a stored reading (the endpoint's answer is converted in `_oauth`)."""

from __future__ import annotations

# `_collections_abc`, not `collections.abc`: the same classes, without importing `collections`
# (and `operator`, `keyword`, `reprlib`...) on the status line.
from _collections_abc import Mapping

from ._numbers import plain_number, plain_text

TYPE_CHECKING = False  # not typing's: the status line imports this module, never typing
if TYPE_CHECKING:
    from typing import Final

    from ._types import RateWindow, UsageReading

__all__ = ["KNOWN_WINDOWS", "is_window_name", "parse_usage_reading"]

KNOWN_WINDOWS: Final = (
    "five_hour",
    "seven_day",
    "seven_day_opus",
    "seven_day_sonnet",
    "seven_day_oauth_apps",
)

_WINDOW_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz")
_WINDOW_REST = _WINDOW_FIRST | frozenset("0123456789_")
_MAX_TEXT = 256


def is_window_name(name: object) -> bool:
    """Tell whether `name` is a short snake-case window name (`[a-z][a-z0-9_]{0,63}`)."""
    # No regex: `re` (with `enum` and `functools`) is most of the status line's import time.
    return (
        isinstance(name, str)
        and 0 < len(name) <= 64
        and name[0] in _WINDOW_FIRST
        and _WINDOW_REST.issuperset(name)
    )


def _short_text(value: object) -> str | None:
    text = plain_text(value)
    return text if text is not None and 0 < len(text) <= _MAX_TEXT else None


def _parse_window(value: object) -> RateWindow | None:
    if not isinstance(value, Mapping):
        return None
    used = plain_number(value.get("used_percentage"))
    if used is None or not 0 <= used <= 100:
        return None
    window: RateWindow = {"used_percentage": used}
    resets_raw = value.get("resets_at")
    if resets_raw is not None:
        resets = plain_number(resets_raw)
        if resets is None:
            return None
        window["resets_at"] = resets
    return window


def _parse(value: object) -> UsageReading | None:
    if not isinstance(value, Mapping):
        return None
    session_id = _short_text(value.get("session_id"))
    written_at = plain_number(value.get("written_at"))
    limits = value.get("rate_limits")
    if session_id is None or written_at is None or not isinstance(limits, Mapping):
        return None
    rate_limits: dict[str, RateWindow] = {}
    for name, raw in limits.items():
        if not is_window_name(name):
            return None
        window = _parse_window(raw)
        if window is None:
            return None
        rate_limits[str.__str__(name)] = window
    reading: UsageReading = {
        "session_id": session_id,
        "written_at": written_at,
        "rate_limits": rate_limits,
    }
    for key in ("source", "account"):
        if key in value:
            text = _short_text(value.get(key))
            if text is None:
                return None
            reading[key] = text
    return reading


def parse_usage_reading(obj: object) -> UsageReading | None:
    """Validate a usage reading, keeping only the keys the spec defines; None when invalid."""
    try:
        return _parse(obj)
    except Exception:  # a hostile mapping (throwing getter) is simply not a reading
        return None
