"""premerge fails closed: real `forge-cli` subprocesses through the real gh, and a real git clone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakeforge import ForgeServer, RepoState
from forge_automation import ForgeInputError, ForgePort, forge_port, gh_cli_wire, premerge
from forge_builders import GreenFake
from forge_train_support import commit, git

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


@dataclass
class World:
    """A real clone, its mirror on the local forge, and PR #1 from `feature` into `main`."""

    server: ForgeServer
    repo: RepoState
    clone: Path
    base: str
    head: str

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [FORGE_CLI, *args],
            capture_output=True,
            text=True,
            env={**os.environ, **self.server.env()},
            timeout=120,
            check=False,
        )

    def mirror(self) -> None:
        self.repo.mirror_git(str(self.clone))
        self.repo.prs[1]["head"]["sha"] = self.repo.branches["feature"]

    def green(self, sha: str) -> None:
        self.repo.add_run(sha, "ci", "success")

    def premerge(
        self, *extra: str, head: str | None = None, approved: str | None = None
    ) -> tuple[int, str, str]:
        done = self.cli(
            "premerge",
            f"{REPO}#1",
            head or self.head,
            "--approved-head",
            approved or self.head,
            *extra,
        )
        return done.returncode, done.stdout, done.stderr


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    clone = tmp_path / "clone"
    clone.mkdir()
    git(clone, "init", "-q", "-b", "main")
    (clone / "shared.txt").write_text("one\ntwo\nthree\n")
    base = commit(clone, "readme.txt", "hello\n", "root")
    git(clone, "add", "shared.txt")
    git(clone, "commit", "-q", "--amend", "--no-edit")
    base = git(clone, "rev-parse", "HEAD")
    git(clone, "checkout", "-q", "-b", "feature")
    head = commit(clone, "feature.txt", "feature\n", "add the feature")
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.add_pr(1, head_ref="feature", head_sha=head, title="Add the feature")
        repo.set_rulesets("main", ["ci"], strict=True)
        world = World(server=server, repo=repo, clone=clone, base=base, head=head)
        world.mirror()
        yield world


def test_ok_without_and_with_a_clone(world: World) -> None:
    world.green(world.head)
    code, out, err = world.premerge()
    assert (code, err) == (0, "")
    assert out == (f"OK {REPO}#1 head={world.head} base=main required=ci strict=true behind=0\n")
    code, out, _ = world.premerge("--clone", str(world.clone))
    assert code == 0
    assert out.startswith(f"OK {REPO}#1 head={world.head} ")
    code, out, _ = world.premerge("--json")
    assert code == 0
    assert json.loads(out) == {
        "repo": REPO,
        "number": 1,
        "ok": True,
        "reasons": [],
        "head": world.head,
        "base": "main",
        "required": ["ci"],
        "strict": True,
        "behindBy": 0,
        "blockers": [],
    }


@pytest.mark.parametrize("case", ["closed", "merged", "draft"])
def test_closed_merged_and_draft_fail(world: World, case: str) -> None:
    world.green(world.head)
    pr = world.repo.prs[1]
    if case == "closed":
        pr["state"] = "closed"
    elif case == "merged":
        pr.update(state="closed", merged=True, merged_at="2024-01-03T00:00:00Z")
    else:
        pr["draft"] = True
    code, out, _ = world.premerge()
    assert code == 1
    expected = {
        "closed": "the PR is closed",
        "merged": "the PR is already merged",
        "draft": "the PR is a draft",
    }[case]
    assert out == f"FAIL {REPO}#1: {expected}\n"


def test_head_moved_fails(world: World) -> None:
    world.green(world.head)
    other = world.base
    code, out, _ = world.premerge(head=other, approved=other)
    assert code == 1
    assert f"head moved: the PR head is {world.head}, expected {other}" in out


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("red", "CI is red: ci=failure"),
        ("pending", "CI is pending: ci=in_progress"),
        ("missing", "CI is pending: ci=missing"),
        ("other-app", "CI is pending: ci=missing"),
    ],
)
def test_a_required_check_not_green_fails(world: World, setup: str, expected: str) -> None:
    if setup == "red":
        world.repo.add_run(world.head, "ci", "failure")
    elif setup == "pending":
        world.repo.add_run(world.head, "ci", None)
    elif setup == "other-app":
        world.repo.add_run(world.head, "ci", "success", app_id=4242)
    code, out, _ = world.premerge()
    assert code == 1
    assert out == f"FAIL {REPO}#1: {expected}\n"


def test_a_superseded_failed_run_still_fails(world: World) -> None:
    world.repo.add_run(world.head, "ci", "failure")
    world.green(world.head)
    code, out, _ = world.premerge()
    assert (code, out) == (1, f"FAIL {REPO}#1: CI is red: ci=failure\n")


def test_strict_and_behind_fails_and_not_strict_passes(world: World) -> None:
    git(world.clone, "checkout", "-q", "main")
    commit(world.clone, "other.txt", "other\n", "advance main")
    world.mirror()
    world.green(world.head)
    code, out, _ = world.premerge()
    assert (code, out) == (1, f"FAIL {REPO}#1: strict base main: head is behind by 1\n")
    world.repo.set_rulesets("main", ["ci"], strict=False)
    code, out, _ = world.premerge("--clone", str(world.clone))
    assert code == 0
    assert out.endswith(" strict=false behind=1\n")


def test_conflict_found_by_git_merge_tree_in_a_real_clone(world: World) -> None:
    git(world.clone, "checkout", "-q", "main")
    commit(world.clone, "shared.txt", "one\nMAIN\nthree\n", "main edits line two")
    git(world.clone, "checkout", "-q", "feature")
    head = commit(world.clone, "shared.txt", "one\nFEATURE\nthree\n", "feature edits line two")
    world.mirror()
    world.head = head
    world.repo.set_rulesets("main", ["ci"], strict=False)
    world.green(head)
    # The forge still says clean (it is lazy); the clone's merge-tree finds the conflict.
    code, out, _ = world.premerge("--clone", str(world.clone))
    base_tip = world.repo.branches["main"]
    assert (code, out) == (
        1,
        f"FAIL {REPO}#1: the head conflicts with the base tip {base_tip} (git merge-tree)\n",
    )


def test_the_merge_uses_the_forge_base_tip_not_a_local_ref(world: World) -> None:
    # The forge's main moved to a conflicting commit the local `main` ref does not point at.
    git(world.clone, "checkout", "-q", "main")
    conflicting = commit(world.clone, "feature.txt", "main's own\n", "main adds feature.txt")
    git(world.clone, "reset", "-q", "--hard", world.base)
    git(world.clone, "checkout", "-q", "feature")
    world.mirror()
    world.repo.branches["main"] = conflicting
    world.repo.set_rulesets("main", ["ci"], strict=False)
    world.green(world.head)
    code, out, _ = world.premerge("--clone", str(world.clone))
    assert code == 1
    assert f"conflicts with the base tip {conflicting}" in out


def test_a_missing_base_tip_in_the_clone_fails(world: World) -> None:
    world.repo.branches["main"] = "f" * 40
    world.repo.set_rulesets("main", ["ci"], strict=False)
    world.green(world.head)
    code, out, _ = world.premerge("--clone", str(world.clone))
    assert code == 1
    assert f"the clone lacks the base tip commit {'f' * 40}: fetch it first" in out


def test_dirty_without_a_clone_fails(world: World) -> None:
    world.green(world.head)
    world.repo.prs[1]["mergeable_state"] = "dirty"
    code, out, _ = world.premerge()
    assert (code, out) == (
        1,
        f"FAIL {REPO}#1: the forge reports a conflict (mergeable_state dirty)\n",
    )


def _merge_main_into_feature(world: World, *, evil: bool = False) -> str:
    git(world.clone, "checkout", "-q", "main")
    commit(world.clone, "main.txt", "main\n", "main moves on")
    git(world.clone, "checkout", "-q", "feature")
    git(world.clone, "merge", "-q", "--no-ff", "--no-edit", "main")
    if evil:
        (world.clone / "feature.txt").write_text("sneaked in\n")
        git(world.clone, "commit", "-q", "--amend", "-a", "--no-edit")
    world.mirror()
    return git(world.clone, "rev-parse", "HEAD")


def test_approved_head_reached_through_a_base_merge(world: World) -> None:
    approved = world.head
    head = _merge_main_into_feature(world)
    world.green(head)
    code, out, _ = world.premerge("--clone", str(world.clone), head=head, approved=approved)
    assert (code, out.split()[0]) == (0, "OK")
    # Without a clone the walk cannot be proved: fail closed.
    code, out, _ = world.premerge(head=head, approved=approved)
    assert code == 1
    assert f"approved head {approved} is not the PR head and no --clone was given" in out


def test_an_evil_merge_fails_the_tree_proof(world: World) -> None:
    approved = world.head
    head = _merge_main_into_feature(world, evil=True)
    world.green(head)
    code, out, _ = world.premerge("--clone", str(world.clone), head=head, approved=approved)
    assert code == 1
    assert "tree proof failed: the head's tree differs from approved head" in out


def test_an_unreachable_approved_head_fails(world: World) -> None:
    approved = world.head
    head = commit(world.clone, "more.txt", "unreviewed\n", "an unreviewed commit")
    world.mirror()
    world.green(head)
    code, out, _ = world.premerge("--clone", str(world.clone), head=head, approved=approved)
    assert code == 1
    assert f"approved head {approved} is unreachable from the head" in out
    assert "is not a merge of the base" in out


@pytest.mark.slow  # waits out the re-reads at 1, 2 and 4 s
def test_unknown_that_stays_unknown_fails_after_the_re_reads(world: World) -> None:
    world.green(world.head)
    world.repo.prs[1]["mergeable_state"] = "unknown"
    world.server.clear_log()
    code, out, _ = world.premerge()
    assert (code, out) == (
        1,
        f"FAIL {REPO}#1: mergeable_state still unknown after re-reads at 1 2 4 s\n",
    )
    reads = [r for r in world.server.requests("GET") if r.path == f"/repos/{REPO}/pulls/1"]
    assert len(reads) == 4


def _port(world: World) -> ForgePort:
    return forge_port(gh_cli_wire(world.server.exec()))


def test_unknown_settles_on_a_re_read_with_the_sleeps_injected(world: World) -> None:
    world.green(world.head)
    world.repo.prs[1]["_mergeable_states"] = ["unknown", "unknown", "clean"]
    slept: list[float] = []
    result = premerge(
        _port(world), REPO, 1, world.head, approved_head=world.head, sleep=slept.append
    )
    assert result.ok
    assert slept == [1.0, 2.0]
    world.repo.prs[1]["_mergeable_states"] = ["unknown", "dirty"]
    slept.clear()
    result = premerge(
        _port(world), REPO, 1, world.head, approved_head=world.head, sleep=slept.append
    )
    assert result.reasons == ("the forge reports a conflict (mergeable_state dirty)",)
    assert slept == [1.0]


def test_unknown_stays_unknown_in_process(world: World) -> None:
    world.green(world.head)
    world.repo.prs[1]["mergeable_state"] = "unknown"
    slept: list[float] = []
    result = premerge(
        _port(world), REPO, 1, world.head, approved_head=world.head, sleep=slept.append
    )
    assert not result.ok
    assert slept == [1.0, 2.0, 4.0]


def test_a_failing_forge_read_fails_closed(world: World) -> None:
    done = world.cli("premerge", f"{REPO}#9", world.head, "--approved-head", world.head)
    assert done.returncode == 1
    assert done.stdout.startswith(f"FAIL {REPO}#9: cannot read the PR: ")
    assert "HTTP 404" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        [f"{REPO}#1", "ABC", "--approved-head", "a" * 40],
        [f"{REPO}#1", "A" * 40, "--approved-head", "a" * 40],
        [f"{REPO}#1", "a" * 39, "--approved-head", "a" * 40],
        [f"{REPO}#1", "a" * 40, "--approved-head", "xyz"],
        [f"{REPO}#1", "a" * 40],
        [f"{REPO}", "a" * 40, "--approved-head", "a" * 40],
        [f"{REPO}#0", "a" * 40, "--approved-head", "a" * 40],
        ["../x#1", "a" * 40, "--approved-head", "a" * 40],
        [f"{REPO}#1", "a" * 40, "--approved-head", "a" * 40, "--clone", "/nonexistent/dir"],
        [f"{REPO}#1", "a" * 40, "--approved-head", "a" * 40, "--bogus"],
    ],
)
def test_bad_arguments_exit_2_without_a_traceback(world: World, args: list[str]) -> None:
    world.server.clear_log()
    done = world.cli("premerge", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("forge-cli: ")
    # The problem, then the command's usage line.
    assert len(done.stderr.splitlines()) == 2
    assert done.stderr.splitlines()[1].startswith("usage: forge-cli premerge ")
    assert "Traceback" not in done.stderr
    assert world.server.requests() == []


def test_premerge_refuses_bad_shas_in_process(world: World) -> None:
    with pytest.raises(ForgeInputError) as caught:
        premerge(_port(world), REPO, 1, "HEAD", approved_head=world.head)
    assert caught.value.field == "head_sha"


# -- reviews -----------------------------------------------------------------------------------------


def test_review_blockers_fail_premerge_with_their_actors(world: World) -> None:
    world.green(world.head)
    world.repo.add_review_rule(
        "main", required_approving_review_count=1, required_review_thread_resolution=True
    )
    world.repo.review_threads[1] = [
        {"resolved": False, "comments": [{"id": 7, "user": "bob", "path": "a.py", "line": 3}]}
    ]
    code, out, _ = world.premerge()
    assert (code, out) == (
        1,
        f"FAIL {REPO}#1: approvals-missing: main (ruleset rule) requires 1 approving review from "
        "reviewers who can push; counted: none [actor: reviewer]; threads-unresolved: main "
        "(ruleset rule) requires every review thread resolved; 1 unresolved: a.py:3 (bob) "
        "[actor: author]\n",
    )
    code, out, _ = world.premerge("--json")
    data = json.loads(out)
    assert [(b["reason"], b["actor"]) for b in data["blockers"]] == [
        ("approvals-missing", "reviewer"),
        ("threads-unresolved", "author"),
    ]
    # An approval of the head by a reviewer who can push, and the thread resolved: OK.
    world.repo.prs[1]["_reviews"] = [
        {"id": 1, "user": "bob", "state": "APPROVED", "commit_id": world.head, "can_push": True}
    ]
    world.repo.review_threads[1][0]["resolved"] = True
    code, out, _ = world.premerge()
    assert (code, out.split()[0]) == (0, "OK")


def test_classic_review_rules_apply_when_rulesets_have_none(world: World) -> None:
    world.green(world.head)
    world.repo.protection["main"] = {
        "required_pull_request_reviews": {
            "dismiss_stale_reviews": True,
            "require_code_owner_reviews": False,
            "required_approving_review_count": 1,
        }
    }
    world.repo.prs[1]["_reviews"] = [
        {"id": 1, "user": "bob", "state": "APPROVED", "commit_id": world.base, "can_push": True}
    ]
    code, out, _ = world.premerge()
    assert code == 1
    assert out.startswith(
        f"FAIL {REPO}#1: approvals-missing: main (classic rule) requires 1 approving review"
    )
    assert "bob approved an older commit" in out


def test_a_review_read_that_fails_fails_closed(world: World) -> None:
    world.green(world.head)
    world.server.state.graphql_faults.append({"message": "Something went wrong"})
    code, out, _ = world.premerge()
    assert (code, out) == (
        1,
        f"FAIL {REPO}#1: cannot read reviews: GraphQL error: Something went wrong\n",
    )


def test_a_review_read_that_fails_fails_closed_on_the_fake(green_fake: GreenFake) -> None:
    head = "a" * 40
    fake = green_fake(head)
    port = forge_port(fake.wire)
    assert premerge(port, REPO, 1, head, approved_head=head).ok
    fake.read_faults.reviews = True
    result = premerge(port, REPO, 1, head, approved_head=head)
    assert result.reasons == (
        "cannot read reviews: gh api failed with HTTP 502: fake reviews fault",
    )
    assert not result.ok


@pytest.mark.parametrize("status", [500, 401])
def test_a_review_rule_read_that_fails_fails_closed_on_the_fake(
    green_fake: GreenFake, status: int
) -> None:
    head = "a" * 40
    fake = green_fake(head)
    # Classic protection is layered on the rulesets; its one read (checks and reviews) fails.
    fake.set_classic_review_rules(REPO, "main", status)
    result = premerge(forge_port(fake.wire), REPO, 1, head, approved_head=head)
    assert result.reasons == (
        f"cannot read CI: gh api failed with HTTP {status}",
        f"cannot read reviews: gh api failed with HTTP {status}",
    )
