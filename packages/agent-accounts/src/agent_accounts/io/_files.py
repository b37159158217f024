"""Local files: the login state behind the gate, and usage readings written and read atomically."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from agent_accounts import (
    LoginRefused,
    LoginState,
    UsageReading,
    login_state_from_credentials,
    parse_usage_reading,
    redact_secrets,
)

from ._credentials import CREDENTIALS_FILE, CREDENTIALS_MAX_BYTES, read_credentials
from ._gate import GateRefused
from ._readings import USAGE_FILE, newest_reading
from ._sessions import store_reading

__all__ = [
    "CREDENTIALS_FILE",
    "CREDENTIALS_MAX_BYTES",
    "UsageFile",
    "read_credentials",
    "read_login_state",
    "read_usage",
    "write_reading",
]


def _now_ms(now: float | None) -> float:
    return time.time() * 1000 if now is None else now * 1000


def read_login_state(
    config_dir: str | os.PathLike[str], *, now: float | None = None, uid: int | None = None
) -> LoginState:
    """Read the token-free login state of a config dir through the gate; never writes."""
    try:
        credentials = read_credentials(os.fspath(config_dir), uid=uid)
    except GateRefused as refused:
        return LoginRefused(reason=refused.reason)
    except OSError as exc:
        failure = redact_secrets(exc)
    else:
        return login_state_from_credentials(credentials, _now_ms(now))
    # Raised outside the handler: inside it, Python would link the unredacted original as
    # __context__ even with `from None`.
    raise failure


_INVALID_READING = "reading must be a valid usage-poll reading"


def write_reading(config_dir: str | os.PathLike[str], reading: object) -> str:
    """Write a usage-poll reading to `status-cache/sessions/usage-poll.json` atomically."""
    parsed = parse_usage_reading(reading)
    if parsed is None or parsed["session_id"] != "usage-poll":
        raise TypeError(_INVALID_READING)
    return store_reading(config_dir, USAGE_FILE, parsed)


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageFile:
    """The newest reading of a config dir, the file it came from and its age in whole seconds."""

    reading: UsageReading
    file: str
    age_seconds: int


def read_usage(
    config_dir: str | os.PathLike[str],
    *,
    now: float | None = None,
    windows: Iterable[str] | None = None,
) -> UsageFile | None:
    """Return the newest reading in the sessions dir (with every one of `windows`, if given).

    A reading dated more than a minute ahead of `now` counts as written when its file was, or
    `now`, whichever is earlier (its `written_at` is returned so); one whose file is dated ahead
    too ranks behind every reading whose time is known. Raises ValueError for a non-finite
    `now`, and an unexpected filesystem error redacted, without a cause. A missing sessions dir
    gives None.
    """
    newest = newest_reading(config_dir, now=now, windows=windows)
    if newest is None:
        return None
    reading, file, age_seconds = newest
    return UsageFile(reading=reading, file=file, age_seconds=age_seconds)
