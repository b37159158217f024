"""merge_readiness rules 1-7, with the traps: missing runs pending, old failures block."""

from __future__ import annotations

from dataclasses import replace

import pytest

from forge_automation import (
    ACTIONS_APP_ID,
    Blocker,
    CheckRun,
    CheckRunConclusion,
    CheckStatus,
    PullRequest,
    Readiness,
    RequiredChecks,
    RequiredContext,
    merge_readiness,
)
from forge_builders import check_run, pull_request

HEAD = "a" * 40
OLD = "b" * 40
APP = ACTIONS_APP_ID
OTHER = 777
PR = pull_request(HEAD, number=5)


def run(
    name: str,
    conclusion: CheckRunConclusion | None = "success",
    *,
    app_id: int | None = APP,
    head_sha: str = HEAD,
    run_id: int = 1,
    status: CheckStatus | None = None,
) -> CheckRun:
    return check_run(
        name, conclusion, head_sha=head_sha, app_id=app_id, run_id=run_id, status=status
    )


def req(context: str, app_id: int | None = None) -> RequiredContext:
    return RequiredContext(context=context, app_id=app_id)


def judge(
    runs: list[CheckRun],
    rules: list[RequiredContext] | RequiredChecks | None = None,
    *,
    pr: PullRequest = PR,
    apps: tuple[int, ...] = (APP,),
    approved: str | None = HEAD,
) -> Readiness:
    return merge_readiness(
        pr=pr,
        rules=[req("test")] if rules is None else rules,
        runs=runs,
        required_apps=apps,
        approved_head=approved,
    )


def reasons(result: Readiness) -> list[str]:
    return [b.reason for b in result.blockers]


def test_all_green_is_ready() -> None:
    result = judge([run("test"), run("lint")])
    assert result == Readiness(ready=True, blockers=())


# -- rule 1: only allowed apps on the PR head count ------------------------------------------


def test_a_run_from_an_app_not_allowed_does_not_count() -> None:
    result = judge([run("test", app_id=OTHER)])
    assert reasons(result) == ["check-pending"]
    assert result.blockers[0].detail == f"test has no completed run from app {APP}"


def test_a_failed_run_from_an_app_not_allowed_does_not_block() -> None:
    assert judge([run("test"), run("lint", "failure", app_id=OTHER)]).ready


def test_a_run_on_an_older_head_does_not_count() -> None:
    result = judge([run("test", head_sha=OLD)])
    assert reasons(result) == ["check-pending"]


def test_a_failed_run_on_an_older_head_does_not_block() -> None:
    assert judge([run("test"), run("test", "failure", head_sha=OLD, run_id=2)]).ready


def test_a_pinned_context_counts_only_its_app() -> None:
    rules = [req("review", OTHER)]
    result = judge([run("review")], rules, apps=(APP, OTHER))
    assert reasons(result) == ["check-pending"]
    assert result.blockers[0].detail == f"review has no completed run from app {OTHER}"
    assert judge([run("review", app_id=OTHER)], rules, apps=(APP, OTHER)).ready


def test_a_pinned_app_outside_required_apps_never_counts() -> None:
    result = judge([run("review", app_id=OTHER)], [req("review", OTHER)], apps=(APP,))
    assert reasons(result) == ["check-pending"]


def test_detail_names_every_allowed_app_when_unpinned() -> None:
    result = judge([], apps=(OTHER, APP))
    assert result.blockers[0].detail == f"test has no completed run from apps {OTHER}, {APP}"


# -- rule 2: required passes only on success; extras also on neutral/skipped -------------------


@pytest.mark.parametrize(
    "conclusion",
    ["neutral", "skipped", "failure", "cancelled", "timed_out", "action_required", "stale"],
)
def test_a_required_check_passes_only_on_success(conclusion: CheckRunConclusion) -> None:
    result = judge([run("test", conclusion)])
    assert reasons(result) == ["check-failed"]
    assert result.blockers[0].detail == f"required test={conclusion} (run 1)"


@pytest.mark.parametrize("conclusion", ["neutral", "skipped", "success"])
def test_an_extra_check_passes_on_neutral_and_skipped(conclusion: CheckRunConclusion) -> None:
    assert judge([run("test"), run("docs", conclusion, run_id=2)]).ready


@pytest.mark.parametrize("conclusion", ["failure", "cancelled", "timed_out", "action_required"])
def test_an_extra_check_that_failed_blocks(conclusion: CheckRunConclusion) -> None:
    result = judge([run("test"), run("docs", conclusion, run_id=2)])
    assert result.blockers == (Blocker(reason="check-failed", detail=f"docs={conclusion} (run 2)"),)


# -- rule 3: a required check with no run is pending ------------------------------------------


def test_a_required_check_with_no_run_is_pending_never_passed() -> None:
    result = judge([run("lint")], [req("test"), req("lint")])
    assert not result.ready
    assert result.blockers == (
        Blocker(reason="check-pending", detail=f"test has no completed run from app {APP}"),
    )


def test_a_required_check_still_running_is_pending() -> None:
    result = judge([run("test", None, status="queued")])
    assert result.blockers == (
        Blocker(reason="check-pending", detail="required test is still queued (run 1)"),
    )


# -- rule 4: no required checks refuses ---------------------------------------------------------


def test_no_required_checks_refuses() -> None:
    result = judge([run("test")], [])
    assert reasons(result) == ["no-required-checks"]


def test_no_required_checks_in_an_empty_record_refuses() -> None:
    result = judge([run("test")], RequiredChecks())
    assert reasons(result) == ["no-required-checks"]


# -- rule 5: an unfinished extra check holds the merge ------------------------------------------


def test_an_unfinished_extra_check_holds_the_merge() -> None:
    result = judge([run("test"), run("deploy-preview", None, run_id=9)])
    assert result.blockers == (
        Blocker(reason="check-pending", detail="deploy-preview is still in_progress (run 9)"),
    )


# -- rule 6: every run counts: a superseded failure still blocks --------------------------------


def test_a_superseded_failed_run_still_blocks() -> None:
    runs = [run("test", "failure", run_id=1), run("test", "success", run_id=2)]
    result = judge(runs)
    assert result.blockers == (
        Blocker(reason="check-failed", detail="required test=failure (run 1)"),
    )


def test_a_superseded_failed_extra_run_still_blocks() -> None:
    runs = [run("test"), run("lint", "failure", run_id=2), run("lint", "success", run_id=3)]
    assert reasons(judge(runs)) == ["check-failed"]


# -- rule 7: a head other than the approved one ---------------------------------------------------


def test_a_head_other_than_the_approved_head_is_unapproved() -> None:
    result = judge([run("test")], approved=OLD)
    assert result.blockers == (
        Blocker(reason="unapproved-head", detail=f"head {HEAD} is not the approved head {OLD}"),
    )


def test_no_approved_head_is_unapproved() -> None:
    assert reasons(judge([run("test")], approved=None)) == ["unapproved-head"]


# -- PR state, conflicts and strict rules ----------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"state": "closed"}, "pr-closed"),
        ({"state": "closed", "merged": True}, "pr-merged"),
        ({"draft": True}, "pr-draft"),
        ({"mergeable_state": "dirty"}, "merge-conflict"),
    ],
)
def test_pr_state_blocks(changes: dict[str, object], reason: str) -> None:
    pr = replace(PR, **changes)  # type: ignore[arg-type]
    assert reasons(judge([run("test")], pr=pr)) == [reason]


def test_unknown_mergeable_state_alone_does_not_block() -> None:
    assert judge([run("test")], pr=replace(PR, mergeable_state="unknown")).ready


def test_strict_rules_block_a_head_behind_the_base() -> None:
    rules = RequiredChecks(contexts=(req("test"),), strict=True)
    behind = replace(PR, behind=True, behind_by=3)
    result = judge([run("test")], rules, pr=behind)
    assert result.blockers == (
        Blocker(
            reason="behind-base",
            detail="main requires an up-to-date head and #5 is behind by 3 commits",
        ),
    )
    assert judge([run("test")], RequiredChecks(contexts=(req("test"),)), pr=behind).ready


def test_every_blocker_is_listed_at_once() -> None:
    runs = [run("test", "failure"), run("lint", None, run_id=2)]
    result = judge(runs, [req("test"), req("build")], approved=OLD)
    assert reasons(result) == ["check-failed", "check-pending", "check-pending", "unapproved-head"]
    assert result.to_json()["ready"] is False
    assert result.to_json()["blockers"] == [b.to_json() for b in result.blockers]
