"""merge_readiness over review state: one table per review rule, each row with its actor."""

from __future__ import annotations

from dataclasses import replace
from typing import get_args

import pytest

from forge_automation import (
    ACTIONS_APP_ID,
    Actor,
    Blocker,
    PullRequest,
    Readiness,
    RequiredContext,
    Review,
    ReviewDecision,
    ReviewRequest,
    ReviewRules,
    ReviewState,
    ReviewStateName,
    ReviewThread,
    merge_readiness,
)
from forge_builders import check_run, pull_request

HEAD = "a" * 40
OLD = "b" * 40
PR = pull_request(HEAD, number=5, author="ann")
GREEN = [check_run("test", head_sha=HEAD)]


def approve(
    who: str, commit: str = HEAD, *, push: bool = True, state: ReviewStateName = "APPROVED"
) -> Review:
    return Review(author=who, state=state, commit_oid=commit, author_can_push=push)


def snapshot(
    reviews: tuple[Review, ...] = (),
    *,
    rules: ReviewRules | None = None,
    requests: tuple[ReviewRequest, ...] = (),
    threads: tuple[ReviewThread, ...] = (),
    decision: ReviewDecision | None = None,
    pushers: tuple[str, ...] = ("ann",),
    head: str = HEAD,
) -> ReviewState:
    return ReviewState(
        head_sha=head,
        reviews=reviews,
        threads=threads,
        requests=requests,
        rules=rules or ReviewRules(),
        decision=decision,
        pushers=pushers,
    )


def judge(state: ReviewState | None, *, pr: PullRequest = PR) -> Readiness:
    return merge_readiness(
        pr=pr,
        rules=[RequiredContext(context="test")],
        runs=GREEN,
        required_apps=(ACTIONS_APP_ID,),
        approved_head=pr.head_sha,
        reviews=state,
    )


def found(state: ReviewState, *, pr: PullRequest = PR) -> list[tuple[str, str]]:
    return [(b.reason, b.actor or "") for b in judge(state, pr=pr).blockers]


def rule(**kw: object) -> ReviewRules:
    return ReviewRules(source="ruleset", **kw)  # type: ignore[arg-type]


def test_without_review_state_nothing_about_reviews_is_judged() -> None:
    assert judge(None).ready


def test_no_rules_and_no_reviews_is_ready() -> None:
    assert judge(snapshot()) == Readiness(ready=True, blockers=())


def test_every_blocker_carries_an_actor_in_its_json() -> None:
    old = Blocker(reason="check-failed", detail="x")
    assert old.actor == "author"
    assert old.to_json() == {"reason": "check-failed", "detail": "x", "actor": "author"}
    assert Blocker(reason="check-pending", detail="x").actor == "anyone"
    assert Blocker(reason="no-required-checks", detail="x").actor == "maintainer"
    assert Blocker(reason="unapproved-head", detail="x").actor == "reviewer"


# -- approvals-missing (reviewer) ----------------------------------------------------------------

APPROVALS = [
    # (reviews, rules, blocked?)
    pytest.param((), rule(required_approving_review_count=1), True, id="none-given"),
    pytest.param(
        (approve("bob"),), rule(required_approving_review_count=1), False, id="one-of-one"
    ),
    pytest.param((approve("bob"),), rule(required_approving_review_count=2), True, id="one-of-two"),
    pytest.param(
        (approve("bob"), approve("cy")), rule(required_approving_review_count=2), False, id="two"
    ),
    pytest.param(
        (approve("bob", push=False),),
        rule(required_approving_review_count=1),
        True,
        id="reviewer-cannot-push",
    ),
    pytest.param(
        (approve("ann"),), rule(required_approving_review_count=1), True, id="pr-author-self"
    ),
    pytest.param(
        (approve("bob"), approve("bob", state="DISMISSED")),
        rule(required_approving_review_count=1),
        True,
        id="dismissed-later",
    ),
    pytest.param(
        (approve("bob"), approve("bob", state="COMMENTED")),
        rule(required_approving_review_count=1),
        False,
        id="comment-keeps-approval",
    ),
    pytest.param(
        (approve("bob", state="CHANGES_REQUESTED"), approve("bob")),
        rule(required_approving_review_count=1),
        False,
        id="approved-after-changes",
    ),
    pytest.param(
        (approve("bob", OLD),), rule(required_approving_review_count=1), False, id="old-commit-kept"
    ),
    pytest.param(
        (approve("bob", OLD),),
        rule(required_approving_review_count=1, dismiss_stale_reviews_on_push=True),
        True,
        id="stale-dismissed",
    ),
    pytest.param(
        (approve("bob", OLD), approve("bob")),
        rule(required_approving_review_count=1, dismiss_stale_reviews_on_push=True),
        False,
        id="re-approved-on-head",
    ),
    pytest.param(
        (approve("Bob"), approve("BOB")),
        rule(required_approving_review_count=2),
        True,
        id="one-person-counts-once",
    ),
]


@pytest.mark.parametrize(("reviews", "rules", "blocked"), APPROVALS)
def test_approvals_missing(reviews: tuple[Review, ...], rules: ReviewRules, blocked: bool) -> None:
    result = found(snapshot(reviews, rules=rules))
    assert result == ([("approvals-missing", "reviewer")] if blocked else [])


def test_approvals_missing_detail_names_counted_and_stale_approvers() -> None:
    rules = rule(required_approving_review_count=2, dismiss_stale_reviews_on_push=True)
    (blocker,) = judge(snapshot((approve("bob"), approve("cy", OLD)), rules=rules)).blockers
    assert blocker.detail == (
        "main (ruleset rule) requires 2 approving reviews from reviewers who can push; counted: "
        "1 (bob); cy approved an older commit, which no longer counts (stale approvals are "
        "dismissed on push)"
    )


# -- changes-requested (author) ------------------------------------------------------------------

CHANGES = [
    pytest.param((approve("bob", state="CHANGES_REQUESTED"),), True, id="requested"),
    pytest.param((approve("bob", OLD, state="CHANGES_REQUESTED"),), True, id="on-old-commit"),
    pytest.param(
        (approve("bob", state="CHANGES_REQUESTED"), approve("bob", state="COMMENTED")),
        True,
        id="comment-keeps-it",
    ),
    pytest.param(
        (approve("bob", state="CHANGES_REQUESTED"), approve("bob", state="DISMISSED")),
        False,
        id="dismissed",
    ),
    pytest.param((approve("bob", state="CHANGES_REQUESTED", push=False),), False, id="cannot-push"),
]


@pytest.mark.parametrize(("reviews", "blocked"), CHANGES)
def test_changes_requested(reviews: tuple[Review, ...], blocked: bool) -> None:
    assert found(snapshot(reviews)) == ([("changes-requested", "author")] if blocked else [])


def test_changes_requested_blocks_beside_enough_approvals() -> None:
    reviews = (approve("bob"), approve("cy", state="CHANGES_REQUESTED"))
    result = judge(snapshot(reviews, rules=rule(required_approving_review_count=1)))
    assert [b.reason for b in result.blockers] == ["changes-requested"]
    assert result.blockers[0].detail.startswith("cy requested changes")


# -- code-owner-review-missing (reviewer) --------------------------------------------------------

OWNER = ReviewRequest(reviewer="acme/core", team=True, as_code_owner=True)
PLAIN = ReviewRequest(reviewer="dee")
CODE_OWNERS = [
    # (requests, decision, rule on?, expected)
    pytest.param((), "APPROVED", True, [], id="decision-approved"),
    pytest.param(
        (OWNER,), "APPROVED", True, [("code-owner-review-missing", "reviewer")], id="owner-pending"
    ),
    pytest.param(
        (),
        "REVIEW_REQUIRED",
        True,
        [("code-owner-review-missing", "reviewer")],
        id="forge-still-requires",
    ),
    pytest.param(
        (), None, True, [("code-owner-review-missing", "reviewer")], id="no-decision-fails-closed"
    ),
    # The forge's own decision blocks even where the package reads no code-owner rule.
    pytest.param((), "REVIEW_REQUIRED", False, [("review-required", "reviewer")], id="rule-off"),
    pytest.param(
        (OWNER,), "APPROVED", False, [("review-requested", "reviewer")], id="rule-off-owner-asked"
    ),
    pytest.param(
        (OWNER, PLAIN),
        "APPROVED",
        True,
        [("code-owner-review-missing", "reviewer"), ("review-requested", "reviewer")],
        id="owner-and-plain",
    ),
]


@pytest.mark.parametrize(("requests", "decision", "on", "expected"), CODE_OWNERS)
def test_code_owner_review(
    requests: tuple[ReviewRequest, ...],
    decision: ReviewDecision | None,
    on: bool,
    expected: list[tuple[str, str]],
) -> None:
    state = snapshot(
        (approve("bob"),),
        rules=rule(required_approving_review_count=1, require_code_owner_review=on),
        requests=requests,
        decision=decision,
    )
    assert found(state) == expected


def test_code_owner_detail_names_the_requested_owners() -> None:
    state = snapshot(rules=rule(require_code_owner_review=True), requests=(OWNER,))
    (blocker,) = judge(state).blockers
    assert "acme/core" in blocker.detail


# -- last-push-unapproved (reviewer) -------------------------------------------------------------

LAST_PUSH = [
    # (reviews, pushers, blocked?)
    pytest.param((approve("bob"),), ("ann",), False, id="approved-by-other"),
    pytest.param((approve("bob", OLD),), ("ann",), True, id="approved-older-push"),
    pytest.param((approve("bob"),), ("bob",), True, id="approved-by-its-pusher"),
    pytest.param((approve("bob"), approve("cy")), ("bob",), False, id="second-approver"),
    pytest.param((approve("bob"),), ("Ann", "BOB"), True, id="committer-counts-as-pusher"),
    pytest.param((approve("bob", push=False),), ("ann",), True, id="approver-cannot-push"),
    pytest.param((), ("ann",), True, id="no-approval"),
    # Neither author nor committer has a linked account: nothing proves bob is not the pusher.
    pytest.param((approve("bob"),), (), True, id="pusher-unknown"),
]


@pytest.mark.parametrize(("reviews", "pushers", "blocked"), LAST_PUSH)
def test_last_push_approval(
    reviews: tuple[Review, ...], pushers: tuple[str, ...], blocked: bool
) -> None:
    state = snapshot(reviews, rules=rule(require_last_push_approval=True), pushers=pushers)
    assert found(state) == ([("last-push-unapproved", "reviewer")] if blocked else [])


def test_last_push_detail_says_a_pusher_cannot_approve_their_push() -> None:
    state = snapshot(
        (approve("bob"),), rules=rule(require_last_push_approval=True), pushers=("bob",)
    )
    (blocker,) = judge(state).blockers
    assert blocker.detail == (
        f"main (ruleset rule) requires the last push, head {HEAD[:12]} (pushed as bob), to be "
        "approved by someone other than its pusher; bob cannot approve a push they made"
    )


# -- review-requested (reviewer) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("requests", "blocked"),
    [
        pytest.param((), False, id="none"),
        pytest.param((PLAIN,), True, id="user"),
        pytest.param((ReviewRequest(reviewer="acme/docs", team=True),), True, id="team"),
    ],
)
def test_review_requested(requests: tuple[ReviewRequest, ...], blocked: bool) -> None:
    assert found(snapshot(requests=requests)) == (
        [("review-requested", "reviewer")] if blocked else []
    )


# -- threads-unresolved (author) -----------------------------------------------------------------


def thread(n: int, resolved: bool = False) -> ReviewThread:
    return ReviewThread(id=f"T{n}", resolved=resolved, path=f"f{n}.py", line=n, author="bob")


@pytest.mark.parametrize(
    ("threads", "on", "blocked"),
    [
        pytest.param((thread(1),), True, True, id="one-open"),
        pytest.param((thread(1, True), thread(2, True)), True, False, id="all-resolved"),
        pytest.param((thread(1),), False, False, id="rule-off"),
        pytest.param((), True, False, id="no-threads"),
    ],
)
def test_threads_unresolved(threads: tuple[ReviewThread, ...], on: bool, blocked: bool) -> None:
    state = snapshot(rules=rule(required_review_thread_resolution=on), threads=threads)
    assert found(state) == ([("threads-unresolved", "author")] if blocked else [])


def test_threads_detail_lists_three_and_counts_the_rest() -> None:
    threads = (*(thread(n) for n in range(1, 6)), thread(9, True))
    state = snapshot(rules=rule(required_review_thread_resolution=True), threads=threads)
    (blocker,) = judge(state).blockers
    assert blocker.detail == (
        "main (ruleset rule) requires every review thread resolved; 5 unresolved: "
        "f1.py:1 (bob), f2.py:2 (bob), f3.py:3 (bob) and 2 more"
    )


# -- reviews-stale (anyone), order, purity -------------------------------------------------------


def test_reviews_read_at_another_head_judge_nothing_else() -> None:
    state = snapshot(
        (approve("bob", state="CHANGES_REQUESTED"),),
        rules=rule(required_approving_review_count=3),
        head=OLD,
    )
    assert found(state) == [("reviews-stale", "anyone")]


def test_every_review_blocker_in_the_documented_order_after_the_others() -> None:
    state = snapshot(
        (approve("bob", state="CHANGES_REQUESTED"), approve("cy", OLD)),
        rules=rule(
            required_approving_review_count=2,
            require_code_owner_review=True,
            require_last_push_approval=True,
            dismiss_stale_reviews_on_push=True,
            required_review_thread_resolution=True,
        ),
        requests=(OWNER, PLAIN),
        threads=(thread(1),),
        decision="CHANGES_REQUESTED",
    )
    result = merge_readiness(
        pr=replace(PR, draft=True),
        rules=[RequiredContext(context="test")],
        runs=GREEN,
        required_apps=(ACTIONS_APP_ID,),
        approved_head=OLD,
        reviews=state,
    )
    assert [(b.reason, b.actor) for b in result.blockers] == [
        ("pr-draft", "author"),
        ("unapproved-head", "reviewer"),
        ("changes-requested", "author"),
        ("approvals-missing", "reviewer"),
        ("code-owner-review-missing", "reviewer"),
        ("last-push-unapproved", "reviewer"),
        ("review-requested", "reviewer"),
        ("threads-unresolved", "author"),
    ]
    assert {b.actor for b in result.blockers} <= set(get_args(Actor))
    assert result.to_json()["blockers"] == [b.to_json() for b in result.blockers]
    assert [b.reason for b in result.blockers_for("author")] == [
        "pr-draft",
        "changes-requested",
        "threads-unresolved",
    ]
