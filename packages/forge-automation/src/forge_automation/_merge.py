"""The guarded merge behind `forge-cli merge`: premerge, squash merge at one head, branch cleanup.

Every step is check-then-act, so a rerun after a crash at any point does nothing twice:

1. the PR is read first; a merged PR skips premerge and the merge (`merge=skipped(merged)`);
2. otherwise premerge must say OK for exactly the given head, and the merge carries that head as
   the forge's precondition (`merge_pr`): a head that moves in between is `moved`, never merged;
3. the squash message is `format_squash_message` over the PR's title, body and commits (merge
   commits, such as an update-branch's, are left out), plus a `Co-authored-by:` trailer for
   each other author of a listed commit, as GitHub's own squash message keeps them;
4. the head branch is deleted by `delete_ref`'s rules (same repository, not the default branch),
   and only while it still points at the PR's head: a branch someone pushed to after the merge
   is kept (`skipped(moved)`). A branch already gone is `skipped(missing)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._errors import ForgeCliError, ForgeConflictError, ForgeError, ForgeInputError
from ._exec import GitExec
from ._port import ForgePort
from ._premerge import UNKNOWN_REREAD_DELAYS, premerge
from ._redact import exception_reason
from ._squash import SquashCommit, SquashMessage, format_squash_message
from ._types import PullRequest
from ._validate import validate_number, validate_repo

__all__ = [
    "MERGE_BODY_LIMIT",
    "MergeOutcome",
    "delete_head_branch",
    "guarded_merge",
    "squash_message_for",
]

# The forge's commit message limit as the port enforces it (validate_text's default).
MERGE_BODY_LIMIT = 65536


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeOutcome:
    """How `guarded_merge` ended.

    `status` is `merged` (now or earlier: `merge` says `done` or `skipped(merged)`), `failed`
    (premerge or the forge refused; `reasons` says why) or `moved` (the head is not the one
    given; nothing was merged). `branch` is `deleted`, `skipped(<why>)` or None when the merge
    did not happen.
    """

    repo: str
    number: int
    status: Literal["merged", "failed", "moved"]
    head: str | None
    sha: str | None = None
    merge: str | None = None
    branch: str | None = None
    reasons: tuple[str, ...] = ()

    def line(self) -> str:
        """Return the one line `forge-cli merge` prints for this outcome."""
        ref = f"{self.repo}#{self.number}"
        if self.status == "merged":
            return (
                f"MERGED {ref} head={self.head} sha={self.sha or '-'} merge={self.merge} "
                f"branch={self.branch}"
            )
        if self.status == "moved":
            return f"MOVED {ref}: {'; '.join(self.reasons)}; nothing was merged"
        return f"FAIL {ref}: {'; '.join(self.reasons)}"


def squash_message_for(
    port: ForgePort, repo: str, pr: PullRequest, task_ids: Sequence[str] = ()
) -> SquashMessage:
    """Return the squash subject and body for `pr`, read from its commits (first 250)."""
    commits = port.list_pr_commit_messages(repo, pr.number)
    listed = [c for c in commits if len(c.parents) < 2]
    message = format_squash_message(
        title=pr.title or f"Pull request {pr.number}",
        body=pr.body,
        pr_number=pr.number,
        task_ids=task_ids,
        commits=[SquashCommit(subject=c.subject, body=c.body) for c in listed],
    )
    trailers: dict[str, str] = {}
    author = (pr.author or "").casefold()
    for commit in listed:
        email = (commit.author_email or "").strip()
        by_pr_author = bool(author) and (commit.author_login or "").casefold() == author
        if not email or by_pr_author:
            continue
        name = " ".join((commit.author_name or email).split())
        trailers.setdefault(email.casefold(), f"Co-authored-by: {name} <{email}>")
    tail = "\n".join(trailers.values())
    body = message.body
    room = MERGE_BODY_LIMIT - len(tail) - 40
    if len(body) > room:
        body = body[: max(room, 0)].rstrip() + "\n\n[message cut at the forge's size limit]"
    if tail:
        body = f"{body}\n\n{tail}"
    return SquashMessage(subject=message.subject[:1024], body=body)


def delete_head_branch(port: ForgePort, repo: str, pr: PullRequest) -> str:
    """Delete the merged PR's head branch by delete_ref's rules; return `deleted` or why not."""
    same_repo = pr.head_repo is not None and pr.head_repo.casefold() == repo.casefold()
    try:
        if same_repo:
            tip = port.get_head_sha(repo, pr.head_ref)
            if tip is not None and tip != pr.head_sha:
                return "skipped(moved)"
        result = port.delete_ref(repo, branch=pr.head_ref, head_repo=pr.head_repo)
    except ForgeInputError:
        # A name the forge accepted but the port will not put in a path: leave it alone.
        return "skipped(unsafe-name)"
    return "deleted" if result.done else f"skipped({result.skipped})"


def guarded_merge(
    port: ForgePort,
    repo: str,
    number: int,
    head_sha: str,
    *,
    approved_head: str,
    clone: str | None = None,
    task_ids: Sequence[str] = (),
    git: GitExec | None = None,
    sleep: Callable[[float], None] = time.sleep,
    delays: Sequence[float] = UNKNOWN_REREAD_DELAYS,
    checked: bool = False,
) -> MergeOutcome:
    """Premerge, squash-merge PR `number` at `head_sha`, then delete its head branch; idempotent.

    `checked=True` skips premerge (the caller just ran it for this head).
    """
    validate_repo(repo)
    validate_number(number)
    pr = port.wire.get_pr(repo, number)  # premerge reads it again, with `behind`
    if pr.merged:
        return _merged(port, repo, number, pr, sha=pr.merge_sha, merge="skipped(merged)")
    if not checked:
        result = premerge(
            port,
            repo,
            number,
            head_sha,
            approved_head=approved_head,
            clone=clone,
            git=git,
            sleep=sleep,
            delays=delays,
        )
        if not result.ok:
            if result.head is not None and result.head != head_sha:
                return _moved(repo, number, result.head, head_sha)
            return _failed(repo, number, result.head, *result.reasons)
    message = squash_message_for(port, repo, pr, task_ids)
    try:
        merged = port.merge_pr(
            repo,
            number,
            head_sha=head_sha,
            method="squash",
            subject=message.subject,
            body=message.body,
        )
    except ForgeConflictError as exc:
        try:
            now = port.wire.get_pr(repo, number)
        except ForgeError:
            return _moved(repo, number, None, head_sha, detail=exception_reason(exc))
        if now.state != "open" and not now.merged:
            return _failed(repo, number, now.head_sha, f"the PR is {now.state}")
        return _moved(repo, number, now.head_sha, head_sha)
    except ForgeCliError as exc:
        if exc.status not in (405, 422):
            raise
        return _failed(
            repo, number, head_sha, f"the forge refused the merge: {exception_reason(exc)}"
        )
    if not merged.done:
        # Merged by someone else between our read and our write: still ours to clean up.
        pr = port.wire.get_pr(repo, number)
    merge = "done" if merged.done else f"skipped({merged.skipped})"
    return _merged(port, repo, number, pr, sha=merged.sha, merge=merge)


def _merged(
    port: ForgePort, repo: str, number: int, pr: PullRequest, *, sha: str | None, merge: str
) -> MergeOutcome:
    # Merged (by us or earlier): the head branch is ours to clean up either way.
    branch = delete_head_branch(port, repo, pr)
    return MergeOutcome(
        repo=repo,
        number=number,
        status="merged",
        head=pr.head_sha,
        sha=sha,
        merge=merge,
        branch=branch,
    )


def _failed(repo: str, number: int, head: str | None, *reasons: str) -> MergeOutcome:
    return MergeOutcome(repo=repo, number=number, status="failed", head=head, reasons=reasons)


def _moved(
    repo: str, number: int, now: str | None, expected: str, *, detail: str = ""
) -> MergeOutcome:
    reason = (
        f"head is {now}, expected {expected}"
        if now is not None
        else f"head moved from {expected} ({detail})"
    )
    return MergeOutcome(repo=repo, number=number, status="moved", head=now, reasons=(reason,))
