"""A local, stateful forge API for tests: the real `gh` talks to it through HTTP_PROXY.

`gh` treats `github.localhost` as a plain-HTTP development host and sends every call in absolute
form (`GET http://api.github.localhost/repos/...`) to the proxy, which is this aiohttp app on
127.0.0.1:0. It plays the forge's documented REST answers (Link pagination, ETag/304, 403/404/422
bodies, X-RateLimit headers per resource), keeps state so a second call of an idempotent method is
visible as "no new effect", and logs every request.

It is held to GitHub's own descriptions (github_api.py): every REST request is checked against the
OpenAPI description (an undocumented path is a 404, an invalid body a 422) and so is the shape of
every answer it sends; every GraphQL document is validated against the published schema and
executed over this state (forge_graphql.py). Whatever GitHub would refuse is recorded in
`state.violations`, and leaving the `with ForgeServer()` block with any fails the test; a test
that sends such a request on purpose takes them with `take_violations()`.

Use `ForgeServer` as a context manager (it runs its own loop in a background thread), `gh_env` for
the environment a `gh` child needs, and `gh_exec` for a GhExec seam that adds it.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from forge_automation import ExecOptions, ExecResult, GhExec, run_gh
from forge_faults import faulted_answer, mutated
from forge_graphql import answer_graphql
from github_api import RestOperation, match_operation, request_errors, response_errors

__all__ = [
    "ForgeServer",
    "ForgeState",
    "LoggedRequest",
    "RepoState",
    "gh_env",
    "gh_exec",
    "latest_statuses",
    "sha_of",
]

API_HOST = "api.github.localhost"
USER_TOKEN = "gho_usertoken0000000000000000000000000"
RATE_LIMIT = 5000


def latest_statuses(statuses: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return the latest status per context (statuses are kept oldest first, like the forge)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for status in statuses:
        latest.pop(str(status["context"]), None)
        latest[str(status["context"])] = status
    return list(reversed(latest.values()))


def sha_of(text: str) -> str:
    """Return a stable fake 40-hex object id for `text`."""
    return hashlib.sha1(text.encode()).hexdigest()


@dataclass
class RepoState:
    """One repository's refs, commits, PRs and CI state."""

    full_name: str
    default_branch: str = "main"
    branches: dict[str, str] = field(default_factory=dict)
    # sha -> (parents, message, ISO date)
    commits: dict[str, tuple[tuple[str, ...], str, str]] = field(default_factory=dict)
    prs: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pr_files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pr_commits: dict[int, list[str]] = field(default_factory=dict)
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rulesets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    classic: dict[str, dict[str, Any] | int] = field(default_factory=dict)
    compare_files: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    review_threads: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # Classic branch protection as GET .../branches/{branch}/protection answers it (its review
    # and conversation-resolution parts); a branch without one answers from `classic`.
    protection: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Who has admin rights: GitHub answers every other caller's protection read 404 `Not Found`
    # (and a branch without protection 404 `Branch not protected` to an admin).
    admins: set[str] = field(default_factory=lambda: {"forge-bot"})
    # The logins a commit's author and committer map to (None: an email with no account).
    commit_users: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    force_pushes: dict[int, list[tuple[str | None, str]]] = field(default_factory=dict)
    # Raw job logs by check run (job) id, served through actions/jobs/{id}/logs.
    job_logs: dict[int, bytes] = field(default_factory=dict)
    # Check-run annotations by check run id, served through check-runs/{id}/annotations.
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # Actions workflow runs (GitHub's workflow-run shape), served through actions/runs.
    workflow_runs: list[dict[str, Any]] = field(default_factory=list)
    # Where refs/pull/<n>/head points when not at the PR's head: the forge moves that ref after a
    # push, not with it, so a read through it can describe the previous head (or a newer one).
    pull_heads: dict[int, str] = field(default_factory=dict)
    # Labels on each PR (its issue), by name.
    labels: dict[int, list[str]] = field(default_factory=dict)
    # Commit authors by sha: (name, email, login or None); others read as "A U Thor".
    commit_authors: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)
    # Called under the server's lock after an update-branch wrote the new head (number, old
    # head, new head), and after a merge landed (number): a test's CI or crash point.
    after_update: Callable[[int, str, str], None] | None = None
    after_merge: Callable[[int], None] | None = None
    # update-branch as GitHub runs it: the 202 comes first, the new head lands later. Here it
    # lands while the forge answers the `update_lands_after`-th request after the 202 (0: at
    # once). Until then the PR keeps its old head, and another update-branch for that head is
    # answered 202 without a second job. `update_accepted(number)` runs at each first 202.
    update_lands_after: int = 2
    # Called under the lock as a merge request arrives (number), before it is judged: a test
    # moves the base here to make the base move between premerge and merge.
    before_merge: Callable[[int], None] | None = None
    update_accepted: Callable[[int], None] | None = None
    # number -> [requests left before it lands, old head, base tip at the 202]
    pending_updates: dict[int, list[Any]] = field(default_factory=dict)

    def pull_head(self, number: int) -> str | None:
        """Return the sha refs/pull/<number>/head points at, None without such a PR."""
        if number in self.pull_heads:
            return self.pull_heads[number]
        pr = self.prs.get(number)
        return str(pr["head"]["sha"]) if pr else None

    def add_commit(
        self,
        name: str,
        *,
        parents: Sequence[str] = (),
        message: str | None = None,
        date: str = "2024-01-01T00:00:00Z",
    ) -> str:
        """Add a commit whose sha derives from `name` and return the sha."""
        sha = sha_of(f"{self.full_name}:{name}")
        self.commits[sha] = (tuple(parents), message if message is not None else name, date)
        return sha

    def add_run(
        self,
        sha: str,
        name: str,
        conclusion: str | None,
        *,
        app_id: int = 15368,
        run_id: int | None = None,
        log: bytes | None = None,
    ) -> dict[str, Any]:
        """Add a check run (the built-in CI app by default), with its job log when given."""
        run_id = run_id if run_id is not None else 70000 + len(self.check_runs)
        run: dict[str, Any] = {
            "id": run_id,
            "name": name,
            "head_sha": sha,
            "status": "completed" if conclusion else "in_progress",
            "conclusion": conclusion,
            "started_at": "2024-01-01T00:00:00Z",
            "completed_at": "2024-01-01T00:05:00Z" if conclusion else None,
            "details_url": f"http://github.localhost/{self.full_name}/actions/runs/1/job/{run_id}",
            "external_id": "",
            "app": {"id": app_id, "slug": "github-actions" if app_id == 15368 else "app"},
        }
        self.check_runs.append(run)
        if log is not None:
            self.job_logs[run_id] = log
        return run

    def set_rulesets(
        self, branch: str, contexts: Sequence[str | tuple[str, int]], *, strict: bool = False
    ) -> None:
        """Require `contexts` (a name, or a name pinned to an app id) on `branch` by ruleset."""
        checks = [
            {"context": c} if isinstance(c, str) else {"context": c[0], "integration_id": c[1]}
            for c in contexts
        ]
        self.rulesets[branch] = [
            {
                "type": "required_status_checks",
                "parameters": {
                    "strict_required_status_checks_policy": strict,
                    "required_status_checks": checks,
                },
            }
        ]

    def add_review_rule(self, branch: str, **parameters: object) -> None:
        """Add a ruleset `pull_request` rule on `branch` (every parameter GitHub requires)."""
        params: dict[str, object] = {
            "dismiss_stale_reviews_on_push": False,
            "require_code_owner_review": False,
            "require_last_push_approval": False,
            "required_approving_review_count": 0,
            "required_review_thread_resolution": False,
        }
        params.update(parameters)
        rule = {"type": "pull_request", "parameters": params}
        self.rulesets.setdefault(branch, []).append(rule)

    def mirror_git(self, clone: str) -> None:
        """Copy a real git repository's commits and branches into this state, shas and all."""
        import subprocess

        listing = subprocess.run(
            ["git", "-C", clone, "log", "--all", "--format=%H %P%x09%cI%x09%s"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for line in listing.splitlines():
            shas, date, subject = line.split("\t", 2)
            sha, *parents = shas.split()
            self.commits[sha] = (tuple(parents), subject, date)
        heads = subprocess.run(
            [
                "git",
                "-C",
                clone,
                "for-each-ref",
                "--format=%(refname:short) %(objectname)",
                "refs/heads",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for line in heads.splitlines():
            name, sha = line.split()
            self.branches[name] = sha

    def add_pr(
        self,
        number: int,
        *,
        head_ref: str,
        head_sha: str,
        base_ref: str = "main",
        head_repo: str | bool | None = True,
        title: str = "A change",
        body: str = "",
        mergeable_state: str = "clean",
        state: str = "open",
        draft: bool = False,
    ) -> dict[str, Any]:
        """Add a PR; `head_repo=True` means the head lives in this repository."""
        repo_name = self.full_name if head_repo is True else head_repo
        pr: dict[str, Any] = {
            "number": number,
            "state": state,
            "title": title,
            "body": body,
            "draft": draft,
            "user": {"login": "author"},
            "head": {
                "ref": head_ref,
                "sha": head_sha,
                "repo": None if repo_name in (None, False) else {"full_name": repo_name},
            },
            "base": {"ref": base_ref, "sha": self.branches.get(base_ref, "")},
            "mergeable_state": mergeable_state,
            "merged": False,
            "merged_at": None,
            "merge_commit_sha": sha_of(f"merge:{number}"),
            "updated_at": "2024-01-02T00:00:00Z",
        }
        self.prs[number] = pr
        if repo_name == self.full_name:
            self.branches.setdefault(head_ref, head_sha)
        return pr


@dataclass(frozen=True)
class LoggedRequest:
    """One request the server saw."""

    method: str
    url: str
    path: str
    headers: Mapping[str, str]
    body: bytes


@dataclass
class ForgeState:
    """Every repository, the users and app tokens, counters and the request log."""

    repos: dict[str, RepoState] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=lambda: {USER_TOKEN: "forge-bot"})
    app_tokens: dict[str, int] = field(default_factory=dict)
    effects: Counter[str] = field(default_factory=Counter)
    log: list[LoggedRequest] = field(default_factory=list)
    not_modified: int = 0
    remaining: int = RATE_LIMIT
    reset_at: int = field(default_factory=lambda: int(time.time()) + 3600)
    # Tokens seen in Authorization headers of check-run posts.
    check_run_tokens: list[str] = field(default_factory=list)
    # Error entries added (beside the data) to the next backstop GraphQL answers, one per answer.
    graphql_faults: list[dict[str, Any]] = field(default_factory=list)
    # GraphQL documents answered, by operation name (Backstop, BackstopContexts, ...).
    graphql_ops: Counter[str] = field(default_factory=Counter)
    # The GraphQL point budget, apart from REST's like the forge's own resources.
    graphql_remaining: int = RATE_LIMIT
    # Called under the lock as each request arrives (method, path): a test's kill point.
    on_request: Callable[[str, str], None] | None = None
    # Requests GitHub would refuse (or the fake cannot answer truthfully); ForgeServer's exit
    # fails the test unless the test took them with `take_violations()`.
    violations: list[str] = field(default_factory=list)
    ids: Any = field(default_factory=lambda: itertools.count(5000))
    # Review-related reads answered with a fault (forge_faults: part -> fault), and how often.
    part_faults: dict[str, str] = field(default_factory=dict)
    fault_hits: Counter[str] = field(default_factory=Counter)

    def repo(self, full_name: str) -> RepoState:
        """Return (creating) the repository named `owner/name`."""
        if full_name not in self.repos:
            self.repos[full_name] = RepoState(full_name=full_name)
        return self.repos[full_name]


class _Answer(Exception):
    def __init__(self, status: int, body: object, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


def _error(status: int, message: str, **extra: Any) -> _Answer:
    body = {"message": message, "documentation_url": "https://docs.github.com/rest", **extra}
    return _Answer(status, body)


def _ancestors(repo: RepoState, sha: str) -> dict[str, int]:
    seen = {sha: 0}
    frontier = [sha]
    depth = 0
    while frontier and depth < 100_000:
        depth += 1
        nxt = []
        for current in frontier:
            for parent in repo.commits.get(current, ((), "", ""))[0]:
                if parent not in seen:
                    seen[parent] = depth
                    nxt.append(parent)
        frontier = nxt
    return seen


def _strict(repo: RepoState, branch: str) -> bool:
    return any(
        rule.get("type") == "required_status_checks"
        and rule.get("parameters", {}).get("strict_required_status_checks_policy")
        for rule in repo.rulesets.get(branch, [])
    )


def _resolve(repo: RepoState, ref: str) -> str | None:
    if ref in repo.branches:
        return repo.branches[ref]
    if ref in repo.commits:
        return ref
    for pr in repo.prs.values():
        if pr["head"]["sha"] == ref:
            return ref
    return None


class _Api:
    """The request handlers over one ForgeState."""

    def __init__(self, state: ForgeState, lock: threading.Lock) -> None:
        self.state = state
        self.lock = lock

    # -- framing ------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        with self.lock:
            self.state.log.append(
                LoggedRequest(
                    method=request.method,
                    url=str(request.url),
                    path=request.path,
                    headers=dict(request.headers),
                    body=body,
                )
            )
            self._land_updates()
            if self.state.on_request is not None:
                self.state.on_request(request.method, request.path)
            change: str | None = None
            try:
                if request.host != API_HOST:
                    raise _error(421, f"unexpected host {request.host}")
                operation = None
                if request.path.startswith("/_blobs/"):
                    # Like the forge's signed log URLs: the redirect target needs no token.
                    status, payload, headers = self._blob(request)
                else:
                    if request.path != "/graphql":
                        operation = self._check_request(request, body)
                    login = self._authenticate(request)
                    whole, change = faulted_answer(self.state, request.path, body)
                    if whole is not None:
                        operation = None  # a fault answers in place of the forge
                        raise _Answer(whole[0], whole[1], whole[2])
                    status, payload, headers = self._route(request, body, login)
            except _Answer as answer:
                status, payload, headers = answer.status, answer.body, answer.headers
            if change is not None and status == 200:
                payload = mutated(payload, change)
                operation = None  # a fault's answer is held to no description
            if operation is not None:
                # The fake may leave documented fields out, never add or mis-shape one.
                for problem in response_errors(operation, status, payload):
                    self.state.violations.append(f"{operation.operation_id}: {problem}")
            # GitHub keeps REST (`core`) and GraphQL (`graphql`, charged in points by the
            # executor) apart, and names the one a response counts against.
            if request.path == "/graphql":
                resource, remaining = "graphql", self.state.graphql_remaining
            else:
                if status != 304:
                    self.state.remaining = max(self.state.remaining - 1, 0)
                resource, remaining = "core", self.state.remaining
            headers = {
                "X-RateLimit-Limit": str(RATE_LIMIT),
                "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": str(self.state.reset_at),
                "X-RateLimit-Used": str(RATE_LIMIT - remaining),
                "X-RateLimit-Resource": resource,
                **headers,
            }
        if status in (204, 304):
            return web.Response(status=status, headers=headers)
        if isinstance(payload, bytes):
            return web.Response(
                status=status, body=payload, content_type="text/plain", headers=headers
            )
        return web.Response(
            status=status,
            body=json.dumps(payload).encode(),
            content_type="application/json",
            headers=headers,
        )

    def _check_request(self, request: web.Request, body: bytes) -> RestOperation:
        """Hold the request to GitHub's OpenAPI description; refuse what GitHub would refuse."""
        operation = match_operation(request.method, request.path)
        if operation is None:
            self.state.violations.append(f"{request.method} {request.path}: not a GitHub operation")
            raise _error(404, "Not Found")
        query: dict[str, list[str]] = {}
        for key, value in request.query.items():
            query.setdefault(key, []).append(value)
        data: object = None
        if body.strip():
            try:
                data = json.loads(body)
            except ValueError:
                self.state.violations.append(f"{operation.operation_id}: body is not JSON")
                raise _error(400, "Problems parsing JSON") from None
        problems = request_errors(operation, query, data)
        self.state.violations.extend(f"{operation.operation_id}: {p}" for p in problems)
        if any(p.startswith("body") for p in problems):
            raise _error(422, "Invalid request.", errors=[{"message": problems[0]}])
        return operation

    def _authenticate(self, request: web.Request) -> str | None:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("token ").removeprefix("Bearer ").strip()
        if token in self.state.users:
            return self.state.users[token]
        if token in self.state.app_tokens:
            return None
        raise _error(401, "Bad credentials")

    def _repo(self, owner: str, name: str) -> RepoState:
        repo = self.state.repos.get(f"{owner}/{name}")
        if repo is None:
            raise _error(404, "Not Found")
        return repo

    @staticmethod
    def _paginate(
        request: web.Request, rows: Sequence[Any], *, default: int = 30, cap: int | None = None
    ) -> tuple[list[Any], dict[str, str]]:
        per_page = min(int(request.query.get("per_page", default)), 100)
        page = max(int(request.query.get("page", 1)), 1)
        if cap is not None:
            rows = rows[:cap]
        start = (page - 1) * per_page
        chunk = list(rows[start : start + per_page])
        headers: dict[str, str] = {}
        last = max((len(rows) + per_page - 1) // per_page, 1)
        if page < last:
            links = []
            for rel, number in (("next", page + 1), ("last", last)):
                query = {**request.query, "page": str(number)}
                links.append(f'<http://{API_HOST}{request.path}?{urlencode(query)}>; rel="{rel}"')
            headers["Link"] = ", ".join(links)
        return chunk, headers

    # -- routing -------------------------------------------------------------------------------

    def _route(
        self, request: web.Request, body: bytes, login: str | None
    ) -> tuple[int, object, dict[str, str]]:
        method, path = request.method, request.path
        data: Any = json.loads(body) if body.strip() else {}
        if path == "/graphql" and method == "POST":
            return 200, self.graphql(data), {}
        if path == "/user" and method == "GET":
            if login is None:
                raise _error(403, "Resource not accessible by integration")
            return 200, {"login": login, "id": 1}, {}
        match = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", path)
        if match is None:
            raise _error(404, "Not Found")
        repo = self._repo(match.group(1), match.group(2))
        rest = match.group(3) or ""
        for pattern, verb, handler in self._table():
            found = re.fullmatch(pattern, rest)
            if found and verb == method:
                return handler(request, repo, data, login, *found.groups())
        raise _error(404, "Not Found")

    def _table(self) -> list[tuple[str, str, Callable[..., tuple[int, object, dict[str, str]]]]]:
        return [
            (r"", "GET", self.get_repo),
            (r"/git/ref/(.+)", "GET", self.get_ref),
            (r"/git/refs", "POST", self.create_ref),
            (r"/git/commits/([0-9a-f]{40})", "GET", self.get_git_commit),
            (r"/git/refs/heads/(.+)", "DELETE", self.delete_ref),
            (r"/pulls", "GET", self.list_pulls),
            (r"/pulls", "POST", self.create_pull),
            (r"/pulls/(\d+)", "GET", self.get_pull),
            (r"/pulls/(\d+)/files", "GET", self.pull_files),
            (r"/pulls/(\d+)/commits", "GET", self.pull_commits),
            (r"/pulls/(\d+)/merge", "PUT", self.merge_pull),
            (r"/pulls/(\d+)/update-branch", "PUT", self.update_pull_branch),
            (r"/issues", "GET", self.list_issues),
            (r"/issues/(\d+)/labels", "GET", self.list_labels),
            (r"/issues/(\d+)/labels/(.+)", "DELETE", self.remove_label),
            (r"/issues/(\d+)/comments", "GET", self.list_comments),
            (r"/issues/(\d+)/comments", "POST", self.create_comment),
            (r"/compare/(.+?)\.\.\.(.+)", "GET", self.compare),
            (r"/commits", "GET", self.list_commits),
            (r"/check-runs", "POST", self.create_check_run),
            (r"/commits/([^/]+)/check-runs", "GET", self.list_check_runs),
            (r"/commits/refs/pull/(\d+)/head/check-runs", "GET", self.list_pull_head_check_runs),
            (r"/commits/([^/]+)/status", "GET", self.combined_status),
            (r"/rules/branches/(.+)", "GET", self.branch_rules),
            (r"/branches/(.+)/protection/required_status_checks", "GET", self.classic),
            (r"/branches/(.+)/protection", "GET", self.protection),
            (r"/check-runs/(\d+)", "GET", self.get_check_run),
            (r"/check-runs/(\d+)/annotations", "GET", self.check_run_annotations),
            (r"/actions/jobs/(\d+)/logs", "GET", self.job_logs),
            (r"/actions/runs", "GET", self.list_workflow_runs),
        ]

    # -- REST handlers ---------------------------------------------------------------------------

    def get_repo(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        return 200, {"full_name": repo.full_name, "default_branch": repo.default_branch}, {}

    def get_ref(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, ref: str
    ) -> Any:
        sha: str | None = None
        if ref.startswith("heads/"):
            sha = repo.branches.get(ref[len("heads/") :])
        elif found := re.fullmatch(r"pull/(\d+)/head", ref):
            sha = repo.pull_head(int(found.group(1)))
        if sha is None:
            raise _error(404, "Not Found")
        return 200, {"ref": f"refs/{ref}", "object": {"sha": sha, "type": "commit"}}, {}

    def create_ref(self, request: web.Request, repo: RepoState, data: Any, *_: Any) -> Any:
        ref, sha = str(data.get("ref", "")), str(data.get("sha", ""))
        if not ref.startswith("refs/heads/"):
            raise _error(422, "Reference name must start with refs/heads/")
        branch = ref[len("refs/heads/") :]
        if branch in repo.branches:
            raise _error(422, "Reference already exists")
        if sha not in repo.commits:
            raise _error(422, "Object does not exist")
        repo.branches[branch] = sha
        self.state.effects["create_ref"] += 1
        return 201, {"ref": ref, "object": {"sha": sha, "type": "commit"}}, {}

    def get_git_commit(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, sha: str
    ) -> Any:
        if sha not in repo.commits:
            raise _error(404, "Not Found")
        parents, message, _date = repo.commits[sha]
        url = f"https://{API_HOST}/repos/{repo.full_name}/git/commits"
        return (
            200,
            {
                "sha": sha,
                "message": message,
                "parents": [
                    {"sha": p, "url": f"{url}/{p}", "html_url": f"http://github.localhost/{p}"}
                    for p in parents
                ],
            },
            {},
        )

    def delete_ref(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str
    ) -> Any:
        if repo.branches.pop(b, None) is None:
            raise _error(422, "Reference does not exist")
        self.state.effects["delete_ref"] += 1
        return 204, None, {}

    def _pr_json(self, repo: RepoState, pr: dict[str, Any], *, full: bool) -> dict[str, Any]:
        out = {k: v for k, v in pr.items() if not k.startswith("_")}
        out["base"] = {**pr["base"], "sha": repo.branches.get(pr["base"]["ref"], "")}
        if full and pr.get("_mergeable_states"):
            # A scripted sequence: each full read takes the next mergeable_state, the last sticks.
            states = pr["_mergeable_states"]
            pr["mergeable_state"] = states.pop(0) if len(states) > 1 else states[0]
            out["mergeable_state"] = pr["mergeable_state"]
        if full:
            files = repo.pr_files.get(pr["number"], [])
            out["changed_files"] = pr.get("changed_files", len(files))
        else:
            # A list row is GitHub's pull-request-simple: no lazily computed or counted fields.
            for key in ("mergeable_state", "merged", "changed_files"):
                out.pop(key, None)
        return out

    def list_pulls(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        state = request.query.get("state", "open")
        head = request.query.get("head")
        base = request.query.get("base")
        rows = []
        for number in sorted(repo.prs, reverse=True):
            pr = repo.prs[number]
            if state != "all" and pr["state"] != state:
                continue
            if head is not None:
                owner, _sep, wanted = head.partition(":")
                head_repo = (pr["head"]["repo"] or {}).get("full_name", "")
                if pr["head"]["ref"] != wanted or head_repo.split("/")[0] != owner:
                    continue
            if base is not None and pr["base"]["ref"] != base:
                continue
            rows.append(self._pr_json(repo, pr, full=False))
        chunk, headers = self._paginate(request, rows)
        # Like the forge: the ETag covers the page without lazily computed fields.
        stable = [{k: v for k, v in row.items() if k != "mergeable_state"} for row in chunk]
        etag = 'W/"' + hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest() + '"'
        headers["ETag"] = etag
        if request.headers.get("If-None-Match") == etag:
            self.state.not_modified += 1
            return 304, None, {"ETag": etag}
        return 200, chunk, headers

    def create_pull(self, request: web.Request, repo: RepoState, data: Any, *_: Any) -> Any:
        head, base = str(data.get("head", "")), str(data.get("base", ""))
        _owner, sep, branch = head.partition(":")
        branch = branch if sep else head
        for pr in repo.prs.values():
            if pr["state"] == "open" and pr["head"]["ref"] == branch and pr["base"]["ref"] == base:
                raise _error(
                    422, "Validation Failed", errors=[{"message": "A pull request already exists"}]
                )
        if branch not in repo.branches or base not in repo.branches:
            raise _error(422, "Validation Failed", errors=[{"field": "head", "code": "invalid"}])
        number = max(repo.prs, default=0) + 1
        pr = repo.add_pr(
            number,
            head_ref=branch,
            head_sha=repo.branches[branch],
            base_ref=base,
            title=str(data.get("title", "")),
            body=str(data.get("body", "")),
            mergeable_state="unknown",
        )
        self.state.effects["create_pr"] += 1
        return 201, self._pr_json(repo, pr, full=True), {}

    def get_pull(self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str) -> Any:
        pr = repo.prs.get(int(n))
        if pr is None:
            raise _error(404, "Not Found")
        return 200, self._pr_json(repo, pr, full=True), {}

    def pull_files(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        chunk, headers = self._paginate(request, repo.pr_files.get(int(n), []), cap=3000)
        return 200, chunk, headers

    def pull_commits(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        rows = []
        for sha in repo.pr_commits.get(int(n), []):
            parents, message, date = repo.commits.get(sha, ((), "", "2024-01-01T00:00:00Z"))
            name, email, login = repo.commit_authors.get(
                sha, ("A U Thor", "author@example.com", None)
            )
            rows.append(
                {
                    "sha": sha,
                    "commit": {
                        "message": message,
                        "author": {"name": name, "email": email, "date": date},
                    },
                    "author": {"login": login} if login else None,
                    "parents": [{"sha": p} for p in parents],
                }
            )
        chunk, headers = self._paginate(request, rows, cap=250)
        return 200, chunk, headers

    def merge_pull(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        if repo.before_merge is not None:
            repo.before_merge(int(n))
        pr = repo.prs.get(int(n))
        if pr is None:
            raise _error(404, "Not Found")
        if pr["state"] != "open" or pr["merged"]:
            raise _Answer(405, {"message": "Pull Request is not mergeable"})
        wanted = data.get("sha")
        if wanted is not None and wanted != pr["head"]["sha"]:
            raise _Answer(
                409, {"message": "Head branch was modified. Review and try the merge again."}
            )
        if pr["draft"] or pr["mergeable_state"] in ("dirty", "blocked"):
            raise _Answer(405, {"message": "Pull Request is not mergeable"})
        if _strict(repo, pr["base"]["ref"]) and (
            repo.branches[pr["base"]["ref"]] not in _ancestors(repo, pr["head"]["sha"])
        ):
            # The base moved after the PR was judged: GitHub refuses rather than merge a head
            # its strict rule no longer holds up to date.
            raise _Answer(
                405, {"message": "Base branch was modified. Review and try the merge again."}
            )
        method = data.get("merge_method", "merge")
        base_ref, head_sha = pr["base"]["ref"], pr["head"]["sha"]
        base_tip = repo.branches[base_ref]
        parents = (base_tip, head_sha) if method == "merge" else (base_tip,)
        title = data.get("commit_title") or f"Merge pull request #{n}"
        message = title if method == "rebase" else f"{title}\n\n{data.get('commit_message', '')}"
        merged = repo.add_commit(f"{method}:{n}:{head_sha}", parents=parents, message=message)
        repo.branches[base_ref] = merged
        pr.update(state="closed", merged=True, merged_at="2024-01-03T00:00:00Z")
        pr["merge_commit_sha"] = merged
        pr["_merge_message"] = message.rstrip()
        self.state.effects["merge_pr"] += 1
        if repo.after_merge is not None:
            repo.after_merge(int(n))
        return (
            200,
            {"sha": merged, "merged": True, "message": "Pull Request successfully merged"},
            {},
        )

    def update_pull_branch(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        pr = repo.prs.get(int(n))
        if pr is None:
            raise _error(404, "Not Found")
        expected = data.get("expected_head_sha")
        if expected is not None and expected != pr["head"]["sha"]:
            raise _error(422, "expected head sha didn't match current head ref.")
        if pr["state"] != "open" or pr["mergeable_state"] == "dirty":
            raise _error(422, "merge conflict between base and head")
        base_ref, head_sha = pr["base"]["ref"], pr["head"]["sha"]
        base_tip = repo.branches[base_ref]
        url = f"http://github.localhost/{repo.full_name}/pull/{n}"
        answer = {"message": "Updating pull request branch.", "url": url}
        pending = repo.pending_updates.get(int(n))
        if pending is not None and pending[1] == head_sha:
            return 202, answer, {}  # the job for this head is still running
        if base_tip in _ancestors(repo, head_sha):
            raise _error(422, "There are no new commits on the base branch.")
        self.state.effects["update_branch"] += 1
        repo.pending_updates[int(n)] = [repo.update_lands_after, head_sha, base_tip]
        if repo.update_lands_after <= 0:
            self._land_update(repo, int(n))
        elif repo.update_accepted is not None:
            repo.update_accepted(int(n))
        return 202, answer, {}

    def _land_updates(self) -> None:
        for repo in self.state.repos.values():
            for number, pending in list(repo.pending_updates.items()):
                pending[0] -= 1
                if pending[0] <= 0:
                    self._land_update(repo, number)

    def _land_update(self, repo: RepoState, number: int) -> None:
        _left, old, base_tip = repo.pending_updates.pop(number)
        pr = repo.prs[number]
        if pr["head"]["sha"] != old or pr["state"] != "open":
            return  # the head moved (or the PR closed) meanwhile: the job fails, nothing lands
        base_ref, head_ref = pr["base"]["ref"], pr["head"]["ref"]
        new_head = repo.add_commit(
            f"update:{number}:{old}",
            parents=(old, base_tip),
            message=f"Merge branch '{base_ref}' into {head_ref}",
        )
        pr["head"]["sha"] = new_head
        if (pr["head"]["repo"] or {}).get("full_name") == repo.full_name:
            repo.branches[head_ref] = new_head
        if repo.after_update is not None:
            repo.after_update(number, old, new_head)

    def list_issues(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        # Only PRs live here, so every row is a PR's issue and carries `pull_request`.
        state = request.query.get("state", "open")
        wanted = [x for x in request.query.get("labels", "").split(",") if x]
        rows = []
        for number, pr in repo.prs.items():
            names = {x.casefold() for x in repo.labels.get(number, [])}
            if state != "all" and pr["state"] != state:
                continue
            if not all(w.casefold() in names for w in wanted):
                continue
            rows.append(
                {
                    "number": number,
                    "state": pr["state"],
                    "title": pr["title"],
                    "user": pr["user"],
                    "labels": [{"name": x} for x in repo.labels.get(number, [])],
                    "created_at": pr.get("created_at", "2024-01-01T00:00:00Z"),
                    "pull_request": {
                        "url": f"http://{API_HOST}/repos/{repo.full_name}/pulls/{number}"
                    },
                }
            )
        oldest_first = request.query.get("direction", "desc") == "asc"
        rows.sort(key=lambda r: (r["created_at"], r["number"]), reverse=not oldest_first)
        chunk, headers = self._paginate(request, rows)
        return 200, chunk, headers

    def list_labels(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        if int(n) not in repo.prs:
            raise _error(404, "Not Found")
        chunk, headers = self._paginate(request, [{"name": x} for x in repo.labels.get(int(n), [])])
        return 200, chunk, headers

    def remove_label(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str, name: str
    ) -> Any:
        labels = repo.labels.get(int(n), [])
        kept = [x for x in labels if x.casefold() != name.casefold()]
        if int(n) not in repo.prs or len(kept) == len(labels):
            raise _error(404, "Label does not exist")
        repo.labels[int(n)] = kept
        self.state.effects["remove_label"] += 1
        return 200, [{"name": x} for x in kept], {}

    def list_comments(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        if int(n) not in repo.prs:
            raise _error(404, "Not Found")
        chunk, headers = self._paginate(request, repo.comments.get(int(n), []))
        return 200, chunk, headers

    def create_comment(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        if int(n) not in repo.prs:
            raise _error(404, "Not Found")
        if not data.get("body"):
            raise _error(
                422, "Validation Failed", errors=[{"field": "body", "code": "missing_field"}]
            )
        comment = {"id": next(self.state.ids), "user": {"login": login}, "body": data["body"]}
        repo.comments.setdefault(int(n), []).append(comment)
        self.state.effects["create_issue_comment"] += 1
        return 201, comment, {}

    def compare(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, base: str, head: str
    ) -> Any:
        base_sha, head_sha = _resolve(repo, base), _resolve(repo, head)
        if base_sha is None or head_sha is None:
            raise _error(404, "Not Found")
        base_anc, head_anc = _ancestors(repo, base_sha), _ancestors(repo, head_sha)
        ahead = sorted(head_anc.keys() - base_anc.keys(), key=lambda s: -head_anc[s])
        behind = len(base_anc.keys() - head_anc.keys())
        common = [s for s in head_anc if s in base_anc]
        merge_base = min(common, key=lambda s: head_anc[s]) if common else base_sha
        if base_sha == head_sha:
            status = "identical"
        elif not behind:
            status = "ahead"
        elif not ahead:
            status = "behind"
        else:
            status = "diverged"
        rows = [
            {"sha": s, "commit": {"message": repo.commits.get(s, ((), "", ""))[1]}} for s in ahead
        ]
        chunk, headers = self._paginate(request, rows, default=250, cap=250)
        answer = {
            "status": status,
            "ahead_by": len(ahead),
            "behind_by": behind,
            "total_commits": len(ahead),
            "merge_base_commit": {"sha": merge_base},
            "commits": chunk,
            "files": repo.compare_files.get((base, head), [])[:300],
        }
        return 200, answer, headers

    def list_commits(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        tip = repo.branches.get(request.query.get("sha", repo.default_branch))
        if tip is None:
            raise _error(404, "Not Found")
        since = request.query.get("since", "")
        ancestry = _ancestors(repo, tip)
        known = [s for s in ancestry if s in repo.commits and repo.commits[s][2] >= since]
        known.sort(key=lambda s: (repo.commits[s][2], -ancestry[s]), reverse=True)
        rows = [{"sha": s, "commit": {"message": repo.commits[s][1]}} for s in known]
        chunk, headers = self._paginate(request, rows)
        return 200, chunk, headers

    def create_check_run(self, request: web.Request, repo: RepoState, data: Any, *_: Any) -> Any:
        token = request.headers.get("Authorization", "").removeprefix("token ").strip()
        app_id = self.state.app_tokens.get(token)
        if app_id is None:
            raise _error(403, "You must authenticate via a GitHub App.")
        self.state.check_run_tokens.append(token)
        run = {
            "id": next(self.state.ids),
            "name": data["name"],
            "head_sha": data["head_sha"],
            "status": data.get("status", "queued"),
            "conclusion": data.get("conclusion"),
            "started_at": "2024-01-01T00:00:00Z",
            "completed_at": "2024-01-01T00:00:01Z" if data.get("conclusion") else None,
            "external_id": data.get("external_id", ""),
            "details_url": "http://github.localhost/runs",
            "output": data.get("output", {}),
            "app": {"id": app_id, "slug": "app"},
        }
        repo.check_runs.append(run)
        self.state.effects["create_check_run"] += 1
        return 201, run, {}

    def list_check_runs(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, sha: str
    ) -> Any:
        if _resolve(repo, sha) is None:
            raise _error(422, f"No commit found for SHA: {sha}")
        runs = [r for r in repo.check_runs if r["head_sha"] == sha]
        if request.query.get("filter", "latest") == "latest":
            newest: dict[tuple[str, int], dict[str, Any]] = {}
            for run in runs:
                newest[(run["name"], run["app"]["id"])] = run
            runs = list(newest.values())
        chunk, headers = self._paginate(request, runs)
        return 200, {"total_count": len(runs), "check_runs": chunk}, headers

    def list_pull_head_check_runs(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        # The commits endpoints take a ref as well as a sha; this one is the PR's head ref.
        sha = repo.pull_head(int(n))
        if sha is None:
            raise _error(422, f"No commit found for SHA: refs/pull/{n}/head")
        return self.list_check_runs(request, repo, data, login, sha)

    def combined_status(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, sha: str
    ) -> Any:
        statuses = latest_statuses(repo.statuses.get(sha, []))
        chunk, headers = self._paginate(request, statuses)
        states = {s["state"] for s in statuses}
        overall = (
            "failure"
            if states & {"failure", "error"}
            else "pending"
            if "pending" in states or not statuses
            else "success"
        )
        return (
            200,
            {"state": overall, "sha": sha, "total_count": len(statuses), "statuses": chunk},
            headers,
        )

    def branch_rules(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str
    ) -> Any:
        chunk, headers = self._paginate(request, repo.rulesets.get(b, []))
        return 200, chunk, headers

    @staticmethod
    def _admin_only(repo: RepoState, login: str | None) -> None:
        # GitHub hides protection from callers without admin rights behind a plain 404.
        if login is not None and login not in repo.admins:
            raise _error(404, "Not Found")

    def classic(self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str) -> Any:
        self._admin_only(repo, login)
        answer = repo.classic.get(b, 404)
        if answer == 403:
            raise _error(
                403, "Upgrade to GitHub Pro or make this repository public to enable this feature."
            )
        if isinstance(answer, int):
            raise _error(answer, "Branch not protected")
        return 200, answer, {}

    def protection(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str
    ) -> Any:
        self._admin_only(repo, login)
        checks = repo.classic.get(b, 404)
        if checks == 403:
            raise _error(
                403, "Upgrade to GitHub Pro or make this repository public to enable this feature."
            )
        if b not in repo.protection and isinstance(checks, int):
            raise _error(checks, "Branch not protected")
        url = f"http://{API_HOST}/repos/{repo.full_name}/branches/{b}/protection"
        answer: dict[str, Any] = {"url": url, "enabled": True, **repo.protection.get(b, {})}
        if isinstance(checks, dict):
            answer["required_status_checks"] = {"url": f"{url}/required_status_checks", **checks}
        return 200, answer, {}

    def get_check_run(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, run_id: str
    ) -> Any:
        for run in repo.check_runs:
            if run["id"] == int(run_id):
                return 200, run, {}
        raise _error(404, "Not Found")

    def check_run_annotations(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, run_id: str
    ) -> Any:
        if not any(run["id"] == int(run_id) for run in repo.check_runs):
            raise _error(404, "Not Found")
        rows = [
            {
                "path": a["path"],
                "blob_href": f"http://github.localhost/{repo.full_name}/blob/x/{a['path']}",
                "start_line": a["start_line"],
                "end_line": a.get("end_line", a["start_line"]),
                "start_column": None,
                "end_column": None,
                "annotation_level": a.get("annotation_level", "failure"),
                "title": a.get("title"),
                "message": a.get("message"),
                "raw_details": None,
            }
            for a in repo.annotations.get(int(run_id), [])
        ]
        chunk, headers = self._paginate(request, rows)
        return 200, chunk, headers

    def list_workflow_runs(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        wanted = request.query.get("head_sha")
        runs = [r for r in repo.workflow_runs if wanted is None or r["head_sha"] == wanted]
        chunk, headers = self._paginate(request, runs)
        return 200, {"total_count": len(runs), "workflow_runs": chunk}, headers

    def job_logs(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, job_id: str
    ) -> Any:
        if int(job_id) not in repo.job_logs:
            raise _error(404, "Not Found")
        location = f"http://{API_HOST}/_blobs/job-logs/{repo.full_name}/{job_id}"
        return 302, {}, {"Location": location}

    def _blob(self, request: web.Request) -> tuple[int, object, dict[str, str]]:
        found = re.fullmatch(r"/_blobs/job-logs/([^/]+/[^/]+)/(\d+)", request.path)
        repo = self.state.repos.get(found.group(1)) if found else None
        if found is None or repo is None or int(found.group(2)) not in repo.job_logs:
            raise _error(404, "Not Found")
        return 200, repo.job_logs[int(found.group(2))], {}

    # -- GraphQL ---------------------------------------------------------------------------------

    def graphql(self, data: object) -> dict[str, Any]:
        """Answer one GraphQL body (see forge_graphql), recording its operation and violations."""
        answer = answer_graphql(self.state, data)
        self.state.graphql_ops[answer.operation or "(anonymous)"] += 1
        self.state.violations.extend(f"GraphQL: {v}" for v in answer.violations)
        body = answer.body
        if self.state.graphql_faults and "data" in body:
            body["errors"] = [*body.get("errors", []), self.state.graphql_faults.pop(0)]
        return body


class ForgeServer:
    """The local forge API on 127.0.0.1:0, served from its own loop in a background thread."""

    def __init__(self, state: ForgeState | None = None) -> None:
        self.state = state or ForgeState()
        self.lock = threading.Lock()
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._config = tempfile.TemporaryDirectory(prefix="gh-config-")

    def __enter__(self) -> ForgeServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None:
            violations = self.take_violations()
            assert not violations, (
                f"requests GitHub would refuse (or answers it would not give): {violations}"
            )

    def take_violations(self) -> list[str]:
        """Return and forget the requests GitHub would have refused so far."""
        with self.lock:
            taken = list(self.state.violations)
            self.state.violations.clear()
            return taken

    def graphql(self, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        """Answer a GraphQL document in-process, exactly as the endpoint would (no gh, no HTTP)."""
        body = {"query": query, "variables": dict(variables)}
        with self.lock:
            answer = _Api(self.state, self.lock).graphql(json.loads(json.dumps(body)))
        decoded: dict[str, Any] = json.loads(json.dumps(answer))
        return decoded

    @property
    def config_dir(self) -> str:
        """Return a private, empty GH_CONFIG_DIR for `gh` children."""
        return self._config.name

    def start(self) -> None:
        """Start serving; returns once the port is bound."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        api = _Api(self.state, self.lock)

        async def boot() -> None:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", api.handle)
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(boot())
            ready.set()
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="forge-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("forge server did not start")

    def stop(self) -> None:
        """Stop serving and close the loop."""
        loop, runner = self._loop, self._runner
        if loop is None:
            return
        if runner is not None:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self._loop = None
        self._config.cleanup()

    def env(self, token: str = USER_TOKEN) -> dict[str, str]:
        """Return the environment a `gh` child needs to reach this server as `token`."""
        return gh_env(self.port, token, self.config_dir)

    def exec(self, token: str = USER_TOKEN) -> GhExec:
        """Return a GhExec running the real `gh` against this server."""
        return gh_exec(self.env(token))

    def requests(self, method: str | None = None) -> list[LoggedRequest]:
        """Return a copy of the request log, optionally only one method."""
        with self.lock:
            return [r for r in self.state.log if method is None or r.method == method]

    def clear_log(self) -> None:
        """Forget the requests seen so far."""
        with self.lock:
            self.state.log.clear()


def gh_env(port: int, token: str, config_dir: str) -> dict[str, str]:
    """Return GH_HOST, GH_TOKEN, HTTP_PROXY and friends for a `gh` child aimed at the server."""
    proxy = f"http://127.0.0.1:{port}"
    return {
        "GH_HOST": "github.localhost",
        "GH_TOKEN": token,
        "GH_CONFIG_DIR": config_dir,
        "HTTP_PROXY": proxy,
        "http_proxy": proxy,
        "NO_PROXY": "",
        "no_proxy": "",
        "GH_PROMPT_DISABLED": "1",
        "GH_NO_UPDATE_NOTIFIER": "1",
    }


def gh_exec(env: Mapping[str, str]) -> GhExec:
    """Return a GhExec that runs the real `gh` with `env` under the call's own env."""

    def exec_with_env(args: Sequence[str], options: ExecOptions) -> ExecResult:
        merged = {**env, **(options.env or {})}
        return run_gh(args, replace(options, env=merged))

    return exec_with_env
