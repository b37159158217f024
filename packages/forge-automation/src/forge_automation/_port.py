"""The port: validate every argument, read before every write, skip what is already done.

`ForgePort` is `PortReads` (`_port_reads`: every read, paged and bounded) plus the writes here.
"""

from __future__ import annotations

from typing import cast, get_args

from ._errors import (
    ForgeCliError,
    ForgeConflictError,
    ForgeInputError,
)
from ._port_reads import PortReads, all_pages
from ._types import (
    CheckConclusion,
    CheckRun,
    CheckRunRequest,
    DeleteRefResult,
    EnsureBranchResult,
    IssueComment,
    LabelledIssue,
    MergeMethod,
    MergeResult,
    OpenPrResult,
    PullRequest,
    RemoveLabelResult,
    UpdateBranchResult,
    UpsertCommentResult,
)
from ._validate import (
    validate_branch,
    validate_label,
    validate_marker,
    validate_number,
    validate_repo,
    validate_sha,
    validate_text,
)
from ._wire import ForgeWire

__all__ = ["ForgePort", "forge_port"]

_CONCLUSIONS: frozenset[str] = frozenset(get_args(CheckConclusion))
_MERGE_METHODS: frozenset[str] = frozenset(get_args(MergeMethod))


class ForgePort(PortReads):
    """Validated, idempotent forge operations over one ForgeWire; see `forge_port`."""

    # -- writes -----------------------------------------------------------------------------------

    def ensure_branch(self, repo: str, branch: str, base_sha: str) -> EnsureBranchResult:
        """Create the branch at `base_sha` unless it exists (then skipped `exists`)."""
        validate_repo(repo)
        validate_branch(branch)
        validate_sha(base_sha, "base_sha")
        existing = self._wire.get_ref_sha(repo, f"heads/{branch}")
        if existing is not None:
            return EnsureBranchResult(sha=existing, done=False, skipped="exists")
        try:
            sha = self._wire.create_ref(repo, branch, base_sha)
        except ForgeCliError as exc:
            if exc.status != 422:
                raise
            # Another caller created it between our read and our write.
            existing = self._wire.get_ref_sha(repo, f"heads/{branch}")
            if existing is None:
                raise
            return EnsureBranchResult(sha=existing, done=False, skipped="exists")
        return EnsureBranchResult(sha=sha, done=True)

    def open_pr(self, repo: str, *, head: str, base: str, title: str, body: str) -> OpenPrResult:
        """Open a PR from `head` into `base` unless one is open already (skipped `exists`)."""
        validate_repo(repo)
        validate_text(head, "head", allow_empty=False, max_len=300)
        owner, sep, branch = head.partition(":")
        if sep:
            validate_repo(f"{owner}/x", "head")
            validate_branch(branch, "head")
        else:
            validate_branch(head, "head")
            owner, branch = repo.split("/", 1)[0], head
        validate_branch(base, "base")
        validate_text(title, "title", allow_empty=False, max_len=256)
        validate_text(body, "body")
        qualified = f"{owner}:{branch}"
        existing = self._wire.find_open_pr(repo, qualified, base)
        if existing is not None:
            return OpenPrResult(pr=existing, done=False, skipped="exists")
        pr = self._wire.create_pr(repo, head if sep else branch, base, title, body)
        return OpenPrResult(pr=pr, done=True)

    def delete_ref(self, repo: str, *, branch: str, head_repo: str | None) -> DeleteRefResult:
        """Delete the PR's head branch unless it is the default branch or lives in a fork."""
        validate_repo(repo)
        validate_branch(branch)
        if head_repo is None:
            return DeleteRefResult(done=False, skipped="fork-head")
        validate_repo(head_repo, "head_repo")
        if head_repo.casefold() != repo.casefold():
            return DeleteRefResult(done=False, skipped="fork-head")
        if branch == self._wire.get_default_branch(repo):
            return DeleteRefResult(done=False, skipped="default-branch")
        if self._wire.get_ref_sha(repo, f"heads/{branch}") is None:
            return DeleteRefResult(done=False, skipped="missing")
        try:
            self._wire.delete_ref(repo, branch)
        except ForgeCliError as exc:
            if exc.status != 422 or self._wire.get_ref_sha(repo, f"heads/{branch}") is not None:
                raise
            return DeleteRefResult(done=False, skipped="missing")
        return DeleteRefResult(done=True)

    def rerun_job(self, repo: str, job_id: int) -> None:
        """Re-run one GitHub Actions job (a check run of the Actions app) on the same commit."""
        validate_repo(repo)
        validate_number(job_id, "job_id")
        self._wire.rerun_job(repo, job_id)

    def upsert_comment(
        self, repo: str, number: int, marker: str, body: str, *, update: bool = False
    ) -> UpsertCommentResult:
        """Post `body` unless our own comment already holds `marker` alone on a line.

        With `update` that comment's body becomes `body` (one edit; none when it is already).
        """
        validate_repo(repo)
        validate_number(number)
        validate_marker(marker)
        validate_text(body, "body", allow_empty=False)
        found = self.find_comment(repo, number, marker)
        if found is None:
            return UpsertCommentResult(
                id=self._wire.create_issue_comment(repo, number, body), done=True
            )
        if update and found.body != body:
            self._wire.update_issue_comment(repo, found.id, body)
            return UpsertCommentResult(id=found.id, done=True)
        return UpsertCommentResult(id=found.id, done=False, skipped="exists")

    def find_comment(self, repo: str, number: int, marker: str) -> IssueComment | None:
        """Return our own comment on issue or PR `number` holding `marker` alone on a line."""
        validate_repo(repo)
        validate_number(number)
        validate_marker(marker)
        user = self.get_authenticated_user().casefold()
        comments: list[IssueComment] = all_pages(
            lambda page: self._wire.list_issue_comments(repo, number, page)
        )
        for comment in comments:
            if (comment.author or "").casefold() != user:
                continue
            if any(line.strip() == marker for line in comment.body.splitlines()):
                return comment
        return None

    def ensure_issue(self, repo: str, *, label: str, title: str, body: str) -> int:
        """Return the number of our oldest open issue titled `title` carrying `label`; open one
        (with `body`) when there is none."""
        validate_repo(repo)
        validate_label(label)
        validate_text(title, "title", allow_empty=False)
        validate_text(body, "body", allow_empty=False)
        user = self.get_authenticated_user().casefold()
        issues: list[LabelledIssue] = all_pages(
            lambda page: self._wire.list_labelled_issues(repo, label, page)
        )
        for issue in sorted(issues, key=lambda i: i.number):
            if (issue.author or "").casefold() == user and issue.title == title:
                return issue.number
        return self._wire.create_issue(repo, title, body, label)

    def remove_label(self, repo: str, number: int, label: str) -> RemoveLabelResult:
        """Remove `label` from the PR unless it does not carry it (then skipped `missing`)."""
        validate_repo(repo)
        validate_number(number)
        validate_label(label)
        # Label names compare without case on the forge.
        present = {name.casefold() for name in self._wire.list_issue_labels(repo, number)}
        if label.casefold() not in present:
            return RemoveLabelResult(done=False, skipped="missing")
        if not self._wire.remove_issue_label(repo, number, label):
            return RemoveLabelResult(done=False, skipped="missing")  # removed in between
        return RemoveLabelResult(done=True)

    def merge_pr(
        self,
        repo: str,
        number: int,
        *,
        head_sha: str,
        method: str,
        subject: str,
        body: str,
    ) -> MergeResult:
        """Merge the PR only while its head is `head_sha`; skipped `merged` when already merged.

        A head other than `head_sha` (read before the write, or the forge's 409 when it moved
        between that read and the merge) raises ForgeConflictError, and so does a closed PR.
        `subject` and `body` are the commit's title and message (a rebase writes no commit of
        its own and ignores them).
        """
        validate_repo(repo)
        validate_number(number)
        validate_sha(head_sha, "head_sha")
        if method not in _MERGE_METHODS:
            raise ForgeInputError("method", "must be merge, squash or rebase")
        validate_text(subject, "subject", allow_empty=False, max_len=1024)
        validate_text(body, "body")
        pr = self._wire.get_pr(repo, number)
        if pr.merged:
            return MergeResult(sha=pr.merge_sha, done=False, skipped="merged")
        _check_open_at(pr, number, head_sha)
        moved = False
        try:
            sha = self._wire.merge_pr(
                repo, number, sha=head_sha, method=method, subject=subject, body=body
            )
        except ForgeCliError as exc:
            if exc.status not in (405, 409):
                raise
            # Re-read: another caller may have merged it, or the head moved under us.
            again = self._wire.get_pr(repo, number)
            if again.merged:
                return MergeResult(sha=again.merge_sha, done=False, skipped="merged")
            moved = exc.status == 409 or again.head_sha != head_sha or again.state != "open"
            if not moved:
                raise
        if moved:
            raise ForgeConflictError(
                f"#{number}: the head moved from {head_sha[:12]}; nothing was merged"
            )
        return MergeResult(sha=sha, done=True)

    def update_branch(self, repo: str, number: int, *, head_sha: str) -> UpdateBranchResult:
        """Merge the base into the PR's head while the head is `head_sha`.

        Skipped `up-to-date` when the head already holds the base tip, `merged` when the PR is
        merged. A head other than `head_sha` (read first, or the forge's 422 when it moved in
        between) raises ForgeConflictError, and so does a closed PR. The forge updates the
        branch asynchronously: read the PR again for the new head.
        """
        validate_repo(repo)
        validate_number(number)
        validate_sha(head_sha, "head_sha")
        pr = self._wire.get_pr(repo, number)
        if pr.merged:
            return UpdateBranchResult(done=False, skipped="merged")
        _check_open_at(pr, number, head_sha)
        ancestry = self._wire.compare_ancestry(repo, pr.base_ref, head_sha)
        if ancestry is None:
            raise ForgeCliError(
                f"cannot tell whether #{number} is behind its base", status=404, kind="not-found"
            )
        if ancestry.behind_by == 0:
            return UpdateBranchResult(done=False, skipped="up-to-date")
        moved = False
        try:
            self._wire.update_branch(repo, number, expected_head_sha=head_sha)
        except ForgeCliError as exc:
            if exc.status != 422:
                raise
            # 422 is both "expected head sha did not match" and "merge conflict": re-read.
            again = self._wire.get_pr(repo, number)
            moved = again.head_sha != head_sha or again.state != "open"
            if not moved:
                raise
        if moved:
            raise ForgeConflictError(
                f"#{number}: the head moved from {head_sha[:12]}; the branch was not updated"
            )
        return UpdateBranchResult(done=True)

    def create_check_run(
        self,
        repo: str,
        *,
        name: str,
        head_sha: str,
        conclusion: str,
        title: str,
        summary: str,
        external_id: str | None = None,
    ) -> CheckRun:
        """Create a completed check run (success, failure or action_required) as the app."""
        validate_repo(repo)
        validate_text(name, "name", allow_empty=False, max_len=255)
        validate_sha(head_sha, "head_sha")
        if conclusion not in _CONCLUSIONS:
            raise ForgeInputError("conclusion", "must be success, failure or action_required")
        validate_text(title, "title", allow_empty=False, max_len=1024)
        validate_text(summary, "summary", max_len=65535)
        if external_id is not None:
            validate_text(external_id, "external_id", max_len=255)
        request = CheckRunRequest(
            name=name,
            head_sha=head_sha,
            conclusion=cast(CheckConclusion, conclusion),
            title=title,
            summary=summary,
            external_id=external_id,
        )
        return self._wire.create_check_run(repo, request)


def _check_open_at(pr: PullRequest, number: int, head_sha: str) -> None:
    if pr.state != "open":
        raise ForgeConflictError(f"#{number} is {pr.state[:20]}, not open")
    if pr.head_sha != head_sha:
        raise ForgeConflictError(
            f"#{number}: the head is {pr.head_sha[:12]}, not {head_sha[:12]}; nothing was written"
        )


def forge_port(wire: ForgeWire) -> ForgePort:
    """Return a port that validates, reads before writing and skips what is already done."""
    return ForgePort(wire)
