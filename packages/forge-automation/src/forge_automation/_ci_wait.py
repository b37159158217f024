"""ci_wait: the package's one polling loop, bounded by a timeout and paced by the rate budget.

The timeout bounds the children too: a wire that takes a deadline (`gh_cli_wire`'s does) gets
the wait's deadline plus DEADLINE_GRACE, so a hung gh ends the wait then, not after gh's own
timeout. A poll that fails transiently (no answer, timeout, 5xx, rate limit) is made again at the
next interval until the deadline; the wait then ends as `timeout` with the failure as its reason.
Any other failed read raises: it is never a verdict.

What ends the wait:
- `green`: every check that counts passed (`ci_verdict`: the required contexts when `rules` are
  given, else every run and status);
- `red`: a check that counts failed, once none that counts is still running (with `fail_fast`,
  on the first failure); or, with `grace`, a required context (without `rules`: any check) that
  has not reported `grace` seconds into the wait (`<context>=never reported`); at the deadline,
  a failure already seen is still `red`;
- `moved`: `ci_wait_pr` only, the PR's head is no longer the sha the wait judges;
- `timeout`: the deadline passed without any of the above.

`on_poll` sees every poll as a `CiPoll` (where CI stands, or the transient failure), before the
wait decides: progress reports (`forge-cli ci-wait`'s table) hang off it, never the verdict.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ._budget import RateBudget, shared_rate_budget
from ._errors import ForgeCliError, ForgeInputError
from ._port import ForgePort, forge_port
from ._rules import load_required_contexts
from ._types import RequiredContext
from ._validate import validate_branch, validate_number, validate_repo, validate_sha
from ._verdict import CiProgress, ci_progress

__all__ = [
    "DEADLINE_GRACE",
    "CiPoll",
    "CiWaitResult",
    "NoRequiredChecks",
    "ci_wait",
    "ci_wait_pr",
]

# Seconds past the wait's deadline that a poll started just before it may still take.
DEADLINE_GRACE = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CiWaitResult:
    """How the wait ended: `green`, `red`, `timeout` (the last pending reasons) or `moved`.

    `sha` is the commit the wait judged; `moved_to` the PR's new head when it ended `moved`.
    """

    verdict: Literal["green", "red", "timeout", "moved"]
    reasons: tuple[str, ...]
    polls: int
    sha: str = ""
    moved_to: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CiPoll:
    """One poll of a CI wait, for progress reports.

    `progress` is where the sha's CI stands (`ci_progress`: every label judged, failed and
    waiting), or None when the poll's read failed transiently (`failure` says how; the wait
    polls again). `elapsed` is seconds since the wait began, by the wait's clock; `pr` is the
    PR whose head `sha` is, when the caller knows it (`ci_wait_pr`, the train).
    """

    repo: str
    sha: str
    poll: int
    elapsed: float
    progress: CiProgress | None
    failure: str | None = None
    pr: int | None = None


class NoRequiredChecks(ForgeInputError):
    """`required=True` on a branch that requires no check: there is nothing to wait for."""

    def __init__(self, branch: str) -> None:
        super().__init__("required", f"{branch} requires no checks; nothing to wait for")
        self.branch = branch


def check_wait_bounds(timeout: float, interval: float, grace: float | None) -> None:
    """Raise ForgeInputError naming the first bound that is not a finite, allowed number."""
    if not (timeout >= 0 and math.isfinite(timeout)):
        raise ForgeInputError("timeout", "must be a finite number of seconds >= 0")
    if not (interval > 0 and math.isfinite(interval)):
        raise ForgeInputError("interval", "must be a finite number of seconds > 0")
    if grace is not None and not (grace >= 0 and math.isfinite(grace)):
        raise ForgeInputError("grace", "must be a finite number of seconds >= 0")


def _late(
    progress: CiProgress,
    elapsed: float,
    grace: float | None,
    grace_for: Mapping[str, float] | None,
) -> list[tuple[str, str]]:
    """The missing checks (name, label) whose grace (`grace_for[name]`, else `grace`) is over."""
    late: list[tuple[str, str]] = []
    for name, label in zip(progress.missing, progress.missing_labels, strict=True):
        mine = grace_for.get(name, grace) if grace_for is not None else grace
        if mine is not None and elapsed >= mine:
            late.append((name, label))
    return late


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
    fail_fast: bool = False,
    grace: float | None = None,
    head: Callable[[], str] | None = None,
    on_poll: Callable[[CiPoll], None] | None = None,
    latest: bool = False,
    grace_for: Mapping[str, float] | None = None,
) -> CiWaitResult:
    """Poll check runs and statuses of `sha` until green, red or moved, or time runs out.

    `rules` limits the verdict to those required contexts. `fail_fast` ends red on the first
    failure instead of once nothing that counts is still running. `grace` (seconds) turns a
    required context with no run or status yet into `red` once the wait is that old;
    `grace_for` gives a context its own grace instead (by name). `head`
    (read before each poll) ends the wait `moved` when it names another sha. `on_poll` is
    called with each poll's `CiPoll`. With `latest` only each check's latest run counts (the
    forge's `filter=latest`, as its branch protection reads them): for a caller that reran a
    failed run on purpose; otherwise every run counts, superseded ones included.
    """
    validate_repo(repo)
    validate_sha(sha)
    check_wait_bounds(timeout, interval, grace)
    for one in (grace_for or {}).values():
        check_wait_bounds(timeout, interval, one)
    pacer = budget or shared_rate_budget()
    start = clock()
    deadline = start + timeout
    bounded = getattr(port.wire, "with_deadline", None)
    if callable(bounded):
        # The wire's clock is the real monotonic one, whatever `clock` the caller injected.
        port = forge_port(bounded(time.monotonic() + timeout + DEADLINE_GRACE))
    # One poll per interval plus the first, whatever the clock does.
    max_polls = int(timeout / interval) + 2
    reasons: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    for poll in range(1, max_polls + 1):
        pacer.pace()
        failure = None
        try:
            current = head() if head is not None else sha
            if current != sha:
                return CiWaitResult(
                    verdict="moved",
                    reasons=(f"head moved from {sha} to {current}",),
                    polls=poll,
                    sha=sha,
                    moved_to=current,
                )
            runs = port.latest_check_runs(repo, sha) if latest else port.check_runs(repo, sha)
            statuses = port.commit_statuses(repo, sha)
        except ForgeCliError as exc:
            if not exc.transient:
                raise
            failure = str(exc)
        progress: CiProgress | None = None
        if failure is not None:
            failure = failure[:300]
            reasons = (*failed, f"last poll failed: {failure}")
        else:
            progress = ci_progress(rules=rules, runs=runs, statuses=statuses)
        if on_poll is not None:
            on_poll(
                CiPoll(
                    repo=repo,
                    sha=sha,
                    poll=poll,
                    elapsed=clock() - start,
                    progress=progress,
                    failure=failure,
                )
            )
        if progress is not None:
            waiting = progress.waiting
            failed = progress.failed
            late = _late(progress, clock() - start, grace, grace_for)
            if late:
                # Past its grace, a check that never reported is a failure, not a wait.
                failed = (*failed, *(f"{name}=never reported" for name, _ in late))
                labels = {label for _, label in late}
                waiting = tuple(w for w in waiting if w not in labels)
            if failed and (fail_fast or not waiting):
                return CiWaitResult(verdict="red", reasons=failed, polls=poll, sha=sha)
            if not failed and not waiting:
                return CiWaitResult(verdict="green", reasons=progress.passed, polls=poll, sha=sha)
            reasons = (*failed, *waiting)
        left = deadline - clock()
        if left <= 0:
            break
        sleep(min(interval, left))
    else:
        poll = max_polls
    verdict: Literal["red", "timeout"] = "red" if failed else "timeout"
    return CiWaitResult(verdict=verdict, reasons=reasons, polls=poll, sha=sha)


def ci_wait_pr(
    port: ForgePort,
    repo: str,
    number: int,
    *,
    required: bool = False,
    timeout: float = 1800.0,
    interval: float = 15.0,
    budget: RateBudget | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    fail_fast: bool = False,
    grace: float | None = None,
    on_poll: Callable[[CiPoll], None] | None = None,
) -> CiWaitResult:
    """Wait on CI for a PR's head; end `moved` as soon as the head is another commit.

    With `required`, only the base branch's required contexts count (`load_required_contexts`,
    fail-closed); a base that requires none raises NoRequiredChecks.
    """
    validate_repo(repo)
    validate_number(number)
    check_wait_bounds(timeout, interval, grace)
    pr = port.wire.get_pr(repo, number)
    rules: tuple[RequiredContext, ...] = ()
    if required:
        rules = required_contexts(port, repo, pr.base_ref)
    return ci_wait(
        port,
        repo,
        pr.head_sha,
        rules=rules,
        timeout=timeout,
        interval=interval,
        budget=budget,
        clock=clock,
        sleep=sleep,
        fail_fast=fail_fast,
        grace=grace,
        head=lambda: port.wire.get_pr(repo, number).head_sha,
        on_poll=None if on_poll is None else lambda seen: on_poll(replace(seen, pr=number)),
    )


def required_contexts(port: ForgePort, repo: str, branch: str) -> tuple[RequiredContext, ...]:
    """Return the branch's required contexts, or raise NoRequiredChecks when it has none."""
    validate_branch(branch)
    contexts = load_required_contexts(port, repo, branch).contexts
    if not contexts:
        raise NoRequiredChecks(branch)
    return contexts
