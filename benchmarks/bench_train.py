"""`forge-cli train --batch 6 --speculate 1` against `--batch 1` over the same queue, through the
real gh against the local forge (issue 27's "done when").

Each run gets a fresh local forge whose repository is a real bare git repository with a simulated
CI (`fakeforge.gitrepo`): each car's `ci` check finishes `CI_SECONDS` after the push; 20 labelled
PRs, of which 2 are broken (green alone, red beside today's base: they use an API main removed
after they forked) and `ci` flakes once (the first tree that should pass fails). Both runs use
`--retry-flaky 1`. Figures: CI runs per merged PR (trees CI ran on plus job reruns; the targets
are at most 0.85 batched, 1.11 for the serial train) and the batched run's wall time against
the `--batch 1` run's in the same process (target at most 0.6x). Each run also checks what it
must: every good PR merged, the 2 broken dropped with the failing check's first failure line,
and every car the base landed on a tree CI saw green. A third run, `--land push`, gives the same
figures for bors-style landing and checks that after every landing (each fast-forward of the
base to a car commit) the base's tree is one CI saw green. A fourth, the same cars without
`--speculate`, shows what riding on the car in CI buys (information).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packages" / "forge-automation" / "tests"))

from fakeforge import ForgeServer  # noqa: E402
from fakeforge.gitrepo import train_world  # noqa: E402

REPO = "acme/widgets"
LABEL = "merge-train"
PRS = 20
BROKEN = (6, 15)
CI_SECONDS = 2.0
# The batched runs: cars of 6, one car riding on the car in CI (`--max-cars` is then 2, so a red
# car's halves are in CI at once too). Why 6: with 2 broken PRs in 20 most cars are green, and
# a car of 6 costs one run for six PRs; a red one costs its bisection (about log2(6) more runs)
# and one discarded car. Cars of 4 spend 16 runs here (0.89 per PR, over the 0.85 target:
# each red car of 4 costs as much as one of 6 but there are more cars), cars of 6 spend 14.
BATCH = 6
SPECULATE = 1
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def _ride(batch: int, land: str = "merge", *extra: str) -> tuple[float, int, int]:
    """Run one train; return its wall time, the CI runs it caused and the PRs it merged."""
    with ForgeServer() as server, tempfile.TemporaryDirectory() as where:
        repo = server.state.repo(REPO)
        clone = train_world(
            repo, where, prs=PRS, broken=BROKEN, duration=CI_SECONDS, flaky="ci", label=LABEL
        )
        ungreen: list[str] = []
        git, ci = repo.git, repo.ci
        assert git is not None
        assert ci is not None

        def landed_tree(branch: str, sha: str) -> None:
            if branch == "main" and git.tree(sha) not in ci.green_trees:
                ungreen.append(sha)

        repo.after_ref_update = landed_tree
        command = [FORGE_CLI, "train", REPO, "--label", LABEL, "--clone", clone, "--quiet"]
        flags = ["--batch", str(batch), "--retry-flaky", "1", "--interval", "0.25"]
        flags += ["--land", land, *extra]
        start = time.perf_counter()
        done = subprocess.run(
            [*command, *flags],
            env={**os.environ, **server.env()},
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        lines = done.stdout.splitlines()
        assert done.returncode == 0, (lines, done.stderr[-2000:])
        assert repo.ci is not None
        assert repo.git is not None
        merged = [n for n in range(1, PRS + 1) if repo.prs[n]["merged"]]
        assert merged == [n for n in range(1, PRS + 1) if n not in BROKEN], lines
        for number in BROKEN:
            body = repo.comments[number][0]["body"]
            assert f"ImportError: uses-api-v1-{number} needs api v1" in body, body
        landed = [line.rsplit("tree=", 1)[1] for line in lines if line.startswith("LANDED ")]
        assert landed, lines
        assert all(tree in repo.ci.green_trees for tree in landed), lines
        assert repo.git.tree(repo.git.heads()["main"]) == landed[-1]
        if land == "push":
            # After every landing the base's tree is one CI saw green: the base moved only by
            # fast-forwards to tested cars, each tree green as it landed; nothing merged singly.
            assert repo.ref_updates, lines
            assert ungreen == [], lines
            assert server.state.effects["merge_pr"] == 0, lines
        return wall, repo.ci.runs + repo.ci.reruns, len(merged)


def _runs_row(name: str, runs: int, merged: int, target: str) -> dict[str, object]:
    per = round(runs / merged, 3)
    return {
        "name": f"{name}: CI runs per merged PR",
        "value": per,
        "unit": "runs",
        "baseline": f"{runs} runs (trees and reruns), {merged} merged",
        "baseline_value": runs,
        "ratio": per,
        "target": target,
    }


def _wall_row(name: str, wall: float, serial_wall: float, target: str) -> dict[str, object]:
    return {
        "name": f"{name} wall time",
        "value": round(wall, 1),
        "unit": "s",
        "baseline": "train --batch 1, same queue, same run (s)",
        "baseline_value": round(serial_wall, 1),
        "ratio": round(wall / serial_wall, 3),
        "target": target,
    }


def main() -> None:
    """Print one JSON line per figure."""
    serial_wall, serial_runs, serial_merged = _ride(1)
    cars = ["--batch", str(BATCH), "--speculate", str(SPECULATE)]
    rows = [_runs_row("train --batch 1", serial_runs, serial_merged, "<= 1.11 (one per PR)")]
    for land in ("merge", "push"):
        wall, runs, merged = _ride(BATCH, land, "--speculate", str(SPECULATE))
        name = " ".join(["train", *cars, *(["--land", "push"] if land == "push" else [])])
        rows.append(_runs_row(name, runs, merged, "<= 0.85"))
        rows.append(_wall_row(name, wall, serial_wall, "<= 0.6x"))
    # The same cars without speculation: what riding on the car in CI buys.
    wall, runs, merged = _ride(BATCH)
    name = f"train --batch {BATCH} (no --speculate)"
    rows.append(_runs_row(name, runs, merged, "information"))
    rows.append(_wall_row(name, wall, serial_wall, "information: against the row with --speculate"))
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
