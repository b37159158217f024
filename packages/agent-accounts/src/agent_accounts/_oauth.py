"""The usage endpoint's answer converted to a usage reading."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final

from ._numbers import plain_number, plain_text
from ._redact import redact_secrets
from ._types import RateWindow, UsageReading
from ._usage import is_window_name

__all__ = ["POLL_SESSION_ID", "POLL_SOURCE", "usage_from_oauth_response"]

POLL_SESSION_ID: Final = "usage-poll"
POLL_SOURCE: Final = "oauth-usage"


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
        # A window holds both keys (AMENDMENTS); `extra_usage` has a `utilization` and no
        # `resets_at`, and is not a window.
        if not is_window_name(name) or not isinstance(raw, Mapping):
            continue
        if "utilization" not in raw or "resets_at" not in raw:
            continue
        utilization = plain_number(raw["utilization"])
        resets = raw["resets_at"]
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
