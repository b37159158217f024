"""The history `best` and `run` weigh, stored by the poll timer: `usage-history.summary`.

It sits in `status-cache`. `best` and `run` read a bounded part of each history at start-up (the
newest lines and some evenly spaced older ones: `selected_history`) and parse every line of it
through the reading validator. `poll --write` stores that part already parsed, as compact JSON:
each reading's time and windows (`[written_at, [[name, used, resets_at or null], ...]]`), in the
files' order, under a key of the history files as they were read (device, inode, size, mtime,
ctime, mode, owner and links of the current and the rotated file), the reader's uid, the format
and the selection's bounds. `best` and `run` take the stored readings only while that key still
matches the files (an `lstat` of each); a summary that is missing, unreadable, refused by the
strict gate, malformed in any field or keyed to other files (a line appended since, a rotation)
is not used: they read the history itself, as before. Either way the same readings reach the
forecast, so the same account is chosen. The stored readings carry only what the forecast reads
(their `session_id` is `SUMMARY_SESSION`, and no `source`).

The summary is written atomically (`atomic_write`: a reader sees the old one or the new one,
never a part); the key is taken before and after reading the history, and nothing is written
when they differ (a line appended meanwhile). Storing never fails a poll: a full disk or a
read-only mount leaves the summary as it was, and a stale one is never used.
"""

from __future__ import annotations

import json
import math
import os

from agent_accounts._usage import is_window_name

from ._atomic import atomic_write
from ._gate import GateRefused, read_gated
from ._history import (
    HISTORY_FILE,
    HISTORY_LINE_MAX,
    HISTORY_MAX_BYTES,
    dated_history,
    read_usage_history,
    selected_history,
)
from ._linelog import rotated_name
from ._readings import status_cache_dir

TYPE_CHECKING = False  # not typing's: `best` and `run` read this at start-up
if TYPE_CHECKING:
    from typing import Final

    from agent_accounts._types import RateWindow, UsageReading

__all__ = [
    "SUMMARY_FILE",
    "SUMMARY_MAX_BYTES",
    "SUMMARY_SESSION",
    "read_weighed_history",
    "store_history_summary",
]

SUMMARY_FILE: Final = "usage-history.summary"
SUMMARY_MAX_BYTES: Final = 1024 * 1024
SUMMARY_SESSION: Final = "usage-history"
_FORMAT: Final = 1


def _key(directory: str, uid: int, tail_bytes: int, older_lines: int) -> list[object]:
    """What the stored readings hold for: the files' identity and state, and the selection."""
    key: list[object] = [_FORMAT, uid, HISTORY_MAX_BYTES, HISTORY_LINE_MAX, tail_bytes, older_lines]
    for name in (HISTORY_FILE, rotated_name(HISTORY_FILE)):
        try:
            st = os.lstat(os.path.join(directory, name))
        except FileNotFoundError:
            key.append(None)
            continue
        key.append(
            [
                st.st_dev,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_mode,
                st.st_uid,
                st.st_nlink,
            ]
        )
    return key


def _number(value: object) -> bool:
    # json.loads gives exact ints and floats; NaN and infinities are refused as it parses.
    if type(value) is float:
        return True
    return type(value) is int and abs(value) <= 2**53


def _no_constant(name: str) -> object:
    raise ValueError(name)


def _stored(raw: bytes | bytearray, key: list[object]) -> list[UsageReading] | None:
    """The readings a summary holds when it is whole and keyed `key`; else None."""
    try:
        doc = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    if type(doc) is not dict or doc.get("key") != key or type(doc.get("readings")) is not list:
        return None
    readings: list[UsageReading] = []
    names: set[str] = set()
    for row in doc["readings"]:
        if type(row) is not list or len(row) != 2 or not _number(row[0]):
            return None
        written_at, windows = row
        if type(windows) is not list or not windows:
            return None
        limits: dict[str, RateWindow] = {}
        for window in windows:
            if type(window) is not list or len(window) != 3:
                return None
            name, used, resets = window
            if type(name) is not str or name in limits:
                return None
            if name not in names:
                if not is_window_name(name):
                    return None
                names.add(name)
            if not _number(used) or not 0 <= used <= 100:
                return None
            limits[name] = {"used_percentage": used}
            if resets is not None:
                if not _number(resets):
                    return None
                limits[name]["resets_at"] = resets
        readings.append(
            {"session_id": SUMMARY_SESSION, "written_at": written_at, "rate_limits": limits}
        )
    return readings


def _read(directory: str, key: list[object]) -> list[UsageReading] | None:
    try:
        raw = read_gated(
            os.path.join(directory, SUMMARY_FILE), uid=None, max_bytes=SUMMARY_MAX_BYTES
        )
    except (GateRefused, OSError):
        return None
    return None if raw is None else _stored(raw, key)


def read_weighed_history(
    config_dir: str, *, now: float, since: float, tail_bytes: int, older_lines: int
) -> list[UsageReading]:
    """Return `read_usage_history(config_dir, now=, since=, tail_bytes=, older_lines=)`'s
    readings (for the forecast only: see the module docstring), from the stored summary when it
    holds for the files as they are, else from the history itself (same errors)."""
    directory = status_cache_dir(config_dir)
    try:
        key = _key(directory, os.getuid(), tail_bytes, older_lines)
    except OSError:
        stored = None
    else:
        stored = _read(directory, key)
    if stored is None or not (math.isfinite(now) and math.isfinite(since)):
        return read_usage_history(
            config_dir, now=now, since=since, tail_bytes=tail_bytes, older_lines=older_lines
        )
    return dated_history(stored, now=now, since=since)


def store_history_summary(config_dir: str, *, tail_bytes: int, older_lines: int) -> bool:
    """Store the summary of `config_dir`'s history unless the one stored still holds.

    True when a summary holding for the history as it is now is stored (already or by this
    call); False when none could be (no history, a line appended while reading it, a full disk,
    a refused file). Never raises.
    """
    try:
        directory = status_cache_dir(config_dir)
        uid = os.getuid()
        key = _key(directory, uid, tail_bytes, older_lines)
        if key[-2:] == [None, None]:
            return False
        if _read(directory, key) is not None:
            return True
        readings = selected_history(
            directory, uid=uid, tail_bytes=tail_bytes, older_lines=older_lines
        )
        if _key(directory, uid, tail_bytes, older_lines) != key:
            return False  # a line was appended (or the log rotated) while it was read
        rows = [
            [
                r["written_at"],
                [
                    [n, w["used_percentage"], w.get("resets_at")]
                    for n, w in r["rate_limits"].items()
                ],
            ]
            for r in readings
        ]
        data = json.dumps({"key": key, "readings": rows}, separators=(",", ":"), allow_nan=False)
        atomic_write(directory, SUMMARY_FILE, data.encode())
    except Exception:  # a full disk, a read-only mount, a planted file: best and run read it all
        return False
    return True
