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
from ._errors import BackstopTruncated
from ._exec import GhExec
from ._gh import DEFAULT_TIMEOUT, gh_call, graphql_args, run_gh
from ._github.backstop import (
    BackstopCheck,
    BackstopDonePr,
    BackstopOpenPr,
    BackstopReview,
    BackstopStatus,
    answer_repository,
    commit_from_graphql,
    connection,
    done_pr_from_graphql,
    done_updated_at,
    history_of,
    next_cursor,
    open_pr_from_graphql,
    open_pr_parts,
    page,
)
from ._github.failures import graphql_failure
from ._github.graphql import (
    BACKSTOP_CONTEXTS_QUERY,
    BACKSTOP_QUERY,
    BACKSTOP_REVIEWS_QUERY,
    OPEN_PAGE,
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
        repository, limit = answer_repository(answer, f"{self.owner}/{self.name}")
        if limit is not None:
            self.cost += limit.cost
            self.remaining = limit.remaining
            self.reset_at = limit.reset_at
        return repository

    def follow(
        self,
        range_name: str,
        cap: int,
        first: Mapping[str, Any],
        fetch: Callable[[str], Mapping[str, Any]],
    ) -> list[Any]:
        """Return every node of the page `first`, re-reading later pages through `fetch`."""
        nodes, info = page(range_name, first)
        for _ in range(cap):
            cursor = next_cursor(range_name, info)
            if cursor is None:
                return nodes
            more, info = page(range_name, fetch(cursor))
            nodes.extend(more)
        if info.get("hasNextPage"):
            raise BackstopTruncated(range=range_name, cap=cap)
        return nodes

    def follow_up(
        self,
        range_name: Literal["reviews", "contexts"],
        first: Mapping[str, Any],
        query: str,
        variables: Mapping[str, Any],
        path: tuple[str, ...],
    ) -> list[Any]:
        """Return every node of `first`, its later pages read with `query` at `path`."""

        def fetch(after: str) -> Mapping[str, Any]:
            repository = self.send(query, {**variables, "after": after})
            return connection(repository, path, range_name)

        return self.follow(range_name, getattr(self.caps, range_name), first, fetch)


# Where each follow-up document's answer holds the connection it re-reads.
REVIEWS_PATH = ("pullRequest", "reviews")
CONTEXTS_PATH = ("object", "statusCheckRollup", "contexts")


def _open_pr(reader: _Reader, node: Mapping[str, Any]) -> BackstopOpenPr:
    number, reviews_page, oid, contexts_page = open_pr_parts(node)
    reviews = reader.follow_up(
        "reviews", reviews_page, BACKSTOP_REVIEWS_QUERY, {"number": number}, REVIEWS_PATH
    )
    contexts: list[Any] = []
    if contexts_page is not None:
        contexts = reader.follow_up(
            "contexts", contexts_page, BACKSTOP_CONTEXTS_QUERY, {"oid": oid}, CONTEXTS_PATH
        )
    return open_pr_from_graphql(node, contexts, reviews)


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
            nodes, info = page("open", connection(repository, ("open",), "open"))
            for node in nodes:
                if node:
                    open_prs.append(_open_pr(reader, node))
            _advance(ranges["open"], info)
        if ranges["done"].paging:
            nodes, info = page("done", connection(repository, ("done",), "done"))
            reached = False
            for node in nodes:
                if not node:
                    continue
                updated = done_updated_at(node)
                if _ms_of(updated) < cutoff_ms:
                    reached = True
                    break
                done_prs.append(done_pr_from_graphql(node))
            _advance(ranges["done"], info, stop=reached)
        if ranges["main"].paging:
            branch_read = history_of(repository)
            if branch_read is None:
                # No such branch: nothing to read, and nothing truncated.
                ranges["main"].paging = False
                continue
            ref_tip, history_page = branch_read
            if tip is None:
                tip = ref_tip
            nodes, info = page("main", history_page)
            reached = False
            for node in nodes:
                commit = commit_from_graphql(node)
                if main_cursor is not None and commit[0] == main_cursor:
                    reached = True
                    break
                history.append(commit)
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


def _advance(r: _Range, info: Mapping[str, Any], *, stop: bool = False) -> None:
    cursor = None if stop else next_cursor(r.name, info)
    if cursor is None:
        r.paging = False
    else:
        r.cursor = cursor
