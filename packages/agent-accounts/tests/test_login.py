from __future__ import annotations

import dataclasses
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
    LoginState,
    login_state_from_credentials,
    needs_refresh,
)

NOW = 1_700_000_000_000
HOUR = 3_600_000
CANARY_ACCESS = "sk-ant-oat01-CANARYaccess"
CANARY_REFRESH = "sk-ant-ort01-CANARYrefresh"
MALFORMED = LoginRefused(reason="malformed")


def block(**over: Any) -> dict[str, Any]:
    """Credentials with a valid block; `key=...` removes a key."""
    base: dict[str, Any] = {
        "accessToken": CANARY_ACCESS,
        "refreshToken": CANARY_REFRESH,
        "expiresAt": NOW + HOUR,
        "scopes": ["user:inference"],
    }
    base.update(over)
    return {"agentOauth": {k: v for k, v in base.items() if v is not ...}}


class ExplodingMapping(Mapping[str, Any]):
    """A Mapping whose every read raises, carrying a canary in the message."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError(CANARY_ACCESS)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError(CANARY_ACCESS)

    def __len__(self) -> int:
        return 1


class ExplodingGet(dict[str, Any]):
    """A dict whose `get` and `[]` raise."""

    def get(self, *args: Any) -> Any:
        raise KeyError(CANARY_ACCESS)

    def __getitem__(self, key: str) -> Any:
        raise KeyError(CANARY_ACCESS)


class ExplodingOn(dict[str, Any]):
    """A block that raises only when one key is read."""

    def __init__(self, key: str, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.key = key

    def get(self, k: str, default: Any = None) -> Any:
        if k == self.key:
            raise ValueError(CANARY_ACCESS)
        return super().get(k, default)


class ExplodingFloat(float):
    def __float__(self) -> float:
        raise ArithmeticError(CANARY_ACCESS)


def present(expires: float = NOW + HOUR, *, can_refresh: bool = True) -> LoginPresent:
    return LoginPresent(expires_at_ms=int(expires), can_refresh=can_refresh)


def expired(expires: float, *, can_refresh: bool = True) -> LoginExpired:
    return LoginExpired(expires_at_ms=int(expires), can_refresh=can_refresh)


@pytest.mark.parametrize(
    ("credentials", "expected"),
    [
        # the input or its agentOauth block is absent or null: missing
        pytest.param(None, LoginMissing(), id="input-none"),
        pytest.param({}, LoginMissing(), id="input-empty"),
        pytest.param({"agentOauth": None}, LoginMissing(), id="block-null"),
        pytest.param({"otherOauth": {"accessToken": "x"}}, LoginMissing(), id="block-absent"),
        # an input or block that is not an object: malformed
        pytest.param([], MALFORMED, id="input-list"),
        pytest.param("text", MALFORMED, id="input-str"),
        pytest.param(5, MALFORMED, id="input-int"),
        pytest.param({"agentOauth": []}, MALFORMED, id="block-list"),
        pytest.param({"agentOauth": "sk-ant-oat01-x"}, MALFORMED, id="block-str"),
        pytest.param({"agentOauth": 0}, MALFORMED, id="block-zero"),
        # no access token: malformed
        pytest.param(block(accessToken=...), MALFORMED, id="access-absent"),
        pytest.param(block(accessToken=None), MALFORMED, id="access-null"),
        pytest.param(block(accessToken=""), MALFORMED, id="access-empty"),
        pytest.param(block(accessToken=5), MALFORMED, id="access-int"),
        pytest.param(block(accessToken=b"tok"), MALFORMED, id="access-bytes"),
        pytest.param(block(accessToken=["tok"]), MALFORMED, id="access-list"),
        # expiresAt outside 1e12..1e14 or not a number: malformed
        pytest.param(block(expiresAt=...), MALFORMED, id="expires-absent"),
        pytest.param(block(expiresAt=None), MALFORMED, id="expires-null"),
        pytest.param(block(expiresAt=1_700_000_000), MALFORMED, id="expires-seconds"),
        pytest.param(block(expiresAt=1_700_000_000_000_000), MALFORMED, id="expires-micro"),
        pytest.param(block(expiresAt=10**12 - 1), MALFORMED, id="expires-just-below"),
        pytest.param(block(expiresAt=10**14 + 1), MALFORMED, id="expires-just-above"),
        pytest.param(block(expiresAt=-NOW), MALFORMED, id="expires-negative"),
        pytest.param(block(expiresAt=True), MALFORMED, id="expires-bool-is-not-a-number"),
        pytest.param(block(expiresAt=False), MALFORMED, id="expires-false"),
        pytest.param(block(expiresAt=str(NOW + HOUR)), MALFORMED, id="expires-str"),
        pytest.param(block(expiresAt=math.nan), MALFORMED, id="expires-nan"),
        pytest.param(block(expiresAt=math.inf), MALFORMED, id="expires-inf"),
        pytest.param(block(expiresAt=[NOW]), MALFORMED, id="expires-list"),
        # the bounds themselves are in range
        pytest.param(block(expiresAt=10**12), expired(10**12), id="expires-lower-bound"),
        pytest.param(block(expiresAt=1e12), expired(10**12), id="expires-lower-bound-float"),
        pytest.param(block(expiresAt=10**14), present(10**14), id="expires-upper-bound"),
        pytest.param(block(expiresAt=1e14), present(10**14), id="expires-upper-bound-float"),
        pytest.param(block(expiresAt=NOW + 0.5), present(NOW), id="expires-fractional"),
        # present vs expired: expires after now, or at or before now
        pytest.param(block(), present(), id="present"),
        pytest.param(block(expiresAt=NOW + 1), present(NOW + 1), id="present-by-1ms"),
        pytest.param(block(expiresAt=NOW), expired(NOW), id="expired-at-now"),
        pytest.param(block(expiresAt=NOW - 1), expired(NOW - 1), id="expired-1ms-ago"),
        # canRefresh: a refresh token present and not past its own expiry
        pytest.param(block(refreshToken=...), present(can_refresh=False), id="refresh-absent"),
        pytest.param(block(refreshToken=None), present(can_refresh=False), id="refresh-null"),
        pytest.param(block(refreshToken=""), present(can_refresh=False), id="refresh-empty"),
        pytest.param(block(refreshToken=7), present(can_refresh=False), id="refresh-int"),
        pytest.param(
            block(refreshTokenExpiresAt=None), present(can_refresh=True), id="refresh-exp-null"
        ),
        pytest.param(
            block(refreshTokenExpiresAt=NOW + 1), present(can_refresh=True), id="refresh-exp-future"
        ),
        pytest.param(
            block(refreshTokenExpiresAt=NOW), present(can_refresh=False), id="refresh-exp-now"
        ),
        pytest.param(
            block(refreshTokenExpiresAt=NOW - 1), present(can_refresh=False), id="refresh-exp-past"
        ),
        pytest.param(
            block(refreshTokenExpiresAt="soon"), present(can_refresh=False), id="refresh-exp-str"
        ),
        pytest.param(
            block(refreshTokenExpiresAt=True), present(can_refresh=False), id="refresh-exp-bool"
        ),
        pytest.param(
            block(refreshTokenExpiresAt=math.nan), present(can_refresh=False), id="refresh-exp-nan"
        ),
        pytest.param(
            block(expiresAt=NOW - 1, refreshToken=...),
            expired(NOW - 1, can_refresh=False),
            id="expired-without-refresh",
        ),
        pytest.param(
            block(expiresAt=NOW - 1, refreshTokenExpiresAt=NOW - 2),
            expired(NOW - 1, can_refresh=False),
            id="expired-refresh-expired",
        ),
        # an exception from the input becomes refused/malformed, never an escape
        pytest.param(ExplodingMapping(), MALFORMED, id="throwing-mapping"),
        pytest.param({"agentOauth": ExplodingMapping()}, MALFORMED, id="throwing-block"),
        pytest.param(ExplodingGet(agentOauth={}), MALFORMED, id="throwing-get"),
        pytest.param({"agentOauth": ExplodingGet(accessToken="x")}, MALFORMED, id="block-get"),
        pytest.param(
            {"agentOauth": ExplodingOn("refreshTokenExpiresAt", block()["agentOauth"])},
            MALFORMED,
            id="throwing-on-one-key",
        ),
        # a number subclass is read as its plain value: its overrides never run
        pytest.param(block(expiresAt=ExplodingFloat(NOW)), expired(NOW), id="float-subclass"),
        pytest.param(block(expiresAt=10**400), MALFORMED, id="expires-too-big-for-float"),
    ],
)
def test_derivation_table(credentials: object, expected: LoginState) -> None:
    assert login_state_from_credentials(credentials, NOW) == expected


def test_subclass_of_int_is_a_number_but_bool_is_not() -> None:
    class Millis(int):
        pass

    assert login_state_from_credentials(block(expiresAt=Millis(NOW + 5)), NOW) == present(NOW + 5)


@pytest.mark.parametrize(
    ("label", "kept"),
    [
        ("max", True),
        ("pro", True),
        ("default_claude_max_20x", True),
        ("Team Plan 2", True),
        (("tier " * 13)[:64], True),  # 64 characters
        (("tier " * 13)[:64] + "s", False),  # 65
        ("a" * 40, False),  # a 32+ run: redaction would change it
        ("", False),
        (" leading-space", False),
        (CANARY_ACCESS, False),  # redaction would change it
        ("token=abc", False),
        ("Bearer abc", False),
        ("has\nnewline", False),
        ("tab\there", False),
        ("ünïcode", False),
        (7, False),
        (None, False),
        (["max"], False),
    ],
)
def test_labels_copied_only_when_short_and_unredacted(label: object, kept: bool) -> None:
    state = login_state_from_credentials(block(subscriptionType=label, rateLimitTier=label), NOW)
    assert isinstance(state, LoginPresent)
    expected = label if kept else None
    assert state.subscription_type == expected
    assert state.rate_limit_tier == expected
    assert ("subscriptionType" in state.to_json()) is kept
    assert ("rateLimitTier" in state.to_json()) is kept


def test_label_subclass_is_copied_as_plain_text() -> None:
    class Loud(str):
        def __repr__(self) -> str:
            return CANARY_ACCESS

    state = login_state_from_credentials(block(subscriptionType=Loud("max")), NOW)
    assert isinstance(state, LoginPresent)
    assert type(state.subscription_type) is str
    assert CANARY_ACCESS not in repr(state)


@pytest.mark.parametrize("now", [math.nan, math.inf, -math.inf, 10**400, "1", None, True, [1]])
def test_non_finite_now_raises_value_error(now: Any) -> None:
    with pytest.raises(ValueError, match="now_ms") as info:
        login_state_from_credentials(block(), now)
    assert CANARY_ACCESS not in str(info.value)
    with pytest.raises(ValueError, match="now_ms"):
        login_state_from_credentials(ExplodingMapping(), now)


@pytest.mark.parametrize(
    "credentials",
    [
        block(),
        block(expiresAt=NOW - 5),
        block(subscriptionType="pro", rateLimitTier="tier_1"),
        block(subscriptionType=CANARY_ACCESS, rateLimitTier=CANARY_REFRESH),
        block(expiresAt=5),
        ExplodingMapping(),
        {"agentOauth": ExplodingMapping()},
        None,
    ],
)
def test_no_state_carries_a_token(credentials: object) -> None:
    state = login_state_from_credentials(credentials, NOW)
    text = json.dumps(state.to_json()) + repr(state) + str(state)
    text += repr(dataclasses.asdict(state))
    assert "CANARY" not in text


def test_to_json_keys() -> None:
    full = LoginPresent(
        expires_at_ms=5, can_refresh=True, subscription_type="max", rate_limit_tier="t1"
    )
    assert full.to_json() == {
        "status": "present",
        "expiresAt": 5,
        "canRefresh": True,
        "subscriptionType": "max",
        "rateLimitTier": "t1",
    }
    assert LoginPresent(expires_at_ms=5, can_refresh=False).to_json() == {
        "status": "present",
        "expiresAt": 5,
        "canRefresh": False,
    }
    assert LoginExpired(expires_at_ms=5, can_refresh=False).to_json() == {
        "status": "expired",
        "expiresAt": 5,
        "canRefresh": False,
    }
    assert LoginMissing().to_json() == {"status": "missing"}
    for reason in ("malformed", "mode-too-wide", "foreign-owner", "not-a-regular-file"):
        assert LoginRefused(reason=reason).to_json() == {"status": "refused", "reason": reason}
    assert LoginRefused(reason="hard-linked").to_json() == {
        "status": "refused",
        "reason": "hard-linked",
    }


@pytest.mark.parametrize(
    "state",
    [present(), expired(NOW), LoginMissing(), LoginRefused(reason="malformed")],
)
def test_states_are_frozen_slotted_keyword_only_values(state: LoginState) -> None:
    assert dataclasses.is_dataclass(state)
    assert not hasattr(state, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.status = "present"  # type: ignore[misc]
    kind: Any = type(state)
    fields = [f for f in dataclasses.fields(state) if f.name != "status"]
    if fields:
        with pytest.raises(TypeError):
            kind(*[getattr(state, f.name) for f in fields])
    assert kind(**{f.name: getattr(state, f.name) for f in fields}) == state
    assert state.to_json()["status"] == state.status


def _describe(state: LoginState) -> str:
    match state:
        case LoginPresent(expires_at_ms=at):
            return f"present until {at}"
        case LoginExpired(can_refresh=True):
            return "expired, refreshable"
        case LoginExpired():
            return "expired"
        case LoginMissing():
            return "missing"
        case LoginRefused(reason=reason):
            return f"refused: {reason}"


def test_match_works_on_the_union() -> None:
    assert _describe(present(NOW + 1)) == f"present until {NOW + 1}"
    assert _describe(expired(NOW)) == "expired, refreshable"
    assert _describe(expired(NOW, can_refresh=False)) == "expired"
    assert _describe(LoginMissing()) == "missing"
    assert _describe(LoginRefused(reason="hard-linked")) == "refused: hard-linked"


class TestNeedsRefresh:
    @pytest.mark.parametrize(
        ("state", "now", "margin", "expected"),
        [
            # expired: always true, whatever now is
            (expired(NOW), NOW, 0, True),
            (expired(NOW, can_refresh=False), 0, 0, True),
            (expired(NOW), NOW - 10 * HOUR, 0, True),
            # present: true when the token expires within margin of now
            (present(NOW + 1000), NOW, 1000, True),
            (present(NOW + 1000), NOW, 999.5, False),
            (present(NOW + 1001), NOW, 1000, False),
            (present(NOW + 10), NOW, 0, False),
            (present(NOW), NOW, 0, True),  # a stale state whose expiry has come
            (present(NOW - 5), NOW, 0, True),
            (present(NOW + HOUR), NOW, 10 * HOUR, True),
            (present(NOW + 600_000), NOW, 600_000, True),
            # missing, refused: they need a login, not a refresh
            (LoginMissing(), NOW, 10**9, False),
            (LoginRefused(reason="malformed"), NOW, 10**9, False),
            (LoginRefused(reason="mode-too-wide"), NOW, 0, False),
        ],
    )
    def test_table(self, state: LoginState, now: float, margin: float, expected: bool) -> None:
        assert needs_refresh(state, now, margin) is expected

    @pytest.mark.parametrize(
        ("now", "margin", "what"),
        [
            (NOW, -1, "margin_ms"),
            (NOW, -0.001, "margin_ms"),
            (NOW, math.nan, "margin_ms"),
            (NOW, math.inf, "margin_ms"),
            (NOW, -math.inf, "margin_ms"),
            (NOW, "60", "margin_ms"),
            (NOW, True, "margin_ms"),
            (math.nan, 0, "now_ms"),
            (math.inf, 0, "now_ms"),
            (-math.inf, 0, "now_ms"),
            (None, 0, "now_ms"),
            (10**400, 0, "now_ms"),
            (NOW, 10**400, "margin_ms"),
        ],
    )
    @pytest.mark.parametrize("state", [expired(NOW), present(), LoginMissing()])
    def test_bad_numbers_raise_value_error(
        self, state: LoginState, now: Any, margin: Any, what: str
    ) -> None:
        with pytest.raises(ValueError, match=what):
            needs_refresh(state, now, margin)
