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
    # Every field the fragment selects must be there (an absent one is malformed, never a
    # default); `author` and `line` may be null. The BigInt id comes as a decimal string.
    items = [
        ReviewComment(
            id=int(shape.as_str(shape.as_obj(c)["fullDatabaseId"])),
            author=shape.login(c["author"]),
            author_association=shape.as_str(c["authorAssociation"]),
            path=shape.as_str(c["path"]),
            line=shape.opt_int(c["line"]),
            body=shape.as_str(c["body"]),
            resolved=resolved,
            thread_id=thread_id,
        )
        for c in shape.as_list(connection["nodes"])
    ]
    return items, shape.next_cursor(connection["pageInfo"])


def review_threads_from_graphql(data: Any) -> tuple[list[ThreadPage], str | None]:
    """Return one page of a PR's review threads and the cursor of its next page."""
    threads = data["repository"]["pullRequest"]["reviewThreads"]
    read: list[ThreadPage] = []
    for thread in shape.as_list(threads["nodes"]):
        resolved = shape.as_bool(shape.as_obj(thread)["isResolved"])
        thread_id = shape.as_str(thread["id"])
        items, more = _comments(thread["comments"], resolved, thread_id)
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
    # Both commits are nullable (a commit GitHub no longer has), their keys are not: an event
    # without its new head is skipped as before, one whose keys are missing is malformed.
    events = (shape.as_obj(n) for n in shape.as_list(timeline["nodes"]) if n is not None)
    items = tuple(
        ForcePush(before=shape.oid(n["beforeCommit"]), after=after)
        for n in events
        if (after := shape.oid(n["afterCommit"])) is not None
    )
    info = shape.as_obj(timeline["pageInfo"])
    more = shape.as_bool(info["hasNextPage"])
    cursor = (shape.opt_str(info["endCursor"]) or "more") if more else None
    return Page(items=items, next_cursor=cursor)
