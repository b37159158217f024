"""Invariant: pr-status's one GraphQL document reads as a consistent snapshot or not at all.

White-box: pr-status's document and parser (`_github.graphql`, `_github.snapshot`), asked over the local forge's real GraphQL answer
and then that answer bent: another shape is malformed, never a decision; a part with another page
or of another commit is left for REST to read.
"""

from __future__ import annotations

from typing import Any

import pytest

from fakeforge import ForgeServer, RepoState, gh_exec
from fakeforge.schema import bent, non_null, off_schema
from forge_automation import ForgeCliError, ReviewState, forge_port, gh_cli_wire
from forge_automation._github.graphql import PR_SNAPSHOT_QUERY
from forge_automation._github.snapshot import (
    PrSnapshot,
    parse_pr_snapshot,
    review_state_from_snapshot,
)
from forge_builders import GreenPr

REPO = "acme/widgets"


def _answer(server: ForgeServer, repo: RepoState) -> dict[str, Any]:
    return server.graphql(PR_SNAPSHOT_QUERY, {"owner": "acme", "name": "widgets", "number": 1})


def test_a_last_commit_other_than_the_head_leaves_runs_and_ancestry_unknown(
    green_pr: GreenPr, server: ForgeServer, repo: RepoState
) -> None:
    green_pr()
    answer = _answer(server, repo)
    snapshot = parse_pr_snapshot(answer)
    assert snapshot is not None
    assert (snapshot.runs is not None, snapshot.up_to_date) == (True, True)
    commit = answer["data"]["repository"]["pullRequest"]["commits"]["nodes"][0]["commit"]
    commit["oid"] = "f" * 40  # a push between the document's reads: runs of another commit
    snapshot = parse_pr_snapshot(answer)
    assert snapshot is not None
    assert (snapshot.runs, snapshot.up_to_date) == (None, False)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["pullRequest", "state"], "ARCHIVED"),
        (["pullRequest", "merged"], "no"),
        (["pullRequest", "headRefOid"], None),
        (["pullRequest", "commits"], None),
        (["pullRequest", "baseRef", "rules", "nodes"], {}),
        (["pullRequest", "baseRef", "rules", "pageInfo"], None),
    ],
)
def test_an_answer_of_another_shape_is_malformed_never_a_decision(
    server: ForgeServer, repo: RepoState, path: list[str], value: object
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", ["ci"])
    answer = _answer(server, repo)
    node = answer["data"]["repository"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ForgeCliError) as caught:
        parse_pr_snapshot(answer)
    assert caught.value.kind == "malformed"
    bodies: list[object] = [None, [], {"data": None}, {"data": {"repository": {"pullRequest": 1}}}]
    for body in bodies:
        with pytest.raises(ForgeCliError) as caught:
            parse_pr_snapshot(body)
        assert caught.value.kind == "malformed"


@pytest.mark.gh
def test_the_documents_rules_read_as_the_rest_rules_do(
    server: ForgeServer, repo: RepoState
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", [("ci", 15368), "lint"], strict=True)
    repo.add_review_rule("main", required_approving_review_count=2, require_code_owner_review=True)
    snapshot = parse_pr_snapshot(_answer(server, repo))
    assert snapshot is not None
    rest = forge_port(gh_cli_wire(gh_exec(server.env()))).required_checks(REPO, "main")
    assert snapshot.rules == rest
    assert rest.reviews is not None
    assert rest.reviews.required_approving_review_count == 2


def test_another_page_of_rules_or_suites_leaves_that_part_to_rest(
    green_pr: GreenPr, server: ForgeServer, repo: RepoState
) -> None:
    green_pr()
    answer = _answer(server, repo)
    pull = answer["data"]["repository"]["pullRequest"]
    pull["baseRef"]["rules"]["pageInfo"]["hasNextPage"] = True
    pull["commits"]["nodes"][0]["commit"]["checkSuites"]["pageInfo"]["hasNextPage"] = True
    snapshot = parse_pr_snapshot(answer)
    assert snapshot is not None
    assert (snapshot.rules, snapshot.runs) == (None, None)


# Each field PR_SNAPSHOT_QUERY selects that the parsers once read leniently (a missing key as
# None or ""), by the GraphQL type declaring it (nullability is read from GitHub's published
# schema), where it sits under `pullRequest`, and a value of another JSON type.
_HEAD = ("commits", "nodes", 0, "commit")
_SUITE = (*_HEAD, "checkSuites", "nodes", 0)
_RUN = (*_SUITE, "checkRuns", "nodes", 0)
_REVIEW = ("reviews", "nodes", 0)
_THREAD = ("reviewThreads", "nodes", 0)
_FIELDS: tuple[tuple[str, str, tuple[str | int, ...], object], ...] = (
    ("PullRequest", "baseRefOid", (), 7),
    ("PullRequest", "title", (), 7),
    ("PullRequest", "headRepository", (), "acme/widgets"),
    ("Repository", "nameWithOwner", ("headRepository",), 7),
    ("PullRequest", "mergedAt", (), 7),
    ("PullRequest", "mergeCommit", (), "f" * 40),
    ("Commit", "oid", ("mergeCommit",), 7),
    ("PullRequest", "baseRef", (), "main"),
    ("Ref", "target", ("baseRef",), "f" * 40),
    ("Commit", "oid", ("baseRef", "target"), 7),
    ("Ref", "rules", ("baseRef",), []),
    ("CheckSuite", "app", _SUITE, 15368),
    ("App", "databaseId", (*_SUITE, "app"), "15368"),
    ("CheckRun", "conclusion", _RUN, 7),
    ("CheckRun", "completedAt", _RUN, 7),
    ("CheckRun", "startedAt", _RUN, 7),
    ("CheckRun", "detailsUrl", _RUN, 7),
    ("CheckRun", "externalId", _RUN, 7),
    ("Actor", "login", (*_REVIEW, "author"), 7),
    ("Commit", "oid", (*_REVIEW, "commit"), 7),
    ("ReviewRequest", "requestedReviewer", ("reviewRequests", "nodes", 0), "carol"),
    ("Commit", "author", _HEAD, "author"),
    ("GitActor", "user", (*_HEAD, "author"), "author"),
    ("User", "login", (*_HEAD, "author", "user"), 7),
    ("PullRequestReviewThread", "path", _THREAD, 7),
    ("PullRequestReviewThread", "line", _THREAD, "3"),
)
_PULL = ("data", "repository", "pullRequest")


def _every_field(server: ForgeServer, repo: RepoState) -> dict[str, Any]:
    """Return the answer for a merged PR whose every object above is there (none null)."""
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    pr = repo.add_pr(1, head_ref="feature", head_sha=head)
    merge = repo.add_commit("merge", parents=[repo.branches["main"], head])
    pr.update(merged=True, merged_at="2024-01-03T00:00:00Z", merge_commit_sha=merge)
    repo.pr_commits[1] = [head]
    repo.commit_users[head] = ("author", "author")
    repo.set_rulesets("main", ["ci"])
    repo.add_run(head, "ci", "success")
    pr["_reviews"] = [{"id": 1, "user": "bob", "state": "APPROVED", "commit_id": head}]
    pr["_review_requests"] = [{"login": "carol"}]
    repo.review_threads[1] = [{"comments": [{"id": 7, "user": "bob", "path": "a.py", "line": 3}]}]
    return _answer(server, repo)


def _read_changed(
    answer: dict[str, Any], path: tuple[str | int, ...], field: str, change: object
) -> tuple[PrSnapshot, ReviewState | None]:
    """Read `answer` (both parsers) with `field` of the node at `path` changed or left out."""
    snapshot = parse_pr_snapshot(bent(answer, (*_PULL, *path), field, change))
    assert snapshot is not None
    return snapshot, review_state_from_snapshot(snapshot.data, snapshot.pr.head_sha)


@pytest.mark.parametrize(
    ("type_name", "field", "path", "wrong"),
    _FIELDS,
    ids=[".".join(map(str, (*p, f))) for _, f, p, _ in _FIELDS],
)
def test_a_field_absent_null_or_of_another_type_where_the_schema_forbids_it_is_malformed(
    server: ForgeServer,
    repo: RepoState,
    type_name: str,
    field: str,
    path: tuple[str | int, ...],
    wrong: object,
) -> None:
    # A field the document selects is always sent (null where the schema allows it). Read
    # leniently, a missing `baseRefOid` was "base unknown", a missing `headRepository` a deleted
    # fork, a missing `conclusion` "no conclusion yet": each such answer fails the read instead.
    answer = _every_field(server, repo)
    for change in off_schema(type_name, field, wrong):
        with pytest.raises(ForgeCliError) as caught:
            _read_changed(answer, path, field, change)
        assert caught.value.kind == "malformed", (field, change)


def test_a_nullable_field_sent_as_null_reads_as_none(server: ForgeServer, repo: RepoState) -> None:
    answer = _every_field(server, repo)
    nullable = [(f, p) for t, f, p, _ in _FIELDS if not non_null(t, f)]
    assert len(nullable) == 17
    for field, path in nullable:
        _read_changed(answer, path, field, None)  # reads
    snapshot, _ = _read_changed(answer, (), "headRepository", None)
    assert snapshot.pr.head_repo is None  # a deleted fork: its branch is never deleted
    snapshot, _ = _read_changed(answer, (), "mergeCommit", None)
    assert snapshot.pr.merge_sha is None
    snapshot, _ = _read_changed(answer, (), "baseRef", None)
    assert (snapshot.rules, snapshot.up_to_date) == (None, False)  # rules then read over REST
    _, reviews = _read_changed(answer, (*_HEAD, "author"), "user", None)
    assert reviews is not None
    assert reviews.unlinked_pusher  # last-push approval cannot be proven
