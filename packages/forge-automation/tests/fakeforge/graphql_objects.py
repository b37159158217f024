"""The test forge's GraphQL objects, built per request over its REST-shaped state.

Connections page as GitHub's do (`first`/`last`, opaque cursors, `pageInfo`); a field this fake
does not model raises, so a test cannot pass on a field the forge would answer otherwise.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from graphql import (
    GraphQLError,
    GraphQLResolveInfo,
)

from fakeforge.state import RATE_LIMIT, ForgeState, RepoState, ancestors, latest_statuses

__all__ = ["CONNECTION_LIMIT", "UNMODELED", "Graph", "connection", "cursor", "offset_of"]

CONNECTION_LIMIT = 100


UNMODELED = "FORGE_UNMODELED"


def cursor(offset: int) -> str:
    """Return the opaque cursor of the row before `offset` (like GitHub's `Y3Vyc29yOnYyOpH...`)."""
    return base64.b64encode(f"cursor:v2:{offset}".encode()).decode()


def offset_of(value: str | None) -> int:
    if value is None:
        return 0
    try:
        text = base64.b64decode(value.encode(), validate=True).decode()
        return int(text.removeprefix("cursor:v2:"))
    except ValueError:
        raise GraphQLError(f"`{value}` does not appear to be a valid cursor.") from None


def connection(
    rows: Sequence[Any],
    build: Callable[[Any], Any] = lambda row: row,
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    **_: Any,
) -> dict[str, Any]:
    # Only the page's rows are built into objects. `last` takes the final rows (of those after
    # `after`); `before` is not used by the package. The pre-execution check bounded the size.
    start = offset_of(after)
    if first is None and last is not None:
        start = max(start, len(rows) - last)
    size = first if first is not None else last if last is not None else CONNECTION_LIMIT
    page = [build(row) for row in rows[start : start + size]]
    end = start + len(page)
    more = end < len(rows)
    return {
        "totalCount": len(rows),
        "pageInfo": {
            "hasNextPage": more,
            "hasPreviousPage": start > 0,
            "startCursor": cursor(start + 1) if page else None,
            "endCursor": cursor(end) if page else None,
        },
        "nodes": page,
        "edges": [{"cursor": cursor(start + i + 1), "node": n} for i, n in enumerate(page)],
    }


def _connect(
    rows: Callable[[], Sequence[Any]], build: Callable[[Any], Any] = lambda row: row
) -> Callable[..., dict[str, Any]]:
    return lambda info, **args: connection(rows(), build, **args)


def _user(login: str | None) -> dict[str, Any] | None:
    return None if login is None else {"__typename": "User", "login": login}


def _upper(value: object) -> str | None:
    return str(value).upper() if value else None


class Graph:
    """Builds the GraphQL objects of one request over one ForgeState."""

    def __init__(self, state: ForgeState, cost: int, viewer: str) -> None:
        self.state = state
        self.cost = cost
        self.viewer = viewer

    def root(self) -> dict[str, Any]:
        return {
            # `viewer: User!`: an App installation token's is its bot, `<slug>[bot]`.
            "viewer": _user(self.viewer),
            "rateLimit": self.rate_limit,
            "repository": self.repository,
            "node": self.node,
        }

    def rate_limit(self, info: GraphQLResolveInfo[Any], dryRun: bool = False) -> dict[str, Any]:
        reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.state.reset_at))
        return {
            "cost": self.cost,
            "limit": RATE_LIMIT,
            "remaining": self.state.graphql_remaining,
            "used": RATE_LIMIT - self.state.graphql_remaining,
            "resetAt": reset,
            "nodeCount": 0,
        }

    def repository(self, info: GraphQLResolveInfo[Any], owner: str, name: str, **_: Any) -> Any:
        repo = self.state.repos.get(f"{owner}/{name}")
        if repo is None:
            raise GraphQLError(
                f"Could not resolve to a Repository with the name '{owner}/{name}'.",
                extensions={"type": "NOT_FOUND"},
            )
        return self.repo_object(repo)

    def node(self, info: GraphQLResolveInfo[Any], id: str) -> Any:
        kind, _, rest = id.partition("_")
        if kind == "PRRT":
            try:
                full_name, number, index = base64.urlsafe_b64decode(rest).decode().split("#")
                repo = self.state.repos[full_name]
                thread = repo.review_threads[int(number)][int(index)]
            except (ValueError, KeyError, IndexError):
                thread = None
            if thread is not None:
                return self.thread(repo, int(number), int(index), thread)
        raise GraphQLError(
            f"Could not resolve to a node with the global id of '{id}'",
            extensions={"type": "NOT_FOUND"},
        )

    # -- repository --------------------------------------------------------------------------

    def repo_object(self, repo: RepoState) -> dict[str, Any]:
        return {
            "__typename": "Repository",
            "nameWithOwner": repo.full_name,
            "pullRequests": lambda info, **args: self.pull_requests(repo, **args),
            "pullRequest": lambda info, number: self.pull_request(repo, number),
            "ref": lambda info, qualifiedName: self.ref(repo, qualifiedName),
            "object": lambda info, oid=None, expression=None: self.object(repo, oid),
        }

    def pull_requests(
        self,
        repo: RepoState,
        *,
        states: Sequence[str] | None = None,
        orderBy: Mapping[str, str] | None = None,
        headRefName: str | None = None,
        baseRefName: str | None = None,
        labels: Any = None,
        **page: Any,
    ) -> dict[str, Any]:
        rows = [pr for _, pr in sorted(repo.prs.items())]
        if states:
            rows = [pr for pr in rows if _pr_state(pr) in states]
        if headRefName is not None:
            rows = [pr for pr in rows if pr["head"]["ref"] == headRefName]
        if baseRefName is not None:
            rows = [pr for pr in rows if pr["base"]["ref"] == baseRefName]
        order = orderBy or {"field": "CREATED_AT", "direction": "ASC"}
        descending = order["direction"] == "DESC"
        if order["field"] == "UPDATED_AT":
            # Stable: ties keep creation order, as the forge's answers were seen to.
            rows.sort(key=lambda pr: str(pr.get("updated_at")), reverse=descending)
        elif descending:
            rows.reverse()
        return connection(rows, lambda pr: self.pull_object(repo, pr), **page)

    def pull_request(self, repo: RepoState, number: int) -> dict[str, Any]:
        pr = repo.prs.get(number)
        if pr is None:
            raise GraphQLError(
                f"Could not resolve to a PullRequest with the number of {number}.",
                extensions={"type": "NOT_FOUND"},
            )
        return self.pull_object(repo, pr)

    def pull_object(self, repo: RepoState, pr: dict[str, Any]) -> dict[str, Any]:
        number = int(pr["number"])
        head_sha = str(pr["head"]["sha"])
        merged = bool(pr.get("merged"))
        state = _pr_state(pr)
        head_ref = None
        if pr["head"].get("repo") is not None:
            head_ref = {
                "__typename": "Ref",
                "name": pr["head"]["ref"],
                "prefix": "refs/heads/",
                "target": self.commit(repo, head_sha),
            }
        return {
            "__typename": "PullRequest",
            "number": number,
            "title": pr.get("title", ""),
            "state": state,
            "isDraft": bool(pr.get("draft")),
            "headRefName": pr["head"]["ref"],
            "headRefOid": head_sha,
            "baseRefName": pr["base"]["ref"],
            "updatedAt": pr.get("updated_at"),
            "merged": merged,
            "mergedAt": pr.get("merged_at"),
            "closedAt": pr.get("closed_at", pr.get("updated_at")) if state != "OPEN" else None,
            "mergeCommit": self.commit(repo, pr["merge_commit_sha"]) if merged else None,
            "mergedBy": _user(pr.get("_merged_by")) if merged else None,
            "headRef": head_ref,
            "headRepository": (
                {"__typename": "Repository", "nameWithOwner": pr["head"]["repo"]["full_name"]}
                if pr["head"].get("repo") is not None
                else None
            ),
            "baseRefOid": repo.branches.get(pr["base"]["ref"], pr["base"].get("sha")),
            "baseRef": lambda info: self.ref(repo, str(pr["base"]["ref"])),
            "mergeStateStatus": lambda info: _merge_state(pr),
            "commits": lambda info, **args: connection(
                _pr_commits(repo, pr),
                lambda sha: {"__typename": "PullRequestCommit", "commit": self.commit(repo, sha)},
                **args,
            ),
            "reviews": _connect(lambda: pr.get("_reviews", []), lambda r: self.review(repo, r)),
            "reviewDecision": pr.get("_review_decision"),
            "reviewRequests": _connect(lambda: pr.get("_review_requests", []), self.review_request),
            "reviewThreads": _connect(
                lambda: list(enumerate(repo.review_threads.get(number, []))),
                lambda it: self.thread(repo, number, it[0], it[1]),
            ),
            "timelineItems": lambda info, itemTypes=None, **args: connection(
                self.timeline(repo, number, itemTypes), **args
            ),
        }

    def review(self, repo: RepoState, review: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "__typename": "PullRequestReview",
            "fullDatabaseId": str(review["id"]),
            "databaseId": review["id"],
            "author": _user(review.get("user")),
            "state": review["state"],
            "submittedAt": review.get("submitted_at"),
            "authorCanPushToRepository": bool(review.get("can_push", True)),
            "commit": self.commit(repo, review["commit_id"]) if review.get("commit_id") else None,
        }

    def review_request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        reviewer: dict[str, Any] | None
        if "team" in request:
            org, _, slug = str(request["team"]).partition("/")
            reviewer = {
                "__typename": "Team",
                "slug": slug,
                "name": slug,
                "combinedSlug": f"{org}/{slug}",
            }
        elif request.get("login") is not None:
            reviewer = _user(str(request["login"]))
        else:
            reviewer = None
        return {
            "__typename": "ReviewRequest",
            "asCodeOwner": bool(request.get("as_code_owner")),
            "requestedReviewer": reviewer,
        }

    def thread(
        self, repo: RepoState, number: int, index: int, thread: Mapping[str, Any]
    ) -> dict[str, Any]:
        key = f"{repo.full_name}#{number}#{index}".encode()
        comments = [
            {
                "__typename": "PullRequestReviewComment",
                "fullDatabaseId": str(c["id"]),
                "databaseId": c["id"],
                "author": _user(c.get("user")),
                "authorAssociation": c.get("author_association", "NONE"),
                "path": c.get("path", ""),
                "line": c.get("line"),
                "body": c.get("body", ""),
            }
            for c in thread.get("comments", [])
        ]
        first = thread.get("comments") or [{}]
        return {
            "__typename": "PullRequestReviewThread",
            "id": "PRRT_" + base64.urlsafe_b64encode(key).decode(),
            "isResolved": bool(thread.get("resolved")),
            "path": first[0].get("path", ""),
            "line": first[0].get("line"),
            "comments": _connect(lambda: comments),
        }

    def timeline(
        self, repo: RepoState, number: int, item_types: Sequence[str] | None
    ) -> list[dict[str, Any]]:
        if item_types is not None and "HEAD_REF_FORCE_PUSHED_EVENT" not in item_types:
            return []
        return [
            {
                "__typename": "HeadRefForcePushedEvent",
                "beforeCommit": self.commit(repo, before) if before else None,
                "afterCommit": self.commit(repo, after),
            }
            for before, after in repo.force_pushes.get(number, [])
        ]

    # -- git objects -------------------------------------------------------------------------

    def ref(self, repo: RepoState, qualified: str) -> dict[str, Any] | None:
        branch = qualified.removeprefix("refs/heads/")
        tip = repo.branches.get(branch)
        if tip is None:
            return None
        return {
            "__typename": "Ref",
            "name": branch,
            "prefix": "refs/heads/",
            "target": self.commit(repo, tip),
            "rules": _connect(lambda: repo.rulesets.get(branch, []), _rule),
        }

    def object(self, repo: RepoState, oid: str | None) -> dict[str, Any] | None:
        if oid is None:
            return None
        known = (
            oid in repo.commits
            or any(pr["head"]["sha"] == oid for pr in repo.prs.values())
            or any(run["head_sha"] == oid for run in repo.check_runs)
        )
        return self.commit(repo, oid) if known else None

    def commit(self, repo: RepoState, sha: str) -> dict[str, Any]:
        _parents, message, date = repo.commits.get(sha, ((), "", "2024-01-01T00:00:00Z"))
        author, committer = repo.commit_users.get(sha, (None, None))
        return {
            "__typename": "Commit",
            "oid": sha,
            "author": {"__typename": "GitActor", "user": _user(author), "date": date},
            "committer": {"__typename": "GitActor", "user": _user(committer), "date": date},
            "message": message,
            "messageHeadline": message.splitlines()[0] if message else "",
            "committedDate": date,
            "statusCheckRollup": lambda info: self.rollup(repo, sha),
            "checkSuites": _connect(lambda: self.suites(repo, sha)),
            "history": lambda info, since=None, **args: connection(
                self.history(repo, sha, since), lambda s: self.commit(repo, s), **args
            ),
        }

    def history(self, repo: RepoState, tip: str, since: str | None) -> list[str]:
        ancestry = ancestors(repo, tip)
        known = [s for s in ancestry if s in repo.commits]
        if since:
            known = [s for s in known if repo.commits[s][2] >= since]
        known.sort(key=lambda s: (repo.commits[s][2], -ancestry[s]), reverse=True)
        return known

    def suites(self, repo: RepoState, sha: str) -> list[dict[str, Any]]:
        """One check suite per app that ran checks on `sha` (the forge's app-per-suite shape)."""
        by_app: dict[int, list[dict[str, Any]]] = {}
        for run in repo.check_runs:
            if run["head_sha"] == sha:
                by_app.setdefault(int(run["app"]["id"]), []).append(run)
        return [
            {
                "__typename": "CheckSuite",
                "app": {"__typename": "App", "databaseId": app_id},
                "checkRuns": lambda info, filterBy=None, runs=runs, **args: connection(
                    _filter_runs(runs, filterBy), _check_run, **args
                ),
            }
            for app_id, runs in by_app.items()
        ]

    def rollup(self, repo: RepoState, sha: str) -> dict[str, Any] | None:
        latest: dict[tuple[str, int], dict[str, Any]] = {}
        for run in repo.check_runs:
            if run["head_sha"] == sha:
                latest[(run["name"], run["app"]["id"])] = run
        nodes: list[dict[str, Any]] = [
            {
                "__typename": "CheckRun",
                "databaseId": run["id"],
                "name": run["name"],
                "status": _upper(run["status"]),
                "conclusion": _upper(run.get("conclusion")),
                "completedAt": run.get("completed_at"),
            }
            for run in latest.values()
        ]
        nodes += [
            {
                "__typename": "StatusContext",
                "context": status["context"],
                "state": _upper(status["state"]),
                "createdAt": status.get("created_at") or "2024-01-01T00:00:00Z",
            }
            for status in latest_statuses(repo.statuses.get(sha, []))
        ]
        if not nodes:
            return None
        return {"__typename": "StatusCheckRollup", "contexts": _connect(lambda: nodes)}


def _merge_state(pr: dict[str, Any]) -> str:
    # GraphQL's mergeStateStatus is REST's mergeable_state in capitals; a scripted sequence
    # (`_mergeable_states`) moves on with every read, as the REST PR read does.
    states = pr.get("_mergeable_states")
    if states:
        pr["mergeable_state"] = states.pop(0) if len(states) > 1 else states[0]
    return str(pr["mergeable_state"]).upper()


def _pr_commits(repo: RepoState, pr: Mapping[str, Any]) -> list[str]:
    """The PR's commits oldest first, ending at its head (as the forge lists them)."""
    head = str(pr["head"]["sha"])
    listed = [c for c in repo.pr_commits.get(int(pr["number"]), []) if c != head]
    return [*listed, head]


def _rule(rule: Mapping[str, Any]) -> dict[str, Any]:
    """A REST branch rule as GraphQL's RepositoryRule (status checks and pull_request modelled)."""
    params = rule.get("parameters") or {}
    parameters = None
    if rule["type"] == "pull_request":
        parameters = {
            "__typename": "PullRequestParameters",
            "requiredApprovingReviewCount": params["required_approving_review_count"],
            "requireCodeOwnerReview": params["require_code_owner_review"],
            "requireLastPushApproval": params["require_last_push_approval"],
            "dismissStaleReviewsOnPush": params["dismiss_stale_reviews_on_push"],
            "requiredReviewThreadResolution": params["required_review_thread_resolution"],
            "allowedMergeMethods": params.get("allowed_merge_methods"),
        }
    elif rule["type"] == "required_status_checks":
        parameters = {
            "__typename": "RequiredStatusChecksParameters",
            "strictRequiredStatusChecksPolicy": bool(
                params.get("strict_required_status_checks_policy", False)
            ),
            "doNotEnforceOnCreate": bool(params.get("do_not_enforce_on_create", False)),
            "requiredStatusChecks": [
                {"context": c["context"], "integrationId": c.get("integration_id")}
                for c in params.get("required_status_checks", [])
            ],
        }
    return {
        "__typename": "RepositoryRule",
        "type": str(rule["type"]).upper(),
        "parameters": parameters,
    }


def _filter_runs(
    runs: Sequence[Mapping[str, Any]], filter_by: Mapping[str, Any] | None
) -> list[Mapping[str, Any]]:
    # GitHub's default (and LATEST) keeps the latest run per name; ALL keeps superseded ones too.
    rows = sorted(runs, key=lambda r: int(r["id"]))
    if (filter_by or {}).get("checkType") == "ALL":
        return rows
    latest: dict[str, Mapping[str, Any]] = {}
    for run in rows:
        latest[str(run["name"])] = run
    return list(latest.values())


def _check_run(run: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "__typename": "CheckRun",
        "databaseId": run["id"],
        "name": run["name"],
        "status": _upper(run["status"]),
        "conclusion": _upper(run.get("conclusion")),
        "startedAt": run.get("started_at"),
        "completedAt": run.get("completed_at"),
        "detailsUrl": run.get("details_url"),
        "externalId": run.get("external_id"),
    }


def _pr_state(pr: Mapping[str, Any]) -> str:
    if pr.get("merged"):
        return "MERGED"
    return "OPEN" if pr["state"] == "open" else "CLOSED"
