from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from agent_accounts import (
    LoginExpired,
    LoginMissing,
    LoginPresent,
    LoginRefused,
    login_state_from_credentials,
    needs_refresh,
)

NOW = 1_700_000_000_000
CANARY_ACCESS = "sk-ant-oat01-CANARYaccess"
CANARY_REFRESH = "sk-ant-ort01-CANARYrefresh"


def block(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "accessToken": CANARY_ACCESS,
        "refreshToken": CANARY_REFRESH,
        "expiresAt": NOW + 3_600_000,
    }
    base.update(over)
    return {"agentOauth": {k: v for k, v in base.items() if v is not ...}}


class Exploding(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError(CANARY_ACCESS)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError(CANARY_ACCESS)

    def __len__(self) -> int:
        return 1


@pytest.mark.parametrize(
    ("credentials", "expected"),
    [
        (None, LoginMissing()),
        ({}, LoginMissing()),
        ({"agentOauth": None}, LoginMissing()),
        ({"other": 1}, LoginMissing()),
        ([], LoginRefused(reason="malformed")),
        ("text", LoginRefused(reason="malformed")),
        ({"agentOauth": []}, LoginRefused(reason="malformed")),
        (block(accessToken=...), LoginRefused(reason="malformed")),
        (block(accessToken=""), LoginRefused(reason="malformed")),
        (block(accessToken=5), LoginRefused(reason="malformed")),
        (block(expiresAt=...), LoginRefused(reason="malformed")),
        (block(expiresAt=1_700_000_000), LoginRefused(reason="malformed")),  # seconds
        (block(expiresAt=1_700_000_000_000_000), LoginRefused(reason="malformed")),  # µs
        (block(expiresAt=True), LoginRefused(reason="malformed")),
        (block(expiresAt="2030"), LoginRefused(reason="malformed")),
        (block(expiresAt=math.nan), LoginRefused(reason="malformed")),
        ({"agentOauth": Exploding()}, LoginRefused(reason="malformed")),
        (Exploding(), LoginRefused(reason="malformed")),
        (block(), LoginPresent(expires_at_ms=NOW + 3_600_000, can_refresh=True)),
        (block(expiresAt=NOW), LoginExpired(expires_at_ms=NOW, can_refresh=True)),
        (block(expiresAt=NOW - 1), LoginExpired(expires_at_ms=NOW - 1, can_refresh=True)),
        (block(expiresAt=NOW + 1), LoginPresent(expires_at_ms=NOW + 1, can_refresh=True)),
        (block(expiresAt=int(1e12)), LoginExpired(expires_at_ms=int(1e12), can_refresh=True)),
        (block(refreshToken=...), LoginPresent(expires_at_ms=NOW + 3_600_000, can_refresh=False)),
        (block(refreshToken=""), LoginPresent(expires_at_ms=NOW + 3_600_000, can_refresh=False)),
        (
            block(refreshTokenExpiresAt=NOW - 1),
            LoginPresent(expires_at_ms=NOW + 3_600_000, can_refresh=False),
        ),
        (
            block(refreshTokenExpiresAt=NOW + 1),
            LoginPresent(expires_at_ms=NOW + 3_600_000, can_refresh=True),
        ),
        (
            block(refreshTokenExpiresAt="soon"),
            LoginPresent(expires_at_ms=NOW + 3_600_000, can_refresh=False),
        ),
    ],
)
def test_derivation_table(credentials: object, expected: object) -> None:
    assert login_state_from_credentials(credentials, NOW) == expected


@pytest.mark.parametrize(
    ("label", "kept"),
    [
        ("max", True),
        ("default_claude_max_20x", True),
        ("a" * 65, False),
        (CANARY_ACCESS, False),
        ("x" * 40, False),
        ("has\nnewline", False),
        (7, False),
    ],
)
def test_labels_copied_only_when_short_and_unredacted(label: object, kept: bool) -> None:
    state = login_state_from_credentials(block(subscriptionType=label, rateLimitTier=label), NOW)
    assert isinstance(state, LoginPresent)
    assert (state.subscription_type == label) is kept
    assert (state.rate_limit_tier == label) is kept


@pytest.mark.parametrize("now", [math.nan, math.inf, -math.inf, "1", None])
def test_non_finite_now_raises_value_error(now: Any) -> None:
    with pytest.raises(ValueError, match="now_ms"):
        login_state_from_credentials(block(), now)


def test_no_state_carries_a_token() -> None:
    for creds in (block(), block(expiresAt=NOW - 5), block(subscriptionType="pro")):
        state = login_state_from_credentials(creds, NOW)
        text = json.dumps(state.to_json()) + repr(state)
        assert "CANARY" not in text


def test_to_json_keys() -> None:
    present = LoginPresent(expires_at_ms=5, can_refresh=True, subscription_type="max")
    assert present.to_json() == {
        "status": "present",
        "expiresAt": 5,
        "canRefresh": True,
        "subscriptionType": "max",
    }
    assert LoginExpired(expires_at_ms=5, can_refresh=False).to_json() == {
        "status": "expired",
        "expiresAt": 5,
        "canRefresh": False,
    }
    assert LoginMissing().to_json() == {"status": "missing"}
    assert LoginRefused(reason="hard-linked").to_json() == {
        "status": "refused",
        "reason": "hard-linked",
    }


class TestNeedsRefresh:
    @pytest.mark.parametrize(
        ("state", "now", "margin", "expected"),
        [
            (LoginExpired(expires_at_ms=NOW, can_refresh=True), NOW, 0, True),
            (LoginExpired(expires_at_ms=NOW, can_refresh=False), 0, 0, True),  # whatever now is
            (LoginPresent(expires_at_ms=NOW + 1000, can_refresh=True), NOW, 1000, True),
            (LoginPresent(expires_at_ms=NOW + 1001, can_refresh=True), NOW, 1000, False),
            (LoginPresent(expires_at_ms=NOW + 10, can_refresh=True), NOW, 0, False),
            (LoginMissing(), NOW, 10**9, False),
            (LoginRefused(reason="malformed"), NOW, 10**9, False),
        ],
    )
    def test_table(self, state: Any, now: int, margin: int, expected: bool) -> None:
        assert needs_refresh(state, now, margin) is expected

    @pytest.mark.parametrize(
        ("now", "margin"),
        [(NOW, -1), (NOW, math.nan), (NOW, math.inf), (math.nan, 0), (math.inf, 0)],
    )
    def test_bad_numbers_raise(self, now: float, margin: float) -> None:
        with pytest.raises(ValueError):
            needs_refresh(LoginMissing(), now, margin)
