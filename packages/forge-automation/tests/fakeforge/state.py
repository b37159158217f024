"""The test forge's state: repositories with refs, commits, PRs, CI and rules; the request log.

State stays REST-shaped; the GraphQL objects are built from it per request (graphql_objects).
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakeforge.gitrepo import GitBacking, SimulatedCi

__all__ = [
    "API_HOST",
    "DEFAULT_WORKFLOW",
    "RATE_LIMIT",
    "USER_TOKEN",
    "ForgeState",
    "LoggedRequest",
    "RepoState",
    "ancestors",
    "bot_login",
    "is_bot",
    "is_strict",
    "latest_statuses",
    "resolve_ref",
    "sha_of",
]

API_HOST = "api.github.localhost"


USER_TOKEN = "gho_usertoken0000000000000000000000000"


RATE_LIMIT = 5000


def bot_login(app_id: int) -> str:
    """Return the login of app `app_id`'s bot: what its installation tokens act as."""
    return f"app-{app_id}[bot]"


def is_bot(login: str) -> bool:
    """Tell a bot's login (`<slug>[bot]`, GitHub's form) from a user's."""
    return login.endswith("[bot]")


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


DEFAULT_WORKFLOW = """name: ci
on:
  push:
    branches: ["train/**"]
jobs:
  ci:
    runs-on: ubuntu-latest
    steps:
      - run: make test
"""


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
    # Every branch moved by a ref update (branch, new tip), and a hook called under the lock
    # right after each one (branch, new tip): where a test checks the tree that landed.
    ref_updates: list[tuple[str, str]] = field(default_factory=list)
    after_ref_update: Callable[[str, str], None] | None = None
    # A message the forge refuses every ref update with (422), the base unmoved: branch
    # protection or a ruleset the token cannot bypass.
    ref_update_refusal: str | None = None
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
    # A real bare git repository holding the commits and branches (`fakeforge.gitrepo`), and the
    # simulated CI that runs on the trees pushed to it; both None for a state-only repository.
    git: GitBacking | None = None
    ci: SimulatedCi | None = None
    # Issues (not PRs) by number: {"title", "body", "user": {"login"}, "created_at"}, all open;
    # their labels and comments live in `labels` and `comments` beside the PRs'.
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    # The repository's files as the contents API serves them (the same at every ref): by
    # default one Actions workflow that runs on pushes to train/** (what SimulatedCi watches).
    files: dict[str, str] = field(
        default_factory=lambda: {".github/workflows/ci.yml": DEFAULT_WORKFLOW}
    )

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
    # GraphQL answers bent before they are sent, by operation name (PullRequestSnapshot, ...):
    # each function takes the whole answer and returns the one to send.
    graphql_bends: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = field(
        default_factory=dict
    )
    # Review-related reads answered with a fault (fakeforge.faults: part -> fault), and how often.
    part_faults: dict[str, str] = field(default_factory=dict)
    fault_hits: Counter[str] = field(default_factory=Counter)

    def repo(self, full_name: str) -> RepoState:
        """Return (creating) the repository named `owner/name`."""
        if full_name not in self.repos:
            self.repos[full_name] = RepoState(full_name=full_name)
        return self.repos[full_name]


def ancestors(repo: RepoState, sha: str) -> dict[str, int]:
    """Return every ancestor of `sha` (itself included) with its distance in commits."""
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


def is_strict(repo: RepoState, branch: str) -> bool:
    """Return whether a ruleset asks `branch` to be up to date before merging."""
    return any(
        rule.get("type") == "required_status_checks"
        and rule.get("parameters", {}).get("strict_required_status_checks_policy")
        for rule in repo.rulesets.get(branch, [])
    )


def resolve_ref(repo: RepoState, ref: str) -> str | None:
    """Return the commit a branch name, commit or PR head sha names, or None."""
    if ref in repo.branches:
        return repo.branches[ref]
    if ref in repo.commits:
        return ref
    for pr in repo.prs.values():
        if pr["head"]["sha"] == ref:
            return ref
    return None
