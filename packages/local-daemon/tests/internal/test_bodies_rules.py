"""The body rules' invariants: the deadline's shape, the budget's arithmetic, the strict parser."""

from __future__ import annotations

import pytest

from local_daemon._bodies import BODY_TIMEOUT, BodyBudget, body_deadline
from local_daemon._json import NonFiniteNumberError, parse_json


def test_the_deadline_is_five_seconds_or_the_pace_of_a_larger_body() -> None:
    assert body_deadline(0) == BODY_TIMEOUT == 5.0
    assert body_deadline(1024 * 1024) == 8.0  # the 1 MiB cap's worth
    assert body_deadline(8 * 1024 * 1024) == 64.0


def test_the_budget_never_passes_its_total_but_admits_one_large_body_alone() -> None:
    budget = BodyBudget(10)
    assert budget.take(6)
    assert not budget.take(5)
    assert budget.take(4)
    assert budget.in_use == 10
    budget.give(6)
    budget.give(4)
    assert budget.take(25)  # over the total, but nothing else is held
    assert not budget.take(1)
    budget.give(25)
    assert budget.in_use == 0


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("1e400", False),
        ("-1e400", False),
        ("1E+99999", False),
        ("123456.789e400", False),
        ("NaN", True),
        ("-Infinity", True),
    ],
)
def test_non_finite_numbers_are_refused_however_spelt(text: str, literal: bool) -> None:
    with pytest.raises(NonFiniteNumberError) as info:
        parse_json(f'{{"a": [1, {text}]}}'.encode())
    assert info.value.literal is literal
    assert text not in str(info.value)


def test_finite_extremes_and_big_integers_parse() -> None:
    assert parse_json(b"[1.7976931348623157e308, 1e-400, -0.0]") == [
        1.7976931348623157e308,
        0.0,
        -0.0,
    ]
    assert parse_json(bytearray(b"1" + b"0" * 400)) == 10**400
    with pytest.raises(UnicodeError):
        parse_json(b'"\\ud800"')
