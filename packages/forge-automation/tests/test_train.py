"""forge-cli train: five labelled PRs (one conflict, one red, one behind), a crash in the middle,
run twice; on fake_forge() and as the real command with the real gh against the local forge API.

Base `main` is strict and requires `ci`: once #1 merges every later PR is behind. Premerge runs
first: a conflict or a red check drops the PR at once; a PR only behind (or only waiting for CI)
goes through update-branch and the CI wait. CI on an updated head repeats the old head's.
The crash comes right after #4's merge landed, before its branch is deleted and its label removed.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from fakeforge import ForgeServer, RepoState, ancestors, sha_of
from forge_automation import (
    FakeForge,
    ForgeWire,
    TrainResult,
    forge_port,
    run_train,
    train_marker,
)
from forge_train_support import AGAIN_THEN_MERGED, commit, git
from forge_train_support import ci_run as _run
from forge_train_support import fake_train as _fake_train
from forge_train_support import words as _words

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
LABEL = "merge-train"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))
CONFLICT = "the forge reports a conflict (mergeable_state dirty)"


# The first run: #1 merges, #2 (conflict) and #3 (red) drop without an update, #4 is updated
# and merged, and the process dies right after that merge.
FIRST_RUN = [
    f"TRAIN {REPO}",
    f"MERGED {REPO}#1",
    f"DROPPED {REPO}#2",
    f"DROPPED {REPO}#3",
    f"UPDATED {REPO}#4",
    f"GREEN {REPO}#4",
]


class _Crash(BaseException):
    """The process dies here (not an error anything may catch)."""


class _CiAndCrash:
    """The fake's wire, plus CI that repeats on an updated head and a crash after one merge."""

    def __init__(self, forge: FakeForge, crash_after_merge_of: int | None) -> None:
        self._forge, self._crash = forge, crash_after_merge_of

    def __getattr__(self, name: str) -> Any:
        return getattr(self._forge.wire, name)

    def update_branch(self, repo: str, number: int, *, expected_head_sha: str) -> None:
        self._forge.wire.update_branch(repo, number, expected_head_sha=expected_head_sha)
        new = self._forge.pr(repo, number).head_sha
        old = self._forge.wire.list_check_runs(repo, expected_head_sha, 1, latest=False).items
        self._forge.set_runs(new, [replace(r, head_sha=new, id=r.id + 100) for r in old])

    def merge_pr(self, repo: str, number: int, **kwargs: Any) -> str:
        sha = self._forge.wire.merge_pr(repo, number, **kwargs)
        if number == self._crash:
            raise _Crash
        return sha


def _train(forge: FakeForge, *, crash: int | None = None, dry_run: bool = False) -> list[str]:
    port = forge_port(cast(ForgeWire, _CiAndCrash(forge, crash)))
    lines: list[str] = []
    try:
        result = run_train(
            port, REPO, LABEL, emit=lines.append, dry_run=dry_run, sleep=lambda _s: None, delays=()
        )
    except _Crash:
        return lines
    assert isinstance(result, TrainResult)
    return lines


def test_train_over_five_prs_with_a_crash_then_a_rerun_on_the_fake() -> None:
    forge = _fake_train()
    plan = _train(forge, dry_run=True)
    assert _words(plan) == [
        f"TRAIN {REPO}",
        f"WOULD-MERGE {REPO}#1",
        f"WOULD-DROP {REPO}#2",
        f"WOULD-DROP {REPO}#3",
        f"WOULD-UPDATE {REPO}#4",
        f"WOULD-MERGE {REPO}#5",
        f"DONE {REPO}",
    ]
    assert plan[0] == f"TRAIN {REPO} label={LABEL} prs=#1,#2,#3,#4,#5 (dry run: nothing is written)"
    assert sum(forge.effects.values()) == 0

    first = _train(forge, crash=4)
    assert _words(first) == FIRST_RUN
    assert first[2] == f"DROPPED {REPO}#2: {CONFLICT}"
    assert first[3] == f"DROPPED {REPO}#3: CI is red: ci=failure"
    assert forge.pr(REPO, 4).merged
    assert forge.labels(REPO, 4) == [LABEL, "keep"]

    second = _train(forge)
    four, five = forge.pr(REPO, 4), forge.pr(REPO, 5)
    assert second[:2] == [
        f"TRAIN {REPO} label={LABEL} prs=#4,#5",
        f"MERGED {REPO}#4 head={four.head_sha} sha={four.merge_sha} merge=skipped(merged) "
        "branch=deleted",
    ]
    assert _words(second[2:]) == [
        f"UPDATED {REPO}#5",
        f"GREEN {REPO}#5",
        f"MERGED {REPO}#5",
        f"DONE {REPO}",
    ]
    assert second[-1] == f"DONE {REPO} merged=2 dropped=0"
    assert five.merged
    assert forge.branch_sha(REPO, "main") == five.merge_sha

    assert _train(forge) == [
        f"TRAIN {REPO} label={LABEL} prs=none",
        f"DONE {REPO} merged=0 dropped=0",
    ]
    # Every effect once: three merges, two updates, two comments, five labels, three branches.
    assert dict(forge.effects) == {
        "merge_pr": 3,
        "update_branch": 2,
        "create_issue_comment": 2,
        "remove_label": 5,
        "delete_ref": 3,
    }
    for number in range(1, 6):
        assert forge.labels(REPO, number) == ["keep"]
    for number, kept in ((1, False), (2, True), (3, True), (4, False), (5, False)):
        assert (forge.branch_sha(REPO, f"topic{number}") is not None) is kept
    (comment,) = forge.comments(REPO, 2)
    assert comment.body.splitlines()[0] == train_marker(LABEL, forge.pr(REPO, 2).head_sha)
    assert f"> {CONFLICT}" in comment.body


def test_a_rerun_after_a_crash_before_the_drop_finished_comments_once() -> None:
    forge = _fake_train()
    for number in (1, 3, 4, 5):
        forge.set_labels(REPO, number, [])
    head = forge.pr(REPO, 2).head_sha
    # The earlier run posted the comment, then died before removing the label.
    forge.add_comment(REPO, 2, author=forge.user, body=f"{train_marker(LABEL, head)}\nblocked")
    lines = _train(forge)
    assert lines[1] == f"DROPPED {REPO}#2: {CONFLICT}"
    assert (forge.effects["create_issue_comment"], forge.labels(REPO, 2)) == (0, ["keep"])


def test_a_mergeable_state_the_forge_never_computes_stops_the_train_and_keeps_the_label() -> None:
    forge = _fake_train()
    for number in (2, 3, 4, 5):
        forge.set_labels(REPO, number, [])
    forge.update_pr(REPO, 1, mergeable_state="unknown")
    lines = _train(forge)
    assert lines[1:] == [
        f"STOPPED {REPO}#1: mergeable_state still unknown after re-reads at  s; the PR keeps its "
        f"label; rerun `forge-cli train {REPO} --label {LABEL}` to continue"
    ]
    assert forge.labels(REPO, 1) == [LABEL, "keep"]
    assert sum(forge.effects.values()) == 0
    assert forge.calls["get_pr"] == 1 + 3  # the turn's read, then three rounds of premerge


class _MergedByHandAfterTheListing:
    def __init__(self, forge: FakeForge) -> None:
        self._forge = forge

    def __getattr__(self, name: str) -> Any:
        return getattr(self._forge.wire, name)

    def list_labelled_prs(self, *args: Any) -> Any:
        rows = self._forge.wire.list_labelled_prs(*args)
        self._forge.update_pr(REPO, 1, state="closed", merged=True, merge_sha="c" * 40)
        return rows


def test_a_pr_merged_by_hand_after_the_listing_is_finished_not_dropped() -> None:
    forge = _fake_train()
    for number in (2, 3, 4, 5):
        forge.set_labels(REPO, number, [])
    port = forge_port(cast(ForgeWire, _MergedByHandAfterTheListing(forge)))
    lines: list[str] = []
    run_train(port, REPO, LABEL, emit=lines.append, sleep=lambda _s: None, delays=())
    head = forge.pr(REPO, 1).head_sha
    assert lines[1:] == [
        f"MERGED {REPO}#1 head={head} sha={'c' * 40} merge=skipped(merged) branch=deleted",
        f"DONE {REPO} merged=1 dropped=0",
    ]
    assert forge.effects["create_issue_comment"] == 0


def test_a_push_during_the_ci_wait_drops_the_pr_at_the_head_it_judged() -> None:
    forge = _fake_train()
    for number in (2, 3, 4, 5):
        forge.set_labels(REPO, number, [])
    head = forge.pr(REPO, 1).head_sha
    forge.set_runs(head, [replace(_run(head, "success"), status="in_progress", conclusion=None)])
    pushed = forge.add_commit(sha_of("pushed"), parents=[head])

    def push(_seconds: float) -> None:
        forge.update_pr(REPO, 1, head_sha=pushed)

    lines: list[str] = []
    run_train(forge_port(forge.wire), REPO, LABEL, emit=lines.append, sleep=push, delays=())
    assert lines[1:] == [
        f"MOVED {REPO}#1 {head} head moved from {head} to {pushed}",
        f"DROPPED {REPO}#1: a push to the PR: the head moved from {head} to {pushed}, which is "
        f"not {head} with merges of main on top (commit {pushed} after the approved head is not "
        "a merge of the base)",
        f"DONE {REPO} merged=0 dropped=1",
    ]
    assert (forge.effects["merge_pr"], forge.labels(REPO, 1)) == (0, ["keep"])
    (comment,) = forge.comments(REPO, 1)
    assert f"> a push to the PR: the head moved from {head} to {pushed}" in comment.body


def test_a_required_check_that_never_registers_drops_the_pr_after_the_grace() -> None:
    forge = _fake_train()
    for number in (2, 3, 4, 5):
        forge.set_labels(REPO, number, [])
    head = forge.pr(REPO, 1).head_sha
    forge.set_runs(head, [])  # the required `ci` never reports on this head
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    lines: list[str] = []
    run_train(
        forge_port(forge.wire),
        REPO,
        LABEL,
        emit=lines.append,
        interval=15.0,
        grace=60.0,
        sleep=sleep,
        clock=lambda: now[0],
        delays=(),
    )
    assert lines[1:] == [
        f"RED {REPO}#1 {head} ci=never reported",
        f"DROPPED {REPO}#1: CI is red: ci=never reported",
        f"DONE {REPO} merged=0 dropped=1",
    ]
    # Pending through the grace (polls at 0, 15, 30, 45 s), RED at 60 s, not at the 1800 s timeout.
    assert now[0] == 60.0
    assert (forge.effects["merge_pr"], forge.labels(REPO, 1)) == (0, ["keep"])


# -- the command, through the real gh ----------------------------------------------------------------


def _served(server: ForgeServer) -> RepoState:
    repo = server.state.repo(REPO)
    root = repo.add_commit("root")
    tip = repo.add_commit("m1", parents=[root])
    repo.branches["main"] = tip
    repo.set_rulesets("main", ["ci"], strict=True)
    for number in range(1, 6):
        parent = root if number == 4 else tip
        head = repo.add_commit(f"h{number}", parents=[parent], message=f"Change {number}")
        repo.add_pr(
            number,
            head_ref=f"topic{number}",
            head_sha=head,
            title=f"Change {number}",
            mergeable_state="dirty" if number == 2 else "clean",
        )
        repo.pr_commits[number] = [head]
        repo.add_run(head, "ci", "failure" if number == 3 else "success")
        repo.labels[number] = [LABEL, "keep"]

    def ci_repeats(number: int, old: str, new: str) -> None:
        for run in [r for r in repo.check_runs if r["head_sha"] == old]:
            repo.add_run(new, run["name"], run["conclusion"])

    repo.after_update = ci_repeats
    return repo


def _cli(server: ForgeServer, *args: str, quiet: bool = True) -> subprocess.Popen[str]:
    """Run the train through gh; `quiet` (the default here) leaves CI progress off stderr."""
    flags = ["--quiet"] if quiet else []
    command = [FORGE_CLI, "train", REPO, "--label", LABEL, "--interval", "0.2", "--timeout", "20"]
    return subprocess.Popen(
        [*command, *flags, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **server.env()},
    )


@pytest.mark.slow  # whole trains through real gh, killed and rerun
def test_cli_train_with_a_kill_9_after_a_merge_then_a_rerun_through_gh() -> None:
    with ForgeServer() as server:
        repo = _served(server)
        first = _cli(server)

        def crash(number: int) -> None:
            if number == 4:
                os.kill(first.pid, signal.SIGKILL)  # the merge has landed; nothing after it runs

        repo.after_merge = crash
        out, err = first.communicate(timeout=120)
        assert first.returncode == -signal.SIGKILL, err
        assert _words(out.splitlines()) == FIRST_RUN
        assert repo.prs[4]["merged"]
        assert LABEL in repo.labels[4]

        second = _cli(server, quiet=False)
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, err
        # The CI wait on #5's updated head reports its checks on stderr as it goes, one line per
        # change (stderr is no terminal here); the elapsed time is not compared.
        five = repo.prs[5]["head"]["sha"]
        assert [re.sub(r" \(\d+s\)$", "", line) for line in err.splitlines()] == [
            f"train {REPO}#5@{five[:7]}: ci success"
        ]
        lines = out.splitlines()
        four = repo.prs[4]
        assert lines[:2] == [
            f"TRAIN {REPO} label={LABEL} prs=#4,#5",
            f"MERGED {REPO}#4 head={four['head']['sha']} sha={four['merge_commit_sha']} "
            "merge=skipped(merged) branch=deleted",
        ]
        assert _words(lines[2:]) == [
            f"UPDATED {REPO}#5",
            f"GREEN {REPO}#5",
            f"MERGED {REPO}#5",
            f"DONE {REPO}",
        ]
        assert lines[-1] == f"DONE {REPO} merged=2 dropped=0"
        effects = server.state.effects
        assert (effects["merge_pr"], effects["update_branch"], effects["remove_label"]) == (3, 2, 5)
        assert effects["create_issue_comment"] == 2
        assert all(repo.labels[n] == ["keep"] for n in range(1, 6))
        assert sorted(b for b in repo.branches if b.startswith("topic")) == ["topic2", "topic3"]
        (comment,) = repo.comments[3]
        assert re.fullmatch(
            rf"<!-- forge-cli train: {LABEL} [0-9a-f]{{40}} -->\n"
            rf"forge-cli train took this PR out of the `{LABEL}` train at [0-9a-f]{{40}}:\n\n"
            rf"> CI is red: ci=failure\n\nFix that, then add the `{LABEL}` label again to queue it\.",
            comment["body"],
        )


def test_cli_train_with_a_clone_fetches_the_base_and_drops_a_git_conflict(tmp_path: Path) -> None:
    # The forge calls the PR clean; only git in the clone sees the conflict, and only once the
    # train fetched the base tip that moved after the clone was made.
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    commit(origin, "shared.txt", "one\ntwo\n", "root")
    git(origin, "checkout", "-q", "-b", "topic")
    head = commit(origin, "shared.txt", "one\nTWO\n", "change two")
    git(origin, "update-ref", "refs/pull/1/head", head)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(origin, "checkout", "-q", "main")
    tip = commit(origin, "shared.txt", "one\n2\n", "change two on main")
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.mirror_git(str(origin))
        repo.set_rulesets("main", ["ci"])
        repo.add_pr(1, head_ref="topic", head_sha=head, title="Change two")
        repo.add_run(head, "ci", "success")
        repo.labels[1] = [LABEL]
        done = _cli(server, "--clone", str(clone))
        out, err = done.communicate(timeout=120)
        assert (done.returncode, err) == (0, "")
        assert out.splitlines() == [
            f"TRAIN {REPO} label={LABEL} prs=#1",
            f"DROPPED {REPO}#1: the head conflicts with the base tip {tip} (git merge-tree)",
            f"DONE {REPO} merged=0 dropped=1",
        ]
        assert server.state.effects["merge_pr"] == 0


def test_cli_train_json_is_one_object_at_the_end_with_the_steps_on_stderr() -> None:
    with ForgeServer() as server:
        repo = _served(server)
        done = _cli(server, "--json", quiet=False)
        out, err = done.communicate(timeout=120)
        assert done.returncode == 0, err
        result = json.loads(out)
        assert list(result) == [
            "repo",
            "label",
            "dry_run",
            "merged",
            "dropped",
            "stopped",
            "flaky",
            "steps",
        ]
        assert {k: result[k] for k in ("repo", "label", "dry_run", "stopped")} == {
            "repo": REPO,
            "label": LABEL,
            "dry_run": False,
            "stopped": None,
        }
        assert (result["merged"], result["dropped"]) == ([1, 4, 5], [2, 3])
        assert _words(result["steps"]) == [
            *FIRST_RUN,
            f"MERGED {REPO}#4",
            f"UPDATED {REPO}#5",
            f"GREEN {REPO}#5",
            f"MERGED {REPO}#5",
            f"DONE {REPO}",
        ]
        # Stdout holds the object alone; the steps went to stderr as they happened, between
        # the CI waits' progress lines.
        assert out.count("\n") == 1
        steps = [line for line in err.splitlines() if not line.startswith("train ")]
        assert steps == result["steps"]
        assert all(
            re.fullmatch(rf"train {REPO}#[45]@[0-9a-f]{{7}}: ci success \(\d+s\)", line)
            for line in err.splitlines()
            if line.startswith("train ")
        ), err
        assert repo.prs[5]["merged"]


def test_cli_train_json_quiet_dry_run_writes_nothing_and_says_nothing_on_stderr() -> None:
    with ForgeServer() as server:
        _served(server)
        done = _cli(server, "--json", "--dry-run")  # _cli passes --quiet
        out, err = done.communicate(timeout=120)
        assert (done.returncode, err) == (0, "")
        result = json.loads(out)
        assert (result["dry_run"], result["merged"], result["dropped"]) == (True, [], [])
        assert result["steps"][0].endswith("(dry run: nothing is written)")
        assert sum(server.state.effects.values()) == 0


# -- SIGKILL at random requests, inside update-branch's window, and a base moving under the merge --


def _merges_checked(repo: RepoState) -> list[str]:
    """Record every merge that was red, behind the base tip it merged onto, or at a moved head."""
    wrong: list[str] = []
    approved = {n: pr["head"]["sha"] for n, pr in repo.prs.items()}

    def check(number: int) -> None:
        pr = repo.prs[number]
        head, merged = pr["head"]["sha"], pr["merge_commit_sha"]
        base_before = repo.commits[merged][0][0]
        if base_before not in ancestors(repo, head):
            wrong.append(f"#{number} merged behind {base_before}")
        runs = [r for r in repo.check_runs if r["head_sha"] == head and r["name"] == "ci"]
        if not runs or runs[-1]["conclusion"] != "success":
            wrong.append(f"#{number} merged at {head} without green ci")
        current = head
        while current != approved[number]:  # the labelled head with nothing but merges on top
            parents = repo.commits[current][0]
            if len(parents) != 2:
                wrong.append(f"#{number} merged at a moved head {head}")
                break
            current = parents[0]

    repo.after_merge = check
    return wrong


def _converged(server: ForgeServer, repo: RepoState, wrong: list[str], every: list[str]) -> None:
    assert wrong == [], every
    effects = server.state.effects
    assert effects["merge_pr"] == 3, every  # #1, #4, #5, once each
    assert all(repo.prs[n]["merged"] for n in (1, 4, 5)), every
    assert not any(repo.prs[n]["merged"] for n in (2, 3)), every
    assert sorted(n for n, c in repo.comments.items() if c) == [2, 3], every
    assert effects["create_issue_comment"] == 2, every
    assert "> the forge reports a conflict" in repo.comments[2][0]["body"]
    assert "> CI is red: ci=failure" in repo.comments[3][0]["body"]
    assert all(repo.labels[n] == ["keep"] for n in range(1, 6)), every
    assert not any(
        line.startswith(("DROPPED acme/widgets#1", "DROPPED acme/widgets#4")) for line in every
    )
    assert not any(line.startswith("DROPPED acme/widgets#5") for line in every)


def _rerun_until_done(server: ForgeServer, every: list[str]) -> None:
    for _ in range(3):
        run = _cli(server)
        out, err = run.communicate(timeout=300)
        every.extend(out.splitlines())
        if run.returncode == 0:
            assert err == ""
            assert every[-1].startswith(f"DONE {REPO} "), every
            return
    pytest.fail(f"the train never finished: {every}")


@pytest.mark.slow  # whole trains through real gh, killed and rerun
def test_cli_train_killed_inside_update_branchs_window_then_rerun_through_gh() -> None:
    with ForgeServer() as server:
        repo = _served(server)
        wrong = _merges_checked(repo)
        repo.update_lands_after = 12  # the head lands well into the rerun's turn
        first = _cli(server)

        def kill(number: int) -> None:
            if number == 4:
                os.kill(first.pid, signal.SIGKILL)  # GitHub answered 202; the head lands later

        repo.update_accepted = kill
        out, err = first.communicate(timeout=300)
        assert first.returncode == -signal.SIGKILL, err
        every = out.splitlines()
        assert _words(every)[-1] == f"DROPPED {REPO}#3"
        old = repo.prs[4]["head"]["sha"]
        assert 4 in repo.pending_updates
        assert not repo.prs[4]["merged"]
        repo.update_accepted = None
        _rerun_until_done(server, every)
        _converged(server, repo, wrong, every)
        new = repo.prs[4]["head"]["sha"]
        assert f"UPDATED {REPO}#4 {old} -> {new}" in every
        assert repo.commits[new][0][0] == old  # the base merged into the old head


class _KillAt:
    """An `on_request` hook that kills the train as the forge gets its `target`-th request."""

    def __init__(self, target: int) -> None:
        self.target, self.seen = target, 0
        self.run: subprocess.Popen[str] | None = None

    def __call__(self, _method: str, _path: str) -> None:
        self.seen += 1
        if self.seen == self.target and self.run is not None:
            os.kill(self.run.pid, signal.SIGKILL)


@pytest.mark.slow  # whole trains through real gh, killed and rerun
@pytest.mark.parametrize("seed", [1, 2])
def test_cli_train_killed_at_random_requests_then_rerun_through_gh(seed: int) -> None:
    chooser = random.Random(seed)
    with ForgeServer() as server:
        repo = _served(server)
        wrong = _merges_checked(repo)
        repo.update_lands_after = chooser.choice([1, 4, 9])
        every: list[str] = []
        for _ in range(3):
            killer = _KillAt(chooser.randint(1, 70))
            server.state.on_request = killer
            killer.run = _cli(server)
            out, _err = killer.run.communicate(timeout=300)
            every.extend(out.splitlines())
        server.state.on_request = None
        _rerun_until_done(server, every)
        _converged(server, repo, wrong, every)


@pytest.mark.slow  # whole trains through real gh, killed and rerun
def test_cli_train_updates_again_when_the_base_moves_between_premerge_and_merge() -> None:
    with ForgeServer() as server:
        repo = _served(server)
        for number in (2, 3, 4, 5):
            repo.labels[number] = ["keep"]
        wrong = _merges_checked(repo)
        moved: list[str] = []

        def move_the_base(number: int) -> None:
            if not moved:
                moved.append(repo.add_commit("elsewhere", parents=[repo.branches["main"]]))
                repo.branches["main"] = moved[0]

        repo.before_merge = move_the_base
        run = _cli(server)
        out, err = run.communicate(timeout=300)
        assert (run.returncode, err) == (0, "")
        lines = out.splitlines()
        assert _words(lines) == AGAIN_THEN_MERGED, lines
        assert "Base branch was modified" in lines[1]
        assert (repo.prs[1]["merged"], repo.comments.get(1, []), wrong) == (True, [], [])
        assert server.state.effects["merge_pr"] == 1
