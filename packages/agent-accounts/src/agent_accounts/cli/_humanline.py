"""`account-cli statusline`: the status line a person reads, `5h 23% 1h48m · 7d 41% 3d2h`.

Each window's use and a countdown to its reset, for the account in `AGENT_CONFIG_DIR` (or the
default dir) first, then one line for each other profile with a reading; a label leads each line
when there are several accounts. The percentage is coloured by threshold (green below 50, yellow
below 80, red from 80) unless `--no-color` or a non-empty `NO_COLOR` says not to. A window whose
reset time has passed shows `reset` (its use is from the window before); a reading older than
10 minutes says its age. `--format pipe` prints the spec's pipe rows (`status --statusline`).

It reads what `status --statusline` reads, the same way (the newest reading that has both
`five_hour` and `seven_day`), always exits 0 and never writes stderr; like that line it imports
no httpx, `typing`, `dataclasses` or `datetime`.
"""

from __future__ import annotations

import math
import os
import time

from ._exits import EXIT_OK
from ._output import STATUS_LINE_WINDOWS, countdown, plain_label, print_status_line

TYPE_CHECKING = False  # not typing's: this runs on every prompt
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Mapping
    from typing import Any, Final

__all__ = ["STALE_AFTER_S", "human_statusline", "run", "run_human"]

STALE_AFTER_S: Final = 600
"""A reading older than this says its age on the line."""
_WINDOWS: Final = (("five_hour", "5h"), ("seven_day", "7d"))
_RESET: Final = "\x1b[0m"
# (below this percentage, colour): green, yellow, then red for the rest.
_COLOURS: Final = ((50.0, "\x1b[32m"), (80.0, "\x1b[33m"), (math.inf, "\x1b[31m"))


def _percent(used: float, colour: bool) -> str:
    text = f"{math.floor(used)}%"
    if not colour:
        return text
    code = next(code for below, code in _COLOURS if used < below)
    return f"{code}{text}{_RESET}"


def _windows(limits: Mapping[str, Any], now: float, colour: bool) -> str:
    parts = []
    for name, short in _WINDOWS:
        window = limits[name]
        resets = window.get("resets_at")
        if isinstance(resets, int | float) and resets <= now:
            parts.append(f"{short} reset")  # the use shown is the window's before this one
            continue
        part = f"{short} {_percent(window['used_percentage'], colour)}"
        if isinstance(resets, int | float):
            part += f" {countdown(resets - now)}"
        parts.append(part)
    return " · ".join(parts)


def _line(label: str | None, found: Any, now: float, colour: bool) -> str:
    lead = f"{label} " if label else ""
    if found is None:
        return f"{lead}no usage reading yet"
    reading, _, age = found
    text = f"{lead}{_windows(reading['rate_limits'], now, colour)}"
    if age > STALE_AFTER_S:
        text += f" · read {countdown(age)} ago"
    return text


def _printable(label: str) -> str | None:
    # A label that could carry an escape sequence or break the line is left out, not mangled.
    return plain_label(label) if label.isprintable() else None


def human_statusline(*, now: float, colour: bool) -> str:
    """Return the status line a person reads: the current account's line, then the others'."""
    from agent_accounts._labels import account_label
    from agent_accounts.io._discovery import default_config_dir, profile_dirs
    from agent_accounts.io._readings import newest_reading

    current = os.environ.get("AGENT_CONFIG_DIR") or default_config_dir()
    here = os.path.realpath(current)
    label = account_label(current)
    others: list[tuple[str, Any]] = []
    several = False
    for name, config_dir in profile_dirs():
        try:
            same = os.path.realpath(config_dir) == here
            found = (
                None
                if same
                else newest_reading(
                    config_dir, now=now, windows=STATUS_LINE_WINDOWS, redact_text=False
                )
            )
        except Exception:  # one unreadable profile never hides the others
            same, found = False, None
        if same:
            label = name
            continue
        several = True
        shown = _printable(name)
        if found is not None and shown is not None:
            others.append((shown, found))
    try:
        mine = newest_reading(current, now=now, windows=STATUS_LINE_WINDOWS, redact_text=False)
    except Exception:  # an unreadable dir is an account with no reading, never a failed prompt
        mine = None
    lines = [_line(_printable(label) if several else None, mine, now, colour)]
    lines.extend(_line(name, found, now, colour) for name, found in others)
    return "\n".join(lines) + "\n"


def run_human(*, colour: bool) -> int:
    """Print the human status line; exit 0 whatever happens, with nothing on stderr."""
    if os.environ.get("NO_COLOR"):  # https://no-color.org: set and not empty
        colour = False
    print_status_line(
        lambda: human_statusline(now=time.time(), colour=colour), "no usage reading yet\n"
    )
    return EXIT_OK


def run(options: Namespace) -> int:
    """Run `statusline` as parsed: the human line, or the spec's pipe rows with `--format pipe`."""
    if options.format == "pipe":
        from ._statusline import run_statusline

        return run_statusline()
    return run_human(colour=not options.no_color)
