"""Reading review threads with their comments, and a PR's force-pushes, from GraphQL answers.

The answers to `REVIEW_THREADS_QUERY`, `THREAD_COMMENTS_QUERY` and `FORCE_PUSH_QUERY`. A page that
says there is more without a cursor is malformed (`shape._next_cursor`).
"""

from __future__ import annotations

from typing import Any

from .._types import ForcePush, Page, ReviewComment
from . import shape

__all__ = [
    "ThreadPage",
    "force_pushes_from_graphql",
    "review_threads_from_graphql",
    "thread_comments_from_graphql",
]

# One thread of a page: its node id, resolved state, first page of comments and the cursor of
# its next page of comments (None when that was all).
ThreadPage = tuple[str | None, bool, list[ReviewComment], str | None]


def _comments(
    connection: Any, resolved: bool, thread_id: str | None
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
    return items, shape.next_cursor(connection["pageInfo"])


def review_threads_from_graphql(data: Any) -> tuple[list[ThreadPage], str | None]:
    """Return one page of a PR's review threads and the cursor of its next page."""
    threads = data["repository"]["pullRequest"]["reviewThreads"]
    read: list[ThreadPage] = []
    for thread in threads["nodes"]:
        resolved = bool(thread.get("isResolved"))
        thread_id = thread.get("id")
        node_id = None if thread_id is None else str(thread_id)
        items, more = _comments(thread["comments"], resolved, node_id)
        read.append((thread_id, resolved, items, more))
    return read, shape.next_cursor(threads["pageInfo"])


def thread_comments_from_graphql(
    data: Any, resolved: bool, thread_id: str | None
) -> tuple[list[ReviewComment], str | None]:
    """Return a later page of one thread's comments (read by its node id) and the next cursor."""
    return _comments(data["node"]["comments"], resolved, thread_id)


def force_pushes_from_graphql(data: Any) -> Page[ForcePush]:
    """Return a PR's force-pushes; `next_cursor` is set (to "more" without one) when more exist."""
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
