"""`poll_phases` and `poll_times`: when `poll --period` polls each profile (pure core)."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_accounts import MIN_POLL_GAP_S, poll_phases, poll_times

BOUNDED = settings(
    max_examples=300, deadline=None, database=None, derandomize=os.environ.get("CI") == "true"
)
keys_st = st.lists(
    st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1, max_size=40),
    unique=True,
    max_size=40,
)
period_st = st.sampled_from([1.0, 2.5, 60.0, 150.0, 600.0])
machine_st = st.sampled_from(["laptop", "desk", "ci-runner-7"])


def circular_gaps(phases: list[float], period: float) -> list[float]:
    ordered = sorted(phases)
    return [
        (ordered[(i + 1) % len(ordered)] - ordered[i]) % period or period
        for i in range(len(ordered))
    ]


@BOUNDED
@given(keys=keys_st, period=period_st, machine=machine_st)
def test_phases_lie_in_the_period_spread_at_least_a_gap_apart(
    keys: list[str], period: float, machine: str
) -> None:
    phases = poll_phases(keys, period, machine=machine)
    assert len(phases) == len(keys)
    assert all(0 <= p < period for p in phases)
    if len(keys) > 1:
        least = min(MIN_POLL_GAP_S, period / len(keys))
        assert min(circular_gaps(phases, period)) >= least * (1 - 1e-9)


@BOUNDED
@given(keys=keys_st, period=period_st, machine=machine_st, data=st.data())
def test_a_phase_is_stable_whatever_the_order_of_the_profiles(
    keys: list[str], period: float, machine: str, data: st.DataObject
) -> None:
    phases = dict(zip(keys, poll_phases(keys, period, machine=machine), strict=True))
    shuffled = data.draw(st.permutations(keys))
    again = dict(zip(shuffled, poll_phases(shuffled, period, machine=machine), strict=True))
    assert again == phases


def test_two_machines_do_not_share_phases() -> None:
    keys = [f"/home/me/.agent-profiles/p{i}" for i in range(3)]
    one = poll_phases(keys, 150.0, machine="laptop")
    two = poll_phases(keys, 150.0, machine="desk")
    assert all(abs(a - b) >= MIN_POLL_GAP_S for a, b in zip(one, two, strict=True))
    # The same machine always gets the same: a restarted timer keeps its phases.
    assert poll_phases(keys, 150.0, machine="laptop") == one


def test_too_many_profiles_for_the_gap_are_spread_evenly() -> None:
    keys = [f"p{i}" for i in range(10)]
    phases = poll_phases(keys, 5.0, machine="m")
    assert sorted(circular_gaps(phases, 5.0)) == pytest.approx([0.5] * 10)


@BOUNDED
@given(
    keys=keys_st.filter(bool),
    period=period_st,
    now=st.floats(-1e10, 1e10, allow_nan=False),
    step=st.floats(-1e6, 1e6, allow_nan=False),
)
def test_times_fall_in_the_next_period_at_their_phase_with_the_clock_moved_either_way(
    keys: list[str], period: float, now: float, step: float
) -> None:
    phases = poll_phases(keys, period, machine="m")
    for at in (now, now + step):  # a clock stepped back or forward between two runs
        times = poll_times(phases, period, at)
        for phase, when in zip(phases, times, strict=True):
            assert at <= when < at + period * (1 + 1e-9) + 1e-6
            offset = (when - phase) % period
            assert min(offset, period - offset) <= 1e-6 * max(1.0, abs(at))


@pytest.mark.parametrize("period", [0, -1, math.nan, math.inf])
def test_a_period_must_be_positive_and_finite(period: float) -> None:
    with pytest.raises(ValueError, match="period"):
        poll_phases(["a"], period, machine="m")


def test_a_gap_and_now_must_be_finite() -> None:
    with pytest.raises(ValueError, match="min_gap"):
        poll_phases(["a"], 10.0, machine="m", min_gap=0)
    with pytest.raises(ValueError, match="now"):
        poll_times([1.0], 10.0, math.nan)
    assert poll_phases([], 10.0, machine="m") == []
