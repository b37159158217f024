"""The 429 backoff of `poll_all`: a small state machine kept in `status-cache/usage-poll.backoff`.

States: *polling* (no file) and *backing off* (a file). A 429 writes the file with a wait of 300 s,
each further 429 doubles the wait up to 3600 s, and a successful poll removes the file. While the
wait is not over no request is sent. The file layout is the library's own: compact JSON
`{"until": <epoch seconds>, "wait": <seconds>}`. It sits outside the sessions dir and does not end
in `.json`, so no reading glob takes it. It is read through the strict gate (the caller's own
regular, owner-only, singly linked file); one that cannot be read, does not parse, or waits more
than an hour from now counts as none. One that cannot be written is skipped.

A 429's `Retry-After` (delta seconds, or an HTTP date) lengthens the wait when it asks for more than
the doubling would give, capped at the hour; `Retry-After: 0`, a date already past, or anything
that does not parse is ignored (the endpoint sends `0` while it keeps answering 429 for hours).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import Final

from agent_accounts._numbers import plain_number

from ._atomic import atomic_write, ensure_private_dir
from ._gate import GateRefused, read_gated, zero
from ._readings import status_cache_dir

__all__ = [
    "BACKOFF_FILE",
    "BACKOFF_FIRST_S",
    "BACKOFF_MAX_BYTES",
    "BACKOFF_MAX_S",
    "Backoff",
    "backoff_after_429",
    "backoff_from_bytes",
    "backoff_path",
    "clear_backoff",
    "read_backoff",
    "retry_after_seconds",
    "write_backoff",
]

BACKOFF_FILE: Final = "usage-poll.backoff"
BACKOFF_FIRST_S: Final = 300.0
BACKOFF_MAX_S: Final = 3600.0
BACKOFF_MAX_BYTES: Final = 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """A backoff in force until `until` (epoch seconds), after a wait of `wait` seconds."""

    until: float
    wait: float

    def waiting(self, now: float) -> bool:
        """Tell whether the wait is not over at `now`."""
        return now < self.until


def _finite(value: object) -> float | None:
    number = plain_number(value)
    return None if number is None else float(number)


def backoff_from_bytes(raw: bytes | bytearray, *, now: float) -> Backoff | None:
    """Parse a backoff file's bytes; None when invalid or waiting more than an hour from `now`."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    until, wait = _finite(data.get("until")), _finite(data.get("wait"))
    if until is None or wait is None or until - now > BACKOFF_MAX_S:
        return None
    return Backoff(until=until, wait=min(max(wait, BACKOFF_FIRST_S), BACKOFF_MAX_S))


def retry_after_seconds(header: str | None, *, now: float) -> float | None:
    """Read a `Retry-After` value as seconds from `now`; None when absent, zero, past or junk."""
    if header is None:
        return None
    text = header.strip()
    if 0 < len(text) <= 16 and text.isascii() and text.isdigit():
        seconds = float(int(text))
    elif 0 < len(text) <= 64 and text.isascii() and text.isprintable():
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(text)
        except Exception:  # junk: ignored, as if absent
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is taken as UTC
            from datetime import UTC

            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - now
    else:
        return None
    return seconds if seconds > 0 else None


def backoff_after_429(
    previous: Backoff | None, *, now: float, retry_after: float | None = None
) -> Backoff:
    """Return the backoff that follows a 429: 300 s first, then double the last wait, capped.

    A `retry_after` (seconds) longer than that wait replaces it, still capped at the hour.
    """
    wait = BACKOFF_FIRST_S if previous is None else min(previous.wait * 2, BACKOFF_MAX_S)
    if retry_after is not None and retry_after > wait:
        wait = min(retry_after, BACKOFF_MAX_S)
    return Backoff(until=now + wait, wait=wait)


def backoff_path(config_dir: str) -> str:
    """Return `<config_dir>/status-cache/usage-poll.backoff`."""
    return os.path.join(status_cache_dir(config_dir), BACKOFF_FILE)


def read_backoff(config_dir: str, *, uid: int | None, now: float) -> Backoff | None:
    """Read the backoff file through the strict gate; None when absent or it counts as none."""
    try:
        raw = read_gated(backoff_path(config_dir), uid=uid, max_bytes=BACKOFF_MAX_BYTES)
    except (GateRefused, OSError):
        return None
    if raw is None:
        return None
    try:
        return backoff_from_bytes(raw, now=now)
    finally:
        zero(raw)


def write_backoff(config_dir: str, state: Backoff) -> bool:
    """Write the backoff file atomically; False (and nothing raised) when it cannot be written."""
    data = json.dumps({"until": state.until, "wait": state.wait}, separators=(",", ":"))
    try:
        directory = status_cache_dir(config_dir)
        ensure_private_dir(directory)
        atomic_write(directory, BACKOFF_FILE, data.encode())
    except OSError:
        return False
    return True


def clear_backoff(config_dir: str) -> None:
    """Remove the backoff file after a successful poll; a file already gone is fine."""
    with contextlib.suppress(OSError):
        os.unlink(backoff_path(config_dir))
