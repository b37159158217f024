"""The port's reads: validate every argument, read every page (bounded), refuse a short list.

`ForgePort` (`_port`) adds the writes on top of these reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from ._constants import FORCE_PUSHES_CAP, PR_COMMITS_CAP, PR_FILES_CAP
from ._errors import (
    FileListTruncatedError,
    ForcePushesTruncated,
    ForgeCliError,
    ForgeConflictError,
    ForgeInputError,
)
from ._github.failures import page_cap
from ._types import (
    AncestryStatus,
    CheckRun,
    ClassicProtection,
    Commit,
    CommitStatus,
    CompareFiles,
    FileEntry,
    ForcePush,
    LabelledPr,
    NotModified,
    OpenPrsList,
    Page,
    PrCommit,
    PullRequest,
    RequiredChecks,
    Review,
    ReviewComment,
    ReviewState,
    ReviewThread,
)
from ._validate import (
    validate_branch,
    validate_etag,
    validate_label,
    validate_number,
    validate_ref,
    validate_repo,
    validate_sha,
    validate_since,
)
from ._verdict import merge_required_checks
from ._wire import ForgeWire

__all__ = ["PortReads", "all_pages"]

T = TypeVar("T")

# Bounds on every listing loop, so a forge that keeps answering "next" cannot spin forever.
_MAX_PAGES = 1000
_ISSUE_STATES = frozenset({"open", "closed", "all"})


def all_pages(fetch: Callable[[int], Page[T]], *, limit: int = _MAX_PAGES) -> list[T]:
    items: list[T] = []
    page: int | None = 1
    for _ in range(limit):
        if page is None:
            return items
        result = fetch(page)
        items.extend(result.items)
        page = result.next_page
    if page is not None:
        raise page_cap("listing", limit)
    return items


def _head_ref(ref: str) -> str:
    # git/ref wants `heads/x`, `tags/x` or `pull/N/head`; a bare name is a branch.
    if ref.startswith("refs/"):
        return ref[len("refs/") :]
    if ref.startswith(("heads/", "tags/", "pull/")):
        return ref
    return f"heads/{ref}"


class PortReads:
    """The port's reads over one ForgeWire; `ForgePort` adds the writes."""

    def __init__(self, wire: ForgeWire) -> None:
        self._wire = wire
        self._user: str | None = None
        self._user_lock = threading.Lock()

    @property
    def wire(self) -> ForgeWire:
        """Return the wire this port calls."""
        return self._wire

    # -- reads ------------------------------------------------------------------------------------

    def get_authenticated_user(self) -> str:
        """Return the CLI's login, looked up once per port."""
        with self._user_lock:
            if self._user is None:
                self._user = self._wire.get_authenticated_user()
            return self._user

    def get_head_sha(self, repo: str, ref: str) -> str | None:
        """Return the sha `ref` points at, or None when the ref is missing."""
        validate_repo(repo)
        validate_ref(ref, "ref")
        return self._wire.get_ref_sha(repo, _head_ref(ref))

    def get_pr(self, repo: str, number: int) -> PullRequest:
        """Return the PR with `behind` computed against its base branch."""
        validate_repo(repo)
        validate_number(number)
        pr = self._wire.get_pr(repo, number)
        if pr.state != "open" or pr.merged:
            return pr
        ancestry = self._wire.compare_ancestry(repo, pr.base_ref, pr.head_sha)
        if ancestry is None:
            raise ForgeCliError(
                f"cannot tell whether #{number} is behind its base", status=404, kind="not-found"
            )
        return _replace_pr(pr, behind=ancestry.behind_by > 0, behind_by=ancestry.behind_by)

    def required_checks(self, repo: str, branch: str) -> RequiredChecks:
        """Return the required status checks of the branch's active rulesets."""
        validate_repo(repo)
        validate_branch(branch)
        rules = all_pages(lambda page: self._wire.get_branch_rules(repo, branch, page))
        return merge_required_checks(rules)

    def classic_protection(self, repo: str, branch: str) -> ClassicProtection | None:
        """Return the branch's classic protection, or None when GitHub says it has none.

        GitHub's 404 `Not Found` (its answer to callers without admin rights) raises
        ProtectionHidden, never None; the free-plan 403 raises ForgeCliError kind `free-plan`.
        """
        validate_repo(repo)
        validate_branch(branch)
        return self._wire.get_classic_protection(repo, branch)

    def review_state(self, repo: str, number: int, head_sha: str) -> ReviewState:
        """Return the PR's reviews, review threads and pending requests, read at `head_sha`.

        Every page of reviews and of review threads (and of each thread's comments) is read;
        `rules` is left empty (see `_rules.load_review_state`). A PR whose head is no longer
        `head_sha` raises ForgeConflictError: reviews read at another head decide nothing.
        """
        validate_repo(repo)
        validate_number(number)
        validate_sha(head_sha, "head_sha")
        first: ReviewState | None = None
        reviews: list[Review] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page, cursor = self._wire.get_pull_reviews(repo, number, head_sha, cursor)
            if page.head_sha != head_sha:
                raise ForgeConflictError(
                    f"#{number}: the head is {page.head_sha[:12]}, not {head_sha[:12]}; "
                    "its reviews were not judged"
                )
            first = first or page
            reviews.extend(page.reviews)
            if cursor is None:
                break
        if cursor is not None or first is None:
            raise page_cap("reviews", _MAX_PAGES)
        threads = _threads_of(self.list_review_comments(repo, number))
        return replace(first, reviews=tuple(reviews), threads=threads)

    def check_runs(self, repo: str, sha: str) -> tuple[CheckRun, ...]:
        """Return every check run for `sha`, superseded runs included."""
        validate_repo(repo)
        validate_sha(sha)
        return tuple(
            all_pages(lambda page: self._wire.list_check_runs(repo, sha, page, latest=False))
        )

    def latest_check_runs(self, repo: str, sha: str) -> tuple[CheckRun, ...]:
        """Return the latest check run per name for `sha`."""
        validate_repo(repo)
        validate_sha(sha)
        return tuple(
            all_pages(lambda page: self._wire.list_check_runs(repo, sha, page, latest=True))
        )

    def commit_statuses(self, repo: str, sha: str) -> tuple[CommitStatus, ...]:
        """Return the latest commit status per context for `sha`."""
        validate_repo(repo)
        validate_sha(sha)
        return tuple(all_pages(lambda page: self._wire.list_commit_statuses(repo, sha, page)))

    def list_pr_files(self, repo: str, number: int) -> tuple[FileEntry, ...]:
        """Return every file of the PR; raise FileListTruncatedError when the forge cut it short."""
        validate_repo(repo)
        validate_number(number)
        pr = self._wire.get_pr(repo, number)
        limit = PR_FILES_CAP // 100 + 1
        files = all_pages(lambda page: self._wire.list_pr_files(repo, number, page), limit=limit)
        expected = pr.changed_files
        if expected is None or len(files) < expected:
            raise FileListTruncatedError(
                expected=expected if expected is not None else -1, received=len(files)
            )
        return tuple(files)

    def list_pr_commits(self, repo: str, number: int) -> tuple[str, ...]:
        """Return the PR's commit shas oldest first (the forge lists at most PR_COMMITS_CAP)."""
        validate_repo(repo)
        validate_number(number)
        limit = PR_COMMITS_CAP // 100 + 1
        shas = all_pages(lambda page: self._wire.list_pr_commits(repo, number, page), limit=limit)
        return tuple(shas)

    def list_pr_commit_messages(self, repo: str, number: int) -> tuple[PrCommit, ...]:
        """Return the PR's commits with subject, body, author and parents, oldest first.

        Like `list_pr_commits`, the forge lists at most PR_COMMITS_CAP.
        """
        validate_repo(repo)
        validate_number(number)
        limit = PR_COMMITS_CAP // 100 + 1
        return tuple(
            all_pages(
                lambda page: self._wire.list_pr_commit_messages(repo, number, page), limit=limit
            )
        )

    def list_labelled_prs(
        self, repo: str, label: str, *, state: str = "open"
    ) -> tuple[LabelledPr, ...]:
        """Return the PRs carrying `label` (open, closed or all), oldest first; issues left out."""
        validate_repo(repo)
        validate_label(label)
        if state not in _ISSUE_STATES:
            raise ForgeInputError("state", "must be open, closed or all")
        rows = all_pages(lambda page: self._wire.list_labelled_prs(repo, label, state, page))
        return tuple(sorted(rows, key=lambda r: (r.created_at or "", r.number)))

    def compare_files(self, repo: str, base: str, head: str) -> CompareFiles:
        """Return the files changed from the merge base to `head`, with `truncated`."""
        validate_repo(repo)
        validate_ref(base, "base")
        validate_ref(head, "head")
        return self._wire.compare_files(repo, base, head)

    def workflow_files(self, repo: str, ref: str) -> tuple[str, ...]:
        """Return the paths of the Actions workflow files (`.github/workflows/*.yml|yaml`) at `ref`.

        A repository without that directory has none; a failed read raises ForgeCliError.
        """
        validate_repo(repo)
        validate_ref(ref, "ref")
        paths = self._wire.list_directory(repo, ".github/workflows", ref) or ()
        return tuple(p for p in paths if p.endswith((".yml", ".yaml")))

    def text_file(self, repo: str, path: str, ref: str) -> str | None:
        """Return the UTF-8 text of file `path` at `ref`, None when there is no such file."""
        validate_repo(repo)
        validate_ref(ref, "ref")
        return self._wire.get_text_file(repo, path, ref)

    def commit_parents(self, repo: str, sha: str) -> tuple[str, ...] | None:
        """Return the parents of commit `sha` (two for a merge), None when the forge has none."""
        validate_repo(repo)
        validate_sha(sha)
        return self._wire.get_commit_parents(repo, sha)

    def compare_ancestry(self, repo: str, base: str, head: str) -> AncestryStatus:
        """Return ahead, behind, identical, diverged, or missing when the forge answers 404."""
        validate_repo(repo)
        validate_ref(base, "base")
        validate_ref(head, "head")
        ancestry = self._wire.compare_ancestry(repo, base, head)
        if ancestry is None:
            return "missing"
        return ancestry.status  # the parser read one of CompareStatus's values

    def list_review_comments(self, repo: str, number: int) -> tuple[ReviewComment, ...]:
        """Return every inline review comment with its thread's resolved state."""
        validate_repo(repo)
        validate_number(number)
        comments: list[ReviewComment] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = self._wire.list_review_comments(repo, number, cursor)
            comments.extend(page.items)
            cursor = page.next_cursor
            if cursor is None:
                return tuple(comments)
        raise page_cap("review threads", _MAX_PAGES)

    def list_force_pushes(self, repo: str, number: int) -> tuple[ForcePush, ...]:
        """Return the PR's force-pushes oldest first; raise ForcePushesTruncated past the cap."""
        validate_repo(repo)
        validate_number(number)
        page = self._wire.list_force_pushes(repo, number)
        if page.next_cursor is not None or len(page.items) > FORCE_PUSHES_CAP:
            raise ForcePushesTruncated(f"more than {FORCE_PUSHES_CAP} force-pushes on #{number}")
        return page.items

    def list_open_prs(self, repo: str) -> tuple[PullRequest, ...]:
        """Return every open PR (rows carry `behind` False: call get_pr before deciding)."""
        validate_repo(repo)
        return tuple(all_pages(lambda page: _fresh(self._wire.list_open_prs(repo, page, None))))

    def revalidate_open_prs(self, repo: str, etag: str | None) -> OpenPrsList | NotModified:
        """Return NotModified on a 304, else every open PR and an ETag (None past one page)."""
        validate_repo(repo)
        validate_etag(etag)
        first = self._wire.list_open_prs(repo, 1, etag)
        if isinstance(first, NotModified):
            return first
        if first.next_page is None:
            return OpenPrsList(prs=first.items, etag=first.etag)
        rest = all_pages(
            lambda page: _fresh(self._wire.list_open_prs(repo, page + 1, None)),
        )
        # An ETag names one page: a multi-page list cannot be revalidated as a whole.
        return OpenPrsList(prs=first.items + tuple(rest), etag=None)

    def list_default_branch_commits(self, repo: str, since: str) -> tuple[Commit, ...]:
        """Return every default-branch commit at or after `since`, newest first."""
        validate_repo(repo)
        validate_since(since)
        return tuple(all_pages(lambda page: self._wire.list_commits(repo, since, page)))


def _fresh(page: Page[PullRequest] | NotModified) -> Page[PullRequest]:
    if isinstance(page, NotModified):
        raise ForgeCliError(
            "forge answered 304 to a request without an ETag", status=304, kind="malformed"
        )
    return page


def _replace_pr(pr: PullRequest, *, behind: bool, behind_by: int) -> PullRequest:
    return replace(pr, behind=behind, behind_by=behind_by)


def _threads_of(comments: tuple[ReviewComment, ...]) -> tuple[ReviewThread, ...]:
    grouped: dict[str, list[ReviewComment]] = {}
    for comment in comments:
        grouped.setdefault(comment.thread_id or f"comment:{comment.id}", []).append(comment)
    return tuple(
        ReviewThread(
            id=key,
            resolved=group[0].resolved,
            path=group[0].path,
            line=group[0].line,
            author=group[0].author,
            comments=len(group),
        )
        for key, group in grouped.items()
    )
