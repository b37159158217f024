"""`GhCliWire`, the ForgeWire over `gh api`: `_github` joined to the `_gh` adapter.

Each method builds its request with `_github.rest` (or a document of `_github.graphql`), makes it
through `_gh` (which hands back status, headers and body) and reads the answer with a `_github`
parser; every failure is mapped once, by `_github.failures`. Nothing GitHub-specific lives here.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from . import _types as t
from ._budget import RateBudget
from ._errors import ForgeCliError
from ._exec import GhExec
from ._gh import GhResponse, gh_call, graphql_args, send
from ._github import checks, pulls, rest, shape, threads
from ._github.failures import graphql_data, parsed
from ._github.graphql import (
    FORCE_PUSH_QUERY,
    REVIEW_STATE_QUERY,
    REVIEW_THREADS_QUERY,
    THREAD_COMMENTS_QUERY,
    VIEWER_QUERY,
)
from ._github.protection import classic_protection_of
from ._github.reviews import review_state_from_graphql

__all__ = ["AppTokenProvider", "GhCliWire"]

AppTokenProvider = Callable[[], str]
T = TypeVar("T")


def _mapped(what: str, response: GhResponse, parse: Callable[[Any], T]) -> T:
    """Return `parse(body)`, or raise ForgeCliError(kind="malformed") naming `what`."""
    return parsed(what, response.json(), parse, status=response.status)


def _viewer_login(data: Any) -> str:
    return shape.as_str(shape.as_obj(data["viewer"])["login"])


def _owner_name(repo: str) -> dict[str, object]:
    owner, name = repo.split("/", 1)
    return {"owner": owner, "name": name}


# A thread with more than one page of comments is read on by its node id, at most this many.
_THREAD_COMMENT_PAGES = 100


class GhCliWire:
    """ForgeWire over `gh api`; see `gh_cli_wire`."""

    def __init__(
        self,
        exec: GhExec,
        app_token: str | AppTokenProvider | None,
        budget: RateBudget,
        timeout: float | None,
        deadline: float | None = None,
    ) -> None:
        self._exec = exec
        self._app_token = app_token
        self._budget = budget
        self._timeout = timeout
        self._deadline = deadline

    def with_deadline(self, deadline: float) -> GhCliWire:
        """Return this wire with every call, retries included, ending by `deadline` (monotonic)."""
        return GhCliWire(self._exec, self._app_token, self._budget, self._timeout, deadline)

    # -- one call -----------------------------------------------------------------------------

    def _send(
        self,
        request: rest.RestRequest,
        *,
        env: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
    ) -> GhResponse:
        return send(
            self._exec,
            request,
            env=env,
            deadline=self._deadline,
            timeout=self._timeout,
            secrets=secrets,
            observe=self._budget.observe,
        )

    def _read(self, what: str, request: rest.RestRequest, parse: Callable[[Any], T]) -> T:
        return _mapped(what, self._send(request), parse)

    def _page(
        self, what: str, request: rest.RestRequest, page: int, parse: Callable[[Any], tuple[T, ...]]
    ) -> t.Page[T]:
        response = self._send(request)
        items = _mapped(what, response, parse)
        return t.Page(items=items, next_page=page + 1 if response.has_next else None)

    def _graphql(self, what: str, query: str, variables: Mapping[str, object]) -> Any:
        document = {
            "query": query,
            "variables": {k: v for k, v in variables.items() if v is not None},
        }
        response = gh_call(
            self._exec,
            graphql_args(),
            input=json.dumps(document).encode(),
            read=True,
            deadline=self._deadline,
            timeout=self._timeout,
            observe=self._budget.observe,
        )
        return graphql_data(what, response.json(), response.status)

    # -- methods --------------------------------------------------------------------------------

    def get_authenticated_user(self) -> str:
        data = self._graphql("the viewer", VIEWER_QUERY, {})
        # `viewer: User!` and `login: String!`: a null or missing one is malformed.
        return parsed("the viewer", data, _viewer_login)

    def get_ref_sha(self, repo: str, ref: str) -> str | None:
        response = self._send(rest.get_ref(repo, ref))
        if response.status == 404:
            return None
        return _mapped("a ref", response, pulls.ref_sha_from_rest)

    def get_default_branch(self, repo: str) -> str:
        request = rest.get_repository(repo)
        return self._read(
            "a repository", request, lambda d: shape.as_str(shape.as_obj(d)["default_branch"])
        )

    def create_ref(self, repo: str, branch: str, sha: str) -> str:
        request = rest.create_ref(repo, branch, sha)
        return self._read("a ref", request, pulls.ref_object_sha)

    def delete_ref(self, repo: str, branch: str) -> None:
        self._send(rest.delete_ref(repo, branch))

    def update_ref(self, repo: str, branch: str, sha: str) -> str:
        request = rest.update_ref(repo, branch, sha)
        return self._read("a ref", request, pulls.ref_object_sha)

    def rerun_job(self, repo: str, job_id: int) -> None:
        self._send(rest.rerun_job(repo, job_id))

    def find_open_pr(self, repo: str, head: str, base: str) -> t.PullRequest | None:
        request = rest.list_pulls(repo, head=head, base=base, per_page=1)

        def parse(data: object) -> t.PullRequest | None:
            rows = pulls.pulls_from_rest(data)
            return rows[0] if rows else None

        return self._read("a pull request list", request, parse)

    def create_pr(self, repo: str, head: str, base: str, title: str, body: str) -> t.PullRequest:
        request = rest.create_pull(repo, head=head, base=base, title=title, body=body)
        return self._read("a pull request", request, pulls.pull_from_rest)

    def get_pr(self, repo: str, number: int) -> t.PullRequest:
        return self._read("a pull request", rest.get_pull(repo, number), pulls.pull_from_rest)

    def compare_ancestry(self, repo: str, base: str, head: str) -> t.Ancestry | None:
        response = self._send(rest.compare(repo, base, head, one=True))
        if response.status == 404:
            return None
        return _mapped("a comparison", response, pulls.ancestry_from_rest)

    def compare_files(self, repo: str, base: str, head: str) -> t.CompareFiles:
        request = rest.compare(repo, base, head, one=False)
        return self._read("a comparison", request, pulls.compare_files_from_rest)

    def get_commit_parents(self, repo: str, sha: str) -> tuple[str, ...] | None:
        response = self._send(rest.get_commit(repo, sha))
        if response.status == 404:
            return None
        return _mapped("a commit", response, pulls.commit_parents_from_rest)

    def list_directory(self, repo: str, path: str, ref: str) -> tuple[str, ...] | None:
        response = self._send(rest.get_content(repo, path, ref))
        if response.status == 404:
            return None
        return _mapped("a directory", response, pulls.directory_files_from_rest)

    def get_text_file(self, repo: str, path: str, ref: str) -> str | None:
        response = self._send(rest.get_content(repo, path, ref))
        if response.status == 404:
            return None
        return _mapped(f"the file {path}", response, pulls.text_file_from_rest)

    def list_pr_files(self, repo: str, number: int, page: int) -> t.Page[t.FileEntry]:
        request = rest.list_pull_files(repo, number, page)
        return self._page("a file list", request, page, pulls.files_from_rest)

    def list_pr_commits(self, repo: str, number: int, page: int) -> t.Page[str]:
        request = rest.list_pull_commits(repo, number, page)
        return self._page("a commit list", request, page, pulls.commit_shas_from_rest)

    def list_pr_commit_messages(self, repo: str, number: int, page: int) -> t.Page[t.PrCommit]:
        request = rest.list_pull_commits(repo, number, page)
        return self._page("a commit list", request, page, pulls.pr_commits_from_rest)

    def list_labelled_prs(
        self, repo: str, label: str, state: str, page: int
    ) -> t.Page[t.LabelledPr]:
        request = rest.list_labelled_issues(repo, label, state, page)
        return self._page("an issue list", request, page, pulls.labelled_prs_from_rest)

    def list_issue_labels(self, repo: str, number: int) -> tuple[str, ...]:
        request = rest.list_issue_labels(repo, number)
        return self._read("a label list", request, pulls.labels_from_rest)

    def remove_issue_label(self, repo: str, number: int, label: str) -> bool:
        return self._send(rest.remove_issue_label(repo, number, label)).status != 404

    def list_issue_comments(self, repo: str, number: int, page: int) -> t.Page[t.IssueComment]:
        request = rest.list_issue_comments(repo, number, page)
        return self._page("a comment list", request, page, pulls.issue_comments_from_rest)

    def create_issue_comment(self, repo: str, number: int, body: str) -> int:
        request = rest.add_issue_comment(repo, number, body)
        return self._read("a comment", request, lambda d: shape.as_int(shape.as_obj(d)["id"]))

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> None:
        self._send(rest.update_issue_comment(repo, comment_id, body))

    def list_labelled_issues(self, repo: str, label: str, page: int) -> t.Page[t.LabelledIssue]:
        request = rest.list_labelled_issues(repo, label, "open", page)
        return self._page("an issue list", request, page, pulls.labelled_issues_from_rest)

    def create_issue(self, repo: str, title: str, body: str, label: str) -> int:
        request = rest.create_issue(repo, title, body, label)
        return self._read("an issue", request, lambda d: shape.as_int(shape.as_obj(d)["number"]))

    def list_review_comments(
        self, repo: str, number: int, after: str | None
    ) -> t.Page[t.ReviewComment]:
        variables = {**_owner_name(repo), "number": number, "after": after}
        data = self._graphql("review threads", REVIEW_THREADS_QUERY, variables)
        pages, next_cursor = parsed("review threads", data, threads.review_threads_from_graphql)
        items: list[t.ReviewComment] = []
        for thread_id, resolved, first_page, first_cursor in pages:
            items.extend(first_page)
            node = None if thread_id is None else str(thread_id)
            cursor = first_cursor
            # A thread with more than one page of comments is read on by its node id, never cut.
            for _ in range(_THREAD_COMMENT_PAGES):
                if cursor is None:
                    break
                answer = self._graphql(
                    "review thread comments",
                    THREAD_COMMENTS_QUERY,
                    {"id": str(thread_id), "after": cursor},
                )
                page, cursor = parsed(
                    "review thread comments",
                    answer,
                    functools.partial(
                        threads.thread_comments_from_graphql, resolved=resolved, thread_id=node
                    ),
                )
                items.extend(page)
            if cursor is not None:
                raise ForgeCliError(
                    f"a review thread still had comments after {_THREAD_COMMENT_PAGES} pages",
                    kind="page-cap",
                )
        return t.Page(items=tuple(items), next_cursor=next_cursor)

    def list_force_pushes(self, repo: str, number: int) -> t.Page[t.ForcePush]:
        variables = {**_owner_name(repo), "number": number}
        data = self._graphql("force pushes", FORCE_PUSH_QUERY, variables)
        return parsed("force pushes", data, threads.force_pushes_from_graphql)

    def list_open_prs(
        self, repo: str, page: int, etag: str | None
    ) -> t.Page[t.PullRequest] | t.NotModified:
        response = self._send(rest.list_pulls(repo, page=page, etag=etag))
        if response.status == 304:
            return t.NotModified()
        items = _mapped("a pull request list", response, pulls.pulls_from_rest)
        next_page = page + 1 if response.has_next else None
        return t.Page(items=items, next_page=next_page, etag=response.headers.get("etag"))

    def list_commits(self, repo: str, since: str, page: int) -> t.Page[t.Commit]:
        request = rest.list_commits(repo, since, page)
        return self._page("a commit list", request, page, pulls.commits_from_rest)

    def create_check_run(self, repo: str, request: t.CheckRunRequest) -> t.CheckRun:
        if self._app_token is None:
            raise ForgeCliError(
                "create_check_run needs a wire built with app_token", kind="unavailable"
            )
        token = self._token()
        body: dict[str, object] = {
            "name": request.name,
            "head_sha": request.head_sha,
            "status": "completed",
            "conclusion": request.conclusion,
            "output": {"title": request.title, "summary": request.summary},
        }
        if request.external_id is not None:
            body["external_id"] = request.external_id
        # gh reads GH_TOKEN for github.com and github.localhost, GH_ENTERPRISE_TOKEN elsewhere.
        env = {"GH_TOKEN": token, "GH_ENTERPRISE_TOKEN": token}
        response = self._send(rest.create_check_run(repo, body), env=env, secrets=(token,))
        return _mapped("a check run", response, checks.check_run_from_rest)

    def _token(self) -> str:
        provider = self._app_token
        if isinstance(provider, str):
            return provider
        assert provider is not None
        token: str | None = None
        failure = ""
        try:
            token = provider()
        except Exception as exc:
            from ._redact import redact_forge_secrets

            # The provider's own error may quote the token, JWT or key it was handling: only
            # redacted text leaves this block, so nothing is chained as __context__ either.
            failure = redact_forge_secrets(
                f"app token provider failed: {type(exc).__name__}: {exc}"
            )
        if failure:
            raise ForgeCliError(failure, kind="unavailable")
        if not token:
            raise ForgeCliError("app token provider returned no token", kind="unavailable")
        return token

    def list_check_runs(
        self, repo: str, sha: str, page: int, *, latest: bool
    ) -> t.Page[t.CheckRun]:
        request = rest.list_check_runs(repo, sha, page, latest=latest)
        return self._page("a check run list", request, page, checks.check_runs_from_rest)

    def list_commit_statuses(self, repo: str, sha: str, page: int) -> t.Page[t.CommitStatus]:
        request = rest.combined_status(repo, sha, page)
        return self._page("a combined status", request, page, checks.commit_statuses_from_rest)

    def get_branch_rules(self, repo: str, branch: str, page: int) -> t.Page[t.RequiredChecks]:
        request = rest.get_branch_rules(repo, branch, page)
        return self._page("branch rules", request, page, checks.rules_from_rest)

    def get_classic_protection(self, repo: str, branch: str) -> t.ClassicProtection | None:
        response = self._send(rest.get_branch_protection(repo, branch))
        return classic_protection_of(response.status, response.json(), repo, branch)

    def get_pull_reviews(
        self, repo: str, number: int, head_sha: str, after: str | None
    ) -> tuple[t.ReviewState, str | None]:
        variables = {**_owner_name(repo), "number": number, "head": head_sha, "after": after}
        data = self._graphql("reviews", REVIEW_STATE_QUERY, variables)
        return parsed("reviews", data, review_state_from_graphql)

    def merge_pr(
        self, repo: str, number: int, *, sha: str, method: str, subject: str, body: str
    ) -> str:
        request = rest.merge_pull(repo, number, sha=sha, method=method, subject=subject, body=body)
        return self._read("a merge result", request, pulls.merge_sha_from_rest)

    def update_branch(self, repo: str, number: int, *, expected_head_sha: str) -> None:
        self._send(rest.update_pull_branch(repo, number, expected_head_sha=expected_head_sha))
