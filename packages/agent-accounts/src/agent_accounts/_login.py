"""Login state: derived from a parsed credentials document, with no field that can hold a token."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from ._login_rules import CREDENTIALS_BLOCK, login_facts
from ._numbers import plain_number, plain_text
from ._redact import redact_secrets

__all__ = [
    "CREDENTIALS_BLOCK",
    "LoginExpired",
    "LoginMissing",
    "LoginPresent",
    "LoginRefused",
    "LoginState",
    "RefusalReason",
    "login_state_from_credentials",
    "needs_refresh",
]

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:+-]{0,63}")

RefusalReason: TypeAlias = Literal[
    "malformed", "mode-too-wide", "foreign-owner", "not-a-regular-file", "hard-linked"
]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginPresent:
    """A login whose access token has not expired yet."""

    status: Literal["present"] = "present"
    expires_at_ms: int
    can_refresh: bool
    subscription_type: str | None = None
    rate_limit_tier: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the spec's token-free JSON form."""
        out: dict[str, Any] = {
            "status": self.status,
            "expiresAt": self.expires_at_ms,
            "canRefresh": self.can_refresh,
        }
        if self.subscription_type is not None:
            out["subscriptionType"] = self.subscription_type
        if self.rate_limit_tier is not None:
            out["rateLimitTier"] = self.rate_limit_tier
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginExpired:
    """A login whose access token expired at or before now."""

    status: Literal["expired"] = "expired"
    expires_at_ms: int
    can_refresh: bool

    def to_json(self) -> dict[str, Any]:
        """Return the spec's token-free JSON form."""
        return {
            "status": self.status,
            "expiresAt": self.expires_at_ms,
            "canRefresh": self.can_refresh,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginMissing:
    """No credentials file, or no OAuth block in it."""

    status: Literal["missing"] = "missing"

    def to_json(self) -> dict[str, Any]:
        """Return the spec's JSON form."""
        return {"status": self.status}


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginRefused:
    """The credentials could not be trusted or understood; `reason` says why."""

    status: Literal["refused"] = "refused"
    reason: RefusalReason

    def to_json(self) -> dict[str, Any]:
        """Return the spec's JSON form."""
        return {"status": self.status, "reason": self.reason}


LoginState: TypeAlias = LoginPresent | LoginExpired | LoginMissing | LoginRefused

_MALFORMED: Final = LoginRefused(reason="malformed")


def _finite(value: object) -> float | None:
    number = plain_number(value)
    return None if number is None else float(number)


def _label(value: object) -> str | None:
    text = plain_text(value)
    if text is None or _LABEL.fullmatch(text) is None:
        return None
    return text if redact_secrets(text) == text else None


def _derive(credentials: object, now_ms: float) -> LoginState:
    facts = login_facts(credentials, now_ms)
    if facts.status == "present":
        return LoginPresent(
            expires_at_ms=facts.expires_at_ms,
            can_refresh=facts.can_refresh,
            subscription_type=_label(facts.subscription_type),
            rate_limit_tier=_label(facts.rate_limit_tier),
        )
    if facts.status == "expired":
        return LoginExpired(expires_at_ms=facts.expires_at_ms, can_refresh=facts.can_refresh)
    if facts.status == "missing":
        return LoginMissing()
    return _MALFORMED


def login_state_from_credentials(credentials: object, now_ms: float) -> LoginState:
    """Derive the token-free login state from parsed credentials. Never raises on any input.

    Raises ValueError only for a `now_ms` that is not a finite number.
    """
    if _finite(now_ms) is None:
        raise ValueError("now_ms must be a finite number of epoch milliseconds")
    try:
        return _derive(credentials, now_ms)
    except Exception:  # a hostile mapping (throwing getter) is a malformed file, not a crash
        return _MALFORMED


def needs_refresh(state: LoginState, now_ms: float, margin_ms: float) -> bool:
    """Tell whether the login is due for a token refresh within `margin_ms` of `now_ms`."""
    margin = _finite(margin_ms)
    if margin is None or margin < 0:
        raise ValueError("margin_ms must be a finite, non-negative number of milliseconds")
    if _finite(now_ms) is None:
        raise ValueError("now_ms must be a finite number of epoch milliseconds")
    if isinstance(state, LoginExpired):
        return True
    if isinstance(state, LoginPresent):
        return state.expires_at_ms - now_ms <= margin
    return False
