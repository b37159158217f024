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
from .shape import (
    _bool,
    _int,
    _list,
    _login,
    _next_cursor,
    _obj,
    _oid,
    _one_of,
    _one_page,
    _opt_int,
    _opt_obj,
    _opt_one_of,
    _opt_str,
    _str,
    _Unmappable,
)

__all__ = ["review_state_from_graphql", "review_state_from_pull", "reviews_from_pull"]


def reviews_from_pull(pull: Any, commit: Any) -> tuple[ReviewState, str | None]:
    """Return the review state a `pullRequest` object answers (`headRefOid`, `reviewDecision`,
    `reviewRequests`, `reviews`) and the cursor of its next page of reviews.

    `commit` is the head commit's object (`author`/`committer` with `user { login }`), or None.
    More than one page of review requests would be cut: that, and any field of another shape,
    raises `_Unmappable` (the callers' "malformed"). Threads and rules are left empty.
    """
    pull = _obj(pull)
    requests = _one_page(pull["reviewRequests"])
    if requests is None:
        raise _Unmappable
    asked = []
    for node in requests:
        request = _obj(node)
        owner = _bool(request["asCodeOwner"])
        reviewer = request["requestedReviewer"]
        if reviewer is None:  # a deleted user, or a team the reader cannot see
            asked.append(ReviewRequest(reviewer="(hidden)", as_code_owner=owner))
            continue
        who = _obj(reviewer)
        team = _str(who["__typename"]) == "Team"
        asked.append(
            ReviewRequest(
                reviewer=_str(who["combinedSlug"] if team else who["login"]),
                team=team,
                as_code_owner=owner,
            )
        )
    connection = _obj(pull["reviews"])
    # Every field asked for must be there: a missing one is malformed, never null (a missing
    # `commit` would read as "not on the head", a missing decision as "no review required").
    reviews = tuple(
        Review(
            author=_login(_obj(r)["author"]),
            state=_one_of(_obj(r)["state"], REVIEW_STATES),
            commit_oid=_oid(_obj(r)["commit"]),
            submitted_at=_opt_str(_obj(r)["submittedAt"]),
            author_can_push=_bool(_obj(r)["authorCanPushToRepository"]),
        )
        for r in _list(connection["nodes"])
    )
    cursor = _next_cursor(connection["pageInfo"])
    head = _opt_obj(commit)
    pushers: list[str] = []
    unlinked = not head  # no head commit read: nobody is known
    for role in ("author", "committer"):
        # GitActor and its `user` are nullable (no linked account), their keys are not.
        actor = head[role] if head else None
        login = None if actor is None else _login(_obj(actor)["user"])
        if login is None:
            unlinked = True
        elif login not in pushers:
            pushers.append(login)
    state = ReviewState(
        head_sha=_str(pull["headRefOid"]),
        reviews=reviews,
        requests=tuple(asked),
        decision=_opt_one_of(pull["reviewDecision"], REVIEW_DECISIONS),
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
    A field of another shape raises `_Unmappable`; rules are left empty.
    """
    state, cursor = reviews_from_pull(pull, commit)
    connection = _obj(_obj(pull)["reviewThreads"])
    nodes = None if cursor is not None else _one_page(connection)
    if nodes is None:
        return None
    threads = []
    for node in nodes:
        thread = _obj(node)
        author: str | None = None
        count: int | None = None
        if "comments" in thread:
            comments = _obj(thread["comments"])
            first = _list(comments["nodes"])
            if first:
                author = _login(_obj(first[0]).get("author"))
            count = _int(comments["totalCount"])
        threads.append(
            ReviewThread(
                id=_str(thread["id"]),
                resolved=_bool(thread["isResolved"]),
                path=_str(thread["path"]),
                line=_opt_int(thread["line"]),
                author=author,
                comments=count,
            )
        )
    return replace(state, threads=tuple(threads))


def review_state_from_graphql(data: Any) -> tuple[ReviewState, str | None]:
    """Return one page of an answer to REVIEW_STATE_QUERY (see `reviews_from_pull`)."""
    repository = _obj(data["repository"])
    return reviews_from_pull(_obj(repository["pullRequest"]), repository.get("object"))
