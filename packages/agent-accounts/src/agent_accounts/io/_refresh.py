"""refresh_if_needed: renew a profile's OAuth token under the agent client's locks, byte-exactly.

Refresh tokens are single-use, so two refreshers racing on one login spend the token twice and log
the user out. Every step below exists to make this the refresher that never does that: it reads
the file through the gate, takes both `proper-lockfile` locks (never stealing a held one), checks
nothing changed, spends the token once, and writes the result beside the file and renames it over,
re-checking that no other writer replaced the login in flight. It never logs, and no token leaves
it except in the request body and the credentials file.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import inspect
import json
import math
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from agent_accounts import login_state_from_credentials, needs_refresh, redact_secrets
from agent_accounts.io._gate import GateRefused, read_gated
from agent_accounts.io._layout import (
    Layout,
    LayoutError,
    detect_layout,
    parse_json_object,
    serialize,
)
from agent_accounts.io._locks import (
    HEARTBEAT_INTERVAL_S,
    HOLDER_RECORD_MAX_BYTES,
    HOLDER_RECORD_NAME,
    LockHeldError,
    RefreshLocks,
    keep_fresh,
    pid_is_gone,
)
from agent_accounts.io._urls import check_base_url

if TYPE_CHECKING:
    import httpx

    from agent_accounts.io import Profile

__all__ = [
    "DEFAULT_AUTH_URL",
    "DEFAULT_REFRESH_SCOPES",
    "MAX_REFRESH_TIMEOUT_MS",
    "OAUTH_CLIENT_ID",
    "RefreshFailed",
    "RefreshFailure",
    "RefreshFailureDeposit",
    "RefreshFresh",
    "RefreshLocked",
    "RefreshRefreshed",
    "RefreshRefreshedElsewhere",
    "RefreshResult",
    "RefreshSkipped",
    "refresh_if_needed",
]

MAX_REFRESH_TIMEOUT_MS: Final = 30_000
"""Cap on `timeout`: the agent client judges a lock older than 60 s stale."""
DEFAULT_REFRESH_TIMEOUT_S: Final = 10.0
OAUTH_CLIENT_ID: Final = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
"""The agent client's public OAuth client id (release line 2.1.x), used when none is stored."""
DEFAULT_REFRESH_SCOPES: Final[tuple[str, ...]] = (
    "user:profile",
    "user:inference",
    "user:sessions:agent_code",
)
"""Scopes asked for when no client id is stored (release line 2.1.x)."""
DEFAULT_AUTH_URL: Final = "https://console.anthropic.com"

CREDENTIALS_NAME: Final = ".credentials.json"
CREDENTIALS_MAX_BYTES: Final = 64 * 1024
TOKEN_RESPONSE_MAX_BYTES: Final = 64 * 1024
TOKEN_MAX_CHARS: Final = 4096
WRITE_ATTEMPTS: Final = 4
UNREADABLE_WAIT_S: Final = 0.1
PAUSE_ENV: Final = "AGENT_ACCOUNTS_TEST_PAUSE"
"""Test-only seam: `<step>:<marker file>` pauses a refresh at that step (see `_pause`)."""
PAUSE_STEPS: Final = ("config-locked", "locked", "requested", "temp-written", "renamed")
_PAUSE_LIMIT_S: Final = 30.0

_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,200}")
_PLAIN_LABEL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_CREDENTIALS_TEMP: Final = re.compile(r"\.credentials\.json\.(\d+)\.[0-9a-f]+\.tmp")
_RECORD_TEMP: Final = re.compile(re.escape(HOLDER_RECORD_NAME) + r"\.(\d+)\.[0-9a-f]+\.tmp")
_EPOCH_MS_MIN: Final = 1e12
_EPOCH_MS_MAX: Final = 1e14
_RELOGIN_FAILURES: Final = frozenset(
    {
        "login-required",
        "http-400",
        "http-401",
        "http-403",
        "unrecognized-format",
        "write-conflict",
        "write-failed",
    }
)
_CONTEXT_LINE: Final = (
    "The account library could not renew this profile's OAuth token; "
    "if it keeps failing, log in again with the agent client for that profile."
)
UNLABELLED: Final = "unlabelled"

RefreshFailure: TypeAlias = str
"""`login-required`, `unrecognized-format`, `write-conflict`, `write-failed`, `http-<status>`,
`network`, `malformed` or `io`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshFresh:
    """The access token is not due: nothing was done."""

    status: Literal["fresh"] = "fresh"


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshRefreshed:
    """New credentials were written; the access token now expires at `expires_at_ms`."""

    status: Literal["refreshed"] = "refreshed"
    expires_at_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshRefreshedElsewhere:
    """The file changed before the request, or another login or a logout replaced it after."""

    status: Literal["refreshed-elsewhere"] = "refreshed-elsewhere"


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshLocked:
    """A refresh lock is held by someone else; the next poll tries again."""

    status: Literal["locked"] = "locked"


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshSkipped:
    """No refresh is possible here: `reason` is `missing`, a gate refusal or `not-refreshable`."""

    status: Literal["skipped"] = "skipped"
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshFailed:
    """The refresh failed with `failure`; `deposited` tells whether `on_failure` took a deposit."""

    status: Literal["failed"] = "failed"
    failure: RefreshFailure
    deposited: bool


RefreshResult: TypeAlias = (
    RefreshFresh
    | RefreshRefreshed
    | RefreshRefreshedElsewhere
    | RefreshLocked
    | RefreshSkipped
    | RefreshFailed
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshFailureDeposit:
    """An owner-queue item filed once per failed refresh through `on_failure`."""

    asker: Literal["account"] = "account"
    kind: Literal["do"] = "do"
    summary: str
    context: str
    deposit_id: str

    @classmethod
    def for_failure(
        cls, label: str, failure: RefreshFailure, now_ms: float
    ) -> RefreshFailureDeposit:
        """Build the deposit for `failure` of the profile `label` on the UTC day of `now_ms`."""
        plain = _deposit_label(label)
        day = dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d")
        relogin = "relogin-" if failure in _RELOGIN_FAILURES else ""
        name = f"account {plain}" if plain != UNLABELLED else "an unlabelled account"
        return cls(
            summary=f"Token refresh failed for {name}: {failure}",
            context=_CONTEXT_LINE,
            deposit_id=f"token-refresh-{plain}-{relogin}{day}",
        )


def _deposit_label(label: object) -> str:
    if not isinstance(label, str) or _PLAIN_LABEL.fullmatch(label) is None:
        return UNLABELLED
    try:
        if redact_secrets(label) != label:
            return UNLABELLED
    except Exception:
        return UNLABELLED
    return label


class _Fail(Exception):
    """Internal: end the refresh with `failed` and this failure kind."""

    def __init__(self, failure: RefreshFailure) -> None:
        super().__init__(failure)
        self.failure = failure


class _Done(Exception):
    """Internal: end the refresh with this (non-failed) result."""

    def __init__(self, result: RefreshResult) -> None:
        super().__init__(result.status)
        self.result = result


@dataclass(frozen=True, slots=True, kw_only=True)
class _Tokens:
    access: str
    expires_at_ms: int | float
    refresh: str | None
    refresh_expires_at_ms: int | float | None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_arguments(now_ms: object, margin_ms: object, timeout: object) -> None:
    if now_ms is not None and (not _is_number(now_ms) or not math.isfinite(now_ms)):  # type: ignore[arg-type]
        raise ValueError("now_ms must be a finite number of epoch milliseconds")
    if not _is_number(margin_ms) or not math.isfinite(margin_ms) or margin_ms < 0:  # type: ignore[arg-type,operator]
        raise ValueError("margin_ms must be a finite, non-negative number of milliseconds")
    if timeout is not None and (
        not _is_number(timeout) or not math.isfinite(timeout) or timeout <= 0  # type: ignore[arg-type,operator]
    ):
        raise ValueError("timeout must be a positive number of seconds")


def _zero(buffer: bytearray | None) -> None:
    if buffer is not None:
        buffer[:] = bytes(len(buffer))


def _read_credentials(path: str, uid: int) -> bytearray | None:
    """Read the credentials through the gate: None when absent; raise `_Done`/`_Fail` otherwise."""
    try:
        return read_gated(path, uid=uid, max_bytes=CREDENTIALS_MAX_BYTES, strict=True)
    except GateRefused as refused:
        raise _Done(RefreshSkipped(reason=refused.reason)) from None
    except Exception:
        raise _Fail("io") from None


def _record_reader(uid: int) -> Callable[[str], bytes | bytearray | None]:
    def read(path: str) -> bytes | bytearray | None:
        return read_gated(path, uid=uid, max_bytes=HOLDER_RECORD_MAX_BYTES, strict=True)

    return read


def _oauth_block(document: dict[str, object]) -> dict[str, object] | None:
    block = document.get("agentOauth")
    return block if isinstance(block, dict) else None


def _stored_scopes(block: dict[str, object]) -> list[str]:
    raw = block.get("scopes")
    if isinstance(raw, str):
        items: list[object] = list(raw.split())
    elif isinstance(raw, list):
        items = list(raw)
    else:
        return []
    return [s for s in items if isinstance(s, str) and _SCOPE_TOKEN.fullmatch(s)]


def _is_refreshable_login(block: dict[str, object]) -> bool:
    # The agent client refreshes only inference logins (scope) or subscription logins.
    subscription = block.get("subscriptionType")
    has_subscription = isinstance(subscription, str) and subscription != ""
    return has_subscription or "user:inference" in _stored_scopes(block)


def _request_body(block: dict[str, object], refresh_token: str) -> dict[str, str]:
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


def _is_token(value: object) -> bool:
    return (
        isinstance(value, str)
        and len(value) <= TOKEN_MAX_CHARS
        and _B64TOKEN.fullmatch(value) is not None
    )


def _positive_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return None
    number = int(value)
    return number if number > 0 else None


def _epoch_ms(now_ms: int | float, seconds: int) -> int | float:
    value = now_ms + seconds * 1000
    if not _EPOCH_MS_MIN <= value <= _EPOCH_MS_MAX:
        raise _Fail("malformed")
    return value


def _parse_token_response(body: bytearray, now_ms: int | float) -> _Tokens:
    try:
        value = json.loads(bytes(body).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Fail("malformed") from None
    if not isinstance(value, dict):
        raise _Fail("malformed")
    access = value.get("access_token")
    expires_in = _positive_int(value.get("expires_in"))
    if not _is_token(access) or expires_in is None:
        raise _Fail("malformed")
    assert isinstance(access, str)
    refresh = value.get("refresh_token")
    if refresh is not None and not _is_token(refresh):
        raise _Fail("malformed")
    refresh_expires_at: int | float | None = None
    if value.get("refresh_token_expires_in") is not None:
        refresh_in = _positive_int(value.get("refresh_token_expires_in"))
        if refresh_in is None:
            raise _Fail("malformed")
        refresh_expires_at = _epoch_ms(now_ms, refresh_in)
    return _Tokens(
        access=access,
        expires_at_ms=_epoch_ms(now_ms, expires_in),
        refresh=refresh if isinstance(refresh, str) else None,
        refresh_expires_at_ms=refresh_expires_at,
    )


async def _exchange(
    client: httpx.AsyncClient | None,
    url: str,
    body: dict[str, str],
    timeout_s: float,
    now_ms: int | float,
) -> _Tokens:
    """Send the one token request; return the new tokens or raise `_Fail`."""
    import httpx

    owned = client is None
    http = httpx.AsyncClient(follow_redirects=False, timeout=timeout_s) if owned else client
    assert http is not None
    buffer = bytearray()
    try:
        async with asyncio.timeout(timeout_s):
            request = http.build_request(
                "POST",
                url,
                json=body,
                headers={"content-type": "application/json", "accept": "application/json"},
                timeout=timeout_s,
            )
            response = await http.send(request, stream=True, follow_redirects=False)
            try:
                if response.status_code != 200:
                    # Closed unread: an error body may echo the token.
                    raise _Fail(f"http-{response.status_code}")
                async for chunk in response.aiter_raw():
                    buffer += chunk
                    if len(buffer) > TOKEN_RESPONSE_MAX_BYTES:
                        raise _Fail("malformed")
            finally:
                await response.aclose()
    except _Fail:
        _zero(buffer)
        raise
    except Exception:
        # A fetch rejection's message may quote the request: dropped.
        _zero(buffer)
        raise _Fail("network") from None
    finally:
        if owned:
            with contextlib.suppress(Exception):
                await http.aclose()
    try:
        return _parse_token_response(buffer, now_ms)
    finally:
        _zero(buffer)


def _apply_tokens(document: dict[str, object], tokens: _Tokens, spent: str) -> dict[str, object]:
    """Return a copy of `document` with the new tokens; every other key keeps its place."""
    copy = dict(document)
    block = _oauth_block(copy)
    if block is None:
        raise _Fail("write-conflict")
    block = dict(block)
    block["accessToken"] = tokens.access
    block["expiresAt"] = tokens.expires_at_ms
    if tokens.refresh is not None and tokens.refresh != spent:
        block["refreshToken"] = tokens.refresh
        if tokens.refresh_expires_at_ms is not None:
            block["refreshTokenExpiresAt"] = tokens.refresh_expires_at_ms
        else:
            # An expiry recorded for the spent token would misjudge the new one.
            block.pop("refreshTokenExpiresAt", None)
    copy["agentOauth"] = block
    return copy


def _write_temp(config_dir: str, data: bytes) -> str:
    path = os.path.join(config_dir, f"{CREDENTIALS_NAME}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)
    return path


def _sync_dir(config_dir: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(config_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _sweep_stale_temps(config_dir: str, uid: int) -> None:
    """Remove temp files a killed refresher left (its pid gone); only this uid's regular files."""
    try:
        names = os.listdir(config_dir)
    except OSError:
        return
    for name in names:
        match = _CREDENTIALS_TEMP.fullmatch(name) or _RECORD_TEMP.fullmatch(name)
        if match is None or not pid_is_gone(int(match.group(1))):
            continue
        path = os.path.join(config_dir, name)
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                os.unlink(path)


def _pause_marker(step: str) -> str | None:
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return None
    name, _, marker = spec.partition(":")
    if name != step or not marker:
        return None
    with contextlib.suppress(OSError), open(marker, "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")
    return marker


async def _pause(step: str) -> None:
    """Test-only: with `AGENT_ACCOUNTS_TEST_PAUSE=<step>:<marker>`, wait at `step`.

    The marker file is created when the step is reached; the refresh resumes when a test removes
    it (or after 30 s). Unset, this does nothing.
    """
    marker = _pause_marker(step)
    if marker is None:
        return
    # Polling a file is the point: the test resuming us may be another process.
    deadline = time.monotonic() + _PAUSE_LIMIT_S
    while os.path.exists(marker) and time.monotonic() < deadline:  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.01)


def _pause_sync(step: str) -> None:
    """Test-only: as `_pause`, for a step inside the synchronous lock acquisition."""
    marker = _pause_marker(step)
    deadline = time.monotonic() + _PAUSE_LIMIT_S
    while marker is not None and os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)


@dataclass(slots=True, kw_only=True)
class _Base:
    """The credentials as they stand on disk, which the new file is built from."""

    raw: bytearray
    document: dict[str, object]
    layout: Layout

    @classmethod
    def parse(cls, raw: bytearray) -> _Base:
        document = parse_json_object(raw)
        return cls(raw=raw, document=document, layout=detect_layout(raw, document))


def _current_refresh_token(raw: bytearray) -> str | None:
    try:
        document = parse_json_object(raw)
    except LayoutError:
        return None
    block = _oauth_block(document)
    token = block.get("refreshToken") if block is not None else None
    return token if isinstance(token, str) else None


async def _write_back(
    config_dir: str, base: _Base, tokens: _Tokens, spent: str, uid: int
) -> RefreshResult:
    """Steps 5 to 7: temp file, conflict check against other writers, rename."""
    path = os.path.join(config_dir, CREDENTIALS_NAME)
    rotated = tokens.refresh is not None and tokens.refresh != spent
    write_failure = "write-failed" if rotated else "io"
    temp: str | None = None
    try:
        attempt = 0
        while attempt < WRITE_ATTEMPTS:
            if temp is None:
                data = serialize(_apply_tokens(base.document, tokens, spent), base.layout)
                try:
                    temp = _write_temp(config_dir, data)
                except OSError:
                    raise _Fail(write_failure) from None
                await _pause("temp-written")
            attempt += 1
            try:
                current = read_gated(path, uid=uid, max_bytes=CREDENTIALS_MAX_BYTES, strict=True)
            except (GateRefused, OSError):
                await asyncio.sleep(UNREADABLE_WAIT_S)  # (b) unreadable
                continue
            if current is None:
                return RefreshRefreshedElsewhere()  # (c) gone: a logout stands
            if current == base.raw:
                _zero(current)
                try:
                    os.rename(temp, path)
                except OSError:
                    raise _Fail(write_failure) from None
                temp = None
                _sync_dir(config_dir)
                await _pause("renamed")
                return RefreshRefreshed(expires_at_ms=int(tokens.expires_at_ms))
            holder = _current_refresh_token(current)
            if holder is None:
                _zero(current)
                await asyncio.sleep(UNREADABLE_WAIT_S)  # (b) half-written
                continue
            if holder != spent:
                _zero(current)
                return RefreshRefreshedElsewhere()  # (c) another login stands
            # (a) The writer kept the spent token: apply the new tokens to its file instead.
            try:
                new_base = _Base.parse(current)
            except LayoutError:
                raise _Fail("unrecognized-format") from None
            _zero(base.raw)
            base = new_base
            with contextlib.suppress(OSError):
                os.unlink(temp)
            temp = None
        raise _Fail("write-conflict")
    finally:
        _zero(base.raw)
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)


async def _refresh(
    profile: Profile,
    *,
    client: httpx.AsyncClient | None,
    margin_ms: float,
    now_ms: int | float,
    uid: int,
    timeout_s: float,
    auth_url: str,
) -> RefreshResult:
    config_dir = str(profile.config_dir)
    path = os.path.join(config_dir, CREDENTIALS_NAME)

    # Step 1: read through the gate; decide whether a refresh is due and possible.
    first = _read_credentials(path, uid)
    if first is None:
        return RefreshSkipped(reason="missing")
    try:
        return await _refresh_read(
            config_dir,
            first,
            client=client,
            margin_ms=margin_ms,
            now_ms=now_ms,
            uid=uid,
            timeout_s=timeout_s,
            auth_url=auth_url,
        )
    finally:
        _zero(first)


async def _refresh_read(
    config_dir: str,
    first: bytearray,
    *,
    client: httpx.AsyncClient | None,
    margin_ms: float,
    now_ms: int | float,
    uid: int,
    timeout_s: float,
    auth_url: str,
) -> RefreshResult:
    path = os.path.join(config_dir, CREDENTIALS_NAME)
    try:
        document = parse_json_object(first)
    except LayoutError:
        return RefreshSkipped(reason="malformed")
    state = login_state_from_credentials(document, now_ms)
    if state.status == "missing":
        return RefreshSkipped(reason="missing")
    if state.status == "refused":
        return RefreshSkipped(reason=state.reason)
    if not needs_refresh(state, now_ms, margin_ms):
        return RefreshFresh()
    block = _oauth_block(document)
    assert block is not None
    if not _is_refreshable_login(block):
        return RefreshSkipped(reason="not-refreshable")
    refresh_token = block.get("refreshToken")
    if not state.can_refresh or not _is_token(refresh_token):
        raise _Fail("login-required")
    assert isinstance(refresh_token, str)
    try:
        layout = detect_layout(first, document)
    except LayoutError:
        raise _Fail("unrecognized-format") from None
    body = _request_body(block, refresh_token)

    # Step 2: both locks, never stolen; a heartbeat keeps them fresh while held.
    locks = RefreshLocks(config_dir=config_dir, read_record=_record_reader(uid))
    try:
        locks.acquire(between=lambda: _pause_sync("config-locked"))
    except LockHeldError:
        return RefreshLocked()
    except Exception:
        raise _Fail("io") from None
    heartbeat = asyncio.create_task(keep_fresh(locks, HEARTBEAT_INTERVAL_S))
    try:
        _sweep_stale_temps(config_dir, uid)
        await _pause("locked")

        # Step 3: any change since step 1 means another refresher (or a login) won.
        second = _read_credentials(path, uid)
        if second is None or second != first:
            _zero(second)
            return RefreshRefreshedElsewhere()
        base = _Base(raw=second, document=document, layout=layout)

        # Step 4: spend the refresh token, once.
        try:
            tokens = await _exchange(client, f"{auth_url}/v1/oauth/token", body, timeout_s, now_ms)
        except BaseException:
            _zero(second)
            raise
        await _pause("requested")

        # Steps 5 to 7.
        return await _write_back(config_dir, base, tokens, refresh_token, uid)
    finally:
        heartbeat.cancel()
        with contextlib.suppress(BaseException):
            await heartbeat
        locks.release()


async def refresh_if_needed(
    profile: Profile,
    *,
    client: httpx.AsyncClient | None = None,
    margin_ms: float,
    now_ms: int | float | None = None,
    uid: int | None = None,
    timeout: float | None = None,
    on_failure: Callable[[RefreshFailureDeposit], object] | None = None,
    auth_url: str = DEFAULT_AUTH_URL,
) -> RefreshResult:
    """Renew the profile's access token when due, under the agent client's locks."""
    _check_arguments(now_ms, margin_ms, timeout)
    url = check_base_url(auth_url, name="auth_url")
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    timeout_s = min(
        float(timeout) if timeout is not None else DEFAULT_REFRESH_TIMEOUT_S,
        MAX_REFRESH_TIMEOUT_MS / 1000,
    )
    try:
        return await _refresh(
            profile,
            client=client,
            margin_ms=margin_ms,
            now_ms=now,
            uid=os.getuid() if uid is None else uid,
            timeout_s=timeout_s,
            auth_url=url,
        )
    except _Done as done:
        return done.result
    except _Fail as fail:
        failure = fail.failure
    except Exception:
        # Last resort so nothing but ValueError ever escapes; the message may hold a token.
        failure = "io"
    deposited = False
    if on_failure is not None:
        try:
            outcome = on_failure(RefreshFailureDeposit.for_failure(profile.label, failure, now))
            if inspect.isawaitable(outcome):
                await outcome
            deposited = True
        except Exception:
            deposited = False
    return RefreshFailed(failure=failure, deposited=deposited)
