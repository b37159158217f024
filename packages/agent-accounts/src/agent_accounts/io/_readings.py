"""Usage readings on disk: the sessions dir of a config dir, and the newest reading in it.

`read_usage` wraps `newest_reading` in a `UsageFile`; the status line calls it directly, so this
module imports neither `typing` nor `dataclasses` (nor the login-state code of `_files`).
"""

from __future__ import annotations

import errno
import json
import math
import os
import time

from agent_accounts._usage import parse_usage_reading

from ._gate import GateRefused, read_gated

TYPE_CHECKING = False  # not typing's: the status line imports this module, never typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Final

    from agent_accounts import RateWindow, UsageReading

__all__ = [
    "CLOCK_AHEAD_S",
    "USAGE_FILE",
    "USAGE_MAX_BYTES",
    "clock_ahead",
    "counted_time",
    "dated_readings",
    "fresh_reading",
    "newest_reading",
    "newest_windows",
    "poll_windows",
    "reading_from_json",
    "sessions_dir",
    "status_cache_dir",
    "windows_by_newest",
]

USAGE_FILE: Final = "usage-poll.json"
USAGE_MAX_BYTES: Final = 256 * 1024
CLOCK_AHEAD_S: Final = 60.0
"""A reading (or lock) dated more than this ahead of now is from a clock that was ahead."""
# A file or dir that vanished, or a path component that is not a dir: nothing to read.
_GONE: Final = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})


def status_cache_dir(config_dir: str) -> str:
    """Return `<config_dir>/status-cache`."""
    return os.path.join(config_dir, "status-cache")


def sessions_dir(config_dir: str) -> str:
    """Return the dir that holds every session's reading, the poller's included."""
    return os.path.join(status_cache_dir(config_dir), "sessions")


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
    reading = reading_from_json(raw)
    if reading is None:
        return None
    for key in ("session_id", "source", "account") if redact else ():
        if key in reading:
            reading[key] = _redact(reading[key])
    return reading


def reading_from_json(data: bytes | bytearray) -> UsageReading | None:
    """Return the valid reading with at least one window that `data` holds as JSON, else None.

    The one parse of a stored reading: a session file, the poller's, or a history line.
    """
    try:
        reading = parse_usage_reading(json.loads(data))
    except (ValueError, RecursionError):  # RecursionError: nested brackets
        return None
    if reading is None or not reading["rate_limits"]:
        return None
    return reading


def counted_time(written_at: float, mtime: float, now: float) -> float:
    """Return when a reading counts as written (the rule of every view of a reading).

    Its own `written_at`, unless that is more than `CLOCK_AHEAD_S` ahead of `now` (a clock
    stepped back since, or another machine's): then when its file was written (`mtime`), or
    `now`, whichever is earlier.
    """
    if written_at <= now + CLOCK_AHEAD_S:
        return written_at
    return min(mtime, now)


def _check_now(now: object) -> float:
    if now is None:
        return time.time()
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise ValueError("now must be a finite number of epoch seconds")
    return float(now)


def dated_readings(
    config_dir: str | os.PathLike[str], *, now: float, redact_text: bool = True
) -> list[tuple[float, bool, float, str, UsageReading]]:
    """Return every reading of the sessions dir as (counted time, known, dated, path, reading).

    The counted time is `counted_time`'s; `known` is False for a reading whose `written_at` and
    file time are both ahead of `now` (when it was written cannot be told: it counts as written
    `now`, but ranks behind every reading whose time is known, so it never hides one written
    since); `dated` is the file's own `written_at`, which the reading returned holds replaced by
    its counted time. Sorted by name; an
    unexpected filesystem error is raised redacted, without a cause; no dir gives [].
    """
    directory = sessions_dir(os.fspath(config_dir))
    found: list[tuple[float, bool, float, str, UsageReading]] = []
    try:
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
        except OSError as exc:
            if exc.errno in _GONE:
                return found
            raise
        for name in names:
            path = os.path.join(directory, name)
            reading = _load_reading(path, redact=redact_text)
            if reading is None:
                continue
            dated = written = float(reading["written_at"])
            known = True
            if written > now + CLOCK_AHEAD_S:  # rare: only then is the file's time looked up
                try:
                    mtime = os.stat(path).st_mtime
                except OSError as exc:
                    if exc.errno in _GONE:
                        continue
                    raise
                written = counted_time(written, mtime, now)
                known = mtime <= now + CLOCK_AHEAD_S
                reading["written_at"] = written
            found.append((written, known, dated, path, reading))
    except OSError as exc:
        failure: BaseException | None = _redact_error(exc)
    else:
        failure = None
    if failure is not None:
        raise failure  # outside the handler: no __context__ links the unredacted original
    return found


def clock_ahead(
    config_dir: str | os.PathLike[str], *, now: float | None = None
) -> list[tuple[str, float]]:
    """Return (file name, seconds ahead) for each reading dated more than a minute ahead of now."""
    current = _check_now(now)
    return [
        (os.path.basename(path), dated - current)
        for _, _, dated, path, _ in dated_readings(config_dir, now=current, redact_text=False)
        if dated > current + CLOCK_AHEAD_S
    ]


def newest_reading(
    config_dir: str | os.PathLike[str],
    *,
    now: float | None = None,
    windows: Iterable[str] | None = None,
    redact_text: bool = True,
) -> tuple[UsageReading, str, int] | None:
    """Return the newest reading in the sessions dir, its file and its age in whole seconds.

    The rules of `read_usage`, which wraps it: only readings with every one of `windows` count;
    a reading dated more than a minute ahead counts as written when `counted_time` says (its
    `written_at` is that time in the reading returned) and one whose time cannot be told ranks
    behind the others (`dated_readings`); ValueError for a non-finite `now`; an unexpected
    filesystem error is raised redacted, without a cause; a missing sessions dir gives None.
    `redact_text=False` leaves the reading's `session_id`, `source` and `account` unredacted,
    for a caller that prints none of them (the status line prints numbers only).
    """
    current = _check_now(now)
    wanted = (windows,) if isinstance(windows, str) else tuple(windows or ())
    best: tuple[bool, float, str, UsageReading] | None = None
    for written, known, _, path, reading in dated_readings(
        config_dir, now=current, redact_text=redact_text
    ):
        if any(w not in reading["rate_limits"] for w in wanted):
            continue
        if best is None or (known, written) > best[:2]:  # ties: the first name in sorted order
            best = (known, written, path, reading)
    if best is None:
        return None
    return best[3], best[2], max(0, math.floor(current - best[1]))


def windows_by_newest(
    config_dir: str | os.PathLike[str], *, now: float | None = None
) -> dict[str, tuple[RateWindow, float, str]]:
    """Return each window as the newest reading that carries it has it: (window, counted, file).

    A session reading carries only `five_hour` and `seven_day`, the poller's carries the
    per-model windows too (`seven_day_opus`): a view of every window (alerts, `status`) takes
    each from the newest reading that has it, ranked as `newest_reading` ranks.
    """
    current = _check_now(now)
    ranked = sorted(
        dated_readings(config_dir, now=current, redact_text=False),
        key=lambda item: (item[1], item[0]),
        reverse=True,
    )
    found: dict[str, tuple[RateWindow, float, str]] = {}
    for written, _, _, path, reading in ranked:
        for name, window in reading["rate_limits"].items():
            found.setdefault(name, (window, written, path))
    return found


def newest_windows(
    config_dir: str | os.PathLike[str], *, now: float | None = None
) -> UsageReading | None:
    """Return one reading holding every window of `windows_by_newest`; None when none.

    Its `written_at` is the oldest counted time of the readings it drew on.
    """
    found = windows_by_newest(config_dir, now=now)
    if not found:
        return None
    merged: UsageReading = {
        "session_id": "merged",
        "written_at": min(written for _, written, _ in found.values()),
        "rate_limits": {name: window for name, (window, _, _) in found.items()},
    }
    return merged


def fresh_reading(
    config_dir: str | os.PathLike[str],
    *,
    max_age: float,
    now: float | None = None,
    windows: Iterable[str] = (),
) -> tuple[UsageReading, int] | None:
    """Return the newest reading younger than `max_age` carrying every one of `windows`, and its
    age; None when there is none (`poll --max-age` then polls).

    A reading whose time cannot be told (dated ahead, its file too) is never fresh: counting it
    as written now would skip every poll until the clock catches up.
    """
    current = _check_now(now)
    wanted = tuple(windows)
    best: tuple[float, UsageReading] | None = None
    for written, known, _, _, reading in dated_readings(config_dir, now=current, redact_text=False):
        if not known or current - written >= max_age:
            continue
        if any(w not in reading["rate_limits"] for w in wanted):
            continue
        if best is None or written > best[0]:
            best = (written, reading)
    if best is None:
        return None
    return best[1], max(0, math.floor(current - best[0]))


def poll_windows(config_dir: str | os.PathLike[str]) -> tuple[str, ...]:
    """Return the windows the poller's last reading (`usage-poll.json`, of any age) carries."""
    path = os.path.join(sessions_dir(os.fspath(config_dir)), USAGE_FILE)
    try:
        reading = _load_reading(path, redact=False)
    except OSError:
        return ()
    return () if reading is None else tuple(reading["rate_limits"])
