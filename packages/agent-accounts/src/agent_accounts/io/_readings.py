"""Usage readings on disk: the sessions dir of a config dir, and the newest reading in it.

`read_usage` wraps `newest_reading` in a `UsageFile`; the status line calls it directly, so this
module imports neither `typing` nor `dataclasses` (nor the login-state code of `_files`).
"""

from __future__ import annotations

import _json
import errno
import math
import os
import time

from agent_accounts._usage import parse_usage_reading

from ._gate import GateRefused, read_gated

TYPE_CHECKING = False  # not typing's: the status line imports this module, never typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Final

    from agent_accounts import UsageReading

__all__ = [
    "USAGE_FILE",
    "USAGE_MAX_BYTES",
    "json_loads",
    "newest_reading",
    "sessions_dir",
    "status_cache_dir",
]

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


class _JsonContext:
    """What `_json.make_scanner` reads from a decoder: `json.loads`'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.__getitem__
    memo: dict[str, str] = {}  # noqa: RUF012 - the C scanner keeps its own


# The C scanner behind `json.loads`, without `json` itself: importing `json` pulls in `re`,
# `enum` and `functools`, most of the status line's start-up. Same parser, same values.
# typeshed types the context as a scanner; any object with these attributes is what C reads.
_scan = _json.make_scanner(_JsonContext())  # type: ignore[arg-type]
_BLANK = " \t\n\r"


def json_loads(raw: bytes | bytearray) -> object:
    """Parse a JSON document as `json.loads` does; ValueError when it is not one.

    No copy of `raw` is made beyond the decoded text (a credentials buffer is zeroed after).
    """
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\0" in raw[:4]:
        import json  # UTF-16 or UTF-32, which json.loads detects: rare enough to pay for json

        return json.loads(raw)
    text = raw.decode("utf-8", "surrogatepass")
    if raw.startswith(b"\xef\xbb\xbf"):  # json.loads takes a UTF-8 BOM on bytes
        text = text[1:]
    index = len(text) - len(text.lstrip(_BLANK))
    try:
        value, end = _scan(text, index)
    except StopIteration:
        value, end = None, -1
    if end < 0 or text[end:].strip(_BLANK):
        raise ValueError("not a JSON document")
    return value


def _redact(text: str) -> str:
    from agent_accounts._redact import redact_secrets

    return redact_secrets(text)


def _redact_error(exc: BaseException) -> BaseException:
    from agent_accounts._redact import redact_secrets

    return redact_secrets(exc)


def _load_reading(path: str, *, redact: bool = True) -> UsageReading | None:
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
        reading = parse_usage_reading(json_loads(raw))
    except (ValueError, RecursionError):
        return None
    if reading is None or not reading["rate_limits"]:
        return None
    for key in ("session_id", "source", "account") if redact else ():
        if key in reading:
            reading[key] = _redact(reading[key])
    return reading


def newest_reading(
    config_dir: str | os.PathLike[str],
    *,
    now: float | None = None,
    windows: Iterable[str] | None = None,
    redact_text: bool = True,
) -> tuple[UsageReading, str, int] | None:
    """Return the newest reading in the sessions dir, its file and its age in whole seconds.

    The rules of `read_usage`, which wraps it: only readings with every one of `windows` count;
    ValueError for a non-finite `now`; an unexpected filesystem error is raised redacted,
    without a cause; a missing sessions dir gives None. `redact_text=False` leaves the reading's
    `session_id`, `source` and `account` unredacted, for a caller that prints none of them (the
    status line prints numbers only).
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
            reading = _load_reading(path, redact=redact_text)
            if reading is None or any(w not in reading["rate_limits"] for w in wanted):
                continue
            written = float(reading["written_at"])
            if best is None or written > best[0]:  # ties: the first name in sorted order
                best = (written, path, reading)
    except OSError as exc:
        failure: BaseException | None = _redact_error(exc)
    else:
        failure = None
    if failure is not None:
        raise failure  # outside the handler: no __context__ links the unredacted original
    if best is None:
        return None
    current = time.time() if now is None else float(now)
    return best[2], best[1], max(0, math.floor(current - best[0]))
