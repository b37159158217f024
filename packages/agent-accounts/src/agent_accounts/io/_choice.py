"""Every profile as `account-cli best` and `account-cli run` rank it: one reader, one rule.

Both commands run before an agent starts, over every profile, so this uses the dataclass-free
cores of `discover_profiles`, `read_login_state` and `choose_best` (`rank_rows`): the same
files, gate and rules, and no `typing`, `dataclasses` or httpx.
"""

from __future__ import annotations

from agent_accounts._best import FRESH_READING_S, rank_rows

from ._credentials import read_login_facts
from ._discovery import profile_dirs
from ._history_summary import read_weighed_history, store_history_summary
from ._readings import newest_reading

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    from collections.abc import Sequence

    from agent_accounts._best import Row
    from agent_accounts._types import UsageReading

__all__ = [
    "HISTORY_OLDER_LINES",
    "HISTORY_TAIL_BYTES",
    "profile_rows",
    "rank_profiles",
    "store_choice_summary",
]

HISTORY_TAIL_BYTES = 32 * 1024
"""`best` and `run` read every line of this much of each profile's history at start-up (its
newest 100-odd lines, about the last five hours at the timer's 150 s: the current five-hour
window)..."""
HISTORY_OLDER_LINES = 96
"""...and at most this many of the lines before them in the newest 1 MiB (about a week),
evenly spaced (about one an hour): the days of rhythm `use_now` goes by, so a reading
minutes old before a lunch break or the end of a day is not pushed up along a straight line. Parsing
all of a week cost about a tenth of a second a profile; parsing these about 10 ms, so `poll --write`
stores them parsed (`store_choice_summary`) and `best` and `run` read that while it holds."""


def store_choice_summary(config_dir: str) -> bool:
    """Store the parsed history `best` and `run` weigh for `config_dir` (`io._history_summary`);
    False when none could be. Never raises."""
    return store_history_summary(
        config_dir, tail_bytes=HISTORY_TAIL_BYTES, older_lines=HISTORY_OLDER_LINES
    )


def rank_profiles(
    windows: Sequence[str], *, now: float, full_at: float = 100.0
) -> tuple[list[tuple[str, str]], tuple[int, float, float] | list[tuple[str, str, float | None]]]:
    """Return every profile as `(label, config_dir)` and `rank_rows`' verdict over them at `now`."""
    profiles, rows = profile_rows(windows, now=now)
    return profiles, rank_rows(rows, now, windows, FRESH_READING_S, full_at)


def profile_rows(windows: Sequence[str], *, now: float) -> tuple[list[tuple[str, str]], list[Row]]:
    """Return every profile as `(label, config_dir)` and the row `rank_rows` ranks it by.

    An unreadable credentials file is `login unreadable`; an unreadable sessions dir is `no
    reading`. The reading ranked is the newest holding every named window; failing that the
    newest at all, so the reason given is the window it lacks rather than no reading.
    """
    profiles = profile_dirs()
    rows: list[Row] = []
    for label, config_dir in profiles:
        try:
            facts = read_login_facts(config_dir, now_ms=now * 1000)
            status: str | None = facts.status
            can_refresh = facts.can_refresh
        except OSError:
            status, can_refresh = None, False
        try:
            # Its text fields are never printed, so they need no redaction.
            usage = newest_reading(config_dir, now=now, windows=windows, redact_text=False)
            if usage is None:
                usage = newest_reading(config_dir, now=now, redact_text=False)
        except OSError:
            usage = None
        reading = None if usage is None else _as_of_now(config_dir, usage[0], windows, now)
        rows.append((label, status, can_refresh, reading))
    return profiles, rows


def _as_of_now(
    config_dir: str, reading: UsageReading, windows: Sequence[str], now: float
) -> UsageReading:
    """Return the reading with each named window's use as its history forecasts it for `now`.

    A reading is up to ten minutes old: an account filling fast has less room now than it said
    then (`use_now`, the window's slope over its history; never lower than the reading). No
    history, or an unreadable one, leaves the reading as it is. The history comes from the
    summary the poll timer stores while it holds for the files, else from the files themselves.
    """
    from agent_accounts._forecast import use_now

    try:
        history = read_weighed_history(
            config_dir,
            now=now,
            since=now - 7 * 86400,
            tail_bytes=HISTORY_TAIL_BYTES,
            older_lines=HISTORY_OLDER_LINES,
        )
    except OSError:
        return reading
    if not history:
        return reading
    limits = dict(reading["rate_limits"])
    for name in windows:
        window = limits.get(name)
        estimate = None if window is None else use_now(name, [*history, reading], now)
        if window is not None and estimate is not None and estimate > window["used_percentage"]:
            limits[name] = {**window, "used_percentage": estimate}
    return {**reading, "rate_limits": limits}
