"""Port calls per second through the real `gh` against the local forge API, vs one bare `gh api`.

The wire's own cost per call (argument building, `-i` parsing, validation, the rate budget) is the
difference; the target is under 10% of a bare `gh api` call, which is mostly gh's own start-up.
The wire runs gh with its defaults (TCELL_MINIMIZE=1, GOGC=off with GOMEMLIMIT: `_ghenv`), so the
bare call is measured with that same environment: the difference is then the wire's work alone. A
third row shows a bare call as a user runs it, without TCELL_MINIMIZE, for scale.
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
from forge_automation import forge_port, gh_cli_wire  # noqa: E402
from forge_automation._ghenv import GH_CHILD_DEFAULTS  # noqa: E402

REPO = "acme/widgets"
ROUNDS = 5
PER_ROUND = 8


def main() -> None:
    """Print one JSON line per figure."""
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.branches["main"] = repo.add_commit("root")
        plain_env = {**os.environ, **server.env()}
        for name in GH_CHILD_DEFAULTS:
            plain_env.pop(name, None)
        env = {**plain_env, **GH_CHILD_DEFAULTS}
        port = forge_port(gh_cli_wire(server.exec()))
        bare_args = ["gh", "api", "-i", "--method", "GET", f"repos/{REPO}/git/ref/heads/main"]
        bare_times: list[float] = []
        plain_times: list[float] = []
        port_times: list[float] = []
        # Interleave rounds so drift on a shared machine hits every side alike.
        for _ in range(ROUNDS):
            start = time.perf_counter()
            for _ in range(PER_ROUND):
                subprocess.run(bare_args, env=env, capture_output=True, check=True)
            bare_times.append((time.perf_counter() - start) / PER_ROUND)
            start = time.perf_counter()
            for _ in range(PER_ROUND):
                subprocess.run(bare_args, env=plain_env, capture_output=True, check=True)
            plain_times.append((time.perf_counter() - start) / PER_ROUND)
            start = time.perf_counter()
            for _ in range(PER_ROUND):
                assert port.get_head_sha(REPO, "main") is not None
            port_times.append((time.perf_counter() - start) / PER_ROUND)
    bare = statistics.median(bare_times)
    plain = statistics.median(plain_times)
    through_port = statistics.median(port_times)
    print(
        json.dumps(
            {
                "name": "forge port get_head_sha through gh (calls/s)",
                "value": round(1 / through_port, 2),
                "unit": "calls/s",
                "baseline": "one bare `gh api -i` call, same env (the wire's gh defaults)",
                "baseline_value": round(1 / bare, 2),
                "ratio": round(through_port / bare, 3),
                "target": "per-call time <= 1.10 x bare gh api",
            }
        )
    )
    print(
        json.dumps(
            {
                "name": "forge wire overhead per call",
                "value": round((through_port - bare) * 1000, 2),
                "unit": "ms",
                "baseline": "one bare `gh api -i` call, same env (ms)",
                "baseline_value": round(bare * 1000, 2),
                "ratio": round((through_port - bare) / bare, 3),
                "target": "< 0.10 of a bare call",
            }
        )
    )
    print(
        json.dumps(
            {
                "name": "forge port call vs a bare `gh api -i` as a user runs it",
                "value": round(through_port * 1000, 2),
                "unit": "ms",
                "baseline": "one bare `gh api -i` call, no TCELL_MINIMIZE (ms)",
                "baseline_value": round(plain * 1000, 2),
                "ratio": round(through_port / plain, 3),
                "target": "information",
            }
        )
    )


if __name__ == "__main__":
    main()
