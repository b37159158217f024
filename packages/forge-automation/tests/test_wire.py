"""The gh wire: status-line parsing, errors with statuses, the app token's path, gh's own env."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence

import pytest

from fakeforge import USER_TOKEN, ForgeServer
from forge_automation import (
    CheckRunRequest,
    ExecOptions,
    ExecResult,
    ForgeCliError,
    GhExec,
    NotModified,
    Page,
    RateBudget,
    forge_port,
    gh_cli_wire,
    redact_split,
    run_gh,
)

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
APP_TOKEN = "ghs_canaryAppToken1234567890abcdefABCDEF"
SHA = "c" * 40


class Recorder:
    """A GhExec seam around the real gh that keeps every argv and child env it was given."""

    def __init__(self, inner: GhExec) -> None:
        self.inner = inner
        self.calls: list[tuple[list[str], dict[str, str]]] = []

    def __call__(self, args: Sequence[str], options: ExecOptions) -> ExecResult:
        self.calls.append((list(args), dict(options.env or {})))
        return self.inner(args, options)


def _request(**overrides: object) -> CheckRunRequest:
    fields: dict[str, object] = {
        "name": "review",
        "head_sha": SHA,
        "conclusion": "success",
        "title": "Reviewed",
        "summary": "ok",
    }
    fields.update(overrides)
    return CheckRunRequest(**fields)  # type: ignore[arg-type]


def test_a_304_through_real_gh_is_not_an_error(forge_server: ForgeServer) -> None:
    repo = forge_server.state.repo(REPO)
    repo.add_pr(1, head_ref="a", head_sha=SHA)
    wire = gh_cli_wire(forge_server.exec())
    first = wire.list_open_prs(REPO, 1, None)
    assert isinstance(first, Page)
    assert first.etag
    again = wire.list_open_prs(REPO, 1, first.etag)
    assert isinstance(again, NotModified)
    assert forge_server.state.not_modified == 1


@pytest.mark.parametrize(("status", "call"), [(404, "get_pr"), (422, "create_ref")])
def test_failures_carry_the_http_status(forge_server: ForgeServer, status: int, call: str) -> None:
    repo = forge_server.state.repo(REPO)
    repo.branches["main"] = repo.add_commit("root")
    wire = gh_cli_wire(forge_server.exec())
    main = repo.branches["main"]
    action = (
        (lambda: wire.get_pr(REPO, 99))
        if call == "get_pr"
        else (lambda: wire.create_ref(REPO, "main", main))
    )
    with pytest.raises(ForgeCliError) as caught:
        action()
    assert caught.value.status == status
    assert f"HTTP {status}" in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_bad_credentials_read_as_401(forge_server: ForgeServer) -> None:
    wire = gh_cli_wire(forge_server.exec(token="wrong"))
    with pytest.raises(ForgeCliError) as caught:
        wire.get_authenticated_user()
    assert caught.value.status == 401


def test_gh_failing_before_http_has_no_status(forge_server: ForgeServer) -> None:
    env = forge_server.env()
    env["HTTP_PROXY"] = env["http_proxy"] = "http://127.0.0.1:9"  # discard port: refused
    wire = gh_cli_wire(
        lambda args, options: run_gh(args, ExecOptions(env={**env, **(options.env or {})}))
    )
    with pytest.raises(ForgeCliError) as caught:
        wire.get_authenticated_user()
    assert caught.value.status is None


def test_each_wire_method_runs_gh_once(forge_server: ForgeServer) -> None:
    repo = forge_server.state.repo(REPO)
    root = repo.add_commit("root")
    repo.branches["main"] = root
    repo.add_pr(1, head_ref="topic", head_sha=root)
    recorder = Recorder(forge_server.exec())
    wire = gh_cli_wire(recorder)
    calls: list[Callable[[], object]] = [
        wire.get_authenticated_user,
        lambda: wire.get_ref_sha(REPO, "heads/main"),
        lambda: wire.get_default_branch(REPO),
        lambda: wire.get_pr(REPO, 1),
        lambda: wire.compare_ancestry(REPO, "main", root),
        lambda: wire.list_pr_files(REPO, 1, 1),
        lambda: wire.list_check_runs(REPO, root, 1, latest=True),
        lambda: wire.list_commit_statuses(REPO, root, 1),
        lambda: wire.list_review_comments(REPO, 1, None),
        lambda: wire.list_force_pushes(REPO, 1),
    ]
    for number, call in enumerate(calls, start=1):
        call()
        assert len(recorder.calls) == number
        assert len(forge_server.requests()) == number
    assert forge_server.requests()[-1].path == "/graphql"


def test_app_token_goes_to_one_child_env_only(forge_server: ForgeServer) -> None:
    repo = forge_server.state.repo(REPO)
    repo.branches["main"] = repo.add_commit("root")
    forge_server.state.app_tokens[APP_TOKEN] = 42
    environ_before = dict(os.environ)
    recorder = Recorder(forge_server.exec())
    port = forge_port(gh_cli_wire(recorder, app_token=lambda: APP_TOKEN))
    port.get_head_sha(REPO, "main")
    run = port.create_check_run(
        REPO, name="review", head_sha=SHA, conclusion="failure", title="T", summary="S"
    )
    port.get_head_sha(REPO, "main")
    assert run.app_id == 42
    assert run.conclusion == "failure"
    assert dict(os.environ) == environ_before
    assert all(APP_TOKEN not in arg for args, _ in recorder.calls for arg in args)
    envs = [env for _, env in recorder.calls]
    assert [APP_TOKEN in env.values() for env in envs] == [False, True, False]
    auth = [r.headers.get("Authorization") for r in forge_server.requests()]
    assert auth == [f"token {USER_TOKEN}", f"token {APP_TOKEN}", f"token {USER_TOKEN}"]
    assert forge_server.state.check_run_tokens == [APP_TOKEN]


def test_a_wire_without_app_token_refuses_check_runs(forge_server: ForgeServer) -> None:
    wire = gh_cli_wire(forge_server.exec())
    with pytest.raises(ForgeCliError, match="app_token"):
        wire.create_check_run(REPO, _request())
    assert forge_server.requests() == []


def test_provider_errors_are_redacted(forge_server: ForgeServer) -> None:
    def provider() -> str:
        raise RuntimeError(f"exchange failed for {APP_TOKEN} with eyJhbGciOi.eyJpc3MiOjF9.c2ln")

    wire = gh_cli_wire(forge_server.exec(), app_token=provider)
    with pytest.raises(ForgeCliError) as caught:
        wire.create_check_run(REPO, _request())
    text = "".join(traceback.format_exception(caught.value))
    assert APP_TOKEN not in text
    assert "eyJhbGciOi" not in text
    assert "[redacted]" in text
    # The provider's RuntimeError quotes the token: it must not ride along as __context__.
    assert caught.value.__context__ is None


def test_a_rejected_app_token_is_not_echoed(forge_server: ForgeServer) -> None:
    wire = gh_cli_wire(forge_server.exec(), app_token=APP_TOKEN)  # the server does not know it
    with pytest.raises(ForgeCliError) as caught:
        wire.create_check_run(REPO, _request())
    assert caught.value.status == 401
    assert APP_TOKEN not in "".join(traceback.format_exception(caught.value))


def test_token_split_across_stdout_and_stderr_is_cut_from_both() -> None:
    half = len(APP_TOKEN) // 2

    def leaky(args: Sequence[str], options: ExecOptions) -> ExecResult:
        token = (options.env or {})["GH_TOKEN"]
        return ExecResult(
            returncode=1,
            stdout=f"partial {token[:half]}".encode(),
            stderr=f"{token[half:]} trailing".encode(),
        )

    wire = gh_cli_wire(leaky, app_token=APP_TOKEN)
    with pytest.raises(ForgeCliError) as caught:
        wire.create_check_run(REPO, _request())
    message = str(caught.value)
    assert APP_TOKEN[:half] not in message
    assert APP_TOKEN[half:] not in message
    assert "partial" in message
    assert "trailing" in message


def test_redact_split_cuts_shapes_spanning_the_boundary() -> None:
    token = "ghp_" + "Z" * 36
    out, err = redact_split(f"a {token[:10]}", f"{token[10:]} b")
    assert out == "a [redacted]"
    assert err == "[redacted] b"


def test_gh_environment_is_honoured(
    forge_server: ForgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in forge_server.env().items():
        monkeypatch.setenv(name, value)
    wire = gh_cli_wire()  # the default exec: the real gh with this process's environment
    assert wire.get_authenticated_user() == "forge-bot"
    assert forge_server.requests()[0].url == "http://api.github.localhost/graphql"


def test_rate_headers_feed_the_budget(forge_server: ForgeServer) -> None:
    budget = RateBudget()
    forge_server.state.repo(REPO)
    wire = gh_cli_wire(forge_server.exec(), budget=budget)
    wire.get_default_branch(REPO)
    assert budget.remaining == forge_server.state.remaining
    assert budget.reset_at == forge_server.state.reset_at


def test_graphql_errors_fail_the_read(forge_server: ForgeServer) -> None:
    forge_server.state.repo(REPO)
    wire = gh_cli_wire(forge_server.exec())
    with pytest.raises(ForgeCliError, match="GraphQL"):
        wire.list_force_pushes(REPO, 12345)


def test_path_pieces_are_quoted(forge_server: ForgeServer) -> None:
    repo = forge_server.state.repo(REPO)
    repo.branches["feat/ü{owner}"] = repo.add_commit("x")
    wire = gh_cli_wire(forge_server.exec())
    assert wire.get_ref_sha(REPO, "heads/feat/ü{owner}") == repo.branches["feat/ü{owner}"]
    assert "%7Bowner%7D" in forge_server.requests()[0].url


def test_an_installation_token_finds_its_own_comment_and_issue(forge_server: ForgeServer) -> None:
    # Actions' GITHUB_TOKEN and every App installation token are refused `GET /user`; the
    # comments they post carry the app's bot, which GraphQL's `viewer` names.
    repo = forge_server.state.repo(REPO)
    repo.branches["main"] = repo.add_commit("root")
    repo.add_pr(
        3, head_ref="topic", head_sha=repo.add_commit("topic", parents=[repo.branches["main"]])
    )
    forge_server.state.app_tokens[APP_TOKEN] = 42
    port = forge_port(gh_cli_wire(forge_server.exec(APP_TOKEN)))
    marker = "<!-- bot:status -->"

    first = port.upsert_comment(REPO, 3, marker, f"{marker}\nAll good")
    again = port.upsert_comment(REPO, 3, marker, f"{marker}\nAll good")
    issue = port.ensure_issue(REPO, label="queue", title="Train", body="the train")

    assert (first.done, again.done, again.skipped, again.id) == (True, False, "exists", first.id)
    assert [c["user"]["login"] for c in repo.comments[3]] == ["app-42[bot]"]
    assert port.ensure_issue(REPO, label="queue", title="Train", body="the train") == issue
    assert forge_server.state.effects["create_issue"] == 1
    assert not [r for r in forge_server.requests("GET") if r.path == "/user"]
