"""ci_wait: the package's one polling loop, bounded by a timeout and paced by the rate budget.

The timeout bounds the children too: a wire that takes a deadline (`gh_cli_wire`'s does) gets
the wait's deadline plus DEADLINE_GRACE, so a hung gh ends the wait then, not after gh's own
timeout. A poll that fails transiently (no answer, timeout, 5xx, rate limit) is made again at the
next interval until the deadline; the wait then ends as `timeout` with the failure as its reason.
Any other failed read raises: it is never a verdict.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._budget import RateBudget, shared_rate_budget
from ._errors import ForgeCliError, ForgeInputError
from ._port import ForgePort, forge_port
from ._types import RequiredContext
from ._validate import validate_repo, validate_sha
from ._verdict import ci_verdict

__all__ = ["DEADLINE_GRACE", "CiWaitResult", "ci_wait"]

# Seconds past the wait's deadline that a poll started just before it may still take.
DEADLINE_GRACE = 3.0


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
    bounded = getattr(port.wire, "with_deadline", None)
    if callable(bounded):
        # The wire's clock is the real monotonic one, whatever `clock` the caller injected.
        port = forge_port(bounded(time.monotonic() + timeout + DEADLINE_GRACE))
    # One poll per interval plus the first, whatever the clock does.
    max_polls = int(timeout / interval) + 2
    reasons: tuple[str, ...] = ()
    for poll in range(1, max_polls + 1):
        pacer.pace()
        failure = None
        try:
            runs = port.check_runs(repo, sha)
            statuses = port.commit_statuses(repo, sha)
        except ForgeCliError as exc:
            if not exc.transient:
                raise
            failure = str(exc)
        if failure is not None:
            reasons = (f"last poll failed: {failure[:300]}",)
        else:
            verdict = ci_verdict(rules=rules, runs=runs, statuses=statuses)
            reasons = tuple(verdict.reasons)
            if verdict.verdict in ("green", "red"):
                return CiWaitResult(verdict=verdict.verdict, reasons=reasons, polls=poll)
        left = deadline - clock()
        if left <= 0:
            return CiWaitResult(verdict="timeout", reasons=reasons, polls=poll)
        sleep(min(interval, left))
    return CiWaitResult(verdict="timeout", reasons=reasons, polls=max_polls)
