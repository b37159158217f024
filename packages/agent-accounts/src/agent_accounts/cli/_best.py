"""`account-cli best [--window NAME]... [--json | --path]`: the account to use now.

Runs before agents start, over every profile: `io._choice.rank_profiles` reads and ranks them
(the rule `account-cli run` uses too).
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

    from agent_accounts.io._choice import rank_profiles

    profiles, ranked = rank_profiles(windows, now=time.time())
    if isinstance(ranked, list):
        from ._output import config_dir_problem

        # A dir that cannot be read is named as such, not as the login it hides.
        told = {label: config_dir_problem(config_dir) for label, config_dir in profiles}
        why = "; ".join(f"{shown(label)}: {told[label] or reason}" for label, reason, _ in ranked)
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
