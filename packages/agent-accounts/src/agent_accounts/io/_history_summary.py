"""The history `best` and `run` weigh, stored by the poll timer: `usage-history.summary`.

It sits in `status-cache`. `best` and `run` read a bounded part of each history at start-up (the
newest lines and some evenly spaced older ones) and parse every line of it through the reading
validator. That part is framed (`framed_history`) so that appending a line only adds it: the
frame is the history up to the end of the line the current file's last multiple of
`FRAME_BYTES` falls in, selected as `selected_history` selects it (the newest lines and the
thinned older ones), and every line after the frame's end is read as it is.

`poll --write` stores the frame's readings already parsed, as compact JSON: each reading's time
and windows (`[written_at, [[name, used, resets_at or null], ...]]`), in the files' order, under
a key of the history files as they were read (the rotated file's device, inode, size, mtime,
ctime, mode, owner and links; the current file's the same but for its size, mtime and ctime,
which appends move: its size's frame and the frame's end instead), the reader's uid, the format
and the selection's bounds. `best` and `run` take the stored readings while that key still
matches the files (an `lstat` of each), and read and parse only the lines after the frame's end,
checking that a line ends there and that the file did not move while they read. A summary that
is missing, unreadable, refused by the strict gate, malformed in any field or keyed to other
files (a rotation, the file grown into its next frame) is not used: they read the framed history
itself. Either way the same readings reach the forecast, so the same account is chosen. The
stored readings carry only what the forecast reads (their `session_id` is `SUMMARY_SESSION`,
and no `source`).

The summary is written atomically (`atomic_write`: a reader sees the old one or the new one,
never a part); the key is taken before and after reading the history, and nothing is written
when they differ. Storing never fails a poll: a full disk or a read-only mount leaves the
summary as it was, and a stale one is never used.
"""

from __future__ import annotations

import json
import os

from agent_accounts._usage import is_window_name

from ._atomic import atomic_write
from ._gate import GateRefused, read_gated, zero
from ._history import (
    HISTORY_FILE,
    HISTORY_LINE_MAX,
    HISTORY_MAX_BYTES,
    check_history_bounds,
    dated_history,
    framed_history,
    parse_history_lines,
    redacted_read,
)
from ._linelog import rotated_name
from ._readings import status_cache_dir

TYPE_CHECKING = False  # not typing's: `best` and `run` read this at start-up
if TYPE_CHECKING:
    from typing import Final

    from agent_accounts._types import RateWindow, UsageReading

__all__ = [
    "FRAME_BYTES",
    "SUMMARY_FILE",
    "SUMMARY_MAX_BYTES",
    "SUMMARY_SESSION",
    "read_weighed_history",
    "store_history_summary",
]

SUMMARY_FILE: Final = "usage-history.summary"
SUMMARY_MAX_BYTES: Final = 1024 * 1024
SUMMARY_SESSION: Final = "usage-history"
_FORMAT: Final = 2
FRAME_BYTES: Final = 4 * 1024
"""The frame's grain: a summary holds while the current file grows within the same multiple of
this, about 14 lines, which `best` and `run` then parse on top of it (7 on average). The poll
timer stores the next summary 150 s later; status lines add a line when a percent moves (about
one a minute with sessions running), so a summary seldom stops holding between two polls."""


def _key(directory: str, uid: int, tail_bytes: int, older_lines: int) -> tuple[list[object], int]:
    """What the stored readings hold for (the files' identity and state, the selection), and
    the current file's size (-1 when there is none)."""
    key: list[object] = [
        _FORMAT,
        uid,
        HISTORY_MAX_BYTES,
        HISTORY_LINE_MAX,
        tail_bytes,
        older_lines,
        FRAME_BYTES,
    ]
    size = -1
    for name in (HISTORY_FILE, rotated_name(HISTORY_FILE)):
        try:
            st = os.lstat(os.path.join(directory, name))
        except FileNotFoundError:
            key.append(None)
            continue
        if name == HISTORY_FILE:  # appends move its size and times: its frame instead
            size = st.st_size
            frame = size // FRAME_BYTES * FRAME_BYTES
            key.append([st.st_dev, st.st_ino, frame, st.st_mode, st.st_uid, st.st_nlink])
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
    return key, size


def _number(value: object) -> bool:
    # json.loads gives exact ints and floats; NaN and infinities are refused as it parses.
    if type(value) is float:
        return True
    return type(value) is int and abs(value) <= 2**53


def _no_constant(name: str) -> object:
    raise ValueError(name)


def _stored(raw: bytes | bytearray, key: list[object]) -> tuple[list[UsageReading], int] | None:
    """The readings a summary holds and its frame's end, when it is whole and keyed `key`;
    else None."""
    try:
        doc = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    if type(doc) is not dict or doc.get("key") != key or type(doc.get("readings")) is not list:
        return None
    end = doc.get("end")
    if type(end) is not int or not 0 <= end <= HISTORY_MAX_BYTES:
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
    return readings, end


def _read(directory: str, key: list[object]) -> tuple[list[UsageReading], int] | None:
    try:
        raw = read_gated(
            os.path.join(directory, SUMMARY_FILE), uid=None, max_bytes=SUMMARY_MAX_BYTES
        )
    except (GateRefused, OSError):
        return None
    return None if raw is None else _stored(raw, key)


def _after(directory: str, uid: int, end: int, size: int) -> list[UsageReading] | None:
    """The readings of the current file's lines after `end` (a frame's end) while it is `size`
    bytes long; None when no line ends at `end` or the file is not that long as it is read."""
    if size < end:
        return None
    if size == end:
        return []
    path = os.path.join(directory, HISTORY_FILE)
    want = size - end + (end > 0)  # from the frame's last byte, its line's end, when it has one
    try:
        raw = read_gated(path, uid=uid, max_bytes=2 * HISTORY_MAX_BYTES, tail_bytes=want)
    except GateRefused:
        return None
    if raw is None:
        return None
    try:
        if len(raw) != want or (end > 0 and raw[0] != 0x0A):
            return None  # another length than the lstat's, or no line ends where the frame does
        return parse_history_lines(bytes(raw[end > 0 :]).split(b"\n"))
    finally:
        zero(raw)


def _framed(
    directory: str, uid: int, tail_bytes: int, older_lines: int
) -> tuple[list[UsageReading], list[UsageReading], int, int]:
    return framed_history(
        directory,
        uid=uid,
        tail_bytes=tail_bytes,
        older_lines=older_lines,
        frame_bytes=FRAME_BYTES,
    )


def read_weighed_history(
    config_dir: str, *, now: float, since: float, tail_bytes: int, older_lines: int
) -> list[UsageReading]:
    """Return the framed history (`framed_history`, with `FRAME_BYTES`) of `config_dir` dated
    as `read_usage_history(now=, since=)` dates it (for the forecast only: see the module
    docstring): the stored summary's readings and the lines after its frame when it holds for
    the files as they are, else the framed history read from the files. Raises ValueError for
    a non-finite `now` or `since`, a `tail_bytes` under `HISTORY_LINE_MAX` or a negative
    `older_lines`, and an unexpected filesystem error redacted, as `read_usage_history`."""
    check_history_bounds(now, since, tail_bytes, older_lines)
    directory = status_cache_dir(config_dir)
    uid = os.getuid()
    try:
        key, size = _key(directory, uid, tail_bytes, older_lines)
        stored = _read(directory, key)
        if stored is not None:
            after = _after(directory, uid, stored[1], size)
            if after is not None and _key(directory, uid, tail_bytes, older_lines) == (key, size):
                return dated_history([*stored[0], *after], now=now, since=since)
    except OSError:
        pass  # the history itself is read, with its errors
    frame, later, _, _ = redacted_read(lambda: _framed(directory, uid, tail_bytes, older_lines))
    return dated_history([*frame, *later], now=now, since=since)


def store_history_summary(config_dir: str, *, tail_bytes: int, older_lines: int) -> bool:
    """Store the summary of `config_dir`'s history unless the one stored still holds.

    True when a summary holding for the history as it is now is stored (already or by this
    call); False when none could be (no history, a rotation while reading it, a current file
    past `HISTORY_MAX_BYTES`, a full disk, a refused file). Never raises.
    """
    try:
        directory = status_cache_dir(config_dir)
        uid = os.getuid()
        key, _ = _key(directory, uid, tail_bytes, older_lines)
        if key[-2:] == [None, None]:
            return False
        if _read(directory, key) is not None:
            return True
        frame, _, end, read = _framed(directory, uid, tail_bytes, older_lines)
        if _key(directory, uid, tail_bytes, older_lines)[0] != key or read >= HISTORY_MAX_BYTES:
            return False  # rotated, grown past its frame, or cut as read: not the file's frame
        rows = [
            [
                r["written_at"],
                [
                    [n, w["used_percentage"], w.get("resets_at")]
                    for n, w in r["rate_limits"].items()
                ],
            ]
            for r in frame
        ]
        doc = {"key": key, "end": end, "readings": rows}
        data = json.dumps(doc, separators=(",", ":"), allow_nan=False)
        atomic_write(directory, SUMMARY_FILE, data.encode())
    except Exception:  # a full disk, a read-only mount, a planted file: best and run read it all
        return False
    return True
