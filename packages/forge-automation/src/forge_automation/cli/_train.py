"""forge-cli train: merge the PRs carrying a label one at a time; DONE (0) or STOPPED (1)."""

from __future__ import annotations

import math
import os

from ._common import EXIT_FAILED, CliExit, UsageError, out, port, repo_name

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
) -> None:
    """Run the merge train over REPO's PRs carrying LABEL; exit 1 when it had to stop."""
    from .._errors import ForgeInputError
    from .._train import DEFAULT_TRAIN_GRACE, run_train
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

    def emit(line: str) -> None:
        out(line)
        import sys

        sys.stdout.flush()  # each step as it happens: a train runs for minutes

    result = run_train(
        port(),
        repo,
        label,
        emit=emit,
        clone=clone,
        dry_run=dry_run,
        timeout=timeout,
        interval=interval,
        grace=grace,
    )
    raise CliExit(EXIT_FAILED if result.stopped is not None else 0)
