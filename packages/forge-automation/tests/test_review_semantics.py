"""GitHub's documented review rules, one table, judged by the pure `merge_readiness`.

Each row is a case GitHub's documentation decides ("About protected branches", "About rulesets",
"Approving a pull request with required reviews", the GraphQL `PullRequestReviewDecision`):

- a reviewer's latest review is their verdict; a later comment leaves it standing, a dismissal
  takes it away;
- only reviews by people with write access count, and never the PR author's own;
- with stale-review dismissal, an approval of an older commit no longer counts; without, it does;
- with code-owner review, a code owner's approval must be given (pending request: blocked);
- with last-push approval, someone other than the last pusher must approve the head; a pusher
  nobody can name (no linked account) proves nothing;
- rulesets and classic protection both apply: the strictest value of each parameter;
- GitHub's own `reviewDecision` REVIEW_REQUIRED and CHANGES_REQUESTED block whatever the rules
  read say; with classic protection hidden from the caller it decides the review part, and
  every unresolved thread blocks.
"""

from __future__ import annotations

from typing import Any

import pytest

from forge_automation import (
    ACTIONS_APP_ID,
    ClassicProtection,
    RequiredChecks,
    RequiredContext,
    Review,
    ReviewDecision,
    ReviewRequest,
    ReviewRules,
    ReviewState,
    ReviewStateName,
    ReviewThread,
    layer_rules,
    merge_readiness,
)
from forge_builders import check_run, pull_request

HEAD = "a" * 40
OLD = "b" * 40
PR = pull_request(HEAD, number=5, author="ann")
GREEN = [check_run("ci", head_sha=HEAD)]


def r(
    who: str, state: ReviewStateName = "APPROVED", commit: str = HEAD, *, push: bool = True
) -> Review:
    return Review(author=who, state=state, commit_oid=commit, author_can_push=push)


def rules(**kw: Any) -> ReviewRules:
    return ReviewRules(source="ruleset", **kw)


ONE = rules(required_approving_review_count=1)
STALE = rules(required_approving_review_count=1, dismiss_stale_reviews_on_push=True)
OWNERS = rules(required_approving_review_count=1, require_code_owner_review=True)
LAST_PUSH = rules(required_approving_review_count=1, require_last_push_approval=True)
THREADS = rules(required_review_thread_resolution=True)
HIDDEN = rules(protection_hidden=True)
OWNER_ASKED = ReviewRequest(reviewer="acme/core", team=True, as_code_owner=True)
OPEN = ReviewThread(id="T1", resolved=False, path="a.py", line=3)
DONE = ReviewThread(id="T2", resolved=True, path="a.py", line=4)


def layered(ruleset: ReviewRules, classic: ReviewRules) -> ReviewRules:
    """What GitHub enforces with both sources: see `layer_rules`."""
    both = layer_rules(RequiredChecks(reviews=ruleset), ClassicProtection(reviews=classic))
    assert both.reviews is not None
    return both.reviews


# (id, reviews, rules, decision, requests, threads, pushers, the blockers' reasons)
TABLE: list[Any] = [
    # -- the latest review per reviewer ----------------------------------------------------------
    ("approved", (r("bob"),), ONE, "APPROVED", (), (), ("ann",), []),
    (
        "approval-then-changes",
        (r("bob"), r("bob", "CHANGES_REQUESTED")),
        ONE,
        None,
        (),
        (),
        ("ann",),
        ["changes-requested", "approvals-missing"],
    ),
    (
        "changes-then-approval",
        (r("bob", "CHANGES_REQUESTED"), r("bob")),
        ONE,
        "APPROVED",
        (),
        (),
        ("ann",),
        [],
    ),
    (
        "a-later-comment-leaves-the-verdict",
        (r("bob"), r("bob", "COMMENTED")),
        ONE,
        "APPROVED",
        (),
        (),
        ("ann",),
        [],
    ),
    (
        "reviewer-names-without-case",
        (r("Bob", "CHANGES_REQUESTED"), r("bob")),
        ONE,
        "APPROVED",
        (),
        (),
        ("ann",),
        [],
    ),
    # -- dismissals ------------------------------------------------------------------------------
    (
        "approval-dismissed",
        (r("bob"), r("bob", "DISMISSED")),
        ONE,
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["approvals-missing"],
    ),
    (
        "change-request-dismissed",
        (r("bob", "CHANGES_REQUESTED"), r("bob", "DISMISSED"), r("cy")),
        ONE,
        "APPROVED",
        (),
        (),
        ("ann",),
        [],
    ),
    # -- writers only, never the author ----------------------------------------------------------
    (
        "approval-without-write-access",
        (r("bob", push=False),),
        ONE,
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["approvals-missing"],
    ),
    (
        "changes-without-write-access",
        (r("eve", "CHANGES_REQUESTED", push=False), r("bob")),
        ONE,
        "APPROVED",
        (),
        (),
        ("ann",),
        [],
    ),
    (
        "authors-own-approval",
        (r("ann"),),
        ONE,
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["approvals-missing"],
    ),
    (
        "two-required-one-given",
        (r("bob"),),
        rules(required_approving_review_count=2),
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["approvals-missing"],
    ),
    # -- stale approvals -------------------------------------------------------------------------
    (
        "stale-dismissed-on-push",
        (r("bob", commit=OLD),),
        STALE,
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["approvals-missing"],
    ),
    (
        "stale-kept-without-dismissal",
        (r("bob", commit=OLD),),
        ONE,
        "APPROVED",
        (),
        (),
        ("ann",),
        [],
    ),
    (
        "fresh-approval-with-dismissal",
        (r("bob", commit=OLD), r("bob")),
        STALE,
        "APPROVED",
        (),
        (),
        ("ann",),
        [],
    ),
    # -- code owners -----------------------------------------------------------------------------
    (
        "code-owner-pending",
        (r("bob"),),
        OWNERS,
        "REVIEW_REQUIRED",
        (OWNER_ASKED,),
        (),
        ("ann",),
        ["code-owner-review-missing"],
    ),
    ("code-owner-given", (r("bob"),), OWNERS, "APPROVED", (), (), ("ann",), []),
    (
        "code-owner-rule-off-request-pending",
        (r("bob"),),
        ONE,
        "APPROVED",
        (OWNER_ASKED,),
        (),
        ("ann",),
        ["review-requested"],
    ),
    # -- last-push approval ----------------------------------------------------------------------
    ("last-push-approved-by-another", (r("bob"),), LAST_PUSH, "APPROVED", (), (), ("ann",), []),
    (
        "last-push-approved-by-its-pusher",
        (r("bob"),),
        LAST_PUSH,
        "APPROVED",
        (),
        (),
        ("ann", "bob"),
        ["last-push-unapproved"],
    ),
    (
        "last-push-approved-earlier",
        (r("bob", commit=OLD),),
        LAST_PUSH,
        "APPROVED",
        (),
        (),
        ("ann",),
        ["last-push-unapproved"],
    ),
    (
        "last-push-pusher-unknown",
        (r("bob"),),
        LAST_PUSH,
        "APPROVED",
        (),
        (),
        (),
        ["last-push-unapproved"],
    ),
    ("pusher-unknown-without-the-rule", (r("bob"),), ONE, "APPROVED", (), (), (), []),
    # -- rulesets and classic protection layered -------------------------------------------------
    (
        "ruleset-1-classic-2",
        (r("bob"),),
        layered(ONE, ReviewRules(required_approving_review_count=2, source="classic")),
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["approvals-missing"],
    ),
    (
        "ruleset-review-classic-conversations",
        (r("bob"),),
        layered(ONE, ReviewRules(required_review_thread_resolution=True, source="classic")),
        "APPROVED",
        (),
        (OPEN, DONE),
        ("ann",),
        ["threads-unresolved"],
    ),
    (
        "classic-stale-beside-ruleset",
        (r("bob", commit=OLD),),
        layered(ONE, ReviewRules(dismiss_stale_reviews_on_push=True, source="classic")),
        "APPROVED",
        (),
        (),
        ("ann",),
        ["approvals-missing"],
    ),
    (
        "classic-last-push-beside-ruleset",
        (r("bob"),),
        layered(ONE, ReviewRules(require_last_push_approval=True, source="classic")),
        "APPROVED",
        (),
        (),
        ("bob",),
        ["last-push-unapproved"],
    ),
    ("threads-resolved", (r("bob"),), layered(ONE, THREADS), "APPROVED", (), (DONE,), ("ann",), []),
    # -- GitHub's own reviewDecision -------------------------------------------------------------
    (
        "decision-review-required-no-rule-read",
        (),
        ReviewRules(),
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["review-required"],
    ),
    (
        "decision-changes-requested-no-rule-read",
        (r("bob"),),
        ReviewRules(),
        "CHANGES_REQUESTED",
        (),
        (),
        ("ann",),
        ["changes-requested"],
    ),
    (
        "decision-review-required-despite-approval",
        (r("bob"),),
        ONE,
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["review-required"],
    ),
    ("no-decision-no-rule", (), ReviewRules(), None, (), (), ("ann",), []),
    # -- classic protection hidden (no admin rights): reviewDecision decides ---------------------
    ("hidden-decision-approved", (r("bob"),), HIDDEN, "APPROVED", (), (DONE,), ("ann",), []),
    (
        "hidden-decision-review-required",
        (),
        HIDDEN,
        "REVIEW_REQUIRED",
        (),
        (),
        ("ann",),
        ["review-required"],
    ),
    (
        "hidden-unresolved-thread-blocks",
        (r("bob"),),
        HIDDEN,
        "APPROVED",
        (),
        (OPEN,),
        ("ann",),
        ["threads-unresolved"],
    ),
]


@pytest.mark.parametrize(
    ("reviews", "rules_", "decision", "requests", "threads", "pushers", "expected"),
    [pytest.param(*row[1:], id=row[0]) for row in TABLE],
)
def test_review_semantics(
    reviews: tuple[Review, ...],
    rules_: ReviewRules,
    decision: ReviewDecision | None,
    requests: tuple[ReviewRequest, ...],
    threads: tuple[ReviewThread, ...],
    pushers: tuple[str, ...],
    expected: list[str],
) -> None:
    state = ReviewState(
        head_sha=HEAD,
        reviews=reviews,
        requests=requests,
        threads=threads,
        rules=rules_,
        decision=decision,
        pushers=pushers,
    )
    readiness = merge_readiness(
        pr=PR,
        rules=RequiredChecks(contexts=(RequiredContext(context="ci"),)),
        runs=GREEN,
        required_apps=(ACTIONS_APP_ID,),
        approved_head=HEAD,
        reviews=state,
    )
    assert [b.reason for b in readiness.blockers] == expected
    assert readiness.ready is (not expected)
    # Every review blocker names who acts next.
    assert all(
        b.actor in ("author", "reviewer", "maintainer", "anyone") for b in readiness.blockers
    )


def test_layering_takes_the_strictest_of_each_parameter() -> None:
    ruleset = rules(required_approving_review_count=1, require_last_push_approval=True)
    classic = ReviewRules(
        required_approving_review_count=3,
        dismiss_stale_reviews_on_push=True,
        require_code_owner_review=True,
        required_review_thread_resolution=True,
        source="classic",
    )
    assert layered(ruleset, classic) == ReviewRules(
        required_approving_review_count=3,
        require_code_owner_review=True,
        require_last_push_approval=True,
        dismiss_stale_reviews_on_push=True,
        required_review_thread_resolution=True,
        source="ruleset and classic",
    )
    # Checks: the union, strict if either is.
    both = layer_rules(
        RequiredChecks(contexts=(RequiredContext(context="ci", app_id=ACTIONS_APP_ID),)),
        ClassicProtection(
            checks=RequiredChecks(contexts=(RequiredContext(context="build"),), strict=True)
        ),
    )
    assert [c.context for c in both.contexts] == ["ci", "build"]
    assert both.strict


@pytest.mark.parametrize(("unlinked", "blocked"), [(False, False), (True, True)])
def test_a_head_commit_naming_someone_unlinked_cannot_prove_last_push(
    unlinked: bool, blocked: bool
) -> None:
    # Author `ann` is linked, the committer is an email without an account: whoever that is may
    # have pushed, and bob may be them.
    state = ReviewState(
        head_sha=HEAD,
        reviews=(r("bob"),),
        rules=LAST_PUSH,
        decision="APPROVED",
        pushers=("ann",),
        unlinked_pusher=unlinked,
    )
    readiness = merge_readiness(
        pr=PR,
        rules=RequiredChecks(contexts=(RequiredContext(context="ci"),)),
        runs=GREEN,
        required_apps=(ACTIONS_APP_ID,),
        approved_head=HEAD,
        reviews=state,
    )
    assert [b.reason for b in readiness.blockers] == (["last-push-unapproved"] if blocked else [])
