"""`squash-message` start-up: the median wall time of the console script vs `python -c pass`.

Both run as fresh processes of the same interpreter, interleaved so drift on a shared machine hits
both alike. The difference is the package import plus formatting one message.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 21
REQUEST = json.dumps(
    {
        "title": "Add retry to the fetcher",
        "body": "Retries transient errors.",
        "prNumber": 42,
        "taskIds": ["T-17"],
        "commits": [
            {"subject": "Add backoff", "body": "Wraps the call\nin a bounded loop."},
            {"subject": "Test the retry", "body": ""},
        ],
    }
).encode()


def _script() -> str:
    beside = Path(sys.executable).with_name("squash-message")
    found = str(beside) if beside.exists() else shutil.which("squash-message")
    if found is None:
        raise SystemExit("squash-message is not installed: run `make setup`")
    return found


def _time(args: list[str], stdin: bytes) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} exited {done.returncode}: {done.stderr[-200:]!r}")
    return elapsed


def main() -> None:
    """Print one JSON line: the squash-message start-up against a bare interpreter."""
    script = _script()
    baseline_args = [sys.executable, "-c", "pass"]
    # Warm the page cache for both before measuring.
    _time([script], REQUEST)
    _time(baseline_args, b"")
    squash: list[float] = []
    bare: list[float] = []
    for _ in range(RUNS):
        squash.append(_time([script], REQUEST))
        bare.append(_time(baseline_args, b""))
    value = statistics.median(squash)
    baseline = statistics.median(bare)
    print(
        json.dumps(
            {
                "name": "squash-message start-up (median of 21)",
                "value": round(value * 1000, 2),
                "unit": "ms",
                "baseline": "python -c pass (ms)",
                "baseline_value": round(baseline * 1000, 2),
                "ratio": round(value / baseline, 3),
                "target": "stdlib-only start-up; no typer, httpx or cryptography import",
            }
        )
    )


if __name__ == "__main__":
    main()
