"""Pace and projection of a usage window, and the best account now: the pure core's tables."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_accounts import (
    BestCandidate,
    BestChoice,
    LoginExpired,
    LoginMissing,
    LoginPresent,
    LoginRefused,
    LoginState,
    NoBest,
    RateWindow,
    UsageReading,
    WindowPace,
    choose_best,
    reading_pace,
    window_pace,
)

H = 3600
WEEK = 7 * 24 * H
NOW = 1_800_000_000.0
# A five-hour window that began two hours ago (40% of it elapsed) and one week-long window that
# began one day ago (1/7 elapsed).
FIVE_RESET = NOW + 3 * H
WEEK_RESET = NOW + 6 * 24 * H


def win(used: float, resets: float | None = None) -> RateWindow:
    window: RateWindow = {"used_percentage": used}
    if resets is not None:
        window["resets_at"] = resets
    return window


# (name, window, now) -> (elapsed %, projected_full_at)
PACE_TABLE: list[tuple[str, str, RateWindow, float, float | None, float | None]] = [
    # 20% used in 40% of the time: 100% at 200% of the window, after the reset: none.
    ("under pace", "five_hour", win(20, FIVE_RESET), NOW, 40.0, None),
    # 80% used in 40%: 100% at 50% of the window, i.e. 2.5 h after its start.
    ("over pace", "five_hour", win(80, FIVE_RESET), NOW, 40.0, FIVE_RESET - 5 * H + 2.5 * H),
    # Exactly on pace reaches 100% at the reset itself.
    ("on pace", "five_hour", win(40, FIVE_RESET), NOW, 40.0, FIVE_RESET),
    ("0% used", "five_hour", win(0, FIVE_RESET), NOW, 40.0, None),
    ("100% used", "five_hour", win(100, FIVE_RESET), NOW, 40.0, NOW),
    # Elapsed 0: the window starts now; no pace yet, even with use.
    ("elapsed 0", "five_hour", win(10, NOW + 5 * H), NOW, 0.0, None),
    # A reset further away than the window's length: clamped to 0 elapsed.
    ("before start", "five_hour", win(10, NOW + 6 * H), NOW, 0.0, None),
    # Past the reset: the whole window elapsed and nothing is projected (it has started again).
    ("past reset", "five_hour", win(90, NOW - 60), NOW, 100.0, None),
    ("at reset", "five_hour", win(100, NOW), NOW, 100.0, None),
    ("resets_at null", "five_hour", win(50), NOW, None, None),
    ("unknown window", "ten_minute", win(50, FIVE_RESET), NOW, None, None),
    # Weekly windows, the per-model ones included, are 7 days long.
    ("seven_day", "seven_day", win(70, WEEK_RESET), NOW, 100 / 7, NOW + 24 * H * 3 / 7),
    ("opus", "seven_day_opus", win(7, WEEK_RESET), NOW, 100 / 7, None),
    ("sonnet", "seven_day_sonnet", win(50, WEEK_RESET), NOW, 100 / 7, NOW - 24 * H + 2 * 24 * H),
]


@pytest.mark.parametrize(
    ("name", "window", "now", "elapsed", "projected"),
    [row[1:] for row in PACE_TABLE],
    ids=[row[0] for row in PACE_TABLE],
)
def test_window_pace_table(
    name: str, window: RateWindow, now: float, elapsed: float | None, projected: float | None
) -> None:
    pace = window_pace(name, window, now)
    assert pace.window == name
    assert pace.used_percentage == window["used_percentage"]
    assert pace.resets_at == window.get("resets_at")
    if elapsed is None:
        assert pace.elapsed_percentage is None
    else:
        assert pace.elapsed_percentage == pytest.approx(elapsed)
    if projected is None:
        assert pace.projected_full_at is None
    else:
        assert pace.projected_full_at == pytest.approx(projected)
    if pace.projected_full_at is not None and pace.resets_at is not None:
        assert now <= pace.projected_full_at <= pace.resets_at


@pytest.mark.parametrize("now", [math.nan, math.inf, -math.inf])
def test_window_pace_refuses_a_non_finite_now(now: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        window_pace("five_hour", win(1, FIVE_RESET), now)


def test_reading_pace_covers_every_window_and_has_a_json_form() -> None:
    reading: UsageReading = {
        "session_id": "usage-poll",
        "written_at": NOW,
        "rate_limits": {
            "five_hour": win(80, FIVE_RESET),
            "seven_day_opus": win(7, WEEK_RESET),
            "extra": win(1),
        },
    }
    paces = reading_pace(reading, NOW)
    assert list(paces) == ["five_hour", "seven_day_opus", "extra"]
    assert paces["five_hour"].to_json() == {
        "used_percentage": 80,
        "elapsed_percentage": 40.0,
        "resets_at": FIVE_RESET,
        "projected_full_at": NOW + 0.5 * H,
        "forecast": None,  # no history given
    }
    assert paces["seven_day_opus"].to_json()["elapsed_percentage"] == 14.29
    assert paces["extra"] == WindowPace(
        window="extra",
        used_percentage=1,
        elapsed_percentage=None,
        resets_at=None,
        projected_full_at=None,
    )


# ---- the best account now ------------------------------------------------------------------

NOW_MS = NOW * 1000
PRESENT = LoginPresent(expires_at_ms=int(NOW_MS) + 3_600_000, can_refresh=True)
REFRESHABLE = LoginExpired(expires_at_ms=int(NOW_MS) - 1, can_refresh=True)
EXPIRED = LoginExpired(expires_at_ms=int(NOW_MS) - 1, can_refresh=False)
MISSING = LoginMissing()
REFUSED = LoginRefused(reason="mode-too-wide")


def reading(age: float = 30, **windows: Any) -> UsageReading:
    limits: dict[str, RateWindow] = {}
    for name, spec in windows.items():
        used, resets = spec if isinstance(spec, tuple) else (spec, None)
        limits[name] = win(used, resets)
    return {"session_id": "usage-poll", "written_at": NOW - age, "rate_limits": limits}


def cand(label: str, login: LoginState | None, usage: UsageReading | None) -> BestCandidate:
    return BestCandidate(label=label, config_dir=f"/p/{label}", login=login, reading=usage)


FRESH = reading(five_hour=(50, FIVE_RESET), seven_day=(20, WEEK_RESET))

# (id, candidates, windows) -> chosen label, or the rejections
BEST_TABLE: list[tuple[str, list[BestCandidate], tuple[str, ...], str | list[tuple[str, str]]]] = [
    (
        "most headroom over both windows wins",
        [
            cand("a", PRESENT, reading(five_hour=(10, FIVE_RESET), seven_day=(90, WEEK_RESET))),
            cand("b", PRESENT, reading(five_hour=(60, FIVE_RESET), seven_day=(30, WEEK_RESET))),
        ],
        ("five_hour", "seven_day"),
        "b",
    ),
    (
        "one window named",
        [
            cand("a", PRESENT, reading(five_hour=(10, FIVE_RESET), seven_day=(90, WEEK_RESET))),
            cand("b", PRESENT, reading(five_hour=(60, FIVE_RESET), seven_day=(30, WEEK_RESET))),
        ],
        ("five_hour",),
        "a",
    ),
    (
        "a tie goes to the earlier reset",
        [
            cand("a", PRESENT, reading(five_hour=(50, FIVE_RESET + 60), seven_day=10)),
            cand("b", PRESENT, reading(five_hour=(50, FIVE_RESET), seven_day=10)),
            cand("c", PRESENT, reading(five_hour=50, seven_day=10)),
        ],
        ("five_hour", "seven_day"),
        "b",
    ),
    (
        "a tie with equal resets goes to the label",
        [cand("z", PRESENT, FRESH), cand("m", PRESENT, FRESH)],
        ("five_hour", "seven_day"),
        "m",
    ),
    (
        "a window past its reset counts as unused",
        [
            cand("a", PRESENT, reading(five_hour=(99, NOW - 1), seven_day=(5, WEEK_RESET))),
            cand("b", PRESENT, reading(five_hour=(10, FIVE_RESET), seven_day=(5, WEEK_RESET))),
        ],
        ("five_hour", "seven_day"),
        "a",
    ),
    (
        "an expired but refreshable login qualifies",
        [
            cand("a", REFRESHABLE, reading(five_hour=5, seven_day=5)),
            cand("b", PRESENT, FRESH),
        ],
        ("five_hour", "seven_day"),
        "a",
    ),
    (
        "an expired login that cannot refresh does not",
        [cand("a", EXPIRED, reading(five_hour=5, seven_day=5)), cand("b", PRESENT, FRESH)],
        ("five_hour", "seven_day"),
        "b",
    ),
    (
        "a stale reading does not",
        [
            cand("a", PRESENT, reading(age=601, five_hour=5, seven_day=5)),
            cand("b", PRESENT, reading(age=600, five_hour=50, seven_day=50)),
        ],
        ("five_hour", "seven_day"),
        "b",
    ),
    (
        "per-model window",
        [
            cand("a", PRESENT, reading(five_hour=5, seven_day=5, seven_day_opus=95)),
            cand("b", PRESENT, reading(five_hour=50, seven_day=50, seven_day_opus=10)),
        ],
        ("seven_day_opus",),
        "b",
    ),
    (
        "none qualifies: each says why",
        [
            cand("expired", EXPIRED, FRESH),
            cand("missing", MISSING, FRESH),
            cand("refused", REFUSED, FRESH),
            cand("unreadable", None, FRESH),
            cand("noreading", PRESENT, None),
            cand("stale", REFRESHABLE, reading(age=3600, five_hour=1, seven_day=1)),
            cand("nowindow", PRESENT, reading(five_hour=1)),
        ],
        ("five_hour", "seven_day"),
        [
            ("expired", "login expired"),
            ("missing", "login missing"),
            ("refused", "login refused"),
            ("unreadable", "login unreadable"),
            ("noreading", "no reading"),
            ("stale", "reading stale"),
            ("nowindow", "window missing"),
        ],
    ),
    ("no profiles", [], ("five_hour",), []),
]


@pytest.mark.parametrize(
    ("candidates", "windows", "expected"),
    [row[1:] for row in BEST_TABLE],
    ids=[row[0] for row in BEST_TABLE],
)
def test_choose_best_table(
    candidates: list[BestCandidate],
    windows: tuple[str, ...],
    expected: str | list[tuple[str, str]],
) -> None:
    result = choose_best(candidates, NOW, windows=windows)
    if isinstance(expected, str):
        assert isinstance(result, BestChoice), result
        assert (result.label, result.config_dir) == (expected, f"/p/{expected}")
        assert result.windows == windows
    else:
        assert result == NoBest(rejected=tuple(expected))  # type: ignore[arg-type]


def test_choose_best_reports_headroom_and_the_binding_reset() -> None:
    result = choose_best([cand("a", PRESENT, FRESH)], NOW)
    assert result == BestChoice(
        label="a",
        config_dir="/p/a",
        headroom_percentage=50.0,
        resets_at=FIVE_RESET,
        windows=("five_hour", "seven_day"),
    )
    unknown = choose_best([cand("a", PRESENT, reading(five_hour=50, seven_day=5))], NOW)
    assert isinstance(unknown, BestChoice)
    assert unknown.resets_at is None


def test_choose_best_refuses_no_window_and_a_bad_now() -> None:
    with pytest.raises(ValueError, match="at least one window"):
        choose_best([], NOW, windows=())
    with pytest.raises(ValueError, match="finite"):
        choose_best([], math.nan)


# ---- room: `full_at` (what `account-cli run --switch-at` passes) ------------------------------


def test_a_full_account_is_never_best_and_free_at_says_when_one_has_room() -> None:
    full = cand("full", PRESENT, reading(five_hour=(100, FIVE_RESET), seven_day=(20, WEEK_RESET)))
    # Two windows past the line: room only once both have reset.
    both = cand("both", PRESENT, reading(five_hour=(95, NOW + H), seven_day=(99, NOW + 2 * H)))
    assert choose_best([full, both], NOW) == choose_best([both], NOW)
    result = choose_best([full, both], NOW, full_at=90)
    assert result == NoBest(
        rejected=(("full", "no room"), ("both", "no room")), free_at=NOW + 2 * H
    )
    unknown = cand("unknown", PRESENT, reading(five_hour=100, seven_day=(1, WEEK_RESET)))
    assert choose_best([unknown], NOW) == NoBest(rejected=(("unknown", "no room"),), free_at=None)
    assert choose_best([cand("x", MISSING, FRESH)], NOW).free_at is None  # type: ignore[union-attr]


@pytest.mark.parametrize("full_at", [0, -1, 100.5, math.nan, math.inf])
def test_full_at_must_be_a_percentage(full_at: float) -> None:
    with pytest.raises(ValueError, match="full_at"):
        choose_best([], NOW, full_at=full_at)


@given(
    five=st.tuples(st.floats(0, 100), st.floats(-H, 5 * H)),
    week=st.tuples(st.floats(0, 100), st.floats(-H, WEEK)),
    full_at=st.sampled_from([50.0, 90.0, 100.0]),
    back=st.floats(1, 5 * H),
)
@settings(max_examples=300, deadline=None, database=None)
def test_free_at_is_when_room_returns_with_the_clock_moved_both_ways(
    five: tuple[float, float], week: tuple[float, float], full_at: float, back: float
) -> None:
    usage = reading(five_hour=(five[0], NOW + five[1]), seven_day=(week[0], NOW + week[1]))
    usage["written_at"] = NOW - 30
    account = [cand("a", PRESENT, usage)]
    result = choose_best(account, NOW, full_at=full_at, max_age_s=math.inf)
    if isinstance(result, BestChoice):
        # Room now; and later, once windows reset, never less room.
        later = choose_best(account, NOW + back, full_at=full_at, max_age_s=math.inf)
        assert isinstance(later, BestChoice)
        assert later.headroom_percentage >= result.headroom_percentage
        return
    assert result.rejected == (("a", "no room"),)
    assert result.free_at is not None
    assert result.free_at > NOW
    # At free_at the account has room; a moment before it, moving the clock back, it has not.
    assert isinstance(
        choose_best(account, result.free_at, full_at=full_at, max_age_s=math.inf), BestChoice
    )
    before = max(NOW, result.free_at - back)
    if before < result.free_at:
        assert isinstance(choose_best(account, before, full_at=full_at, max_age_s=math.inf), NoBest)
