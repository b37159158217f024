"""forge-cli train: merge the PRs carrying a label one at a time; DONE (0) or STOPPED (1).

Each step is a line on stdout as it happens; each CI wait reports its checks on stderr
(`_progress`; none with `--quiet`). With `--json` stdout holds one JSON object at the end (the
README documents its keys) and the step lines go to stderr (none with `--quiet`).
"""

from __future__ import annotations

import os
from typing import Any

from ._common import (
    EXIT_FAILED,
    USAGE_EXIT,
    CliExit,
    UsageError,
    out,
    port,
    print_json,
    repo_name,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._errors import ForgeInputError
    from .._port import ForgePort

__all__ = ["train_command"]


def train_command(
    repo: str,
    label: str,
    *,
    quiet: bool = False,
    as_json: bool = False,
    **options: Any,
) -> None:
    """Run the merge train over REPO's PRs carrying LABEL; exit 1 when it had to stop.

    `options` are `run_train`'s keywords as the parser names them (`--max-wait` is `max_wait`):
    `run_train` checks them, and a value it refuses is a usage error naming the flag.
    """
    from .._errors import ForgeCliError, ForgeInputError
    from .._train import run_train

    repo_name(repo)
    clone = options.get("clone")
    if clone is not None and not os.path.isdir(clone):
        raise UsageError(f"--clone {clone[:200]!r} is not a directory")
    if options.get("batch") is not None and clone is None:
        raise UsageError("--batch needs --clone DIR: cars are built with git in a clone")
    if options.get("land", "merge") != "merge" and options.get("batch") is None:
        raise UsageError("--land push needs --batch N: only a car is a tested commit to push")
    for flag, given in (
        ("--speculate", options.get("speculate")),
        ("--max-cars", options.get("max_cars")),
    ):
        if given and options.get("batch") is None:
            raise UsageError(f"{flag} needs --batch N: only cars ride on cars")

    import sys

    from ._ci_failures import first_failure_line
    from ._progress import CiReport

    report = None if quiet else CiReport(sys.stderr, tty=sys.stderr.isatty(), command="train")
    steps: list[str] = []

    def emit(line: str) -> None:
        steps.append(line)
        if report is not None:
            report.detach()  # the step line follows the wait's table, never under a redraw
        if not as_json:
            out(line)
            sys.stdout.flush()  # each step as it happens: a train runs for minutes
        elif not quiet:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    forge = port()
    try:
        result = run_train(
            forge,
            repo,
            label,
            emit=emit,
            on_poll=report,
            explain=first_failure_line,
            **options,
        )
    except ForgeInputError as exc:
        raise UsageError(_flag_reason(exc)) from None
    except ForgeCliError as exc:
        if exc.status == 404 and _no_repository(forge, repo):
            raise CliExit(
                USAGE_EXIT["train"], f"train: no repository {repo} (or no access to it)"
            ) from None
        raise
    if as_json:
        print_json(
            {
                "repo": result.repo,
                "label": result.label,
                "dry_run": bool(options.get("dry_run")),
                "merged": result.merged,
                "dropped": result.dropped,
                "stopped": result.stopped,
                "flaky": result.flaky,
                "steps": steps,
            }
        )
    raise CliExit(EXIT_FAILED if result.stopped is not None else 0)


def _no_repository(forge: ForgePort, repo: str) -> bool:
    """Whether the forge answers 404 for the repository itself (after a read of it failed 404)."""
    from .._errors import ForgeCliError

    try:
        forge.wire.get_default_branch(repo)
    except ForgeCliError as exc:
        return exc.status == 404
    return False


def _flag_reason(exc: ForgeInputError) -> str:
    """`run_train`'s refusal of a keyword as the refusal of its flag (`--max-wait must be ...`)."""
    flag = "--" + exc.field.replace("_", "-")
    reason = str(exc).removeprefix(f"{exc.field}: ")
    return f"{flag} {reason}" if exc.field in _FLAGS else str(exc)


# run_train's keywords that are flags of `train` (repo and label are positional or named alike).
_FLAGS = frozenset(
    {
        "timeout",
        "interval",
        "grace",
        "batch",
        "max_wait",
        "retry_flaky",
        "land",
        "clone",
        "speculate",
        "max_cars",
    }
)
