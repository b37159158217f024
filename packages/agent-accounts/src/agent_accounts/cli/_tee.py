"""`account-cli statusline-tee [--then CMD | --format FMT --no-color]`: keep `rate_limits`.

Thin over `agent_accounts._tee.run_tee`: without `--then`, it prints the status line of
`statusline` (the human line; `--format pipe`: the rows of `status --statusline`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: this runs on every prompt
if TYPE_CHECKING:
    from argparse import Namespace

__all__ = ["run"]


def run(options: Namespace) -> int:
    """Run `statusline-tee` as parsed (an empty `--then` is none)."""
    from agent_accounts._tee import run_tee

    def print_line() -> int:
        from ._humanline import run as print_status_line

        return print_status_line(options)

    return run_tee(options.then or None, print_line)
