"""forge-cli train --batch: cars of PRs tested together on `train/<base>/<id>`, through the real gh
against the local forge, whose repository is a real bare git repository with a simulated CI
(`fakeforge.gitrepo`): each car's `ci` finishes a moment after the push; a tree holding `api-v2`
(on main since the PRs forked) and a broken PR's `uses-api-v1-<n>` fails, with a pytest line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fakeforge import ForgeServer, RepoState
from fakeforge.gitrepo import train_world
from forge_automation import TrainResult, forge_port, gh_cli_wire, run_train

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
LABEL = "merge-train"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def _ride(
    server: ForgeServer, clone: str, batch: int, **extra: object
) -> tuple[TrainResult, list[str]]:
    lines: list[str] = []
    port = forge_port(gh_cli_wire(server.exec()))
    result = run_train(
        port,
        REPO,
        LABEL,
        emit=lines.append,
        clone=clone,
        batch=batch,
        interval=0.05,
        timeout=60,
        grace=30,
        delays=(),
        **extra,  # type: ignore[arg-type]
    )
    return result, lines


def _tree(repo: RepoState, ref: str) -> str:
    assert repo.git is not None
    return repo.git.tree(repo.branches[ref])


def _words(lines: list[str]) -> list[str]:
    return [" ".join(line.split(":")[0].split()[:2]) for line in lines]


def test_a_green_car_of_three_merges_all_three_and_the_base_holds_the_tested_tree(
    tmp_path: Path,
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=3, duration=0.1)
        result, lines = _ride(server, clone, batch=3)
        assert (result.merged, result.dropped, result.stopped) == ([1, 2, 3], [], None), lines
        assert _words(lines)[0] == f"TRAIN {REPO}"
        assert lines[0] == f"TRAIN {REPO} label={LABEL} prs=#1,#2,#3 batch=3"
        car = next(line for line in lines if line.startswith("CAR "))
        branch = car.split()[1]
        assert branch.startswith("train/main/")
        assert repo.ci is not None
        assert repo.ci.runs == 1
        assert _tree(repo, "main") in repo.ci.green_trees
        assert repo.git is not None
        assert not any(b.startswith("train/") for b in repo.git.heads()), lines  # car deleted

        assert server.state.effects["merge_pr"] == 3
        assert all(repo.labels[n] == [] for n in (1, 2, 3))


def _cli(server: ForgeServer, clone: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [FORGE_CLI, "train", REPO, "--label", LABEL, "--clone", clone, "--quiet"]
    flags = ["--interval", "0.05", "--timeout", "60", "--grace", "30", *args]
    return subprocess.run(
        [*command, *flags],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        timeout=600,
        check=False,
    )


@pytest.mark.slow  # cars through the real gh, each waiting for the simulated CI
def test_cli_a_red_car_is_bisected_the_culprits_dropped_and_the_cars_pushed_to_the_base(
    tmp_path: Path,
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=6, broken=(2, 5), duration=0.1, flaky="ci")
        unproven = _green_landings(repo)
        done = _cli(server, clone, "--batch", "4", "--retry-flaky", "1", "--land", "push")
        lines = done.stdout.splitlines()
        assert (done.returncode, done.stderr) == (0, ""), lines
        # The flake failed a car once and passed on the rerun: reported, never held against a PR.
        assert lines[-1] == f"DONE {REPO} merged=4 dropped=2 flaky=1", "\n".join(lines)
        assert len([line for line in lines if line.startswith("FLAKY train/main/")]) == 1
        # Reruns: the first red of each broken PR's failure and the flake; a red whose failure
        # (check and first failure line) already stayed red on another tree is not rerun.
        assert server.state.effects["rerun_job"] == 3, "\n".join(lines)
        known = [line for line in lines if line.startswith("KNOWN train/main/")]
        assert len(known) == 2, "\n".join(lines)
        assert all("ImportError: uses-api-v1-" in line for line in known)
        assert all(repo.prs[n]["merged"] for n in (1, 3, 4, 6))
        assert not any(repo.prs[n]["merged"] for n in (2, 5))
        # --land push: the base only ever moved to tested car commits (each tree seen green as
        # it landed), the forge marked each PR merged at one of them, nothing merged one by one.
        assert repo.ref_updates, "\n".join(lines)
        assert unproven == [], "\n".join(lines)
        assert server.state.effects["merge_pr"] == 0
        pushed = {sha for _branch, sha in repo.ref_updates}
        assert all(repo.prs[n]["merge_commit_sha"] in pushed for n in (1, 3, 4, 6))
        assert repo.branches["main"] == repo.ref_updates[-1][1]
        for number in (2, 5):
            (comment,) = repo.comments[number]
            assert "CI is red on train/main/" in comment["body"]
            assert (
                f"ci=failure: FAILED tests/test_api.py::test_client - ImportError: "
                f"uses-api-v1-{number} needs api v1"
            ) in comment["body"], comment["body"]
            assert repo.labels[number] == []
        assert repo.ci is not None
        assert repo.git is not None
        assert repo.git.tree(repo.git.heads()["main"]) in repo.ci.green_trees
        assert not any(b.startswith("train/") for b in repo.git.heads()), lines


def test_a_strict_base_stops_before_any_car_naming_the_rule(tmp_path: Path) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=2, duration=0.1)
        repo.set_rulesets("main", ["ci"], strict=True)
        result, lines = _ride(server, clone, batch=2)
        assert result.stopped == 1
        assert "requires branches to be up to date before merging" in lines[-1], lines
        assert "or run without --batch" in lines[-1]
        assert server.state.effects["merge_pr"] == 0
        assert repo.labels[1] == [LABEL]


def test_checks_that_never_report_on_the_car_branch_stop_the_train_naming_the_trigger(
    tmp_path: Path,
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=2, duration=0.1)
        assert repo.ci is not None
        repo.ci.watch = "ci-only-on/"  # the repository's CI does not run on train/**
        lines: list[str] = []
        port = forge_port(gh_cli_wire(server.exec()))
        now = [0.0]

        def sleep(seconds: float) -> None:
            now[0] += seconds

        result = run_train(
            port,
            REPO,
            LABEL,
            emit=lines.append,
            clone=clone,
            batch=2,
            interval=15,
            grace=60,
            sleep=sleep,
            clock=lambda: now[0],
            delays=(),
        )
        assert result.stopped == 1, lines
        assert lines[-1].startswith(f"STOPPED {REPO}#1: the required checks never reported on ")
        assert "on: push: branches: ['train/**']" in lines[-1]
        assert server.state.effects["merge_pr"] == 0
        assert all(repo.labels[n] == [LABEL] for n in (1, 2))
        assert repo.git is not None
        assert not any(b.startswith("train/") for b in repo.git.heads())


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--batch", "3"], "--batch needs --clone DIR"),
        (["--clone", ".", "--land", "push"], "--land push needs --batch N"),
        (["--batch", "3", "--clone", ".", "--land", "rebase"], "invalid choice: 'rebase'"),
        (["--clone", ".", "--speculate", "1"], "--speculate needs --batch N"),
        (["--clone", ".", "--max-cars", "2"], "--max-cars needs --batch N"),
        (["--batch", "3", "--clone", ".", "--speculate", "9"], "--speculate must be a whole"),
        (["--batch", "3", "--clone", ".", "--max-cars", "0"], "--max-cars must be a whole"),
    ],
)
def test_cli_batch_flags_out_of_place_are_usage_errors(flags: list[str], said: str) -> None:
    done = subprocess.run(
        [FORGE_CLI, "train", REPO, "--label", LABEL, *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")  # train's usage exit, as for its other flags
    assert said in done.stderr


@pytest.mark.slow  # whole trains through the real gh, killed and rerun
def test_cli_killed_after_a_cars_first_merge_reruns_without_testing_the_tree_again(
    tmp_path: Path,
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=3, duration=0.1)
        assert repo.ci is not None
        assert repo.git is not None
        command = [FORGE_CLI, "train", REPO, "--label", LABEL, "--clone", clone, "--quiet"]
        flags = ["--interval", "0.05", "--timeout", "60", "--batch", "3"]
        first = subprocess.Popen(
            [*command, *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **server.env()},
        )

        def crash(number: int) -> None:
            if number == 1:
                os.kill(first.pid, signal.SIGKILL)  # #1 merged; #2 and #3 not yet

        repo.after_merge = crash
        out, _err = first.communicate(timeout=300)
        assert first.returncode == -signal.SIGKILL, out
        repo.after_merge = None
        assert (repo.prs[1]["merged"], repo.prs[2]["merged"]) == (True, False)
        assert repo.ci.runs == 1
        # A car branch some earlier run left behind is swept once the queue is done.
        (car,) = [sha for name, sha in repo.git.heads().items() if name.startswith("train/")]
        repo.git.git("update-ref", "refs/heads/train/main/0123456789ab", car)
        done = _cli(server, clone, "--batch", "3")
        lines = done.stdout.splitlines()
        assert done.returncode == 0, (lines, done.stderr)
        # The rest of the car is the same tree on the new tip: found, not tested again.
        assert any(line.startswith("CAR-FOUND train/main/") for line in lines), lines
        assert repo.ci.runs == 1
        assert lines[-1] == f"DONE {REPO} merged=3 dropped=0", lines
        assert server.state.effects["merge_pr"] == 3
        assert repo.git.tree(repo.git.heads()["main"]) in repo.ci.green_trees
        assert not any(b.startswith("train/") for b in repo.git.heads()), lines


def test_a_failed_read_while_judging_the_next_car_stops_before_the_car_merges(
    tmp_path: Path,
) -> None:
    # The next car's PRs are judged while a car is in CI; a read that fails there stops the
    # train at once: the car in CI is deleted untested, nothing merges, every PR keeps its label.
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=4, duration=0.1)
        ci = repo.ci
        assert ci is not None
        tick = ci.tick

        def fault_once_a_car_runs(state: RepoState) -> None:
            tick(state)
            if ci.runs:
                server.state.part_faults["reviews"] = "502"

        ci.tick = fault_once_a_car_runs  # type: ignore[method-assign,assignment]
        result, lines = _ride(server, clone, batch=2)
        assert result.stopped == 3, lines
        assert lines[-1].startswith(f"STOPPED {REPO}#3: "), lines
        assert sum(1 for line in lines if line.startswith("CAR ")) == 1, lines
        assert not any(line.startswith(("GREEN ", "MERGED ", "LANDED ")) for line in lines)
        assert server.state.effects["merge_pr"] == 0
        assert all(repo.labels[n] == [LABEL] for n in (1, 2, 3, 4))
        assert repo.git is not None
        assert not any(b.startswith("train/") for b in repo.git.heads()), lines


def _green_landings(repo: RepoState) -> list[str]:
    """Check, as each ref update lands, that the base's new tree is one CI saw green; return
    the list the unproven landings go to (empty when the invariant held every time)."""
    unproven: list[str] = []
    assert repo.git is not None
    assert repo.ci is not None
    git, ci = repo.git, repo.ci

    def landed(branch: str, sha: str) -> None:
        if branch == "main" and git.tree(sha) not in ci.green_trees:
            unproven.append(sha)

    repo.after_ref_update = landed
    return unproven


def _push_to_pr_1(repo: RepoState) -> str:
    """The author pushes one more commit to #1 (branch `topic1`); return the new head."""
    assert repo.git is not None
    git, old = repo.git, repo.prs[1]["head"]["sha"]
    new = git.git("commit-tree", git.tree(old), "-p", old, "-m", "more")[1]
    repo.commits[new] = ((old,), "more", "2024-01-02T00:00:00Z")
    git.set_branch(repo, "topic1", new)
    git.git("update-ref", "refs/pull/1/head", new)
    repo.prs[1]["head"]["sha"] = new
    repo.pr_commits[1] = [old, new]
    return new


def test_land_push_refused_as_no_fast_forward_stops_with_the_labels_kept(tmp_path: Path) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=2, duration=0.1)
        assert repo.git is not None
        git = repo.git

        def base_moves(method: str, path: str) -> None:
            # Someone pushes to main just before the train's ref update arrives.
            if method == "PATCH" and path.endswith("/git/refs/heads/main"):
                tip = repo.branches["main"]
                other = git.git("commit-tree", git.tree(tip), "-p", tip, "-m", "hotfix")[1]
                git.set_branch(repo, "main", other)
                repo.commits[other] = ((tip,), "hotfix", "2024-01-02T00:00:00Z")

        server.state.on_request = base_moves
        result, lines = _ride(server, clone, batch=2, land="push")
        assert result.stopped is not None, lines
        stop = lines[-1]
        assert stop.startswith("STOPPED "), lines
        assert "no longer the parent" in stop, lines
        assert "refused (422)" in stop
        assert "keeps its label" in stop
        assert repo.ref_updates == []
        assert server.state.effects["merge_pr"] == 0
        assert not any(repo.prs[n]["merged"] for n in (1, 2))
        assert all(repo.labels[n] == [LABEL] for n in (1, 2))


def test_land_push_refused_with_the_base_unmoved_keeps_the_green_car_for_the_rerun(
    tmp_path: Path,
) -> None:
    # The forge refuses the fast-forward while the base has not moved (branch protection the
    # token cannot bypass): the car CI saw green stays, and the rerun lands it untested.
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=2, duration=0.1)
        assert repo.git is not None
        assert repo.ci is not None
        repo.ref_update_refusal = "Protected branch update failed for refs/heads/main."
        result, lines = _ride(server, clone, batch=2, land="push")
        assert result.stopped is not None, lines
        assert "refused (422)" in lines[-1], lines
        assert "the green car is kept" in lines[-1], lines
        cars = [b for b in repo.git.heads() if b.startswith("train/main/")]
        assert len(cars) == 1, lines
        assert repo.ci.runs == 1
        assert all(repo.labels[n] == [LABEL] for n in (1, 2))

        repo.ref_update_refusal = None
        unproven = _green_landings(repo)
        result, lines = _ride(server, clone, batch=2, land="push")
        assert (result.merged, result.stopped) == ([1, 2], None), lines
        assert any(line.startswith(f"CAR-FOUND {cars[0]} ") for line in lines), lines
        assert repo.ci.runs == 1  # the tree that passed is not tested again
        assert unproven == [], lines
        assert not any(b.startswith("train/") for b in repo.git.heads()), lines


def test_land_push_never_lands_a_car_whose_pr_head_moved_after_it_was_built(
    tmp_path: Path,
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=2, duration=0.1)
        unproven = _green_landings(repo)
        assert repo.git is not None
        assert repo.ci is not None
        git, ci = repo.git, repo.ci
        old = repo.prs[1]["head"]["sha"]
        moved: list[str] = []

        def push_to_pr(method: str, path: str) -> None:
            # The author pushes to #1 once its car was seen green, before the train lands it.
            if moved or not ci.green_trees or path != f"/repos/{REPO}/pulls/1":
                return
            new = _push_to_pr_1(repo)
            repo.add_run(new, "ci", "success")
            moved.append(new)

        server.state.on_request = push_to_pr
        _result, lines = _ride(server, clone, batch=2, land="push")
        assert moved, lines
        assert any(line.startswith(f"AGAIN {REPO}#1 {old}: now open at") for line in lines), lines
        assert unproven == [], lines
        assert server.state.effects["merge_pr"] == 0
        # No landed tree holds #1 at the head it had before the push without its new head.
        for _branch, sha in repo.ref_updates:
            held = git.git("merge-base", "--is-ancestor", old, sha, ok=(0, 1))[0] == 0
            assert (
                not held or git.git("merge-base", "--is-ancestor", moved[0], sha, ok=(0, 1))[0] == 0
            )


def test_land_push_names_a_push_to_a_pr_that_came_while_its_car_landed(tmp_path: Path) -> None:
    # The author pushes to #1 after the train checked its head and before the ref update lands
    # (the window bors has too): the tested head lands with the car, the new commit does not,
    # and the forge keeps #1 open. The train stops at once naming that, #1 keeps its label.
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=2, duration=0.1)
        unproven = _green_landings(repo)
        moved: list[str] = []

        def push_as_the_car_lands(method: str, path: str) -> None:
            if moved or method != "PATCH" or not path.endswith("/git/refs/heads/main"):
                return
            moved.append(_push_to_pr_1(repo))

        server.state.on_request = push_as_the_car_lands
        result, lines = _ride(server, clone, batch=2, land="push")
        assert moved, lines
        assert result.stopped == 1, lines
        assert f"#1 was pushed to ({moved[0]}) while its car landed" in lines[-1], lines
        assert unproven == [], lines  # what landed is the tree CI saw green
        assert repo.prs[1]["state"] == "open"
        assert repo.labels[1] == [LABEL]
