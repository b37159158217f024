"""`account-cli status --statusline`: the rows an agent client's status line shows, on every prompt.

It always exits 0 and never writes stderr: an unreadable dir is an unknown account, one unreadable
profile never hides the others, and a closed pipe is the agent client's business. It imports only
the dataclass-free cores of `read_usage` and `discover_profiles` (same files, same gate, same
redaction), never httpx, `typing` or `dataclasses`.
"""

from __future__ import annotations

import math
import os

from ._exits import EXIT_OK
from ._output import STATUS_LINE_WINDOWS, plain_label, print_status_line

TYPE_CHECKING = False  # not typing's: this runs on every prompt
if TYPE_CHECKING:
    from typing import Final

    from agent_accounts import UsageReading

__all__ = ["CONFIG_DIR_ENV", "STATUSLINE_UNKNOWN", "run_statusline", "statusline_text"]

CONFIG_DIR_ENV: Final = "AGENT_CONFIG_DIR"
STATUSLINE_UNKNOWN: Final = "unknown|unknown|||||||"


def _floor(value: object) -> str:
    return str(math.floor(value)) if isinstance(value, int | float) else ""


def _fields(reading: UsageReading, age: int) -> tuple[str, str, str, str, str]:
    limits = reading["rate_limits"]
    five, week = limits["five_hour"], limits["seven_day"]
    return (
        _floor(five["used_percentage"]),
        _floor(week["used_percentage"]),
        _floor(five.get("resets_at")),
        _floor(week.get("resets_at")),
        str(age),
    )


def statusline_text() -> str:
    """Return the status-line rows: the current account's, then each other profile's."""
    from agent_accounts.io._discovery import default_config_dir, profile_dirs
    from agent_accounts.io._readings import newest_reading

    current = os.environ.get(CONFIG_DIR_ENV) or default_config_dir()
    lines: list[str] = []
    try:
        mine = newest_reading(current, windows=STATUS_LINE_WINDOWS, redact_text=False)
    except Exception:  # an unreadable dir is an unknown account, never a failed prompt
        mine = None
    if mine is None:
        lines.append(STATUSLINE_UNKNOWN)
    else:
        five, week, five_reset, week_reset, age = _fields(mine[0], mine[2])
        lines.append(f"{five}|{week}|{five_reset}|{week_reset}|||||{age}")
    here = os.path.realpath(current)
    for label, config_dir in profile_dirs():
        # A label that could break the line format is left out rather than mangled.
        if "|" in label or not label.isprintable():
            continue
        try:
            same = os.path.realpath(config_dir) == here
            usage = (
                None
                if same
                else newest_reading(config_dir, windows=STATUS_LINE_WINDOWS, redact_text=False)
            )
        except Exception:  # one unreadable profile never hides the others
            usage = None
        if usage is not None:
            five, week, _, _, age = _fields(usage[0], usage[2])
            lines.append(f"other|{plain_label(label)}|{five}|{week}|{age}|")
    return "\n".join(lines) + "\n"


def run_statusline() -> int:
    """Print the status line; exit 0 whatever happens, with nothing on stderr."""
    print_status_line(statusline_text, STATUSLINE_UNKNOWN + "\n")
    return EXIT_OK
