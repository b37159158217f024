"""Reading the backstop snapshot's GraphQL answers (`graphql.BACKSTOP_QUERY` and its follow-ups).

The records `read_backstop_snapshot` returns and the readers that build them from one page: a
connection's nodes and pageInfo, an open PR (its reviews and rollup contexts already followed
by the flow), a done PR, a rollup context, a review, a history commit, and each answer's rate
limit and repository. Pure: nothing is sent or read here; `_backstop` pages through the
transport and keeps the caps. A page without nodes or pageInfo, or one saying there is more
without a cursor, is ForgeCliError kind `malformed`: a cut range would read as "those PRs are
gone". Nodes are read through `failures.parsed` over `shape`'s field checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .._errors import ForgeCliError
from .._records import (
    CHECK_CONCLUSIONS,
    CHECK_STATUSES,
    REVIEW_STATES,
    STATUS_STATES,
    CheckRunConclusion,
    CheckStatus,
    ReviewStateName,
    StatusState,
)
from . import shape
from .failures import graphql_failure, parsed

__all__ = [
    "BackstopCheck",
    "BackstopDonePr",
    "BackstopOpenPr",
    "BackstopReview",
    "BackstopStatus",
    "Limit",
    "answer_repository",
    "commit_from_graphql",
    "connection",
    "done_pr_from_graphql",
    "done_updated_at",
    "history_of",
    "next_cursor",
    "open_pr_from_graphql",
    "open_pr_parts",
    "page",
]

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
class Limit:
    """What one answer's `rateLimit` says."""

    cost: int
    remaining: int
    reset_at: str


def answer_repository(answer: object, repo: str) -> tuple[Mapping[str, Any], Limit | None]:
    """Return an answer's `repository` object and its `rateLimit`, or raise its failure.

    An `errors` entry is the failure `graphql_failure` names; no `data` object is `malformed`;
    no repository is `not-found`.
    """
    failure = graphql_failure(answer)
    if failure is not None:
        raise failure
    assert isinstance(answer, Mapping)  # graphql_failure refuses anything else
    data = answer.get("data")
    if not isinstance(data, Mapping):
        raise ForgeCliError("GraphQL answered no data", kind="malformed")
    read = parsed("a rate limit", data, _limit)
    repository = data.get("repository")
    if not isinstance(repository, Mapping):
        raise ForgeCliError(f"repository {repo} not found", kind="not-found")
    return repository, read


def _date_time(value: object) -> str:
    """Return a GraphQL DateTime (an ISO 8601 string); anything else raises (`malformed`)."""
    text = shape.as_str(value)
    datetime.fromisoformat(text.replace("Z", "+00:00"))  # ValueError
    return text


def _limit(data: Mapping[str, Any]) -> Limit | None:
    # Every document selects `rateLimit { cost remaining resetAt }`: all three are non-null in
    # the schema, the object itself nullable (None). Left out or mis-typed is malformed.
    limit = data["rateLimit"]
    if limit is None:
        return None
    limit = shape.as_obj(limit)
    return Limit(
        cost=shape.as_int(limit["cost"]),
        remaining=shape.as_int(limit["remaining"]),
        reset_at=_date_time(limit["resetAt"]),
    )


def connection(parent: object, path: tuple[str, ...], range_name: str) -> Mapping[str, Any]:
    """Return the object at `path` under `parent`; anything else is `malformed`."""
    node = parent
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        raise ForgeCliError(f"GraphQL answer lacks the {range_name} range", kind="malformed")
    return node


def page(range_name: str, connection: object) -> tuple[list[Any], Mapping[str, Any]]:
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


def next_cursor(range_name: str, info: Mapping[str, Any]) -> str | None:
    """Return the cursor of a range's next page, None when `info` says it is the last.

    More pages without a cursor: the rest cannot be asked for, never "done" (`malformed`).
    """
    if not info.get("hasNextPage"):
        return None
    cursor = info.get("endCursor")
    if not isinstance(cursor, str) or not cursor:
        raise ForgeCliError(
            f"GraphQL said {range_name} has more pages but gave no cursor", kind="malformed"
        )
    return cursor


def _lower(value: object) -> object:
    # GraphQL shouts its enums; the records carry the REST spelling (checked by the caller).
    return value.lower() if isinstance(value, str) else value


def _context(node: Mapping[str, Any]) -> BackstopCheck | BackstopStatus | None:
    kind = shape.as_str(node["__typename"])  # left out: malformed, never "another kind"
    if kind == "CheckRun":
        return BackstopCheck(
            database_id=shape.opt_int(node["databaseId"]),
            name=shape.as_str(node["name"]),
            status=shape.one_of(_lower(node["status"]), CHECK_STATUSES),
            conclusion=shape.opt_one_of(_lower(node["conclusion"]), CHECK_CONCLUSIONS),
            completed_at=shape.opt_str(node["completedAt"]),
        )
    if kind == "StatusContext":
        return BackstopStatus(
            context=shape.as_str(node["context"]),
            state=shape.one_of(_lower(node["state"]), _ROLLUP_STATES),
            created_at=shape.as_str(node["createdAt"]),
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
        database_id=_big_int(node["fullDatabaseId"]),
        author=shape.login(node["author"]),
        state=shape.one_of(node["state"], REVIEW_STATES),
        submitted_at=shape.opt_str(node["submittedAt"]),
        commit_sha=shape.oid(node["commit"]),
    )


def open_pr_parts(
    node: Mapping[str, Any],
) -> tuple[int, Mapping[str, Any], str | None, Mapping[str, Any] | None]:
    """Return an open PR node's number, reviews page, head oid and rollup contexts page.

    The head oid and contexts page are None when the head branch is gone (`headRef` or its
    `target` null), the contexts page also when the head has no rollup (nothing reported yet).
    Each of those keys left out, or a head commit without its oid, is `malformed`.
    """

    def read(n: Any) -> tuple[int, Mapping[str, Any], str | None, Mapping[str, Any] | None]:
        head_ref = shape.as_obj(n)["headRef"]
        target = None if head_ref is None else shape.as_obj(head_ref)["target"]
        if target is None:
            return shape.as_int(n["number"]), shape.opt_obj(n["reviews"]), None, None
        rollup = shape.as_obj(target)["statusCheckRollup"]
        contexts = None if rollup is None else shape.opt_obj(shape.as_obj(rollup)["contexts"])
        return (
            shape.as_int(n["number"]),
            shape.opt_obj(n["reviews"]),
            shape.as_str(target["oid"]),
            contexts,
        )

    return parsed("an open PR", node, read)


def open_pr_from_graphql(
    node: Mapping[str, Any], contexts: list[Any], reviews: list[Any]
) -> BackstopOpenPr:
    """Return the open PR `node` describes, with every context and review node of its ranges."""
    read = (parsed("a rollup context", n, _context) for n in contexts if n)
    checks = tuple(c for c in read if c is not None)
    return parsed(
        "an open PR",
        node,
        lambda n: BackstopOpenPr(
            number=shape.as_int(n["number"]),
            draft=shape.as_bool(n["isDraft"]),
            head_ref=shape.as_str(n["headRefName"]),
            head_sha=shape.as_str(n["headRefOid"]),
            base_ref=shape.as_str(n["baseRefName"]),
            updated_at=shape.as_str(n["updatedAt"]),
            contexts=checks,
            reviews=tuple(parsed("a review", r, _review) for r in reviews if r),
        ),
    )


def done_updated_at(node: Mapping[str, Any]) -> str:
    """Return a done PR node's `updatedAt`, an ISO 8601 time (`malformed` when it is not one)."""

    return parsed("a done PR", node, lambda n: _date_time(shape.as_obj(n)["updatedAt"]))


def _done_pr(node: Mapping[str, Any]) -> BackstopDonePr:
    return BackstopDonePr(
        number=shape.as_int(node["number"]),
        state=shape.one_of(_lower(node["state"]), _DONE_STATES),
        merged=shape.as_bool(node["merged"]),
        merged_at=shape.opt_str(node["mergedAt"]),
        closed_at=shape.opt_str(node["closedAt"]),
        updated_at=shape.as_str(node["updatedAt"]),
        head_sha=shape.as_str(node["headRefOid"]),
        merge_sha=shape.oid(node["mergeCommit"]),
        merged_by=shape.login(node["mergedBy"]),
    )


def done_pr_from_graphql(node: Mapping[str, Any]) -> BackstopDonePr:
    """Return the merged or closed PR `node` describes (`malformed` when unreadable)."""
    return parsed("a done PR", node, _done_pr)


def history_of(repository: Mapping[str, Any]) -> tuple[str, object] | None:
    """Return the `main` branch's tip oid and its history page (checked by `page`); None when
    there is no such branch (`main: null`). `main` left out, or a ref without a target commit
    and its oid, is `malformed`: never read as an empty branch."""

    def read(r: Any) -> tuple[str, object] | None:
        ref = shape.as_obj(r)["main"]
        if ref is None:
            return None
        target = shape.as_obj(shape.as_obj(ref)["target"])
        return shape.as_str(target["oid"]), target["history"]

    return parsed("a branch", repository, read)


def commit_from_graphql(node: Mapping[str, Any]) -> tuple[str, str, str]:
    """Return a history node as (sha, headline, committed date)."""
    return parsed(
        "a history commit",
        node,
        lambda n: (
            shape.as_str(n["oid"]),
            shape.as_str(n["messageHeadline"]),
            shape.as_str(n["committedDate"]),
        ),
    )
