"""Usage polling: one request per profile, never retried, and a 429 backoff kept on disk."""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from agent_accounts import (
    KNOWN_WINDOWS,
    LoginExpired,
    LoginMissing,
    LoginRefused,
    RefusalReason,
    UsageReading,
    login_state_from_credentials,
    redact_secrets,
    usage_from_oauth_response,
)

from ._backoff import (
    backoff_after_429,
    clear_backoff,
    read_backoff,
    retry_after_seconds,
    write_backoff,
)
from ._files import read_credentials, write_reading
from ._gate import GateRefused
from ._http import SendFailed, client_for, send_once
from ._profiles import Profile, discover_profiles
from ._urls import DEFAULT_API_BASE, check_base_url

if TYPE_CHECKING:
    import httpx

__all__ = [
    "EXPIRY_MARGIN_MS",
    "PollEntry",
    "PollFailed",
    "PollOk",
    "PollResult",
    "poll_all",
    "poll_usage",
]

EXPIRY_MARGIN_MS: Final = 60_000
USAGE_BETA: Final = "oauth-2025-04-20"
BODY_MAX_BYTES: Final = 64 * 1024
RESETS_AT_MAX: Final = 64
TOKEN_MAX: Final = 4096
_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")

Failure = Literal["missing", "refused", "expired", "io", "network", "malformed", "backoff"] | str


@dataclass(frozen=True, slots=True, kw_only=True)
class PollOk:
    """A poll that produced a reading."""

    ok: Literal[True] = True
    reading: UsageReading


@dataclass(frozen=True, slots=True, kw_only=True)
class PollFailed:
    """A poll that did not: `failure` is the spec's kind (`http-<status>` included)."""

    ok: Literal[False] = False
    failure: Failure
    reason: RefusalReason | None = None


PollResult = PollOk | PollFailed


@dataclass(frozen=True, slots=True, kw_only=True)
class PollEntry:
    """One profile's outcome in `poll_all`."""

    label: str
    result: PollResult
    file: str | None = None
    write_error: BaseException | None = None
    backoff_until: float | None = None


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _check_now(now: float | None) -> float:
    if now is None:
        return time.time()
    current = _finite(now)
    if current is None:
        raise ValueError("now must be a finite number of epoch seconds")
    return current


def _check_timeout(timeout: float) -> float:
    limit = _finite(timeout)
    if limit is None or limit <= 0:
        raise ValueError("timeout must be a positive number of seconds")
    return limit


def _access_token(profile: Profile, *, uid: int | None, now_ms: float) -> str | PollFailed:
    try:
        credentials = read_credentials(profile.config_dir, uid=uid)
    except GateRefused as refused:
        return PollFailed(failure="refused", reason=refused.reason)
    except OSError:
        return PollFailed(failure="io")
    state = login_state_from_credentials(credentials, now_ms)
    if isinstance(state, LoginMissing):
        return PollFailed(failure="missing")
    if isinstance(state, LoginRefused):
        return PollFailed(failure="refused", reason=state.reason)
    token: str = credentials["agentOauth"]["accessToken"]  # a non-empty str: state checked it
    if len(token) > TOKEN_MAX or _B64TOKEN.fullmatch(token) is None:
        return PollFailed(failure="refused", reason="malformed")
    if isinstance(state, LoginExpired) or state.expires_at_ms <= now_ms + EXPIRY_MARGIN_MS:
        return PollFailed(failure="expired")
    return token


def _windows_of(body: object) -> dict[str, Any] | None:
    """Keep the allowlisted windows of a 2xx body; None when one has the wrong shape."""
    if not isinstance(body, Mapping):
        return None
    kept: dict[str, Any] = {}
    for name in KNOWN_WINDOWS:
        window = body.get(name)
        if window is None:
            continue
        if not isinstance(window, Mapping):
            return None
        # Both keys must be there (AMENDMENTS): a missing `resets_at` is another shape.
        if "utilization" not in window or "resets_at" not in window:
            return None
        utilization = window["utilization"]
        resets = window["resets_at"]
        if isinstance(utilization, bool) or not isinstance(utilization, int | float):
            return None
        if not (resets is None or (isinstance(resets, str) and len(resets) <= RESETS_AT_MAX)):
            return None
        kept[name] = {"utilization": utilization, "resets_at": resets}
    return kept


def _reject_constant(name: str) -> object:
    raise ValueError("not JSON")  # NaN and Infinity are not JSON


async def _request(
    client: httpx.AsyncClient, url: str, token: str, timeout: float
) -> tuple[int, bytearray | None, str | None]:
    """Send the usage request; return the status, a 2xx body, and a 429's `Retry-After`."""
    headers = {
        "authorization": f"Bearer {token}",
        "vendor-beta": USAGE_BETA,
        "accept": "application/json",
    }
    answer = await send_once(
        client,
        "GET",
        url,
        headers=headers,
        timeout_s=timeout,
        max_bytes=BODY_MAX_BYTES,
        body_wanted=lambda status: 200 <= status < 300,
    )
    return answer.status, answer.body, answer.retry_after


@dataclass(frozen=True, slots=True, kw_only=True)
class _Call:
    """One poll call's checked arguments: built once at the public entry point, passed down."""

    now: float
    uid: int | None
    timeout: float
    url: str


def _checked_call(now: float | None, uid: int | None, timeout: float, api_base: str) -> _Call:
    """Check the public arguments (ValueError with a fixed message) and build the call."""
    return _Call(
        now=_check_now(now),
        uid=uid,
        timeout=_check_timeout(timeout),
        url=check_base_url(api_base) + "/api/oauth/usage",
    )


async def _poll(
    profile: Profile, client: httpx.AsyncClient, call: _Call
) -> tuple[PollResult, str | None]:
    """Poll once; return the result and, for a 429, the raw `Retry-After` header (or None)."""
    token = _access_token(profile, uid=call.uid, now_ms=call.now * 1000)
    if isinstance(token, PollFailed):
        return token, None
    try:
        status, body, retry_after = await _request(client, call.url, token, call.timeout)
    except SendFailed as failed:  # timeouts, resets, TLS and redirect errors; no message kept
        return PollFailed(failure="malformed" if failed.kind == "too-large" else "network"), None
    finally:
        del token
    if body is None:
        return PollFailed(failure=f"http-{status}"), retry_after
    return _reading_result(profile, body, call.now), None


def _reading_result(profile: Profile, body: bytearray, now: float) -> PollResult:
    """Turn a 2xx body into the reading, or `malformed`."""
    try:
        windows = _windows_of(json.loads(body, parse_constant=_reject_constant))
    except (ValueError, RecursionError):  # RecursionError: a body of nested brackets
        return PollFailed(failure="malformed")
    if windows is None:
        return PollFailed(failure="malformed")
    account = profile.label if redact_secrets(profile.label) == profile.label else None
    reading = usage_from_oauth_response(windows, written_at=now, account=account)
    if reading is None:
        return PollFailed(failure="malformed")
    return PollOk(reading=reading)


async def poll_usage(
    profile: Profile,
    *,
    client: httpx.AsyncClient | None = None,
    now: float | None = None,
    uid: int | None = None,
    timeout: float = 10.0,
    api_base: str = DEFAULT_API_BASE,
) -> PollResult:
    """Send one usage request for `profile` and return the reading or the failure kind.

    Raises ValueError only for a bad `now`, `timeout` or `api_base` (fixed messages).
    """
    call = _checked_call(now, uid, timeout, api_base)
    async with client_for(client) as active:
        result, _ = await _poll(profile, active, call)
        return result


async def _poll_entry(profile: Profile, client: httpx.AsyncClient, call: _Call) -> PollEntry:
    now, uid = call.now, call.uid
    backoff = read_backoff(profile.config_dir, uid=uid, now=now)
    if backoff is not None and backoff.waiting(now):
        return PollEntry(
            label=profile.label,
            result=PollFailed(failure="backoff"),
            backoff_until=backoff.until,
        )
    result, retry_after = await _poll(profile, client, call)
    if isinstance(result, PollFailed):
        if result.failure != "http-429":
            return PollEntry(label=profile.label, result=result)
        wanted = retry_after_seconds(retry_after, now=now)
        state = backoff_after_429(backoff, now=now, retry_after=wanted)
        write_backoff(profile.config_dir, state)  # an unwritable backoff file is skipped
        return PollEntry(label=profile.label, result=result, backoff_until=state.until)
    clear_backoff(profile.config_dir)
    try:
        # In a worker thread: two fsyncs per write would otherwise run one profile at a time.
        written = await asyncio.to_thread(write_reading, profile.config_dir, result.reading)
    except Exception as exc:  # already redacted by write_reading; redacting again is harmless
        return PollEntry(label=profile.label, result=result, write_error=redact_secrets(exc))
    return PollEntry(label=profile.label, result=result, file=written)


async def poll_all(
    *,
    client: httpx.AsyncClient | None = None,
    now: float | None = None,
    uid: int | None = None,
    timeout: float = 10.0,
    profiles: Sequence[Profile] | None = None,
    discover: Mapping[str, Any] | None = None,
    api_base: str = DEFAULT_API_BASE,
) -> list[PollEntry]:
    """Poll every profile concurrently and write each reading; one entry per profile, in order."""
    call = _checked_call(now, uid, timeout, api_base)
    targets = list(profiles) if profiles is not None else discover_profiles(**(discover or {}))
    async with client_for(client) as active:

        async def isolated(profile: Profile) -> PollEntry:
            try:
                return await _poll_entry(profile, active, call)
            except Exception:  # one profile's surprise never stops another
                return PollEntry(label=profile.label, result=PollFailed(failure="io"))

        return list(await asyncio.gather(*(isolated(p) for p in targets)))
