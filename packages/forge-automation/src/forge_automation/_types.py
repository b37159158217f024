"""The forge's records as frozen values: PRs, files, comments, runs, statuses, rules and results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeAlias, TypeVar

__all__ = [
    "Ancestry",
    "AncestryStatus",
    "CheckConclusion",
    "CheckRun",
    "CheckRunRequest",
    "Commit",
    "CommitStatus",
    "CompareFiles",
    "CreatedCheckRun",
    "DeleteRefResult",
    "EnsureBranchResult",
    "FileEntry",
    "ForcePush",
    "IssueComment",
    "LabelledPr",
    "MergeMethod",
    "MergeResult",
    "NotModified",
    "OpenPrResult",
    "OpenPrsList",
    "Page",
    "PrCommit",
    "PullRequest",
    "RemoveLabelResult",
    "RequiredChecks",
    "RequiredContext",
    "Review",
    "ReviewComment",
    "ReviewRequest",
    "ReviewRules",
    "ReviewState",
    "ReviewThread",
    "SkipReason",
    "UpdateBranchResult",
    "UpsertCommentResult",
]

AncestryStatus: TypeAlias = Literal["ahead", "behind", "identical", "diverged", "missing"]
CheckConclusion: TypeAlias = Literal["success", "failure", "action_required"]
SkipReason: TypeAlias = Literal[
    "exists", "default-branch", "fork-head", "missing", "merged", "up-to-date"
]
MergeMethod: TypeAlias = Literal["merge", "squash", "rebase"]
T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRequest:
    """A pull request as `open_pr`, `get_pr` and `list_open_prs` return it.

    `mergeable_state` is lazy on the forge: `unknown` is common and never means clean. `merge_sha`
    is the forge's test merge on an open PR and the merge commit only once `merged` is true.
    `behind` is computed by `get_pr` only; list rows always carry False. List rows (`list_open_prs`
    and the PR `open_pr` finds already open) are the forge's pull-request-simple: no mergeable
    state (`unknown`), no `changed_files` (None), `merged` from `merged_at`; `get_pr` has them all.
    """

    number: int
    state: str
    head_sha: str
    head_ref: str
    head_repo: str | None
    base_ref: str
    base_sha: str | None = None
    mergeable_state: str = "unknown"
    merged: bool = False
    merge_sha: str | None = None
    merged_at: str | None = None
    behind: bool = False
    behind_by: int = 0
    draft: bool = False
    title: str = ""
    body: str = ""
    changed_files: int | None = None
    author: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FileEntry:
    """One changed file; a rename carries the old name in `previous_path`."""

    path: str
    previous_path: str | None = None
    status: str
    additions: int = 0
    deletions: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareFiles:
    """Files changed between a merge base and a head; `truncated` means cannot decide."""

    merge_base_sha: str
    files: tuple[FileEntry, ...]
    truncated: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewComment:
    """One inline review comment with its thread's resolved state."""

    id: int
    author: str | None
    author_association: str
    path: str
    line: int | None
    body: str
    resolved: bool
    thread_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueComment:
    """One conversation comment on a PR, as `upsert_comment` reads them."""

    id: int
    author: str | None
    body: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ForcePush:
    """One force-push; `before` is None when the forge no longer has the replaced commit."""

    before: str | None
    after: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PrCommit:
    """One commit of a PR as the forge lists it: message split into subject and body, author.

    `author_login` is the forge account the commit's author email belongs to (None when it
    belongs to none); `parents` tells merge commits (two or more) apart.
    """

    sha: str
    subject: str
    body: str
    author_name: str | None
    author_email: str | None
    author_login: str | None
    parents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelledPr:
    """A PR carrying a label, from the forge's issue listing (`state` is open or closed)."""

    number: int
    state: str
    created_at: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Commit:
    """A commit on the default branch."""

    sha: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckRun:
    """One check run; `conclusion` is None until it completes."""

    id: int
    name: str
    status: str
    conclusion: str | None
    app_id: int | None
    head_sha: str
    completed_at: str | None = None
    started_at: str | None = None
    details_url: str | None = None
    external_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitStatus:
    """One commit status (the older, context-named CI signal)."""

    context: str
    state: str
    created_at: str | None = None
    target_url: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequiredContext:
    """A required status context, pinned to one app when `app_id` is set."""

    context: str
    app_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequiredChecks:
    """Required contexts of a branch and whether the head must be up to date (strict)."""

    contexts: tuple[RequiredContext, ...] = ()
    strict: bool = False
    # The rulesets' `pull_request` rule (the strictest of several); None when they have none.
    reviews: ReviewRules | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewRules:
    """What a branch asks of reviews: a `pull_request` ruleset rule, or classic protection's.

    The default asks nothing (no rule, an unprotected branch, or the free-plan answer).
    """

    required_approving_review_count: int = 0
    require_code_owner_review: bool = False
    require_last_push_approval: bool = False
    dismiss_stale_reviews_on_push: bool = False
    required_review_thread_resolution: bool = False
    # Where the rule came from, for details: "ruleset", "classic" or "none".
    source: str = "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class Review:
    """One submitted review: who, what (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED), on
    which commit, and whether its author can push (only their reviews count toward the rules)."""

    author: str | None
    state: str
    commit_oid: str | None
    submitted_at: str | None = None
    author_can_push: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewThread:
    """One review thread with its resolved state, where it sits and who opened it."""

    id: str
    resolved: bool
    path: str = ""
    line: int | None = None
    author: str | None = None
    comments: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewRequest:
    """A pending review request: a user's login or a team's `org/slug`."""

    reviewer: str
    team: bool = False
    as_code_owner: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewState:
    """What `merge_readiness` needs to judge reviews; `load_review_state` reads it whole.

    `reviews` oldest first; `threads` every review thread; `requests` pending requests;
    `rules` the base branch's review rules; `decision` the forge's own `reviewDecision`
    (APPROVED, CHANGES_REQUESTED, REVIEW_REQUIRED, or None when it requires no review);
    `head_sha` the head the reviews were read at; `pushers` the logins the head commit names
    (author and committer), standing in for the last pusher, whom the forge does not name.
    """

    head_sha: str
    reviews: tuple[Review, ...] = ()
    threads: tuple[ReviewThread, ...] = ()
    requests: tuple[ReviewRequest, ...] = ()
    rules: ReviewRules = ReviewRules()
    decision: str | None = None
    pushers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckRunRequest:
    """What `create_check_run` posts: a completed run with one of three conclusions."""

    name: str
    head_sha: str
    conclusion: CheckConclusion
    title: str
    summary: str
    external_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatedCheckRun:
    """The fake's record of one created check run."""

    id: int
    repo: str
    request: CheckRunRequest
    app_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EnsureBranchResult:
    """`done` when this call created the branch; else `skipped` says why not."""

    sha: str
    done: bool
    skipped: SkipReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRefResult:
    """`done` when this call deleted the branch; else `skipped` says why not."""

    done: bool
    skipped: SkipReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeResult:
    """`done` when this call merged the PR (`sha` is the merge commit); else skipped `merged`.

    On a skip, `sha` is the merge commit the forge reports for the earlier merge (may be None).
    """

    sha: str | None
    done: bool
    skipped: SkipReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateBranchResult:
    """`done` when this call asked the forge to merge the base into the head; else `skipped`.

    `skipped` is `up-to-date` when the head already contains the base tip, `merged` when the PR
    is merged. The forge updates the branch asynchronously: re-read the PR for the new head.
    """

    done: bool
    skipped: SkipReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveLabelResult:
    """`done` when this call removed the label; else skipped `missing` (the PR did not have it)."""

    done: bool
    skipped: SkipReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpsertCommentResult:
    """`done` when this call posted; else the marked comment `id` that already exists."""

    id: int
    done: bool
    skipped: SkipReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenPrResult:
    """The PR for head→base; `done` when this call opened it, else skipped `exists`."""

    pr: PullRequest
    done: bool = True
    skipped: SkipReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenPrsList:
    """Open PR rows and the ETag to revalidate with (None when the list spans pages)."""

    prs: tuple[PullRequest, ...]
    etag: str | None
    not_modified: Literal[False] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class NotModified:
    """The open PR list is unchanged since the given ETag (a 304; no rate point charged)."""

    not_modified: Literal[True] = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Page(Generic[T]):
    """One page of a listing: `next_page` or `next_cursor` is set when the forge has more."""

    items: tuple[T, ...]
    next_page: int | None = None
    next_cursor: str | None = None
    etag: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ancestry:
    """How `head` relates to `base`, read from one page of one commit of a compare."""

    status: str
    ahead_by: int
    behind_by: int
    merge_base_sha: str | None = None
