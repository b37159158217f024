"""The fake forge's state: its commits, read faults and the dictionaries its wire keeps."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._errors import ForgeCliError
from ._types import (
    CheckRun,
    CommitStatus,
    CompareFiles,
    IssueComment,
    LabelledIssue,
    PullRequest,
    RequiredChecks,
    ReviewRules,
)

__all__ = ["FakeCommit", "FakeState", "ReadFaults", "not_found"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeCommit:
    """One commit in the fake's history: its parents, message, committer date and author."""

    parents: tuple[str, ...] = ()
    message: str = ""
    date: str = "2024-01-01T00:00:00Z"
    author_name: str = "A U Thor"
    author_email: str = "author@example.com"
    author_login: str | None = None


@dataclass(slots=True)
class ReadFaults:
    """Set a flag to make the next such read fail once."""

    compare_ancestry: bool = False
    ls_remote: bool = False
    reviews: bool = False


@dataclass(slots=True)
class FakeState:
    """Every dictionary the fake forge's wire reads and writes, keyed by repo (and number)."""

    default_branch: dict[str, str] = field(default_factory=dict)
    branches: dict[tuple[str, str], str] = field(default_factory=dict)
    prs: dict[tuple[str, int], PullRequest] = field(default_factory=dict)
    comments: dict[tuple[str, int], list[IssueComment]] = field(default_factory=dict)
    pr_commits: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    runs: dict[str, list[CheckRun]] = field(default_factory=dict)
    statuses: dict[str, list[CommitStatus]] = field(default_factory=dict)
    rulesets: dict[tuple[str, str], RequiredChecks] = field(default_factory=dict)
    classic: dict[tuple[str, str], RequiredChecks | int] = field(default_factory=dict)
    classic_reviews: dict[tuple[str, str], ReviewRules | int] = field(default_factory=dict)
    compares: dict[tuple[str, str, str], CompareFiles] = field(default_factory=dict)
    labels: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    # Issues (not PRs) by (repo, number); their labels and comments live beside the PRs'.
    issues: dict[tuple[str, int], LabelledIssue] = field(default_factory=dict)
    # Repository files by (repo, path), the same at every ref (the contents API's reads).
    files: dict[tuple[str, str], str] = field(default_factory=dict)


def not_found(what: str) -> ForgeCliError:
    """Return GitHub's 404 for a missing `what`."""
    return ForgeCliError(
        f"gh api failed with HTTP 404: Not Found ({what})", status=404, kind="not-found"
    )
