"""refresh_if_needed: renew a profile's OAuth token under the agent client's locks, crash-safely.

Refresh tokens are single-use: a refresher that spends one and then loses the answer logs its
user out. The steps, each in its own module:

1. read the file through the gate and decide (pure: `agent_accounts._oauth`); a token the
   endpoint refused before is not sent again (`_refused`);
2. take both locks, intent before effect, taking over only a dead holder's or a stale lock
   (`_locks`);
3. re-read: a change means someone else refreshed; a dead refresher's complete answer for this
   very token is rolled forward instead of spending the token again (`_install.dead_answer`);
4. create and size the temp file, then spend the token once (`_token_request`);
5. to 7. fill and sync the temp file, exchange it into place, swap back if another writer got in
   (`_install.install`); release the locks.

The journal (`_journal`) gets a `spend` line just before the request, an `install` line (the new
login's generation) once its answer is synced to the temp file and before the exchange, and, once
the locks are released, the outcome and any change of the file made elsewhere; it never fails a
refresh.

It never logs; no token leaves it except in the request body and the credentials file.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from agent_accounts import login_state_from_credentials, needs_refresh
from agent_accounts._journal import GENERATION_HEX, generation
from agent_accounts._numbers import plain_number
from agent_accounts._oauth import (
    DEFAULT_REFRESH_SCOPES,
    OAUTH_CLIENT_ID,
    is_b64token,
    is_refreshable_login,
    oauth_block,
    parse_token_answer,
    refresh_request_body,
    token_fingerprint,
)

from ._credentials import read_credentials_raw
from ._gate import GateRefused, read_gated, zero
from ._install import (
    Base,
    dead_answer,
    install,
    prepare_temp,
)
from ._journal import (
    RefreshNotes,
    process_name,
    record_install,
    record_refresh,
    record_spend,
)
from ._layout import Layout, LayoutError, detect_layout, parse_json_object
from ._lock_dirs import HEARTBEAT_INTERVAL_S, HOLDER_RECORD_MAX_BYTES
from ._locks import LockHeldError, RefreshLocks, keep_fresh
from ._pause import PAUSE_ENV, PAUSE_STEPS, pause, pause_sync
from ._refresh_results import (
    RefreshFailed,
    RefreshFailure,
    RefreshFailureDeposit,
    RefreshFresh,
    RefreshLocked,
    RefreshRefreshedElsewhere,
    RefreshResult,
    RefreshSkipped,
    RefreshStop,
)
from ._refused import is_refused, remember_refused
from ._token_request import send_token_request, warm_up
from ._urls import check_base_url

if TYPE_CHECKING:
    import httpx

    from ._profiles import Profile

__all__ = [
    "DEFAULT_AUTH_URL",
    "DEFAULT_REFRESH_SCOPES",
    "MAX_REFRESH_TIMEOUT_MS",
    "OAUTH_CLIENT_ID",
    "PAUSE_ENV",
    "PAUSE_STEPS",
    "refresh_if_needed",
]

MAX_REFRESH_TIMEOUT_MS: Final = 30_000
"""Cap on `timeout`: the agent client judges a lock older than 60 s stale."""
DEFAULT_REFRESH_TIMEOUT_S: Final = 10.0
DEFAULT_AUTH_URL: Final = "https://console.anthropic.com"
_REFUSED_STATUSES: Final = frozenset({400, 401})


def _finite(value: object) -> bool:
    return plain_number(value) is not None


def _check_arguments(now_ms: object, margin_ms: object, timeout: object) -> None:
    if now_ms is not None and not _finite(now_ms):
        raise ValueError("now_ms must be a finite number of epoch milliseconds")
    if not _finite(margin_ms) or margin_ms < 0:  # type: ignore[operator]
        raise ValueError("margin_ms must be a finite, non-negative number of milliseconds")
    if timeout is not None and (not _finite(timeout) or timeout <= 0):  # type: ignore[operator]
        raise ValueError("timeout must be a positive number of seconds")


def _read(config_dir: str, uid: int) -> bytearray | None:
    try:
        return read_credentials_raw(config_dir, uid=uid)
    except GateRefused as refused:
        raise RefreshStop(RefreshSkipped(reason=refused.reason)) from None
    except Exception:
        raise RefreshStop(failure="io") from None


def _record_reader(uid: int) -> Callable[[str], bytes | bytearray | None]:
    def read(path: str) -> bytes | bytearray | None:
        return read_gated(path, uid=uid, max_bytes=HOLDER_RECORD_MAX_BYTES, strict=True)

    return read


@dataclass(frozen=True, slots=True, kw_only=True)
class _Call:
    """One `refresh_if_needed` call's checked arguments: built once, passed down."""

    config_dir: str
    client: httpx.AsyncClient | None
    margin_ms: float
    now_ms: float
    uid: int
    timeout_s: float
    auth_url: str


async def _refresh(call: _Call, first: bytearray, notes: RefreshNotes) -> RefreshResult:
    config_dir, uid, now_ms = call.config_dir, call.uid, call.now_ms
    # Step 1: is a refresh due and possible?
    try:
        document = parse_json_object(first)
    except LayoutError:
        return RefreshSkipped(reason="malformed")
    state = login_state_from_credentials(document, now_ms)
    if state.status == "missing":
        return RefreshSkipped(reason="missing")
    if state.status == "refused":
        return RefreshSkipped(reason=state.reason)
    if not needs_refresh(state, now_ms, call.margin_ms):
        return RefreshFresh()
    block = oauth_block(document)
    assert block is not None
    if not is_refreshable_login(block):
        return RefreshSkipped(reason="not-refreshable")
    spent = block.get("refreshToken")
    if not state.can_refresh or not is_b64token(spent):
        raise RefreshStop(failure="login-required")
    assert isinstance(spent, str)
    try:
        layout: Layout = detect_layout(first, document)
    except LayoutError:
        raise RefreshStop(failure="unrecognized-format") from None
    fingerprint = token_fingerprint(spent)
    notes.gen = fingerprint[:GENERATION_HEX]  # the journal's name for this login
    access = block.get("accessToken")
    notes.acc = generation(access) if isinstance(access, str) else None
    if is_refused(config_dir, fingerprint, uid):
        raise RefreshStop(failure="login-required")
    body = refresh_request_body(block, spent)

    # Step 2: both locks; a heartbeat keeps them fresh while held.
    locks = RefreshLocks(config_dir=config_dir, read_record=_record_reader(uid))
    await locks.judge_ahead()  # a lock dir dated ahead that stays so is stale
    try:
        locks.acquire(between=lambda: pause_sync("config-locked"))
    except LockHeldError as held:
        return RefreshLocked(age_seconds=held.age_seconds)
    except Exception:
        raise RefreshStop(failure="io") from None
    heartbeat = asyncio.create_task(keep_fresh(locks, HEARTBEAT_INTERVAL_S))
    try:
        await pause("locked")
        # Step 3: any change since step 1 means another refresher (or a login) won.
        second = _read(config_dir, uid)
        if second is None or second != first:
            zero(second)
            return RefreshRefreshedElsewhere()
        base = Base(raw=second, document=document, layout=layout)
        size = len(second)
        try:
            rolled = dead_answer(config_dir, uid, spent, fingerprint)
            temp = prepare_temp(config_dir, fingerprint, size)  # space before spending
        except OSError:
            zero(second)
            raise RefreshStop(failure="io") from None
        dead_temp: str | None = None
        if rolled is not None:
            answer, dead_temp = rolled
            notes.answer, notes.rolled = answer, True
        else:
            # Step 4: spend the refresh token, once; the journal says so first (its line is
            # written after the temp file's space is taken, so it can never take that space).
            record_spend(config_dir, uid, notes)
            try:
                answer_bytes = await send_token_request(
                    call.client, f"{call.auth_url}/v1/oauth/token", body, call.timeout_s
                )
            except RefreshStop as stop:
                temp.discard()
                zero(second)
                if stop.http_status in _REFUSED_STATUSES:
                    remember_refused(config_dir, fingerprint, uid)
                raise
            try:
                parsed = parse_token_answer(answer_bytes, now_ms)
            finally:
                zero(answer_bytes)
            if parsed is None:
                temp.discard()
                zero(second)
                raise RefreshStop(failure="malformed")
            answer = parsed
            notes.answer = answer  # a reference only: the journal adds nothing to the window
            await pause("requested")
        # Steps 5 to 7, for this run's answer or a dead refresher's rolled forward.
        try:
            return await install(
                config_dir,
                base,
                answer=answer,
                spent=spent,
                uid=uid,
                temp=temp,
                rolled_forward=dead_temp is not None,
                on_filled=lambda: record_install(config_dir, uid, notes),
            )
        finally:
            if dead_temp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(dead_temp)
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
    now_ms: float | None = None,
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
    call = _Call(
        config_dir=str(profile.config_dir),
        client=client,
        margin_ms=margin_ms,
        now_ms=now,
        uid=os.getuid() if uid is None else uid,
        timeout_s=timeout_s,
        auth_url=url,
    )
    # Before the first read: loading modules between the read and the locks would widen the
    # window in which another writer makes this run's read stale.
    warm_up()
    process_name()  # read once here, not inside the locks where the spend line needs it
    notes = RefreshNotes()
    result = await _attempt(call, profile.label, notes, on_failure)
    # After the locks are released: a journal that cannot be written changes nothing above.
    record_refresh(call.config_dir, call.uid, notes, result)
    return result


async def _attempt(
    call: _Call,
    label: str,
    notes: RefreshNotes,
    on_failure: Callable[[RefreshFailureDeposit], object] | None,
) -> RefreshResult:
    failure: RefreshFailure = "io"
    http_status: int | None = None
    first: bytearray | None = None
    try:
        first = _read(call.config_dir, call.uid)
        if first is None:
            return RefreshSkipped(reason="missing")
        return await _refresh(call, first, notes)
    except RefreshStop as stop:
        if stop.result is not None:
            return stop.result
        failure, http_status = stop.failure, stop.http_status
    except Exception:
        # Last resort so nothing but ValueError escapes; the message may hold a token.
        failure = "io"
    finally:
        zero(first)
    deposited = False
    if on_failure is not None:
        deposit = RefreshFailureDeposit.for_failure(
            label, failure, call.now_ms, http_status=http_status
        )
        try:
            outcome = on_failure(deposit)
            if inspect.isawaitable(outcome):
                await outcome
            deposited = True
        except Exception:
            deposited = False
    return RefreshFailed.failed(failure, deposited=deposited, http_status=http_status)
