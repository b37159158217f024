"""An in-memory forge: a ForgeWire over dictionaries, with effect counters for tests."""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ._constants import COMPARE_FILES_CAP, FAKE_APP_ID, FORCE_PUSHES_CAP
from ._errors import ForgeCliError, failure_of_status
from ._exec import ExecOptions, ExecResult, GitExec
from ._protection_shape import protection_hidden
from ._types import (
    Ancestry,
    CheckRun,
    CheckRunRequest,
    ClassicProtection,
    Commit,
    CommitStatus,
    CompareFiles,
    CreatedCheckRun,
    FileEntry,
    ForcePush,
    IssueComment,
    LabelledPr,
    NotModified,
    Page,
    PrCommit,
    PullRequest,
    RequiredChecks,
    Review,
    ReviewComment,
    ReviewRequest,
    ReviewRules,
    ReviewState,
)
from ._wire import ForgeWire

__all__ = ["FakeCommit", "FakeForge", "ReadFaults", "fake_forge"]

_PAGE = 100
T = TypeVar("T")
_PULL_REF = re.compile(r"refs/pull/(\d+)/head")


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
class _State:
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
        self.review_decisions: dict[tuple[str, int], str | None] = {}
        self.commit_users: dict[str, tuple[str, ...]] = {}
        # Head commits whose author or committer has no linked account.
        self.unlinked_commits: set[str] = set()
        self.force_pushes: dict[tuple[str, int], list[ForcePush]] = {}
        self.commits: dict[str, FakeCommit] = {}
        self.created_check_runs: list[CreatedCheckRun] = []
        self.read_faults = ReadFaults()
        # Repositories whose protection the caller may not read (no admin rights).
        self.hidden_protection: set[str] = set()
        self._state = _State()
        self._lock = threading.RLock()
        self._ids = itertools.count(1000)
        self.wire: ForgeWire = _FakeWire(self)
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


def _paged(items: Sequence[T], page: int) -> tuple[tuple[T, ...], int | None]:
    start = (page - 1) * _PAGE
    chunk = tuple(items[start : start + _PAGE])
    return chunk, page + 1 if start + _PAGE < len(items) else None


def _list_row(pr: PullRequest) -> PullRequest:
    """Return `pr` as a PR listing row carries it (GitHub's pull-request-simple).

    A row has no mergeable state, merged flag or file count: those are read with get_pr.
    """
    return replace(
        pr,
        behind=False,
        behind_by=0,
        changed_files=None,
        mergeable_state="unknown",
        merged=pr.merged_at is not None,
    )


def _fake_sha(text: str) -> str:
    """Return a stable 40-hex object id for a commit the fake writes."""
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _not_found(what: str) -> ForgeCliError:
    return ForgeCliError(
        f"gh api failed with HTTP 404: Not Found ({what})", status=404, kind="not-found"
    )


class _FakeWire:
    """ForgeWire over a FakeForge's dictionaries; each method counts one call."""

    def __init__(self, fake: FakeForge) -> None:
        self._f = fake

    def _call(self, name: str) -> _State:
        self._f.calls[name] += 1
        return self._f._state

    def get_authenticated_user(self) -> str:
        with self._f._lock:
            self._call("get_authenticated_user")
            return self._f.user

    def get_ref_sha(self, repo: str, ref: str) -> str | None:
        with self._f._lock:
            state = self._call("get_ref_sha")
            if ref.startswith("heads/"):
                return state.branches.get((repo, ref[len("heads/") :]))
            match = re.fullmatch(r"pull/(\d+)/head", ref)
            if match:
                pr = state.prs.get((repo, int(match.group(1))))
                return pr.head_sha if pr else None
            return None

    def get_default_branch(self, repo: str) -> str:
        with self._f._lock:
            state = self._call("get_default_branch")
            if repo not in state.default_branch:
                raise _not_found(repo)
            return state.default_branch[repo]

    def create_ref(self, repo: str, branch: str, sha: str) -> str:
        with self._f._lock:
            state = self._call("create_ref")
            if (repo, branch) in state.branches:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: Reference already exists", status=422, kind="http"
                )
            state.branches[(repo, branch)] = sha
            state.default_branch.setdefault(repo, branch)
            self._f.effects["create_ref"] += 1
            return sha

    def delete_ref(self, repo: str, branch: str) -> None:
        with self._f._lock:
            state = self._call("delete_ref")
            if state.branches.pop((repo, branch), None) is None:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: Reference does not exist", status=422, kind="http"
                )
            self._f.effects["delete_ref"] += 1

    def find_open_pr(self, repo: str, head: str, base: str) -> PullRequest | None:
        with self._f._lock:
            state = self._call("find_open_pr")
            owner, _, branch = head.partition(":")
            for (r, _n), pr in sorted(state.prs.items()):
                head_owner = (pr.head_repo or "").split("/", 1)[0]
                if (
                    r == repo
                    and pr.state == "open"
                    and pr.head_ref == branch
                    and head_owner == owner
                    and pr.base_ref == base
                ):
                    return _list_row(pr)
            return None

    def create_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        with self._f._lock:
            state = self._call("create_pr")
            owner, sep, branch = head.partition(":")
            head_repo = f"{owner}/{repo.split('/', 1)[1]}" if sep else repo
            branch = branch if sep else head
            head_sha = state.branches.get((head_repo, branch))
            if head_sha is None or (repo, base) not in state.branches:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: Validation Failed", status=422, kind="http"
                )
            number = max((n for (r, n) in state.prs if r == repo), default=0) + 1
            pr = PullRequest(
                number=number,
                state="open",
                head_sha=head_sha,
                head_ref=branch,
                head_repo=head_repo,
                base_ref=base,
                base_sha=state.branches[(repo, base)],
                title=title,
                body=body,
                author=self._f.user,
            )
            self._f.effects["create_pr"] += 1
            return self._f.add_pr(repo, pr)

    def get_pr(self, repo: str, number: int) -> PullRequest:
        with self._f._lock:
            state = self._call("get_pr")
            pr = state.prs.get((repo, number))
            if pr is None:
                raise _not_found(f"{repo}#{number}")
            files = self._f.pr_files.get((repo, number))
            if pr.changed_files is None:
                pr = replace(pr, changed_files=len(files or ()))
            return replace(pr, behind=False, behind_by=0)

    def compare_ancestry(self, repo: str, base: str, head: str) -> Ancestry | None:
        with self._f._lock:
            self._call("compare_ancestry")
            if self._f.read_faults.compare_ancestry:
                self._f.read_faults.compare_ancestry = False
                raise ForgeCliError(
                    "gh api failed with HTTP 502: fake compare fault", status=502, kind="server"
                )
            base_sha, head_sha = self._f._resolve(repo, base), self._f._resolve(repo, head)
            if base_sha is None or head_sha is None:
                return None
            base_anc, head_anc = self._f._ancestors(base_sha), self._f._ancestors(head_sha)
            ahead = len(head_anc.keys() - base_anc.keys())
            behind = len(base_anc.keys() - head_anc.keys())
            common = [s for s in head_anc if s in base_anc]
            merge_base = min(common, key=lambda s: head_anc[s]) if common else None
            if base_sha == head_sha:
                status = "identical"
            elif behind == 0:
                status = "ahead"
            elif ahead == 0:
                status = "behind"
            else:
                status = "diverged"
            return Ancestry(
                status=status, ahead_by=ahead, behind_by=behind, merge_base_sha=merge_base
            )

    def compare_files(self, repo: str, base: str, head: str) -> CompareFiles:
        with self._f._lock:
            state = self._call("compare_files")
            result = state.compares.get((repo, base, head))
            if result is None:
                raise _not_found(f"{base}...{head}")
            if len(result.files) >= COMPARE_FILES_CAP and not result.truncated:
                result = replace(result, truncated=True)
            return result

    def get_commit_parents(self, repo: str, sha: str) -> tuple[str, ...] | None:
        with self._f._lock:
            self._call("get_commit_parents")
            commit = self._f.commits.get(sha)
            return None if commit is None else commit.parents

    def list_pr_files(self, repo: str, number: int, page: int) -> Page[FileEntry]:
        with self._f._lock:
            self._call("list_pr_files")
            items, nxt = _paged(self._f.pr_files.get((repo, number), []), page)
            return Page(items=items, next_page=nxt)

    def list_pr_commits(self, repo: str, number: int, page: int) -> Page[str]:
        with self._f._lock:
            state = self._call("list_pr_commits")
            shas = state.pr_commits.get((repo, number), [])
            items, nxt = _paged(shas[:250], page)
            return Page(items=items, next_page=nxt)

    def list_pr_commit_messages(self, repo: str, number: int, page: int) -> Page[PrCommit]:
        with self._f._lock:
            state = self._call("list_pr_commit_messages")
            rows = []
            for sha in state.pr_commits.get((repo, number), [])[:250]:
                commit = self._f.commits.get(sha, FakeCommit())
                subject, _, body = commit.message.partition("\n")
                rows.append(
                    PrCommit(
                        sha=sha,
                        subject=subject,
                        body=body.strip("\n"),
                        author_name=commit.author_name,
                        author_email=commit.author_email,
                        author_login=commit.author_login,
                        parents=commit.parents,
                    )
                )
            items, nxt = _paged(rows, page)
            return Page(items=items, next_page=nxt)

    def list_labelled_prs(self, repo: str, label: str, state: str, page: int) -> Page[LabelledPr]:
        with self._f._lock:
            st = self._call("list_labelled_prs")
            rows = [
                LabelledPr(number=n, state=pr.state)
                for (r, n), pr in sorted(st.prs.items())
                if r == repo
                and state in ("all", pr.state)
                and label.casefold() in {x.casefold() for x in st.labels.get((r, n), [])}
            ]
            items, nxt = _paged(rows, page)
            return Page(items=items, next_page=nxt)

    def list_issue_labels(self, repo: str, number: int) -> tuple[str, ...]:
        with self._f._lock:
            state = self._call("list_issue_labels")
            if (repo, number) not in state.prs:
                raise _not_found(f"{repo}#{number}")
            return tuple(state.labels.get((repo, number), []))

    def remove_issue_label(self, repo: str, number: int, label: str) -> bool:
        with self._f._lock:
            state = self._call("remove_issue_label")
            labels = state.labels.get((repo, number), [])
            kept = [x for x in labels if x.casefold() != label.casefold()]
            if len(kept) == len(labels):
                return False
            state.labels[(repo, number)] = kept
            self._f.effects["remove_label"] += 1
            return True

    def list_issue_comments(self, repo: str, number: int, page: int) -> Page[IssueComment]:
        with self._f._lock:
            self._call("list_issue_comments")
            items, nxt = _paged(self._f.comments(repo, number), page)
            return Page(items=items, next_page=nxt)

    def create_issue_comment(self, repo: str, number: int, body: str) -> int:
        with self._f._lock:
            state = self._call("create_issue_comment")
            if (repo, number) not in state.prs:
                raise _not_found(f"{repo}#{number}")
            self._f.effects["create_issue_comment"] += 1
            return self._f.add_comment(repo, number, author=self._f.user, body=body)

    def list_review_comments(
        self, repo: str, number: int, after: str | None
    ) -> Page[ReviewComment]:
        with self._f._lock:
            self._call("list_review_comments")
            page = int(after) if after else 1
            items, nxt = _paged(self._f.review_comments.get((repo, number), []), page)
            return Page(items=items, next_cursor=str(nxt) if nxt else None)

    def list_force_pushes(self, repo: str, number: int) -> Page[ForcePush]:
        with self._f._lock:
            self._call("list_force_pushes")
            pushes = self._f.force_pushes.get((repo, number), [])
            more = "more" if len(pushes) > FORCE_PUSHES_CAP else None
            return Page(items=tuple(pushes[:FORCE_PUSHES_CAP]), next_cursor=more)

    def list_open_prs(
        self, repo: str, page: int, etag: str | None
    ) -> Page[PullRequest] | NotModified:
        with self._f._lock:
            state = self._call("list_open_prs")
            rows = [
                _list_row(pr)
                for (r, _n), pr in sorted(state.prs.items(), reverse=True)
                if r == repo and pr.state == "open"
            ]
            items, nxt = _paged(rows, page)
            # Like the forge, the ETag ignores the lazily computed mergeable state.
            digest = hashlib.sha256(
                repr([(p.number, p.head_sha, p.title, p.body, p.draft) for p in items]).encode()
            ).hexdigest()[:32]
            current = f'W/"{digest}"'
            if etag is not None and etag == current:
                self._f.not_modified += 1
                return NotModified()
            return Page(items=items, next_page=nxt, etag=current)

    def list_commits(self, repo: str, since: str, page: int) -> Page[Commit]:
        with self._f._lock:
            state = self._call("list_commits")
            branch = state.default_branch.get(repo)
            tip = state.branches.get((repo, branch)) if branch else None
            if tip is None:
                raise _not_found(f"{repo} default branch")
            ancestry = self._f._ancestors(tip)
            known = [s for s in ancestry if s in self._f.commits]
            known.sort(key=lambda s: (self._f.commits[s].date, -ancestry[s]), reverse=True)
            rows = [
                Commit(sha=s, message=self._f.commits[s].message)
                for s in known
                if self._f.commits[s].date >= since
            ]
            items, nxt = _paged(rows, page)
            return Page(items=items, next_page=nxt)

    def create_check_run(self, repo: str, request: CheckRunRequest) -> CheckRun:
        with self._f._lock:
            state = self._call("create_check_run")
            run = CheckRun(
                id=next(self._f._ids),
                name=request.name,
                status="completed",
                conclusion=request.conclusion,
                app_id=self._f.app_id,
                head_sha=request.head_sha,
                completed_at="2024-01-01T00:00:00Z",
                external_id=request.external_id,
            )
            state.runs.setdefault(request.head_sha, []).append(run)
            self._f.created_check_runs.append(
                CreatedCheckRun(id=run.id, repo=repo, request=request, app_id=self._f.app_id)
            )
            self._f.effects["create_check_run"] += 1
            return run

    def list_check_runs(self, repo: str, sha: str, page: int, *, latest: bool) -> Page[CheckRun]:
        with self._f._lock:
            state = self._call("list_check_runs")
            runs = list(state.runs.get(sha, []))
            if latest:
                newest: dict[tuple[str, int | None], CheckRun] = {}
                for run in runs:
                    key = (run.name, run.app_id)
                    if key not in newest or run.id > newest[key].id:
                        newest[key] = run
                runs = list(newest.values())
            items, nxt = _paged(runs, page)
            return Page(items=items, next_page=nxt)

    def list_commit_statuses(self, repo: str, sha: str, page: int) -> Page[CommitStatus]:
        with self._f._lock:
            state = self._call("list_commit_statuses")
            # Like the forge's combined status: the latest status per context.
            latest: dict[str, CommitStatus] = {}
            for status in state.statuses.get(sha, []):
                latest.pop(status.context, None)
                latest[status.context] = status
            items, nxt = _paged(list(reversed(latest.values())), page)
            return Page(items=items, next_page=nxt)

    def get_branch_rules(self, repo: str, branch: str, page: int) -> Page[RequiredChecks]:
        with self._f._lock:
            state = self._call("get_branch_rules")
            rules = state.rulesets.get((repo, branch))
            items = (rules,) if rules is not None and page == 1 else ()
            return Page(items=items)

    def get_classic_protection(self, repo: str, branch: str) -> ClassicProtection | None:
        with self._f._lock:
            state = self._call("get_classic_protection")
            if repo in self._f.hidden_protection:
                raise protection_hidden(repo, branch)  # the forge's answer to a non-admin
            checks = state.classic.get((repo, branch), 404)
            reviews = state.classic_reviews.get((repo, branch), 404)
            for answer in (checks, reviews):
                if answer == 403:  # the forge's free-plan answer, as the wire classifies it
                    raise ForgeCliError(
                        "gh api failed with HTTP 403: Upgrade to GitHub Pro or make this "
                        "repository public to enable this feature.",
                        status=403,
                        kind="free-plan",
                    )
                if isinstance(answer, int) and answer != 404:
                    raise ForgeCliError(
                        f"gh api failed with HTTP {answer}",
                        status=answer,
                        kind=failure_of_status(answer),
                    )
            if isinstance(checks, int) and isinstance(reviews, int):
                return None  # 404 `Branch not protected`
            return ClassicProtection(
                checks=checks if not isinstance(checks, int) else RequiredChecks(),
                # Like the forge: protection without a review rule still answers.
                reviews=reviews if not isinstance(reviews, int) else ReviewRules(source="classic"),
            )

    def get_pull_reviews(
        self, repo: str, number: int, head_sha: str, after: str | None
    ) -> tuple[ReviewState, str | None]:
        with self._f._lock:
            state = self._call("get_pull_reviews")
            if self._f.read_faults.reviews:
                self._f.read_faults.reviews = False
                raise ForgeCliError(
                    "gh api failed with HTTP 502: fake reviews fault", status=502, kind="server"
                )
            pr = state.prs.get((repo, number))
            if pr is None:
                raise ForgeCliError(
                    f"GraphQL error: Could not resolve to a PullRequest with the number of "
                    f"{number}.",
                    status=200,
                    kind="http",
                )
            page = int(after) if after else 1
            items, nxt = _paged(self._f.reviews.get((repo, number), []), page)
            requests = tuple(self._f.review_requests.get((repo, number), []))
            if len(requests) > _PAGE:
                raise ForgeCliError("forge answered reviews the wire cannot read", kind="malformed")
            result = ReviewState(
                head_sha=pr.head_sha,
                reviews=items,
                requests=requests,
                decision=self._f.review_decisions.get((repo, number)),
                pushers=self._f.commit_users.get(head_sha, ()),
                unlinked_pusher=head_sha in self._f.unlinked_commits
                or head_sha not in self._f.commit_users,
            )
            return result, str(nxt) if nxt else None

    def merge_pr(
        self, repo: str, number: int, *, sha: str, method: str, subject: str, body: str
    ) -> str:
        with self._f._lock:
            state = self._call("merge_pr")
            pr = state.prs.get((repo, number))
            if pr is None:
                raise _not_found(f"{repo}#{number}")
            not_mergeable = ForgeCliError(
                "gh api failed with HTTP 405: Pull Request is not mergeable",
                status=405,
                kind="http",
            )
            if pr.state != "open" or pr.merged:
                raise not_mergeable
            if pr.head_sha != sha:
                raise ForgeCliError(
                    "gh api failed with HTTP 409: Head branch was modified. Review and try the "
                    "merge again.",
                    status=409,
                    kind="http",
                )
            if pr.draft or pr.mergeable_state == "dirty":
                raise not_mergeable
            base_tip = state.branches.get((repo, pr.base_ref)) or pr.base_sha or ""
            parents = (base_tip, pr.head_sha) if method == "merge" else (base_tip,)
            message = subject if method == "rebase" else f"{subject}\n\n{body}".rstrip()
            merged_sha = _fake_sha(f"{method}:{repo}#{number}:{sha}")
            self._f.add_commit(merged_sha, parents=parents, message=message)
            state.branches[(repo, pr.base_ref)] = merged_sha
            state.prs[(repo, number)] = replace(
                pr,
                state="closed",
                merged=True,
                merge_sha=merged_sha,
                merged_at="2024-01-03T00:00:00Z",
            )
            self._f.effects["merge_pr"] += 1
            return merged_sha

    def update_branch(self, repo: str, number: int, *, expected_head_sha: str) -> None:
        with self._f._lock:
            state = self._call("update_branch")
            pr = state.prs.get((repo, number))
            if pr is None:
                raise _not_found(f"{repo}#{number}")
            if pr.head_sha != expected_head_sha:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: expected head sha didn't match current head ref.",
                    status=422,
                    kind="http",
                )
            if pr.state != "open" or pr.mergeable_state == "dirty":
                raise ForgeCliError(
                    "gh api failed with HTTP 422: merge conflict between base and head",
                    status=422,
                    kind="http",
                )
            base_tip = state.branches.get((repo, pr.base_ref)) or pr.base_sha or ""
            new_head = _fake_sha(f"update:{repo}#{number}:{pr.head_sha}")
            self._f.add_commit(
                new_head,
                parents=(pr.head_sha, base_tip),
                message=f"Merge branch '{pr.base_ref}' into {pr.head_ref}",
            )
            if pr.head_repo == repo:
                state.branches[(repo, pr.head_ref)] = new_head
            state.prs[(repo, number)] = replace(pr, head_sha=new_head, base_sha=base_tip)
            self._f.effects["update_branch"] += 1


def fake_forge(*, app_id: int = FAKE_APP_ID, user: str = "forge-bot") -> FakeForge:
    """Return an empty in-memory forge whose `wire` records created check runs under `app_id`."""
    return FakeForge(app_id=app_id, user=user)
