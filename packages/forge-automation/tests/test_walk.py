"""approved_head_walk over synthetic parent maps and over a real git history with a tree proof."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from forge_automation import BaseMerge, HeadWalk, approved_head_walk

# Base: b1 <- b2 <- b3. Branch: a (approved, parent b1) <- m1 (a + b2) <- m2 (m1 + b3).
PARENTS: dict[str, tuple[str, ...]] = {
    "b1": ("b0",),
    "b2": ("b1",),
    "b3": ("b2",),
    "a": ("b1",),
    "m1": ("a", "b2"),
    "m2": ("m1", "b3"),
    "x": ("m2",),  # an ordinary commit after the merges
    "m3": ("x", "b3"),
    "rev": ("b3", "a"),  # base first: the branch merged into a copy of the base
    "oct": ("m2", "b3", "b2"),
    "evil": ("m2", "side"),  # merges a commit that is not on the base
    "side": ("b1",),
    "root": (),
    "mb": ("b2", "b3"),  # first parent already on the base
    "loop1": ("loop2", "b2"),
    "loop2": ("loop1", "b2"),
}
BASE = {"b0", "b1", "b2", "b3"}


def walk(head: str, approved: str = "a") -> HeadWalk:
    return approved_head_walk(head=head, approved_head=approved, parents=PARENTS, on_base=BASE)


def test_head_equal_to_approved_is_reachable_with_no_merges() -> None:
    result = walk("a")
    assert result == HeadWalk(reachable=True, merges=(), commits=("a",))
    assert result.proof_base is None


def test_base_merges_lead_back_to_the_approved_head() -> None:
    result = walk("m2")
    assert result.reachable
    assert result.merges == (
        BaseMerge(sha="m2", branch_parent="m1", base_parent="b3"),
        BaseMerge(sha="m1", branch_parent="a", base_parent="b2"),
    )
    assert result.commits == ("m2", "m1", "a")
    assert result.proof_base == "b3"


def test_a_callable_can_tell_base_commits() -> None:
    result = approved_head_walk(
        head="m2", approved_head="a", parents=PARENTS, on_base=lambda sha: sha.startswith("b")
    )
    assert result.reachable


@pytest.mark.parametrize(
    ("head", "approved", "failure"),
    [
        ("x", "a", "not-a-merge"),
        ("m3", "a", "not-a-merge"),
        ("rev", "a", "not-a-base-merge"),
        ("oct", "a", "not-a-merge"),
        ("evil", "a", "not-a-base-merge"),
        ("m2", "side", "not-a-merge"),
        ("mb", "a", "reached-base"),
        ("unknown", "a", "missing-commit"),
        ("root", "a", "unreachable"),
        ("loop1", "a", "unreachable"),
    ],
)
def test_walks_that_fail(head: str, approved: str, failure: str) -> None:
    result = walk(head, approved)
    assert not result.reachable
    assert result.failure == failure
    assert result.detail
    assert result.commits == ()


# -- against a real git history: the walk's merges give the tree proof ------------------------


def git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_real_history_walk_and_merge_tree_proof(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "base.txt").write_text("1\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base 1")
    git(tmp_path, "switch", "-qc", "feature")
    (tmp_path / "feature.txt").write_text("f\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "feature")
    approved = git(tmp_path, "rev-parse", "HEAD")
    for n in (2, 3):
        git(tmp_path, "switch", "-q", "main")
        (tmp_path / "base.txt").write_text(f"{n}\n")
        git(tmp_path, "commit", "-qam", f"base {n}")
        git(tmp_path, "switch", "-q", "feature")
        git(tmp_path, "merge", "-q", "--no-edit", "main")
    head = git(tmp_path, "rev-parse", "HEAD")
    listing = git(tmp_path, "rev-list", "--parents", f"{approved}..{head}")
    parents = {line.split()[0]: tuple(line.split()[1:]) for line in listing.splitlines()}
    base = set(git(tmp_path, "rev-list", "main").split())

    result = approved_head_walk(head=head, approved_head=approved, parents=parents, on_base=base)

    assert result.reachable, result.detail
    assert len(result.merges) == 2
    assert result.proof_base == git(tmp_path, "rev-parse", "main")
    proof = git(tmp_path, "merge-tree", "--write-tree", approved, result.proof_base)
    assert proof == git(tmp_path, "rev-parse", f"{head}^{{tree}}")

    # A commit of new code after the merges breaks the walk.
    (tmp_path / "feature.txt").write_text("sneaky\n")
    git(tmp_path, "commit", "-qam", "unreviewed")
    head2 = git(tmp_path, "rev-parse", "HEAD")
    listing = git(tmp_path, "rev-list", "--parents", f"{approved}..{head2}")
    parents = {line.split()[0]: tuple(line.split()[1:]) for line in listing.splitlines()}
    broken = approved_head_walk(head=head2, approved_head=approved, parents=parents, on_base=base)
    assert broken.failure == "not-a-merge"
