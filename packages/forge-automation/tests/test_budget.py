"""The rate budget paces by the forge's headers and never drops a call."""

from __future__ import annotations

import pytest

from forge_automation import RateBudget, shared_rate_budget


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _budget(clock: Clock, **kwargs: float) -> RateBudget:
    return RateBudget(now=lambda: clock.now, sleep=clock.sleep, **kwargs)  # type: ignore[arg-type]


def test_no_headers_no_delay() -> None:
    clock = Clock()
    budget = _budget(clock)
    assert budget.delay() == 0
    assert budget.pace() == 0
    assert clock.slept == []
    budget.observe({"Content-Type": "application/json"})
    assert budget.remaining is None


def test_plenty_left_no_delay() -> None:
    clock = Clock()
    budget = _budget(clock)
    budget.observe({"X-RateLimit-Remaining": "4000", "X-RateLimit-Reset": str(clock.now + 3600)})
    assert budget.delay() == 0
    assert budget.remaining == 4000


def test_low_budget_spreads_the_rest_over_the_window() -> None:
    clock = Clock()
    budget = _budget(clock, reserve=100, max_delay=1000)
    budget.observe({"x-ratelimit-remaining": "50", "x-ratelimit-reset": str(clock.now + 500)})
    assert budget.delay() == pytest.approx(10.0)
    assert budget.pace() == pytest.approx(10.0)
    assert clock.slept == [pytest.approx(10.0)]


def test_exhausted_budget_waits_for_the_reset_capped() -> None:
    clock = Clock()
    budget = _budget(clock, max_delay=60)
    budget.observe({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(clock.now + 30)})
    assert budget.delay() == pytest.approx(30.0)
    budget.observe({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(clock.now + 3000)})
    assert budget.delay() == 60


def test_a_past_reset_means_no_wait() -> None:
    clock = Clock()
    budget = _budget(clock)
    budget.observe({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(clock.now - 1)})
    assert budget.delay() == 0


def test_garbage_headers_are_ignored() -> None:
    clock = Clock()
    budget = _budget(clock)
    budget.observe({"X-RateLimit-Remaining": "lots", "X-RateLimit-Reset": "soon"})
    assert budget.remaining is None
    assert budget.delay() == 0


def test_shared_budget_is_one_per_process() -> None:
    assert shared_rate_budget() is shared_rate_budget()


def test_core_and_graphql_are_kept_apart() -> None:
    clock = Clock()
    budget = _budget(clock, reserve=100, max_delay=1000)
    reset = str(clock.now + 500)
    budget.observe({"X-RateLimit-Remaining": "4000", "X-RateLimit-Reset": reset})
    budget.observe(
        {
            "X-RateLimit-Resource": "graphql",
            "X-RateLimit-Remaining": "50",
            "X-RateLimit-Reset": reset,
        }
    )
    # A nearly spent GraphQL budget neither hides nor slows the plentiful REST one.
    assert budget.remaining == budget.remaining_for("core") == 4000
    assert budget.remaining_for("graphql") == 50
    assert budget.delay() == 0
    assert budget.delay("graphql") == pytest.approx(10.0)
    budget.observe({"x-ratelimit-resource": "core", "x-ratelimit-remaining": "0"})
    assert budget.remaining == 4000, "a response without a reset is ignored"
    budget.observe(
        {"x-ratelimit-resource": "core", "x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}
    )
    assert budget.delay() == pytest.approx(500.0)
    assert budget.reset_for("graphql") == budget.reset_at == clock.now + 500
    assert budget.remaining_for("search") is None
