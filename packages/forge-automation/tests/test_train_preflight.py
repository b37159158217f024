"""forge-cli train --batch's preflight, through the real gh against the local forge: before the
first car, a base whose workflows do not run on a push to `train/**` stops the train naming the
fix (nothing built, labels kept); without --grace each required check's "never reported" grace
comes from its runs on the base's recent commits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fakeforge import ForgeServer
from fakeforge.gitrepo import train_world
from forge_automation import TrainResult
from forge_train_support import LABEL, REPO, ride_batch

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

CI = ".github/workflows/ci.yml"


def _ride(server: ForgeServer, clone: str, **extra: object) -> tuple[TrainResult, list[str]]:
    lines: list[str] = []
    return ride_batch(server.exec(), clone, lines, **extra), lines


@pytest.mark.parametrize(
    ("files", "fix"),
    [
        (
            {CI: "on:\n  push:\n    branches: [main]\n"},
            f"add `train/**` to on.push.branches in {CI}",
        ),
        (
            {CI: "on:\n  push:\n    branches: ['**', '!train/**']\n"},
            f"add `train/**` to on.push.branches in {CI}",
        ),
        (
            {CI: "on: [pull_request]\n"},
            f"add a push trigger with branches [`train/**`] to on: in {CI}",
        ),
        ({CI: "on: [push\n"}, f"add a push trigger with branches [`train/**`] to on: in {CI}"),
        ({}, "add a workflow to .github/workflows/ that runs on pushes to `train/**`"),
    ],
)
def test_a_base_whose_workflows_skip_car_branches_stops_before_the_first_car(
    tmp_path: Path, files: dict[str, str], fix: str
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=2, duration=0.1)
        repo.files = files
        # main's last commit ran `ci` on GitHub Actions: the required check is an Actions job.
        repo.add_run(repo.branches["main"], "ci", "success")
        result, lines = _ride(server, clone)
        assert result.stopped == 1, lines
        assert lines[-1].startswith(f"STOPPED {REPO}#1: no workflow on main runs on a push"), lines
        assert fix in lines[-1]
        assert "the PR keeps its label" in lines[-1]
        if files.get(CI, "").startswith("on: [push\n"):
            assert any(
                f"NOTE {REPO} main: {CI} is not a workflow GitHub can run" in x for x in lines
            )
        assert repo.ci is not None
        assert repo.ci.runs == 0  # no car was built or tested
        assert not any(b.startswith("train/") for b in repo.branches)
        assert server.state.effects["merge_pr"] == 0
        assert all(repo.labels[n] == [LABEL] for n in (1, 2))


@pytest.mark.parametrize("fault", ["not-found", "truncated"])
def test_a_workflow_file_that_cannot_be_read_stops_the_train_naming_it(
    tmp_path: Path, fault: str
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=1, duration=0.1)
        server.state.part_faults["workflow"] = fault
        result, lines = _ride(server, clone)
        assert result.stopped == 1, lines
        assert lines[-1].startswith(f"STOPPED {REPO}#1: cannot read {CI} on main: "), lines
        assert repo.ci is not None
        assert repo.ci.runs == 0
        assert repo.labels[1] == [LABEL]


def test_a_check_from_an_external_ci_is_a_note_and_the_train_goes_on(tmp_path: Path) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=1, duration=0.1)
        repo.files = {}  # no workflow: `ci` comes from a CI outside GitHub Actions
        result, lines = _ride(server, clone, grace=30)
        assert result.stopped is None, lines
        assert result.merged == [1]
        assert any(
            x.startswith(f"NOTE {REPO} main: required check ci comes from no workflow on the base")
            and "make sure it runs on pushes to train/**" in x
            for x in lines
        ), lines
        assert f"GRACE {REPO} main: ci=30s (--grace)" in lines


def test_without_grace_each_check_gets_a_grace_from_its_recent_runs(tmp_path: Path) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=1, duration=0.1, checks=("ci", "e2e"))
        repo.set_rulesets("main", ["ci", "e2e"])
        tip = repo.branches["main"]
        repo.add_run(tip, "ci", "success")
        # e2e waits for ci (`needs:`): it started 300 s after the commit's first check.
        repo.add_run(tip, "e2e", "success")["started_at"] = "2024-01-01T00:05:00Z"
        result, lines = _ride(server, clone, timeout=1800)
        assert result.merged == [1], lines
        (grace,) = [x for x in lines if x.startswith("GRACE ")]
        assert grace.startswith(f"GRACE {REPO} main: ci=120s (started up to 0s after"), grace
        assert "e2e=720s (started up to 300s after the first check on 1 of main's last 4" in grace
