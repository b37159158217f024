"""Usage readings: validating a stored reading and converting the usage endpoint's answer."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final

from ._numbers import plain_number, plain_text
from ._redact import redact_secrets
from ._types import RateWindow, UsageReading

__all__ = [
    "KNOWN_WINDOWS",
    "POLL_SESSION_ID",
    "POLL_SOURCE",
    "is_window_name",
    "parse_usage_reading",
    "usage_from_oauth_response",
]

KNOWN_WINDOWS: Final = (
    "five_hour",
    "seven_day",
    "seven_day_opus",
    "seven_day_sonnet",
    "seven_day_oauth_apps",
)
POLL_SESSION_ID: Final = "usage-poll"
POLL_SOURCE: Final = "oauth-usage"

_WINDOW_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_MAX_TEXT = 256


def is_window_name(name: object) -> bool:
    """Tell whether `name` is a short snake-case window name."""
    return isinstance(name, str) and _WINDOW_NAME.fullmatch(name) is not None


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


def _epoch_seconds(iso: object) -> float | None:
    if not isinstance(iso, str) or len(iso) > 64:
        return None
    try:
        # RFC 3339 allows a lower-case `t` and `z`; fromisoformat does not.
        moment = datetime.fromisoformat(iso.upper())
        # A time without an offset is read as UTC: the pure core never consults the local zone.
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        seconds = moment.timestamp()
    except (ValueError, OverflowError):  # a reset time that does not parse is only omitted
        return None
    return int(seconds) if seconds.is_integer() else seconds


def _convert(body: object, written_at_raw: object, account_raw: object) -> UsageReading | None:
    written_at = plain_number(written_at_raw)
    if not isinstance(body, Mapping) or written_at is None:
        return None
    rate_limits: dict[str, RateWindow] = {}
    for name, raw in body.items():
        if not is_window_name(name) or not isinstance(raw, Mapping):
            continue
        utilization = plain_number(raw.get("utilization"))
        resets = raw.get("resets_at")
        if utilization is None or not (resets is None or isinstance(resets, str)):
            continue
        # The endpoint can report a window past its limit; a reading caps it at the limit.
        used = min(max(float(utilization), 0.0), 100.0)
        window: RateWindow = {"used_percentage": int(used) if used.is_integer() else used}
        reset_seconds = _epoch_seconds(plain_text(resets))
        if reset_seconds is not None:
            window["resets_at"] = reset_seconds
        rate_limits[str.__str__(name)] = window
    if not rate_limits:
        return None
    reading: UsageReading = {
        "session_id": POLL_SESSION_ID,
        "written_at": written_at,
        "rate_limits": rate_limits,
        "source": POLL_SOURCE,
    }
    account = plain_text(account_raw)
    if account and redact_secrets(account) == account:
        reading["account"] = account
    return reading


def usage_from_oauth_response(
    body: object, *, written_at: float, account: str | None = None
) -> UsageReading | None:
    """Convert the usage endpoint's body to a reading; None if no window survives. Never raises."""
    try:
        return _convert(body, written_at, account)
    except Exception:  # a body whose getter throws gives no reading
        return None
