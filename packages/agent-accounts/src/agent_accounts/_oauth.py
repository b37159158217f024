"""The OAuth endpoints' pure side: the usage answer as a reading; the refresh request and answer.

Values in, values out: nothing here opens a file or a socket or reads a clock. The I/O layer sends
what `refresh_request_body` builds and hands the answer's bytes to `parse_token_answer`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, TypeGuard

from ._numbers import plain_number, plain_text
from ._redact import redact_secrets
from ._types import RateWindow, UsageReading
from ._usage import is_window_name

__all__ = [
    "DEFAULT_REFRESH_SCOPES",
    "FALLBACK_EXPIRES_IN_S",
    "MAX_EXPIRES_IN_S",
    "OAUTH_CLIENT_ID",
    "POLL_SESSION_ID",
    "POLL_SOURCE",
    "TOKEN_ANSWER_MAX_BYTES",
    "TOKEN_MAX_CHARS",
    "TokenAnswer",
    "apply_tokens",
    "is_b64token",
    "is_refreshable_login",
    "oauth_block",
    "parse_token_answer",
    "refresh_request_body",
    "refresh_token_of",
    "token_answer_from_login",
    "token_fingerprint",
    "usage_from_oauth_response",
]

POLL_SESSION_ID: Final = "usage-poll"
POLL_SOURCE: Final = "oauth-usage"


def _epoch_seconds(iso: object) -> float | None:
    if not isinstance(iso, str) or len(iso) > 64:
        return None
    try:
        # RFC 3339 allows a lower-case `t` and `z`; fromisoformat does not.
        moment = datetime.fromisoformat(iso.upper())
        # A time without an offset is read as UTC: the pure core never consults the local zone.
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        seconds = moment.timestamp()
    except (ValueError, OverflowError):  # a reset time that does not parse is only omitted
        return None
    return int(seconds) if seconds.is_integer() else seconds


def _convert(body: object, written_at_raw: object, account_raw: object) -> UsageReading | None:
    written_at = plain_number(written_at_raw)
    if not isinstance(body, Mapping) or written_at is None:
        return None
    rate_limits: dict[str, RateWindow] = {}
    for name, raw in body.items():
        # A window holds both keys (AMENDMENTS); `extra_usage` has a `utilization` and no
        # `resets_at`, and is not a window.
        if not is_window_name(name) or not isinstance(raw, Mapping):
            continue
        if "utilization" not in raw or "resets_at" not in raw:
            continue
        utilization = plain_number(raw["utilization"])
        resets = raw["resets_at"]
        if utilization is None or not (resets is None or isinstance(resets, str)):
            continue
        # The endpoint can report a window past its limit; a reading caps it at the limit.
        used = min(max(float(utilization), 0.0), 100.0)
        window: RateWindow = {"used_percentage": int(used) if used.is_integer() else used}
        reset_seconds = _epoch_seconds(plain_text(resets))
        if reset_seconds is not None:
            window["resets_at"] = reset_seconds
        rate_limits[str.__str__(name)] = window
    if not rate_limits:
        return None
    reading: UsageReading = {
        "session_id": POLL_SESSION_ID,
        "written_at": written_at,
        "rate_limits": rate_limits,
        "source": POLL_SOURCE,
    }
    account = plain_text(account_raw)
    if account and redact_secrets(account) == account:
        reading["account"] = account
    return reading


def usage_from_oauth_response(
    body: object, *, written_at: float, account: str | None = None
) -> UsageReading | None:
    """Convert the usage endpoint's body to a reading; None if no window survives. Never raises."""
    try:
        return _convert(body, written_at, account)
    except Exception:  # a body whose getter throws gives no reading
        return None


# ---- token refresh: the request and the answer ---------------------------------------------------

OAUTH_CLIENT_ID: Final = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
"""The agent client's public OAuth client id (release line 2.1.x), used when none is stored."""
DEFAULT_REFRESH_SCOPES: Final[tuple[str, ...]] = (
    "user:profile",
    "user:inference",
    "user:sessions:agent_code",
)
"""Scopes asked for when no client id is stored (release line 2.1.x)."""
TOKEN_MAX_CHARS: Final = 4096
TOKEN_ANSWER_MAX_BYTES: Final = 64 * 1024
MAX_EXPIRES_IN_S: Final = 366 * 24 * 3600
"""A longer lifetime is clamped to this: the tokens are kept, the next refresh comes sooner."""
FALLBACK_EXPIRES_IN_S: Final = 300
"""Lifetime recorded when a 200 carries a usable access token but no usable `expires_in`."""
CREDENTIALS_BLOCK: Final = "agentOauth"
_EPOCH_MS_MIN: Final = 10**12
_EPOCH_MS_MAX: Final = 10**14
_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,200}")


def is_b64token(value: object) -> TypeGuard[str]:
    """Tell whether `value` is an RFC 6750 b64token of at most 4096 characters."""
    return (
        isinstance(value, str)
        and len(value) <= TOKEN_MAX_CHARS
        and _B64TOKEN.fullmatch(value) is not None
    )


def token_fingerprint(token: str) -> str:
    """Return a token-free name for `token` (SHA-256, 32 hex digits) to remember it by."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]


def oauth_block(document: Mapping[str, object]) -> dict[str, object] | None:
    """Return the credentials' OAuth block, or None when it is absent or not an object."""
    block = document.get(CREDENTIALS_BLOCK)
    return block if isinstance(block, dict) else None


def refresh_token_of(document: Mapping[str, object]) -> str | None:
    """Return the usable refresh token a credentials document holds, if any."""
    block = oauth_block(document)
    token = block.get("refreshToken") if block is not None else None
    return token if is_b64token(token) else None


def _stored_scopes(block: Mapping[str, object]) -> list[str]:
    raw = block.get("scopes")
    if isinstance(raw, str):
        items: list[object] = list(raw.split())
    elif isinstance(raw, list):
        items = list(raw)
    else:
        return []
    return [s for s in items if isinstance(s, str) and _SCOPE_TOKEN.fullmatch(s)]


def is_refreshable_login(block: Mapping[str, object]) -> bool:
    """Tell whether the agent client would refresh this login (inference scope or subscription)."""
    subscription = block.get("subscriptionType")
    has_subscription = isinstance(subscription, str) and subscription != ""
    return has_subscription or "user:inference" in _stored_scopes(block)


def refresh_request_body(block: Mapping[str, object], refresh_token: str) -> dict[str, str]:
    """Build the token request's JSON body (spec step 4: client id and scope rules)."""
    stored_client = block.get("clientId")
    if isinstance(stored_client, str) and stored_client and _SCOPE_TOKEN.fullmatch(stored_client):
        client_id = stored_client
        scopes = _stored_scopes(block) or list(DEFAULT_REFRESH_SCOPES)
    else:
        client_id = OAUTH_CLIENT_ID
        held = [s for s in _stored_scopes(block) if s.startswith("user:projects:")]
        scopes = list(DEFAULT_REFRESH_SCOPES) + list(dict.fromkeys(held))
    return {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": client_id,
        "scope": " ".join(scopes),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenAnswer:
    """The usable part of a 200 token answer, lifetimes already turned into epoch ms.

    `refresh` is None when the answer did not rotate the refresh token; `drop_refresh` is set when
    it rotated to something unusable (the spent token must not stay on file either).
    """

    access: str
    expires_at_ms: int
    refresh: str | None
    refresh_expires_at_ms: int | None
    drop_refresh: bool = False

    def __repr__(self) -> str:
        return "TokenAnswer(<redacted>)"


def _lifetime_s(value: object, fallback: int | None) -> int | None:
    number = plain_number(value)
    if number is None or number < 0:
        return fallback
    return int(min(number, MAX_EXPIRES_IN_S))


def _epoch_ms(now_ms: float, seconds: int) -> int:
    return int(min(max(now_ms + seconds * 1000, _EPOCH_MS_MIN), _EPOCH_MS_MAX))


def _reject_constant(name: str) -> object:
    raise ValueError("not JSON")


def parse_token_answer(body: bytes | bytearray, now_ms: float) -> TokenAnswer | None:
    """Read a 200 token answer; None when it carries no usable access token.

    A usable access token is never thrown away: an out-of-range or missing `expires_in` is
    clamped (at most a year, 5 minutes when absent), an unusable `refresh_token_expires_in` is
    dropped, and an unusable rotated refresh token is dropped with the spent one.
    """
    value: object = None
    malformed = False
    try:
        value = json.loads(bytes(body).decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        malformed = True
    # Returned outside the handler: the parser's error holds the body (tokens) as `doc`.
    if malformed or not isinstance(value, dict):
        return None
    access = value.get("access_token")
    if not is_b64token(access):
        return None
    expires_in = _lifetime_s(value.get("expires_in"), FALLBACK_EXPIRES_IN_S)
    assert expires_in is not None
    raw_refresh = value.get("refresh_token")
    refresh = raw_refresh if is_b64token(raw_refresh) else None
    refresh_in = _lifetime_s(value.get("refresh_token_expires_in"), None)
    return TokenAnswer(
        access=str.__str__(access),
        expires_at_ms=_epoch_ms(now_ms, expires_in),
        refresh=None if refresh is None else str.__str__(refresh),
        refresh_expires_at_ms=None if refresh_in is None else _epoch_ms(now_ms, refresh_in),
        drop_refresh=raw_refresh is not None and refresh is None,
    )


def token_answer_from_login(document: Mapping[str, object], spent: str) -> TokenAnswer | None:
    """Read back the tokens a refresher wrote for `spent`: the roll-forward of a dead refresher.

    None unless the document is a complete login (a usable access token and expiry, and a usable
    refresh token or none); a refresh token equal to `spent` means the answer did not rotate it.
    """
    block = oauth_block(document)
    if block is None:
        return None
    access = block.get("accessToken")
    expires = plain_number(block.get("expiresAt"))
    if not is_b64token(access) or expires is None:
        return None
    if not _EPOCH_MS_MIN <= expires <= _EPOCH_MS_MAX:
        return None
    refresh = block.get("refreshToken")
    if refresh is not None and not is_b64token(refresh):
        return None
    refresh_expires = plain_number(block.get("refreshTokenExpiresAt"))
    return TokenAnswer(
        access=str.__str__(access),
        expires_at_ms=int(expires),
        refresh=None if refresh is None or refresh == spent else str.__str__(refresh),
        refresh_expires_at_ms=None if refresh_expires is None else int(refresh_expires),
        drop_refresh=refresh is None,
    )


def apply_tokens(
    document: Mapping[str, object], answer: TokenAnswer, spent: str
) -> dict[str, object] | None:
    """Return a copy of `document` with the new tokens, every other key in place; None if no block.

    Only `accessToken`, `expiresAt` and, when the answer rotates it, `refreshToken` and
    `refreshTokenExpiresAt` change.
    """
    copy = dict(document)
    old = oauth_block(copy)
    if old is None:
        return None
    block = dict(old)
    block["accessToken"] = answer.access
    block["expiresAt"] = answer.expires_at_ms
    if answer.refresh is not None and answer.refresh != spent:
        block["refreshToken"] = answer.refresh
        if answer.refresh_expires_at_ms is not None:
            block["refreshTokenExpiresAt"] = answer.refresh_expires_at_ms
        else:
            # An expiry recorded for the spent token would misjudge the new one.
            block.pop("refreshTokenExpiresAt", None)
    elif answer.drop_refresh:
        block.pop("refreshToken", None)
        block.pop("refreshTokenExpiresAt", None)
    copy[CREDENTIALS_BLOCK] = block
    return copy
