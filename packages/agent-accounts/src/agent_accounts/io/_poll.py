"""Usage polling: one request per profile, never retried, and a 429 backoff kept on disk."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import json
import math
import re
import ssl
import sys
import time
import zlib
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


class _Malformed(Exception):
    """A 2xx body over the cap or in an encoding that cannot be undone within it."""


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


def _decode(raw: bytes, encoding: str) -> bytes:
    """Undo a content-encoding without ever holding more than the cap of decoded bytes."""
    if encoding in ("", "identity"):
        return raw
    attempts: tuple[int, ...]
    if encoding in ("gzip", "x-gzip"):
        attempts = (16 + zlib.MAX_WBITS,)
    elif encoding == "deflate":
        attempts = (zlib.MAX_WBITS, -zlib.MAX_WBITS)  # zlib-wrapped, else raw (as httpx does)
    else:
        raise _Malformed  # br, zstd or a chain: not asked for (accept-encoding: identity)
    for wbits in attempts:
        decoder = zlib.decompressobj(wbits)
        try:
            out = decoder.decompress(raw, BODY_MAX_BYTES + 1)
        except zlib.error:
            continue
        if len(out) > BODY_MAX_BYTES or decoder.unconsumed_tail:
            raise _Malformed  # a body that decodes past the cap, a compression bomb included
        return out
    raise _Malformed


async def _read_capped(response: httpx.Response) -> bytes:
    if response.is_stream_consumed:
        # A transport that answered with a response it had already read (httpx.MockTransport
        # with `httpx.Response(200, json=...)`): its stream is spent, its decoded content is all
        # there is, and the body is already in memory, so only the cap is left to apply.
        content = response.content
        if len(content) > BODY_MAX_BYTES:
            raise _Malformed
        return content
    # Raw bytes, capped as they arrive: httpx's decoders would inflate a whole chunk at once.
    raw = bytearray()
    async for chunk in response.aiter_raw():
        raw += chunk
        if len(raw) > BODY_MAX_BYTES:
            raise _Malformed
    encoding = response.headers.get("content-encoding", "").strip().lower()
    return _decode(bytes(raw), encoding)


def _reject_constant(name: str) -> object:
    raise ValueError("not JSON")  # NaN and Infinity are not JSON


async def _request(
    client: httpx.AsyncClient, url: str, token: str, timeout: float
) -> tuple[int, bytes | None, str | None]:
    """Send the usage request; return the status, a 2xx body, and a 429's `Retry-After`."""
    headers = {
        "authorization": f"Bearer {token}",
        "vendor-beta": USAGE_BETA,
        "accept": "application/json",
        # A compressed body could inflate far past the 64 KiB cap before it could be checked.
        "accept-encoding": "identity",
    }
    # One deadline bounds connect, headers and the whole body read.
    async with (
        asyncio.timeout(timeout),
        client.stream("GET", url, headers=headers, follow_redirects=False) as response,
    ):
        # Never followed (the token would go along). To a caller whose client follows
        # redirects, a redirect counts as a followed one: network, as the spec says.
        if response.history or (response.is_redirect and client.follow_redirects):
            return -1, None, None
        if not 200 <= response.status_code < 300:
            retry_after = None
            if response.status_code == 429:
                retry_after = response.headers.get("retry-after")
            return response.status_code, None, retry_after  # closed unread on exit
        return response.status_code, await _read_capped(response), None


async def _poll(
    profile: Profile,
    *,
    client: httpx.AsyncClient,
    now: float,
    uid: int | None,
    timeout: float,
    url: str,
) -> PollResult:
    result, _ = await _poll_detailed(
        profile, client=client, now=now, uid=uid, timeout=timeout, url=url
    )
    return result


async def _poll_detailed(
    profile: Profile,
    *,
    client: httpx.AsyncClient,
    now: float,
    uid: int | None,
    timeout: float,
    url: str,
) -> tuple[PollResult, str | None]:
    """Poll once; return the result and, for a 429, the raw `Retry-After` header (or None)."""
    token = _access_token(profile, uid=uid, now_ms=now * 1000)
    if isinstance(token, PollFailed):
        return token, None
    try:
        status, body, retry_after = await _request(client, url, token, timeout)
    except _Malformed:
        return PollFailed(failure="malformed"), None
    except Exception:  # timeouts, resets, TLS and redirect errors: the message is dropped
        return PollFailed(failure="network"), None
    finally:
        del token
    if status == -1:
        return PollFailed(failure="network"), None
    if body is None:
        return PollFailed(failure=f"http-{status}"), retry_after
    return _reading_result(profile, body, now), None


def _reading_result(profile: Profile, body: bytes, now: float) -> PollResult:
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


def _cache_missing_sniffio() -> None:
    """Make httpcore's per-request `import sniffio` a dict lookup when sniffio is not installed.

    httpcore imports sniffio on every request to learn the async library; without it each failed
    import rescans sys.path (about a millisecond). Recording the miss in sys.modules is what a
    failed import means anyway, so nothing that could import sniffio is turned away.
    """
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Build httpx's default verifying TLS context once per process (loading CAs costs ~80 ms)."""
    import httpx

    return httpx.create_ssl_context()


@contextlib.asynccontextmanager
async def _client_for(client: httpx.AsyncClient | None) -> Any:
    _cache_missing_sniffio()
    if client is not None:
        yield client
        return
    import httpx  # only polling pays for httpx

    # No per-phase timeout: one asyncio deadline per request bounds connect, headers and body.
    async with httpx.AsyncClient(
        follow_redirects=False,
        timeout=None,  # noqa: S113
        verify=_ssl_context(),
    ) as own:
        yield own


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
    current = _check_now(now)
    limit = _check_timeout(timeout)
    url = check_base_url(api_base) + "/api/oauth/usage"
    async with _client_for(client) as active:
        return await _poll(profile, client=active, now=current, uid=uid, timeout=limit, url=url)


async def _poll_entry(
    profile: Profile,
    *,
    client: httpx.AsyncClient,
    now: float,
    uid: int | None,
    timeout: float,
    url: str,
) -> PollEntry:
    backoff = read_backoff(profile.config_dir, uid=uid, now=now)
    if backoff is not None and backoff.waiting(now):
        return PollEntry(
            label=profile.label,
            result=PollFailed(failure="backoff"),
            backoff_until=backoff.until,
        )
    result, retry_after = await _poll_detailed(
        profile, client=client, now=now, uid=uid, timeout=timeout, url=url
    )
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
    current = _check_now(now)
    limit = _check_timeout(timeout)
    url = check_base_url(api_base) + "/api/oauth/usage"
    targets = list(profiles) if profiles is not None else discover_profiles(**(discover or {}))
    async with _client_for(client) as active:

        async def isolated(profile: Profile) -> PollEntry:
            try:
                return await _poll_entry(
                    profile, client=active, now=current, uid=uid, timeout=limit, url=url
                )
            except Exception:  # one profile's surprise never stops another
                return PollEntry(label=profile.label, result=PollFailed(failure="io"))

        return list(await asyncio.gather(*(isolated(p) for p in targets)))
