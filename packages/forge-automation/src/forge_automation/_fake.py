"""An in-memory forge: state and its arranging methods, a ForgeWire over it, effect counters.

The public fake forge (`fake_forge`, `FakeForge`): its wire (`FakeForge.wire`) lives in
`_fake_wire`, one method per ForgeWire method over this module's dictionaries.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ._constants import FAKE_APP_ID
from ._exec import ExecOptions, ExecResult, GitExec
from ._fake_state import FakeCommit, FakeState, ReadFaults
from ._fake_wire import FakeWire
from ._records import ReviewDecision
from ._types import (
    CheckRun,
    CommitStatus,
    CompareFiles,
    CreatedCheckRun,
    FileEntry,
    ForcePush,
    IssueComment,
    PullRequest,
    RequiredChecks,
    Review,
    ReviewComment,
    ReviewRequest,
    ReviewRules,
)
from ._wire import ForgeWire

__all__ = ["FakeCommit", "FakeForge", "ReadFaults", "fake_forge"]

_PAGE = 100
T = TypeVar("T")
_PULL_REF = re.compile(r"refs/pull/(\d+)/head")


class FakeForge:
    """In-memory forge state plus `wire`, counters (`effects`, `calls`, `not_modified`), faults."""

    def __init__(self, *, app_id: int = FAKE_APP_ID, user: str = "forge-bot") -> None:
        self.app_id = app_id
        self.user = user
        self.effects: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.not_modified = 0
        self.pr_files: dict[tuple[str, int], list[FileEntry]] = {}
        self.review_comments: dict[tuple[str, int], list[ReviewComment]] = {}
        # Reviews oldest first, pending review requests and the forge's review decision per PR;
        # the logins each commit names (author, committer) for the last-push rule.
        self.reviews: dict[tuple[str, int], list[Review]] = {}
        self.review_requests: dict[tuple[str, int], list[ReviewRequest]] = {}
        self.review_decisions: dict[tuple[str, int], ReviewDecision | None] = {}
        self.commit_users: dict[str, tuple[str, ...]] = {}
        # Head commits whose author or committer has no linked account.
        self.unlinked_commits: set[str] = set()
        self.force_pushes: dict[tuple[str, int], list[ForcePush]] = {}
        self.commits: dict[str, FakeCommit] = {}
        self.created_check_runs: list[CreatedCheckRun] = []
        self.read_faults = ReadFaults()
        # Repositories whose protection the caller may not read (no admin rights).
        self.hidden_protection: set[str] = set()
        self._state = FakeState()
        self._lock = threading.RLock()
        self._ids = itertools.count(1000)
        self.wire: ForgeWire = FakeWire(self)
        self.git_exec: GitExec = self._git_exec

    # -- arranging state ------------------------------------------------------------------------

    def add_commit(
        self,
        sha: str,
        *,
        parents: Sequence[str] = (),
        message: str = "",
        date: str = "2024-01-01T00:00:00Z",
        author_name: str = "A U Thor",
        author_email: str = "author@example.com",
        author_login: str | None = None,
    ) -> str:
        """Record a commit in the history `compare_ancestry` and commit listings walk."""
        self.commits[sha] = FakeCommit(
            parents=tuple(parents),
            message=message,
            date=date,
            author_name=author_name,
            author_email=author_email,
            author_login=author_login,
        )
        return sha

    def set_branch(self, repo: str, branch: str, sha: str, *, default: bool = False) -> None:
        """Point a branch at `sha`; `default` makes it the repository's default branch."""
        with self._lock:
            self._state.branches[(repo, branch)] = sha
            if default or repo not in self._state.default_branch:
                self._state.default_branch.setdefault(repo, branch)
            if default:
                self._state.default_branch[repo] = branch

    def branch_sha(self, repo: str, branch: str) -> str | None:
        """Return where a branch points, or None."""
        with self._lock:
            return self._state.branches.get((repo, branch))

    def add_pr(self, repo: str, pr: PullRequest) -> PullRequest:
        """Store a PR; its base branch and same-repo head branch are created when absent."""
        with self._lock:
            base_sha = self._state.branches.get((repo, pr.base_ref)) or pr.base_sha
            if base_sha is None:
                base_sha = hashlib.sha256(f"{repo}:{pr.base_ref}".encode()).hexdigest()[:40]
            self._state.branches.setdefault((repo, pr.base_ref), base_sha)
            self._state.default_branch.setdefault(repo, pr.base_ref)
            if pr.head_repo == repo:
                self._state.branches.setdefault((repo, pr.head_ref), pr.head_sha)
            if pr.head_sha not in self.commits:
                self.commits[pr.head_sha] = FakeCommit(parents=(base_sha,))
            stored = replace(pr, base_sha=pr.base_sha or base_sha)
            self._state.prs[(repo, pr.number)] = stored
            return stored

    def pr(self, repo: str, number: int) -> PullRequest:
        """Return the stored PR record."""
        with self._lock:
            return self._state.prs[(repo, number)]

    def update_pr(self, repo: str, number: int, **changes: Any) -> PullRequest:
        """Change fields of a stored PR (a push, a merge, a new mergeable state)."""
        with self._lock:
            updated = replace(self._state.prs[(repo, number)], **changes)
            self._state.prs[(repo, number)] = updated
            return updated

    def comments(self, repo: str, number: int) -> list[IssueComment]:
        """Return the PR's conversation comments (mutable, for arranging other authors)."""
        with self._lock:
            return self._state.comments.setdefault((repo, number), [])

    def add_comment(self, repo: str, number: int, *, author: str, body: str) -> int:
        """Add a conversation comment by `author` and return its id."""
        with self._lock:
            comment = IssueComment(id=next(self._ids), author=author, body=body)
            self.comments(repo, number).append(comment)
            return comment.id

    def set_pr_commits(self, repo: str, number: int, shas: Iterable[str]) -> None:
        """Set the PR's commit list, oldest first."""
        with self._lock:
            self._state.pr_commits[(repo, number)] = list(shas)

    def set_labels(self, repo: str, number: int, labels: Iterable[str]) -> None:
        """Set the labels a PR carries."""
        with self._lock:
            self._state.labels[(repo, number)] = list(labels)

    def set_files(self, repo: str, files: Mapping[str, str]) -> None:
        """Set the repository's files (path -> UTF-8 text), the same at every ref."""
        with self._lock:
            for key in [k for k in self._state.files if k[0] == repo]:
                del self._state.files[key]
            self._state.files.update({(repo, path): text for path, text in files.items()})

    def labels(self, repo: str, number: int) -> list[str]:
        """Return the labels a PR carries (a copy)."""
        with self._lock:
            return list(self._state.labels.get((repo, number), []))

    def set_runs(self, sha: str, runs: Iterable[CheckRun]) -> None:
        """Set every check run for `sha` (superseded runs included)."""
        with self._lock:
            self._state.runs[sha] = list(runs)

    def set_statuses(self, sha: str, statuses: Iterable[CommitStatus]) -> None:
        """Set every commit status for `sha`, oldest first; reads see the latest per context."""
        with self._lock:
            self._state.statuses[sha] = list(statuses)

    def set_rulesets(self, repo: str, branch: str, rules: RequiredChecks) -> None:
        """Set the required checks the branch's rulesets impose."""
        with self._lock:
            self._state.rulesets[(repo, branch)] = rules

    def set_classic_protection(self, repo: str, branch: str, rules: RequiredChecks | int) -> None:
        """Set classic protection's required checks, or an HTTP status it fails with (403, or
        404 `Branch not protected`)."""
        with self._lock:
            self._state.classic[(repo, branch)] = rules

    def set_classic_review_rules(self, repo: str, branch: str, rules: ReviewRules | int) -> None:
        """Set classic protection's review rules, or an HTTP status it fails with (403, or
        404 `Branch not protected`)."""
        with self._lock:
            self._state.classic_reviews[(repo, branch)] = rules

    def hide_protection(self, repo: str) -> None:
        """Answer `repo`'s protection reads as GitHub answers a caller without admin rights:
        404 `Not Found` whether or not a branch is protected."""
        with self._lock:
            self.hidden_protection.add(repo)

    def set_compare(self, repo: str, base: str, head: str, result: CompareFiles) -> None:
        """Set the answer of compare_files for `base...head`."""
        with self._lock:
            self._state.compares[(repo, base, head)] = result

    # -- the git seam ---------------------------------------------------------------------------

    def _git_exec(self, args: Sequence[str], options: ExecOptions) -> ExecResult:
        with self._lock:
            self.calls["ls_remote"] += 1
            if self.read_faults.ls_remote:
                self.read_faults.ls_remote = False
                return ExecResult(
                    returncode=128, stdout=b"", stderr=b"fatal: fake ls-remote fault\n"
                )
            wanted = [a for a in args if _PULL_REF.fullmatch(a)]
            url = next((a for a in args if "://" in a), "")
            lines = []
            for ref in wanted:
                match = _PULL_REF.fullmatch(ref)
                assert match is not None
                number = int(match.group(1))
                for (repo, n), pr in sorted(self._state.prs.items()):
                    if n == number and (repo in url or not url):
                        lines.append(f"{pr.head_sha}\t{ref}\n")
                        break
            return ExecResult(returncode=0, stdout="".join(lines).encode(), stderr=b"")

    # -- helpers for the wire ----------------------------------------------------------------------

    def _resolve(self, repo: str, ref: str) -> str | None:
        state = self._state
        for name in (ref, ref.removeprefix("refs/heads/"), ref.removeprefix("heads/")):
            if (repo, name) in state.branches:
                return state.branches[(repo, name)]
        if ref in self.commits or any(p.head_sha == ref for p in state.prs.values()):
            return ref
        return None

    def _ancestors(self, sha: str) -> dict[str, int]:
        # Distance from `sha` by breadth-first walk; the commit itself is at 0.
        seen = {sha: 0}
        frontier = [sha]
        for depth in range(1, 100_000):
            nxt = []
            for current in frontier:
                commit = self.commits.get(current)
                for parent in commit.parents if commit else ():
                    if parent not in seen:
                        seen[parent] = depth
                        nxt.append(parent)
            if not nxt:
                break
            frontier = nxt
        return seen


def fake_forge(*, app_id: int = FAKE_APP_ID, user: str = "forge-bot") -> FakeForge:
    """Return an empty in-memory forge whose `wire` records created check runs under `app_id`."""
    return FakeForge(app_id=app_id, user=user)
