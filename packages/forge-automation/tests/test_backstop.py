"""read_backstop_snapshot through the real gh against the local forge's GraphQL, and its caps."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from fakeforge import ForgeServer, RepoState
from fakeforge.graphql import cursor
from fakeforge.schema import ABSENT, bent, non_null, off_schema
from forge_automation import (
    BACKSTOP_CAPS,
    DONE_OVERLAP_MS,
    BackstopCaps,
    BackstopCheck,
    BackstopSnapshot,
    BackstopStatus,
    BackstopTruncated,
    ForgeCliError,
    ForgeInputError,
    GraphqlApi,
    gh_graphql_api,
    graphql_points,
    read_backstop_snapshot,
    snapshot_requests,
)

REPO = "acme/widgets"
SINCE = "2024-01-01T00:00:00Z"
# 2024-03-01T00:00:00Z in epoch milliseconds.
DONE_SINCE_MS = 1709251200000


def _iso(day: int, minute: int = 0) -> str:
    return f"2024-02-{day:02d}T00:{minute:02d}:00Z"


def _history(repo: RepoState, count: int, *, branch: str = "main") -> list[str]:
    """Build a linear history of `count` commits, one minute apart, and return shas oldest first."""
    shas: list[str] = []
    for i in range(count):
        date = f"2024-01-{1 + i // 1440:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z"
        shas.append(
            repo.add_commit(f"c{i}", parents=shas[-1:], message=f"commit {i}\n\nbody", date=date)
        )
    repo.branches[branch] = shas[-1]
    return shas


def _open_prs(repo: RepoState, count: int, *, start: int = 1) -> None:
    for number in range(start, start + count):
        sha = repo.add_commit(f"head{number}")
        repo.add_pr(number, head_ref=f"b{number}", head_sha=sha)


def _done_prs(
    repo: RepoState, count: int, *, start: int, updated: str = "2024-03-01T00:00:00Z"
) -> None:
    for number in range(start, start + count):
        sha = repo.add_commit(f"done{number}")
        pr = repo.add_pr(number, head_ref=f"d{number}", head_sha=sha, state="closed")
        pr["updated_at"] = updated
        if number % 2:
            pr["merged"] = True
            pr["merged_at"] = updated
            pr["_merged_by"] = "merger"


def _run(repo: RepoState, run_id: int, name: str, sha: str, conclusion: str | None) -> None:
    repo.check_runs.append(
        {
            "id": run_id,
            "name": name,
            "head_sha": sha,
            "status": "completed" if conclusion else "in_progress",
            "conclusion": conclusion,
            "completed_at": "2024-02-01T00:00:00Z" if conclusion else None,
            "app": {"id": 15368},
        }
    )


def _review(number: int, i: int, sha: str) -> dict[str, Any]:
    # Stored REST-shaped, like every other record of the forge; ids past 2^31 (BigInt strings).
    return {
        "id": 2**31 + number * 10000 + i,
        "user": f"reviewer{i}",
        "state": "APPROVED" if i % 2 else "COMMENTED",
        "submitted_at": f"2024-02-01T00:00:{i % 60:02d}Z",
        "commit_id": sha,
    }


def _direct(server: ForgeServer) -> GraphqlApi:
    """Answer documents in-process (the same executor as over gh) for the cap tests' many pages."""
    return server.graphql


def _read(api: GraphqlApi, **arguments: Any) -> BackstopSnapshot:
    """Read the snapshot of `main` since SINCE (done PRs since DONE_SINCE_MS); `arguments` differ."""
    defaults: dict[str, Any] = {
        "repo": REPO,
        "branch": "main",
        "since": SINCE,
        "main_cursor": None,
        "done_since": DONE_SINCE_MS,
    }
    return read_backstop_snapshot(api, **{**defaults, **arguments})


def _bending(server: ForgeServer, bend: Callable[[Any], Any]) -> tuple[GraphqlApi, list[str]]:
    """Return an api answering as `_direct` but with every Backstop page's answer passed through
    `bend`, and the list of the queries it bent."""
    api = _direct(server)
    bent_queries: list[str] = []

    def answer(query: str, variables: Mapping[str, Any]) -> Mapping[str, Any]:
        whole = api(query, variables)
        if not query.startswith("query Backstop("):
            return whole
        bent_queries.append(query)
        result: Mapping[str, Any] = bend(whole)
        return result

    return answer, bent_queries


def test_cost_formula_gives_203_requests_and_2_points() -> None:
    assert snapshot_requests() == 203
    assert graphql_points(snapshot_requests()) == 2
    # A later page without the open range is three cheap connections: one point.
    assert snapshot_requests(open=False) == 2
    assert graphql_points(snapshot_requests(open=False, done=False)) == 1
    assert graphql_points(250) == 3
    assert graphql_points(249) == 2
    with pytest.raises(ValueError):
        graphql_points(-1)


@pytest.mark.gh
def test_every_range_pages_through_real_gh(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    shas = _history(repo, 120)
    _open_prs(repo, 101)
    _done_prs(repo, 21, start=500)
    first = repo.prs[1]["head"]["sha"]
    for i in range(101):
        _run(repo, 9000 + i, f"check-{i:03d}", first, "success")
    repo.statuses[first] = [{"context": "ci/legacy", "state": "failure", "created_at": _iso(3)}]
    second = repo.prs[2]
    second["_reviews"] = [_review(2, i, second["head"]["sha"]) for i in range(150)]
    server.clear_log()

    snapshot = _read(gh_graphql_api(server.exec()))

    assert [pr.number for pr in snapshot.open] == list(range(1, 102))
    contexts = snapshot.open[0].contexts
    assert len(contexts) == 102
    checks = [c for c in contexts if isinstance(c, BackstopCheck)]
    assert checks[0] == BackstopCheck(
        database_id=9000,
        name="check-000",
        status="completed",
        conclusion="success",
        completed_at="2024-02-01T00:00:00Z",
    )
    assert [c for c in contexts if isinstance(c, BackstopStatus)] == [
        BackstopStatus(context="ci/legacy", state="failure", created_at=_iso(3))
    ]
    reviews = snapshot.open[1].reviews
    assert [r.database_id for r in reviews] == [2**31 + 20000 + i for i in range(150)]
    assert reviews[1].author == "reviewer1"
    assert reviews[1].state == "APPROVED"
    assert [pr.number for pr in snapshot.done] == list(range(500, 521))
    assert snapshot.done[1].merged_by == "merger"
    assert snapshot.done[0].merged_by is None
    assert snapshot.main.tip == shas[-1]
    assert [c[0] for c in snapshot.main.commits] == shas[::-1]
    assert snapshot.main.commits[0][1] == "commit 119"

    # Pages 1-3 of the snapshot document, then one contexts and one reviews re-read.
    assert dict(server.state.graphql_ops) == {
        "Backstop": 3,
        "BackstopContexts": 1,
        "BackstopReviews": 1,
    }
    bodies = [json.loads(r.body) for r in server.requests("POST") if r.path == "/graphql"]
    pages = [b for b in bodies if b["query"].startswith("query Backstop(")]
    assert len({b["query"] for b in pages}) == 1, "every page re-sends the same document"
    flags = [(v["withOpen"], v["withDone"], v["withMain"]) for v in (b["variables"] for b in pages)]
    assert flags == [(True, True, True), (True, True, True), (False, False, True)]
    assert pages[2]["variables"]["mainAfter"] == cursor(100)
    assert snapshot.rate_limit.queries == 5
    assert snapshot.rate_limit.cost == 2 + 2 + 1 + 1 + 1
    assert snapshot.rate_limit.remaining == 5000 - 7 == server.state.graphql_remaining
    assert snapshot.rate_limit.reset_at is not None


def test_done_stops_past_the_overlap_and_main_stops_before_the_cursor(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    shas = _history(repo, 10)
    inside = DONE_SINCE_MS - DONE_OVERLAP_MS  # exactly at the cutoff still counts
    _done_prs(repo, 2, start=10, updated="2024-03-01T00:00:00Z")
    _done_prs(repo, 1, start=20, updated="2024-02-29T23:50:00Z")  # == cutoff
    _done_prs(repo, 1, start=30, updated="2024-02-29T23:49:59Z")  # older: stops here
    assert inside == 1709250600000
    snapshot = _read(_direct(server), main_cursor=shas[6], done_since="2024-03-01T00:00:00Z")
    assert [pr.number for pr in snapshot.done] == [10, 11, 20]
    assert [c[0] for c in snapshot.main.commits] == shas[:6:-1]
    assert snapshot.open == ()


def test_since_bounds_history_and_a_missing_branch_reads_empty(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    shas = _history(repo, 5)
    snapshot = _read(_direct(server), since="2024-01-01T00:03:00Z")
    assert [c[0] for c in snapshot.main.commits] == [shas[4], shas[3]]
    empty = _read(_direct(server), branch="gone")
    assert empty.main.tip is None
    assert empty.main.commits == ()
    # `main: null` is no such branch; `main` left out is an answer that cannot say which.
    api, cut = _bending(server, lambda a: bent(a, ("data", "repository"), "main", ABSENT))
    with pytest.raises(ForgeCliError) as caught:
        _read(api)
    assert (caught.value.kind, len(cut)) == ("malformed", 1)


@pytest.mark.parametrize(
    ("range_name", "cap"),
    [("main", 20), ("done", 10), ("open", 20), ("contexts", 10), ("reviews", 10)],
)
def test_each_cap_of_backstop_caps_raises_truncated(
    server: ForgeServer, range_name: str, cap: int
) -> None:
    repo = server.state.repo(REPO)
    assert getattr(BACKSTOP_CAPS, range_name) == cap
    if range_name == "main":
        _history(repo, 20 * 50 + 1)
    elif range_name == "done":
        _done_prs(repo, 10 * 20 + 1, start=1000)
    elif range_name == "open":
        _open_prs(repo, 20 * 100 + 1)
    elif range_name == "contexts":
        _open_prs(repo, 1)
        sha = repo.prs[1]["head"]["sha"]
        for i in range(11 * 100 + 1):
            _run(repo, 100000 + i, f"c{i}", sha, "success")
    else:
        _open_prs(repo, 1)
        repo.prs[1]["_reviews"] = [_review(1, i, "0" * 40) for i in range(11 * 100 + 1)]
    with pytest.raises(BackstopTruncated) as caught:
        _read(_direct(server))
    assert (caught.value.range, caught.value.cap) == (range_name, cap)


@pytest.mark.parametrize("range_name", ["main", "done", "open", "contexts", "reviews"])
def test_a_range_exactly_at_its_cap_is_read_whole(server: ForgeServer, range_name: str) -> None:
    repo = server.state.repo(REPO)
    caps = BackstopCaps(main=2, done=2, open=2, contexts=1, reviews=1)
    if range_name == "main":
        _history(repo, 100)
    elif range_name == "done":
        _done_prs(repo, 40, start=1000)
    elif range_name == "open":
        _open_prs(repo, 200)
    elif range_name == "contexts":
        _open_prs(repo, 1)
        sha = repo.prs[1]["head"]["sha"]
        for i in range(200):
            _run(repo, 100000 + i, f"c{i}", sha, None)
    else:
        _open_prs(repo, 1)
        repo.prs[1]["_reviews"] = [_review(1, i, "0" * 40) for i in range(200)]
    snapshot = _read(_direct(server), caps=caps)
    sizes = {
        "main": len(snapshot.main.commits),
        "done": len(snapshot.done),
        "open": len(snapshot.open),
        "contexts": len(snapshot.open[0].contexts) if snapshot.open else 0,
        "reviews": len(snapshot.open[0].reviews) if snapshot.open else 0,
    }
    assert sizes[range_name] == {"main": 100, "done": 40, "open": 200}.get(range_name, 200)


@pytest.mark.gh
def test_an_errors_entry_beside_data_fails_the_read_through_gh(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    _history(repo, 3)
    server.state.graphql_faults.append(
        {"type": "RATE_LIMITED", "message": "secondary limit ghs_leakedtoken1234567890", "path": []}
    )
    with pytest.raises(ForgeCliError) as caught:
        _read(gh_graphql_api(server.exec()))
    assert "secondary limit" in str(caught.value)
    assert "ghs_leaked" not in str(caught.value)


def test_an_errors_entry_on_a_follow_up_fails_the_read(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    _open_prs(repo, 1)
    repo.prs[1]["_reviews"] = [_review(1, i, "0" * 40) for i in range(101)]
    api = _direct(server)
    calls: list[str] = []

    def failing_follow_up(query: str, variables: Mapping[str, Any]) -> Mapping[str, Any]:
        calls.append(query.split("(", 1)[0])
        answer = dict(api(query, variables))
        if "BackstopReviews" in query:
            answer["errors"] = [{"message": "Something went wrong"}]
        return answer

    with pytest.raises(ForgeCliError, match="Something went wrong"):
        _read(failing_follow_up)
    assert calls == ["query Backstop", "query BackstopReviews"]


def test_unknown_repository_and_bad_arguments(server: ForgeServer) -> None:
    with pytest.raises(ForgeCliError, match="Could not resolve"):
        _read(_direct(server), repo="nobody/nothing")
    bad_arguments = {"repo": "../x", "branch": "a..b", "since": "yesterday", "main_cursor": "HEAD"}
    for field, bad in bad_arguments.items():
        with pytest.raises(ForgeInputError) as caught:
            _read(_direct(server), **{field: bad})
        assert caught.value.field == field
    # Only the unknown repository's read was sent: bad arguments never reach the forge.
    assert server.state.graphql_ops == {"Backstop": 1}


_CONNECTIONS: tuple[tuple[str | int, ...], ...] = (
    ("open",),
    ("done",),
    ("main", "target", "history"),
    ("open", "nodes", 0, "reviews"),
    ("open", "nodes", 0, "headRef", "target", "statusCheckRollup", "contexts"),
)


def _one_of_each(server: ForgeServer) -> None:
    """One open PR (a check run, a status, a review), one merged done PR, three commits."""
    repo = server.state.repo(REPO)
    _history(repo, 3)
    _open_prs(repo, 1)
    _done_prs(repo, 1, start=3)
    head = str(repo.prs[1]["head"]["sha"])
    _run(repo, 1, "build", head, "success")
    repo.statuses[head] = [{"context": "ci/legacy", "state": "success", "created_at": _iso(3)}]
    repo.prs[1]["_reviews"] = [_review(1, 1, head)]


@pytest.mark.parametrize("field", ["nodes", "pageInfo"])
@pytest.mark.parametrize("path", _CONNECTIONS, ids=lambda p: ".".join(map(str, p)))
def test_a_page_without_nodes_or_page_info_fails_the_read_never_reads_whole(
    server: ForgeServer, path: tuple[str | int, ...], field: str
) -> None:
    # A page that cannot say whether more follow would read as a whole range, and a cut range
    # as "those PRs are gone": every connection the snapshot pages must carry both.
    _one_of_each(server)
    api, cut = _bending(server, lambda a: bent(a, ("data", "repository", *path), field, ABSENT))
    with pytest.raises(ForgeCliError) as caught:
        _read(api)
    assert caught.value.kind == "malformed"
    assert cut


# Each field the backstop reads, by the GraphQL type that declares it (nullability is read from
# GitHub's published schema), where the snapshot answer holds it, and a value of another type.
_OPEN_PR = ("repository", "open", "nodes", 0)
_DONE_PR = ("repository", "done", "nodes", 0)
_REVIEW = (*_OPEN_PR, "reviews", "nodes", 0)
_COMMIT = ("repository", "main", "target", "history", "nodes", 0)
_CONTEXTS = (*_OPEN_PR, "headRef", "target", "statusCheckRollup", "contexts", "nodes")
_CHECK = (*_CONTEXTS, "CheckRun")
_STATUS = (*_CONTEXTS, "StatusContext")
_FIELDS: tuple[tuple[str, str, tuple[str | int, ...], Any], ...] = (
    ("PullRequest", "number", _OPEN_PR, "1"),
    ("PullRequest", "isDraft", _OPEN_PR, "false"),
    ("PullRequest", "headRefName", _OPEN_PR, 7),
    ("PullRequest", "headRefOid", _OPEN_PR, 7),
    ("PullRequest", "baseRefName", _OPEN_PR, 7),
    ("PullRequest", "updatedAt", _OPEN_PR, 7),
    ("PullRequest", "headRef", _OPEN_PR, "b1"),
    ("Ref", "target", (*_OPEN_PR, "headRef"), "f" * 40),
    ("Commit", "oid", (*_OPEN_PR, "headRef", "target"), 7),
    ("Commit", "statusCheckRollup", (*_OPEN_PR, "headRef", "target"), "success"),
    ("PullRequest", "merged", _DONE_PR, "false"),
    ("PullRequest", "number", _DONE_PR, "2"),
    ("PullRequest", "updatedAt", _DONE_PR, 7),
    ("PullRequest", "headRefOid", _DONE_PR, 7),
    ("PullRequest", "mergedAt", _DONE_PR, 7),
    ("PullRequest", "closedAt", _DONE_PR, 7),
    ("PullRequest", "mergedBy", _DONE_PR, "merger"),
    ("Actor", "login", (*_DONE_PR, "mergedBy"), 7),
    ("PullRequest", "mergeCommit", _DONE_PR, "f" * 40),
    ("Ref", "target", ("repository", "main"), "f" * 40),
    ("Commit", "oid", ("repository", "main", "target"), 7),
    ("Commit", "oid", _COMMIT, 7),
    ("Commit", "messageHeadline", _COMMIT, 7),
    ("Commit", "committedDate", _COMMIT, 7),
    ("CheckRun", "databaseId", _CHECK, "1"),
    ("CheckRun", "name", _CHECK, 7),
    ("CheckRun", "conclusion", _CHECK, 7),
    ("CheckRun", "completedAt", _CHECK, 7),
    ("StatusContext", "context", _STATUS, 7),
    ("StatusContext", "createdAt", _STATUS, 7),
    ("PullRequestReview", "fullDatabaseId", _REVIEW, [1]),
    ("PullRequestReview", "author", _REVIEW, "reviewer1"),
    ("Actor", "login", (*_REVIEW, "author"), 7),
    ("PullRequestReview", "submittedAt", _REVIEW, 7),
    ("PullRequestReview", "commit", _REVIEW, "f" * 40),
    ("Query", "rateLimit", (), "5000"),
    ("RateLimit", "cost", ("rateLimit",), "1"),
    ("RateLimit", "remaining", ("rateLimit",), "4999"),
    ("RateLimit", "resetAt", ("rateLimit",), 7),
)


def _read_changed(server: ForgeServer, path: tuple[str | int, ...], field: str, change: Any) -> Any:
    """Read the snapshot with `field` of the node at `path` (under `data`) set to `change`."""
    api, changed = _bending(server, lambda a: bent(a, ("data", *path), field, change))
    snapshot = _read(api)
    assert changed
    return snapshot


@pytest.mark.parametrize(
    ("type_name", "field", "path", "wrong"),
    _FIELDS,
    ids=[
        ".".join([*(str(k) for k in p if k not in ("repository", "nodes", 0)), f])
        for _, f, p, _ in _FIELDS
    ],
)
def test_a_field_absent_null_or_of_another_type_where_the_schema_forbids_it_is_malformed(
    server: ForgeServer, type_name: str, field: str, path: tuple[str | int, ...], wrong: Any
) -> None:
    # A field the snapshot selects is always sent; a non-null one is never null and a Boolean is
    # a JSON boolean. Read leniently, a missing head ref would be "" and `isDraft: "false"` a
    # draft: every such answer fails the read instead of giving a record that is not GitHub's.
    _one_of_each(server)
    for change in off_schema(type_name, field, wrong):
        with pytest.raises(ForgeCliError) as caught:
            _read_changed(server, path, field, change)
        assert caught.value.kind == "malformed", (field, change)


# Each nullable field above sent as null (the field, where it sits): what then reads "none".
_Read = Callable[[BackstopSnapshot], object]


def _check(snapshot: BackstopSnapshot) -> BackstopCheck:
    return next(c for c in snapshot.open[0].contexts if isinstance(c, BackstopCheck))


_NULLS: dict[tuple[str, tuple[str | int, ...]], tuple[_Read, object]] = {
    # A deleted head branch, or a head nothing reported on: no contexts to read.
    ("headRef", _OPEN_PR): (lambda s: s.open[0].contexts, ()),
    ("target", (*_OPEN_PR, "headRef")): (lambda s: s.open[0].contexts, ()),
    ("statusCheckRollup", (*_OPEN_PR, "headRef", "target")): (lambda s: s.open[0].contexts, ()),
    ("mergedAt", _DONE_PR): (lambda s: s.done[0].merged_at, None),
    ("closedAt", _DONE_PR): (lambda s: s.done[0].closed_at, None),
    ("mergedBy", _DONE_PR): (lambda s: s.done[0].merged_by, None),
    ("mergeCommit", _DONE_PR): (lambda s: s.done[0].merge_sha, None),
    ("databaseId", _CHECK): (lambda s: _check(s).database_id, None),
    ("conclusion", _CHECK): (lambda s: _check(s).conclusion, None),
    ("completedAt", _CHECK): (lambda s: _check(s).completed_at, None),
    ("fullDatabaseId", _REVIEW): (lambda s: s.open[0].reviews[0].database_id, None),
    ("author", _REVIEW): (lambda s: s.open[0].reviews[0].author, None),
    ("submittedAt", _REVIEW): (lambda s: s.open[0].reviews[0].submitted_at, None),
    ("commit", _REVIEW): (lambda s: s.open[0].reviews[0].commit_sha, None),
    ("rateLimit", ()): (lambda s: s.rate_limit.remaining, None),  # no answer reported a budget
}
# The branch's ref without a target: its history cannot be read, never "an empty branch".
_NULL_IS_MALFORMED = {("target", ("repository", "main"))}


def test_a_nullable_field_sent_as_null_reads_as_none(server: ForgeServer) -> None:
    _one_of_each(server)
    nullable = {(f, p) for t, f, p, _ in _FIELDS if not non_null(t, f)}
    assert nullable == set(_NULLS) | _NULL_IS_MALFORMED
    for (field, path), (read, none) in _NULLS.items():
        assert read(_read_changed(server, path, field, None)) == none, field
    for field, path in _NULL_IS_MALFORMED:
        with pytest.raises(ForgeCliError) as caught:
            _read_changed(server, path, field, None)
        assert caught.value.kind == "malformed"


def test_a_context_without_its_typename_is_malformed_never_skipped(server: ForgeServer) -> None:
    # Each rollup context says what it is; one that does not was read as "another kind" and
    # dropped, so a failing check could vanish from the snapshot.
    _one_of_each(server)
    with pytest.raises(ForgeCliError) as caught:
        _read_changed(server, _CHECK, "__typename", ABSENT)
    assert caught.value.kind == "malformed"
