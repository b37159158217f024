"""The fake forge's wire: each ForgeWire method over a FakeForge's dictionaries, counted.

GitHub's behaviour the port and the flows rely on is kept: 404s, the two protection 404s, list
rows without mergeable state. The writes are `FakeWrites` (`_fake_writes`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from . import _types as t
from ._constants import COMPARE_FILES_CAP, FORCE_PUSHES_CAP
from ._errors import ForgeCliError, failure_of_status
from ._fake_state import FakeCommit, not_found
from ._fake_writes import FakeWrites
from ._github.protection import protection_hidden

__all__ = ["FakeWire"]

_PAGE = 100
T = TypeVar("T")


def _paged(items: Sequence[T], page: int) -> tuple[tuple[T, ...], int | None]:
    start = (page - 1) * _PAGE
    chunk = tuple(items[start : start + _PAGE])
    return chunk, page + 1 if start + _PAGE < len(items) else None


def _list_row(pr: t.PullRequest) -> t.PullRequest:
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


class FakeWire(FakeWrites):
    """ForgeWire over a FakeForge's dictionaries; each method counts one call."""

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
                raise not_found(repo)
            return state.default_branch[repo]

    def find_open_pr(self, repo: str, head: str, base: str) -> t.PullRequest | None:
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

    def get_pr(self, repo: str, number: int) -> t.PullRequest:
        with self._f._lock:
            state = self._call("get_pr")
            pr = state.prs.get((repo, number))
            if pr is None:
                raise not_found(f"{repo}#{number}")
            files = self._f.pr_files.get((repo, number))
            if pr.changed_files is None:
                pr = replace(pr, changed_files=len(files or ()))
            return replace(pr, behind=False, behind_by=0)

    def compare_ancestry(self, repo: str, base: str, head: str) -> t.Ancestry | None:
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
            status: t.CompareStatus
            if base_sha == head_sha:
                status = "identical"
            elif behind == 0:
                status = "ahead"
            elif ahead == 0:
                status = "behind"
            else:
                status = "diverged"
            return t.Ancestry(
                status=status, ahead_by=ahead, behind_by=behind, merge_base_sha=merge_base
            )

    def compare_files(self, repo: str, base: str, head: str) -> t.CompareFiles:
        with self._f._lock:
            state = self._call("compare_files")
            result = state.compares.get((repo, base, head))
            if result is None:
                raise not_found(f"{base}...{head}")
            if len(result.files) >= COMPARE_FILES_CAP and not result.truncated:
                result = replace(result, truncated=True)
            return result

    def get_commit_parents(self, repo: str, sha: str) -> tuple[str, ...] | None:
        with self._f._lock:
            self._call("get_commit_parents")
            commit = self._f.commits.get(sha)
            return None if commit is None else commit.parents

    def list_directory(self, repo: str, path: str, ref: str) -> tuple[str, ...] | None:
        with self._f._lock:
            state = self._call("list_directory")
            prefix = path.rstrip("/") + "/"
            found = sorted(
                p
                for r, p in state.files
                if r == repo and p.startswith(prefix) and "/" not in p.removeprefix(prefix)
            )
            return tuple(found) or None

    def get_text_file(self, repo: str, path: str, ref: str) -> str | None:
        with self._f._lock:
            state = self._call("get_text_file")
            return state.files.get((repo, path))

    def list_pr_files(self, repo: str, number: int, page: int) -> t.Page[t.FileEntry]:
        with self._f._lock:
            self._call("list_pr_files")
            items, nxt = _paged(self._f.pr_files.get((repo, number), []), page)
            return t.Page(items=items, next_page=nxt)

    def list_pr_commits(self, repo: str, number: int, page: int) -> t.Page[str]:
        with self._f._lock:
            state = self._call("list_pr_commits")
            shas = state.pr_commits.get((repo, number), [])
            items, nxt = _paged(shas[:250], page)
            return t.Page(items=items, next_page=nxt)

    def list_pr_commit_messages(self, repo: str, number: int, page: int) -> t.Page[t.PrCommit]:
        with self._f._lock:
            state = self._call("list_pr_commit_messages")
            rows = []
            for sha in state.pr_commits.get((repo, number), [])[:250]:
                commit = self._f.commits.get(sha, FakeCommit())
                subject, _, body = commit.message.partition("\n")
                rows.append(
                    t.PrCommit(
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
            return t.Page(items=items, next_page=nxt)

    def list_labelled_prs(
        self, repo: str, label: str, state: str, page: int
    ) -> t.Page[t.LabelledPr]:
        with self._f._lock:
            st = self._call("list_labelled_prs")
            rows = [
                t.LabelledPr(number=n, state=pr.state)
                for (r, n), pr in sorted(st.prs.items())
                if r == repo
                and state in ("all", pr.state)
                and label.casefold() in {x.casefold() for x in st.labels.get((r, n), [])}
            ]
            items, nxt = _paged(rows, page)
            return t.Page(items=items, next_page=nxt)

    def list_issue_labels(self, repo: str, number: int) -> tuple[str, ...]:
        with self._f._lock:
            state = self._call("list_issue_labels")
            if (repo, number) not in state.prs:
                raise not_found(f"{repo}#{number}")
            return tuple(state.labels.get((repo, number), []))

    def list_issue_comments(self, repo: str, number: int, page: int) -> t.Page[t.IssueComment]:
        with self._f._lock:
            self._call("list_issue_comments")
            items, nxt = _paged(self._f.comments(repo, number), page)
            return t.Page(items=items, next_page=nxt)

    def list_labelled_issues(self, repo: str, label: str, page: int) -> t.Page[t.LabelledIssue]:
        with self._f._lock:
            state = self._call("list_labelled_issues")
            rows = [
                issue
                for (r, n), issue in sorted(state.issues.items())
                if r == repo
                and label.casefold() in {x.casefold() for x in state.labels.get((r, n), [])}
            ]
            items, nxt = _paged(rows, page)
            return t.Page(items=items, next_page=nxt)

    def list_review_comments(
        self, repo: str, number: int, after: str | None
    ) -> t.Page[t.ReviewComment]:
        with self._f._lock:
            self._call("list_review_comments")
            page = int(after) if after else 1
            items, nxt = _paged(self._f.review_comments.get((repo, number), []), page)
            return t.Page(items=items, next_cursor=str(nxt) if nxt else None)

    def list_force_pushes(self, repo: str, number: int) -> t.Page[t.ForcePush]:
        with self._f._lock:
            self._call("list_force_pushes")
            pushes = self._f.force_pushes.get((repo, number), [])
            more = "more" if len(pushes) > FORCE_PUSHES_CAP else None
            return t.Page(items=tuple(pushes[:FORCE_PUSHES_CAP]), next_cursor=more)

    def list_open_prs(
        self, repo: str, page: int, etag: str | None
    ) -> t.Page[t.PullRequest] | t.NotModified:
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
                return t.NotModified()
            return t.Page(items=items, next_page=nxt, etag=current)

    def list_commits(self, repo: str, since: str, page: int) -> t.Page[t.Commit]:
        with self._f._lock:
            state = self._call("list_commits")
            branch = state.default_branch.get(repo)
            tip = state.branches.get((repo, branch)) if branch else None
            if tip is None:
                raise not_found(f"{repo} default branch")
            ancestry = self._f._ancestors(tip)
            known = [s for s in ancestry if s in self._f.commits]
            known.sort(key=lambda s: (self._f.commits[s].date, -ancestry[s]), reverse=True)
            rows = [
                t.Commit(sha=s, message=self._f.commits[s].message)
                for s in known
                if self._f.commits[s].date >= since
            ]
            items, nxt = _paged(rows, page)
            return t.Page(items=items, next_page=nxt)

    def list_check_runs(
        self, repo: str, sha: str, page: int, *, latest: bool
    ) -> t.Page[t.CheckRun]:
        with self._f._lock:
            state = self._call("list_check_runs")
            runs = list(state.runs.get(sha, []))
            if latest:
                newest: dict[tuple[str, int | None], t.CheckRun] = {}
                for run in runs:
                    key = (run.name, run.app_id)
                    if key not in newest or run.id > newest[key].id:
                        newest[key] = run
                runs = list(newest.values())
            items, nxt = _paged(runs, page)
            return t.Page(items=items, next_page=nxt)

    def list_commit_statuses(self, repo: str, sha: str, page: int) -> t.Page[t.CommitStatus]:
        with self._f._lock:
            state = self._call("list_commit_statuses")
            # Like the forge's combined status: the latest status per context.
            latest: dict[str, t.CommitStatus] = {}
            for status in state.statuses.get(sha, []):
                latest.pop(status.context, None)
                latest[status.context] = status
            items, nxt = _paged(list(reversed(latest.values())), page)
            return t.Page(items=items, next_page=nxt)

    def get_branch_rules(self, repo: str, branch: str, page: int) -> t.Page[t.RequiredChecks]:
        with self._f._lock:
            state = self._call("get_branch_rules")
            rules = state.rulesets.get((repo, branch))
            items = (rules,) if rules is not None and page == 1 else ()
            return t.Page(items=items)

    def get_classic_protection(self, repo: str, branch: str) -> t.ClassicProtection | None:
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
            return t.ClassicProtection(
                checks=checks if not isinstance(checks, int) else t.RequiredChecks(),
                # Like the forge: protection without a review rule still answers.
                reviews=reviews
                if not isinstance(reviews, int)
                else t.ReviewRules(source="classic"),
            )

    def get_pull_reviews(
        self, repo: str, number: int, head_sha: str, after: str | None
    ) -> tuple[t.ReviewState, str | None]:
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
            result = t.ReviewState(
                head_sha=pr.head_sha,
                reviews=items,
                requests=requests,
                decision=self._f.review_decisions.get((repo, number)),
                pushers=self._f.commit_users.get(head_sha, ()),
                unlinked_pusher=head_sha in self._f.unlinked_commits
                or head_sha not in self._f.commit_users,
            )
            return result, str(nxt) if nxt else None
