"""forge-cli ci-wait's flags through the real gh against the honest test forge.

`--required`, `--fail-fast`, `--grace` and the PR form `ci-wait <repo>#<n>`: a check that
registers late, one that never does, a failure beside a check still running, and a head that
moves while the wait runs. The forge changes under a running wait only after the wait's first
poll reached it (the server's request log is the event), never after a sleep.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakeforge import ForgeServer, RepoState

REPO = "acme/widgets"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def _head(repo: RepoState, name: str = "head") -> str:
    head = repo.add_commit(name, parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    return head


def cli(server: ForgeServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FORGE_CLI, "ci-wait", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        timeout=120,
        check=False,
    )


def start(server: ForgeServer, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [FORGE_CLI, "ci-wait", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **server.env()},
    )


def after_first_poll(server: ForgeServer, wait: subprocess.Popen[str]) -> None:
    """Return once the wait's first check-run read reached the forge (bounded: 60 s)."""
    for _ in range(1200):
        if any("/check-runs" in r.url for r in server.requests("GET")):
            return
        assert wait.poll() is None, wait.communicate()
        time.sleep(0.05)
    pytest.fail("the wait never polled")


def test_a_required_check_that_registers_late_is_green(
    server: ForgeServer, repo: RepoState
) -> None:
    head = _head(repo)
    repo.set_rulesets("main", ["ci"])
    repo.add_run(head, "optional", "failure")  # not required: ignored with --required
    server.clear_log()
    wait = start(server, f"{REPO}#1", "--required", "--grace", "60", "--interval", "1")
    try:
        after_first_poll(server, wait)
        with server.lock:
            repo.add_run(head, "ci", "success")
        out, err = wait.communicate(timeout=60)
    finally:
        wait.kill()
    assert (wait.returncode, out, err) == (0, f"GREEN {REPO} {head} ci=success\n", "")


def test_a_required_check_that_never_reports_is_red_after_the_grace(
    server: ForgeServer, repo: RepoState
) -> None:
    head = _head(repo)
    repo.set_rulesets("main", ["ci", "lint"])
    repo.add_run(head, "lint", "success")
    done = cli(server, f"{REPO}#1", "--required", "--grace", "0", "--interval", "1")
    assert (done.returncode, done.stdout) == (1, f"RED {REPO} {head} ci=never reported\n")
    # The sha form reads the default branch's rules, or --base's.
    done = cli(server, REPO, head, "--required", "--base", "main", "--grace", "0")
    assert (done.returncode, done.stdout) == (1, f"RED {REPO} {head} ci=never reported\n")


@pytest.mark.slow  # the wait without --fail-fast runs to its 1 s deadline
def test_fail_fast_ends_red_on_the_first_failure(server: ForgeServer, repo: RepoState) -> None:
    head = _head(repo)
    repo.set_rulesets("main", ["ci", "lint"])
    repo.add_run(head, "ci", "failure")
    repo.add_run(head, "lint", None)  # still running
    done = cli(server, REPO, head, "--required", "--fail-fast", "--timeout", "60")
    assert (done.returncode, done.stdout) == (1, f"RED {REPO} {head} ci=failure\n")
    # Without it the wait goes on while lint runs, and a failure seen is still RED at the end.
    done = cli(server, REPO, head, "--required", "--timeout", "1", "--interval", "1")
    assert (done.returncode, done.stdout) == (
        1,
        f"RED {REPO} {head} ci=failure, lint=in_progress\n",
    )


def test_the_pr_form_ends_moved_with_its_own_code_when_the_head_moves(
    server: ForgeServer, repo: RepoState
) -> None:
    head = _head(repo)
    repo.add_run(head, "ci", None)
    new = repo.add_commit("pushed", parents=[head])
    server.clear_log()
    wait = start(server, f"{REPO}#1", "--interval", "1", "--timeout", "60")
    try:
        after_first_poll(server, wait)
        with server.lock:
            repo.prs[1]["head"]["sha"] = new
            repo.branches["feature"] = new
        out, err = wait.communicate(timeout=60)
    finally:
        wait.kill()
    assert (wait.returncode, out, err) == (3, f"MOVED {REPO}#1 {head} {new}\n", "")


def test_the_pr_form_refuses_what_it_cannot_wait_for(server: ForgeServer, repo: RepoState) -> None:
    _head(repo)
    done = cli(server, f"{REPO}#9", "--timeout", "0")
    assert (done.returncode, done.stdout) == (64, "")
    assert done.stderr == f"forge-cli: no PR {REPO}#9 (or no access to it)\n"
    # A base that requires nothing: no verdict (69), never GREEN for nothing.
    done = cli(server, f"{REPO}#1", "--required", "--timeout", "0")
    assert (done.returncode, done.stdout) == (69, "")
    assert done.stderr == (
        "forge-cli: ci-wait: no verdict: required: main requires no checks; nothing to wait for\n"
    )
