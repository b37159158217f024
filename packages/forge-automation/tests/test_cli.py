"""forge-cli ci-wait, pr-status, pr-context and the error boundary: real subprocesses, real gh."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fakeforge import ForgeServer, RepoState
from forge_automation import cli as cli_module

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
# The spec's commands, in the order forge-cli names them.
COMMANDS = ("ci-wait", "pr-status", "pr-context", "ci-failures", "premerge", "merge", "train")
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def cli(server: ForgeServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FORGE_CLI, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env(), **env},
        timeout=120,
        check=False,
    )


def _pr(repo: RepoState, number: int = 1, **fields: object) -> str:
    head = repo.add_commit(f"head{number}", parents=[repo.branches["main"]])
    pr = repo.add_pr(number, head_ref=f"feature{number}", head_sha=head, title="Add a feature")
    pr.update(fields)
    return head


# -- ci-wait --------------------------------------------------------------------------------------


def test_ci_wait_green_red_and_timeout(server: ForgeServer, repo: RepoState) -> None:
    green = repo.add_commit("green")
    repo.add_run(green, "test", "success")
    done = cli(server, "ci-wait", REPO, green)
    assert (done.returncode, done.stdout) == (0, f"GREEN {REPO} {green} test=success\n")
    # Progress on stderr: each check as it was first seen (the elapsed time is not compared).
    assert re.fullmatch(rf"ci-wait {REPO}@{green[:7]}: test success \(\d+s\)\n", done.stderr)

    red = repo.add_commit("red")
    repo.add_run(red, "test", "success")
    repo.add_run(red, "lint", "failure")
    done = cli(server, "ci-wait", REPO, red, "--timeout", "5")
    assert (done.returncode, done.stdout) == (1, f"RED {REPO} {red} lint=failure\n")

    pending = repo.add_commit("pending")
    repo.add_run(pending, "test", None)
    done = cli(server, "ci-wait", REPO, pending, "--timeout", "0")
    assert (done.returncode, done.stdout) == (2, f"TIMEOUT {REPO} {pending} test=in_progress\n")


def test_ci_wait_usage_errors_and_unknown_sha_exit_64(server: ForgeServer, repo: RepoState) -> None:
    unknown = "f" * 40
    done = cli(server, "ci-wait", REPO, unknown, "--timeout", "0")
    assert (done.returncode, done.stdout) == (64, "")
    assert done.stderr == f"forge-cli: unknown sha {unknown} in {REPO}\n"
    for args in (
        [REPO, "HEAD"],
        [REPO, "A" * 40],
        ["../etc", "a" * 40],
        [REPO],
        [REPO, "a" * 40, "--timeout", "soon"],
        [REPO, "a" * 40, "--timeout", "-1"],
    ):
        server.clear_log()
        done = cli(server, "ci-wait", *args)
        assert done.returncode == 64, args
        assert done.stderr.startswith("forge-cli: ")
        assert "Traceback" not in done.stderr
        assert server.requests() == []


# -- pr-status ------------------------------------------------------------------------------------


def test_pr_status_line_and_json_keys(server: ForgeServer, repo: RepoState) -> None:
    head = _pr(repo)
    repo.set_rulesets("main", ["ci"], strict=True)
    repo.add_run(head, "ci", "success")
    lint = repo.add_run(head, "lint", "failure")
    done = cli(server, "pr-status", f"{REPO}#1")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"{REPO}#1 open head={head[:7]} mergeable=clean checks=1/2 failing=lint blocked "
        f"blockers=check-failed: lint=failure (run {lint['id']})\n"
    )
    data = json.loads(cli(server, "pr-status", f"{REPO}#1", "--json").stdout)
    assert list(data) == [
        "repo",
        "number",
        "state",
        "headSha",
        "baseRef",
        "mergeableState",
        "checks",
        "ready",
        "blockers",
    ]
    assert data["checks"] == {"passed": 1, "total": 2, "failing": ["lint"]}
    assert (data["headSha"], data["baseRef"], data["ready"]) == (head, "main", False)
    assert [b["reason"] for b in data["blockers"]] == ["check-failed"]


def test_pr_status_ready_has_no_unapproved_blocker(server: ForgeServer, repo: RepoState) -> None:
    head = _pr(repo)
    repo.set_rulesets("main", ["ci"])
    repo.add_run(head, "ci", "success")
    done = cli(server, "pr-status", f"{REPO}#1")
    assert done.stdout == (
        f"{REPO}#1 open head={head[:7]} mergeable=clean checks=1/1 failing=- ready blockers=none\n"
    )


def test_pr_status_falls_back_to_classic_protection(server: ForgeServer, repo: RepoState) -> None:
    head = _pr(repo)
    repo.classic["main"] = {"strict": False, "contexts": ["build"], "checks": []}
    repo.add_run(head, "ci", "success")
    data = json.loads(cli(server, "pr-status", f"{REPO}#1", "--json").stdout)
    assert [b["reason"] for b in data["blockers"]] == ["check-pending"]
    assert "build" in data["blockers"][0]["detail"]
    # Neither rulesets nor classic protection (a free-plan 403): nothing required, so refused.
    repo.classic["main"] = 403
    data = json.loads(cli(server, "pr-status", f"{REPO}#1", "--json").stdout)
    assert [b["reason"] for b in data["blockers"]] == ["no-required-checks"]


def test_pr_status_strict_behind_draft_and_dirty(server: ForgeServer, repo: RepoState) -> None:
    head = _pr(repo, draft=True, mergeable_state="dirty")
    repo.branches["main"] = repo.add_commit("advance", parents=[repo.branches["main"]])
    repo.set_rulesets("main", ["ci"], strict=True)
    repo.add_run(head, "ci", "success")
    data = json.loads(cli(server, "pr-status", f"{REPO}#1", "--json").stdout)
    reasons = {b["reason"] for b in data["blockers"]}
    assert {"pr-draft", "merge-conflict", "behind-base"} <= reasons
    assert "unapproved-head" not in reasons
    line = cli(server, "pr-status", f"{REPO}#1").stdout
    assert line.startswith(f"{REPO}#1 open draft head={head[:7]} mergeable=dirty ")


def test_pr_status_merged(server: ForgeServer, repo: RepoState) -> None:
    _pr(repo, state="closed", merged=True, merged_at="2024-01-03T00:00:00Z")
    repo.set_rulesets("main", ["ci"])
    data = json.loads(cli(server, "pr-status", f"{REPO}#1", "--json").stdout)
    assert data["state"] == "merged"
    assert "pr-merged" in {b["reason"] for b in data["blockers"]}


@pytest.mark.parametrize("verb", ["pr-status", "pr-context"])
@pytest.mark.parametrize(
    "args", [["acme/widgets"], ["acme/widgets#"], ["#1"], ["acme/widgets#0"], ["a/b#1#2"], []]
)
def test_bad_refs_exit_64(server: ForgeServer, verb: str, args: list[str]) -> None:
    done = cli(server, verb, *args)
    assert (done.returncode, done.stdout) == (64, "")
    assert done.stderr.startswith("forge-cli: ")
    assert "Traceback" not in done.stderr
    assert server.requests() == []


@pytest.mark.parametrize("verb", ["pr-status", "pr-context"])
def test_a_missing_pr_exits_64(server: ForgeServer, repo: RepoState, verb: str) -> None:
    done = cli(server, verb, f"{REPO}#42")
    assert (done.returncode, done.stdout) == (64, "")
    assert done.stderr == f"forge-cli: {verb}: no PR {REPO}#42 (or no access to it)\n"


# -- pr-context -----------------------------------------------------------------------------------


def test_pr_context_prints_title_base_head_files_then_body(
    server: ForgeServer, repo: RepoState
) -> None:
    head = _pr(repo, body="Why:\nbecause.")
    repo.pr_files[1] = [
        {"filename": "src/a.py", "status": "modified", "additions": 1, "deletions": 1},
        {"filename": "src/b.py", "previous_filename": "src/old.py", "status": "renamed"},
    ]
    done = cli(server, "pr-context", f"{REPO}#1")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "title: Add a feature",
        "base: main",
        f"head: {head}",
        "files: 2",
        "  modified src/a.py",
        "  renamed src/old.py -> src/b.py",
        "",
        "Why:",
        "because.",
    ]


def test_pr_context_gives_a_count_past_the_file_cap(server: ForgeServer, repo: RepoState) -> None:
    _pr(repo, changed_files=3412)
    server.clear_log()
    done = cli(server, "pr-context", f"{REPO}#1")
    assert done.returncode == 0
    assert done.stdout.splitlines()[3] == (
        "files: 3412 (more than the forge lists; 3,000 at most, none shown)"
    )
    assert not [r for r in server.requests() if r.path.endswith("/files")]


def test_pr_context_reports_a_short_listing(server: ForgeServer, repo: RepoState) -> None:
    _pr(repo, changed_files=5)
    repo.pr_files[1] = [{"filename": "only.py", "status": "added"}]
    done = cli(server, "pr-context", f"{REPO}#1")
    assert done.returncode == 0
    assert done.stdout.splitlines()[3] == "files: 5 (listing came back with 1; none shown)"


# -- the boundary ---------------------------------------------------------------------------------


def test_bad_verb_and_bare_invocation_exit_64(server: ForgeServer) -> None:
    done = cli(server, "frobnicate")
    assert (done.returncode, done.stdout) == (64, "")
    assert done.stderr.splitlines()[0] == (
        f"forge-cli: unknown command 'frobnicate' ({', '.join(COMMANDS)})"
    )
    assert cli(server).returncode == 64
    helped = cli(server, "--help")
    assert helped.returncode == 0
    for verb in COMMANDS:
        assert verb in helped.stdout


def test_a_forge_failure_exits_1_with_one_redacted_line(
    server: ForgeServer, repo: RepoState
) -> None:
    _pr(repo)
    bad = cli(server, "pr-status", f"{REPO}#1", GH_TOKEN="ghp_wrongtoken00000000000000000000")
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr.count("\n") == 1
    assert "HTTP 401" in bad.stderr
    assert "ghp_wrongtoken" not in bad.stderr


def test_main_in_process_maps_exit_codes() -> None:
    with pytest.raises(SystemExit) as caught:
        cli_module.main(["premerge"])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        cli_module.main(["pr-status", "nope"])
    assert caught.value.code == 64


def test_main_in_process_leaves_the_collector_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Only the console script (`script`) freezes the heap on its way out; a program calling
    # `main`, with argv or without, goes on running and its objects must stay collectable.
    frozen = gc.get_freeze_count()
    for argv in (["pr-status", "nope"], ["frobnicate"]):
        with pytest.raises(SystemExit):
            cli_module.main(argv)
    monkeypatch.setattr(sys, "argv", ["forge-cli", "pr-status", "nope"])
    with pytest.raises(SystemExit) as caught:
        cli_module.main()
    assert caught.value.code == 64
    assert "forge-cli:" in capsys.readouterr().err
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled()


def test_the_console_script_is_the_freezing_hook() -> None:
    import tomllib

    # The package's declaration, not an installed copy of it (a venv synced before stays stale).
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["forge-cli"] == "forge_automation.cli:script"
    # Its process ends with the command: what the imports made is frozen, not collected.
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
        "from forge_automation.cli import script\n"
        "sys.argv = ['forge-cli', 'frobnicate']\n"
        "script()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 64
    frozen = done.stderr.splitlines()[-1].split()
    assert frozen[0] == "frozen"
    assert int(frozen[1]) > 0


def test_pr_context_json_has_the_documented_keys(server: ForgeServer, repo: RepoState) -> None:
    head = _pr(repo, body="Why:\nbecause.")
    repo.pr_files[1] = [
        {"filename": "src/a.py", "status": "modified", "additions": 1, "deletions": 1},
        {"filename": "src/b.py", "previous_filename": "src/old.py", "status": "renamed"},
    ]
    done = cli(server, "pr-context", f"{REPO}#1", "--json")
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == {
        "repo": REPO,
        "number": 1,
        "title": "Add a feature",
        "base": "main",
        "head": head,
        "files_count": 2,
        "files": [
            {"status": "modified", "path": "src/a.py", "previous_path": None},
            {"status": "renamed", "path": "src/b.py", "previous_path": "src/old.py"},
        ],
        "body": "Why:\nbecause.",
    }
    # A listing the forge cannot give whole: no files, and how many there are.
    repo.prs[1]["changed_files"] = 3412
    done = cli(server, "pr-context", f"{REPO}#1", "--json")
    context = json.loads(done.stdout)
    assert (context["files"], context["files_count"]) == (None, 3412)
