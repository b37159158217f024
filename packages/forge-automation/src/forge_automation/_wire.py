"""The wire: one unconditional forge call per method (`ForgeWire`), and `gh_cli_wire`.

`gh_cli_wire` builds the one implementation over `gh api` (`_gh_wire.GhCliWire`); the fake forge
(`fake_forge`) is the other. The port (`_port.ForgePort`) validates and decides around either.
"""

from __future__ import annotations

from typing import Protocol

from ._budget import RateBudget, shared_rate_budget
from ._exec import GhExec
from ._gh import DEFAULT_TIMEOUT, GhResponse, parse_gh_response, run_gh
from ._gh_wire import AppTokenProvider, GhCliWire
from ._ghenv import gh_child_env
from ._types import (
    Ancestry,
    CheckRun,
    CheckRunRequest,
    ClassicProtection,
    Commit,
    CommitStatus,
    CompareFiles,
    FileEntry,
    ForcePush,
    IssueComment,
    LabelledIssue,
    LabelledPr,
    NotModified,
    Page,
    PrCommit,
    PullRequest,
    RequiredChecks,
    ReviewComment,
    ReviewState,
)

__all__ = [
    "AppTokenProvider",
    "ForgeWire",
    "GhResponse",
    "gh_child_env",
    "gh_cli_wire",
    "parse_gh_response",
    "run_gh",
]


class ForgeWire(Protocol):
    """One unconditional forge call per method; the port validates and decides around it."""

    def get_authenticated_user(self) -> str:
        """Return the login of the user the CLI acts as."""
        ...

    def get_ref_sha(self, repo: str, ref: str) -> str | None:
        """Return the sha `ref` points at (a `heads/`, `tags/` or `pull/` ref), None on 404."""
        ...

    def get_default_branch(self, repo: str) -> str:
        """Return the repository's default branch name."""
        ...

    def create_ref(self, repo: str, branch: str, sha: str) -> str:
        """Create `refs/heads/<branch>` at `sha` and return the sha."""
        ...

    def delete_ref(self, repo: str, branch: str) -> None:
        """Delete `refs/heads/<branch>`."""
        ...

    def update_ref(self, repo: str, branch: str, sha: str) -> str:
        """Fast-forward `refs/heads/<branch>` to `sha` (never forced) and return the sha; the
        forge answers 422 when `sha` does not hold the branch's tip."""
        ...

    def rerun_job(self, repo: str, job_id: int) -> None:
        """Re-run one GitHub Actions job (its check run id) on the same commit."""
        ...

    def find_open_pr(self, repo: str, head: str, base: str) -> PullRequest | None:
        """Return the open PR from `head` (`owner:branch`) into `base`, or None."""
        ...

    def create_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        """Open a PR from `head` into `base`."""
        ...

    def get_pr(self, repo: str, number: int) -> PullRequest:
        """Return one PR with its `changed_files`; `behind` is left False."""
        ...

    def compare_ancestry(self, repo: str, base: str, head: str) -> Ancestry | None:
        """Return the compare status of `base...head` reading one commit, None on 404."""
        ...

    def compare_files(self, repo: str, base: str, head: str) -> CompareFiles:
        """Return the files changed on `base...head` with the truncation flag."""
        ...

    def get_commit_parents(self, repo: str, sha: str) -> tuple[str, ...] | None:
        """Return the parents of commit `sha` (git data API), None when the forge has none."""
        ...

    def list_directory(self, repo: str, path: str, ref: str) -> tuple[str, ...] | None:
        """Return the paths of the files in directory `path` at `ref`; None when it is not there."""
        ...

    def get_text_file(self, repo: str, path: str, ref: str) -> str | None:
        """Return the UTF-8 text of file `path` at `ref`; None when it is not there."""
        ...

    def list_pr_files(self, repo: str, number: int, page: int) -> Page[FileEntry]:
        """Return one page of a PR's files."""
        ...

    def list_pr_commits(self, repo: str, number: int, page: int) -> Page[str]:
        """Return one page of a PR's commit shas, oldest first."""
        ...

    def list_pr_commit_messages(self, repo: str, number: int, page: int) -> Page[PrCommit]:
        """Return one page of a PR's commits with message, author and parents, oldest first."""
        ...

    def list_labelled_prs(self, repo: str, label: str, state: str, page: int) -> Page[LabelledPr]:
        """Return one page of PRs (not issues) carrying `label` in `state`, oldest first."""
        ...

    def list_issue_labels(self, repo: str, number: int) -> tuple[str, ...]:
        """Return the names of the labels on a PR (its issue)."""
        ...

    def remove_issue_label(self, repo: str, number: int, label: str) -> bool:
        """Remove `label` from the PR; False when the forge answers 404 (not there)."""
        ...

    def list_issue_comments(self, repo: str, number: int, page: int) -> Page[IssueComment]:
        """Return one page of a PR's conversation comments, oldest first."""
        ...

    def create_issue_comment(self, repo: str, number: int, body: str) -> int:
        """Post a conversation comment and return its id."""
        ...

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> None:
        """Replace the body of issue comment `comment_id`."""
        ...

    def list_labelled_issues(self, repo: str, label: str, page: int) -> Page[LabelledIssue]:
        """Return one page of the open issues (not PRs) carrying `label`, oldest first."""
        ...

    def create_issue(self, repo: str, title: str, body: str, label: str) -> int:
        """Open an issue carrying `label`; return its number."""
        ...

    def list_review_comments(
        self, repo: str, number: int, after: str | None
    ) -> Page[ReviewComment]:
        """Return one GraphQL page of review threads' comments with resolved state."""
        ...

    def list_force_pushes(self, repo: str, number: int) -> Page[ForcePush]:
        """Return the first FORCE_PUSHES_CAP force-pushes; `next_cursor` set when more exist."""
        ...

    def list_open_prs(
        self, repo: str, page: int, etag: str | None
    ) -> Page[PullRequest] | NotModified:
        """Return one page of open PRs, or NotModified when `etag` still matches."""
        ...

    def list_commits(self, repo: str, since: str, page: int) -> Page[Commit]:
        """Return one page of default-branch commits at or after `since`, newest first."""
        ...

    def create_check_run(self, repo: str, request: CheckRunRequest) -> CheckRun:
        """Create a completed check run as the app."""
        ...

    def list_check_runs(self, repo: str, sha: str, page: int, *, latest: bool) -> Page[CheckRun]:
        """Return one page of check runs for `sha` (all runs, or the latest per name).

        `sha` may also be a ref the forge resolves, such as `refs/pull/<n>/head`.
        """
        ...

    def list_commit_statuses(self, repo: str, sha: str, page: int) -> Page[CommitStatus]:
        """Return one page of the latest status per context for `sha`."""
        ...

    def get_branch_rules(self, repo: str, branch: str, page: int) -> Page[RequiredChecks]:
        """Return one page of the branch's active required-status-check rules (rulesets)."""
        ...

    def merge_pr(
        self, repo: str, number: int, *, sha: str, method: str, subject: str, body: str
    ) -> str:
        """Merge the PR only while its head is `sha` and return the merge commit's sha.

        A moved head is the forge's 409, a PR that cannot merge (merged, closed, conflicted) its
        405; both raise ForgeCliError with that status.
        """
        ...

    def update_branch(self, repo: str, number: int, *, expected_head_sha: str) -> None:
        """Ask the forge to merge the base into the PR's head while the head is that sha.

        The forge answers 202 and updates asynchronously; a moved head is its 422.
        """
        ...

    def get_classic_protection(self, repo: str, branch: str) -> ClassicProtection | None:
        """Return the branch's classic protection, or None when GitHub says it has none.

        Only GitHub's 404 `Branch not protected` is None. Its 404 `Not Found` (its answer to
        every caller without admin rights) raises ForgeCliError kind `forbidden`
        (ProtectionHidden); any other failure raises as usual, the
        free-plan 403 as kind `free-plan`.
        """
        ...

    def get_pull_reviews(
        self, repo: str, number: int, head_sha: str, after: str | None
    ) -> tuple[ReviewState, str | None]:
        """Return one GraphQL page of the PR's reviews, with its pending review requests, the
        forge's review decision, the head it read and the logins the commit `head_sha` names,
        and the cursor of the next page of reviews (threads and rules are left empty)."""
        ...


def gh_cli_wire(
    exec: GhExec | None = None,
    *,
    app_token: str | AppTokenProvider | None = None,
    budget: RateBudget | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    deadline: float | None = None,
) -> ForgeWire:
    """Return a ForgeWire that runs `gh api` once per method through `exec` (default: real gh).

    Each call, a read's retries included, ends within `timeout` seconds, or by `deadline` (a
    `time.monotonic()` value) when one is given.
    """
    return GhCliWire(exec or run_gh, app_token, budget or shared_rate_budget(), timeout, deadline)
