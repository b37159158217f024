"""The `local-daemon` command line's exit codes, its one usage-error type and its stderr line.

Every command reports through here: a usage error is `UsageProblem` (`local-daemon: <problem>`,
then the command's usage line, exit 64); any other failure is `fail(code, message)`, one line
and the code from this table. `cli.main` is the one boundary that turns them into an exit.

| exit | when |
|---|---|
| 0 | success (`-h`/`--help` included) |
| 64 | a usage error: a bad flag or value, a MODULE:ATTR that does not load |
| 69 | unavailable: port in use, no healthy daemon (`health`, `--attach`), it went away |
| 70 | a bug in local-daemon itself (`LOCAL_DAEMON_DEBUG=1` prints the traceback) |
| 78 | configuration refused: token file, TLS pair, remote options, LISTEN_FDS, a state file |
| 130 | interrupted (Ctrl-C before the daemon's own SIGINT handler is in place) |
"""

from __future__ import annotations

import sys
from typing import Final

__all__ = [
    "DEBUG_ENV",
    "EX_CONFIG",
    "EX_INTERRUPTED",
    "EX_SOFTWARE",
    "EX_UNAVAILABLE",
    "EX_USAGE",
    "PROG",
    "CliExit",
    "UsageProblem",
    "echo_err",
    "fail",
]

PROG: Final = "local-daemon"
EX_USAGE: Final = 64
EX_UNAVAILABLE: Final = 69
EX_SOFTWARE: Final = 70
EX_CONFIG: Final = 78
EX_INTERRUPTED: Final = 130
DEBUG_ENV: Final = "LOCAL_DAEMON_DEBUG"


class UsageProblem(Exception):
    """A usage error: `local-daemon: <problem>`, then (with `usage`) the usage line; exit 64."""

    def __init__(self, problem: str, *, usage: bool = True) -> None:
        super().__init__(problem)
        self.problem = problem
        self.usage = usage


class CliExit(Exception):
    """End the command with `code`; its message, if any, is already on stderr."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def echo_err(message: str) -> None:
    """Print one line to stderr."""
    stream = sys.stderr
    if stream is None:
        return
    stream.write(message + "\n")
    stream.flush()


def fail(code: int, message: str) -> CliExit:
    """Print `local-daemon: <message>` to stderr and return the exit to raise."""
    echo_err(f"{PROG}: {message}")
    return CliExit(code)
