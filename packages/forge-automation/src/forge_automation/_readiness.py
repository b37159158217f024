"""merge_readiness: a pure, explainable "may this PR merge now" from a snapshot the caller read.

Rules (spec, mergeReadiness 1-7): only runs from an allowed app on the PR's head count; a required
context passes on `success` only, others also on `neutral`/`skipped`; a required check with no run
is pending, never passed; no required checks refuses; an unfinished extra check holds the merge;
every run counts, so a superseded failed run still blocks; a head other than the approved one is
unapproved. Beyond the spec's list, a closed, merged or draft PR, a `dirty` (conflicting) PR and,
when strict rules are given, a head behind its base also block.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ._types import CheckRun, PullRequest, RequiredChecks, RequiredContext
from ._verdict import contexts_of, run_label, run_outcome

__all__ = ["BLOCKER_REASONS", "Blocker", "Readiness", "merge_readiness"]

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
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Blocker:
    """Why a PR may not merge: a reason from BLOCKER_REASONS and a sentence naming the check."""

    reason: str
    detail: str

    def to_json(self) -> dict[str, str]:
        """Return `{reason, detail}`."""
        return {"reason": self.reason, "detail": self.detail}


@dataclass(frozen=True, slots=True, kw_only=True)
class Readiness:
    """`ready` is true exactly when there are no blockers."""

    ready: bool
    blockers: tuple[Blocker, ...]

    def to_json(self) -> dict[str, object]:
        """Return `{ready, blockers: [{reason, detail}]}`."""
        return {"ready": self.ready, "blockers": [b.to_json() for b in self.blockers]}


def merge_readiness(
    *,
    pr: PullRequest,
    rules: RequiredChecks | Sequence[RequiredContext],
    runs: Sequence[CheckRun],
    required_apps: Collection[int],
    approved_head: str | None,
) -> Readiness:
    """Decide whether `pr` may merge now; every reason it may not is a Blocker."""
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
    return Readiness(ready=not blockers, blockers=tuple(blockers))


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
