"""The test forge holds every request to GitHub's published descriptions, through the real gh.

GraphQL documents are validated against npm @octokit/graphql-schema and executed; REST requests
and answers are checked against npm @octokit/openapi. What GitHub would refuse is refused with
GitHub's kind of error and recorded, and a ForgeServer that saw such a request fails its test.
"""

from __future__ import annotations

from typing import Any

import pytest

from fakeforge import USER_TOKEN, ForgeServer, RepoState
from fakeforge.schema import match_operation, request_errors, response_errors
from forge_automation import (
    ExecOptions,
    ForcePushesTruncated,
    RateBudget,
    forge_port,
    gh_cli_wire,
    gh_graphql_api,
    run_gh,
)

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"


def _repo_with_pr(server: ForgeServer, number: int = 9) -> RepoState:
    repo = server.state.repo(REPO)
    root = repo.add_commit("root")
    repo.branches["main"] = root
    repo.add_pr(number, head_ref="topic", head_sha=repo.add_commit("head", parents=[root]))
    return repo


def _comment(i: int, author: str = "ann") -> dict[str, Any]:
    # Review-comment ids have passed 2^31 on GitHub: the reason for fullDatabaseId.
    return {
        "id": 2**31 + i,
        "user": author,
        "author_association": "MEMBER",
        "path": "a.py",
        "line": i % 50 + 1,
        "body": f"comment {i}",
    }


# -- GraphQL -------------------------------------------------------------------------------------


def test_a_review_thread_over_100_comments_is_read_whole_through_gh(server: ForgeServer) -> None:
    repo = _repo_with_pr(server)
    repo.review_threads[9] = [
        {"resolved": True, "comments": [_comment(0, "bob")]},
        {"resolved": False, "comments": [_comment(i) for i in range(1, 251)]},
        {"resolved": False, "comments": [_comment(251, "cy")]},
    ]
    port = forge_port(gh_cli_wire(server.exec()))

    comments = port.list_review_comments(REPO, 9)

    assert [c.id for c in comments] == [2**31 + i for i in range(252)]
    assert [c.resolved for c in comments[:2]] == [True, False]
    assert comments[250].body == "comment 250"
    assert comments[251].author == "cy"
    # One page of threads, then the long thread's comments read on by its node id (2 pages more).
    assert server.state.graphql_ops == {
        "PullRequestReviewThreads": 1,
        "PullRequestReviewThreadComments": 2,
    }


def test_force_pushes_are_read_through_gh(server: ForgeServer) -> None:
    repo = _repo_with_pr(server)
    a, b = repo.add_commit("a"), repo.add_commit("b")
    repo.force_pushes[9] = [(None, a), (a, b)]
    port = forge_port(gh_cli_wire(server.exec()))

    pushes = port.list_force_pushes(REPO, 9)

    assert [(p.before, p.after) for p in pushes] == [(None, a), (a, b)]
    repo.force_pushes[9] = [(a, b)] * 101
    with pytest.raises(ForcePushesTruncated):
        port.list_force_pushes(REPO, 9)
    assert server.state.graphql_ops == {"PullRequestForcePushes": 2}


def test_graphql_spends_its_own_budget_and_names_it(server: ForgeServer) -> None:
    _repo_with_pr(server)
    budget = RateBudget()
    wire = gh_cli_wire(server.exec(), budget=budget)

    assert wire.get_default_branch(REPO) == "main"
    wire.list_force_pushes(REPO, 9)
    wire.list_review_comments(REPO, 9, None)

    # Two GraphQL reads of one point each, one REST call: the counters never mix.
    assert server.state.remaining == 4999
    assert server.state.graphql_remaining == 4998
    assert budget.remaining == budget.remaining_for("core") == 4999
    assert budget.remaining_for("graphql") == 4998
    graphql = [r for r in server.requests("POST") if r.path == "/graphql"]
    assert len(graphql) == 2
    raw = run_gh(["api", "-i", "graphql", "-f", "query={rateLimit{cost}}"], _options(server))
    assert b"x-ratelimit-resource: graphql" in raw.stdout.lower()
    raw = run_gh(["api", "-i", "user"], _options(server))
    assert b"x-ratelimit-resource: core" in raw.stdout.lower()


def _options(server: ForgeServer) -> Any:
    return ExecOptions(env=server.env(USER_TOKEN), timeout=60)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            # SNAPSHOT_QUERY's bug: a misplaced brace puts `done:` inside `open:`.
            "query($o:String!,$n:String!){repository(owner:$o,name:$n){"
            "open:pullRequests(first:1){nodes{number} done:pullRequests(first:1){nodes{number}}}}}",
            "Cannot query field 'pullRequests' on type 'PullRequestConnection'.",
        ),
        ("query($o:String!){repository(owner:$o,name:$o){id", "Syntax Error: Expected Name"),
        (
            "query($o:String!){repository(owner:$o,name:$o){pullRequests(first:101){totalCount}}}",
            "Requesting 101 records on the `pullRequests` connection exceeds the `first` limit",
        ),
        (
            "query($o:String!){repository(owner:$o,name:$o){pullRequests{totalCount}}}",
            "You must provide a `first` or `last` value to properly paginate",
        ),
        ("query{repository(owner:1,name:2){id}}", "String cannot represent a non string value"),
    ],
)
def test_a_document_github_would_refuse_is_refused_through_gh(
    server: ForgeServer, document: str, message: str
) -> None:
    _repo_with_pr(server)
    answer = gh_graphql_api(server.exec())(document, {"o": "acme"})
    assert "data" not in answer
    assert message in answer["errors"][0]["message"]
    violations = server.take_violations()
    assert violations
    assert message in violations[0]


def test_a_field_the_fake_does_not_model_is_a_violation_not_a_silent_null(
    server: ForgeServer,
) -> None:
    _repo_with_pr(server)
    answer = server.graphql(
        "query($o:String!,$n:String!){repository(owner:$o,name:$n){pullRequest(number:9)"
        "{number activeLockReason}}}",
        {"o": "acme", "n": "widgets"},
    )
    assert answer["data"]["repository"]["pullRequest"]["activeLockReason"] is None
    assert server.take_violations() == [
        "GraphQL: the test forge does not model PullRequest.activeLockReason"
    ]


def test_unknown_repository_is_githubs_not_found_and_no_violation(server: ForgeServer) -> None:
    answer = server.graphql('query{repository(owner:"no",name:"such"){id}}', {})
    assert answer["data"] == {"repository": None}
    assert answer["errors"][0]["type"] == "NOT_FOUND"
    assert answer["errors"][0]["path"] == ["repository"]
    assert server.take_violations() == []


def test_a_server_that_saw_a_refused_document_fails_its_test() -> None:
    with pytest.raises(AssertionError, match="requests GitHub would refuse"):  # noqa: SIM117
        with ForgeServer() as server:
            server.graphql("query{viewer{login", {})


# -- REST ----------------------------------------------------------------------------------------


def test_a_request_the_description_does_not_allow_fails_the_test() -> None:
    with pytest.raises(AssertionError) as caught:  # noqa: PT012, SIM117
        with ForgeServer() as server:
            _repo_with_pr(server)
            gh = server.exec()

            def api(*args: str) -> int:
                return gh(["api", *args], ExecOptions(timeout=60)).returncode

            # What GitHub does not document: an enum value, an unknown query field, an unknown
            # body field, an unknown path. The refused ones fail in gh as GitHub's 422 and 404.
            api("-X", "GET", f"repos/{REPO}/pulls", "-f", "state=merged")
            api("-X", "GET", f"repos/{REPO}/pulls", "-f", "sort_by=age")
            assert api(f"repos/{REPO}/issues/9/comments", "-f", "body=x", "-F", "pin=1") == 1
            assert api(f"repos/{REPO}/pulls/9/reviewers") == 1
    text = str(caught.value)
    assert "pulls/list: query state: 'merged' is not one of ['open', 'closed', 'all']" in text
    assert "pulls/list: query sort_by: not a parameter of pulls/list" in text
    assert "issues/create-comment: body.pin: not a documented field" in text
    assert "GET /repos/acme/widgets/pulls/9/reviewers: not a GitHub operation" in text


def test_every_wire_request_is_a_documented_operation(server: ForgeServer) -> None:
    # The contract suite runs every wire method against this server; here, the few the port
    # builds from user input (refs with slashes, a PR head ref, a compare of two refs).
    repo = _repo_with_pr(server)
    repo.branches["feature/x"] = repo.branches["main"]
    wire = gh_cli_wire(server.exec())
    port = forge_port(wire)
    assert port.get_head_sha(REPO, "feature/x") == repo.branches["main"]
    wire.list_check_runs(REPO, "refs/pull/9/head", 1, latest=True)
    port.compare_ancestry(REPO, "main", "feature/x")
    port.commit_statuses(REPO, repo.prs[9]["head"]["sha"])
    paths = {r.path for r in server.requests()}
    assert "/repos/acme/widgets/git/ref/heads/feature/x" in paths
    assert server.take_violations() == []


def test_the_description_checks_catch_the_lies_the_fake_used_to_tell() -> None:
    rows = match_operation("GET", "/repos/acme/widgets/pulls")
    assert rows is not None
    assert response_errors(rows, 200, [{"number": 1, "mergeable_state": "clean"}]) == [
        "200 answer[0].mergeable_state: not a documented field"
    ]
    assert response_errors(rows, 200, [{"number": "1", "changed_files": 3}]) == [
        "200 answer[0].number: str where the description has integer",
        "200 answer[0].changed_files: not a documented field",
    ]
    create = match_operation("POST", "/repos/acme/widgets/check-runs")
    assert create is not None
    assert request_errors(create, {}, {"name": "x"}) == ["body.head_sha: required"]
    assert request_errors(create, {"page": ["2"]}, {"name": "x", "head_sha": "y"}) == [
        "query page: not a parameter of checks/create"
    ]
    assert match_operation("PATCH", "/user/tokens") is None
