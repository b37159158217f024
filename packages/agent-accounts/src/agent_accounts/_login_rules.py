"""The login-state rules on plain values, apart from the dataclasses that carry them.

`login_state_from_credentials` wraps `login_facts` in its frozen dataclasses; `account-cli best`
reads every profile's credentials and needs only the status, so it calls `login_facts` directly.
This module imports neither `typing`, `dataclasses` nor `re` (importing `dataclasses` pulls in
`inspect`, `ast`, `dis` and `tokenize`: most of a short command's start-up).
"""

from __future__ import annotations

# `_collections_abc`, not `collections.abc`: the same classes without importing `collections`.
from _collections_abc import Mapping

from ._numbers import plain_number

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    from typing import Final

__all__ = ["CREDENTIALS_BLOCK", "LoginFacts", "login_facts"]

CREDENTIALS_BLOCK: Final = "agentOauth"
_EXPIRES_MIN: Final = 1e12
_EXPIRES_MAX: Final = 1e14


class LoginFacts:
    """What a credentials document says about its login; never a token.

    `status` is `present`, `expired`, `missing` or `refused` (then `reason` is `malformed`).
    `subscription_type` and `rate_limit_tier` are the raw values, unchecked: only a caller that
    shows them checks them (`_login` keeps short labels redaction leaves alone).
    """

    __slots__ = (
        "can_refresh",
        "expires_at_ms",
        "rate_limit_tier",
        "reason",
        "status",
        "subscription_type",
    )

    def __init__(
        self,
        status: str,
        *,
        expires_at_ms: int = 0,
        can_refresh: bool = False,
        reason: str | None = None,
        subscription_type: object = None,
        rate_limit_tier: object = None,
    ) -> None:
        self.status = status
        self.expires_at_ms = expires_at_ms
        self.can_refresh = can_refresh
        self.reason = reason
        self.subscription_type = subscription_type
        self.rate_limit_tier = rate_limit_tier


_MISSING: Final = LoginFacts("missing")
_MALFORMED: Final = LoginFacts("refused", reason="malformed")


def _finite(value: object) -> float | None:
    number = plain_number(value)
    return None if number is None else float(number)


def _facts(credentials: object, now_ms: float) -> LoginFacts:
    if credentials is None:
        return _MISSING
    if not isinstance(credentials, Mapping):
        return _MALFORMED
    block = credentials.get(CREDENTIALS_BLOCK)
    if block is None:
        return _MISSING
    if not isinstance(block, Mapping):
        return _MALFORMED
    access = block.get("accessToken")
    expires = _finite(block.get("expiresAt"))
    if not isinstance(access, str) or not access or expires is None:
        return _MALFORMED
    if not _EXPIRES_MIN <= expires <= _EXPIRES_MAX:
        return _MALFORMED
    refresh = block.get("refreshToken")
    refresh_expires = block.get("refreshTokenExpiresAt")
    refresh_until = _finite(refresh_expires)
    can_refresh = (
        isinstance(refresh, str)
        and bool(refresh)
        and (refresh_expires is None or (refresh_until is not None and refresh_until > now_ms))
    )
    if expires > now_ms:
        return LoginFacts(
            "present",
            expires_at_ms=int(expires),
            can_refresh=can_refresh,
            subscription_type=block.get("subscriptionType"),
            rate_limit_tier=block.get("rateLimitTier"),
        )
    return LoginFacts("expired", expires_at_ms=int(expires), can_refresh=can_refresh)


def login_facts(credentials: object, now_ms: float) -> LoginFacts:
    """Derive the login's facts from parsed credentials at a finite `now_ms`; never raises."""
    try:
        return _facts(credentials, now_ms)
    except Exception:  # a hostile mapping (throwing getter) is a malformed file, not a crash
        return _MALFORMED
