"""The states are GitHub's own sets: each public Literal equals the enum GitHub publishes for it
(npm @octokit/graphql-schema and @octokit/openapi), and the wire reads any other value as a
malformed answer (never transient, never passed on as an unknown string)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest
from graphql import GraphQLEnumType

from fakeforge.schema import graphql_schema, openapi
from forge_automation import (
    BackstopCheck,
    BackstopSnapshot,
    BackstopStatus,
    CheckConclusion,
    CheckRunConclusion,
    CheckStatus,
    CompareStatus,
    FileStatus,
    ForgeCliError,
    ForgeWire,
    GraphqlApi,
    MergeableState,
    MergeMethod,
    PrState,
    ReviewDecision,
    ReviewStateName,
    StatusState,
    read_backstop_snapshot,
)
from forge_builders import answering_wire

REPO = "acme/widgets"
SHA = "a" * 40


def ours(alias: object) -> set[str]:
    return set(get_args(alias))


def graphql_enum(name: str) -> set[str]:
    """Return the values of GitHub's GraphQL enum `name`, lower-cased as the REST API spells them."""
    enum = graphql_schema().type_map[name]
    assert isinstance(enum, GraphQLEnumType)
    return {value.lower() for value in enum.values}


def graphql_enum_as_is(name: str) -> set[str]:
    enum = graphql_schema().type_map[name]
    assert isinstance(enum, GraphQLEnumType)
    return set(enum.values)


def rest_schema_enum(schema: str, field: str) -> set[str]:
    """Return the enum of `field` of the REST component schema `schema`."""
    return set(openapi()["components"]["schemas"][schema]["properties"][field]["enum"])


def rest_body_enum(path: str, method: str, field: str) -> set[str]:
    """Return the enum of `field` in the JSON request body of `method path`."""
    body = openapi()["paths"][path][method]["requestBody"]["content"]["application/json"]
    return set(body["schema"]["properties"][field]["enum"])


# -- equal to GitHub's sets ----------------------------------------------------------------------


def test_pr_state_is_the_rest_pull_request_state() -> None:
    assert ours(PrState) == rest_schema_enum("pull-request", "state")
    # An issue row (the labelled-PR listing) has GraphQL's IssueState; GraphQL's PullRequestState
    # adds MERGED, which the records carry as `closed` with `merged=True`.
    assert ours(PrState) == graphql_enum("IssueState")
    assert ours(PrState) == graphql_enum("PullRequestState") - {"merged"}


def test_mergeable_state_is_graphql_merge_state_status() -> None:
    # REST documents `mergeable_state` as a bare string; its values are GraphQL's, lower-cased
    # (DRAFT is deprecated there but still in the schema, so still a value we read).
    assert ours(MergeableState) == graphql_enum("MergeStateStatus")


def test_check_status_is_rest_and_graphql_check_status() -> None:
    assert ours(CheckStatus) == rest_schema_enum("check-run", "status")
    assert ours(CheckStatus) == graphql_enum("CheckStatusState")


def test_check_run_conclusion_is_graphql_check_conclusion_state() -> None:
    assert ours(CheckRunConclusion) == graphql_enum("CheckConclusionState")
    # The REST `check-run` schema leaves out `stale` (GitHub sets it on runs left incomplete
    # 14 days) and `startup_failure`; both are conclusions GitHub answers, so the union is ours.
    assert rest_schema_enum("check-run", "conclusion") <= ours(CheckRunConclusion)
    assert ours(CheckRunConclusion) - rest_schema_enum("check-run", "conclusion") == {
        "stale",
        "startup_failure",
    }
    posted = rest_body_enum("/repos/{owner}/{repo}/check-runs", "post", "conclusion")
    assert posted <= ours(CheckRunConclusion)
    # The conclusions this package writes are ones GitHub accepts.
    assert ours(CheckConclusion) <= posted


def test_status_state_is_the_rest_commit_status_state() -> None:
    assert ours(StatusState) == rest_body_enum(
        "/repos/{owner}/{repo}/statuses/{sha}", "post", "state"
    )
    # GraphQL adds EXPECTED: the rollup's word for a required context nobody has reported yet,
    # never the state of a status someone posted (the package reads statuses over REST).
    assert ours(StatusState) == graphql_enum("StatusState") - {"expected"}


def test_review_states_are_graphql_review_states() -> None:
    assert ours(ReviewStateName) == graphql_enum_as_is("PullRequestReviewState")
    assert ours(ReviewDecision) == graphql_enum_as_is("PullRequestReviewDecision")


def test_compare_and_file_statuses_are_rest_ones() -> None:
    assert ours(CompareStatus) == rest_schema_enum("commit-comparison", "status")
    assert ours(FileStatus) == rest_schema_enum("diff-entry", "status")


def test_merge_methods_are_the_ones_github_accepts() -> None:
    merge = "/repos/{owner}/{repo}/pulls/{pull_number}/merge"
    assert ours(MergeMethod) == rest_body_enum(merge, "put", "merge_method")


# -- a value outside the set is a malformed answer ----------------------------------------------


def pull(**fields: Any) -> dict[str, Any]:
    return {
        "number": 1,
        "state": "open",
        "head": {"sha": SHA, "ref": "feature", "repo": {"full_name": REPO}},
        "base": {"ref": "main", "sha": "b" * 40},
        "mergeable_state": "clean",
        **fields,
    }


def check_runs(**fields: Any) -> dict[str, Any]:
    run = {"id": 1, "name": "ci", "status": "completed", "conclusion": "success", "head_sha": SHA}
    return {"total_count": 1, "check_runs": [{**run, **fields}]}


def pull_reviews(decision: Any = None, state: Any = "APPROVED") -> dict[str, Any]:
    review = {
        "author": {"login": "bob"},
        "state": state,
        "submittedAt": None,
        "authorCanPushToRepository": True,
        "commit": {"oid": SHA},
    }
    pr = {
        "headRefOid": SHA,
        "reviewDecision": decision,
        "reviewRequests": {"pageInfo": {"hasNextPage": False}, "nodes": []},
        "reviews": {"pageInfo": {"hasNextPage": False, "endCursor": None}, "nodes": [review]},
    }
    return {"data": {"repository": {"pullRequest": pr, "object": None}}}


Read = Callable[[ForgeWire], object]
CASES: list[tuple[str, Any, Read]] = [
    ("pr state", pull(state="merged"), lambda w: w.get_pr(REPO, 1)),
    ("mergeable state", pull(mergeable_state="mergeable"), lambda w: w.get_pr(REPO, 1)),
    (
        "check status",
        check_runs(status="done"),
        lambda w: w.list_check_runs(REPO, SHA, 1, latest=True),
    ),
    (
        "check conclusion",
        check_runs(conclusion="passed"),
        lambda w: w.list_check_runs(REPO, SHA, 1, latest=True),
    ),
    (
        "status state",
        {"state": "success", "statuses": [{"context": "ci", "state": "expected"}]},
        lambda w: w.list_commit_statuses(REPO, SHA, 1),
    ),
    ("review state", pull_reviews(state="LGTM"), lambda w: w.get_pull_reviews(REPO, 1, SHA, None)),
    (
        "review decision",
        pull_reviews(decision="MAYBE"),
        lambda w: w.get_pull_reviews(REPO, 1, SHA, None),
    ),
    (
        "compare status",
        {"status": "sideways", "ahead_by": 1, "behind_by": 0},
        lambda w: w.compare_ancestry(REPO, "main", SHA),
    ),
    (
        "file status",
        [{"filename": "a.py", "status": "deleted"}],
        lambda w: w.list_pr_files(REPO, 1, 1),
    ),
    (
        "labelled pr state",
        [{"number": 1, "state": "all", "pull_request": {}}],
        lambda w: w.list_labelled_prs(REPO, "queue", "open", 1),
    ),
    ("a state of another JSON type", pull(state=1), lambda w: w.get_pr(REPO, 1)),
    (
        "a lower-cased GraphQL decision",
        pull_reviews(decision="approved"),
        lambda w: w.get_pull_reviews(REPO, 1, SHA, None),
    ),
]


@pytest.mark.parametrize(("body", "read"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_value_outside_githubs_set_is_malformed(body: Any, read: Read) -> None:
    with pytest.raises(ForgeCliError) as caught:
        read(answering_wire(body))
    assert caught.value.kind == "malformed"
    assert not caught.value.transient


def test_every_documented_value_is_read() -> None:
    wire = answering_wire(pull())
    for state in sorted(ours(MergeableState)):
        assert answering_wire(pull(mergeable_state=state)).get_pr(REPO, 1).mergeable_state == state
    # GitHub may leave mergeable_state out while it computes it: "unknown", not a failure.
    assert answering_wire(pull(mergeable_state=None)).get_pr(REPO, 1).mergeable_state == "unknown"
    assert wire.get_pr(REPO, 1).state == "open"
    for conclusion in sorted(ours(CheckRunConclusion)):
        page = answering_wire(check_runs(conclusion=conclusion)).list_check_runs(
            REPO, SHA, 1, latest=True
        )
        assert [r.conclusion for r in page.items] == [conclusion]
    for decision in sorted(ours(ReviewDecision)):
        read, _ = answering_wire(pull_reviews(decision)).get_pull_reviews(REPO, 1, SHA, None)
        assert read.decision == decision


# -- the backstop snapshot's states --------------------------------------------------------------


def hinted(cls: type, field: str) -> Any:
    return get_type_hints(cls)[field]


def literal_values(hint: Any) -> set[str]:
    """Return the values of a Literal, or of a union of Literals (None left out)."""
    if get_origin(hint) is Literal:
        return set(get_args(hint))
    return {v for arg in get_args(hint) if arg is not type(None) for v in literal_values(arg)}


def test_backstop_states_are_githubs() -> None:
    open_pr = get_args(hinted(BackstopSnapshot, "open"))[0]
    done_pr = get_args(hinted(BackstopSnapshot, "done"))[0]
    review = get_args(hinted(open_pr, "reviews"))[0]
    assert literal_values(hinted(BackstopCheck, "status")) == graphql_enum("CheckStatusState")
    assert literal_values(hinted(BackstopCheck, "conclusion")) == graphql_enum(
        "CheckConclusionState"
    )
    # A rollup context's state is all of GraphQL's StatusState, EXPECTED included.
    assert literal_values(hinted(BackstopStatus, "state")) == graphql_enum("StatusState")
    assert literal_values(hinted(review, "state")) == graphql_enum_as_is("PullRequestReviewState")
    # The done range asks for MERGED and CLOSED only.
    assert literal_values(hinted(done_pr, "state")) == graphql_enum("PullRequestState") - {"open"}


CHECK_NODE = {
    "__typename": "CheckRun",
    "databaseId": 7,
    "name": "ci",
    "status": "COMPLETED",
    "conclusion": "SUCCESS",
    "completedAt": None,
}
STATUS_NODE = {
    "__typename": "StatusContext",
    "context": "legacy",
    "state": "EXPECTED",
    "createdAt": "2030-01-01T00:00:00Z",
}
# Every field the backstop's document selects: GitHub sends each, null or not.
REVIEW_NODE = {
    "fullDatabaseId": "9",
    "author": {"login": "bob"},
    "state": "APPROVED",
    "submittedAt": None,
    "commit": None,
}
DONE_NODE = {
    "number": 2,
    "state": "MERGED",
    "merged": True,
    "mergedAt": None,
    "closedAt": None,
    "updatedAt": "2030-01-01T00:00:00Z",
    "headRefOid": SHA,
    "mergeCommit": None,
    "mergedBy": None,
}


def backstop_answer(
    context: dict[str, Any], review: dict[str, Any], done: dict[str, Any]
) -> GraphqlApi:
    last = {"hasNextPage": False, "endCursor": None}
    rollup = {"contexts": {"pageInfo": last, "nodes": [CHECK_NODE, context]}}
    open_pr = {
        "number": 1,
        "isDraft": False,
        "headRefName": "feature",
        "headRefOid": SHA,
        "baseRefName": "main",
        "updatedAt": "2030-01-01T00:00:00Z",
        "reviews": {"pageInfo": last, "nodes": [review]},
        "headRef": {"target": {"oid": SHA, "statusCheckRollup": rollup}},
    }
    repository = {
        "open": {"pageInfo": last, "nodes": [open_pr]},
        "done": {"pageInfo": last, "nodes": [done]},
        "main": None,
    }
    limit = {"cost": 1, "remaining": 4999, "resetAt": "2030-01-01T01:00:00Z"}
    return lambda query, variables: {"data": {"rateLimit": limit, "repository": repository}}


def read_backstop(api: GraphqlApi) -> BackstopSnapshot:
    return read_backstop_snapshot(
        api, repo=REPO, branch="main", since="2029-01-01T00:00:00Z", main_cursor=None, done_since=0
    )


def test_backstop_reads_githubs_states() -> None:
    snapshot = read_backstop(backstop_answer(STATUS_NODE, REVIEW_NODE, DONE_NODE))
    (pr,) = snapshot.open
    check, status = pr.contexts
    assert isinstance(check, BackstopCheck)
    assert (check.status, check.conclusion) == ("completed", "success")
    assert isinstance(status, BackstopStatus)
    assert status.state == "expected"
    assert [r.state for r in pr.reviews] == ["APPROVED"]
    assert [d.state for d in snapshot.done] == ["merged"]


BACKSTOP_CASES = [
    ("check status", {**CHECK_NODE, "status": "DONE"}, REVIEW_NODE, DONE_NODE),
    ("check conclusion", {**CHECK_NODE, "conclusion": "PASSED"}, REVIEW_NODE, DONE_NODE),
    ("status state", {**STATUS_NODE, "state": "GREEN"}, REVIEW_NODE, DONE_NODE),
    ("missing status state", {**STATUS_NODE, "state": None}, REVIEW_NODE, DONE_NODE),
    ("review state", STATUS_NODE, {**REVIEW_NODE, "state": "LGTM"}, DONE_NODE),
    ("done state", STATUS_NODE, REVIEW_NODE, {**DONE_NODE, "state": "OPEN"}),
    ("done number", STATUS_NODE, REVIEW_NODE, {**DONE_NODE, "number": None}),
]


@pytest.mark.parametrize(
    ("context", "review", "done"),
    [c[1:] for c in BACKSTOP_CASES],
    ids=[c[0] for c in BACKSTOP_CASES],
)
def test_a_backstop_state_outside_githubs_set_is_malformed(
    context: dict[str, Any], review: dict[str, Any], done: dict[str, Any]
) -> None:
    with pytest.raises(ForgeCliError) as caught:
        read_backstop(backstop_answer(context, review, done))
    assert caught.value.kind == "malformed"
    assert not caught.value.transient
