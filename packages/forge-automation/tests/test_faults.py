"""Fault tables: a wrapper gh in front of the local forge fails one read at a time.

premerge must never say OK and pr-status never "ready" when a read it decides on failed; nothing
exits 70; ci-wait's --timeout bounds a hung gh. Real forge-cli subprocesses, real gh.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakeforge import ForgeServer, GhFaults, RepoState, gh_exec
from forge_automation import (
    ForgeCliError,
    forge_port,
    gh_cli_wire,
    load_required_contexts,
    premerge,
)

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))
# Faults that end a read without an answer the wire can use (hang is run in-process below).
READ_FAULTS = ("exit1", "empty200", "truncated", "502", "secondary", "freeplan")


@dataclass
class World:
    server: ForgeServer
    repo: RepoState
    faults: GhFaults
    head: str

    def env(self) -> dict[str, str]:
        return {**os.environ, **self.server.env(), **self.faults.env()}

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [FORGE_CLI, *args],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            check=False,
        )

    def premerge(self) -> subprocess.CompletedProcess[str]:
        return self.cli("premerge", f"{REPO}#1", self.head, "--approved-head", self.head, "--json")

    def pr_status(self) -> subprocess.CompletedProcess[str]:
        return self.cli("pr-status", f"{REPO}#1", "--json")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.branches["main"] = repo.add_commit("root")
        head = repo.add_commit("head", parents=[repo.branches["main"]])
        repo.add_pr(1, head_ref="feature", head_sha=head)
        repo.set_rulesets("main", [("ci", 15368)], strict=True)
        repo.add_run(head, "ci", "success")
        yield World(server=server, repo=repo, faults=GhFaults(tmp_path / "bin"), head=head)


@pytest.mark.parametrize("kind", ["usual", "classic"])
def test_without_faults_premerge_is_ok_and_pr_status_ready(world: World, kind: str) -> None:
    # The baseline the tables below break: every refusal there comes from the fault alone.
    arrange(world, kind)
    done = world.premerge()
    assert (done.returncode, json.loads(done.stdout)["ok"]) == (0, True), done.stderr
    done = world.pr_status()
    assert (done.returncode, json.loads(done.stdout)["ready"]) == (0, True), done.stderr
    assert world.faults.hits() == []


# What each command reads, as a piece of the path gh is given.
PREMERGE_READS = (
    ("usual", "pulls/1"),
    ("usual", "rules/branches"),
    ("usual", "compare/"),
    ("usual", "check-runs"),
    ("usual", "/status"),
    ("classic", "protection"),
)
# pr-status makes one GraphQL read; each REST read it falls back to needs a world that asks for
# it: (world, read). See `arrange`.
PR_STATUS_READS = (
    ("usual", "graphql"),
    ("behind", "compare/"),
    ("classic", "protection"),
    ("many-runs", "check-runs"),
    ("graphql-errors", "pulls/1"),
    ("graphql-errors", "rules/branches"),
)


def arrange(world: World, kind: str) -> None:
    """Make pr-status need the REST read the table faults, beside its GraphQL read."""
    if kind == "behind":  # a strict base that moved on: the behind count
        repo = world.repo
        repo.branches["main"] = repo.add_commit("moved", parents=[repo.branches["main"]])
    elif kind == "classic":  # rulesets require nothing: classic protection
        world.repo.rulesets["main"] = []
        world.repo.classic["main"] = {"strict": False, "contexts": ["ci"], "checks": []}
    elif kind == "many-runs":  # more than one page of runs: the runs by sha
        for n in range(100):
            world.repo.add_run(world.head, f"lint-{n}", "success")
    elif kind == "graphql-errors":  # an `errors` entry: every part over REST
        world.server.state.graphql_faults.append(
            {"type": "FORBIDDEN", "message": "Resource not accessible by integration"}
        )


@pytest.mark.parametrize("fault", READ_FAULTS)
@pytest.mark.parametrize(("kind", "read"), PREMERGE_READS)
def test_premerge_is_never_ok_when_a_read_fails(
    world: World, kind: str, read: str, fault: str
) -> None:
    arrange(world, kind)
    world.faults.add(read, fault)
    done = world.premerge()
    assert world.faults.hits(), "the fault never fired: the table tests nothing"
    assert done.returncode == 1, (done.stdout, done.stderr)
    result = json.loads(done.stdout)
    assert result["ok"] is False
    assert result["reasons"]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("fault", READ_FAULTS)
@pytest.mark.parametrize(("kind", "read"), PR_STATUS_READS)
def test_pr_status_is_never_ready_when_a_read_fails(
    world: World, kind: str, read: str, fault: str
) -> None:
    arrange(world, kind)
    world.faults.add(read, fault)
    done = world.pr_status()
    assert world.faults.hits(), "the fault never fired: the table tests nothing"
    assert done.returncode in (0, 1, 64), (done.stdout, done.stderr)
    if done.returncode == 0:
        assert json.loads(done.stdout)["ready"] is False
    else:
        assert done.stdout == ""
        assert done.stderr.startswith("forge-cli: ")
        assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("kind", "read"), PR_STATUS_READS)
def test_without_faults_each_pr_status_world_makes_its_rest_read(
    world: World, kind: str, read: str
) -> None:
    # The baseline of the table above: each world's REST read happens, and decides alone.
    arrange(world, kind)
    world.server.clear_log()
    done = world.pr_status()
    assert done.returncode == 0, done.stderr
    blockers = [b["reason"] for b in json.loads(done.stdout)["blockers"]]
    assert blockers == (["behind-base"] if kind == "behind" else [])
    assert any(read in r.url for r in world.server.requests()), read


@pytest.mark.slow  # waits out the fault's Retry-After
def test_a_secondary_rate_limit_once_is_retried_after_retry_after(world: World) -> None:
    world.faults.add("rules/branches", "secondary", once=True)
    world.faults.add("pulls/1", "502", once=True)
    done = world.premerge()
    assert len(world.faults.hits()) == 2
    assert (done.returncode, json.loads(done.stdout)["ok"]) == (0, True), done.stderr


def test_a_free_plan_without_classic_protection_is_no_required_checks(world: World) -> None:
    world.faults.add("rules/branches", "freeplan")
    done = world.premerge()
    assert done.returncode == 1
    assert any(r.startswith("no-required-checks") for r in json.loads(done.stdout)["reasons"])


def test_a_free_plan_with_classic_protection_uses_it(world: World) -> None:
    world.faults.add("rules/branches", "freeplan")
    world.repo.classic["main"] = {"strict": False, "contexts": ["ci"], "checks": []}
    done = world.premerge()
    assert (done.returncode, json.loads(done.stdout)["required"]) == (0, ["ci"]), done.stdout


@pytest.mark.parametrize(
    "fault",
    [
        # Retried after its Retry-After until the wire's deadline.
        pytest.param("secondary", marks=pytest.mark.slow),
        "exit1",
        "502",
        "empty200",
        "truncated",
    ],
)
def test_load_required_contexts_never_reads_a_failure_as_none(world: World, fault: str) -> None:
    world.faults.add("rules/branches", fault)
    wire = gh_cli_wire(gh_exec({**world.server.env(), **world.faults.env()}), timeout=20)
    with pytest.raises(ForgeCliError) as caught:
        load_required_contexts(forge_port(wire), REPO, "main")
    assert caught.value.kind != "free-plan"


@pytest.mark.slow  # a hung gh: waits out the 2 s deadline
def test_a_hung_read_fails_premerge_within_the_wires_timeout(world: World) -> None:
    world.faults.add("rules/branches", "hang")
    wire = gh_cli_wire(gh_exec({**world.server.env(), **world.faults.env()}), timeout=2)
    result = premerge(forge_port(wire), REPO, 1, world.head, approved_head=world.head)
    assert result.ok is False
    assert any("cannot read CI" in r and "timed out" in r for r in result.reasons)


@pytest.mark.slow  # a hung gh: waits out the 2 s deadline
@pytest.mark.parametrize(("kind", "read"), PR_STATUS_READS)
def test_a_hung_read_never_makes_pr_status_ready(
    world: World, kind: str, read: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from forge_automation.cli import _pr_status

    arrange(world, kind)
    world.faults.add(read, "hang")
    exec = gh_exec({**world.server.env(), **world.faults.env()})
    with pytest.raises(ForgeCliError) as caught:
        _pr_status._pr_status(exec, REPO, 1, as_json=True, timeout=2)
    assert caught.value.kind == "timeout"
    assert capsys.readouterr().out == ""


@pytest.mark.slow  # waits out ci-wait's 5 s deadline
@pytest.mark.parametrize("fault", ["hang", "exit1", "502", "secondary"])
def test_ci_wait_with_a_failing_gh_ends_as_timeout_near_its_deadline(
    world: World, fault: str
) -> None:
    world.faults.add("check-runs", fault)
    # Not a timing assertion but a bound: a hung gh left to the wire's own 60 s timeout would
    # outlive this 45 s and fail the test with TimeoutExpired.
    done = world.cli("ci-wait", REPO, world.head, "--timeout", "5", "--interval", "1", timeout=45)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout.startswith(f"TIMEOUT {REPO} {world.head} last poll failed: ")
    assert done.stdout.count("\n") == 1


def test_ci_wait_after_a_transient_failure_still_finds_the_verdict(world: World) -> None:
    world.faults.add("check-runs", "502", once=True)
    world.faults.add("/status", "exit1", once=True)
    done = world.cli("ci-wait", REPO, world.head, "--timeout", "30", "--interval", "1")
    assert (done.returncode, done.stdout) == (0, f"GREEN {REPO} {world.head} ci=success\n")


def test_ci_wait_with_a_failure_for_good_is_no_verdict_never_red(world: World) -> None:
    world.faults.add("check-runs", "freeplan")
    done = world.cli("ci-wait", REPO, world.head, "--timeout", "5", "--interval", "1")
    assert done.returncode == 69
    assert done.stdout == ""
    assert done.stderr.startswith(f"forge-cli: ci-wait: no verdict for {world.head}: ")
