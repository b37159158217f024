"""ci_verdict rules 1-4 as a table, with the traps: skipped/neutral red, statuses alone pending."""

from __future__ import annotations

import pytest

from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    CheckRunConclusion,
    CheckStatus,
    CiVerdict,
    CommitStatus,
    RequiredChecks,
    RequiredContext,
    StatusState,
    ci_verdict,
)
from forge_builders import check_run

SHA = "a" * 40
OTHER_APP = 4242


def run(
    name: str,
    conclusion: CheckRunConclusion | None = "success",
    *,
    app_id: int | None = ACTIONS_APP_ID,
    run_id: int = 1,
    status: CheckStatus | None = None,
) -> CheckRun:
    completed_at = "2026-01-02T03:04:05Z" if conclusion else None
    return check_run(
        name,
        conclusion,
        head_sha=SHA,
        app_id=app_id,
        run_id=run_id,
        status=status,
        completed_at=completed_at,
    )


def status(context: str, state: StatusState = "success") -> CommitStatus:
    return CommitStatus(context=context, state=state)


def req(context: str, app_id: int | None = None) -> RequiredContext:
    return RequiredContext(context=context, app_id=app_id)


CASES: list[
    tuple[str, list[RequiredContext], list[CheckRun], list[CommitStatus], str, tuple[str, ...]]
] = [
    # rule 1: a required context is green only on success
    ("required success", [req("test")], [run("test")], [], "green", ("test=success",)),
    ("required failure", [req("test")], [run("test", "failure")], [], "red", ("test=failure",)),
    (
        "required skipped is red",
        [req("test")],
        [run("test", "skipped")],
        [],
        "red",
        ("test=skipped",),
    ),
    (
        "required neutral is red",
        [req("test")],
        [run("test", "neutral")],
        [],
        "red",
        ("test=neutral",),
    ),
    (
        "required cancelled",
        [req("test")],
        [run("test", "cancelled")],
        [],
        "red",
        ("test=cancelled",),
    ),
    ("required running", [req("test")], [run("test", None)], [], "pending", ("test=in_progress",)),
    (
        "required queued",
        [req("test")],
        [run("test", None, status="queued")],
        [],
        "pending",
        ("test=queued",),
    ),
    ("required missing", [req("test")], [], [], "pending", ("test=missing",)),
    (
        "superseded failure still red",
        [req("test")],
        [run("test", "failure", run_id=1), run("test", "success", run_id=2)],
        [],
        "red",
        ("test=failure",),
    ),
    (
        "red beats pending",
        [req("a"), req("b")],
        [run("a", None), run("b", "failure")],
        [],
        "red",
        ("b=failure",),
    ),
    (
        "extra failing run ignored when contexts are required",
        [req("test")],
        [run("test"), run("lint", "failure")],
        [],
        "green",
        ("test=success",),
    ),
    # rule 2: unpinned counts only from the built-in CI app or a status
    (
        "unpinned from another app does not count",
        [req("test")],
        [run("test", app_id=OTHER_APP)],
        [],
        "pending",
        ("test=missing",),
    ),
    (
        "unpinned failure from another app does not count either",
        [req("test")],
        [run("test", "failure", app_id=OTHER_APP), run("test")],
        [],
        "green",
        ("test=success",),
    ),
    (
        "unpinned from a status",
        [req("ci/build")],
        [run("x")],
        [status("ci/build")],
        "green",
        ("ci/build=success",),
    ),
    (
        "unpinned status failure",
        [req("ci/build")],
        [],
        [status("ci/build", "failure")],
        "red",
        ("ci/build=failure",),
    ),
    (
        "unpinned status error",
        [req("ci/build")],
        [],
        [status("ci/build", "error")],
        "red",
        ("ci/build=error",),
    ),
    (
        "unpinned status pending",
        [req("ci/build")],
        [],
        [status("ci/build", "pending")],
        "pending",
        ("ci/build=pending",),
    ),
    (
        "pinned to its app",
        [req("test", OTHER_APP)],
        [run("test", app_id=OTHER_APP)],
        [],
        "green",
        ("test=success",),
    ),
    (
        "pinned ignores the built-in app",
        [req("test", OTHER_APP)],
        [run("test")],
        [],
        "pending",
        ("test=missing",),
    ),
    (
        "pinned ignores a status",
        [req("test", OTHER_APP)],
        [],
        [status("test")],
        "pending",
        ("test=missing",),
    ),
    # rule 3: with no required contexts every run and status must pass
    (
        "none required, all pass",
        [],
        [run("a"), run("b", "skipped"), run("c", "neutral")],
        [],
        "green",
        ("a=success", "b=skipped", "c=neutral"),
    ),
    ("none required, one failure", [], [run("a"), run("b", "failure")], [], "red", ("b=failure",)),
    (
        "none required, one running",
        [],
        [run("a"), run("b", None)],
        [],
        "pending",
        ("b=in_progress",),
    ),
    (
        "none required, failed status",
        [],
        [run("a")],
        [status("s", "failure")],
        "red",
        ("s=failure",),
    ),
    (
        "none required, pending status",
        [],
        [run("a")],
        [status("s", "pending")],
        "pending",
        ("s=pending",),
    ),
    (
        "none required, any app counts",
        [],
        [run("a", "failure", app_id=OTHER_APP)],
        [],
        "red",
        ("a=failure",),
    ),
    ("none required, nothing yet", [], [], [], "pending", ("no check runs or statuses yet",)),
    # rule 4: statuses but no check run stays pending
    (
        "statuses alone stay pending",
        [],
        [],
        [status("s")],
        "pending",
        ("statuses but no check run yet",),
    ),
    (
        "a failed status alone is already red",
        [],
        [],
        [status("s", "failure")],
        "red",
        ("s=failure",),
    ),
]


@pytest.mark.parametrize(
    ("rules", "runs", "statuses", "verdict", "reasons"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_ci_verdict_rules(
    rules: list[RequiredContext],
    runs: list[CheckRun],
    statuses: list[CommitStatus],
    verdict: str,
    reasons: tuple[str, ...],
) -> None:
    result = ci_verdict(rules=rules, runs=runs, statuses=statuses)
    assert result == CiVerdict(verdict=verdict, reasons=reasons)  # type: ignore[arg-type]


def test_required_checks_record_is_accepted_as_rules() -> None:
    rules = RequiredChecks(contexts=(req("test"),), strict=True)
    assert ci_verdict(rules=rules, runs=[run("test", "skipped")], statuses=[]).verdict == "red"


def test_to_json_uses_the_spec_keys() -> None:
    result = ci_verdict(rules=[req("test")], runs=[run("test", "failure")], statuses=[])
    assert result.to_json() == {"verdict": "red", "reasons": ["test=failure"]}
