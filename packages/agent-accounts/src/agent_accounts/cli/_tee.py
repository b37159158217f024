"""`account-cli statusline-tee [--then CMD]`: keep the status-line payload's `rate_limits`.

Thin over `agent_accounts._tee.run_tee`: without `--then`, the status line of
`status --statusline` is what it prints.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: this runs on every prompt
if TYPE_CHECKING:
    from argparse import Namespace

__all__ = ["run"]


def run(options: Namespace) -> int:
    """Run `statusline-tee` as parsed (an empty `--then` is none)."""
    from agent_accounts._tee import run_tee

    from ._statusline import run_statusline

    return run_tee(options.then or None, run_statusline)
