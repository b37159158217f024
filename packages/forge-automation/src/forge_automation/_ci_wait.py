"""ci_wait: the package's one polling loop, bounded by a timeout and paced by the rate budget."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._budget import RateBudget, shared_rate_budget
from ._errors import ForgeInputError
from ._port import ForgePort
from ._types import RequiredContext
from ._validate import validate_repo, validate_sha
from ._verdict import ci_verdict

__all__ = ["CiWaitResult", "ci_wait"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CiWaitResult:
    """How the wait ended: `green`, `red`, or `timeout` with the last pending reasons."""

    verdict: Literal["green", "red", "timeout"]
    reasons: tuple[str, ...]
    polls: int


def ci_wait(
    port: ForgePort,
    repo: str,
    sha: str,
    *,
    rules: Sequence[RequiredContext] = (),
    timeout: float = 1800.0,
    interval: float = 15.0,
    budget: RateBudget | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> CiWaitResult:
    """Poll check runs and statuses of `sha` until ci_verdict is green or red, or time runs out."""
    validate_repo(repo)
    validate_sha(sha)
    if not (timeout >= 0 and math.isfinite(timeout)):
        raise ForgeInputError("timeout", "must be a finite number of seconds >= 0")
    if not (interval > 0 and math.isfinite(interval)):
        raise ForgeInputError("interval", "must be a finite number of seconds > 0")
    pacer = budget or shared_rate_budget()
    deadline = clock() + timeout
    # One poll per interval plus the first, whatever the clock does.
    max_polls = int(timeout / interval) + 2
    reasons: tuple[str, ...] = ()
    for poll in range(1, max_polls + 1):
        pacer.pace()
        runs = port.check_runs(repo, sha)
        statuses = port.commit_statuses(repo, sha)
        verdict = ci_verdict(rules=rules, runs=runs, statuses=statuses)
        reasons = tuple(verdict.reasons)
        if verdict.verdict in ("green", "red"):
            return CiWaitResult(verdict=verdict.verdict, reasons=reasons, polls=poll)
        left = deadline - clock()
        if left <= 0:
            return CiWaitResult(verdict="timeout", reasons=reasons, polls=poll)
        sleep(min(interval, left))
    return CiWaitResult(verdict="timeout", reasons=reasons, polls=max_polls)
