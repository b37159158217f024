"""The forge's records as frozen values: PRs, files, comments, runs, statuses, rules and results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeAlias, TypeVar, get_args

from ._records import (
    CheckRun,
    ClassicProtection,
    CommitStatus,
    PrState,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    Review,
    ReviewRequest,
    ReviewRules,
    ReviewState,
    ReviewThread,
)

__all__ = [
    "COMPARE_STATUSES",
    "FILE_STATUSES",
    "Ancestry",
    "AncestryStatus",
    "CheckConclusion",
    "CheckRun",
    "CheckRunRequest",
    "ClassicProtection",
    "Commit",
    "CommitStatus",
    "CompareFiles",
    "CompareStatus",
    "CreatedCheckRun",
    "DeleteRefResult",
    "EnsureBranchResult",
    "FileEntry",
    "FileStatus",
    "ForcePush",
    "IssueComment",
    "LabelledIssue",
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
# What a comparison answers (`AncestryStatus` without `missing`, the port's word for a 404).
CompareStatus: TypeAlias = Literal["ahead", "behind", "identical", "diverged"]
COMPARE_STATUSES: frozenset[CompareStatus] = frozenset(get_args(CompareStatus))
FileStatus: TypeAlias = Literal[
    "added", "removed", "modified", "renamed", "copied", "changed", "unchanged"
]
FILE_STATUSES: frozenset[FileStatus] = frozenset(get_args(FileStatus))
CheckConclusion: TypeAlias = Literal["success", "failure", "action_required"]
SkipReason: TypeAlias = Literal[
    "exists", "default-branch", "fork-head", "missing", "merged", "up-to-date"
]
MergeMethod: TypeAlias = Literal["merge", "squash", "rebase"]
T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class FileEntry:
    """One changed file; a rename carries the old name in `previous_path`."""

    path: str
    previous_path: str | None = None
    status: FileStatus
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
    state: PrState
    created_at: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelledIssue:
    """An open issue (not a PR) carrying a label: its number, author and title."""

    number: int
    author: str | None
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Commit:
    """A commit on the default branch."""

    sha: str
    message: str


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

    status: CompareStatus
    ahead_by: int
    behind_by: int
    merge_base_sha: str | None = None
