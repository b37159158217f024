"""forge-cli merge: premerge, then the squash merge at one head, then the head branch's deletion.

One line (`MERGED`, `FAIL`, `MOVED`), or with `--json` one JSON object (the README documents its
keys); the exit code is the same either way.
"""

from __future__ import annotations

import os

from ._common import EXIT_MOVED, CliExit, UsageError, out, port, pr_ref, print_json

__all__ = ["merge_command"]


def merge_command(
    ref: str,
    head_sha: str,
    approved_head: str,
    clone: str | None = None,
    task_ids: list[str] | None = None,
    *,
    as_json: bool = False,
) -> None:
    """Merge a PR at HEAD_SHA after premerge: MERGED (0), FAIL (1) or MOVED (3)."""
    from .._errors import ForgeInputError
    from .._merge import guarded_merge
    from .._premerge import validate_full_sha

    repo, number = pr_ref(ref)
    try:
        validate_full_sha(head_sha, "head_sha")
        validate_full_sha(approved_head, "approved_head")
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None
    for task in task_ids or ():
        if not task.strip() or len(task) > 200 or any(ord(c) < 0x20 for c in task):
            raise UsageError(f"--task-id {task[:50]!r}: must be one non-blank line")
    if clone is not None and not os.path.isdir(clone):
        raise UsageError(f"--clone {clone[:200]!r} is not a directory")
    outcome = guarded_merge(
        port(),
        repo,
        number,
        head_sha,
        approved_head=approved_head,
        clone=clone,
        task_ids=tuple(task_ids or ()),
    )
    if as_json:
        print_json(
            {
                "status": outcome.status,
                "repo": outcome.repo,
                "number": outcome.number,
                "head": outcome.head,
                "sha": outcome.sha,
                "merge": outcome.merge,
                "branch": outcome.branch,
                "reasons": list(outcome.reasons),
            }
        )
    else:
        out(outcome.line())
    raise CliExit({"merged": 0, "failed": 1, "moved": EXIT_MOVED}[outcome.status])
