"""`forge-cli pr-status` wall time vs one bare `gh api` call against the same local forge API.

pr-status pays Python and CLI start-up plus the port's reads: the PR, then the base's rules, the
head's check runs and the behind count in parallel. The target is at most 2.5x one bare call.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packages" / "forge-automation" / "tests"))

from forge_support import ForgeServer  # noqa: E402

REPO = "acme/widgets"
ROUNDS = 7
PER_ROUND = 3
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def _time(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    """Print one JSON line per figure."""
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.branches["main"] = repo.add_commit("root")
        head = repo.add_commit("head", parents=[repo.branches["main"]])
        repo.add_pr(1, head_ref="feature", head_sha=head)
        repo.set_rulesets("main", ["ci"], strict=True)
        repo.add_run(head, "ci", "success")
        env = {**os.environ, **server.env()}
        bare_args = ["gh", "api", "-i", f"repos/{REPO}/pulls/1"]
        cli_args = [FORGE_CLI, "pr-status", f"{REPO}#1"]
        _time(bare_args, env)
        _time(cli_args, env)  # warm the page cache for both
        bare_times: list[float] = []
        cli_times: list[float] = []
        # Interleave so drift on a shared machine hits both sides alike.
        for _ in range(ROUNDS):
            bare_times.append(statistics.mean(_time(bare_args, env) for _ in range(PER_ROUND)))
            cli_times.append(statistics.mean(_time(cli_args, env) for _ in range(PER_ROUND)))
    bare = statistics.median(bare_times)
    through_cli = statistics.median(cli_times)
    print(
        json.dumps(
            {
                "name": "forge-cli pr-status wall time",
                "value": round(through_cli * 1000, 1),
                "unit": "ms",
                "baseline": "one bare `gh api` call (ms)",
                "baseline_value": round(bare * 1000, 1),
                "ratio": round(through_cli / bare, 3),
                "target": "<= 2.5 x one bare gh api call",
            }
        )
    )


if __name__ == "__main__":
    main()
