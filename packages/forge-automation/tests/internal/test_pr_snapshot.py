"""Invariant: pr-status's one GraphQL document reads as a consistent snapshot or not at all.

White-box: pr-status's document and parser (`_github.graphql`, `_github.snapshot`), asked over the local forge's real GraphQL answer
and then that answer bent: another shape is malformed, never a decision; a part with another page
or of another commit is left for REST to read.
"""

from __future__ import annotations

from typing import Any

import pytest

from fakeforge import ForgeServer, RepoState, gh_exec
from forge_automation import ForgeCliError, forge_port, gh_cli_wire
from forge_automation._github.graphql import PR_SNAPSHOT_QUERY
from forge_automation._github.snapshot import parse_pr_snapshot
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
