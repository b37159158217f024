"""The refresh race: N `account-cli poll --write --refresh` processes per round plus an agent-client
writer against one local token server that rotates single-use refresh tokens.

Figures per N (8 and 32): token requests per rotation (must be 1: no spent token ever sent again)
and wall time per round, against the baseline of one lone `account-cli poll --write --refresh` run
measured in the same process. Prints one JSON line per figure.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "packages" / "agent-accounts" / "tests")
)

from accounts_refresh_support import run_race

ROUNDS = 3


def _emit(**row: object) -> None:
    print(json.dumps(row), flush=True)


async def main() -> None:
    """Run the race at 8 and 32 processes and print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        lone = await run_race(Path(tmp) / "lone", processes=1, rounds=ROUNDS)
    baseline = statistics.median(lone.round_seconds)
    for processes in (8, 32):
        with tempfile.TemporaryDirectory() as tmp:
            outcome = await run_race(Path(tmp) / "home", processes=processes, rounds=ROUNDS)
        per_rotation = len(outcome.received) / max(outcome.exchanges, 1)
        _emit(
            name=f"race {processes} processes: token requests per rotation",
            value=per_rotation,
            unit="requests",
            baseline="must be",
            baseline_value=1,
            ratio=per_rotation,
            target=f"== 1 (rejected spent tokens: {outcome.rejected})",
        )
        per_round = statistics.median(outcome.round_seconds)
        _emit(
            name=f"race {processes} processes: wall time per round",
            value=per_round,
            unit="s",
            baseline="one lone account-cli run",
            baseline_value=baseline,
            ratio=per_round / baseline,
            target=f"<= {processes} x baseline (serial)",
        )


if __name__ == "__main__":
    asyncio.run(main())
