from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from agent_accounts import KNOWN_WINDOWS, parse_usage_reading, usage_from_oauth_response

WRITTEN = 1_700_000_000


def reading(**over: Any) -> dict[str, Any]:
    """A valid reading; `key=...` removes a key."""
    base: dict[str, Any] = {
        "session_id": "usage-poll",
        "written_at": WRITTEN,
        "rate_limits": {"five_hour": {"used_percentage": 23, "resets_at": WRITTEN + 3600}},
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not ...}


def limits(**windows: Any) -> dict[str, Any]:
    return reading(rate_limits=windows)


class Throwing(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


class ThrowingGet(dict[str, Any]):
    def get(self, *args: Any) -> Any:
        raise RuntimeError("boom")


def test_known_windows() -> None:
    assert KNOWN_WINDOWS == (
        "five_hour",
        "seven_day",
        "seven_day_opus",
        "seven_day_sonnet",
        "seven_day_oauth_apps",
    )


class TestParse:
    @pytest.mark.parametrize(
        "valid",
        [
            pytest.param(reading(), id="minimal"),
            pytest.param(reading(source="oauth-usage", account="work"), id="all-fields"),
            pytest.param(reading(session_id="a1b2-status-line"), id="status-line-session"),
            pytest.param(reading(written_at=1_700_000_000.25), id="float-written-at"),
            pytest.param(reading(rate_limits={}), id="no-windows"),
            pytest.param(limits(five_hour={"used_percentage": 0}), id="zero-percent"),
            pytest.param(limits(five_hour={"used_percentage": 100}), id="hundred-percent"),
            pytest.param(limits(five_hour={"used_percentage": 41.5}), id="fractional"),
            pytest.param(
                limits(**{name: {"used_percentage": 1} for name in KNOWN_WINDOWS}),
                id="every-known-window",
            ),
            pytest.param(
                limits(fourteen_day_future={"used_percentage": 1, "resets_at": 5}),
                id="new-window-name-parses-without-a-release",
            ),
        ],
    )
    def test_valid_reading_round_trips(self, valid: dict[str, Any]) -> None:
        parsed = parse_usage_reading(valid)
        assert parsed == valid
        assert parse_usage_reading(json.loads(json.dumps(parsed))) == valid

    def test_unknown_keys_dropped_at_every_level(self) -> None:
        r = reading(extra=1, token="sk-ant-oat01-x")
        r["rate_limits"]["five_hour"]["other"] = 2
        parsed = parse_usage_reading(r)
        assert parsed == reading()

    def test_result_is_a_fresh_copy(self) -> None:
        r = reading()
        before = copy.deepcopy(r)
        parsed = parse_usage_reading(r)
        assert parsed is not None
        parsed["rate_limits"]["five_hour"]["used_percentage"] = 99
        parsed["rate_limits"]["new"] = {"used_percentage": 1}
        assert r == before

    def test_resets_at_null_is_omitted(self) -> None:
        parsed = parse_usage_reading(limits(x={"used_percentage": 1, "resets_at": None}))
        assert parsed is not None
        assert parsed["rate_limits"]["x"] == {"used_percentage": 1}

    @pytest.mark.parametrize(
        "bad",
        [
            pytest.param(None, id="none"),
            pytest.param([], id="list"),
            pytest.param("usage-poll", id="str"),
            pytest.param(Throwing(), id="throwing-mapping"),
            pytest.param(ThrowingGet(reading()), id="throwing-get"),
            pytest.param(reading(session_id=...), id="session-absent"),
            pytest.param(reading(session_id=5), id="session-int"),
            pytest.param(reading(session_id=""), id="session-empty"),
            pytest.param(reading(session_id="s" * 257), id="session-too-long"),
            pytest.param(reading(written_at=...), id="written-absent"),
            pytest.param(reading(written_at=None), id="written-null"),
            pytest.param(reading(written_at="1"), id="written-str"),
            pytest.param(reading(written_at=True), id="written-bool"),
            pytest.param(reading(written_at=math.nan), id="written-nan"),
            pytest.param(reading(written_at=math.inf), id="written-inf"),
            pytest.param(reading(rate_limits=...), id="limits-absent"),
            pytest.param(reading(rate_limits=None), id="limits-null"),
            pytest.param(reading(rate_limits=[]), id="limits-list"),
            pytest.param(reading(rate_limits={"five_hour": Throwing()}), id="throwing-window"),
            pytest.param(limits(five_hour={"used_percentage": 101}), id="over-100"),
            pytest.param(limits(five_hour={"used_percentage": 100.001}), id="just-over-100"),
            pytest.param(limits(five_hour={"used_percentage": -1}), id="negative"),
            pytest.param(limits(five_hour={"used_percentage": -0.001}), id="just-negative"),
            pytest.param(limits(five_hour={"used_percentage": "5"}), id="percent-str"),
            pytest.param(limits(five_hour={"used_percentage": True}), id="percent-bool"),
            pytest.param(limits(five_hour={"used_percentage": math.nan}), id="percent-nan"),
            pytest.param(limits(five_hour={"used_percentage": None}), id="percent-null"),
            pytest.param(limits(five_hour={}), id="percent-absent"),
            pytest.param(limits(five_hour=None), id="window-null"),
            pytest.param(limits(five_hour=23), id="window-number"),
            pytest.param(
                limits(five_hour={"used_percentage": 5, "resets_at": "x"}), id="resets-str"
            ),
            pytest.param(
                limits(five_hour={"used_percentage": 5, "resets_at": True}), id="resets-bool"
            ),
            pytest.param(
                limits(five_hour={"used_percentage": 5, "resets_at": math.inf}), id="resets-inf"
            ),
            pytest.param(limits(**{"Five Hour": {"used_percentage": 5}}), id="name-not-snake"),
            pytest.param(limits(**{"five-hour": {"used_percentage": 5}}), id="name-hyphen"),
            pytest.param(limits(**{"": {"used_percentage": 5}}), id="name-empty"),
            pytest.param(limits(**{"a" * 65: {"used_percentage": 5}}), id="name-too-long"),
            pytest.param(reading(rate_limits={5: {"used_percentage": 5}}), id="name-int"),
            pytest.param(reading(source=3), id="source-int"),
            pytest.param(reading(source=""), id="source-empty"),
            pytest.param(reading(account=""), id="account-empty"),
            pytest.param(reading(account=None), id="account-null"),
            pytest.param(reading(account="a" * 257), id="account-too-long"),
        ],
    )
    def test_invalid_is_none(self, bad: object) -> None:
        assert parse_usage_reading(bad) is None


class TestFromOAuth:
    BODY: dict[str, Any] = {
        "five_hour": {"utilization": 23.0, "resets_at": "2026-01-01T05:00:00.123+00:00"},
        "seven_day": {"utilization": 41.5, "resets_at": "2026-01-07T00:00:00Z"},
        "seven_day_opus": None,
        "seven_day_oauth_apps": None,
        "extra_usage": {"is_enabled": False, "monthly_limit": None, "used_credits": None},
        "Weird-Key": {"utilization": 1, "resets_at": None},
    }

    def test_documented_body(self) -> None:
        r = usage_from_oauth_response(self.BODY, written_at=WRITTEN, account="work")
        assert r == {
            "session_id": "usage-poll",
            "written_at": WRITTEN,
            "source": "oauth-usage",
            "account": "work",
            "rate_limits": {
                "five_hour": {"used_percentage": 23, "resets_at": 1_767_243_600.123},
                "seven_day": {"used_percentage": 41.5, "resets_at": 1_767_744_000},
            },
        }
        assert parse_usage_reading(r) == r
        assert list(r["rate_limits"]) == ["five_hour", "seven_day"]  # body order kept

    # rule 1: utilization -> used_percentage; ISO resets_at -> epoch seconds
    @pytest.mark.parametrize(
        ("iso", "epoch"),
        [
            ("2026-01-01T00:00:00Z", 1_767_225_600),
            ("2026-01-01t00:00:00z", 1_767_225_600),  # RFC 3339 allows lower case
            ("2026-01-01T00:00:00+00:00", 1_767_225_600),
            ("2026-01-01T05:30:00+05:30", 1_767_225_600),
            ("2025-12-31T16:00:00-08:00", 1_767_225_600),
            ("2026-01-01T00:00:00.500000+00:00", 1_767_225_600.5),
            ("2026-01-01 00:00:00+00:00", 1_767_225_600),
            ("2026-01-01T00:00:00", 1_767_225_600),  # no offset: read as UTC, no local zone
            ("2026-01-01", 1_767_225_600),
            ("1970-01-01T00:00:00Z", 0),
        ],
    )
    def test_rule_1_resets_at_iso_to_epoch_seconds(self, iso: str, epoch: float) -> None:
        r = usage_from_oauth_response(
            {"five_hour": {"utilization": 7, "resets_at": iso}}, written_at=WRITTEN
        )
        assert r is not None
        assert r["rate_limits"]["five_hour"] == {"used_percentage": 7, "resets_at": epoch}

    @pytest.mark.parametrize(
        ("utilization", "used"),
        [(0, 0), (0.0, 0), (23.0, 23), (41.5, 41.5), (100, 100), (130, 100), (-5, 0)],
    )
    def test_rule_1_utilization_to_used_percentage(self, utilization: float, used: float) -> None:
        r = usage_from_oauth_response(
            {"five_hour": {"utilization": utilization, "resets_at": None}}, written_at=WRITTEN
        )
        assert r is not None
        assert r["rate_limits"]["five_hour"] == {"used_percentage": used}
        assert parse_usage_reading(r) == r  # capped into 0..100, so it stays a valid reading

    # rule 2: null window, non-window key, non-snake-case key dropped
    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("seven_day_opus", None),
            ("extra_usage", {"is_enabled": True, "monthly_limit": 50}),
            # the endpoint's extra_usage once it is on: a `utilization`, no `resets_at`
            (
                "extra_usage",
                {
                    "is_enabled": True,
                    "monthly_limit": 5000,
                    "used_credits": 12.5,
                    "utilization": 25,
                },
            ),
            ("seven_day", {"utilization": 5}),  # a window holds both keys (AMENDMENTS)
            ("seven_day", {"utilization": "5", "resets_at": None}),
            ("seven_day", {"utilization": True, "resets_at": None}),
            ("seven_day", {"utilization": math.nan, "resets_at": None}),
            ("seven_day", {"utilization": None, "resets_at": None}),
            ("seven_day", {"resets_at": None}),
            ("seven_day", {"utilization": 5, "resets_at": 1_767_225_600}),
            ("seven_day", {"utilization": 5, "resets_at": ["x"]}),
            ("seven_day", [5]),
            ("seven_day", 5),
            ("Seven_Day", {"utilization": 5, "resets_at": None}),
            ("seven-day", {"utilization": 5, "resets_at": None}),
            ("7day", {"utilization": 5, "resets_at": None}),
            ("_seven", {"utilization": 5, "resets_at": None}),
            ("seven day", {"utilization": 5, "resets_at": None}),
            ("a" * 65, {"utilization": 5, "resets_at": None}),
            ("", {"utilization": 5, "resets_at": None}),
        ],
    )
    def test_rule_2_drops(self, key: str, value: object) -> None:
        body = {"five_hour": {"utilization": 1, "resets_at": None}, key: value}
        r = usage_from_oauth_response(body, written_at=WRITTEN)
        assert r is not None
        assert list(r["rate_limits"]) == ["five_hour"]

    def test_rule_2_non_string_key_dropped(self) -> None:
        body: dict[Any, Any] = {5: {"utilization": 1, "resets_at": None}, "x": None}
        assert usage_from_oauth_response(body, written_at=WRITTEN) is None

    def test_rule_2_long_snake_case_name_kept(self) -> None:
        name = "a" * 64
        r = usage_from_oauth_response(
            {name: {"utilization": 1, "resets_at": None}}, written_at=WRITTEN
        )
        assert r is not None
        assert list(r["rate_limits"]) == [name]

    # rule 3: a reset time that does not parse is omitted from the window
    @pytest.mark.parametrize(
        "resets_at",
        [
            None,
            "next tuesday",
            "",
            "2026-13-01T00:00:00Z",
            "2026-01-01T25:00:00Z",
            "2026-01-01T00:00:00+25:00",
            "2026-01-01T00:00:00Z" + " " * 50,  # over 64 characters
            "9" * 100,
        ],
    )
    def test_rule_3_unparseable_reset_is_omitted(self, resets_at: str | None) -> None:
        r = usage_from_oauth_response(
            {"five_hour": {"utilization": 5, "resets_at": resets_at}}, written_at=WRITTEN
        )
        assert r is not None
        assert r["rate_limits"]["five_hour"] == {"used_percentage": 5}

    # rule 4: session_id and source mark the poller's readings
    def test_rule_4_session_and_source(self) -> None:
        r = usage_from_oauth_response(self.BODY, written_at=WRITTEN)
        assert r is not None
        assert r["session_id"] == "usage-poll"
        assert r["source"] == "oauth-usage"
        assert "account" not in r

    # rule 5: no window survives, or a getter throws: None
    @pytest.mark.parametrize(
        "body",
        [
            pytest.param({"error": {"type": "authentication_error", "message": "bad"}}, id="error"),
            pytest.param({}, id="empty"),
            pytest.param(None, id="none"),
            pytest.param([], id="list"),
            pytest.param("text", id="str"),
            pytest.param({"five_hour": None, "seven_day": None}, id="all-null"),
            pytest.param({"extra_usage": {"is_enabled": False}}, id="only-extra"),
            pytest.param(Throwing(), id="throwing-body"),
            pytest.param({"five_hour": Throwing()}, id="throwing-window"),
            pytest.param({"five_hour": ThrowingGet(utilization=1)}, id="throwing-get"),
        ],
    )
    def test_rule_5_no_window_is_none(self, body: object) -> None:
        assert usage_from_oauth_response(body, written_at=WRITTEN) is None

    @pytest.mark.parametrize("written_at", [math.nan, math.inf, True, "1", None])
    def test_bad_written_at_is_none(self, written_at: Any) -> None:
        assert usage_from_oauth_response(self.BODY, written_at=written_at) is None

    @pytest.mark.parametrize(
        "account",
        ["x" * 40, "sk-ant-oat01-abc", "token=abc", "Bearer abc", "", 5, None],
    )
    def test_account_left_out_unless_redaction_leaves_it(self, account: Any) -> None:
        r = usage_from_oauth_response(self.BODY, written_at=WRITTEN, account=account)
        assert r is not None
        assert "account" not in r

    @pytest.mark.parametrize("account", ["work", "default", "team-b", "me.example"])
    def test_plain_account_kept(self, account: str) -> None:
        r = usage_from_oauth_response(self.BODY, written_at=WRITTEN, account=account)
        assert r is not None
        assert r["account"] == account


class AlwaysEqual(str):
    """A str subclass that claims equality with anything and renders as something else."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return "token=sk-ant-oat01-leak"


class LoudInt(int):
    def __repr__(self) -> str:
        return "sk-ant-oat01-leak"


def _exact_types(value: object) -> None:
    """Every value in a reading is an exact built-in type, never a caller's subclass."""
    assert type(value) in (dict, str, int, float), type(value)
    if isinstance(value, dict):
        for key, item in value.items():
            assert type(key) is str
            _exact_types(item)


def test_values_are_copied_to_exact_types() -> None:
    r = reading(session_id=AlwaysEqual("s"), written_at=LoudInt(WRITTEN), account=AlwaysEqual("a"))
    r["rate_limits"] = {AlwaysEqual("five_hour"): {"used_percentage": LoudInt(5)}}
    parsed = parse_usage_reading(r)
    assert parsed is not None
    _exact_types(parsed)
    assert "leak" not in repr(parsed) + json.dumps(parsed)


def test_account_that_claims_equality_is_checked_as_plain_text() -> None:
    sneaky = AlwaysEqual("x" * 40)  # redaction changes it, whatever its __eq__ says
    r = usage_from_oauth_response(
        {AlwaysEqual("five_hour"): {"utilization": LoudInt(5), "resets_at": None}},
        written_at=LoudInt(WRITTEN),
        account=sneaky,
    )
    assert r is not None
    assert "account" not in r
    _exact_types(r)
