"""forge-cli train --batch: cars of PRs tested together on `train/<base>/<id>`, through the real gh
against the local forge, whose repository is a real bare git repository with a simulated CI
(`fakeforge.gitrepo`): each car's `ci` finishes a moment after the push; a tree holding `api-v2`
(on main since the PRs forked) and a broken PR's `uses-api-v1-<n>` fails, with a pytest line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fakeforge import ForgeServer, RepoState
from fakeforge.gitrepo import train_world
from forge_automation import TrainResult, forge_port, gh_cli_wire, run_train

REPO = "acme/widgets"
LABEL = "merge-train"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def _ride(server: ForgeServer, clone: str, batch: int, **extra: object) -> tuple[TrainResult, list[str]]:
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


def test_cli_a_red_car_is_bisected_the_culprits_dropped_with_the_first_failure_line(
    tmp_path: Path,
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=6, broken=(2, 5), duration=0.1)
        done = _cli(server, clone, "--batch", "4")
        lines = done.stdout.splitlines()
        assert (done.returncode, done.stderr) == (0, ""), lines
        assert lines[-1] == f"DONE {REPO} merged=4 dropped=2", lines
        assert all(repo.prs[n]["merged"] for n in (1, 3, 4, 6))
        assert not any(repo.prs[n]["merged"] for n in (2, 5))
        for number in (2, 5):
            (comment,) = repo.comments[number]
            assert "CI is red on train/main/" in comment["body"]
            assert (
                f"ci=failure: FAILED tests/test_api.py::test_client - ImportError: "
                f"uses-api-v1-{number} needs api v1"
            ) in comment["body"], comment["body"]
            assert repo.labels[number] == []
        assert repo.ci is not None and repo.git is not None
        assert repo.git.tree(repo.git.heads()["main"]) in repo.ci.green_trees
        assert not any(b.startswith("train/") for b in repo.git.heads()), lines
        print("\n".join(lines), repo.ci.runs)
