"""Every profile as `account-cli best` and `account-cli run` rank it: one reader, one rule.

Both commands run before an agent starts, over every profile, so this uses the dataclass-free
cores of `discover_profiles`, `read_login_state` and `choose_best` (`rank_rows`): the same
files, gate and rules, and no `typing`, `dataclasses` or httpx.
"""

from __future__ import annotations

from agent_accounts._best import FRESH_READING_S, rank_rows

from ._credentials import read_login_facts
from ._discovery import profile_dirs
from ._readings import newest_reading

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    from collections.abc import Sequence

    from agent_accounts._best import Row

__all__ = ["profile_rows", "rank_profiles"]


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
        rows.append((label, status, can_refresh, None if usage is None else usage[0]))
    return profiles, rows
