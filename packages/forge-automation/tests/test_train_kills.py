"""The train killed after every forge call, or with a read failing at every call, converges.

The forge here is fake_forge() behind a wire that plays update-branch as GitHub does (the call
answers at once, the new head lands a few calls later; another call for the same head while the
job runs starts no second one), lets CI repeat the old head's runs on an updated head, and dies
(`_Crash`, which nothing may catch) right after its k-th call. After each such death the train
is run again until it says DONE. Whatever k is, the end is the same: the three PRs not at fault
merged once each, green and up to date, at a head the label approved or its base merges; the
conflicting and the red PR dropped with one comment naming their fault; no other PR commented
on; every label gone.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, cast

import pytest

from fakeforge import sha_of
from forge_automation import (
    FakeForge,
    ForgeCliError,
    ForgeWire,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    forge_port,
    run_train,
)
from forge_train_support import AGAIN_THEN_MERGED
from forge_train_support import fake_train as _forge
from forge_train_support import words as _words

REPO = "acme/widgets"
LABEL = "merge-train"
AT_FAULT = {2: "the forge reports a conflict (mergeable_state dirty)", 3: "CI is red: ci=failure"}
INNOCENT = (1, 4, 5)
# Reads the fault sweep fails; writes are never failed (a write that fails after it landed is the
# kill's business).
READS = ("get_", "list_", "compare_")


class _Crash(BaseException):
    """The process dies here."""


class _Wire:
    """fake_forge()'s wire with GitHub's asynchronous update-branch, CI, a kill and faults."""

    def __init__(self, forge: FakeForge, *, lands_after: int = 2) -> None:
        self.forge = forge
        self.lands_after = lands_after
        self.calls = 0
        self.crash_after: int | None = None
        self.fail_at: int | None = None
        self.pending: dict[int, list[Any]] = {}
        self.merged_wrongly: list[str] = []
        self.on_merge: Any = None

    def _tick(self, name: str) -> None:
        self.calls += 1
        for number, job in list(self.pending.items()):
            job[0] -= 1
            if job[0] <= 0:
                self._land(number)
        if self.calls == self.fail_at and name.startswith(READS):
            raise ForgeCliError(f"gh api failed with HTTP 502 ({name})", status=502, kind="server")

    def _done(self) -> None:
        if self.calls == self.crash_after:
            raise _Crash

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.forge.wire, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self._tick(name)
            try:
                return attr(*args, **kwargs)
            finally:
                self._done()

        return call

    def _land(self, number: int) -> None:
        _left, old = self.pending.pop(number)
        pr = self.forge.pr(REPO, number)
        if pr.head_sha != old or pr.state != "open":
            return
        self.forge.wire.update_branch(REPO, number, expected_head_sha=old)
        new = self.forge.pr(REPO, number).head_sha
        runs = self.forge.wire.list_check_runs(REPO, old, 1, latest=False).items
        self.forge.set_runs(new, [replace(r, head_sha=new, id=r.id + 100) for r in runs])

    def update_branch(self, repo: str, number: int, *, expected_head_sha: str) -> None:
        self._tick("update_branch")
        try:
            self._update(repo, number, expected_head_sha)
        finally:
            self._done()

    def _update(self, repo: str, number: int, expected_head_sha: str) -> None:
        job = self.pending.get(number)
        pr = self.forge.pr(repo, number)
        if job is None or job[1] != expected_head_sha or pr.head_sha != expected_head_sha:
            if pr.head_sha != expected_head_sha:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: expected head sha didn't match current head ref.",
                    status=422,
                    kind="http",
                )
            if pr.mergeable_state == "dirty":
                raise ForgeCliError(
                    "gh api failed with HTTP 422: merge conflict between base and head",
                    status=422,
                    kind="http",
                )
            self.pending[number] = [self.lands_after, expected_head_sha]
            if self.lands_after <= 0:
                self._land(number)

    def merge_pr(self, repo: str, number: int, **kwargs: Any) -> str:
        self._tick("merge_pr")
        if self.on_merge is not None:
            self.on_merge(number)
        pr = self.forge.pr(repo, number)
        if pr.head_sha == kwargs["sha"]:
            self._check_merge(pr)
        try:
            return self.forge.wire.merge_pr(repo, number, **kwargs)
        finally:
            self._done()

    def _check_merge(self, pr: PullRequest) -> None:
        runs = self.forge.wire.list_check_runs(REPO, pr.head_sha, 1, latest=True).items
        if [r.conclusion for r in runs if r.name == "ci"] != ["success"]:
            self.merged_wrongly.append(f"#{pr.number} merged red")
        base = self.forge.branch_sha(REPO, "main")
        if self.forge.wire.compare_ancestry(REPO, "main", pr.head_sha).behind_by:  # type: ignore[union-attr]
            self.merged_wrongly.append(f"#{pr.number} merged behind {base}")
        # At a head the label approved: the PR's own head with nothing but merges on top.
        current, approved = pr.head_sha, sha_of(f"h{pr.number}")
        while current != approved:
            parents = self.forge.commits[current].parents
            if len(parents) != 2:
                self.merged_wrongly.append(f"#{pr.number} merged at a moved head {pr.head_sha}")
                break
            current = parents[0]


def _train(wire: _Wire) -> list[str] | None:
    """One run; its lines, or None when it died."""
    lines: list[str] = []
    try:
        run_train(
            forge_port(cast(ForgeWire, wire)),
            REPO,
            LABEL,
            emit=lines.append,
            sleep=lambda _s: None,
            delays=(),
            interval=1.0,
            timeout=60.0,
        )
    except _Crash:
        return None
    return lines


def _until_done(wire: _Wire, *, runs: int = 4) -> list[list[str]]:
    """Run the train again until a run says DONE; return every finished run's lines."""
    seen: list[list[str]] = []
    for _ in range(runs):
        lines = _train(wire)
        if lines is None:
            continue
        seen.append(lines)
        if lines[-1].startswith("DONE "):
            return seen
    pytest.fail(f"no run said DONE: {seen}")


def _assert_converged(forge: FakeForge, wire: _Wire, runs: list[list[str]]) -> None:
    every = [line for lines in runs for line in lines]
    assert wire.merged_wrongly == [], every
    for number in INNOCENT:
        assert forge.pr(REPO, number).merged, (number, every)
        assert forge.comments(REPO, number) == [], (number, every)
        assert not any(line.startswith(f"DROPPED {REPO}#{number}:") for line in every), every
    for number, fault in AT_FAULT.items():
        pr = forge.pr(REPO, number)
        assert (pr.state, pr.merged) == ("open", False)
        (comment,) = forge.comments(REPO, number)
        assert f"> {fault}" in comment.body
    assert forge.effects["merge_pr"] == len(INNOCENT)  # nothing merged twice
    assert forge.effects["create_issue_comment"] == len(AT_FAULT)
    for number in range(1, 6):
        assert forge.labels(REPO, number) == ["keep"], (number, every)
    # Squash merges in the train's order: #1 first; #4 and #5 went through update-branch.
    assert forge.pr(REPO, 1).merge_sha is not None


def _calls_of_a_clean_run() -> int:
    forge = _forge()
    wire = _Wire(forge)
    (lines,) = _until_done(wire, runs=1)
    _assert_converged(forge, wire, [lines])
    assert not any(line.startswith(("AGAIN", "STOPPED")) for line in lines), lines
    return wire.calls


CLEAN_CALLS = _calls_of_a_clean_run()


# How many calls after update-branch's answer its new head lands: at once, early in a rerun, or
# late enough that a rerun's turn has started at the old head (premerge, the update, CI wait).
@pytest.mark.parametrize("lands_after", [0, 2, 6, 11])
@pytest.mark.parametrize("k", range(1, CLEAN_CALLS + 1))
def test_killed_after_any_call_then_rerun_converges(k: int, lands_after: int) -> None:
    forge = _forge()
    wire = _Wire(forge, lands_after=lands_after)
    wire.crash_after = k
    died = _train(wire) is None
    assert died or wire.calls < k  # it died after call k, or finished in fewer calls
    wire.crash_after = None
    _assert_converged(forge, wire, _until_done(wire))


@pytest.mark.parametrize("seed", range(12))
def test_killed_twice_at_random_calls_then_rerun_converges(seed: int) -> None:
    chooser = random.Random(seed)
    forge = _forge()
    wire = _Wire(forge, lands_after=chooser.randint(1, 6))
    for _ in range(2):
        wire.crash_after = wire.calls + chooser.randint(1, CLEAN_CALLS)
        _train(wire)
    wire.crash_after = None
    _assert_converged(forge, wire, _until_done(wire))


@pytest.mark.parametrize("k", range(1, CLEAN_CALLS + 1))
def test_a_read_failing_at_any_call_stops_or_passes_and_never_drops(k: int) -> None:
    forge = _forge()
    wire = _Wire(forge)
    wire.fail_at = k
    first = _train(wire)
    assert first is not None
    if first[-1].startswith("STOPPED "):
        assert first[-1].endswith(
            f"the PR keeps its label; rerun `forge-cli train {REPO} --label {LABEL}` to continue"
        ), first
        where = first[-1].split(":")[0].split()[1]
        if "#" in where:
            assert LABEL in forge.labels(REPO, int(where.split("#")[1])), first
    _assert_converged(forge, wire, [first, *_until_done(wire)])


def test_a_rerun_inside_update_branchs_window_carries_on_at_the_new_head() -> None:
    forge = _forge()
    for number in (1, 2, 3, 5):
        forge.set_labels(REPO, number, [])
    wire = _Wire(forge, lands_after=1000)  # the job runs until the test lets it land
    old = forge.pr(REPO, 4).head_sha
    wire.crash_after = None

    real_update = wire.update_branch

    def update_then_die(repo: str, number: int, *, expected_head_sha: str) -> None:
        real_update(repo, number, expected_head_sha=expected_head_sha)
        raise _Crash

    wire.update_branch = update_then_die  # type: ignore[method-assign]
    assert _train(wire) is None
    assert forge.pr(REPO, 4).head_sha == old
    assert 4 in wire.pending

    def update_again(repo: str, number: int, *, expected_head_sha: str) -> None:
        real_update(repo, number, expected_head_sha=expected_head_sha)
        wire.pending[4][0] = 2  # the first job lands while the rerun waits for its new head

    # The rerun finds the old head still behind, asks again (the forge answers without a
    # second job) and waits.
    wire.update_branch = update_again  # type: ignore[method-assign]
    (lines,) = _until_done(wire, runs=1)
    new = forge.pr(REPO, 4).head_sha
    assert lines[1:] == [
        f"UPDATED {REPO}#4 {old} -> {new}",
        f"GREEN {REPO}#4 {new} ci=success",
        f"MERGED {REPO}#4 head={new} sha={forge.pr(REPO, 4).merge_sha} merge=done branch=deleted",
        f"DONE {REPO} merged=1 dropped=0",
    ]
    assert forge.effects["update_branch"] == 1


def test_a_base_that_moves_between_premerge_and_merge_updates_again() -> None:
    forge = _forge()
    for number in (2, 3, 4, 5):
        forge.set_labels(REPO, number, [])
    wire = _Wire(forge, lands_after=0)
    moved = [0]

    def move_the_base(number: int) -> None:
        if moved[0] < 1:
            moved[0] += 1
            tip = forge.branch_sha(REPO, "main")
            assert tip is not None
            forge.set_branch(REPO, "main", forge.add_commit(sha_of("other"), parents=[tip]))
            raise ForgeCliError(
                "gh api failed with HTTP 405: Base branch was modified. Review and try the "
                "merge again.",
                status=405,
                kind="http",
            )

    wire.on_merge = move_the_base
    (lines,) = _until_done(wire, runs=1)
    assert _words(lines) == AGAIN_THEN_MERGED, lines
    assert (forge.pr(REPO, 1).merged, forge.comments(REPO, 1), wire.merged_wrongly) == (
        True,
        [],
        [],
    )


def test_a_base_that_keeps_moving_stops_the_train_with_the_label_kept() -> None:
    forge = _forge()
    for number in (2, 3, 4, 5):
        forge.set_labels(REPO, number, [])
    wire = _Wire(forge, lands_after=0)
    count = [0]

    def move_the_base(number: int) -> None:
        count[0] += 1
        tip = forge.branch_sha(REPO, "main")
        assert tip is not None
        forge.set_branch(REPO, "main", forge.add_commit(sha_of(f"o{count[0]}"), parents=[tip]))
        raise ForgeCliError(
            "gh api failed with HTTP 405: Base branch was modified. Review and try the merge "
            "again.",
            status=405,
            kind="http",
        )

    wire.on_merge = move_the_base
    lines = _train(wire)
    assert lines is not None
    assert lines[-1].startswith(f"STOPPED {REPO}#1: judged 4 times"), lines
    assert (forge.labels(REPO, 1), forge.comments(REPO, 1)) == ([LABEL, "keep"], [])
    assert forge.effects["merge_pr"] == 0


def test_a_base_that_requires_no_check_stops_the_train_and_drops_nobody() -> None:
    forge = _forge()
    forge.set_rulesets(REPO, "main", RequiredChecks(contexts=(), strict=True))
    lines = _train(_Wire(forge))
    assert lines is not None
    assert lines[1:] == [
        f"STOPPED {REPO}#1: no-required-checks: main requires no check; the PR keeps its label; "
        f"rerun `forge-cli train {REPO} --label {LABEL}` to continue"
    ]
    assert all(LABEL in forge.labels(REPO, n) for n in range(1, 6))
    assert forge.effects["create_issue_comment"] == 0


def test_a_base_merge_landing_between_premerge_and_merge_is_the_prs_own() -> None:
    # Someone clicks "Update branch" while #5 waits for its merge: the merge's sha precondition
    # fails (409), the new head walks back to the approved one, and the train merges it.
    forge = _forge()
    for number in (1, 2, 3, 4):
        forge.set_labels(REPO, number, [])
    wire = _Wire(forge, lands_after=0)
    old = forge.pr(REPO, 5).head_sha
    tip = forge.branch_sha(REPO, "main")
    assert tip is not None
    forge.set_branch(REPO, "main", forge.add_commit(sha_of("elsewhere"), parents=[tip]))
    # Not strict: #5 is behind the moved base yet mergeable, so the train goes straight to merge.
    ci = (RequiredContext(context="ci"),)
    forge.set_rulesets(REPO, "main", RequiredChecks(contexts=ci, strict=False))
    clicked: list[str] = []

    def click_update(number: int) -> None:
        if not clicked:
            wire.forge.wire.update_branch(REPO, number, expected_head_sha=old)
            clicked.append(forge.pr(REPO, number).head_sha)
            forge.set_runs(clicked[0], [replace(r, head_sha=clicked[0]) for r in _runs(forge, old)])

    wire.on_merge = click_update
    (lines,) = _until_done(wire, runs=1)
    new = clicked[0]
    assert _words(lines) == [
        f"TRAIN {REPO}",
        f"UPDATED {REPO}#5",
        f"MERGED {REPO}#5",
        f"DONE {REPO}",
    ], lines
    assert lines[1] == f"UPDATED {REPO}#5 {old} -> {new}"
    assert forge.pr(REPO, 5).merged
    assert forge.comments(REPO, 5) == []
    assert wire.merged_wrongly == []


def _runs(forge: FakeForge, sha: str) -> Any:
    return forge.wire.list_check_runs(REPO, sha, 1, latest=False).items
