"""Every review-related read failing in every way, on the wire, through the real gh.

The local forge answers one part (classic protection over REST, the rulesets over REST, the
GraphQL reviews selection, the GraphQL review threads) with a fault: a 403 rate limit, GitHub's
404 `Not Found` to a caller without admin rights, a 502, an empty or truncated body, GraphQL
`errors`, a field left out, a page that says there is more without a cursor. In a world where,
without the fault, premerge says OK, pr-status ready, merge MERGED and the train merges, none of
them may say so with it, and the train stops with the PR's label kept: it never drops a PR for a
read that failed.
Real forge-cli subprocesses; gh is whichever is first on PATH (`make test-gh-newest`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fakeforge import ForgeServer, RepoState
from fakeforge.faults import GRAPHQL_FAULTS, REST_FAULTS
from fakeforge.schema import ABSENT, bent
from forge_builders import ForgeCli

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
LABEL = "merge-train"
CASES = [(part, f) for part in ("protection", "rulesets") for f in REST_FAULTS] + [
    (part, f) for part in ("reviews", "threads") for f in GRAPHQL_FAULTS
]


@dataclass
class World:
    run: ForgeCli
    server: ForgeServer
    repo: RepoState
    head: str

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.server, *args)

    def premerge(self) -> subprocess.CompletedProcess[str]:
        return self.cli("premerge", f"{REPO}#1", self.head, "--approved-head", self.head, "--json")

    def pr_status(self) -> subprocess.CompletedProcess[str]:
        return self.cli("pr-status", f"{REPO}#1", "--json")

    def merge(self) -> subprocess.CompletedProcess[str]:
        return self.cli("merge", f"{REPO}#1", self.head, "--approved-head", self.head)

    def train(self) -> subprocess.CompletedProcess[str]:
        return self.cli("train", REPO, "--label", LABEL, "--interval", "0.2", "--timeout", "20")


@pytest.fixture
def world(forge_cli: ForgeCli) -> Iterator[World]:
    """A PR every gate passes: checks from rulesets and classic protection, review rules from
    both (one approval, stale dismissal, last-push approval, resolved conversations), approved
    at its head by a writer other than its pusher, GitHub's own decision APPROVED."""
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.branches["main"] = repo.add_commit("root")
        head = repo.add_commit("head", parents=[repo.branches["main"]], message="Change")
        repo.add_pr(1, head_ref="feature", head_sha=head, title="Change")
        repo.pr_commits[1] = [head]
        repo.labels[1] = [LABEL]
        repo.set_rulesets("main", [("ci", 15368)])
        repo.add_review_rule("main", required_approving_review_count=1)
        repo.classic["main"] = {"strict": False, "contexts": ["ci"], "checks": []}
        repo.protection["main"] = {
            "required_pull_request_reviews": {
                "dismiss_stale_reviews": True,
                "require_code_owner_reviews": False,
                "required_approving_review_count": 1,
                "require_last_push_approval": True,
            },
            "required_conversation_resolution": {"enabled": True},
        }
        repo.add_run(head, "ci", "success")
        repo.commit_users[head] = ("author", "author")
        repo.prs[1]["_reviews"] = [{"id": 1, "user": "bob", "state": "APPROVED", "commit_id": head}]
        repo.prs[1]["_review_decision"] = "APPROVED"
        repo.review_threads[1] = [
            {"resolved": True, "comments": [{"id": 7, "user": "bob", "path": "a.py", "line": 1}]}
        ]
        yield World(run=forge_cli, server=server, repo=repo, head=head)


def test_without_a_fault_every_gate_passes_and_the_train_merges(world: World) -> None:
    # The baseline the table breaks: every refusal there comes from the fault alone.
    done = world.premerge()
    assert (done.returncode, json.loads(done.stdout)["ok"]) == (0, True), done.stdout
    done = world.pr_status()
    assert (done.returncode, json.loads(done.stdout)["ready"]) == (0, True), done.stdout
    done = world.train()
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert f"MERGED {REPO}#1 " in done.stdout
    assert world.repo.prs[1]["merged"] is True


@pytest.mark.slow  # premerge, pr-status, merge and train through real gh per fault: 10-25 s
@pytest.mark.parametrize(("part", "fault"), CASES)
def test_a_failed_review_read_never_passes_and_never_drops(
    world: World, part: str, fault: str
) -> None:
    world.server.state.part_faults[part] = fault
    done = world.premerge()
    assert world.server.state.fault_hits[part], "the fault never fired: the table tests nothing"
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["ok"] is False
    assert "Traceback" not in done.stderr

    done = world.pr_status()
    assert done.returncode in (0, 1), (done.stdout, done.stderr)
    if part == "rulesets":
        # pr-status reads the rulesets in its GraphQL document (whose failures are the rows of
        # the reviews and threads parts), never over REST: this fault cannot reach it.
        assert (done.returncode, json.loads(done.stdout)["ready"]) == (0, True), done.stderr
    elif done.returncode == 0:
        assert json.loads(done.stdout)["ready"] is False
    else:
        assert (done.stdout, done.stderr.count("\n")) == ("", 1)
        assert done.stderr.startswith("forge-cli: ")

    done = world.merge()
    assert done.returncode != 0, (done.stdout, done.stderr)
    assert "MERGED" not in done.stdout
    assert "Traceback" not in done.stderr

    done = world.train()
    assert "MERGED" not in done.stdout
    assert f"STOPPED {REPO}#1: " in done.stdout, (done.stdout, done.stderr)
    assert "the PR keeps its label" in done.stdout
    assert "DROPPED" not in done.stdout
    assert "Traceback" not in done.stderr
    # Nothing merged, the label kept, no drop comment written.
    assert world.repo.prs[1]["merged"] is False
    assert world.repo.labels[1] == [LABEL]
    assert not world.repo.comments.get(1)


# A field the documents select left out of the answer (each row's field was once read as if
# GitHub had sent null or ""): the operations bent, where the field sits, and its name. The
# review selection is shared by pr-status's snapshot and premerge's review read.
_PULL = ("data", "repository", "pullRequest")
LEFT_OUT = [
    (("PullRequestSnapshot",), _PULL, "baseRefOid"),
    (("PullRequestSnapshot",), _PULL, "headRepository"),
    (
        ("PullRequestSnapshot", "PullRequestReviewState"),
        (*_PULL, "reviews", "nodes", 0, "commit"),
        "oid",
    ),
]


@pytest.mark.parametrize(
    ("operations", "path", "field"), LEFT_OUT, ids=[f"{row[1][-1]}.{row[2]}" for row in LEFT_OUT]
)
def test_an_answer_without_a_selected_field_is_malformed_never_ready(
    world: World, operations: tuple[str, ...], path: tuple[str | int, ...], field: str
) -> None:
    seen: list[str] = []

    def leave_out(answer: dict[str, Any]) -> dict[str, Any]:
        seen.append(field)
        without: dict[str, Any] = bent(answer, path, field, ABSENT)
        return without

    for operation in operations:
        world.server.state.graphql_bends[operation] = leave_out
    done = world.pr_status()
    assert seen, "the answer was never bent: the row tests nothing"
    assert (done.returncode, done.stdout) == (1, ""), (done.stdout, done.stderr)
    assert done.stderr.startswith("forge-cli: ")
    assert "malformed" in done.stderr or "cannot read" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    done = world.premerge()
    assert json.loads(done.stdout)["ok"] is (len(operations) == 1), done.stdout


def test_a_caller_without_admin_rights_is_told_what_it_needs(world: World) -> None:
    # GitHub's 404 `Not Found` to a non-admin: the FAIL line names the failed read and the fix.
    world.repo.admins.clear()
    done = world.premerge()
    assert done.returncode == 1
    reasons = json.loads(done.stdout)["reasons"]
    assert any(
        r.startswith("cannot read CI: cannot read branch protection of acme/widgets:main")
        and "admin" in r
        and r.endswith("else only GitHub's reviewDecision judges reviews")  # whole, not cut
        for r in reasons
    ), reasons
    done = world.cli("ci-wait", f"{REPO}#1", "--required", "--timeout", "5", "--interval", "1")
    assert done.returncode == 69  # no verdict: never GREEN, and never "no required checks"
    assert "cannot read branch protection" in done.stderr
    assert "no required" not in done.stderr.lower()
