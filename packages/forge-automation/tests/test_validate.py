"""Hostile arguments are refused with ForgeInputError naming the field, before any request."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from fakeforge import ForgeServer
from forge_automation import ForgeInputError, ForgePort, fake_forge, forge_port, gh_cli_wire

REPO = "acme/widgets"
SHA = "a" * 40

HOSTILE_BRANCHES = [
    "..",
    "a/../b",
    "%2e%2e",
    "a%2fb",
    "100%",
    "a\x00b",
    "a\nb",
    "a\x7fb",
    "-rf",
    "has space",
    "a@{1}",
    "@",
    "a~1",
    "a^2",
    "a:b",
    "a?b",
    "a*b",
    "a[b",
    "a\\b",
    "x.lock",
    "dir/x.lock",
    "a//b",
    "/lead",
    "trail/",
    "end.",
    ".hidden",
    "a/.hidden",
    "a#frag",
    "",
    "b" * 256,
]
HOSTILE_REPOS = [
    "",
    "acme",
    "acme/",
    "/widgets",
    "acme/widgets/extra",
    "acme/..",
    "acme/.",
    "../widgets",
    "acme/%2e%2e",
    "ac me/widgets",
    "acme/wid gets",
    "-acme/widgets",
    "acme/-widgets",
    "acme/wid\nets",
    "acme/w?x",
    "acme/w#x",
    "a" * 40 + "/w",
    "acme/" + "w" * 101,
]
HOSTILE_SHAS = [
    "",
    "abc",
    "A" * 40,
    "g" * 40,
    "a" * 39,
    "a" * 41,
    "../" + "a" * 37,
    "a" * 39 + "\n",
]
HOSTILE_NUMBERS: list[object] = [0, -1, True, "7", 7.0, 2**31, None]

Call = Callable[[ForgePort], object]


def _branch_calls(value: str) -> list[tuple[str, Call]]:
    # `owner:branch` is open_pr's fork-head form, so `a:b` is a valid head there.
    head_call: list[tuple[str, Call]] = [
        ("head", lambda p: p.open_pr(REPO, head=value, base="main", title="t", body="b"))
    ]
    return [
        *([] if value == "a:b" else head_call),
        ("branch", lambda p: p.ensure_branch(REPO, value, SHA)),
        ("ref", lambda p: p.get_head_sha(REPO, value)),
        ("branch", lambda p: p.delete_ref(REPO, branch=value, head_repo=REPO)),
        ("branch", lambda p: p.required_checks(REPO, value)),
        ("base", lambda p: p.compare_ancestry(REPO, value, SHA)),
        ("head", lambda p: p.compare_files(REPO, "main", value)),
        ("base", lambda p: p.open_pr(REPO, head="topic", base=value, title="t", body="b")),
    ]


def _repo_calls(value: str) -> list[tuple[str, Call]]:
    return [
        ("repo", lambda p: p.get_head_sha(value, "main")),
        ("repo", lambda p: p.ensure_branch(value, "x", SHA)),
        ("repo", lambda p: p.get_pr(value, 1)),
        ("repo", lambda p: p.list_open_prs(value)),
        ("repo", lambda p: p.upsert_comment(value, 1, "<!-- m -->", "b")),
        ("head_repo", lambda p: p.delete_ref(REPO, branch="x", head_repo=value)),
    ]


def _sha_calls(value: str) -> list[tuple[str, Call]]:
    return [
        ("base_sha", lambda p: p.ensure_branch(REPO, "x", value)),
        ("sha", lambda p: p.check_runs(REPO, value)),
        ("sha", lambda p: p.latest_check_runs(REPO, value)),
        ("sha", lambda p: p.commit_statuses(REPO, value)),
        (
            "head_sha",
            lambda p: p.create_check_run(
                REPO, name="n", head_sha=value, conclusion="success", title="t", summary="s"
            ),
        ),
    ]


def _number_calls(value: object) -> list[tuple[str, Call]]:
    n: int = value  # type: ignore[assignment]
    return [
        ("number", lambda p: p.get_pr(REPO, n)),
        ("number", lambda p: p.list_pr_files(REPO, n)),
        ("number", lambda p: p.list_pr_commits(REPO, n)),
        ("number", lambda p: p.upsert_comment(REPO, n, "<!-- m -->", "b")),
        ("number", lambda p: p.list_review_comments(REPO, n)),
        ("number", lambda p: p.list_force_pushes(REPO, n)),
    ]


OTHER_CALLS: list[tuple[str, Call]] = [
    ("marker", lambda p: p.upsert_comment(REPO, 1, "", "b")),
    ("marker", lambda p: p.upsert_comment(REPO, 1, "two\nlines", "b")),
    ("marker", lambda p: p.upsert_comment(REPO, 1, " padded ", "b")),
    ("body", lambda p: p.upsert_comment(REPO, 1, "m", "")),
    ("body", lambda p: p.upsert_comment(REPO, 1, "m", "x" * 70000)),
    ("since", lambda p: p.list_default_branch_commits(REPO, "yesterday")),
    ("since", lambda p: p.list_default_branch_commits(REPO, "2024-01-01T00:00:00")),
    ("since", lambda p: p.list_default_branch_commits(REPO, "2024-01-01T00:00:00Z&x=1")),
    ("etag", lambda p: p.revalidate_open_prs(REPO, 'W/"x"\r\nX-Injected: 1')),
    ("etag", lambda p: p.revalidate_open_prs(REPO, "")),
    (
        "conclusion",
        lambda p: p.create_check_run(
            REPO, name="n", head_sha=SHA, conclusion="neutral", title="t", summary="s"
        ),
    ),
    (
        "conclusion",
        lambda p: p.create_check_run(
            REPO, name="n", head_sha=SHA, conclusion="skipped", title="t", summary="s"
        ),
    ),
    (
        "name",
        lambda p: p.create_check_run(
            REPO, name="", head_sha=SHA, conclusion="success", title="t", summary="s"
        ),
    ),
    ("title", lambda p: p.open_pr(REPO, head="topic", base="main", title=" ", body="b")),
]

CASES: list[tuple[str, str, Call]] = (
    [(f"branch={v!r}", f, c) for v in HOSTILE_BRANCHES for f, c in _branch_calls(v)]
    + [(f"repo={v!r}", f, c) for v in HOSTILE_REPOS for f, c in _repo_calls(v)]
    + [(f"sha={v!r}", f, c) for v in HOSTILE_SHAS for f, c in _sha_calls(v)]
    + [(f"number={v!r}", f, c) for v in HOSTILE_NUMBERS for f, c in _number_calls(v)]
    + [(f"other-{i}", f, c) for i, (f, c) in enumerate(OTHER_CALLS)]
)


@pytest.fixture(scope="module")
def server() -> Iterator[ForgeServer]:
    with ForgeServer() as forge:
        yield forge


@pytest.mark.parametrize(("case", "field", "call"), CASES, ids=[c[0][:60] for c in CASES])
def test_hostile_input_is_refused_before_any_request(
    server: ForgeServer, case: str, field: str, call: Call
) -> None:
    server.clear_log()
    port = forge_port(gh_cli_wire(server.exec(), app_token="ghs_notused0000000000000000"))
    with pytest.raises(ForgeInputError) as caught:
        call(port)
    assert caught.value.field == field, case
    assert server.requests() == []


@pytest.mark.gh
def test_the_server_does_see_a_valid_call(server: ForgeServer) -> None:
    # The empty logs above mean something only if a valid call does reach this server.
    server.clear_log()
    port = forge_port(gh_cli_wire(server.exec()))
    assert port.get_head_sha(REPO, "main") is None  # no such repo: a 404 reads as missing
    assert len(server.requests()) == 1


@pytest.mark.parametrize(
    "value", ["main", "feature/x-1", "release/2024.01", "user@host", "ü-unicode", "a.b/c_d"]
)
def test_ordinary_branch_names_pass(value: str) -> None:
    assert forge_port(fake_forge().wire).get_head_sha(REPO, value) is None


@pytest.mark.parametrize("value", ["acme/widgets", "a/b", "A-1/.github", "x/y.z_w-v"])
def test_ordinary_repos_pass(value: str) -> None:
    assert forge_port(fake_forge().wire).get_head_sha(value, "main") is None


def test_sha256_object_ids_pass() -> None:
    assert forge_port(fake_forge().wire).check_runs(REPO, "b" * 64) == ()
