"""The wire's review reads fail closed: an answer of another shape is `malformed`, never a rule."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from fakeforge import ForgeServer, RepoState
from fakeforge.schema import bent, off_schema
from forge_automation import (
    ClassicProtection,
    ForgeCliError,
    ReviewRules,
    forge_port,
)
from forge_builders import answering_wire, graphql_wire

REPO = "acme/widgets"
HEAD = "a" * 40
RULE = {
    "dismiss_stale_reviews_on_push": True,
    "require_code_owner_review": False,
    "require_last_push_approval": True,
    "required_approving_review_count": 2,
    "required_review_thread_resolution": False,
}


def reviews_data(**pull: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "headRefOid": HEAD,
        "reviewDecision": None,
        "reviewRequests": {"pageInfo": {"hasNextPage": False}, "nodes": []},
        "reviews": {
            "pageInfo": {"hasNextPage": False, "endCursor": None},
            "nodes": [
                {
                    "author": {"login": "bob"},
                    "state": "APPROVED",
                    "submittedAt": None,
                    "authorCanPushToRepository": True,
                    "commit": {"oid": HEAD},
                }
            ],
        },
    }
    base.update(pull)
    return {"data": {"repository": {"pullRequest": base, "object": None}}}


def test_a_pull_request_rule_is_read_with_every_parameter() -> None:
    wire = answering_wire([{"type": "pull_request", "parameters": RULE}])
    (rules,) = wire.get_branch_rules(REPO, "main", 1).items
    assert rules.reviews == ReviewRules(
        required_approving_review_count=2,
        dismiss_stale_reviews_on_push=True,
        require_last_push_approval=True,
        source="ruleset",
    )


@pytest.mark.parametrize(
    "rule",
    [
        {"type": "pull_request"},
        {"type": "pull_request", "parameters": {}},
        {"type": "pull_request", "parameters": {**RULE, "required_approving_review_count": "2"}},
        {"type": "pull_request", "parameters": {**RULE, "require_code_owner_review": None}},
    ],
)
def test_a_pull_request_rule_it_cannot_read_is_malformed(rule: dict[str, Any]) -> None:
    with pytest.raises(ForgeCliError) as caught:
        answering_wire([rule]).get_branch_rules(REPO, "main", 1)
    assert caught.value.kind == "malformed"


def test_classic_protection_reads_reviews_and_conversation_resolution() -> None:
    wire = answering_wire(
        {
            "required_pull_request_reviews": {
                "dismiss_stale_reviews": True,
                "require_code_owner_reviews": True,
                "required_approving_review_count": 3,
            },
            "required_conversation_resolution": {"enabled": True},
        }
    )
    protection = wire.get_classic_protection(REPO, "main")
    assert protection is not None
    assert protection.reviews == ReviewRules(
        required_approving_review_count=3,
        require_code_owner_review=True,
        dismiss_stale_reviews_on_push=True,
        required_review_thread_resolution=True,
        source="classic",
    )
    assert answering_wire({"enabled": True}).get_classic_protection(REPO, "main") == (
        ClassicProtection(reviews=ReviewRules(source="classic"))
    )


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"required_pull_request_reviews": {"required_approving_review_count": "1"}},
        {"required_pull_request_reviews": "yes"},
        {"required_conversation_resolution": {"enabled": "true"}},
    ],
)
def test_classic_protection_it_cannot_read_is_malformed(body: Any) -> None:
    with pytest.raises(ForgeCliError) as caught:
        answering_wire(body).get_classic_protection(REPO, "main")
    assert caught.value.kind == "malformed"


def test_reviews_are_read_with_requests_and_pushers() -> None:
    body = reviews_data(
        reviewRequests={
            "pageInfo": {"hasNextPage": False},
            "nodes": [
                {
                    "asCodeOwner": True,
                    "requestedReviewer": {"__typename": "Team", "combinedSlug": "acme/core"},
                },
                {"asCodeOwner": False, "requestedReviewer": None},
            ],
        }
    )
    body["data"]["repository"]["object"] = {
        "author": {"user": {"login": "ann"}},
        "committer": {"user": None},
    }
    state, cursor = answering_wire(body).get_pull_reviews(REPO, 1, HEAD, None)
    assert cursor is None
    assert [(r.reviewer, r.team, r.as_code_owner) for r in state.requests] == [
        ("acme/core", True, True),
        ("(hidden)", False, False),
    ]
    assert state.pushers == ("ann",)
    assert [(r.author, r.state, r.author_can_push) for r in state.reviews] == [
        ("bob", "APPROVED", True)
    ]


@pytest.mark.parametrize(
    "pull",
    [
        {"reviewRequests": {"pageInfo": {"hasNextPage": True}, "nodes": []}},
        {"reviews": {"pageInfo": {"hasNextPage": False}, "nodes": [{"state": "APPROVED"}]}},
        {"reviews": None},
        {"headRefOid": None},
        {"reviewDecision": 1},
    ],
)
def test_reviews_it_cannot_read_are_malformed(pull: dict[str, Any]) -> None:
    with pytest.raises(ForgeCliError) as caught:
        answering_wire(reviews_data(**pull)).get_pull_reviews(REPO, 1, HEAD, None)
    assert caught.value.kind == "malformed"


def test_a_graphql_error_beside_the_data_fails_the_read() -> None:
    body = reviews_data()
    body["errors"] = [{"message": "something went wrong"}]
    with pytest.raises(ForgeCliError):
        answering_wire(body).get_pull_reviews(REPO, 1, HEAD, None)


# The review-thread and force-push reads against GitHub's schema: each field these documents
# select that was once read leniently (a missing key as None, False, "" or "NONE"), where it sits
# under `pullRequest`, and a value of another JSON type.
_THREAD = ("reviewThreads", "nodes", 0)
_COMMENT = (*_THREAD, "comments", "nodes", 0)
_PUSH = ("timelineItems", "nodes", 0)
THREAD_FIELDS: list[tuple[str, str, tuple[str | int, ...], object]] = [
    ("PullRequestReviewThread", "id", _THREAD, 7),
    ("PullRequestReviewThread", "isResolved", _THREAD, "true"),
    ("PullRequestReviewComment", "author", _COMMENT, "bob"),
    ("Actor", "login", (*_COMMENT, "author"), 7),
    ("PullRequestReviewComment", "authorAssociation", _COMMENT, 7),
    ("PullRequestReviewComment", "path", _COMMENT, 7),
    ("PullRequestReviewComment", "line", _COMMENT, "3"),
    ("PullRequestReviewComment", "body", _COMMENT, 7),
    ("HeadRefForcePushedEvent", "beforeCommit", _PUSH, "f" * 40),
    ("HeadRefForcePushedEvent", "afterCommit", _PUSH, "f" * 40),
    ("Commit", "oid", (*_PUSH, "beforeCommit"), 7),
    ("PageInfo", "hasNextPage", ("timelineItems", "pageInfo"), "false"),
]


@pytest.mark.parametrize(
    "row",
    THREAD_FIELDS,
    ids=[
        ".".join([*(str(k) for k in p if k not in ("nodes", 0)), f]) for _, f, p, _ in THREAD_FIELDS
    ],
)
def test_a_thread_or_force_push_field_github_never_sends_so_is_malformed(
    server: ForgeServer, repo: RepoState, row: tuple[str, str, tuple[str | int, ...], object]
) -> None:
    type_name, field, path, wrong = row
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.review_threads[1] = [{"comments": [{"id": 7, "user": "bob", "path": "a.py", "line": 3}]}]
    repo.force_pushes[1] = [(repo.branches["main"], head)]
    port = forge_port(graphql_wire(server.graphql))
    pushes = path[0] == "timelineItems"
    read = port.list_force_pushes if pushes else port.list_review_comments
    operation = "PullRequestForcePushes" if pushes else "PullRequestReviewThreads"
    assert read(REPO, 1)  # the answer as sent reads
    where = ("data", "repository", "pullRequest", *path)
    for change in off_schema(type_name, field, wrong):
        server.state.graphql_bends[operation] = functools.partial(
            bent, path=where, field=field, change=change
        )
        with pytest.raises(ForgeCliError) as caught:
            read(REPO, 1)
        assert caught.value.kind == "malformed", (field, change)
