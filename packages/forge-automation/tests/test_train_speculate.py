"""forge-cli train --batch with cars riding on cars: `speculate` K further cars built on the car in
CI and tested at the same time, a red car's halves tested at once, and `max_cars` capping the cars
in CI. Through the real gh against the local forge, whose repository is a real bare git
repository with a simulated CI (`fakeforge.gitrepo`: each car's `ci` concludes a moment after
the push; a tree holding `api-v2` and a broken PR's `uses-api-v1-<n>` fails with a pytest line).

What each test proves does not depend on how fast CI or the train is: a speculative car is
pushed before the car below it lands (the train's own line order), CI runs are counted per tree,
and the car branches in CI at once are counted whenever the train says it pushed one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from fakeforge import ForgeServer, RepoState
from fakeforge.gitrepo import GitBacking, SimulatedCi, train_world
from forge_automation import ExecOptions, ExecResult, exec_git
from forge_train_support import job_log_failure, ride_batch

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"


def _world(repo: RepoState, where: Path, prs: int, broken: tuple[int, ...] = ()) -> str:
    return train_world(repo, str(where), prs=prs, broken=broken, duration=0.1)


def _parts(repo: RepoState) -> tuple[GitBacking, SimulatedCi]:
    assert repo.git is not None
    assert repo.ci is not None
    return repo.git, repo.ci


class _Lines(list[str]):
    """The train's lines; each time it says it pushed a car, the car branches on the forge are
    counted (`in_ci`)."""

    def __init__(self, git: GitBacking) -> None:
        super().__init__()
        self.git, self.in_ci = git, list[int]()

    def append(self, line: str) -> None:
        super().append(line)
        if line.startswith(("CAR ", "SPECULATE ")):
            self.in_ci.append(sum(name.startswith("train/") for name in self.git.heads()))


def _watch(repo: RepoState) -> tuple[_Lines, list[str]]:
    """Return the lines to ride with and the base trees CI had not seen green as they landed."""
    git, ci = _parts(repo)
    ungreen: list[str] = []

    def landed(branch: str, sha: str) -> None:
        if branch == "main" and git.tree(sha) not in ci.green_trees:
            ungreen.append(sha)

    repo.after_ref_update = landed
    return _Lines(git), ungreen


def _car(lines: list[str], word: str, prs: str) -> list[str]:
    """The first line `<word> train/... <sha> prs=<prs> ...`, split."""
    return next(
        words for words in map(str.split, lines) if words[0] == word and f"prs={prs}" in words
    )


@pytest.mark.parametrize(("max_cars", "most"), [(None, 3), (2, 2)])
def test_speculative_cars_ride_on_the_car_in_ci_and_land_without_another_run(
    tmp_path: Path, max_cars: int | None, most: int
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = _world(repo, tmp_path, prs=3)
        git, ci = _parts(repo)
        lines, ungreen = _watch(repo)
        result = ride_batch(
            server.exec(),
            clone,
            lines,
            batch=1,
            land="push",
            speculate=2,
            max_cars=max_cars,
            grace=30,
        )
        text = "\n".join(lines)
        assert (result.merged, result.dropped, result.stopped) == ([1, 2, 3], [], None), text
        cap = "" if max_cars is None else " max-cars=2"
        assert lines[0].endswith(f"batch=1 speculate=2{cap}")
        # #2 rode on the car of #1 (its commit is the parent), pushed before that car landed.
        first = _car(lines, "CAR", "#1")
        second = _car(lines, "SPECULATE", "#2")
        assert second[-1] == f"on={first[1]}", text
        assert git.git("rev-parse", f"{second[2]}^")[1] == first[2]
        assert text.index(" ".join(second)) < text.index(f"LANDED {first[1]}")
        # It landed as tested, without another run: one CI run per car, three cars.
        assert _car(lines, "CAR-FOUND", "#2")[1:3] == second[1:3], text
        assert ci.runs == 3, text
        assert git.heads()["main"] == _car(lines, "CAR-FOUND", "#3")[2]
        assert ungreen == [], text
        assert max(lines.in_ci) == most, (lines.in_ci, text)
        assert server.state.effects["update_ref"] == 3
        assert not any(name.startswith("train/") for name in git.heads()), text


def test_a_red_car_discards_the_car_riding_on_it_whose_prs_ride_again(tmp_path: Path) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = _world(repo, tmp_path, prs=4, broken=(1,))
        git, ci = _parts(repo)
        lines, ungreen = _watch(repo)
        judged: Counter[int] = Counter()  # each judging fetches the PR's head into the clone

        def counted_git(args: Sequence[str], options: ExecOptions) -> ExecResult:
            judged.update(int(a.split("/")[2]) for a in args if a.startswith("refs/pull/"))
            return exec_git(args, options)

        result = ride_batch(
            server.exec(),
            clone,
            lines,
            git=counted_git,
            speculate=1,
            retry_flaky=1,
            grace=30,
            explain=lambda _repo, sha, check: job_log_failure(server, sha, check),
        )
        text = "\n".join(lines)
        assert (result.merged, result.dropped, result.stopped) == ([2, 3, 4], [1], None), text
        red = _car(lines, "CAR", "#1,#2")
        above = _car(lines, "SPECULATE", "#3,#4")
        assert above[-1] == f"on={red[1]}"
        # The car above failed the same way, so the red is no flake: no rerun, and the car
        # above is discarded (deleted, never landed).
        assert f"KNOWN {red[1]} ci: " in text, text
        assert (ci.reruns, server.state.effects["rerun_job"]) == (0, 0), text
        assert f"DISCARD {above[1]} prs=#3,#4: it rides on {red[1]}, which is red" in text
        assert git.git("merge-base", "--is-ancestor", above[2], "main", ok=(0, 1))[0] == 1
        # #1 is the culprit: #2 goes back to the queue, ahead of #3,#4, and the cars are
        # rebuilt in queue order on the base; each PR went back keeping its judgment, so each
        # was judged once.
        assert _car(lines, "SPECULATE", "#4")[-1] == f"on={_car(lines, 'CAR', '#2,#3')[1]}"
        assert judged == Counter({1: 1, 2: 1, 3: 1, 4: 1}), text
        assert "ImportError: uses-api-v1-1 needs api v1" in repo.comments[1][0]["body"]
        # land=merge: each PR merged through the forge; the base's tree is the last car's.
        assert server.state.effects["merge_pr"] == 3
        assert git.tree(git.heads()["main"]) in ci.green_trees
        assert ungreen == []
        assert not any(name.startswith("train/") for name in git.heads()), text


def test_a_red_cars_halves_are_in_ci_at_once_and_the_culprit_dropped(tmp_path: Path) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = _world(repo, tmp_path, prs=4, broken=(4,))
        git, ci = _parts(repo)
        lines, ungreen = _watch(repo)
        result = ride_batch(
            server.exec(),
            clone,
            lines,
            batch=4,
            land="push",
            max_cars=2,
            retry_flaky=1,
            grace=30,
            explain=lambda _repo, sha, check: job_log_failure(server, sha, check),
        )
        text = "\n".join(lines)
        assert (result.merged, result.dropped, result.stopped) == ([1, 2, 3], [4], None), text
        # #1,#2 on the base and #3 on #1,#2 in CI at once (the second half #3,#4 on #1,#2 is the
        # red car's tree itself: its first half is what a green #1,#2 tests next).
        left = _car(lines, "CAR", "#1,#2")
        ahead = _car(lines, "SPECULATE", "#3")
        assert ahead[-1] == f"on={left[1]}"
        assert text.index(" ".join(ahead)) < text.index(f"LANDED {left[1]}")
        assert _car(lines, "CAR-FOUND", "#3")[1:3] == ahead[1:3]
        assert f"RED #4: the tree of {_car(lines, 'CAR', '#1,#2,#3,#4')[1]}, seen red" in text
        assert (ci.runs, ci.reruns) == (3, 1), text  # the rerun shows the red is no flake
        assert max(lines.in_ci) == 2
        assert "ImportError: uses-api-v1-4 needs api v1" in repo.comments[4][0]["body"]
        assert ungreen == []
        assert not any(name.startswith("train/") for name in git.heads()), text
