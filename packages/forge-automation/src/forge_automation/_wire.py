"""The wire: one unconditional `gh api` call per method, parsed from `gh api -i` output.

`-i` makes gh print the status line and headers before the body. That is how a 304 reads as
"not modified" (gh exits 1 on it) and how every failure gets its HTTP status.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar
from urllib.parse import quote, urlencode

from ._budget import RateBudget, shared_rate_budget
from ._errors import ForgeCliError
from ._exec import GhExec
from ._gh import DEFAULT_TIMEOUT, GhResponse, gh_call, graphql_args, parse_gh_response, run_gh
from ._ghenv import gh_child_env, protection_path, rest_args
from ._github.graphql import (
    FORCE_PUSH_QUERY,
    REVIEW_STATE_QUERY,
    REVIEW_THREADS_QUERY,
    THREAD_COMMENTS_QUERY,
)
from ._protection_shape import classic_protection_of
from ._review_shape import reviews_from_pull
from ._shape import (
    _SHAPE_ERRORS,
    _app_id,
    _bool,
    _int,
    _list,
    _mapped_data,
    _next_cursor,
    _obj,
    _opt_int,
    _opt_obj,
    _opt_str,
    _str,
    _Unmappable,
)
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
    LabelledPr,
    NotModified,
    Page,
    PrCommit,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    ReviewComment,
    ReviewRules,
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

AppTokenProvider = Callable[[], str]
T = TypeVar("T")

PER_PAGE = 100


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


def _seg(value: str) -> str:
    # Quote every path piece so `#`, `?`, braces (gh placeholders) and non-ASCII cannot escape it.
    return quote(value, safe="/")


def _repo(repo: str) -> str:
    return "repos/" + _seg(repo)


# -- mapping answers: anything of another shape is "cannot read", never another exception -------


def _mapped(what: str, response: GhResponse, parse: Callable[[Any], T]) -> T:
    """Return `parse(body)`, or raise ForgeCliError(kind="malformed") naming `what`."""
    data = response.json()
    failed = False
    try:
        return parse(data)
    except _SHAPE_ERRORS:
        failed = True
    # Raised outside the handler: the original error may quote a value from the body.
    assert failed
    raise ForgeCliError(
        f"forge answered {what} the wire cannot read (HTTP {response.status})",
        status=response.status,
        kind="malformed",
    )


def _pr_from_json(value: object) -> PullRequest:
    data = _obj(value)
    head = _obj(data["head"])
    base = _obj(data["base"])
    head_repo = head.get("repo")
    user = _opt_obj(data.get("user"))
    merged_at = _opt_str(data.get("merged_at"))
    merged = data.get("merged")
    return PullRequest(
        number=_int(data["number"]),
        state=_str(data["state"]),
        head_sha=_str(head["sha"]),
        head_ref=_str(head["ref"]),
        head_repo=_str(head_repo["full_name"]) if isinstance(head_repo, Mapping) else None,
        base_ref=_str(base["ref"]),
        base_sha=_opt_str(base.get("sha")),
        mergeable_state=_opt_str(data.get("mergeable_state")) or "unknown",
        merged=merged_at is not None if merged is None else _bool(merged),
        merge_sha=_opt_str(data.get("merge_commit_sha")),
        merged_at=merged_at,
        behind=False,
        draft=bool(data.get("draft") or False),
        title=_opt_str(data.get("title")) or "",
        body=_opt_str(data.get("body")) or "",
        changed_files=_opt_int(data.get("changed_files")),
        author=_opt_str(user.get("login")),
        updated_at=_opt_str(data.get("updated_at")),
    )


def _pr_commit_from_json(value: object) -> PrCommit:
    data = _obj(value)
    commit = _obj(data["commit"])
    author = _opt_obj(commit.get("author"))
    account = _opt_obj(data.get("author"))
    subject, _, body = _str(commit["message"]).replace("\r\n", "\n").partition("\n")
    return PrCommit(
        sha=_str(data["sha"]),
        subject=subject,
        body=body.strip("\n"),
        author_name=_opt_str(author.get("name")),
        author_email=_opt_str(author.get("email")),
        author_login=_opt_str(account.get("login")),
        parents=tuple(_str(_obj(p)["sha"]) for p in _list(data.get("parents") or [])),
    )


def _file_from_json(value: object) -> FileEntry:
    data = _obj(value)
    return FileEntry(
        path=_str(data["filename"]),
        previous_path=_opt_str(data.get("previous_filename")),
        status=_opt_str(data.get("status")) or "modified",
        additions=_opt_int(data.get("additions")) or 0,
        deletions=_opt_int(data.get("deletions")) or 0,
    )


def _run_from_json(value: object) -> CheckRun:
    data = _obj(value)
    app = _opt_obj(data.get("app"))
    return CheckRun(
        id=_int(data["id"]),
        name=_str(data["name"]),
        status=_str(data["status"]),
        conclusion=_opt_str(data.get("conclusion")),
        app_id=_opt_int(app.get("id")),
        head_sha=_str(data["head_sha"]),
        completed_at=_opt_str(data.get("completed_at")),
        started_at=_opt_str(data.get("started_at")),
        details_url=_opt_str(data.get("details_url")),
        external_id=_opt_str(data.get("external_id")) or None,
    )


def _status_from_json(value: object) -> CommitStatus:
    data = _obj(value)
    return CommitStatus(
        context=_str(data["context"]),
        state=_str(data["state"]),
        created_at=_opt_str(data.get("created_at")),
        target_url=_opt_str(data.get("target_url")),
    )


def _ancestry_from_json(value: object) -> Ancestry:
    data = _obj(value)
    merge_base = _opt_obj(data.get("merge_base_commit"))
    return Ancestry(
        status=_str(data["status"]),
        ahead_by=_int(data["ahead_by"]),
        behind_by=_int(data["behind_by"]),
        merge_base_sha=_opt_str(merge_base.get("sha")),
    )


def _rules_from_json(value: object) -> tuple[RequiredChecks, ...]:
    items = []
    for entry in _list(value):
        rule = _obj(entry)
        if _str(rule["type"]) == "pull_request":
            # Every parameter is required by the forge's description: a missing one is malformed.
            params = _obj(rule["parameters"])
            reviews = ReviewRules(
                required_approving_review_count=_int(params["required_approving_review_count"]),
                require_code_owner_review=_bool(params["require_code_owner_review"]),
                require_last_push_approval=_bool(params["require_last_push_approval"]),
                dismiss_stale_reviews_on_push=_bool(params["dismiss_stale_reviews_on_push"]),
                required_review_thread_resolution=_bool(
                    params["required_review_thread_resolution"]
                ),
                source="ruleset",
            )
            items.append(RequiredChecks(reviews=reviews))
            continue
        if _str(rule["type"]) != "required_status_checks":
            continue
        params = _obj(rule["parameters"])
        contexts = tuple(
            RequiredContext(
                context=_str(_obj(c)["context"]), app_id=_app_id(_obj(c).get("integration_id"))
            )
            for c in _list(params["required_status_checks"])
        )
        strict = _bool(params.get("strict_required_status_checks_policy", False))
        items.append(RequiredChecks(contexts=contexts, strict=strict))
    return tuple(items)


def _review_state_from_data(data: Any) -> tuple[ReviewState, str | None]:
    repository = _obj(data["repository"])
    return reviews_from_pull(_obj(repository["pullRequest"]), repository.get("object"))


_THREAD_COMMENT_PAGES = 100


class _GhCliWire:
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

    def with_deadline(self, deadline: float) -> _GhCliWire:
        """Return this wire with every call, retries included, ending by `deadline` (monotonic)."""
        return _GhCliWire(self._exec, self._app_token, self._budget, self._timeout, deadline)

    # -- one call -----------------------------------------------------------------------------

    def _rest(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, object] | None = None,
        body: object = None,
        headers: Mapping[str, str] | None = None,
        ok: frozenset[int] = frozenset(),
        env: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
    ) -> GhResponse:
        if query:
            path = f"{path}?{urlencode(query)}"
        args = rest_args(method, path, headers=headers)
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            args += ["--input", "-"]
        return gh_call(
            self._exec,
            args,
            input=data,
            env=env,
            read=method == "GET",
            deadline=self._deadline,
            timeout=self._timeout,
            ok=ok,
            secrets=secrets,
            observe=self._budget.observe,
            clock=time.monotonic,
        )

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
        data = response.json()
        if not isinstance(data, Mapping):
            raise ForgeCliError(
                "GraphQL answered no object", status=response.status, kind="malformed"
            )
        errors = data.get("errors")
        if errors:
            from ._redact import redact_forge_secrets

            first = errors[0] if isinstance(errors, list) and errors else errors
            message = first.get("message") if isinstance(first, Mapping) else str(first)
            raise ForgeCliError(
                redact_forge_secrets(f"GraphQL error: {str(message)[:300]}"),
                status=response.status,
                kind="http",
            )
        return _mapped_data(what, data, lambda d: _obj(d["data"]))

    @staticmethod
    def _page(response: GhResponse, page: int) -> int | None:
        return page + 1 if response.has_next else None

    # -- methods --------------------------------------------------------------------------------

    def get_authenticated_user(self) -> str:
        response = self._rest("GET", "user")
        return _mapped("a user", response, lambda d: _str(_obj(d)["login"]))

    def get_ref_sha(self, repo: str, ref: str) -> str | None:
        response = self._rest("GET", f"{_repo(repo)}/git/ref/{_seg(ref)}", ok=frozenset({404}))
        if response.status == 404:
            return None

        def parse(data: object) -> str | None:
            if isinstance(data, list):  # the forge answers a prefix match as a list: not this ref
                return None
            return _str(_obj(_obj(data)["object"])["sha"])

        return _mapped("a ref", response, parse)

    def get_default_branch(self, repo: str) -> str:
        response = self._rest("GET", _repo(repo))
        return _mapped("a repository", response, lambda d: _str(_obj(d)["default_branch"]))

    def create_ref(self, repo: str, branch: str, sha: str) -> str:
        body = {"ref": f"refs/heads/{branch}", "sha": sha}
        response = self._rest("POST", f"{_repo(repo)}/git/refs", body=body)
        return _mapped("a ref", response, lambda d: _str(_obj(_obj(d)["object"])["sha"]))

    def delete_ref(self, repo: str, branch: str) -> None:
        self._rest("DELETE", f"{_repo(repo)}/git/refs/heads/{_seg(branch)}")

    def find_open_pr(self, repo: str, head: str, base: str) -> PullRequest | None:
        query = {"state": "open", "head": head, "base": base, "per_page": 1}
        response = self._rest("GET", f"{_repo(repo)}/pulls", query=query)

        def parse(data: object) -> PullRequest | None:
            rows = _list(data)
            return _pr_from_json(rows[0]) if rows else None

        return _mapped("a pull request list", response, parse)

    def create_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        payload = {"head": head, "base": base, "title": title, "body": body}
        response = self._rest("POST", f"{_repo(repo)}/pulls", body=payload)
        return _mapped("a pull request", response, _pr_from_json)

    def get_pr(self, repo: str, number: int) -> PullRequest:
        response = self._rest("GET", f"{_repo(repo)}/pulls/{number}")
        return _mapped("a pull request", response, _pr_from_json)

    def compare_ancestry(self, repo: str, base: str, head: str) -> Ancestry | None:
        path = f"{_repo(repo)}/compare/{_seg(base)}...{_seg(head)}"
        response = self._rest("GET", path, query={"per_page": 1}, ok=frozenset({404}))
        if response.status == 404:
            return None
        return _mapped("a comparison", response, _ancestry_from_json)

    def compare_files(self, repo: str, base: str, head: str) -> CompareFiles:
        from ._constants import COMPARE_FILES_CAP

        path = f"{_repo(repo)}/compare/{_seg(base)}...{_seg(head)}"
        response = self._rest("GET", path)

        def parse(value: object) -> CompareFiles:
            data = _obj(value)
            files = tuple(_file_from_json(f) for f in _list(data.get("files") or []))
            commits = _list(data.get("commits") or [])
            total = _int(data.get("total_commits", len(commits)))
            truncated = len(files) >= COMPARE_FILES_CAP or len(commits) < total
            merge_base = _opt_obj(data.get("merge_base_commit"))
            return CompareFiles(
                merge_base_sha=_opt_str(merge_base.get("sha")) or "",
                files=files,
                truncated=truncated,
            )

        return _mapped("a comparison", response, parse)

    def get_commit_parents(self, repo: str, sha: str) -> tuple[str, ...] | None:
        path = f"{_repo(repo)}/git/commits/{_seg(sha)}"
        response = self._rest("GET", path, ok=frozenset({404}))
        if response.status == 404:
            return None

        def parse(data: object) -> tuple[str, ...]:
            return tuple(_str(_obj(p)["sha"]) for p in _list(_obj(data)["parents"]))

        return _mapped("a commit", response, parse)

    def list_pr_files(self, repo: str, number: int, page: int) -> Page[FileEntry]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/pulls/{number}/files", query=query)
        items = _mapped(
            "a file list", response, lambda d: tuple(_file_from_json(f) for f in _list(d))
        )
        return Page(items=items, next_page=self._page(response, page))

    def list_pr_commits(self, repo: str, number: int, page: int) -> Page[str]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/pulls/{number}/commits", query=query)
        items = _mapped(
            "a commit list", response, lambda d: tuple(_str(_obj(c)["sha"]) for c in _list(d))
        )
        return Page(items=items, next_page=self._page(response, page))

    def list_pr_commit_messages(self, repo: str, number: int, page: int) -> Page[PrCommit]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/pulls/{number}/commits", query=query)
        items = _mapped(
            "a commit list", response, lambda d: tuple(_pr_commit_from_json(c) for c in _list(d))
        )
        return Page(items=items, next_page=self._page(response, page))

    def list_labelled_prs(self, repo: str, label: str, state: str, page: int) -> Page[LabelledPr]:
        query = {
            "labels": label,
            "state": state,
            "sort": "created",
            "direction": "asc",
            "per_page": PER_PAGE,
            "page": page,
        }
        response = self._rest("GET", f"{_repo(repo)}/issues", query=query)

        def parse(data: object) -> tuple[LabelledPr, ...]:
            return tuple(
                LabelledPr(
                    number=_int(_obj(i)["number"]),
                    state=_str(_obj(i)["state"]),
                    created_at=_opt_str(_obj(i).get("created_at")),
                )
                for i in _list(data)
                # The issue listing holds issues too; a PR's row carries `pull_request`.
                if _obj(i).get("pull_request") is not None
            )

        return Page(
            items=_mapped("an issue list", response, parse), next_page=self._page(response, page)
        )

    def list_issue_labels(self, repo: str, number: int) -> tuple[str, ...]:
        # One page of 100: GitHub allows at most 100 labels on an issue.
        query = {"per_page": PER_PAGE}
        response = self._rest("GET", f"{_repo(repo)}/issues/{number}/labels", query=query)
        return _mapped(
            "a label list", response, lambda d: tuple(_str(_obj(x)["name"]) for x in _list(d))
        )

    def remove_issue_label(self, repo: str, number: int, label: str) -> bool:
        path = f"{_repo(repo)}/issues/{number}/labels/{quote(label, safe='')}"
        response = self._rest("DELETE", path, ok=frozenset({404}))
        return response.status != 404

    def list_issue_comments(self, repo: str, number: int, page: int) -> Page[IssueComment]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/issues/{number}/comments", query=query)

        def parse(data: object) -> tuple[IssueComment, ...]:
            return tuple(
                IssueComment(
                    id=_int(_obj(c)["id"]),
                    author=_opt_str(_opt_obj(_obj(c).get("user")).get("login")),
                    body=_opt_str(_obj(c).get("body")) or "",
                )
                for c in _list(data)
            )

        return Page(
            items=_mapped("a comment list", response, parse),
            next_page=self._page(response, page),
        )

    def create_issue_comment(self, repo: str, number: int, body: str) -> int:
        path = f"{_repo(repo)}/issues/{number}/comments"
        response = self._rest("POST", path, body={"body": body})
        return _mapped("a comment", response, lambda d: _int(_obj(d)["id"]))

    def list_review_comments(
        self, repo: str, number: int, after: str | None
    ) -> Page[ReviewComment]:
        owner, name = repo.split("/", 1)
        variables = {"owner": owner, "name": name, "number": number, "after": after}
        data = self._graphql("review threads", REVIEW_THREADS_QUERY, variables)

        def comments(
            connection: Any, resolved: bool, thread_id: str | None = None
        ) -> tuple[list[ReviewComment], str | None]:
            """Return one page of a thread's comments and the cursor of the next, if any."""
            items = [
                ReviewComment(
                    id=int(c["fullDatabaseId"]),
                    author=(c.get("author") or {}).get("login"),
                    author_association=str(c.get("authorAssociation", "NONE")),
                    path=str(c.get("path", "")),
                    line=c.get("line"),
                    body=str(c.get("body", "")),
                    resolved=resolved,
                    thread_id=thread_id,
                )
                for c in connection["nodes"]
            ]
            return items, _next_cursor(connection["pageInfo"])

        def parse(data: Any) -> tuple[list[tuple[Any, bool, list[ReviewComment], str | None]], Any]:
            threads = data["repository"]["pullRequest"]["reviewThreads"]
            read = []
            for thread in threads["nodes"]:
                resolved = bool(thread.get("isResolved"))
                thread_id = thread.get("id")
                items, more = comments(
                    thread["comments"], resolved, None if thread_id is None else str(thread_id)
                )
                read.append((thread.get("id"), resolved, items, more))
            return read, _next_cursor(threads["pageInfo"])

        threads, next_cursor = _mapped_data("review threads", data, parse)
        items: list[ReviewComment] = []
        for thread_id, resolved, first_page, first_cursor in threads:
            items.extend(first_page)
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
                page, cursor = _mapped_data(
                    "review thread comments",
                    answer,
                    functools.partial(
                        _thread_page,
                        comments,
                        resolved,
                        None if thread_id is None else str(thread_id),
                    ),
                )
                items.extend(page)
            if cursor is not None:
                raise ForgeCliError(
                    f"a review thread still had comments after {_THREAD_COMMENT_PAGES} pages",
                    kind="malformed",
                )
        return Page(items=tuple(items), next_cursor=next_cursor)

    def list_force_pushes(self, repo: str, number: int) -> Page[ForcePush]:
        owner, name = repo.split("/", 1)
        variables = {"owner": owner, "name": name, "number": number}
        data = self._graphql("force pushes", FORCE_PUSH_QUERY, variables)

        def parse(data: Any) -> Page[ForcePush]:
            timeline = data["repository"]["pullRequest"]["timelineItems"]
            items = tuple(
                ForcePush(
                    before=(n.get("beforeCommit") or {}).get("oid"),
                    after=str(n["afterCommit"]["oid"]),
                )
                for n in timeline["nodes"]
                if n and n.get("afterCommit")
            )
            info = timeline["pageInfo"]
            cursor = (info.get("endCursor") or "more") if info.get("hasNextPage") else None
            return Page(items=items, next_cursor=cursor)

        return _mapped_data("force pushes", data, parse)

    def list_open_prs(
        self, repo: str, page: int, etag: str | None
    ) -> Page[PullRequest] | NotModified:
        query = {"state": "open", "per_page": PER_PAGE, "page": page}
        headers = {"If-None-Match": etag} if etag else None
        response = self._rest(
            "GET", f"{_repo(repo)}/pulls", query=query, headers=headers, ok=frozenset({304})
        )
        if response.status == 304:
            return NotModified()
        items = _mapped(
            "a pull request list", response, lambda d: tuple(_pr_from_json(p) for p in _list(d))
        )
        return Page(
            items=items, next_page=self._page(response, page), etag=response.headers.get("etag")
        )

    def list_commits(self, repo: str, since: str, page: int) -> Page[Commit]:
        query = {"since": since, "per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/commits", query=query)

        def parse(data: object) -> tuple[Commit, ...]:
            return tuple(
                Commit(
                    sha=_str(_obj(c)["sha"]),
                    message=_opt_str(_opt_obj(_obj(c).get("commit")).get("message")) or "",
                )
                for c in _list(data)
            )

        return Page(
            items=_mapped("a commit list", response, parse),
            next_page=self._page(response, page),
        )

    def create_check_run(self, repo: str, request: CheckRunRequest) -> CheckRun:
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
        response = self._rest(
            "POST", f"{_repo(repo)}/check-runs", body=body, env=env, secrets=(token,)
        )
        return _mapped("a check run", response, _run_from_json)

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

    def list_check_runs(self, repo: str, sha: str, page: int, *, latest: bool) -> Page[CheckRun]:
        query = {"filter": "latest" if latest else "all", "per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/commits/{_seg(sha)}/check-runs", query=query)
        items = _mapped(
            "a check run list",
            response,
            lambda d: tuple(_run_from_json(r) for r in _list(_obj(d)["check_runs"])),
        )
        return Page(items=items, next_page=self._page(response, page))

    def list_commit_statuses(self, repo: str, sha: str, page: int) -> Page[CommitStatus]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/commits/{_seg(sha)}/status", query=query)
        items = _mapped(
            "a combined status",
            response,
            lambda d: tuple(_status_from_json(s) for s in _list(_obj(d)["statuses"])),
        )
        return Page(items=items, next_page=self._page(response, page))

    def get_branch_rules(self, repo: str, branch: str, page: int) -> Page[RequiredChecks]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/rules/branches/{_seg(branch)}", query=query)
        items = _mapped("branch rules", response, _rules_from_json)
        return Page(items=items, next_page=self._page(response, page))

    def get_classic_protection(self, repo: str, branch: str) -> ClassicProtection | None:
        response = self._rest("GET", protection_path(repo, branch), ok=frozenset({404}))
        return classic_protection_of(response, repo, branch)

    def get_pull_reviews(
        self, repo: str, number: int, head_sha: str, after: str | None
    ) -> tuple[ReviewState, str | None]:
        owner, name = repo.split("/", 1)
        variables = {
            "owner": owner,
            "name": name,
            "number": number,
            "head": head_sha,
            "after": after,
        }
        data = self._graphql("reviews", REVIEW_STATE_QUERY, variables)
        return _mapped_data("reviews", data, _review_state_from_data)

    def merge_pr(
        self, repo: str, number: int, *, sha: str, method: str, subject: str, body: str
    ) -> str:
        payload: dict[str, str] = {"sha": sha, "merge_method": method}
        if method != "rebase":  # a rebase writes no commit of its own to title
            payload["commit_title"] = subject
            payload["commit_message"] = body
        response = self._rest("PUT", f"{_repo(repo)}/pulls/{number}/merge", body=payload)

        def parse(value: object) -> str:
            data = _obj(value)
            if not _bool(data["merged"]):
                raise _Unmappable
            return _str(data["sha"])

        return _mapped("a merge result", response, parse)

    def update_branch(self, repo: str, number: int, *, expected_head_sha: str) -> None:
        path = f"{_repo(repo)}/pulls/{number}/update-branch"
        self._rest("PUT", path, body={"expected_head_sha": expected_head_sha})


def _thread_page(
    comments: Callable[[Any, bool, str | None], tuple[list[ReviewComment], str | None]],
    resolved: bool,
    thread_id: str | None,
    data: Any,
) -> tuple[list[ReviewComment], str | None]:
    return comments(data["node"]["comments"], resolved, thread_id)


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
    return _GhCliWire(exec or run_gh, app_token, budget or shared_rate_budget(), timeout, deadline)
