"""`account-cli`'s exit codes, its one usage-error type and its stderr line.

Every command reports through here; `cli.main` is the one boundary that turns what a command
returns or raises into an exit code.

| exit | when |
|---|---|
| 0 | every profile succeeded (`-h`/`--help`/`--version` included; the status line always) |
| 1 | a poll, a refresh, a usage-file write, a credentials read or an alert hook failed; |
|   | `units install` found a changed unit file or could not write |
| 2 | a login is expired or refused, or (for `status`) missing; no account qualifies (`best`) |
| 64 | a usage error: an unknown command or flag, a repeated flag, a bad value |
| 75 | `run`: every usable account is out of room for now (EX_TEMPFAIL: try again later) |
| 126, 127 | `run`: the command cannot be run, or is not found (as a shell says) |
| 130 | interrupted (Ctrl-C) |
| 141 | the reader of stdout went away (as a program killed by SIGPIPE) |
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: the status line imports this module, never typing
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "DEBUG_ENV",
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_LOGIN",
    "EXIT_NOT_FOUND",
    "EXIT_NOT_RUNNABLE",
    "EXIT_OK",
    "EXIT_TEMPFAIL",
    "EXIT_USAGE",
    "PROG",
    "UsageError",
    "err",
]

PROG: Final = "account-cli"
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_LOGIN: Final = 2
EXIT_USAGE: Final = 64
EXIT_TEMPFAIL: Final = 75
EXIT_NOT_RUNNABLE: Final = 126
EXIT_NOT_FOUND: Final = 127
EXIT_INTERRUPTED: Final = 130
EXIT_BROKEN_PIPE: Final = 128 + 13
DEBUG_ENV: Final = "ACCOUNT_CLI_DEBUG"
"""Set to 1, an unexpected error also prints its traceback, redacted."""


class UsageError(Exception):
    """A command line refused: `account-cli: <problem>`, then the usage line; exit 64."""

    def __init__(self, problem: str, usage: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.usage = usage


def err(line: str) -> None:
    """Print `account-cli: <line>` on stderr."""
    sys.stderr.write(f"{PROG}: {line}\n")
