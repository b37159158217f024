"""`poll --write --alert-at P [--alert-exec CMD]`: the alert options and the alerts after a poll.

Thresholds and the hook come from the flags, else from the unit's environment (`AGENT_ALERT_AT`,
`AGENT_ALERT_EXEC`); `alert_options` checks them at parse time, `run_alerts` fires them.
"""

from __future__ import annotations

import os

from ._exits import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Sequence
    from typing import Final

    from agent_accounts.io import Profile

__all__ = ["ALERT_AT_ENV", "ALERT_EXEC_ENV", "alert_options", "run_alerts"]

ALERT_AT_ENV: Final = "AGENT_ALERT_AT"
ALERT_EXEC_ENV: Final = "AGENT_ALERT_EXEC"


def alert_options(options: Namespace, usage: str) -> None:
    """Set `options.thresholds` and `options.alert_exec`; raise `UsageError` for a bad one."""
    if options.alert_at is not None and not options.write:
        raise UsageError("--alert-at needs --write", usage)
    if (
        options.alert_exec is not None
        and options.alert_at is None
        and not os.environ.get(ALERT_AT_ENV)
    ):
        raise UsageError("--alert-exec needs --alert-at", usage)
    alert_at = options.alert_at if options.alert_at is not None else os.environ.get(ALERT_AT_ENV)
    options.thresholds = None
    if options.write and alert_at:
        from agent_accounts._alerts import parse_alert_thresholds

        options.thresholds = parse_alert_thresholds(alert_at)
        if options.thresholds is None:
            where = "argument --alert-at" if options.alert_at is not None else ALERT_AT_ENV
            raise UsageError(f"{where}: not a list of percentages like 80,95", usage)
    if options.alert_exec is None:
        options.alert_exec = os.environ.get(ALERT_EXEC_ENV) or None


def run_alerts(profiles: Sequence[Profile], thresholds: Sequence[float], hook: str | None) -> int:
    """Fire the alerts due over `profiles`' readings; return the exit code (1: a hook failed)."""
    from agent_accounts.io._alerts import run_alerts as fire

    return fire(profiles, thresholds, hook)
