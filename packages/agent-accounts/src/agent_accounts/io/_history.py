"""Usage history: every stored reading, one JSON line each, in `status-cache/usage-history.jsonl`.

`write_reading` (the poller) and `write_session_reading` (the status-line tee) append each
reading they store, through the capped line log (`_linelog`: one `write` per line on an
`O_APPEND` descriptor, rotated to `.1` past `HISTORY_MAX_BYTES`, this user's own file only). A
reading whose windows equal the last line's (same source, the same use and reset in each window)
is not appended unless that line is `HISTORY_HEARTBEAT_S` old: an idle account or a session
redrawing its status line every few seconds adds nothing. Appending never fails a write: a full
disk, a read-only mount or a planted file skips the line. Read back through the strict gate;
a line that does not parse (cut short by a full disk) is skipped.
"""

from __future__ import annotations

import json
import math
import os

from ._atomic import ensure_private_dir
from ._linelog import append_line_data, read_line_data, rotated_name
from ._readings import CLOCK_AHEAD_S, reading_from_json, status_cache_dir

TYPE_CHECKING = False  # not typing's: `best` and `run` read the history at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final, TypeVar

    from agent_accounts._types import UsageReading

    _T = TypeVar("_T")

__all__ = [
    "HISTORY_FILE",
    "HISTORY_HEARTBEAT_S",
    "HISTORY_LINE_MAX",
    "HISTORY_MAX_BYTES",
    "append_history",
    "history_line",
    "read_usage_history",
]

HISTORY_FILE: Final = "usage-history.jsonl"
HISTORY_MAX_BYTES: Final = 1024 * 1024
"""Past this the file is rotated to `.1`: a profile's history holds at most about 2 MiB."""
HISTORY_LINE_MAX: Final = 2048
HISTORY_HEARTBEAT_S: Final = 600.0
"""An unchanged reading is still appended once the last line is this old."""
_TAIL_BYTES: Final = 2 * HISTORY_LINE_MAX


def history_line(reading: UsageReading) -> bytes | None:
    """Return the history line of a valid reading (compact JSON, no `account`); None if too long."""
    kept: dict[str, object] = {
        "session_id": reading["session_id"],
        "written_at": reading["written_at"],
        "rate_limits": reading["rate_limits"],
    }
    if "source" in reading:
        kept["source"] = reading["source"]
    data = json.dumps(kept, separators=(",", ":"), allow_nan=False).encode() + b"\n"
    return data if len(data) <= HISTORY_LINE_MAX else None


def _parse_line(line: bytes) -> UsageReading | None:
    if not line or len(line) > HISTORY_LINE_MAX:
        return None
    return reading_from_json(line)


def _same_as(reading: UsageReading) -> Callable[[bytes], bool]:
    def unchanged(last: bytes) -> bool:
        before = _parse_line(last)
        if before is None or before.get("source") != reading.get("source"):
            return False
        if not 0 <= reading["written_at"] - before["written_at"] < HISTORY_HEARTBEAT_S:
            return False
        return before["rate_limits"] == reading["rate_limits"]

    return unchanged


def append_history(config_dir: str | os.PathLike[str], reading: UsageReading) -> bool:
    """Append a stored reading to the profile's history; False when skipped. Never raises."""
    try:
        data = history_line(reading)
        if data is None:
            return False
        directory = status_cache_dir(os.fspath(config_dir))
        ensure_private_dir(directory)
        return append_line_data(
            directory,
            HISTORY_FILE,
            data,
            uid=os.getuid(),
            max_bytes=HISTORY_MAX_BYTES,
            unless_last=_same_as(reading),
            tail_bytes=_TAIL_BYTES,
        )
    except Exception:  # a full disk, a read-only mount: the reading itself is stored
        return False


def read_usage_history(
    config_dir: str | os.PathLike[str],
    *,
    now: float | None = None,
    since: float | None = None,
    uid: int | None = None,
    tail_bytes: int | None = None,
    older_lines: int | None = None,
) -> list[UsageReading]:
    """Return a profile's history, oldest first: the rotated file's lines, then the current's.

    Lines that do not parse are skipped; so is a line dated more than a minute ahead of `now`
    (a clock that was ahead: its place in time cannot be told) and, with `since`, one written
    before it. Both files are read through the strict gate (this user's own, owner-only, singly
    linked regular file; anything else reads as empty). With `tail_bytes`, only the newest
    lines within the current file's last `tail_bytes` bytes are read, and the rotated file only
    when the current one is shorter, whatever the history's size. With `older_lines` too, the
    lines before that tail within the newest `HISTORY_MAX_BYTES` of both files (about a week of
    a poller and sessions) are read as well, thinned to at most `older_lines` evenly spaced
    ones, the newest of each stride kept: the days of rhythm a forecast goes by, dense where the
    current window is, at a bounded cost (`best` and `run` read this selection framed, so that
    an appended line only adds to it: `framed_history`). Raises ValueError for a non-finite
    `now` or `since`, a `tail_bytes` under `HISTORY_LINE_MAX` or a negative `older_lines`, and
    an unexpected filesystem error redacted, without a cause.
    """
    import time

    current = time.time() if now is None else now
    check_history_bounds(current, since, tail_bytes, older_lines)
    owner = os.getuid() if uid is None else uid
    directory = status_cache_dir(os.fspath(config_dir))
    selected = redacted_read(
        lambda: selected_history(
            directory, uid=owner, tail_bytes=tail_bytes, older_lines=older_lines
        )
    )
    return dated_history(selected, now=current, since=since)


def check_history_bounds(
    now: float, since: float | None, tail_bytes: int | None, older_lines: int | None
) -> None:
    """Raise ValueError for the bounds `read_usage_history` refuses (see there)."""
    if not math.isfinite(now) or (since is not None and not math.isfinite(since)):
        raise ValueError("now and since must be finite numbers of epoch seconds")
    if tail_bytes is not None and tail_bytes < HISTORY_LINE_MAX:
        raise ValueError("tail_bytes must hold a whole line (HISTORY_LINE_MAX)")
    if older_lines is not None and older_lines < 0:
        raise ValueError("older_lines must not be negative")


def redacted_read(read: Callable[[], _T]) -> _T:
    """`read()`, its OSError redacted and raised without the original as cause or context."""
    try:
        return read()
    except OSError as exc:
        from agent_accounts._redact import redact_secrets

        failure: BaseException = redact_secrets(exc)
    raise failure  # outside the handler: the unredacted error is not its context


def selected_history(
    directory: str, *, uid: int, tail_bytes: int | None, older_lines: int | None
) -> list[UsageReading]:
    """The readings `read_usage_history` picks from the history in `directory` (a status-cache
    dir), in the files' order, before any time is checked.
    Raises OSError (unredacted) for an unexpected filesystem error."""
    current = _current_lines(directory, uid, tail_bytes, older_lines)
    return parse_history_lines(_selected_lines(directory, uid, current, tail_bytes, older_lines))


def framed_history(
    directory: str, *, uid: int, tail_bytes: int, older_lines: int, frame_bytes: int
) -> tuple[list[UsageReading], list[UsageReading], int, int]:
    """The history `best` and `run` weigh (`io._history_summary`): `selected_history`'s
    selection, kept the same while lines are appended. The frame is the current file up to its
    frame end: the end of the line its last multiple of `frame_bytes` falls in (none below
    `frame_bytes`). The frame is selected as `selected_history` selects a history whose current
    file ends there; every line after the frame end is kept.

    Return (the frame's readings, the readings after it, the frame end, the bytes of the current
    file read); a frame end past the bytes read is never given. Raises OSError (unredacted) for
    an unexpected filesystem error."""
    lines = _current_lines(directory, uid, tail_bytes, older_lines)
    size = sum(map(len, lines)) + len(lines) - 1 if lines else 0  # the split's newlines
    edge = size // frame_bytes * frame_bytes
    start = kept = 0
    while kept < len(lines) and start < edge:  # the lines that start before the edge
        start += len(lines[kept]) + 1
        kept += 1
    frame = [*lines[:kept], b""] if kept else []
    selected = _selected_lines(directory, uid, frame, tail_bytes, older_lines)
    return parse_history_lines(selected), parse_history_lines(lines[kept:]), min(start, size), size


def _current_lines(
    directory: str, uid: int, tail_bytes: int | None, older_lines: int | None
) -> list[bytes]:
    left = tail_bytes if older_lines is None else HISTORY_MAX_BYTES
    path = os.path.join(directory, HISTORY_FILE)
    return read_line_data(path, uid=uid, max_bytes=2 * HISTORY_MAX_BYTES, tail_bytes=left)


def _selected_lines(
    directory: str,
    uid: int,
    current: list[bytes],
    tail_bytes: int | None,
    older_lines: int | None,
) -> list[bytes]:
    """The lines read of the rotated file (what `current`, the current file's, leave of the
    bound), then `current`, thinned as `read_usage_history` thins them."""
    lines = list(current)
    left = tail_bytes if older_lines is None else HISTORY_MAX_BYTES
    if left is not None:
        # A tail that cut the current file (its first line blanked) is all there is.
        left = 0 if current[:1] == [b""] else left - sum(map(len, current)) - len(current)
    if left is None or left > 0:
        path = os.path.join(directory, rotated_name(HISTORY_FILE))
        lines[:0] = read_line_data(path, uid=uid, max_bytes=2 * HISTORY_MAX_BYTES, tail_bytes=left)
    if tail_bytes is not None and older_lines is not None:
        lines = _thinned(lines, tail_bytes, older_lines)
    return lines


def parse_history_lines(lines: list[bytes]) -> list[UsageReading]:
    """The readings of history `lines` that parse, in order."""
    return [reading for line in lines if (reading := _parse_line(line)) is not None]


def dated_history(
    readings: list[UsageReading], *, now: float, since: float | None
) -> list[UsageReading]:
    """`readings` without those dated more than `CLOCK_AHEAD_S` ahead of `now` or before
    `since`, sorted oldest first (a stable sort: equal times keep the files' order)."""
    kept = [
        r
        for r in readings
        if r["written_at"] <= now + CLOCK_AHEAD_S and (since is None or r["written_at"] >= since)
    ]
    kept.sort(key=lambda r: r["written_at"])
    return kept


def _thinned(lines: list[bytes], tail_bytes: int, older_lines: int) -> list[bytes]:
    """The lines within the last `tail_bytes` bytes, after at most `older_lines` of the others
    (every k-th, counted back from the newest of them)."""
    kept, size = len(lines), 0
    while kept > 0 and size + len(lines[kept - 1]) + 1 <= tail_bytes:
        kept -= 1
        size += len(lines[kept]) + 1
    older = lines[:kept]
    if older_lines == 0:
        return lines[kept:]
    stride = max(1, math.ceil(len(older) / older_lines))
    return older[len(older) - 1 :: -stride][::-1] + lines[kept:]
