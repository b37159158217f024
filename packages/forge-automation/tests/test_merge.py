"""forge-cli merge: premerge, the squash merge at one head, branch cleanup; reruns do nothing twice.

The decisions run on fake_forge(); the command runs as a real subprocess with the real gh against
the local forge API (held to GitHub's OpenAPI description).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from fakeforge import ForgeServer, RepoState, sha_of
from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    FakeForge,
    ForgePort,
    ForgeWire,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    fake_forge,
    forge_port,
    guarded_merge,
)

REPO = "acme/widgets"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))
SQUASH_BODY = (
    "## Summary\n\nRetries the call.\n\n## Changes\n\n"
    "- **Add backoff.** Wraps the call in a loop.\n- **Fix typo.**\n\nRefs: T-7, #7\n\n"
    "Co-authored-by: Bea Co <bea@example.org>"
)


def _green(sha: str) -> list[CheckRun]:
    return [
        CheckRun(
            id=1,
            name="ci",
            status="completed",
            conclusion="success",
            app_id=ACTIONS_APP_ID,
            head_sha=sha,
        )
    ]


def _fake() -> tuple[FakeForge, ForgePort, str]:
    """PR #7 from `topic` (two commits and a base merge), green, clean; return its head."""
    forge = fake_forge()
    root = forge.add_commit(sha_of("root"), message="root")
    forge.set_branch(REPO, "main", root, default=True)
    forge.set_rulesets(REPO, "main", RequiredChecks(contexts=(RequiredContext(context="ci"),)))
    one = forge.add_commit(
        sha_of("one"),
        parents=[root],
        message="Add backoff\n\nWraps the call\nin a loop.",
        author_login="ann",
    )
    two = forge.add_commit(
        sha_of("two"),
        parents=[one],
        message="Fix typo.",
        author_name="Bea Co",
        author_email="bea@example.org",
        author_login="bea",
    )
    head = forge.add_commit(sha_of("merge"), parents=[two, root], message="Merge branch 'main'")
    forge.add_pr(
        REPO,
        PullRequest(
            number=7,
            state="open",
            head_sha=head,
            head_ref="topic",
            head_repo=REPO,
            base_ref="main",
            title="Add retry",
            body="Retries the call.",
            mergeable_state="clean",
            author="ann",
        ),
    )
    forge.set_pr_commits(REPO, 7, [one, two, head])
    forge.set_runs(head, _green(head))
    return forge, forge_port(forge.wire), head


def _merge(port: ForgePort, head: str, **kwargs: Any) -> Any:
    return guarded_merge(
        port, REPO, 7, head, approved_head=head, task_ids=("T-7",), delays=(), **kwargs
    )


def test_merges_the_squash_message_then_deletes_the_branch_and_a_rerun_does_nothing() -> None:
    forge, port, head = _fake()
    first = _merge(port, head)
    tip = forge.branch_sha(REPO, "main")
    assert first.line() == (f"MERGED {REPO}#7 head={head} sha={tip} merge=done branch=deleted")
    assert forge.commits[tip or ""].message == f"Add retry (T-7) (#7)\n\n{SQUASH_BODY}"
    assert forge.branch_sha(REPO, "topic") is None
    again = _merge(port, head)
    assert again.line() == (
        f"MERGED {REPO}#7 head={head} sha={tip} merge=skipped(merged) branch=skipped(missing)"
    )
    assert (forge.effects["merge_pr"], forge.effects["delete_ref"]) == (1, 1)


def test_a_rerun_after_a_crash_between_merge_and_delete_deletes_the_branch() -> None:
    forge, port, head = _fake()
    port.merge_pr(REPO, 7, head_sha=head, method="squash", subject="S", body="")  # then: crash
    done = _merge(port, head)
    assert (done.status, done.merge, done.branch) == ("merged", "skipped(merged)", "deleted")
    assert (forge.effects["merge_pr"], forge.effects["delete_ref"]) == (1, 1)


def test_a_branch_pushed_to_after_the_merge_and_a_fork_head_are_kept() -> None:
    forge, port, head = _fake()
    port.merge_pr(REPO, 7, head_sha=head, method="squash", subject="S", body="")
    forge.set_branch(REPO, "topic", forge.add_commit(sha_of("late"), parents=[head]))
    assert _merge(port, head).branch == "skipped(moved)"
    forge.update_pr(REPO, 7, head_repo="someone/widgets")
    assert _merge(port, head).branch == "skipped(fork-head)"
    assert forge.effects["delete_ref"] == 0


def test_premerge_failure_merges_nothing() -> None:
    forge, port, head = _fake()
    forge.update_pr(REPO, 7, mergeable_state="dirty")
    done = _merge(port, head)
    assert done.status == "failed"
    assert done.line() == f"FAIL {REPO}#7: the forge reports a conflict (mergeable_state dirty)"
    assert forge.effects["merge_pr"] == 0


class _PushBeforeMerge:
    """A wire on which the author pushes right before the merge call (after premerge said OK)."""

    def __init__(self, forge: FakeForge, new_head: str) -> None:
        self._forge, self._new_head = forge, new_head

    def __getattr__(self, name: str) -> Any:
        return getattr(self._forge.wire, name)

    def merge_pr(self, repo: str, number: int, **kwargs: Any) -> str:
        self._forge.update_pr(repo, number, head_sha=self._new_head)
        return self._forge.wire.merge_pr(repo, number, **kwargs)


def test_a_head_that_moves_before_or_during_the_merge_is_moved_and_nothing_merges() -> None:
    forge, port, head = _fake()
    pushed = forge.add_commit(sha_of("pushed"), parents=[head])
    racing = forge_port(cast(ForgeWire, _PushBeforeMerge(forge, pushed)))
    done = _merge(racing, head)
    assert done.line() == (f"MOVED {REPO}#7: head is {pushed}, expected {head}; nothing was merged")
    # The next run sees the moved head in premerge already.
    assert _merge(port, head).status == "moved"
    assert (forge.effects["merge_pr"], forge.branch_sha(REPO, "topic")) == (0, head)


# -- the command, through the real gh ----------------------------------------------------------------


def _cli(server: ForgeServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FORGE_CLI, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        timeout=120,
        check=False,
    )


def _served(server: ForgeServer) -> tuple[RepoState, str]:
    repo = server.state.repo(REPO)
    root = repo.add_commit("root")
    repo.branches["main"] = root
    repo.set_rulesets("main", ["ci"])
    one = repo.add_commit(
        "one", parents=[root], message="Add backoff\n\nWraps the call\nin a loop."
    )
    two = repo.add_commit("two", parents=[one], message="Fix typo.")
    repo.commit_authors[one] = ("Ann", "ann@example.org", "author")
    repo.commit_authors[two] = ("Bea Co", "bea@example.org", "bea")
    repo.add_pr(7, head_ref="topic", head_sha=two, title="Add retry", body="Retries the call.")
    repo.pr_commits[7] = [one, two]
    repo.add_run(two, "ci", "success")
    return repo, two


@pytest.mark.gh
def test_cli_merge_then_rerun_through_gh() -> None:
    with ForgeServer() as server:
        repo, head = _served(server)
        args = ("merge", f"{REPO}#7", head, "--approved-head", head, "--task-id", "T-7")
        done = _cli(server, *args)
        tip = repo.branches["main"]
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout == f"MERGED {REPO}#7 head={head} sha={tip} merge=done branch=deleted\n"
        assert repo.commits[tip][1] == f"Add retry (T-7) (#7)\n\n{SQUASH_BODY}"
        assert "topic" not in repo.branches
        again = _cli(server, *args)
        assert (again.returncode, again.stdout) == (
            0,
            f"MERGED {REPO}#7 head={head} sha={tip} merge=skipped(merged) "
            "branch=skipped(missing)\n",
        )
        assert server.state.effects["merge_pr"] == 1


@pytest.mark.gh
def test_cli_merge_refuses_a_moved_head_with_exit_3_and_a_failing_one_with_1() -> None:
    with ForgeServer() as server:
        repo, head = _served(server)
        pushed = repo.add_commit("pushed", parents=[head])
        repo.prs[7]["head"]["sha"] = pushed
        done = _cli(server, "merge", f"{REPO}#7", head, "--approved-head", head)
        assert (done.returncode, done.stderr) == (3, "")
        assert done.stdout == (
            f"MOVED {REPO}#7: head is {pushed}, expected {head}; nothing was merged\n"
        )
        done = _cli(server, "merge", f"{REPO}#7", pushed, "--approved-head", pushed)
        assert done.returncode == 1
        assert done.stdout.startswith(f"FAIL {REPO}#7: CI is pending")
        assert server.state.effects["merge_pr"] == 0


@pytest.mark.gh
def test_cli_merge_json_has_the_documented_keys_for_each_outcome() -> None:
    keys = ["status", "repo", "number", "head", "sha", "merge", "branch", "reasons"]
    with ForgeServer() as server:
        repo, head = _served(server)
        pushed = repo.add_commit("pushed", parents=[head])
        repo.prs[7]["head"]["sha"] = pushed
        done = _cli(server, "merge", f"{REPO}#7", head, "--approved-head", head, "--json")
        assert (done.returncode, done.stderr) == (3, "")
        moved = json.loads(done.stdout)
        assert list(moved) == keys
        assert moved == {
            "status": "moved",
            "repo": REPO,
            "number": 7,
            "head": pushed,
            "sha": None,
            "merge": None,
            "branch": None,
            "reasons": [f"head is {pushed}, expected {head}"],
        }
        repo.prs[7]["head"]["sha"] = head
        done = _cli(server, "merge", f"{REPO}#7", head, "--approved-head", head, "--json")
        assert (done.returncode, done.stderr) == (0, "")
        assert json.loads(done.stdout) == {
            "status": "merged",
            "repo": REPO,
            "number": 7,
            "head": head,
            "sha": repo.branches["main"],
            "merge": "done",
            "branch": "deleted",
            "reasons": [],
        }
        assert done.stdout.count("\n") == 1  # one object on one line
