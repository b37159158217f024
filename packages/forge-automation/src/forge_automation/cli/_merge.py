"""forge-cli merge: premerge, then the squash merge at one head, then the head branch's deletion.

One line (`MERGED`, `FAIL`, `MOVED`), or with `--json` one JSON object (the README documents its
keys); the exit code is the same either way.
"""

from __future__ import annotations

from ._common import EXIT_MOVED, CliExit, UsageError, merge_target, out, port, print_json

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
    from .._merge import guarded_merge

    repo, number = merge_target(ref, head_sha, approved_head, clone)
    for task in task_ids or ():
        if not task.strip() or len(task) > 200 or any(ord(c) < 0x20 for c in task):
            raise UsageError(f"--task-id {task[:50]!r}: must be one non-blank line")
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
