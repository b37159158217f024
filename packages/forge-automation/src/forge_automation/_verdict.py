"""ci_verdict: green, red or pending for a sha from its check runs, statuses and required contexts.

Pure: no I/O, no clock. Every run counts, superseded ones included, so a failed attempt that a
rerun later passed still reads red: the caller re-requests the failed run rather than the verdict
forgetting it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ._constants import ACTIONS_APP_ID
from ._records import CheckRun, CommitStatus, RequiredChecks, RequiredContext, ReviewRules

__all__ = [
    "CiProgress",
    "CiVerdict",
    "Verdict",
    "ci_progress",
    "ci_verdict",
    "merge_required_checks",
]

Verdict: TypeAlias = Literal["green", "red", "pending"]
_Outcome: TypeAlias = Literal["pass", "fail", "wait"]

# Conclusions that let a check that is not required through; a required one passes on success only.
_SOFT_PASS = frozenset({"success", "neutral", "skipped"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CiVerdict:
    """The verdict and the `<name>=<conclusion>` facts that decided it."""

    verdict: Verdict
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        """Return the spec's `{verdict, reasons}` JSON object."""
        return {"verdict": self.verdict, "reasons": list(self.reasons)}


def merge_required_checks(rules: Iterable[RequiredChecks]) -> RequiredChecks:
    """Merge active rulesets' rules: every context, strict if any is, the strictest reviews."""
    rules = list(rules)
    seen: dict[tuple[str, int | None], RequiredContext] = {}
    for rule in rules:
        for context in rule.contexts:
            seen.setdefault((context.context, context.app_id), context)
    reviews = [r.reviews for r in rules if r.reviews is not None]
    return RequiredChecks(
        contexts=tuple(seen.values()),
        strict=any(r.strict for r in rules),
        reviews=_strictest(reviews) if reviews else None,
    )


def _strictest(rules: list[ReviewRules]) -> ReviewRules:
    # Several active rulesets all apply: the forge enforces every one of them.
    return ReviewRules(
        required_approving_review_count=max(r.required_approving_review_count for r in rules),
        require_code_owner_review=any(r.require_code_owner_review for r in rules),
        require_last_push_approval=any(r.require_last_push_approval for r in rules),
        dismiss_stale_reviews_on_push=any(r.dismiss_stale_reviews_on_push for r in rules),
        required_review_thread_resolution=any(r.required_review_thread_resolution for r in rules),
        source=rules[0].source,
    )


def run_outcome(run: CheckRun, *, required: bool) -> _Outcome:
    """Judge one run: unfinished waits; success passes; neutral/skipped pass unless required."""
    if run.status != "completed" or run.conclusion is None:
        return "wait"
    if run.conclusion == "success" or (not required and run.conclusion in _SOFT_PASS):
        return "pass"
    return "fail"


def status_outcome(status: CommitStatus) -> _Outcome:
    """Judge one commit status: success passes, pending waits, failure, error and the rest fail."""
    if status.state == "success":
        return "pass"
    if status.state == "pending":
        return "wait"
    return "fail"


def run_label(run: CheckRun) -> str:
    """Return `<name>=<conclusion>`, or `<name>=<status>` while the run is unfinished."""
    if run.status != "completed" or run.conclusion is None:
        return f"{run.name}={run.status}"
    return f"{run.name}={run.conclusion}"


def contexts_of(rules: RequiredChecks | Iterable[RequiredContext]) -> tuple[RequiredContext, ...]:
    """Return the required contexts of `rules`, whether given as RequiredChecks or a sequence."""
    if isinstance(rules, RequiredChecks):
        return rules.contexts
    return tuple(rules)


@dataclass(frozen=True, slots=True, kw_only=True)
class CiProgress:
    """Where a sha's CI stands: the labels that failed, still wait, and every label judged.

    `missing` names what has not reported at all (required contexts with no run or status; or
    `CI` when no check counts and nothing reported), `missing_labels` their labels in `waiting`.
    """

    failed: tuple[str, ...]
    waiting: tuple[str, ...]
    passed: tuple[str, ...]
    missing: tuple[str, ...]
    missing_labels: tuple[str, ...]


def ci_progress(
    *,
    rules: RequiredChecks | Sequence[RequiredContext],
    runs: Sequence[CheckRun],
    statuses: Sequence[CommitStatus],
) -> CiProgress:
    """Judge a sha's CI by `ci_verdict`'s rules, keeping failures and waits apart."""
    judged, missing = _judge(rules, runs, statuses)
    return CiProgress(
        failed=_unique(label for outcome, label in judged if outcome == "fail"),
        waiting=_unique(label for outcome, label in judged if outcome == "wait"),
        passed=_unique(label for _, label in judged),
        missing=tuple(name for name, _ in missing),
        missing_labels=tuple(label for _, label in missing),
    )


def ci_verdict(
    *,
    rules: RequiredChecks | Sequence[RequiredContext],
    runs: Sequence[CheckRun],
    statuses: Sequence[CommitStatus],
) -> CiVerdict:
    """Judge a sha's CI: red on any failure that counts, pending while any is missing or running."""
    return _combine(_judge(rules, runs, statuses)[0])


_NOTHING_YET = "no check runs or statuses yet"


def _judge(
    rules: RequiredChecks | Sequence[RequiredContext],
    runs: Sequence[CheckRun],
    statuses: Sequence[CommitStatus],
) -> tuple[list[tuple[_Outcome, str]], list[tuple[str, str]]]:
    contexts = contexts_of(rules)
    judged: list[tuple[_Outcome, str]] = []
    missing: list[tuple[str, str]] = []
    if contexts:
        for rule in contexts:
            found = _judge_required(rule, runs, statuses)
            if found == [("wait", f"{rule.context}=missing")]:
                missing.append((rule.context, found[0][1]))
            judged.extend(found)
    else:
        judged.extend((run_outcome(run, required=False), run_label(run)) for run in runs)
        judged.extend((status_outcome(s), f"{s.context}={s.state}") for s in statuses)
        if not judged:
            judged.append(("wait", _NOTHING_YET))
            missing.append(("CI", _NOTHING_YET))
        elif not runs:
            # Statuses can land before any check suite exists: all of CI may not have started.
            judged.append(("wait", "statuses but no check run yet"))
    return judged, missing


def _judge_required(
    rule: RequiredContext, runs: Sequence[CheckRun], statuses: Sequence[CommitStatus]
) -> list[tuple[_Outcome, str]]:
    if rule.app_id is not None:
        # Pinned: only that app's runs; a status cannot prove which app posted it.
        counted = [r for r in runs if r.name == rule.context and r.app_id == rule.app_id]
        matching_statuses: list[CommitStatus] = []
    else:
        counted = [r for r in runs if r.name == rule.context and r.app_id == ACTIONS_APP_ID]
        matching_statuses = [s for s in statuses if s.context == rule.context]
    found = [(run_outcome(r, required=True), run_label(r)) for r in counted]
    found += [(status_outcome(s), f"{s.context}={s.state}") for s in matching_statuses]
    if not found:
        return [("wait", f"{rule.context}=missing")]
    return found


def _combine(judged: Sequence[tuple[_Outcome, str]]) -> CiVerdict:
    failed = _unique(label for outcome, label in judged if outcome == "fail")
    if failed:
        return CiVerdict(verdict="red", reasons=failed)
    waiting = _unique(label for outcome, label in judged if outcome == "wait")
    if waiting:
        return CiVerdict(verdict="pending", reasons=waiting)
    return CiVerdict(verdict="green", reasons=_unique(label for _, label in judged))


def _unique(labels: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(labels))
