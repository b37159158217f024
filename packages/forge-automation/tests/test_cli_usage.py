"""forge-cli's bad invocations: the exact stderr line, the usage line and the exit code.

Real subprocesses. Each usage error names its problem as `forge-cli: <problem>`, then prints the
command's usage line; ci-wait, pr-status, pr-context and a missing or unknown command exit 64,
ci-failures and premerge exit 2 (the spec's codes). `-h`/`--help` work everywhere and exit 0.
No usage error ever reaches the forge.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakeforge import ForgeServer

FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))
REPO = "acme/widgets"
SHA = "a" * 40
COMMANDS = ["ci-wait", "pr-status", "pr-context", "ci-failures", "premerge", "merge", "train"]
TOP_USAGE = "usage: forge-cli [-h] [--debug] [--version] COMMAND ..."
USAGE = {
    "ci-wait": (
        "usage: forge-cli ci-wait [-h] [--timeout S] [--interval S] [--grace S] [--required] "
        "[--fail-fast] [--base BRANCH] [--quiet] [--json] REPO|REPO#N [SHA]"
    ),
    "pr-status": "usage: forge-cli pr-status [-h] [--json] REPO#N",
    "pr-context": "usage: forge-cli pr-context [-h] [--json] REPO#N",
    "ci-failures": "usage: forge-cli ci-failures [-h] [--job ID] [--lines N] [--json] REPO#N|REPO",
    "premerge": (
        "usage: forge-cli premerge [-h] --approved-head SHA [--clone DIR] [--json] REPO#N HEAD_SHA"
    ),
    "merge": (
        "usage: forge-cli merge [-h] --approved-head SHA [--clone DIR] [--task-id ID] [--json] "
        "REPO#N HEAD_SHA"
    ),
    "train": (
        "usage: forge-cli train [-h] --label LABEL [--clone DIR] [--dry-run] [--timeout S] "
        "[--interval S] [--grace S] [--batch N] [--max-wait S] [--retry-flaky N] "
        "[--speculate K] [--max-cars M] "
        "[--land {merge,push}] [--quiet] [--json] REPO"
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[ForgeServer]:
    with ForgeServer() as forge:
        yield forge


def run(server: ForgeServer, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FORGE_CLI, *args],
        capture_output=True,
        text=True,
        # Help wraps to the terminal's width; a usage error's usage line never does.
        env={**os.environ, **server.env(), "COLUMNS": str(columns)},
        timeout=120,
        check=False,
    )


# (argv, the problem line, the usage line's command or None for the top level, exit code)
BAD = [
    ([], f"missing command ({', '.join(COMMANDS)})", None, 64),
    (["frobnicate"], f"unknown command 'frobnicate' ({', '.join(COMMANDS)})", None, 64),
    (["--bogus"], "unrecognized arguments: --bogus", None, 64),
    # unknown flag
    (["pr-status", f"{REPO}#1", "--bogus"], "unrecognized arguments: --bogus", "pr-status", 64),
    (["ci-wait", REPO, SHA, "--wait", "5"], "unrecognized arguments: --wait 5", "ci-wait", 64),
    (
        ["premerge", f"{REPO}#1", SHA, "--approved-head", SHA, "--force"],
        "unrecognized arguments: --force",
        "premerge",
        2,
    ),
    (["ci-failures", f"{REPO}#1", "-x"], "unrecognized arguments: -x", "ci-failures", 2),
    # missing argument
    (["pr-status"], "the following arguments are required: REPO#N", "pr-status", 64),
    (["pr-context"], "the following arguments are required: REPO#N", "pr-context", 64),
    (["ci-wait", REPO], "expected <repo> <sha> or <repo>#<n>", "ci-wait", 64),
    (
        ["ci-wait", f"{REPO}#1", "a" * 40],
        "give <repo> <sha> or <repo>#<n>, not both",
        "ci-wait",
        64,
    ),
    (["ci-wait", REPO, "a" * 40, "--base", "main"], "--base needs --required", "ci-wait", 64),
    (
        ["ci-wait", REPO, "a" * 40, "--grace", "-1"],
        "grace: must be a finite number of seconds >= 0",
        "ci-wait",
        64,
    ),
    (
        ["premerge", f"{REPO}#1"],
        "the following arguments are required: HEAD_SHA, --approved-head",
        "premerge",
        2,
    ),
    (
        ["premerge", f"{REPO}#1", SHA],
        "the following arguments are required: --approved-head",
        "premerge",
        2,
    ),
    (["ci-failures"], "the following arguments are required: REPO#N|REPO", "ci-failures", 2),
    (
        ["ci-failures", f"{REPO}#1", "--lines"],
        "argument --lines: expected one argument",
        "ci-failures",
        2,
    ),
    # repeated flag
    (
        ["pr-status", f"{REPO}#1", "--json", "--json"],
        "argument --json: given twice",
        "pr-status",
        64,
    ),
    (
        ["ci-wait", REPO, SHA, "--timeout", "5", "--timeout", "6"],
        "argument --timeout: given twice",
        "ci-wait",
        64,
    ),
    (
        ["premerge", f"{REPO}#1", SHA, "--approved-head", SHA, "--approved-head", SHA],
        "argument --approved-head: given twice",
        "premerge",
        2,
    ),
    # wrong type
    (
        ["ci-wait", REPO, SHA, "--timeout", "soon"],
        "argument --timeout: invalid float value: 'soon'",
        "ci-wait",
        64,
    ),
    (
        ["ci-failures", REPO, "--job", "abc"],
        "argument --job: invalid int value: 'abc'",
        "ci-failures",
        2,
    ),
    (
        ["ci-failures", f"{REPO}#1", "--lines", "many"],
        "argument --lines: invalid int value: 'many'",
        "ci-failures",
        2,
    ),
    # values the command refuses
    (
        ["pr-status", "acme/widgets"],
        "expected <owner>/<name>#<number>, got 'acme/widgets'",
        "pr-status",
        64,
    ),
    (["ci-wait", REPO, "HEAD"], "sha: must be a full lower-case hex object id", "ci-wait", 64),
    (
        ["ci-wait", REPO, SHA, "--timeout", "-1"],
        "timeout: must be a finite number of seconds >= 0",
        "ci-wait",
        64,
    ),
    (
        ["premerge", f"{REPO}#1", "ABC", "--approved-head", SHA],
        "head_sha: must be 40 lower-case hex characters",
        "premerge",
        2,
    ),
    (
        ["merge", f"{REPO}#1", SHA],
        "the following arguments are required: --approved-head",
        "merge",
        2,
    ),
    (
        ["merge", f"{REPO}#1", SHA, "--approved-head", "HEAD"],
        "approved_head: must be 40 lower-case hex characters",
        "merge",
        2,
    ),
    (
        ["merge", f"{REPO}#1", SHA, "--approved-head", SHA, "--task-id", " "],
        "--task-id ' ': must be one non-blank line",
        "merge",
        2,
    ),
    (["train", REPO], "the following arguments are required: --label", "train", 2),
    (
        ["train", REPO, "--label", "a,b"],
        "label: contains ',' (the forge's label filter splits on it)",
        "train",
        2,
    ),
    (
        ["train", REPO, "--label", "q", "--interval", "0"],
        "--interval must be a finite number of seconds > 0",
        "train",
        2,
    ),
    (
        ["train", REPO, "--label", "q", "--grace", "-1"],
        "--grace must be a finite number of seconds >= 0",
        "train",
        2,
    ),
    (
        ["train", f"{REPO}#1", "--label", "q"],
        "repo: must be 'owner/name' with a valid repository name",
        "train",
        2,
    ),
    (
        ["ci-failures", f"{REPO}#1", "--lines", "0"],
        "--lines must be between 1 and 10000",
        "ci-failures",
        2,
    ),
]


@pytest.mark.parametrize(("args", "problem", "command", "code"), BAD)
def test_a_bad_invocation_names_its_problem(
    server: ForgeServer, args: list[str], problem: str, command: str | None, code: int
) -> None:
    server.clear_log()
    done = run(server, *args)
    usage = TOP_USAGE if command is None else USAGE[command]
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr.splitlines() == [f"forge-cli: {problem}", usage]
    assert server.requests() == []


# Bad invocations only the forge can tell (a name that is not there): one line naming the thing
# not found and where, no usage line, nothing written, no verdict.
FOUND_BAD = [
    (
        ["ci-wait", REPO, SHA, "--required", "--base", "nosuch"],
        f"ci-wait: no branch 'nosuch' in {REPO} (--base names the branch whose required checks "
        "count)",
        64,
    ),
    (
        ["ci-wait", REPO, SHA, "--required", "--base", "feature/gone"],
        f"ci-wait: no branch 'feature/gone' in {REPO} (--base names the branch whose required "
        "checks count)",
        64,
    ),
    (
        ["train", "acme/nope", "--label", "q"],
        "train: no repository acme/nope (or no access to it)",
        2,
    ),
    (
        ["train", "acme/nope", "--label", "q", "--dry-run"],
        "train: no repository acme/nope (or no access to it)",
        2,
    ),
]


@pytest.mark.parametrize(("args", "problem", "code"), FOUND_BAD)
@pytest.mark.gh
def test_a_name_the_forge_does_not_know_is_named(args: list[str], problem: str, code: int) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.branches["main"] = repo.add_commit("root")
        done = run(server, *args)
        assert [r.method for r in server.requests() if r.method != "GET"] == []
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr == f"forge-cli: {problem}\n"


@pytest.mark.parametrize("help", ["-h", "--help"])
@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_works_everywhere(server: ForgeServer, command: str | None, help: str) -> None:
    args = [help] if command is None else [command, help]
    done = run(server, *args, columns=240)
    assert (done.returncode, done.stderr) == (0, "")
    usage = TOP_USAGE if command is None else USAGE[command]
    assert done.stdout.startswith(usage + "\n")
    if command is None:
        assert all(c in done.stdout for c in COMMANDS)
    assert server.requests() == []


def test_help_after_arguments_still_helps(server: ForgeServer) -> None:
    done = run(server, "premerge", f"{REPO}#1", "--help", columns=200)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(USAGE["premerge"] + "\n")


def test_a_token_given_as_an_argument_is_never_echoed(server: ForgeServer) -> None:
    token = "ghp_" + "Q" * 36
    done = run(server, "pr-status", f"{REPO}#1", token)
    assert done.returncode == 64
    assert token not in done.stderr
    assert done.stderr.splitlines()[0] == "forge-cli: unrecognized arguments: [redacted]"


def test_version_names_the_tool_and_the_installed_version(server: ForgeServer) -> None:
    from importlib.metadata import version

    done = run(server, "--version")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"forge-cli {version('forge-automation')}\n"


@pytest.mark.parametrize("module", ["forge_automation", "forge_automation.cli"])
def test_python_m_runs_forge_cli(server: ForgeServer, module: str) -> None:
    for args, code in ((["--version"], 0), (["bogus"], 64)):
        done = subprocess.run(
            [sys.executable, "-m", module, *args],
            capture_output=True,
            text=True,
            env={**os.environ, **server.env()},
            timeout=60,
            check=False,
        )
        assert done.returncode == code, done.stderr
        assert ("forge-cli" in done.stdout) if code == 0 else done.stderr.startswith("forge-cli: ")
