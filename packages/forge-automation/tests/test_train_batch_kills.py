"""forge-cli train --batch killed at random moments, then rerun until DONE, converges.

The local forge's repository is a real bare git repository with a simulated CI
(`fakeforge.gitrepo`): 6 labelled PRs, #2 and #5 broken (red beside today's base), `ci` flaking
once. The train runs with `speculate=1` and `max_cars=2`: while a car is in CI the next one rides
on it, and a red car's halves are in CI at once, so kills land among cars stacked on cars. Every
gh and git call the train makes counts; the train dies (`_Crash`, which nothing may catch) right
after a call chosen at random (seeded; an unkilled run makes about 500), is run again, and dies
again at another until three kills are spent; the last run goes to DONE. Whatever the moments,
the end is the same: the four innocent PRs merged once each, the base moved only by
fast-forwards to car commits (`land="push"`) whose tree CI had seen green as each one landed, so
after every landing the base's tree is one CI saw green, no tree CI saw green tested twice, the
two broken PRs dropped with one comment naming the failing check's first failure line, no other
PR commented on, every label and car branch gone.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from fakeforge import ForgeServer
from fakeforge.gitrepo import train_world
from forge_automation import (
    ExecOptions,
    ExecResult,
    exec_git,
    forge_port,
    gh_cli_wire,
    run_train,
)
from forge_train_support import job_log_failure

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
LABEL = "merge-train"
BROKEN = (2, 5)
INNOCENT = (1, 3, 4, 6)


class _Crash(BaseException):
    """The process dies here."""


class _Calls:
    """Counts gh and git calls; raises `_Crash` right after the `crash_after`-th one."""

    def __init__(self) -> None:
        self.calls = 0
        self.crash_after: int | None = None

    def done(self) -> None:
        self.calls += 1
        if self.calls == self.crash_after:
            raise _Crash


@pytest.mark.slow  # whole trains through the real gh, killed and rerun
@pytest.mark.parametrize("seed", [27])
def test_batch_train_killed_at_random_moments_and_rerun_converges(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=6, broken=BROKEN, duration=0.1, flaky="ci")
        ci, bare = repo.ci, repo.git
        assert ci is not None
        assert bare is not None
        unproven: list[int] = []

        def merged(number: int) -> None:
            # The merge is made only for a PR some car holding it was seen green with.
            if not any(f"change-{number}.txt" in bare.paths(t) for t in ci.green_trees):
                unproven.append(number)

        repo.after_merge = merged
        ungreen: list[str] = []

        def landed(branch: str, sha: str) -> None:
            # After every landing the base's tree is one CI saw green (`--land push`).
            if branch == "main" and bare.tree(sha) not in ci.green_trees:
                ungreen.append(sha)

        repo.after_ref_update = landed
        calls = _Calls()
        gh = server.exec()

        def counted_gh(args: Sequence[str], options: ExecOptions) -> ExecResult:
            done = gh(args, options)
            calls.done()
            return done

        def counted_git(args: Sequence[str], options: ExecOptions) -> ExecResult:
            done = exec_git(args, options)
            calls.done()
            return done

        kills, runs = 0, 0
        lines: list[str] = []
        every: list[str] = []  # the lines of all runs

        def emit(line: str) -> None:
            lines.append(line)
            every.append(line)

        while runs < 12:
            runs += 1
            calls.calls = 0
            calls.crash_after = rng.randint(1, 300) if kills < 3 else None
            lines = []
            every.append(f"RUN {runs} crash_after={calls.crash_after}")
            try:
                result = run_train(
                    forge_port(gh_cli_wire(counted_gh)),
                    REPO,
                    LABEL,
                    emit=emit,
                    clone=clone,
                    git=counted_git,
                    batch=4,
                    retry_flaky=1,
                    land="push",
                    speculate=1,
                    max_cars=2,
                    interval=0.05,
                    timeout=60,
                    grace=30,
                    delays=(),
                    explain=lambda _repo, sha, check: job_log_failure(server, sha, check),
                )
            except _Crash:
                kills += 1
                continue
            if result.stopped is None:
                break
        # The last run's DONE counts only what it finished itself.
        assert [line.split()[:2] for line in lines[-1:]] == [["DONE", REPO]], lines
        assert kills == 3, (kills, runs)
        assert unproven == []
        assert ungreen == []
        assert repo.ref_updates, lines  # the base moved only by fast-forwards to tested cars
        pushed = {sha for _branch, sha in repo.ref_updates}
        assert all(repo.prs[n]["merge_commit_sha"] in pushed for n in INNOCENT)
        assert all(repo.prs[n]["merged"] for n in INNOCENT), lines
        assert not any(repo.prs[n]["merged"] for n in BROKEN)
        assert server.state.effects["merge_pr"] == 0  # nothing merged one PR at a time
        # No car landed twice: each ref update moved the base to a new commit.
        assert len(pushed) == len(repo.ref_updates) == server.state.effects["update_ref"]
        assert bare.tree(bare.heads()["main"]) in ci.green_trees
        # Cars rode on cars (`speculate`, and a bisection's halves at once), and no tree CI saw
        # green was tested twice, killed or not.
        assert any(line.startswith("SPECULATE ") for line in every), every
        # Every car holds its PRs in queue order (PRs put back by a bisection keep theirs).
        for line in every:
            if line.startswith(("CAR ", "SPECULATE ")):
                numbers = [int(n) for n in line.split("prs=#")[1].split()[0].split(",#")]
                assert numbers == sorted(numbers), line
        tested = Counter(bare.tree(sha) for sha in ci.started)
        assert all(tested[tree] == 1 for tree in ci.green_trees), every
        for number in BROKEN:
            (comment,) = repo.comments[number]
            assert f"ImportError: uses-api-v1-{number} needs api v1" in comment["body"]
        assert all(not repo.comments.get(n) for n in INNOCENT)
        assert all(repo.labels[n] == [] for n in (*INNOCENT, *BROKEN))
        assert not any(b.startswith("train/") for b in bare.heads()), lines
