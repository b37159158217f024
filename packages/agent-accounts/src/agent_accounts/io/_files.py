"""Local files: the login state behind the gate, and usage readings written and read atomically."""

from __future__ import annotations

import errno
import json
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from agent_accounts import (
    LoginRefused,
    LoginState,
    UsageReading,
    login_state_from_credentials,
    parse_usage_reading,
    redact_secrets,
)

from ._atomic import atomic_write, ensure_private_dir
from ._gate import GateRefused, read_gated, zero

__all__ = [
    "CREDENTIALS_FILE",
    "CREDENTIALS_MAX_BYTES",
    "USAGE_FILE",
    "USAGE_MAX_BYTES",
    "UsageFile",
    "read_credentials",
    "read_login_state",
    "read_usage",
    "sessions_dir",
    "status_cache_dir",
    "write_reading",
]

CREDENTIALS_FILE: Final = ".credentials.json"
CREDENTIALS_MAX_BYTES: Final = 64 * 1024
USAGE_FILE: Final = "usage-poll.json"
USAGE_MAX_BYTES: Final = 256 * 1024
# A file or dir that vanished, or a path component that is not a dir: nothing to read.
_GONE: Final = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})


def status_cache_dir(config_dir: str) -> str:
    """Return `<config_dir>/status-cache`."""
    return os.path.join(config_dir, "status-cache")


def sessions_dir(config_dir: str) -> str:
    """Return the dir that holds every session's reading, the poller's included."""
    return os.path.join(status_cache_dir(config_dir), "sessions")


def read_credentials(config_dir: str, *, uid: int | None) -> Any:
    """Read and parse `.credentials.json` through the gate; None when absent.

    Raises GateRefused (invalid JSON is `malformed`) and OSError. The raw bytes are zeroed.
    """
    raw = read_gated(
        os.path.join(config_dir, CREDENTIALS_FILE), uid=uid, max_bytes=CREDENTIALS_MAX_BYTES
    )
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # the parser's message quotes the file: drop it
        raise GateRefused("malformed") from None
    finally:
        zero(raw)


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
_SECRET_READING = "reading must not carry secret-shaped text"


def write_reading(config_dir: str | os.PathLike[str], reading: object) -> str:
    """Write a usage-poll reading to `status-cache/sessions/usage-poll.json` atomically."""
    parsed = parse_usage_reading(reading)
    if parsed is None or parsed["session_id"] != "usage-poll":
        raise TypeError(_INVALID_READING)
    text = json.dumps(parsed, separators=(",", ":"), allow_nan=False)
    if redact_secrets(text) != text:
        raise TypeError(_SECRET_READING)
    directory = sessions_dir(os.fspath(config_dir))
    try:
        ensure_private_dir(directory)
        return atomic_write(directory, USAGE_FILE, text.encode())
    except OSError as exc:
        failure = redact_secrets(exc)
    raise failure  # outside the handler, so no __context__ links the original


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageFile:
    """The newest reading of a config dir, the file it came from and its age in whole seconds."""

    reading: UsageReading
    file: str
    age_seconds: int


def _load_reading(path: str) -> UsageReading | None:
    """Read one session file; None when it is to be skipped. Raises OSError when unexpected."""
    try:
        raw = read_gated(path, uid=None, max_bytes=USAGE_MAX_BYTES, strict=False)
    except GateRefused:  # not a regular file, replaced in flight, or over 256 KiB
        return None
    except OSError as exc:
        if exc.errno in _GONE:  # removed or replaced by its writer between listdir and open
            return None
        raise
    if raw is None:
        return None
    try:
        reading = parse_usage_reading(json.loads(raw))
    except (ValueError, RecursionError):
        return None
    if reading is None or not reading["rate_limits"]:
        return None
    for key in ("session_id", "source", "account"):
        if key in reading:
            reading[key] = redact_secrets(reading[key])
    return reading


def read_usage(
    config_dir: str | os.PathLike[str],
    *,
    now: float | None = None,
    windows: Iterable[str] | None = None,
) -> UsageFile | None:
    """Return the newest reading in the sessions dir (with every one of `windows`, if given).

    Raises ValueError for a non-finite `now`, and an unexpected filesystem error redacted,
    without a cause. A missing sessions dir gives None.
    """
    checked: object = now  # callers outside mypy pass anything
    if checked is not None and (
        isinstance(checked, bool)
        or not isinstance(checked, int | float)
        or not math.isfinite(checked)
    ):
        raise ValueError("now must be a finite number of epoch seconds")
    wanted = (windows,) if isinstance(windows, str) else tuple(windows or ())
    directory = sessions_dir(os.fspath(config_dir))
    best: tuple[float, str, UsageReading] | None = None
    try:
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
        except OSError as exc:
            if exc.errno in _GONE:
                return None
            raise
        for name in names:
            path = os.path.join(directory, name)
            reading = _load_reading(path)
            if reading is None or any(w not in reading["rate_limits"] for w in wanted):
                continue
            written = float(reading["written_at"])
            if best is None or written > best[0]:  # ties: the first name in sorted order
                best = (written, path, reading)
    except OSError as exc:
        failure: BaseException | None = redact_secrets(exc)
    else:
        failure = None
    if failure is not None:
        raise failure  # outside the handler: no __context__ links the unredacted original
    if best is None:
        return None
    current = time.time() if now is None else float(now)
    return UsageFile(
        reading=best[2], file=best[1], age_seconds=max(0, math.floor(current - best[0]))
    )
