"""ci_wait: polls to green or red, times out on a fake clock, paces by the budget, never drops."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fakeforge import ForgeServer
from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    CheckRunConclusion,
    CiWaitResult,
    FakeForge,
    ForgeInputError,
    RateBudget,
    RequiredContext,
    ci_wait,
    ci_wait_pr,
    fake_forge,
    forge_port,
    gh_cli_wire,
)
from forge_builders import OpenPr

REPO = "acme/widgets"
SHA = "5" * 40


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _run(conclusion: CheckRunConclusion | None, run_id: int = 1, name: str = "test") -> CheckRun:
    return CheckRun(
        id=run_id,
        name=name,
        status="completed" if conclusion else "in_progress",
        conclusion=conclusion,
        app_id=ACTIONS_APP_ID,
        head_sha=SHA,
        completed_at="2024-01-01T00:00:00Z" if conclusion else None,
    )


def _idle_budget() -> RateBudget:
    return RateBudget(sleep=lambda s: pytest.fail(f"budget slept {s}"))


def _wait(fake: FakeForge, clock: Clock, *, timeout: float, interval: float) -> CiWaitResult:
    return ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        rules=[RequiredContext(context="test", app_id=ACTIONS_APP_ID)],
        clock=lambda: clock.now,
        sleep=clock.sleep,
        budget=_idle_budget(),
        timeout=timeout,
        interval=interval,
    )


def test_green_on_the_first_poll_does_not_sleep() -> None:
    fake, clock = fake_forge(), Clock()
    fake.set_runs(SHA, [_run("success")])
    result = _wait(fake, clock, timeout=60, interval=10)
    assert result.verdict == "green"
    assert result.polls == 1
    assert clock.sleeps == []


def test_pending_then_red_polls_until_the_verdict() -> None:
    fake, clock = fake_forge(), Clock()
    fake.set_runs(SHA, [_run(None)])

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 2:
            fake.set_runs(SHA, [_run("failure")])

    result = ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        rules=[RequiredContext(context="test", app_id=ACTIONS_APP_ID)],
        timeout=600,
        interval=10,
        clock=lambda: clock.now,
        sleep=sleep,
        budget=_idle_budget(),
    )
    assert (result.verdict, result.polls) == ("red", 3)
    assert clock.sleeps == [10, 10]
    assert any("test" in reason for reason in result.reasons)


def test_timeout_keeps_the_pending_reasons_and_is_bounded() -> None:
    fake, clock = fake_forge(), Clock()
    fake.set_runs(SHA, [_run(None)])
    result = _wait(fake, clock, timeout=30, interval=10)
    assert result.verdict == "timeout"
    assert result.polls == 4
    assert sum(clock.sleeps) == 30
    assert fake.calls["list_check_runs"] == 4


def test_a_frozen_clock_still_ends() -> None:
    fake = fake_forge()
    fake.set_runs(SHA, [_run(None)])
    result = ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        timeout=30,
        interval=10,
        clock=lambda: 0.0,
        sleep=lambda s: None,
        budget=_idle_budget(),
    )
    assert (result.verdict, result.polls) == ("timeout", 5)


def test_a_low_budget_paces_but_never_drops_a_poll() -> None:
    fake, clock = fake_forge(), Clock()
    fake.set_runs(SHA, [_run("success")])
    paced: list[float] = []
    budget = RateBudget(now=lambda: 1000.0, sleep=paced.append)
    budget.observe({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1020"})
    result = ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        timeout=60,
        interval=10,
        clock=lambda: clock.now,
        sleep=clock.sleep,
        budget=budget,
    )
    assert result.verdict == "green"
    assert paced == [20.0]
    assert fake.calls["list_check_runs"] == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"sha": "nope"}, "sha"),
        ({"repo": "../x"}, "repo"),
        ({"timeout": -1.0}, "timeout"),
        ({"interval": 0.0}, "interval"),
        ({"timeout": float("nan")}, "timeout"),
    ],
)
def test_bad_arguments_fail_before_any_poll(kwargs: dict[str, object], field: str) -> None:
    fake = fake_forge()
    args: dict[str, object] = {"repo": REPO, "sha": SHA, **kwargs}
    with pytest.raises(ForgeInputError) as caught:
        ci_wait(
            forge_port(fake.wire),
            str(args["repo"]),
            str(args["sha"]),
            timeout=float(args.get("timeout", 10.0)),  # type: ignore[arg-type]
            interval=float(args.get("interval", 1.0)),  # type: ignore[arg-type]
            budget=_idle_budget(),
        )
    assert caught.value.field == field
    assert sum(fake.calls.values()) == 0


@pytest.mark.gh
def test_green_through_real_gh(forge_server: ForgeServer) -> None:
    repo = forge_server.state.repo(REPO)
    sha = repo.add_commit("head")
    repo.check_runs.append(
        {
            "id": 1,
            "name": "test",
            "head_sha": sha,
            "status": "completed",
            "conclusion": "success",
            "completed_at": "2024-01-01T00:00:00Z",
            "app": {"id": ACTIONS_APP_ID},
        }
    )
    port = forge_port(gh_cli_wire(forge_server.exec()))
    result = ci_wait(
        port,
        REPO,
        sha,
        rules=[RequiredContext(context="test")],
        timeout=5,
        interval=1,
        budget=RateBudget(),
    )
    assert result.verdict == "green"
    assert result.polls == 1


# -- the flags of issue 19: fail-fast, grace, required, a head that moves (in-memory fake) -------


def test_without_fail_fast_red_waits_for_the_rest_to_finish() -> None:
    fake, clock = fake_forge(), Clock()
    fake.set_runs(SHA, [_run("failure", 1, "a"), _run(None, 2, "b")])

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 2:
            fake.set_runs(SHA, [_run("failure", 1, "a"), _run("failure", 2, "b")])

    kwargs = {"clock": lambda: clock.now, "budget": _idle_budget(), "timeout": 600, "interval": 10}
    result = ci_wait(forge_port(fake.wire), REPO, SHA, sleep=sleep, **kwargs)  # type: ignore[arg-type]
    assert (result.verdict, result.polls, result.reasons) == ("red", 3, ("a=failure", "b=failure"))
    fake.set_runs(SHA, [_run("failure", 1, "a"), _run(None, 2, "b")])
    fast = ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        sleep=clock.sleep,
        fail_fast=True,
        **kwargs,  # type: ignore[arg-type]
    )
    assert (fast.verdict, fast.polls, fast.reasons) == ("red", 1, ("a=failure",))


def test_a_failure_seen_is_red_at_the_deadline_even_with_checks_still_running() -> None:
    fake, clock = fake_forge(), Clock()
    fake.set_runs(SHA, [_run("failure", 1, "a"), _run(None, 2, "b")])
    result = ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        timeout=20,
        interval=10,
        clock=lambda: clock.now,
        sleep=clock.sleep,
        budget=_idle_budget(),
    )
    assert (result.verdict, result.reasons) == ("red", ("a=failure", "b=in_progress"))


def test_a_required_check_that_registers_late_within_the_grace_is_waited_for() -> None:
    fake, clock = fake_forge(), Clock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 2:
            fake.set_runs(SHA, [_run("success")])

    result = ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        rules=[RequiredContext(context="test")],
        grace=30,
        timeout=600,
        interval=10,
        clock=lambda: clock.now,
        sleep=sleep,
        budget=_idle_budget(),
    )
    assert (result.verdict, result.polls) == ("green", 3)


def test_a_required_check_never_reported_after_the_grace_is_red_by_name() -> None:
    fake, clock = fake_forge(), Clock()
    fake.set_runs(SHA, [_run("success", 1, "other")])
    result = ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        rules=[RequiredContext(context="test"), RequiredContext(context="other")],
        grace=20,
        timeout=600,
        interval=10,
        clock=lambda: clock.now,
        sleep=clock.sleep,
        budget=_idle_budget(),
    )
    assert (result.verdict, result.polls, result.reasons) == ("red", 3, ("test=never reported",))


def test_grace_for_gives_a_check_its_own_grace_over_the_common_one() -> None:
    # A job behind `needs:` registers late: its own grace (the train derives it from history)
    # waits for it where the common grace would call it never reported.
    fake, clock = fake_forge(), Clock()
    fake.set_runs(SHA, [_run("success", 1, "other")])

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 5:
            fake.set_runs(SHA, [_run("success", 1, "other"), _run("success", 2, "late")])

    rules = [RequiredContext(context="late"), RequiredContext(context="other")]

    def wait(sleep: Callable[[float], None]) -> CiWaitResult:
        return ci_wait(
            forge_port(fake.wire),
            REPO,
            SHA,
            rules=rules,
            grace=20,
            grace_for={"late": 100},
            sleep=sleep,
            clock=lambda: clock.now,
            budget=_idle_budget(),
            timeout=600,
            interval=10,
        )

    result = wait(sleep)
    assert (result.verdict, result.polls) == ("green", 6)
    fake.set_runs(SHA, [_run("success", 1, "other")])
    never = wait(clock.sleep)
    assert (never.verdict, never.polls, never.reasons) == ("red", 11, ("late=never reported",))


def test_nothing_reported_at_all_after_the_grace_is_red() -> None:
    fake, clock = fake_forge(), Clock()
    result = ci_wait(
        forge_port(fake.wire),
        REPO,
        SHA,
        grace=0,
        timeout=600,
        interval=10,
        clock=lambda: clock.now,
        sleep=clock.sleep,
        budget=_idle_budget(),
    )
    assert (result.verdict, result.polls, result.reasons) == ("red", 1, ("CI=never reported",))


def test_the_pr_form_ends_moved_when_the_head_moves(open_pr: OpenPr) -> None:
    fake, clock = fake_forge(), Clock()
    fake.add_pr(REPO, open_pr(SHA))
    fake.set_runs(SHA, [_run(None)])
    new = "6" * 40

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        fake.update_pr(REPO, 1, head_sha=new)

    result = ci_wait_pr(
        forge_port(fake.wire),
        REPO,
        1,
        timeout=600,
        interval=10,
        clock=lambda: clock.now,
        sleep=sleep,
        budget=_idle_budget(),
    )
    assert (result.verdict, result.polls, result.sha, result.moved_to) == ("moved", 2, SHA, new)


def test_the_pr_form_with_required_counts_only_the_bases_required_checks(
    open_pr: OpenPr,
) -> None:
    from forge_automation import RequiredChecks

    fake, clock = fake_forge(), Clock()
    fake.add_pr(REPO, open_pr(SHA))
    fake.set_rulesets(REPO, "main", RequiredChecks(contexts=(RequiredContext(context="test"),)))
    fake.set_runs(SHA, [_run("success", 1, "test"), _run("failure", 2, "optional")])
    kwargs = {"clock": lambda: clock.now, "sleep": clock.sleep, "budget": _idle_budget()}
    result = ci_wait_pr(forge_port(fake.wire), REPO, 1, required=True, **kwargs)  # type: ignore[arg-type]
    assert (result.verdict, result.reasons) == ("green", ("test=success",))
    everything = ci_wait_pr(forge_port(fake.wire), REPO, 1, **kwargs)  # type: ignore[arg-type]
    assert everything.verdict == "red"
    fake.set_rulesets(REPO, "main", RequiredChecks())
    with pytest.raises(ForgeInputError, match="requires no checks"):
        ci_wait_pr(forge_port(fake.wire), REPO, 1, required=True, **kwargs)  # type: ignore[arg-type]
