"""Reading a `pullRequest` object's review state: reviews, pending requests, threads.

Shared by the wire's `PullRequestReviewState` read and pr-status's snapshot read (both spread
`graphql`'s `ReviewRequests` and `ReviewFields` fragments); imports only `shape` and `_records`,
so a reader can use it without loading the wire.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._records import (
    REVIEW_DECISIONS,
    REVIEW_STATES,
    Review,
    ReviewRequest,
    ReviewState,
    ReviewThread,
)
from . import shape

__all__ = ["review_state_from_graphql", "review_state_from_pull", "reviews_from_pull"]


def reviews_from_pull(pull: Any, commit: Any) -> tuple[ReviewState, str | None]:
    """Return the review state a `pullRequest` object answers (`headRefOid`, `reviewDecision`,
    `reviewRequests`, `reviews`) and the cursor of its next page of reviews.

    `commit` is the head commit's object (`author`/`committer` with `user { login }`), or None.
    More than one page of review requests would be cut: that, and any field of another shape,
    raises `shape.Unmappable` (the callers' "malformed"). Threads and rules are left empty.
    """
    pull = shape.as_obj(pull)
    requests = shape.one_page(pull["reviewRequests"])
    if requests is None:
        raise shape.Unmappable
    asked = []
    for node in requests:
        request = shape.as_obj(node)
        owner = shape.as_bool(request["asCodeOwner"])
        reviewer = request["requestedReviewer"]
        if reviewer is None:  # a deleted user, or a team the reader cannot see
            asked.append(ReviewRequest(reviewer="(hidden)", as_code_owner=owner))
            continue
        who = shape.as_obj(reviewer)
        team = shape.as_str(who["__typename"]) == "Team"
        asked.append(
            ReviewRequest(
                reviewer=shape.as_str(who["combinedSlug"] if team else who["login"]),
                team=team,
                as_code_owner=owner,
            )
        )
    connection = shape.as_obj(pull["reviews"])
    # Every field asked for must be there: a missing one is malformed, never null (a missing
    # `commit` would read as "not on the head", a missing decision as "no review required").
    reviews = tuple(
        Review(
            author=shape.login(shape.as_obj(r)["author"]),
            state=shape.one_of(shape.as_obj(r)["state"], REVIEW_STATES),
            commit_oid=shape.oid(shape.as_obj(r)["commit"]),
            submitted_at=shape.opt_str(shape.as_obj(r)["submittedAt"]),
            author_can_push=shape.as_bool(shape.as_obj(r)["authorCanPushToRepository"]),
        )
        for r in shape.as_list(connection["nodes"])
    )
    cursor = shape.next_cursor(connection["pageInfo"])
    head = shape.opt_obj(commit)
    pushers: list[str] = []
    unlinked = not head  # no head commit read: nobody is known
    for role in ("author", "committer"):
        # GitActor and its `user` are nullable (no linked account), their keys are not.
        actor = head[role] if head else None
        login = None if actor is None else shape.login(shape.as_obj(actor)["user"])
        if login is None:
            unlinked = True
        elif login not in pushers:
            pushers.append(login)
    state = ReviewState(
        head_sha=shape.as_str(pull["headRefOid"]),
        reviews=reviews,
        requests=tuple(asked),
        decision=shape.opt_one_of(pull["reviewDecision"], REVIEW_DECISIONS),
        pushers=tuple(pushers),
        unlinked_pusher=unlinked,
    )
    return state, cursor


def review_state_from_pull(pull: Any, commit: Any) -> ReviewState | None:
    """Return the whole review state one `pullRequest` object answers, or None when a part has
    another page (reviews or review threads past 100: read them with `ForgePort.review_state`).

    Besides what `reviews_from_pull` reads, `pull` holds `reviewThreads(first: 100)` with each
    thread's `id isResolved path line`, and optionally `comments(first: 1) { totalCount nodes {
    author { login } } }` (without it a thread's author and comment count are unknown: None).
    A field of another shape raises `shape.Unmappable`; rules are left empty.
    """
    state, cursor = reviews_from_pull(pull, commit)
    connection = shape.as_obj(shape.as_obj(pull)["reviewThreads"])
    nodes = None if cursor is not None else shape.one_page(connection)
    if nodes is None:
        return None
    threads = []
    for node in nodes:
        thread = shape.as_obj(node)
        author: str | None = None
        count: int | None = None
        if "comments" in thread:
            comments = shape.as_obj(thread["comments"])
            first = shape.as_list(comments["nodes"])
            if first:
                author = shape.login(shape.as_obj(first[0]).get("author"))
            count = shape.as_int(comments["totalCount"])
        threads.append(
            ReviewThread(
                id=shape.as_str(thread["id"]),
                resolved=shape.as_bool(thread["isResolved"]),
                path=shape.as_str(thread["path"]),
                line=shape.opt_int(thread["line"]),
                author=author,
                comments=count,
            )
        )
    return replace(state, threads=tuple(threads))


def review_state_from_graphql(data: Any) -> tuple[ReviewState, str | None]:
    """Return one page of an answer to REVIEW_STATE_QUERY (see `reviews_from_pull`)."""
    repository = shape.as_obj(data["repository"])
    return reviews_from_pull(shape.as_obj(repository["pullRequest"]), repository.get("object"))
