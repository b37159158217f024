"""What every forge-cli command shares: exit codes, the two outcomes a command raises, refs, output.

Exit codes live here and only here (`EXIT_*`, `USAGE_EXIT`); the boundary in `__init__` maps every
outcome to them. Imports only `re` and `sys` at module level: pr-status starts its first gh reads
right after the CLI is imported.
"""

from __future__ import annotations

import re
import sys

from .._parallel import parallel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._exec import GhExec
    from .._port import ForgePort
    from .._types import PullRequest

__all__ = [
    "COMMANDS",
    "EXIT_BAD_ARGS",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_MOVED",
    "EXIT_SOFTWARE",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "USAGE_EXIT",
    "CliExit",
    "UsageError",
    "merge_target",
    "out",
    "parallel",
    "port",
    "pr_ref",
    "print_json",
    "read_pr",
    "repo_name",
    "short",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_ARGS = 2
EXIT_MOVED = 3
EXIT_USAGE = 64
EXIT_UNAVAILABLE = 69
EXIT_SOFTWARE = 70
EXIT_INTERRUPTED = 130
COMMANDS = ("ci-wait", "pr-status", "pr-context", "ci-failures", "premerge", "merge", "train")
# The spec's exit code for a usage error, per command: 2 for ci-failures and premerge, 64 for the
# rest and for a missing or unknown command.
USAGE_EXIT = {
    "ci-wait": EXIT_USAGE,
    "pr-status": EXIT_USAGE,
    "pr-context": EXIT_USAGE,
    "ci-failures": EXIT_BAD_ARGS,
    "premerge": EXIT_BAD_ARGS,
    "merge": EXIT_BAD_ARGS,
    "train": EXIT_BAD_ARGS,
}
PR_REF = re.compile(r"\A([^#\s]+)#([0-9]{1,10})\Z")


class CliExit(Exception):
    """End the command with `code`, after printing `message` (if any) on stderr."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or "")
        self.code = code
        self.message = message


class UsageError(Exception):
    """The one usage error: `forge-cli: <problem>`, then the command's usage line.

    The exit code is the command's (`USAGE_EXIT`); `command` is None before one is known.
    """

    def __init__(self, problem: str, *, command: str | None = None, usage: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.command = command
        self.usage = usage


def out(line: str) -> None:
    """Print one line on stdout."""
    sys.stdout.write(line + "\n")


def print_json(value: object) -> None:
    """Print one JSON object on one line."""
    import json

    out(json.dumps(value, ensure_ascii=False))


def short(sha: str | None) -> str:
    """Return the 7-character form of a sha, or `-`."""
    return sha[:7] if sha else "-"


def port(exec: GhExec | None = None) -> ForgePort:
    """Return a port over the real gh (or `exec`)."""
    from .._port import forge_port
    from .._wire import gh_cli_wire

    return forge_port(gh_cli_wire(exec))


def pr_ref(value: str) -> tuple[str, int]:
    """Return (repo, number) from `owner/name#n`, or raise UsageError."""
    from .._errors import ForgeInputError
    from .._validate import validate_repo

    match = PR_REF.fullmatch(value)
    if match is None or int(match.group(2)) < 1:
        raise UsageError(f"expected <owner>/<name>#<number>, got {value[:200]!r}")
    try:
        validate_repo(match.group(1))
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None
    return match.group(1), int(match.group(2))


def merge_target(ref: str, head_sha: str, approved_head: str, clone: str | None) -> tuple[str, int]:
    """Return (repo, number) of what premerge and merge take, or raise UsageError."""
    import os

    from .._errors import ForgeInputError
    from .._premerge import validate_full_sha

    repo, number = pr_ref(ref)
    try:
        validate_full_sha(head_sha, "head_sha")
        validate_full_sha(approved_head, "approved_head")
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None
    if clone is not None and not os.path.isdir(clone):
        raise UsageError(f"--clone {clone[:200]!r} is not a directory")
    return repo, number


def repo_name(value: str) -> str:
    """Return a validated `owner/name`, or raise UsageError."""
    from .._errors import ForgeInputError
    from .._validate import validate_repo

    try:
        return validate_repo(value)
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None


def read_pr(port: ForgePort, repo: str, number: int, command: str) -> PullRequest:
    """Read the PR through the wire; a 404 ends the command with exit 64."""
    from .._errors import ForgeCliError

    try:
        return port.wire.get_pr(repo, number)
    except ForgeCliError as exc:
        if exc.status == 404:
            message = f"{command}: no PR {repo}#{number} (or no access to it)"
            raise CliExit(USAGE_EXIT[command], message) from None
        raise
