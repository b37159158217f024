"""forge-cli train: merge the PRs carrying a label one at a time; DONE (0) or STOPPED (1).

Each step is a line on stdout as it happens; each CI wait reports its checks on stderr
(`_progress`; none with `--quiet`). With `--json` stdout holds one JSON object at the end (the
README documents its keys) and the step lines go to stderr (none with `--quiet`).
"""

from __future__ import annotations

import math
import os

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
    from .._port import ForgePort

__all__ = ["train_command"]


def train_command(
    repo: str,
    label: str,
    *,
    clone: str | None = None,
    dry_run: bool = False,
    timeout: float = 1800.0,
    interval: float = 15.0,
    grace: float | None = None,
    quiet: bool = False,
    as_json: bool = False,
    batch: int | None = None,
    max_wait: float = 0.0,
    retry_flaky: int = 0,
    land: str = "merge",
) -> None:
    """Run the merge train over REPO's PRs carrying LABEL; exit 1 when it had to stop."""
    from .._errors import ForgeCliError, ForgeInputError
    from .._train import DEFAULT_TRAIN_GRACE, MAX_BATCH, MAX_RETRIES, run_train
    from .._validate import validate_label

    repo_name(repo)
    try:
        validate_label(label)
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None
    if not (timeout >= 0 and math.isfinite(timeout)):
        raise UsageError("--timeout must be a finite number of seconds >= 0")
    if not (interval > 0 and math.isfinite(interval)):
        raise UsageError("--interval must be a finite number of seconds > 0")
    if grace is None:
        grace = DEFAULT_TRAIN_GRACE
    if not (grace >= 0 and math.isfinite(grace)):
        raise UsageError("--grace must be a finite number of seconds >= 0")
    if clone is not None and not os.path.isdir(clone):
        raise UsageError(f"--clone {clone[:200]!r} is not a directory")
    if batch is not None and not 1 <= batch <= MAX_BATCH:
        raise UsageError(f"--batch must be a whole number from 1 to {MAX_BATCH}")
    if batch is not None and clone is None:
        raise UsageError("--batch needs --clone DIR: cars are built with git in a clone")
    if not (max_wait >= 0 and math.isfinite(max_wait)):
        raise UsageError("--max-wait must be a finite number of seconds >= 0")
    if not 0 <= retry_flaky <= MAX_RETRIES:
        raise UsageError(f"--retry-flaky must be a whole number from 0 to {MAX_RETRIES}")
    if land != "merge" and batch is None:
        raise UsageError("--land push needs --batch N: only a car is a tested commit to push")

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
            clone=clone,
            dry_run=dry_run,
            timeout=timeout,
            interval=interval,
            grace=grace,
            on_poll=report,
            batch=batch,
            max_wait=max_wait,
            retry_flaky=retry_flaky,
            explain=first_failure_line,
            land=land,
        )
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
                "dry_run": dry_run,
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
