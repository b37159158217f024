"""forge-cli pr-status's early reads: real subprocesses, real gh, the local forge.

pr-status starts the PR read and a check-run read through `refs/pull/<n>/head` before it imports
the library, and the base's rules and the behind count as soon as the PR answers. These tests pin
that the wire still makes each call exactly once (an early read that did not match the wire's
own call would show up twice), and that runs read through the pull ref are used only when they
are provably the PR head's: a ref that lags a push, or a push landing between the reads, falls
back to a read by sha, so a stale list can never pass for the head's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from forge_automation import _wire
from forge_automation import cli as cli_module
from forge_automation._exec import ExecOptions
from forge_automation.cli import _pr_status
from forge_support import ForgeServer, RepoState

REPO = "acme/widgets"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def cli(server: ForgeServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FORGE_CLI, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        timeout=120,
        check=False,
    )


@pytest.fixture
def server() -> Iterator[ForgeServer]:
    with ForgeServer() as forge:
        yield forge


@pytest.fixture
def repo(server: ForgeServer) -> RepoState:
    state = server.state.repo(REPO)
    state.branches["main"] = state.add_commit("root")
    return state


def requested(server: ForgeServer) -> list[str]:
    """Return each GET's path and query as gh sent it, in arrival order."""
    return [r.url.split("api.github.localhost", 1)[1] for r in server.requests("GET")]


def by_ref(number: int = 1) -> str:
    return (
        f"/repos/{REPO}/commits/refs/pull/{number}/head/check-runs?filter=all&per_page=100&page=1"
    )


def by_sha(sha: str, page: int = 1) -> str:
    return f"/repos/{REPO}/commits/{sha}/check-runs?filter=all&per_page=100&page={page}"


def status(server: ForgeServer, *extra: str) -> dict[str, object]:
    done = cli(server, "pr-status", f"{REPO}#1", "--json", *extra)
    assert (done.returncode, done.stderr) == (0, "")
    data: dict[str, object] = json.loads(done.stdout)
    return data


# -- the usual case: four calls, each once ----------------------------------------------------


def test_each_call_is_made_once_and_runs_come_through_the_pull_ref(
    server: ForgeServer, repo: RepoState
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", ["ci"], strict=True)
    repo.add_run(head, "ci", "success")
    server.clear_log()
    done = cli(server, "pr-status", f"{REPO}#1")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"{REPO}#1 open head={head[:7]} mergeable=clean checks=1/1 failing=- ready blockers=none\n"
    )
    assert sorted(requested(server)) == sorted(
        [
            f"/repos/{REPO}/pulls/1",
            by_ref(),
            f"/repos/{REPO}/rules/branches/main?per_page=100&page=1",
            f"/repos/{REPO}/compare/main...{head}?per_page=1",
        ]
    )


def test_a_base_name_that_needs_quoting_still_matches_the_wires_calls(
    server: ForgeServer, repo: RepoState
) -> None:
    base = "release/v1+2"
    repo.branches[base] = repo.branches["main"]
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head, base_ref=base)
    repo.set_rulesets(base, ["ci"])
    repo.add_run(head, "ci", "success")
    server.clear_log()
    data = status(server)
    assert (data["baseRef"], data["ready"]) == (base, True)
    paths = requested(server)
    # gh sends the quoted form; the server log shows the path as the forge decodes it.
    assert len(paths) == 4, paths
    assert len(set(paths)) == 4, paths


def test_a_closed_pr_needs_no_behind_count(server: ForgeServer, repo: RepoState) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head, state="closed")
    repo.set_rulesets("main", ["ci"])
    repo.add_run(head, "ci", "success")
    server.clear_log()
    data = status(server)
    assert data["state"] == "closed"
    assert not [p for p in requested(server) if "/compare/" in p]
    assert len(requested(server)) == 3


# -- runs through the pull ref are the head's only when provably so ---------------------------


def test_a_pull_ref_still_at_the_old_head_never_passes_for_the_new_one(
    server: ForgeServer, repo: RepoState
) -> None:
    # A push moved the PR to `new` (no runs yet); the pull ref still names `old`, whose required
    # check passed. The old pass must not count: the new head's check is missing, so pending.
    old = repo.add_commit("old", parents=[repo.branches["main"]])
    new = repo.add_commit("new", parents=[old])
    repo.add_pr(1, head_ref="feature", head_sha=new)
    repo.pull_heads[1] = old
    repo.set_rulesets("main", ["ci"])
    repo.add_run(old, "ci", "success")
    server.clear_log()
    data = status(server)
    assert data["headSha"] == new
    assert data["ready"] is False
    assert data["checks"] == {"passed": 0, "total": 0, "failing": []}
    blockers = data["blockers"]
    assert isinstance(blockers, list)
    assert [b["reason"] for b in blockers] == ["check-pending"]
    assert "ci has no completed run" in blockers[0]["detail"]
    paths = requested(server)
    assert by_ref() in paths
    assert by_sha(new) in paths


def test_a_push_after_the_pr_read_leaves_the_read_head_judged_by_its_own_runs(
    server: ForgeServer, repo: RepoState
) -> None:
    # The PR read saw `first`; by the runs read the ref had moved to `second`, whose checks pass.
    # pr-status reports the head it read, so it must judge `first` by `first`'s runs.
    first = repo.add_commit("first", parents=[repo.branches["main"]])
    second = repo.add_commit("second", parents=[first])
    repo.add_pr(1, head_ref="feature", head_sha=first)
    repo.pull_heads[1] = second
    repo.set_rulesets("main", ["ci"])
    repo.add_run(first, "ci", "failure")
    repo.add_run(second, "ci", "success")
    server.clear_log()
    data = status(server)
    assert (data["headSha"], data["ready"]) == (first, False)
    assert data["checks"] == {"passed": 0, "total": 1, "failing": ["ci"]}
    assert by_sha(first) in requested(server)


def test_an_empty_page_through_the_ref_names_no_commit(
    server: ForgeServer, repo: RepoState
) -> None:
    # The ref names a commit without runs; that says nothing about the head, which has a failure.
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    elsewhere = repo.add_commit("elsewhere", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.pull_heads[1] = elsewhere
    repo.set_rulesets("main", ["ci"])
    repo.add_run(head, "ci", "success")
    repo.add_run(head, "lint", "failure")
    server.clear_log()
    data = status(server)
    assert data["checks"] == {"passed": 1, "total": 2, "failing": ["lint"]}
    assert by_sha(head) in requested(server)


def test_a_pr_without_runs_is_read_again_by_sha_and_stays_pending(
    server: ForgeServer, repo: RepoState
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", ["ci"])
    server.clear_log()
    data = status(server)
    assert data["ready"] is False
    assert data["checks"] == {"passed": 0, "total": 0, "failing": []}
    assert by_sha(head) in requested(server)


def test_more_than_one_page_of_runs_is_read_whole_by_sha(
    server: ForgeServer, repo: RepoState
) -> None:
    # A second page read through the ref could describe another commit than the first page.
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", ["c0"])
    for i in range(100):
        repo.add_run(head, f"c{i}", "success")
    repo.add_run(head, "late", "failure")
    server.clear_log()
    data = status(server)
    assert data["checks"] == {"passed": 100, "total": 101, "failing": ["late"]}
    paths = requested(server)
    assert by_ref() in paths
    assert [by_sha(head, 1), by_sha(head, 2)] == [
        p for p in paths if p.startswith(by_sha(head)[:-1])
    ]


def test_a_failed_pull_ref_read_falls_back_to_the_sha(server: ForgeServer, repo: RepoState) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.pull_heads[1] = "0" * 40  # a ref the forge cannot resolve answers 422
    repo.set_rulesets("main", ["ci"])
    repo.add_run(head, "ci", "success")
    server.clear_log()
    data = status(server)
    assert data["ready"] is True
    assert by_sha(head) in requested(server)


# -- the early-start exec -------------------------------------------------------------------


def test_an_early_child_answers_only_the_same_call_in_the_same_environment(
    server: ForgeServer, repo: RepoState, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    args = ["api", "-i", "--method", "GET", f"repos/{REPO}", "-H", "Accept: a"]
    early = _pr_status._EarlyGh()
    try:
        early.start(args)
        early.start(args)  # already running: not started twice
        answer = early(args, ExecOptions(timeout=60.0))
        assert answer.returncode == 0
        assert answer.stdout.startswith(b"HTTP/1.1 200")
        assert len(server.requests()) == 1
        # Another environment for the call: the early child is not its answer.
        early.start(args)
        answer = early(args, ExecOptions(env={"GH_TOKEN": "nope"}, timeout=60.0))
        assert answer.stdout.startswith(b"HTTP/1.1 401")
        # A call nobody started runs gh as usual.
        answer = early([*args[:-1], "Accept: b"], ExecOptions(timeout=60.0))
        assert answer.returncode == 0
        # A child nobody asks for is stopped.
        early.start([*args[:-1], "Accept: c"])
    finally:
        early.close()
    assert early._started == {}


def test_the_early_children_run_in_the_wires_gh_environment() -> None:
    early = _pr_status._EarlyGh()
    try:
        early.start(["--version"])
        [started] = early._started.values()
        # The environment the wire would give the same call, so its answer can be used.
        assert started.env == _wire.gh_child_env()
    finally:
        early.close()
    assert _wire.gh_child_env()["TCELL_MINIMIZE"] == "1"
    assert _wire.gh_child_env()["GOGC"] == "off"
    assert _wire.gh_child_env()["GOMEMLIMIT"] == "256MiB"
    assert _wire.gh_child_env({"TCELL_MINIMIZE": "0"})["TCELL_MINIMIZE"] == "0"


def test_importing_the_cli_leaves_the_library_for_later() -> None:
    # pr-status starts its first reads right after this import; what the import pulls in runs
    # before them, so the wire, dataclasses, json and typer must not be among it.
    code = "import sys, forge_automation.cli; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(done.stdout.split())
    assert "forge_automation.cli" in loaded
    assert loaded.isdisjoint(
        {
            "forge_automation._wire",
            "forge_automation._port",
            "forge_automation._types",
            "dataclasses",
            "json",
            "typing",
            "typer",
            "click",
            "subprocess",
            "argparse",
        }
    )


def test_pr_status_never_loads_typer(server: ForgeServer, repo: RepoState) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    code = (
        "import sys\n"
        "from forge_automation import cli\n"
        "try:\n"
        f"    cli.main(['pr-status', '{REPO}#1'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        check=True,
        timeout=60,
    )
    assert done.stdout.startswith(f"{REPO}#1 open ")
    # Nor the shutil (bz2, lzma) argparse's help formatter would import without the width the
    # parser gives it.
    assert set(done.stderr.split()).isdisjoint(
        {"typer", "click", "pydantic", "rich", "shutil", "lzma"}
    )


def test_in_process_pr_status_leaves_the_switch_interval_as_it_was(
    server: ForgeServer,
    repo: RepoState,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    before = sys.getswitchinterval()
    for ref in (f"{REPO}#1", f"{REPO}#9"):  # one that answers, one that fails (exit 64)
        with pytest.raises(SystemExit):
            cli_module.main(["pr-status", ref])
        assert sys.getswitchinterval() == before
    out, err = capsys.readouterr()
    assert out.startswith(f"{REPO}#1 open ")
    assert err == f"forge-cli: pr-status: no PR {REPO}#9 (or no access to it)\n"
