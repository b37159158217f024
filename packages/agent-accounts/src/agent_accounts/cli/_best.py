"""`account-cli best [--window NAME]... [--json | --path]`: the account to use now.

Runs before agents start, over every profile, so it uses the dataclass-free cores of
`discover_profiles`, `read_login_state` and `choose_best`: the same files, gate and rules.
"""

from __future__ import annotations

import math
import sys

from ._exits import EXIT_LOGIN, EXIT_OK, err
from ._output import plain_label, plain_path, shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Sequence

__all__ = ["run"]


def run(options: Namespace) -> int:
    """Run `best` as parsed."""
    return _best(options.window, as_json=options.json, as_path=options.path)


def _best(windows: Sequence[str], *, as_json: bool, as_path: bool) -> int:
    import time

    from agent_accounts._best import FRESH_READING_S, rank_rows
    from agent_accounts.io._credentials import read_login_facts
    from agent_accounts.io._discovery import profile_dirs
    from agent_accounts.io._readings import newest_reading

    now = time.time()
    profiles = profile_dirs()
    rows = []
    for label, config_dir in profiles:
        try:
            facts = read_login_facts(config_dir, now_ms=now * 1000)
            status: str | None = facts.status
            can_refresh = facts.can_refresh
        except OSError:
            status, can_refresh = None, False
        try:
            # The newest reading holding every named window (its text fields are never printed,
            # so they need no redaction); failing that, the newest at all, so the reason given
            # is the window it lacks rather than no reading.
            usage = newest_reading(config_dir, windows=windows, redact_text=False)
            if usage is None:
                usage = newest_reading(config_dir, redact_text=False)
        except OSError:
            usage = None
        rows.append((label, status, can_refresh, None if usage is None else usage[0]))
    ranked = rank_rows(rows, now, windows, FRESH_READING_S)
    if isinstance(ranked, list):
        why = "; ".join(f"{shown(label)}: {reason}" for label, reason in ranked)
        err(f"no account qualifies ({why or 'no profiles found'})")
        return EXIT_LOGIN
    index, headroom, resets = ranked
    label, config_dir = profiles[index]
    if as_path:
        sys.stdout.write(plain_path(config_dir) + "\n")
    elif as_json:
        import json

        doc = {
            "label": shown(label),
            "configDir": shown(config_dir),
            "headroom_percentage": headroom,
            "resets_at": None if math.isinf(resets) else resets,
            "windows": list(windows),
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(plain_label(label) + "\n")
    return EXIT_OK
