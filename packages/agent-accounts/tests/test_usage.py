from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from agent_accounts import KNOWN_WINDOWS, parse_usage_reading, usage_from_oauth_response


def reading(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "session_id": "usage-poll",
        "written_at": 1_700_000_000,
        "rate_limits": {"five_hour": {"used_percentage": 23, "resets_at": 1_700_003_600}},
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not ...}


class TestParse:
    def test_valid_reading_round_trips(self) -> None:
        r = reading(source="oauth-usage", account="work")
        assert parse_usage_reading(r) == r

    def test_unknown_keys_dropped(self) -> None:
        r = reading(extra=1)
        r["rate_limits"]["five_hour"]["other"] = 2
        parsed = parse_usage_reading(r)
        assert parsed is not None
        assert "extra" not in parsed
        assert parsed["rate_limits"]["five_hour"] == {
            "used_percentage": 23,
            "resets_at": 1_700_003_600,
        }

    def test_new_window_name_parses(self) -> None:
        r = reading(rate_limits={"fourteen_day_future": {"used_percentage": 1}})
        assert parse_usage_reading(r) is not None

    @pytest.mark.parametrize(
        "bad",
        [
            None,
            [],
            reading(session_id=...),
            reading(session_id=5),
            reading(session_id=""),
            reading(written_at=...),
            reading(written_at="1"),
            reading(written_at=True),
            reading(written_at=float("nan")),
            reading(rate_limits=...),
            reading(rate_limits=[]),
            reading(rate_limits={"five_hour": {"used_percentage": 101}}),
            reading(rate_limits={"five_hour": {"used_percentage": -1}}),
            reading(rate_limits={"five_hour": {"used_percentage": "5"}}),
            reading(rate_limits={"five_hour": {}}),
            reading(rate_limits={"five_hour": {"used_percentage": 5, "resets_at": "x"}}),
            reading(rate_limits={"Five Hour": {"used_percentage": 5}}),
            reading(source=3),
            reading(account=""),
        ],
    )
    def test_invalid_is_none(self, bad: object) -> None:
        assert parse_usage_reading(bad) is None

    def test_resets_at_null_is_omitted(self) -> None:
        parsed = parse_usage_reading(
            reading(rate_limits={"x": {"used_percentage": 1, "resets_at": None}})
        )
        assert parsed is not None
        assert parsed["rate_limits"]["x"] == {"used_percentage": 1}


class Throwing(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


class TestFromOAuth:
    BODY: dict[str, Any] = {
        "five_hour": {"utilization": 23.0, "resets_at": "2026-01-01T05:00:00.123+00:00"},
        "seven_day": {"utilization": 41.5, "resets_at": "2026-01-07T00:00:00Z"},
        "seven_day_opus": None,
        "extra_usage": {"is_enabled": False, "monthly_limit": None},
        "Weird-Key": {"utilization": 1, "resets_at": None},
    }

    def test_rules_1_to_4(self) -> None:
        r = usage_from_oauth_response(self.BODY, written_at=1_700_000_000, account="work")
        assert r == {
            "session_id": "usage-poll",
            "written_at": 1_700_000_000,
            "source": "oauth-usage",
            "account": "work",
            "rate_limits": {
                "five_hour": {"used_percentage": 23, "resets_at": 1_767_243_600.123},
                "seven_day": {"used_percentage": 41.5, "resets_at": 1_767_744_000},
            },
        }
        assert parse_usage_reading(r) == r

    def test_unparseable_reset_is_omitted(self) -> None:
        r = usage_from_oauth_response(
            {"five_hour": {"utilization": 5, "resets_at": "next tuesday"}}, written_at=1
        )
        assert r is not None
        assert r["rate_limits"]["five_hour"] == {"used_percentage": 5}

    def test_null_reset_is_omitted(self) -> None:
        r = usage_from_oauth_response(
            {"five_hour": {"utilization": 5, "resets_at": None}}, written_at=1
        )
        assert r is not None
        assert "resets_at" not in r["rate_limits"]["five_hour"]

    @pytest.mark.parametrize(
        "body",
        [
            {"error": {"type": "authentication_error", "message": "bad"}},
            {},
            None,
            [],
            "text",
            {"five_hour": None},
            {"five_hour": {"utilization": "5", "resets_at": None}},
            {"five_hour": {"utilization": True, "resets_at": None}},
            {"five_hour": {"utilization": 5, "resets_at": 5}},
            Throwing(),
        ],
    )
    def test_no_window_is_none(self, body: object) -> None:
        assert usage_from_oauth_response(body, written_at=1) is None

    def test_bad_written_at_is_none(self) -> None:
        assert usage_from_oauth_response(self.BODY, written_at=float("nan")) is None

    def test_account_left_out_when_redaction_would_change_it(self) -> None:
        r = usage_from_oauth_response(self.BODY, written_at=1, account="x" * 40)
        assert r is not None
        assert "account" not in r

    def test_over_limit_is_capped(self) -> None:
        r = usage_from_oauth_response(
            {"five_hour": {"utilization": 130, "resets_at": None}}, written_at=1
        )
        assert r is not None
        assert r["rate_limits"]["five_hour"]["used_percentage"] == 100


def test_known_windows() -> None:
    assert KNOWN_WINDOWS == (
        "five_hour",
        "seven_day",
        "seven_day_opus",
        "seven_day_sonnet",
        "seven_day_oauth_apps",
    )
