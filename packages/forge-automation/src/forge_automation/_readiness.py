"""merge_readiness: a pure, explainable "may this PR merge now" from a snapshot the caller read.

Rules (spec, mergeReadiness 1-7): only runs from an allowed app on the PR's head count; a required
context passes on `success` only, others also on `neutral`/`skipped`; a required check with no run
is pending, never passed; no required checks refuses; an unfinished extra check holds the merge;
every run counts, so a superseded failed run still blocks; a head other than the approved one is
unapproved. Beyond the spec's list, a closed, merged or draft PR, a `dirty` (conflicting) PR and,
when strict rules are given, a head behind its base also block.

Given a `ReviewState` (`reviews=`), the review rules are judged too; without one they are not
(callers that track approval themselves keep `approved_head`). Review blockers follow every other
blocker, in this order:

- `reviews-stale`: the review state was read at another head; nothing else about reviews is
  judged (read again).
- `changes-requested`: a reviewer who can push has changes requested as their latest verdict.
- `approvals-missing`: fewer approvals than `required_approving_review_count`. An approval counts
  when it is its author's latest verdict, the author can push and is not the PR's author, and,
  under `dismiss_stale_reviews_on_push`, it was given on the head commit.
- `code-owner-review-missing`: under `require_code_owner_review`, a code owner's review is still
  requested, or the forge's own review decision is not APPROVED (nothing else proves a code
  owner approved).
- `review-required`: the forge's own `reviewDecision` is REVIEW_REQUIRED (GitHub requires a
  review this PR lacks) and no blocker above says so already; its CHANGES_REQUESTED likewise
  gives `changes-requested`. GitHub's decision counts whatever the package's own reading of
  the rules says: it sees the rules a caller without admin rights cannot read.
- `last-push-unapproved`: under `require_last_push_approval`, no counted approval on the head
  commit by someone other than those the head commit names (its author and committer stand in
  for the pusher, whom the forge does not name); when either has no linked account the pusher
  may be someone unnamed, so no approval can prove it and this blocks.
- `review-requested`: a review request still pending (code owners' under their own rule).
- `threads-unresolved`: under `required_review_thread_resolution`, a review thread unresolved;
  with `protection_hidden` rules (classic protection GitHub hid from the caller, whose
  conversation rule is unknown), every unresolved thread.

Each blocker names an `actor`, who must act next: the PR's `author`, a `reviewer`, a
`maintainer` (of the repository or its rules), or `anyone` (wait, retry, update the branch).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from ._records import CheckRun, PullRequest, RequiredChecks, RequiredContext, Review, ReviewState
from ._verdict import contexts_of, run_label, run_outcome

__all__ = [
    "ACTORS",
    "BLOCKER_REASONS",
    "Actor",
    "Blocker",
    "Readiness",
    "describe_blocker",
    "merge_readiness",
    "review_blockers",
]

Actor: TypeAlias = Literal["author", "reviewer", "maintainer", "anyone"]
ACTORS: tuple[Actor, ...] = ("author", "reviewer", "maintainer", "anyone")

BLOCKER_REASONS = (
    "pr-closed",
    "pr-merged",
    "pr-draft",
    "merge-conflict",
    "behind-base",
    "no-required-checks",
    "check-failed",
    "check-pending",
    "unapproved-head",
    "reviews-stale",
    "changes-requested",
    "approvals-missing",
    "code-owner-review-missing",
    "review-required",
    "last-push-unapproved",
    "review-requested",
    "threads-unresolved",
)
# Who must act next on each reason, unless a blocker names another.
_ACTOR_OF: dict[str, Actor] = {
    "pr-closed": "maintainer",
    "pr-merged": "anyone",
    "pr-draft": "author",
    "merge-conflict": "author",
    "behind-base": "anyone",
    "no-required-checks": "maintainer",
    "check-failed": "author",
    "check-pending": "anyone",
    "unapproved-head": "reviewer",
    "reviews-stale": "anyone",
    "changes-requested": "author",
    "approvals-missing": "reviewer",
    "code-owner-review-missing": "reviewer",
    "review-required": "reviewer",
    "last-push-unapproved": "reviewer",
    "review-requested": "reviewer",
    "threads-unresolved": "author",
}
_ORDER = {reason: n for n, reason in enumerate(BLOCKER_REASONS)}
_REVIEW_REASONS = frozenset(BLOCKER_REASONS[BLOCKER_REASONS.index("reviews-stale") :])
# An approval or a change request only; COMMENTED (and PENDING) leave an earlier verdict standing.
_VERDICTS = frozenset({"APPROVED", "CHANGES_REQUESTED", "DISMISSED"})
_LISTED = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Blocker:
    """Why a PR may not merge: a reason from BLOCKER_REASONS, a sentence, and who must act.

    `actor` defaults to the reason's usual one (see the module's docstring).
    """

    reason: str
    detail: str
    actor: Actor | None = None

    def __post_init__(self) -> None:
        if self.actor is None:
            object.__setattr__(self, "actor", _ACTOR_OF.get(self.reason, "anyone"))

    def to_json(self) -> dict[str, str]:
        """Return `{reason, detail, actor}`."""
        return {"reason": self.reason, "detail": self.detail, "actor": self.actor or "anyone"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Readiness:
    """`ready` is true exactly when there are no blockers."""

    ready: bool
    blockers: tuple[Blocker, ...]

    def to_json(self) -> dict[str, object]:
        """Return `{ready, blockers: [{reason, detail}]}`."""
        return {"ready": self.ready, "blockers": [b.to_json() for b in self.blockers]}

    def blockers_for(self, actor: Actor) -> tuple[Blocker, ...]:
        """Return the blockers `actor` must act on."""
        return tuple(b for b in self.blockers if b.actor == actor)


def describe_blocker(blocker: Blocker) -> str:
    """Return a blocker as one line of text: `<reason>: <detail>`, and for a review blocker
    ` [actor: <actor>]` after it (the older reasons keep their text)."""
    text = f"{blocker.reason}: {blocker.detail}"
    return f"{text} [actor: {blocker.actor}]" if blocker.reason in _REVIEW_REASONS else text


def merge_readiness(
    *,
    pr: PullRequest,
    rules: RequiredChecks | Sequence[RequiredContext],
    runs: Sequence[CheckRun],
    required_apps: Collection[int],
    approved_head: str | None,
    reviews: ReviewState | None = None,
) -> Readiness:
    """Decide whether `pr` may merge now; every reason it may not is a Blocker.

    With `reviews`, the branch's review rules and the PR's reviews, requests and threads are
    judged too (after every other blocker); without, they are not.
    """
    blockers: list[Blocker] = []
    blockers.extend(_state_blockers(pr, rules))
    allowed = frozenset(required_apps)
    # Rule 1: a run from another app, or for another sha, says nothing about this head.
    counted = [r for r in runs if r.app_id in allowed and r.head_sha == pr.head_sha]
    contexts = contexts_of(rules)
    if not contexts:
        blockers.append(
            Blocker(
                reason="no-required-checks",
                detail=f"the base branch {pr.base_ref} requires no checks; refusing to merge",
            )
        )
    required_names = set()
    for rule in contexts:
        required_names.add(rule.context)
        blockers.extend(_required_blockers(rule, counted, allowed))
    for run in counted:
        if run.name in required_names:
            continue
        # Rules 2 and 5: an extra check passes on neutral/skipped too, and holds while unfinished.
        outcome = run_outcome(run, required=False)
        if outcome == "fail":
            blockers.append(
                Blocker(reason="check-failed", detail=f"{run_label(run)} (run {run.id})")
            )
        elif outcome == "wait":
            blockers.append(
                Blocker(
                    reason="check-pending",
                    detail=f"{run.name} is still {run.status} (run {run.id})",
                )
            )
    if approved_head is None or pr.head_sha != approved_head:
        approved = approved_head if approved_head is not None else "none"
        blockers.append(
            Blocker(
                reason="unapproved-head",
                detail=f"head {pr.head_sha} is not the approved head {approved}",
            )
        )
    if reviews is not None:
        blockers.extend(review_blockers(pr, reviews))
    return Readiness(ready=not blockers, blockers=tuple(blockers))


def review_blockers(pr: PullRequest, state: ReviewState) -> list[Blocker]:
    """Return the review blockers of `pr` under `state`, in the documented order."""
    head = pr.head_sha
    if state.head_sha != head:
        return [
            Blocker(
                reason="reviews-stale",
                detail=f"reviews were read at {state.head_sha[:12]}, not at the head "
                f"{head[:12]}; read them again",
            )
        ]
    rules = state.rules
    where = pr.base_ref + (f" ({rules.source} rule)" if rules.source != "none" else "")
    own = (pr.author or "").casefold()
    latest: dict[str, Review] = {}
    for review in state.reviews:
        if review.author is not None and review.state in _VERDICTS:
            latest[review.author.casefold()] = review
    # Only reviewers who can push count toward the rules, and never the PR's own author.
    counted = [r for r in latest.values() if r.author_can_push and r.author is not None]
    counted = [r for r in counted if r.author is not None and r.author.casefold() != own]
    blockers: list[Blocker] = []

    changes = [r for r in counted if r.state == "CHANGES_REQUESTED"]
    if changes:
        blockers.append(
            Blocker(
                reason="changes-requested",
                detail=f"{_names(r.author for r in changes)} requested changes; the author "
                "addresses them, then the reviewer re-reviews (or a maintainer dismisses it)",
            )
        )

    approvals = [r for r in counted if r.state == "APPROVED"]
    stale = rules.dismiss_stale_reviews_on_push
    fresh = [r for r in approvals if not stale or r.commit_oid == head]
    need = rules.required_approving_review_count
    if len(fresh) < need:
        old = [r for r in approvals if r not in fresh]
        given = f"{len(fresh)} ({_names(r.author for r in fresh)})" if fresh else "none"
        note = (
            f"; {_names(r.author for r in old)} approved an older commit, which no longer "
            "counts (stale approvals are dismissed on push)"
            if old
            else ""
        )
        blockers.append(
            Blocker(
                reason="approvals-missing",
                detail=f"{where} requires {need} approving review{'s' if need != 1 else ''} "
                f"from reviewers who can push; counted: {given}{note}",
            )
        )

    owners = [q for q in state.requests if q.as_code_owner]
    if rules.require_code_owner_review:
        if owners:
            blockers.append(
                Blocker(
                    reason="code-owner-review-missing",
                    detail=f"{where} requires a code owner's approval; requested from "
                    f"{_names(q.reviewer for q in owners)} and not yet given",
                )
            )
        elif state.decision != "APPROVED":
            decision = state.decision or "none"
            blockers.append(
                Blocker(
                    reason="code-owner-review-missing",
                    detail=f"{where} requires a code owner's approval and the forge's review "
                    f"decision is {decision}, so none is proven",
                )
            )

    if state.decision == "CHANGES_REQUESTED" and not changes:
        blockers.append(
            Blocker(
                reason="changes-requested",
                detail="the forge's review decision is CHANGES_REQUESTED: a reviewer's request "
                "for changes stands; the author addresses it, then the reviewer re-reviews",
            )
        )
    missing = {"approvals-missing", "code-owner-review-missing"}
    if state.decision == "REVIEW_REQUIRED" and not any(b.reason in missing for b in blockers):
        blockers.append(
            Blocker(
                reason="review-required",
                detail=f"the forge's review decision is REVIEW_REQUIRED: {pr.base_ref} requires "
                "an approving review this PR does not have yet",
            )
        )

    if rules.require_last_push_approval and (not state.pushers or state.unlinked_pusher):
        who = "author and committer have" if not state.pushers else "author or committer has"
        blockers.append(
            Blocker(
                reason="last-push-unapproved",
                detail=f"{where} requires the last push, head {head[:12]}, to be approved by "
                f"someone other than its pusher, and the head commit's {who} no linked "
                "account: no approval can be shown to come from someone else",
            )
        )
    elif rules.require_last_push_approval:
        pushers = {p.casefold() for p in state.pushers}
        on_head = [r for r in approvals if r.commit_oid == head]
        others = [r for r in on_head if (r.author or "").casefold() not in pushers]
        if not others:
            by = f" (pushed as {_names(state.pushers)})" if state.pushers else ""
            own_note = (
                f"; {_names(r.author for r in on_head)} cannot approve a push they made"
                if on_head
                else ""
            )
            blockers.append(
                Blocker(
                    reason="last-push-unapproved",
                    detail=f"{where} requires the last push, head {head[:12]}{by}, to be "
                    f"approved by someone other than its pusher{own_note}",
                )
            )

    owner_rule = rules.require_code_owner_review
    waiting = [q for q in state.requests if not (q.as_code_owner and owner_rule)]
    if waiting:
        blockers.append(
            Blocker(
                reason="review-requested",
                detail=f"review requested from {_names(q.reviewer for q in waiting)} and not "
                "yet given",
            )
        )

    open_threads = [t for t in state.threads if not t.resolved]
    if rules.protection_hidden and not rules.required_review_thread_resolution and open_threads:
        # Classic protection may ask for resolved conversations: it is unknown, so they block.
        rules = replace(rules, required_review_thread_resolution=True)
        where = f"{pr.base_ref} (classic protection hidden from this caller: assumed that it)"
    if rules.required_review_thread_resolution and open_threads:
        shown = [
            f"{t.path or '(conversation)'}{f':{t.line}' if t.line is not None else ''}"
            f"{f' ({t.author})' if t.author else ''}"
            for t in open_threads[:_LISTED]
        ]
        more = len(open_threads) - len(shown)
        blockers.append(
            Blocker(
                reason="threads-unresolved",
                detail=f"{where} requires every review thread resolved; "
                f"{len(open_threads)} unresolved: {', '.join(shown)}"
                f"{f' and {more} more' if more else ''}",
            )
        )
    blockers.sort(key=lambda b: _ORDER[b.reason])
    return blockers


def _names(names: Iterable[str | None]) -> str:
    listed = [n or "(ghost)" for n in names]
    shown = listed[:_LISTED]
    more = len(listed) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def _state_blockers(
    pr: PullRequest, rules: RequiredChecks | Sequence[RequiredContext]
) -> list[Blocker]:
    blockers: list[Blocker] = []
    if pr.merged:
        blockers.append(Blocker(reason="pr-merged", detail=f"#{pr.number} is already merged"))
    elif pr.state != "open":
        blockers.append(Blocker(reason="pr-closed", detail=f"#{pr.number} is {pr.state}"))
    if pr.draft:
        blockers.append(Blocker(reason="pr-draft", detail=f"#{pr.number} is a draft"))
    if pr.mergeable_state == "dirty":
        blockers.append(
            Blocker(reason="merge-conflict", detail=f"#{pr.number} conflicts with {pr.base_ref}")
        )
    if isinstance(rules, RequiredChecks) and rules.strict and pr.behind:
        behind = f" by {pr.behind_by} commits" if pr.behind_by else ""
        blockers.append(
            Blocker(
                reason="behind-base",
                detail=f"{pr.base_ref} requires an up-to-date head and #{pr.number} is behind"
                f"{behind}",
            )
        )
    return blockers


def _required_blockers(
    rule: RequiredContext, counted: Sequence[CheckRun], allowed: frozenset[int]
) -> list[Blocker]:
    if rule.app_id is not None:
        runs = [r for r in counted if r.name == rule.context and r.app_id == rule.app_id]
        source = f"app {rule.app_id}"
    else:
        runs = [r for r in counted if r.name == rule.context]
        ids = sorted(allowed)
        source = (
            f"app {ids[0]}"
            if len(ids) == 1
            else f"apps {', '.join(map(str, ids))}"
            if ids
            else "any allowed app (none are allowed)"
        )
    # Rule 3: no run at all is pending, never passed.
    if not runs:
        return [
            Blocker(
                reason="check-pending",
                detail=f"{rule.context} has no completed run from {source}",
            )
        ]
    blockers: list[Blocker] = []
    # Rule 6: every run counts, a superseded failure included.
    for run in runs:
        outcome = run_outcome(run, required=True)
        if outcome == "fail":
            blockers.append(
                Blocker(
                    reason="check-failed",
                    detail=f"required {run_label(run)} (run {run.id})",
                )
            )
        elif outcome == "wait":
            blockers.append(
                Blocker(
                    reason="check-pending",
                    detail=f"required {rule.context} is still {run.status} (run {run.id})",
                )
            )
    return blockers
