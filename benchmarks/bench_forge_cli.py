"""`forge-cli pr-status` wall time vs one bare `gh api` call against the same local forge API.

pr-status pays Python and CLI start-up plus two forge reads: a GraphQL document for the PR, its
head's check runs, the base's rules and the head's ancestors, started as a gh child before the
library is imported (so the imports run beside it), then classic branch protection over REST
(GitHub layers it on the rulesets; the document cannot ask for it), started as soon as the
document answers with the PR's base, before the verdict's modules load, so that it too runs
beside the imports rather than after them. The world here is the usual one (required checks by
ruleset, strict, head up to date), which needs no other REST read. Its gh children run
with TCELL_MINIMIZE=1, which spares them tcell's rune-width table; the baseline is a bare call
without it, as a user would type it. Python runs from its bytecode cache, as an installed package
does. The target is at most 2.0x one bare call.

Three figures for information: one gh call as forge-cli runs it; pr-status's own share (its wall
time minus two such calls: what Python adds around the two reads, which must run one after the
other as the second needs the first's answer); and the forge requests one pr-status makes
(counted at the server, so a call made twice would show). On a shared machine the ratio moves with
the load: the two gh children and Python's imports then compete for the cores, and the bare
baseline is one process.
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

from fakeforge import ForgeServer  # noqa: E402
from forge_automation._ghenv import GH_CHILD_DEFAULTS  # noqa: E402

REPO = "acme/widgets"
ROUNDS = 7
PER_ROUND = 3
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def _time(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def _row(name: str, value: float, unit: str, bare: float, target: str) -> dict[str, object]:
    return {
        "name": name,
        "value": round(value * 1000, 1),
        "unit": unit,
        "baseline": "one bare `gh api` call (ms)",
        "baseline_value": round(bare * 1000, 1),
        "ratio": round(value / bare, 3),
        "target": target,
    }


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
        # The baseline is gh as a user runs it, so drop a TCELL_MINIMIZE the caller may have set.
        for name in ("TCELL_MINIMIZE", "GOGC", "GOMEMLIMIT"):
            env.pop(name, None)
        # An installed package runs from its bytecode cache; with PYTHONDONTWRITEBYTECODE set
        # (as in some dev shells) every run would compile the package's modules again
        # (bench_accounts.py does the same).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        bare_args = ["gh", "api", "-i", f"repos/{REPO}/pulls/1"]
        cli_args = [FORGE_CLI, "pr-status", f"{REPO}#1"]
        minimized = {**env, **GH_CHILD_DEFAULTS}
        _time(bare_args, env)
        server.clear_log()
        _time(cli_args, env)  # warm the page cache for both
        requests = len(server.requests())
        bare_times: list[float] = []
        cli_times: list[float] = []
        child_times: list[float] = []
        # Interleave so drift on a shared machine hits every side alike.
        for _ in range(ROUNDS):
            bare_times.append(statistics.mean(_time(bare_args, env) for _ in range(PER_ROUND)))
            cli_times.append(statistics.mean(_time(cli_args, env) for _ in range(PER_ROUND)))
            child_times.append(
                statistics.mean(_time(bare_args, minimized) for _ in range(PER_ROUND))
            )
    bare = statistics.median(bare_times)
    rows = [
        _row(
            "forge-cli pr-status wall time",
            statistics.median(cli_times),
            "ms",
            bare,
            "<= 2.0 x one bare gh api call",
        ),
        _row(
            "one gh api call as forge-cli runs it (TCELL_MINIMIZE=1, GOGC=off)",
            statistics.median(child_times),
            "ms",
            bare,
            "information",
        ),
        _row(
            "pr-status's own share: its wall time minus two gh calls as forge-cli runs them",
            statistics.median(cli_times) - 2 * statistics.median(child_times),
            "ms",
            bare,
            "information: Python start-up, imports and work around its two serial forge reads",
        ),
        {
            "name": "forge requests per forge-cli pr-status",
            "value": requests,
            "unit": "requests",
            "baseline": None,
            "baseline_value": None,
            "ratio": None,
            "target": "information (2: the GraphQL snapshot read, then classic protection)",
        },
    ]
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
