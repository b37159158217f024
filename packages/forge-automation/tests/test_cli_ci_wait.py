"""forge-cli ci-wait's flags through the real gh against the honest test forge.

`--required`, `--fail-fast`, `--grace` and the PR form `ci-wait <repo>#<n>`: a check that
registers late, one that never does, a failure beside a check still running, and a head that
moves while the wait runs. The forge changes under a running wait only after the wait's first
poll reached it (the server's request log is the event), never after a sleep.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakeforge import ForgeServer, RepoState

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

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
    assert (wait.returncode, out) == (0, f"GREEN {REPO} {head} ci=success\n")
    # Progress: the required check missing at first, then its result (the optional one that
    # does not count is never shown).
    said = [PROGRESS.fullmatch(line) for line in err.splitlines()]
    assert [m.group(3) if m else None for m in said] == ["ci missing", "ci success"], err


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
    wait = start(server, f"{REPO}#1", "--interval", "1", "--timeout", "60", "--quiet")
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


# ---- progress on stderr while the wait runs ----------------------------------------------------

# One line per change when stderr is not a terminal: `<command> <repo>[#n]@<sha7>: <check>
# <state> (<elapsed>)`; the elapsed time is left out of the comparison (no timing assertions).
PROGRESS = re.compile(r"ci-wait (\S+)@([0-9a-f]{7}): (.+) \((?:\d+s|\d+m\d\ds|\d+h\d\dm)\)")


def check_run_polls(server: ForgeServer) -> int:
    return sum("/check-runs" in r.url for r in server.requests("GET"))


def after_polls(server: ForgeServer, wait: subprocess.Popen[str], count: int) -> None:
    """Return once `count` check-run reads reached the forge (bounded: 60 s)."""
    for _ in range(1200):
        if check_run_polls(server) >= count:
            return
        assert wait.poll() is None, wait.communicate()
        time.sleep(0.05)
    pytest.fail(f"the wait never made {count} polls")


def _run_changing_checks(
    server: ForgeServer, repo: RepoState, head: str, *args: str
) -> tuple[int, str, str]:
    """Wait on a PR whose checks start and finish one per poll: build runs, test starts, build
    passes, test passes. Each change lands after a poll reached the forge, so the next poll
    sees it."""
    build = repo.add_run(head, "build", None)
    server.clear_log()
    wait = start(server, f"{REPO}#1", "--interval", "0.05", "--timeout", "120", *args)
    try:
        after_polls(server, wait, 1)
        with server.lock:
            test = repo.add_run(head, "test", None)
        after_polls(server, wait, 2)
        with server.lock:
            build.update(status="completed", conclusion="success")
        after_polls(server, wait, 3)
        with server.lock:
            test.update(status="completed", conclusion="success")
        out, err = wait.communicate(timeout=60)
    finally:
        wait.kill()
    return wait.returncode, out, err


def test_progress_lines_come_on_stderr_as_checks_start_and_finish(
    server: ForgeServer, repo: RepoState
) -> None:
    head = _head(repo)
    code, out, err = _run_changing_checks(server, repo, head)
    assert (code, out) == (0, f"GREEN {REPO} {head} build=success, test=success\n")
    lines = err.splitlines()
    for line in lines:
        assert PROGRESS.fullmatch(line), line
    said = [PROGRESS.fullmatch(line).group(3) for line in lines]  # type: ignore[union-attr]
    # Each change once, in the order it happened: a poll that changed nothing says nothing.
    assert said == ["build in_progress", "test in_progress", "build success", "test success"]
    assert {PROGRESS.fullmatch(line).group(1) for line in lines} == {f"{REPO}#1"}  # type: ignore[union-attr]
    assert {PROGRESS.fullmatch(line).group(2) for line in lines} == {head[:7]}  # type: ignore[union-attr]


def test_quiet_prints_no_progress(server: ForgeServer, repo: RepoState) -> None:
    head = _head(repo)
    code, out, err = _run_changing_checks(server, repo, head, "--quiet")
    assert (code, out, err) == (0, f"GREEN {REPO} {head} build=success, test=success\n", "")


def test_on_a_terminal_the_table_is_redrawn(server: ForgeServer, repo: RepoState) -> None:
    head = _head(repo)
    repo.add_run(head, "build", "success")
    repo.add_run(head, "lint", "failure")
    primary, secondary = os.openpty()
    try:
        done = subprocess.run(
            [FORGE_CLI, "ci-wait", f"{REPO}#1", "--interval", "0.05", "--timeout", "120"],
            stdout=subprocess.PIPE,
            stderr=secondary,
            text=True,
            env={**os.environ, **server.env()},
            timeout=120,
            check=False,
        )
        os.close(secondary)
        screen = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the child's side is closed and everything was read
                break
            if not chunk:
                break
            screen += chunk
    finally:
        os.close(primary)
    assert (done.returncode, done.stdout) == (1, f"RED {REPO} {head} lint=failure\n")
    text = screen.decode().replace("\r\n", "\n")
    assert re.fullmatch(
        rf"ci-wait {REPO}#1@{head[:7]} · \d+s\n  ✓ build  success\n  X lint   failure\n", text
    ), text


def test_json_prints_the_verdict_as_one_object(server: ForgeServer, repo: RepoState) -> None:
    head = _head(repo)
    repo.add_run(head, "ci", "success")
    done = cli(server, f"{REPO}#1", "--json", "--quiet")
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == {
        "verdict": "green",
        "repo": REPO,
        "pr": 1,
        "sha": head,
        "moved_to": None,
        "reasons": ["ci=success"],
        "polls": 1,
    }
    repo.add_run(head, "lint", "failure")
    done = cli(server, REPO, head, "--json", "--quiet")
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "verdict": "red",
        "repo": REPO,
        "pr": None,
        "sha": head,
        "moved_to": None,
        "reasons": ["lint=failure"],
        "polls": 1,
    }
