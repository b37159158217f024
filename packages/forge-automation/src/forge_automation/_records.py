"""The records a merge decision reads: a PR, its runs and statuses, required checks, reviews.

Apart from `_types` (which re-exports them) so that `merge_readiness` and `ci_verdict`, and
forge-cli pr-status with them, build only these dataclasses at import rather than every record
of the package: building a dataclass runs a generated function per method. (`typing` is loaded
by then in any case: `_readiness` and `_verdict` import it.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

# The states are Literals (GitHub's OpenAPI and GraphQL enums, lower-cased where GraphQL shouts);
# the parsers (`_github`) check each value against the same set (`*_STATES`, from `get_args`)
# and read anything else as malformed, never as a guess.
PrState: TypeAlias = Literal["open", "closed"]
MergeableState: TypeAlias = Literal[
    "behind", "blocked", "clean", "dirty", "draft", "has_hooks", "unknown", "unstable"
]
CheckStatus: TypeAlias = Literal[
    "queued", "in_progress", "completed", "waiting", "requested", "pending"
]
CheckRunConclusion: TypeAlias = Literal[
    "success",
    "failure",
    "neutral",
    "cancelled",
    "skipped",
    "timed_out",
    "action_required",
    "stale",
    "startup_failure",
]
StatusState: TypeAlias = Literal["error", "failure", "pending", "success"]
ReviewStateName: TypeAlias = Literal[
    "APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"
]
ReviewDecision: TypeAlias = Literal["APPROVED", "CHANGES_REQUESTED", "REVIEW_REQUIRED"]

PR_STATES: frozenset[PrState] = frozenset(get_args(PrState))
MERGEABLE_STATES: frozenset[MergeableState] = frozenset(get_args(MergeableState))
CHECK_STATUSES: frozenset[CheckStatus] = frozenset(get_args(CheckStatus))
CHECK_CONCLUSIONS: frozenset[CheckRunConclusion] = frozenset(get_args(CheckRunConclusion))
STATUS_STATES: frozenset[StatusState] = frozenset(get_args(StatusState))
REVIEW_STATES: frozenset[ReviewStateName] = frozenset(get_args(ReviewStateName))
REVIEW_DECISIONS: frozenset[ReviewDecision] = frozenset(get_args(ReviewDecision))

__all__ = [
    "CHECK_CONCLUSIONS",
    "CHECK_STATUSES",
    "MERGEABLE_STATES",
    "PR_STATES",
    "REVIEW_DECISIONS",
    "REVIEW_STATES",
    "STATUS_STATES",
    "CheckRun",
    "CheckRunConclusion",
    "CheckStatus",
    "ClassicProtection",
    "CommitStatus",
    "MergeableState",
    "PrState",
    "PullRequest",
    "RequiredChecks",
    "RequiredContext",
    "Review",
    "ReviewDecision",
    "ReviewRequest",
    "ReviewRules",
    "ReviewState",
    "ReviewStateName",
    "ReviewThread",
    "StatusState",
]


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
    state: PrState
    head_sha: str
    head_ref: str
    head_repo: str | None
    base_ref: str
    base_sha: str | None = None
    mergeable_state: MergeableState = "unknown"
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
class CheckRun:
    """One check run; `conclusion` is None until it completes."""

    id: int
    name: str
    status: CheckStatus
    conclusion: CheckRunConclusion | None
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
    state: StatusState
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
    # Where the rule came from, for details: "ruleset", "classic", "ruleset and classic" or
    # "none".
    source: str = "none"
    # Classic protection could not be read (GitHub hides it from callers without admin rights):
    # what it asks is unknown, so the forge's own reviewDecision decides the review part and
    # every unresolved review thread blocks.
    protection_hidden: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicProtection:
    """A branch's classic protection as `GET .../branches/{branch}/protection` answers it:
    its required checks and its review and conversation-resolution rules."""

    checks: RequiredChecks = RequiredChecks()
    reviews: ReviewRules = ReviewRules(source="classic")


@dataclass(frozen=True, slots=True, kw_only=True)
class Review:
    """One submitted review: who, what (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED), on
    which commit, and whether its author can push (only their reviews count toward the rules)."""

    author: str | None
    state: ReviewStateName
    commit_oid: str | None
    submitted_at: str | None = None
    author_can_push: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewThread:
    """One review thread with its resolved state, where it sits and who opened it.

    `author` and `comments` (the count) are None when the read did not ask for them.
    """

    id: str
    resolved: bool
    path: str = ""
    line: int | None = None
    author: str | None = None
    comments: int | None = None


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
    (author and committer), standing in for the last pusher, whom the forge does not name;
    `unlinked_pusher` True when the head commit's author or committer has no linked account
    (whoever that is may be the pusher, and may approve under another name).
    """

    head_sha: str
    reviews: tuple[Review, ...] = ()
    threads: tuple[ReviewThread, ...] = ()
    requests: tuple[ReviewRequest, ...] = ()
    rules: ReviewRules = ReviewRules()
    decision: ReviewDecision | None = None
    pushers: tuple[str, ...] = ()
    unlinked_pusher: bool = False
