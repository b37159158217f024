"""read_backstop_snapshot: a whole repository in one GraphQL document, paged range by range.

One document asks for three ranges at once: the open PRs (with each head commit's rollup contexts
and each PR's reviews), the recently done PRs, and the branch history. A later page re-sends the
same document with only the ranges that still have pages (`@include` flags) and their cursors; a
contexts or reviews connection that has more than its inline page is re-read for that commit or PR
with a small follow-up document. Every range is read whole or the read fails with
BackstopTruncated: a partial snapshot would read as "that PR is gone".

Cost (GitHub's documented formula): a connection costs one request per node its parents may
return, so one full page is 1 (open PRs) + 100 x 2 (reviews and contexts under each of 100 open
PRs) + 1 (done PRs) + 1 (history) = 203 requests, and points are requests / 100 rounded: 2.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from ._constants import BACKSTOP_CAPS, DONE_OVERLAP_MS, BackstopCaps
from ._errors import BackstopTruncated, ForgeCliError
from ._exec import GhExec
from ._gh import DEFAULT_TIMEOUT, gh_call, graphql_args, run_gh
from ._github.failures import graphql_failure, parsed
from ._github.graphql import (
    BACKSTOP_CONTEXTS_QUERY,
    BACKSTOP_QUERY,
    BACKSTOP_REVIEWS_QUERY,
    OPEN_PAGE,
)
from ._github.shape import _one_of, _opt_one_of
from ._records import (
    CHECK_CONCLUSIONS,
    CHECK_STATUSES,
    REVIEW_STATES,
    STATUS_STATES,
    CheckRunConclusion,
    CheckStatus,
    ReviewStateName,
    StatusState,
)
from ._validate import validate_branch, validate_repo, validate_sha, validate_since

__all__ = [
    "BackstopCheck",
    "BackstopDonePr",
    "BackstopMain",
    "BackstopOpenPr",
    "BackstopRateLimit",
    "BackstopReview",
    "BackstopSnapshot",
    "BackstopStatus",
    "GraphqlApi",
    "gh_graphql_api",
    "graphql_points",
    "read_backstop_snapshot",
    "snapshot_requests",
]

# A transport: send one GraphQL document with its variables, return the whole JSON answer
# (`data` and `errors` both), so errors beside data are never lost on the way.
GraphqlApi: TypeAlias = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]

# GraphQL's StatusState, lower-cased: a posted status's states, and `expected`, the rollup's word
# for a required context nobody has reported yet. A done PR is `merged` or `closed` (the range
# asks for no other).
_ROLLUP_STATES: frozenset[StatusState | Literal["expected"]] = frozenset(
    {*STATUS_STATES, "expected"}
)
_DONE_STATES: frozenset[Literal["merged", "closed"]] = frozenset({"merged", "closed"})


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopCheck:
    """A check run in a head commit's rollup."""

    kind: Literal["check"] = "check"
    database_id: int | None
    name: str
    status: CheckStatus
    conclusion: CheckRunConclusion | None
    completed_at: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopStatus:
    """A commit status in a head commit's rollup."""

    kind: Literal["status"] = "status"
    context: str
    state: StatusState | Literal["expected"]
    created_at: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopReview:
    """One review on an open PR."""

    database_id: int | None
    author: str | None
    state: ReviewStateName
    submitted_at: str | None
    commit_sha: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopOpenPr:
    """An open PR, its head commit's rollup contexts and its reviews (oldest first)."""

    number: int
    draft: bool
    head_ref: str
    head_sha: str
    base_ref: str
    updated_at: str | None
    contexts: tuple[BackstopCheck | BackstopStatus, ...]
    reviews: tuple[BackstopReview, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopDonePr:
    """A merged or closed PR; `merged_by` is the merger's login."""

    number: int
    state: Literal["merged", "closed"]
    merged: bool
    merged_at: str | None
    closed_at: str | None
    updated_at: str
    head_sha: str | None
    merge_sha: str | None
    merged_by: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopMain:
    """The branch tip and its commits since `since`, newest first, stopped before the cursor."""

    tip: str | None
    commits: tuple[tuple[str, str, str], ...] = ()  # (sha, headline, committed date)


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopRateLimit:
    """Points spent over every document sent, and the budget the last answer reported."""

    cost: int
    remaining: int | None
    reset_at: str | None
    queries: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BackstopSnapshot:
    """One reconciler read of a repository."""

    open: tuple[BackstopOpenPr, ...]
    done: tuple[BackstopDonePr, ...]
    main: BackstopMain
    rate_limit: BackstopRateLimit


def snapshot_requests(
    *,
    open: bool = True,
    done: bool = True,
    main: bool = True,
    open_page: int = OPEN_PAGE,
) -> int:
    """Return the GraphQL request count of one snapshot page with the given ranges included.

    Each connection costs one request per node its parent connections may return: the open PR
    connection 1, its reviews and rollup contexts `open_page` each, the done PRs 1, the history 1.
    """
    total = 0
    if open:
        total += 1 + 2 * open_page
    if done:
        total += 1
    if main:
        total += 1
    return total


def graphql_points(requests: int) -> int:
    """Return the rate-limit points of a document costing `requests` (requests / 100, rounded)."""
    if requests < 0:
        raise ValueError("requests must be >= 0")
    # GitHub rounds half up; Python's round() would round 250 to 2 (banker's rounding).
    return max(1, (requests + 50) // 100)


def gh_graphql_api(
    exec: GhExec | None = None, *, timeout: float | None = DEFAULT_TIMEOUT
) -> GraphqlApi:
    """Return a GraphqlApi that posts each document through `gh api graphql --input -`."""
    runner = exec or run_gh

    def call(query: str, variables: Mapping[str, Any]) -> Mapping[str, Any]:
        body = json.dumps({"query": query, "variables": dict(variables)}).encode()
        # gh exits 1 when the answer holds `errors`, yet prints HTTP 200: the body says what.
        response = gh_call(runner, graphql_args(), input=body, read=True, timeout=timeout)
        data = response.json()
        if not isinstance(data, Mapping):
            failure = graphql_failure(data, response.status)
            assert failure is not None  # anything but an object is a failure
            raise failure
        return data

    return call


def _ms_of(value: int | float | str | datetime) -> int:
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)
    if isinstance(value, str):
        return _ms_of(datetime.fromisoformat(value.replace("Z", "+00:00")))
    return int(value)


@dataclass(slots=True)
class _Range:
    name: str
    cap: int
    pages: int = 0
    cursor: str | None = None
    paging: bool = True


@dataclass(slots=True)
class _Reader:
    api: GraphqlApi
    owner: str
    name: str
    caps: BackstopCaps
    cost: int = 0
    queries: int = 0
    remaining: int | None = None
    reset_at: str | None = None

    def send(self, query: str, variables: Mapping[str, Any]) -> Mapping[str, Any]:
        answer: object = self.api(query, {"owner": self.owner, "name": self.name, **variables})
        self.queries += 1
        failure = graphql_failure(answer)
        if failure is not None:
            raise failure
        assert isinstance(answer, Mapping)  # graphql_failure refuses anything else
        data = answer.get("data")
        if not isinstance(data, Mapping):
            raise ForgeCliError("GraphQL answered no data", kind="malformed")
        limit = data.get("rateLimit")
        if isinstance(limit, Mapping):
            self.cost += int(limit.get("cost") or 0)
            self.remaining = limit.get("remaining")
            self.reset_at = limit.get("resetAt")
        repository = data.get("repository")
        if not isinstance(repository, Mapping):
            raise ForgeCliError(f"repository {self.owner}/{self.name} not found", kind="not-found")
        return repository

    def follow(
        self,
        range_name: str,
        cap: int,
        connection: Mapping[str, Any],
        fetch: Callable[[str], Mapping[str, Any]],
    ) -> list[Any]:
        """Return every node of `connection`, re-reading its later pages through `fetch`."""
        nodes, info = _page(range_name, connection)
        for _ in range(cap):
            if not info.get("hasNextPage"):
                return nodes
            cursor = info.get("endCursor")
            if not isinstance(cursor, str) or not cursor:
                # More pages without a cursor: the rest cannot be asked for, never "done".
                raise ForgeCliError(
                    f"GraphQL said {range_name} has more pages but gave no cursor",
                    kind="malformed",
                )
            more, info = _page(range_name, fetch(cursor))
            nodes.extend(more)
        if info.get("hasNextPage"):
            raise BackstopTruncated(range=range_name, cap=cap)
        return nodes


def _page(range_name: str, connection: object) -> tuple[list[Any], Mapping[str, Any]]:
    """Return a connection page's nodes and pageInfo; an answer without them is malformed.

    A page with no `nodes` list or no `pageInfo.hasNextPage` cannot say the range is whole, and
    a partial range would read as "those PRs are gone".
    """
    nodes = connection.get("nodes") if isinstance(connection, Mapping) else None
    info = connection.get("pageInfo") if isinstance(connection, Mapping) else None
    if (
        not isinstance(nodes, list)
        or not isinstance(info, Mapping)
        or not isinstance(info.get("hasNextPage"), bool)
    ):
        raise ForgeCliError(
            f"GraphQL answered a {range_name} page without nodes or pageInfo", kind="malformed"
        )
    return list(nodes), info


def _lower(value: object) -> object:
    # GraphQL shouts its enums; the records carry the REST spelling (checked by the caller).
    return value.lower() if isinstance(value, str) else value


def _context(node: Mapping[str, Any]) -> BackstopCheck | BackstopStatus | None:
    kind = node.get("__typename")
    if kind == "CheckRun":
        return BackstopCheck(
            database_id=node.get("databaseId"),
            name=str(node.get("name", "")),
            status=_one_of(_lower(node.get("status")), CHECK_STATUSES),
            conclusion=_opt_one_of(_lower(node.get("conclusion")), CHECK_CONCLUSIONS),
            completed_at=node.get("completedAt"),
        )
    if kind == "StatusContext":
        return BackstopStatus(
            context=str(node.get("context", "")),
            state=_one_of(_lower(node.get("state")), _ROLLUP_STATES),
            created_at=node.get("createdAt"),
        )
    return None


def _big_int(value: object) -> int | None:
    """Return a GraphQL BigInt (GitHub sends it as a decimal string) as an int, None if absent."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.lstrip("-").isdigit():
        return int(value)
    raise ForgeCliError("GraphQL answered a malformed BigInt id", kind="malformed")


def _review(node: Mapping[str, Any]) -> BackstopReview:
    return BackstopReview(
        database_id=_big_int(node.get("fullDatabaseId")),
        author=(node.get("author") or {}).get("login"),
        state=_one_of(node.get("state"), REVIEW_STATES),
        submitted_at=node.get("submittedAt"),
        commit_sha=(node.get("commit") or {}).get("oid"),
    )


def _open_pr(reader: _Reader, node: Mapping[str, Any]) -> BackstopOpenPr:
    number = int(node["number"])
    reviews = reader.follow(
        "reviews",
        reader.caps.reviews,
        node.get("reviews") or {},
        lambda after: reader.send(BACKSTOP_REVIEWS_QUERY, {"number": number, "after": after})[
            "pullRequest"
        ]["reviews"],
    )
    target = (node.get("headRef") or {}).get("target") or {}
    rollup = target.get("statusCheckRollup") or {}
    oid = target.get("oid")
    contexts: list[Any] = []
    if rollup:
        contexts = reader.follow(
            "contexts",
            reader.caps.contexts,
            rollup.get("contexts") or {},
            lambda after: reader.send(BACKSTOP_CONTEXTS_QUERY, {"oid": oid, "after": after})[
                "object"
            ]["statusCheckRollup"]["contexts"],
        )
    read = (parsed("a rollup context", n, _context) for n in contexts if n)
    checks = tuple(c for c in read if c is not None)
    return BackstopOpenPr(
        number=number,
        draft=bool(node.get("isDraft")),
        head_ref=str(node.get("headRefName", "")),
        head_sha=str(node.get("headRefOid", "")),
        base_ref=str(node.get("baseRefName", "")),
        updated_at=node.get("updatedAt"),
        contexts=checks,
        reviews=tuple(parsed("a review", r, _review) for r in reviews if r),
    )


def read_backstop_snapshot(
    api: GraphqlApi,
    *,
    repo: str,
    branch: str,
    since: str,
    main_cursor: str | None,
    done_since: int | float | str | datetime,
    caps: BackstopCaps = BACKSTOP_CAPS,
) -> BackstopSnapshot:
    """Read open PRs, recently done PRs and the branch history of `repo` whole, in one document.

    `done_since` is epoch milliseconds (or an ISO timestamp); done PRs are read newest first until
    one was updated before `done_since - DONE_OVERLAP_MS`. `main_cursor` is the last tip already
    seen: the history stops before it. Raises BackstopTruncated when a range needs a page past
    its cap, and ForgeCliError on any GraphQL `errors` entry.
    """
    validate_repo(repo)
    validate_branch(branch)
    validate_since(since)
    if main_cursor is not None:
        validate_sha(main_cursor, "main_cursor")
    cutoff_ms = _ms_of(done_since) - DONE_OVERLAP_MS
    owner, name = repo.split("/", 1)
    reader = _Reader(api=api, owner=owner, name=name, caps=caps)
    ranges = {
        "open": _Range("open", caps.open),
        "done": _Range("done", caps.done),
        "main": _Range("main", caps.main),
    }
    open_prs: list[BackstopOpenPr] = []
    done_prs: list[BackstopDonePr] = []
    tip: str | None = None
    history: list[tuple[str, str, str]] = []
    qualified = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
    # Bounded: each round moves at least one range one page on, and every range has a cap.
    for _ in range(caps.open + caps.done + caps.main + 1):
        active = [r for r in ranges.values() if r.paging]
        if not active:
            break
        for r in active:
            if r.pages >= r.cap:
                raise BackstopTruncated(range=r.name, cap=r.cap)
            r.pages += 1
        variables = {
            "branch": qualified,
            "since": since,
            "withOpen": ranges["open"].paging,
            "openAfter": ranges["open"].cursor,
            "withDone": ranges["done"].paging,
            "doneAfter": ranges["done"].cursor,
            "withMain": ranges["main"].paging,
            "mainAfter": ranges["main"].cursor,
        }
        repository = reader.send(BACKSTOP_QUERY, variables)
        if ranges["open"].paging:
            nodes, info = _page("open", _connection(repository, "open"))
            for node in nodes:
                if node:
                    open_prs.append(_open_pr(reader, node))
            _advance(ranges["open"], info)
        if ranges["done"].paging:
            nodes, info = _page("done", _connection(repository, "done"))
            reached = False
            for node in nodes:
                if not node:
                    continue
                updated = str(node.get("updatedAt") or "")
                if not updated or _ms_of(updated) < cutoff_ms:
                    reached = True
                    break
                done_prs.append(parsed("a done PR", node, _done_pr))
            _advance(ranges["done"], info, stop=reached)
        if ranges["main"].paging:
            ref = repository.get("main")
            if not isinstance(ref, Mapping):
                # No such branch: nothing to read, and nothing truncated.
                ranges["main"].paging = False
                continue
            target = ref.get("target") or {}
            if tip is None:
                tip = target.get("oid")
            nodes, info = _page("main", target.get("history"))
            reached = False
            for node in nodes:
                sha = str(node.get("oid", ""))
                if main_cursor is not None and sha == main_cursor:
                    reached = True
                    break
                history.append(
                    (sha, str(node.get("messageHeadline", "")), str(node.get("committedDate", "")))
                )
            _advance(ranges["main"], info, stop=reached)
    rate_limit = BackstopRateLimit(
        cost=reader.cost,
        remaining=reader.remaining,
        reset_at=reader.reset_at,
        queries=reader.queries,
    )
    return BackstopSnapshot(
        open=tuple(open_prs),
        done=tuple(done_prs),
        main=BackstopMain(tip=tip, commits=tuple(history)),
        rate_limit=rate_limit,
    )


def _connection(repository: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    connection = repository.get(key)
    if not isinstance(connection, Mapping):
        raise ForgeCliError(f"GraphQL answer lacks the {key} range", kind="malformed")
    return connection


def _advance(r: _Range, info: Mapping[str, Any], *, stop: bool = False) -> None:
    if stop or not info.get("hasNextPage"):
        r.paging = False
        return
    cursor = info.get("endCursor")
    if not isinstance(cursor, str) or not cursor:
        raise ForgeCliError(
            f"GraphQL said {r.name} has more pages but gave no cursor", kind="malformed"
        )
    r.cursor = str(cursor)


def _done_pr(node: Mapping[str, Any]) -> BackstopDonePr:
    return BackstopDonePr(
        number=int(node["number"]),
        state=_one_of(_lower(node.get("state")), _DONE_STATES),
        merged=bool(node.get("merged")),
        merged_at=node.get("mergedAt"),
        closed_at=node.get("closedAt"),
        updated_at=str(node.get("updatedAt", "")),
        head_sha=node.get("headRefOid"),
        merge_sha=(node.get("mergeCommit") or {}).get("oid"),
        merged_by=(node.get("mergedBy") or {}).get("login"),
    )
