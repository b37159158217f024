"""Invariants of forge-cli's own seams: its one error boundary and pr-status's early read.

White-box: a bug is planted in the decision (`_readiness.merge_readiness`) to show the boundary
maps it to exit 70 with a redacted traceback only behind --debug; pr-status's read started before
the library loads (`cli._pr_status._Prestarted`) answers only its own call, and its answer starts
the base's classic-protection read only for an open PR.
"""

from __future__ import annotations

import pytest

from fakeforge import ForgeServer, RepoState
from forge_automation import ExecOptions, _gh, _readiness
from forge_automation import cli as cli_module
from forge_automation._github.rest import get_branch_protection
from forge_automation.cli import _pr_status

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
CANARY = "ghp_canarytoken1234567890abcdefABCDEF"


def test_a_bug_exits_70_and_only_debug_shows_a_redacted_traceback(
    server: ForgeServer,
    repo: RepoState,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # pr-status starts its read before it loads the decision: aim it at the local forge.
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)

    def broken(*_: object, **__: object) -> object:
        raise RuntimeError(f"boom {CANARY}")

    monkeypatch.setattr(_readiness, "merge_readiness", broken)
    with pytest.raises(SystemExit) as caught:
        cli_module.main(["pr-status", f"{REPO}#1"])
    assert caught.value.code == 70
    err = capsys.readouterr().err
    assert err == "forge-cli: internal error (RuntimeError); rerun with --debug\n"
    with pytest.raises(SystemExit) as caught:
        cli_module.main(["--debug", "pr-status", f"{REPO}#1"])
    assert caught.value.code == 70
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "boom [redacted]" in err
    assert CANARY not in err


def test_the_prestarted_child_answers_only_its_own_call(
    server: ForgeServer, repo: RepoState, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    # Its own call (same argv, stdin and environment) gets the child's answer: no gh of its own.
    early = _pr_status._Prestarted.start(REPO, 1)
    args, body = list(early._key[0]), early._key[1]
    with monkeypatch.context() as patched:
        patched.setattr(_gh, "run_gh", None)
        answer = early(args, ExecOptions(input=body, timeout=60.0))
    assert answer.stdout.startswith(b"HTTP/1.1 200")
    assert head.encode() in answer.stdout
    # Any other call, or the same one in another environment, runs gh itself; the child stays
    # unasked until `close` stops it.
    for call, options in [
        (["api", "-i", f"repos/{REPO}/pulls/1"], ExecOptions(timeout=60.0)),
        (args, ExecOptions(input=body, env={"GH_TOKEN": "nope"}, timeout=60.0)),
    ]:
        early = _pr_status._Prestarted.start(REPO, 1)
        try:
            answer = early(call, options)
            assert list(early._children) == [early._key]
        finally:
            early.close()
        assert early._children == {}
        status_line = b"HTTP/1.1 401" if options.env else b"HTTP/1.1 200"
        assert answer.stdout.startswith(status_line)


def test_the_snapshot_answer_starts_the_protection_read_of_an_open_pr_only(
    server: ForgeServer, repo: RepoState, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.add_pr(2, head_ref="old", head_sha=head, state="closed")
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    protection = _gh.request_args(get_branch_protection(REPO, "main"))
    early = _pr_status._Prestarted.start(REPO, 1)
    try:
        early.follow()
        assert set(early._children) == {early._key, (tuple(protection), b"")}
        with monkeypatch.context() as patched:
            patched.setattr(_gh, "run_gh", None)
            answer = early(protection, ExecOptions(timeout=60.0))
        assert answer.stdout.startswith(b"HTTP/1.1 404")  # `Branch not protected`
    finally:
        early.close()
    server.clear_log()
    early = _pr_status._Prestarted.start(REPO, 2)
    try:
        early.follow()
        assert list(early._children) == [early._key]
    finally:
        early.close()
    assert [r.url.rsplit("/", 1)[-1] for r in server.requests()] == ["graphql"]
