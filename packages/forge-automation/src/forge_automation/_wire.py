"""The wire: one unconditional `gh api` call per method, parsed from `gh api -i` output.

`-i` makes gh print the status line and headers before the body. That is how a 304 reads as
"not modified" (gh exits 1 on it) and how every failure gets its HTTP status.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from ._budget import RateBudget, shared_rate_budget
from ._errors import ForgeCliError
from ._exec import ExecOptions, ExecResult, GhExec, run_child
from ._ghenv import gh_child_env
from ._types import (
    Ancestry,
    CheckRun,
    CheckRunRequest,
    Commit,
    CommitStatus,
    CompareFiles,
    FileEntry,
    ForcePush,
    IssueComment,
    NotModified,
    Page,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    ReviewComment,
)

__all__ = [
    "AppTokenProvider",
    "ForgeWire",
    "GhResponse",
    "gh_child_env",
    "gh_cli_wire",
    "parse_gh_response",
    "redact_pair",
    "redact_text",
    "run_gh",
]

AppTokenProvider = Callable[[], str]

PER_PAGE = 100
_STATUS_LINE = re.compile(rb"\AHTTP/[0-9.]+ (\d{3})[^\r\n]*\r?\n")
_LINK_NEXT = re.compile(r'<[^>]*>\s*;\s*rel="next"')
# Until the package-wide redactor lands this cuts the same shapes: forge tokens, JWTs, PEMs.
_SECRET_SHAPES = re.compile(
    r"(?:gh[suopr]_[A-Za-z0-9_]{8,}|github_pat_[A-Za-z0-9_]{8,}"
    r"|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"
    r"|-----BEGIN [A-Z ]+-----.*?(?:-----END [A-Z ]+-----|\Z))",
    re.S,
)


def redact_text(text: str, secrets: Sequence[str] = ()) -> str:
    """Return `text` with the given secret values and token-shaped strings replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return _SECRET_SHAPES.sub("[redacted]", text)


def redact_pair(first: str, second: str, secrets: Sequence[str] = ()) -> tuple[str, str]:
    """Redact two adjacent outputs, cutting a token split across them from both halves."""
    joined = first + second
    spans = [m.span() for m in _SECRET_SHAPES.finditer(joined)]
    for secret in secrets:
        start = joined.find(secret) if secret else -1
        while start >= 0:
            spans.append((start, start + len(secret)))
            start = joined.find(secret, start + 1)
    cut = len(first)

    def apply(lo: int, hi: int) -> str:
        pieces, pos = [], lo
        for span_start, span_end in sorted(spans):
            a, b = max(span_start, lo), min(span_end, hi)
            if a >= b or b <= pos:
                continue
            pieces.append(joined[pos : max(a, pos)])
            pieces.append("[redacted]")
            pos = b
        pieces.append(joined[pos:hi])
        return redact_text("".join(pieces), secrets)

    return apply(0, cut), apply(cut, len(joined))


def run_gh(args: Sequence[str], options: ExecOptions) -> ExecResult:
    """Run `gh` with `args`; `options.env` is added to this child's environment only."""
    return run_child("gh", args, options, env=gh_child_env(options.env), error=ForgeCliError)


@dataclass(frozen=True, slots=True, kw_only=True)
class GhResponse:
    """One parsed `gh api -i` answer: HTTP status, lower-cased headers, raw body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """Decode the body as JSON, or raise ForgeCliError."""
        if not self.body.strip():
            return None
        decoded: Any = _NOT_JSON
        # Raised outside the handler: a JSONDecodeError holds the whole body in `doc`.
        with contextlib.suppress(ValueError):
            decoded = json.loads(self.body)
        if decoded is _NOT_JSON:
            raise ForgeCliError("forge answered a body that is not JSON", status=self.status)
        return decoded

    @property
    def has_next(self) -> bool:
        """Return whether the Link header names a next page."""
        return bool(_LINK_NEXT.search(self.headers.get("link", "")))


def parse_gh_response(stdout: bytes) -> GhResponse | None:
    """Parse `gh api -i` stdout into status, headers and body; None when no status line came."""
    match = _STATUS_LINE.match(stdout)
    if match is None:
        return None
    rest = stdout[match.end() :]
    head, sep, body = rest.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = rest.partition(b"\n\n")
    if not sep and rest.strip() and b":" not in rest.splitlines()[0]:
        head, body = b"", rest
    headers: dict[str, str] = {}
    for line in head.splitlines():
        name, colon, value = line.decode("latin-1").partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return GhResponse(status=int(match.group(1)), headers=headers, body=body)


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

    def list_pr_files(self, repo: str, number: int, page: int) -> Page[FileEntry]:
        """Return one page of a PR's files."""
        ...

    def list_pr_commits(self, repo: str, number: int, page: int) -> Page[str]:
        """Return one page of a PR's commit shas, oldest first."""
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

    def get_classic_required_checks(self, repo: str, branch: str) -> RequiredChecks:
        """Return classic branch protection's required checks (raises on 403/404)."""
        ...


_NOT_JSON = object()


def _seg(value: str) -> str:
    # Quote every path piece so `#`, `?`, braces (gh placeholders) and non-ASCII cannot escape it.
    return quote(value, safe="/")


def _repo(repo: str) -> str:
    return "repos/" + _seg(repo)


def _pr_from_json(data: Mapping[str, Any]) -> PullRequest:
    head = data.get("head") or {}
    base = data.get("base") or {}
    head_repo = head.get("repo")
    user = data.get("user") or {}
    merged_at = data.get("merged_at")
    return PullRequest(
        number=int(data["number"]),
        state=str(data.get("state", "open")),
        head_sha=str(head.get("sha", "")),
        head_ref=str(head.get("ref", "")),
        head_repo=str(head_repo["full_name"]) if isinstance(head_repo, Mapping) else None,
        base_ref=str(base.get("ref", "")),
        base_sha=base.get("sha"),
        mergeable_state=str(data.get("mergeable_state") or "unknown"),
        merged=bool(data.get("merged", merged_at is not None)),
        merge_sha=data.get("merge_commit_sha"),
        merged_at=merged_at,
        behind=False,
        draft=bool(data.get("draft", False)),
        title=str(data.get("title") or ""),
        body=str(data.get("body") or ""),
        changed_files=data.get("changed_files"),
        author=user.get("login"),
        updated_at=data.get("updated_at"),
    )


def _file_from_json(data: Mapping[str, Any]) -> FileEntry:
    return FileEntry(
        path=str(data["filename"]),
        previous_path=data.get("previous_filename"),
        status=str(data.get("status", "modified")),
        additions=int(data.get("additions", 0)),
        deletions=int(data.get("deletions", 0)),
    )


def _run_from_json(data: Mapping[str, Any]) -> CheckRun:
    app = data.get("app") or {}
    return CheckRun(
        id=int(data["id"]),
        name=str(data["name"]),
        status=str(data.get("status", "queued")),
        conclusion=data.get("conclusion"),
        app_id=app.get("id"),
        head_sha=str(data.get("head_sha", "")),
        completed_at=data.get("completed_at"),
        started_at=data.get("started_at"),
        details_url=data.get("details_url"),
        external_id=data.get("external_id") or None,
    )


def _app_id(value: object) -> int | None:
    # -1 and null both mean "any source" on the forge.
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


_REVIEW_QUERY = (
    "query($owner:String!,$name:String!,$number:Int!,$after:String){"
    "repository(owner:$owner,name:$name){pullRequest(number:$number){"
    "reviewThreads(first:100,after:$after){pageInfo{hasNextPage endCursor}"
    "nodes{isResolved comments(first:100){nodes{"
    "fullDatabaseId author{login} authorAssociation path line body}}}}}}}"
)
_FORCE_PUSH_QUERY = (
    "query($owner:String!,$name:String!,$number:Int!){"
    "repository(owner:$owner,name:$name){pullRequest(number:$number){"
    "timelineItems(itemTypes:[HEAD_REF_FORCE_PUSHED_EVENT],first:100){"
    "pageInfo{hasNextPage endCursor}"
    "nodes{... on HeadRefForcePushedEvent{beforeCommit{oid} afterCommit{oid}}}}}}}"
)


class _GhCliWire:
    """ForgeWire over `gh api`; see `gh_cli_wire`."""

    def __init__(
        self,
        exec: GhExec,
        app_token: str | AppTokenProvider | None,
        budget: RateBudget,
        timeout: float | None,
    ) -> None:
        self._exec = exec
        self._app_token = app_token
        self._budget = budget
        self._timeout = timeout

    # -- one call -----------------------------------------------------------------------------

    def _call(
        self,
        args: list[str],
        *,
        body: object = None,
        env: Mapping[str, str] | None = None,
        ok: frozenset[int] = frozenset(),
        secrets: Sequence[str] = (),
    ) -> GhResponse:
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            args = [*args, "--input", "-"]
        options = ExecOptions(input=data, env=env, timeout=self._timeout)
        result = self._exec(args, options)
        response = parse_gh_response(result.stdout)
        if response is not None:
            self._budget.observe(response.headers)
        if response is not None and (200 <= response.status < 300 or response.status in ok):
            return response
        raise self._failure(result, response, secrets) from None

    def _failure(
        self, result: ExecResult, response: GhResponse | None, secrets: Sequence[str]
    ) -> ForgeCliError:
        if response is not None:
            message = ""
            try:
                decoded = json.loads(response.body)
                if isinstance(decoded, Mapping):
                    message = str(decoded.get("message", ""))
                    errors = decoded.get("errors")
                    if isinstance(errors, list) and errors and isinstance(errors[0], Mapping):
                        detail = errors[0].get("message") or errors[0].get("code")
                        if detail:
                            message = f"{message}: {detail}" if message else str(detail)
            except ValueError:
                message = response.body[:500].decode("utf-8", "replace")
            text = f"gh api failed with HTTP {response.status}: {message or 'no message'}"
            return ForgeCliError(redact_text(text, secrets), status=response.status)
        out, err = redact_pair(
            result.stdout.decode("utf-8", "replace"),
            result.stderr.decode("utf-8", "replace"),
            secrets,
        )
        joined = f"{out.strip()}\n{err.strip()}".strip()[:2000]
        return ForgeCliError(f"gh exited {result.returncode}: {joined or 'no output'}", status=None)

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
        args = ["api", "-i", "--method", method, path]
        args += ["-H", "Accept: application/vnd.github+json"]
        for name, value in (headers or {}).items():
            args += ["-H", f"{name}: {value}"]
        return self._call(args, body=body, env=env, ok=ok, secrets=secrets)

    def _graphql(self, query: str, variables: Mapping[str, str | int | None]) -> Any:
        args = ["api", "graphql", "-i", "-f", f"query={query}"]
        for name, value in variables.items():
            if value is None:
                continue
            args += ["-F" if isinstance(value, int) else "-f", f"{name}={value}"]
        response = self._call(args)
        data = response.json()
        if not isinstance(data, Mapping):
            raise ForgeCliError("GraphQL answered no object", status=response.status)
        errors = data.get("errors")
        if errors:
            first = errors[0] if isinstance(errors, list) and errors else errors
            message = first.get("message") if isinstance(first, Mapping) else str(first)
            raise ForgeCliError(redact_text(f"GraphQL error: {message}"), status=response.status)
        return data.get("data")

    @staticmethod
    def _page(response: GhResponse, page: int) -> int | None:
        return page + 1 if response.has_next else None

    # -- methods --------------------------------------------------------------------------------

    def get_authenticated_user(self) -> str:
        return str(self._rest("GET", "user").json()["login"])

    def get_ref_sha(self, repo: str, ref: str) -> str | None:
        response = self._rest("GET", f"{_repo(repo)}/git/ref/{_seg(ref)}", ok=frozenset({404}))
        if response.status == 404:
            return None
        data = response.json()
        if isinstance(data, list):  # the forge answers a prefix match as a list: not this ref
            return None
        return str(data["object"]["sha"])

    def get_default_branch(self, repo: str) -> str:
        return str(self._rest("GET", _repo(repo)).json()["default_branch"])

    def create_ref(self, repo: str, branch: str, sha: str) -> str:
        body = {"ref": f"refs/heads/{branch}", "sha": sha}
        return str(self._rest("POST", f"{_repo(repo)}/git/refs", body=body).json()["object"]["sha"])

    def delete_ref(self, repo: str, branch: str) -> None:
        self._rest("DELETE", f"{_repo(repo)}/git/refs/heads/{_seg(branch)}")

    def find_open_pr(self, repo: str, head: str, base: str) -> PullRequest | None:
        query = {"state": "open", "head": head, "base": base, "per_page": 1}
        rows = self._rest("GET", f"{_repo(repo)}/pulls", query=query).json()
        return _pr_from_json(rows[0]) if rows else None

    def create_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        payload = {"head": head, "base": base, "title": title, "body": body}
        return _pr_from_json(self._rest("POST", f"{_repo(repo)}/pulls", body=payload).json())

    def get_pr(self, repo: str, number: int) -> PullRequest:
        return _pr_from_json(self._rest("GET", f"{_repo(repo)}/pulls/{number}").json())

    def compare_ancestry(self, repo: str, base: str, head: str) -> Ancestry | None:
        path = f"{_repo(repo)}/compare/{_seg(base)}...{_seg(head)}"
        response = self._rest("GET", path, query={"per_page": 1}, ok=frozenset({404}))
        if response.status == 404:
            return None
        data = response.json()
        merge_base = (data.get("merge_base_commit") or {}).get("sha")
        return Ancestry(
            status=str(data.get("status")),
            ahead_by=int(data.get("ahead_by", 0)),
            behind_by=int(data.get("behind_by", 0)),
            merge_base_sha=merge_base,
        )

    def compare_files(self, repo: str, base: str, head: str) -> CompareFiles:
        path = f"{_repo(repo)}/compare/{_seg(base)}...{_seg(head)}"
        data = self._rest("GET", path).json()
        files = tuple(_file_from_json(f) for f in data.get("files") or ())
        commits = data.get("commits") or ()
        from ._constants import COMPARE_FILES_CAP

        truncated = len(files) >= COMPARE_FILES_CAP or len(commits) < int(
            data.get("total_commits", len(commits))
        )
        return CompareFiles(
            merge_base_sha=str((data.get("merge_base_commit") or {}).get("sha", "")),
            files=files,
            truncated=truncated,
        )

    def list_pr_files(self, repo: str, number: int, page: int) -> Page[FileEntry]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/pulls/{number}/files", query=query)
        items = tuple(_file_from_json(f) for f in response.json())
        return Page(items=items, next_page=self._page(response, page))

    def list_pr_commits(self, repo: str, number: int, page: int) -> Page[str]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/pulls/{number}/commits", query=query)
        items = tuple(str(c["sha"]) for c in response.json())
        return Page(items=items, next_page=self._page(response, page))

    def list_issue_comments(self, repo: str, number: int, page: int) -> Page[IssueComment]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/issues/{number}/comments", query=query)
        items = tuple(
            IssueComment(
                id=int(c["id"]), author=(c.get("user") or {}).get("login"), body=c.get("body") or ""
            )
            for c in response.json()
        )
        return Page(items=items, next_page=self._page(response, page))

    def create_issue_comment(self, repo: str, number: int, body: str) -> int:
        path = f"{_repo(repo)}/issues/{number}/comments"
        return int(self._rest("POST", path, body={"body": body}).json()["id"])

    def list_review_comments(
        self, repo: str, number: int, after: str | None
    ) -> Page[ReviewComment]:
        owner, name = repo.split("/", 1)
        data = self._graphql(
            _REVIEW_QUERY, {"owner": owner, "name": name, "number": number, "after": after}
        )
        threads = data["repository"]["pullRequest"]["reviewThreads"]
        items: list[ReviewComment] = []
        for thread in threads["nodes"]:
            for c in thread["comments"]["nodes"]:
                items.append(
                    ReviewComment(
                        id=int(c["fullDatabaseId"]),
                        author=(c.get("author") or {}).get("login"),
                        author_association=str(c.get("authorAssociation", "NONE")),
                        path=str(c.get("path", "")),
                        line=c.get("line"),
                        body=str(c.get("body", "")),
                        resolved=bool(thread.get("isResolved")),
                    )
                )
        info = threads["pageInfo"]
        cursor = info.get("endCursor") if info.get("hasNextPage") else None
        return Page(items=tuple(items), next_cursor=cursor)

    def list_force_pushes(self, repo: str, number: int) -> Page[ForcePush]:
        owner, name = repo.split("/", 1)
        data = self._graphql(_FORCE_PUSH_QUERY, {"owner": owner, "name": name, "number": number})
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
        items = tuple(_pr_from_json(p) for p in response.json())
        return Page(
            items=items, next_page=self._page(response, page), etag=response.headers.get("etag")
        )

    def list_commits(self, repo: str, since: str, page: int) -> Page[Commit]:
        query = {"since": since, "per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/commits", query=query)
        items = tuple(
            Commit(sha=str(c["sha"]), message=str((c.get("commit") or {}).get("message", "")))
            for c in response.json()
        )
        return Page(items=items, next_page=self._page(response, page))

    def create_check_run(self, repo: str, request: CheckRunRequest) -> CheckRun:
        if self._app_token is None:
            raise ForgeCliError("create_check_run needs a wire built with app_token")
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
        return _run_from_json(response.json())

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
            # The provider's own error may quote the token, JWT or key it was handling: only
            # redacted text leaves this block, so nothing is chained as __context__ either.
            failure = redact_text(f"app token provider failed: {type(exc).__name__}: {exc}")
        if failure:
            raise ForgeCliError(failure)
        if not token:
            raise ForgeCliError("app token provider returned no token")
        return token

    def list_check_runs(self, repo: str, sha: str, page: int, *, latest: bool) -> Page[CheckRun]:
        query = {"filter": "latest" if latest else "all", "per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/commits/{_seg(sha)}/check-runs", query=query)
        items = tuple(_run_from_json(r) for r in response.json().get("check_runs") or ())
        return Page(items=items, next_page=self._page(response, page))

    def list_commit_statuses(self, repo: str, sha: str, page: int) -> Page[CommitStatus]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/commits/{_seg(sha)}/status", query=query)
        items = tuple(
            CommitStatus(
                context=str(s["context"]),
                state=str(s["state"]),
                created_at=s.get("created_at"),
                target_url=s.get("target_url"),
            )
            for s in response.json().get("statuses") or ()
        )
        return Page(items=items, next_page=self._page(response, page))

    def get_branch_rules(self, repo: str, branch: str, page: int) -> Page[RequiredChecks]:
        query = {"per_page": PER_PAGE, "page": page}
        response = self._rest("GET", f"{_repo(repo)}/rules/branches/{_seg(branch)}", query=query)
        items = []
        for rule in response.json() or ():
            if rule.get("type") != "required_status_checks":
                continue
            params = rule.get("parameters") or {}
            contexts = tuple(
                RequiredContext(context=str(c["context"]), app_id=_app_id(c.get("integration_id")))
                for c in params.get("required_status_checks") or ()
            )
            strict = bool(params.get("strict_required_status_checks_policy", False))
            items.append(RequiredChecks(contexts=contexts, strict=strict))
        return Page(items=tuple(items), next_page=self._page(response, page))

    def get_classic_required_checks(self, repo: str, branch: str) -> RequiredChecks:
        path = f"{_repo(repo)}/branches/{_seg(branch)}/protection/required_status_checks"
        data = self._rest("GET", path).json()
        checks = data.get("checks")
        if checks:
            contexts = tuple(
                RequiredContext(context=str(c["context"]), app_id=_app_id(c.get("app_id")))
                for c in checks
            )
        else:
            contexts = tuple(RequiredContext(context=str(c)) for c in data.get("contexts") or ())
        return RequiredChecks(contexts=contexts, strict=bool(data.get("strict", False)))


def gh_cli_wire(
    exec: GhExec | None = None,
    *,
    app_token: str | AppTokenProvider | None = None,
    budget: RateBudget | None = None,
    timeout: float | None = 60.0,
) -> ForgeWire:
    """Return a ForgeWire that runs `gh api` once per method through `exec` (default: real gh)."""
    return _GhCliWire(exec or run_gh, app_token, budget or shared_rate_budget(), timeout)
