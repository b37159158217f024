"""What several commands print the same way: redacted labels and paths, windows, times.

Labels and paths are printed only redacted (a dir name can look like a token). The status line
and `best` print a plain short label or path as it is, skipping `re`; a property test holds each
shortcut to `redact_secrets`.
"""

from __future__ import annotations

import math
import sys

TYPE_CHECKING = False  # not typing's: the status line imports this module, never typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Final

__all__ = [
    "STATUS_LINE_WINDOWS",
    "config_dir_problem",
    "countdown",
    "iso",
    "local_time",
    "percent",
    "plain_label",
    "plain_path",
    "print_status_line",
    "say_none_found",
    "shown",
    "window_order",
    "windows_text",
]

STATUS_LINE_WINDOWS: Final = ("five_hour", "seven_day")
"""The windows both status lines show: their reading is the newest that has both."""
_PLAIN_LABEL_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._")
_PLAIN_PATH_CHARS: Final = _PLAIN_LABEL_CHARS | {"-"}


def print_status_line(make: Callable[[], str], fallback: str) -> None:
    """Print the line `make` returns (`fallback` if it fails); never raise, never write stderr.

    A status line runs on every prompt of an agent client: it never fails that prompt, and a
    closed pipe is the agent client's business.
    """
    try:
        text = make()
    except Exception:
        text = fallback
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except Exception:
        return


def shown(text: str) -> str:
    """Redact a label or path before printing: a dir name can look like a token."""
    from agent_accounts._redact import redact_secrets

    return redact_secrets(text)


def plain_label(label: str) -> str:
    """Redact a label for the status line or `best`, skipping `re` for a short plain one.

    A label of at most 24 lower-case letters, digits, `.` and `_` (no `-`, so no `sk-...` key
    prefix; no `:`, `=`, `%`, `&` or space, so no field, scheme or encoded form; far shorter than
    the 32-character opaque run) is one `redact_secrets` returns unchanged, which a property test
    holds it to; anything else goes through `redact_secrets`.
    """
    if len(label) <= 24 and _PLAIN_LABEL_CHARS.issuperset(label):
        return label
    return shown(label)


def plain_path(path: str) -> str:
    """Redact a config dir before printing, skipping `re` for a path of plain segments.

    Each segment (between `/`) a plain label, `-` allowed but never `sk-` (the vendor key
    prefix): `/` and `.` split any opaque run, so nothing `redact_secrets` matches can form; a
    property test holds it to that. Anything else goes through `redact_secrets`.
    """
    for segment in path.split("/"):
        if len(segment) > 24 or not _PLAIN_PATH_CHARS.issuperset(segment) or "sk-" in segment:
            return shown(path)
    return path


def percent(value: float) -> str:
    """`23.5%`, `41%`."""
    return f"{value:g}%"


def window_order(name: str) -> tuple[int, str]:
    """Sort key: the known windows in the spec's order first, then any new ones by name."""
    from agent_accounts._usage import KNOWN_WINDOWS

    return (KNOWN_WINDOWS.index(name) if name in KNOWN_WINDOWS else len(KNOWN_WINDOWS), name)


def windows_text(rate_limits: Mapping[str, Any]) -> str:
    """`five_hour 23%, seven_day 41.5%`: every window of a reading, in `window_order`."""
    names = sorted(rate_limits, key=window_order)
    return ", ".join(f"{name} {percent(rate_limits[name]['used_percentage'])}" for name in names)


def iso(epoch_s: float) -> str:
    """An epoch time as ISO 8601 UTC to the second, `Z`-suffixed."""
    from datetime import UTC, datetime

    return (
        datetime.fromtimestamp(epoch_s, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def countdown(seconds: float) -> str:
    """`45m`, `1h48m`, `3d2h`: a duration as a countdown, rounded up to the unit it shows.

    Under a day it counts minutes, from a day on hours, so a countdown never reads `0m` while
    time is left and never shows less than is left; 0 or less is `0m`.
    """
    if not seconds > 0:
        return "0m"
    minutes = max(1, math.ceil(seconds / 60))  # a subnormal second / 60 underflows to 0
    if minutes < 60:
        return f"{minutes}m"
    if minutes < 24 * 60:
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(math.ceil(seconds / 3600), 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


def local_time(epoch_s: float, *, now: float) -> str:
    """An epoch time in the local zone, to the minute: `Sat 28 Nov 14:32 CET`.

    The year follows the month when it is not the year of `now` (`Tue 1 Jan 2030 00:00 UTC`).
    """
    from datetime import datetime

    when = datetime.fromtimestamp(epoch_s).astimezone()
    year = "" if when.year == datetime.fromtimestamp(now).astimezone().year else f" {when.year}"
    return f"{when:%a} {when.day} {when:%b}{year} {when:%H:%M %Z}"


def say_none_found() -> None:
    """Tell a user with no profile where discovery looked (on stdout: an answer, not a fault)."""
    from agent_accounts.io._discovery import searched_dirs

    where = " and ".join(shown(d) for d in searched_dirs())
    sys.stdout.write(f"no profiles found (searched {where})\n")


def config_dir_problem(config_dir: str) -> str | None:
    """Say what keeps a profile's config dir from being read and what to do, or None.

    Told instead of "login missing" or "No journal yet", which would blame the login.
    """
    import errno
    import os

    from agent_accounts.io._discovery import CONFIG_DIRS_ENV, config_dir_errno

    code = config_dir_errno(config_dir)
    if code is None:
        return None
    where = shown(config_dir)
    listed = f"fix {CONFIG_DIRS_ENV}" if os.environ.get(CONFIG_DIRS_ENV) else "check the path"
    if code == errno.ENOENT:
        return (
            f"config dir {where} does not exist (log in there with the agent client, or {listed})"
        )
    if code == errno.ENOTDIR:
        return f"config dir {where} is not a directory ({listed})"
    if code in (errno.EACCES, errno.EPERM):
        return (
            f"config dir {where} cannot be read: permission denied "
            f"(run as its owner, or let the owner in: chmod u+rwx {where})"
        )
    return f"config dir {where} cannot be read: {os.strerror(code)} ({listed})"
