"""The status line's countdown (`1h48m`, `3d2h`): never less than is left, never a unit more.

White-box: `countdown` is the formatter behind `account-cli statusline` and text `status`; the
subprocess tests in test_humanline.py show it in place, these hold it over every duration.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agent_accounts.cli._output import countdown

SHAPE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?")
DAY = 86400.0
durations = st.floats(min_value=-1e6, max_value=1e11, allow_nan=False, allow_infinity=False)


def seconds_of(text: str) -> tuple[int, int]:
    """The seconds a countdown stands for, and the unit it was rounded to."""
    match = SHAPE.fullmatch(text)
    assert match is not None, text
    assert text, text
    days, hours, minutes = (int(part) if part else None for part in match.groups())
    if days is not None:
        assert minutes is None, text  # from a day on, hours are the finest unit
        assert hours is None or 0 < hours < 24, text
        return days * 86400 + (hours or 0) * 3600, 3600
    if hours is not None:
        assert 0 < hours < 24, text
        assert minutes is None or 0 < minutes < 60, text
        return hours * 3600 + (minutes or 0) * 60, 60
    assert minutes is not None, text
    assert minutes < 60, text
    return minutes * 60, 60


@given(durations)
@example(0.0)
@example(0.001)
@example(5e-324)
@example(59.999)
@example(60.0)
@example(3600.0)
@example(DAY - 30)
@example(DAY)
@example(DAY + 0.5)
def test_a_countdown_rounds_up_to_the_unit_it_shows(seconds: float) -> None:
    text = countdown(seconds)
    shown, unit = seconds_of(text)
    if seconds <= 0:
        assert text == "0m"
        return
    # Exact arithmetic: in floats, 60 - 1e-132 is 60.
    assert Fraction(seconds) <= shown < Fraction(seconds) + unit
    assert shown > 0  # time left never reads as none


@given(durations, durations)
def test_a_countdown_never_grows_as_time_passes(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert seconds_of(countdown(low))[0] <= seconds_of(countdown(high))[0]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1, "1m"),
        (45 * 60, "45m"),
        (59 * 60 + 1, "1h"),
        (3600 + 47 * 60 + 30, "1h48m"),
        (2 * 3600, "2h"),
        (DAY - 61, "23h59m"),
        (DAY - 1, "1d"),
        (3 * DAY + 3600 + 1800, "3d2h"),
        (7 * DAY, "7d"),
        (-5, "0m"),
    ],
)
def test_known_countdowns(seconds: float, text: str) -> None:
    assert countdown(seconds) == text
