"""Refresh steps no outside fault reaches on demand, forced through the modules' seams: the
rename after the exchange failing, a half-written file at step 6, the 30 s request cap. White-box:
each patches a name inside `io._install` or `io._refresh`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from accounts_endpoint_support import (
    MARGIN,
    NOW,
    Endpoint,
    assert_clean,
    cred_path,
    ok_body,
    run,
    seed,
)
from accounts_refresh_support import credentials
from agent_accounts.io import MAX_REFRESH_TIMEOUT_MS, Profile, RefreshFailed, refresh_if_needed
from agent_accounts.io import _credentials as credentials_module
from agent_accounts.io import _install as install_module
from agent_accounts.io import _refresh as refresh_module
from agent_accounts.io._refresh_results import RefreshStop


async def test_write_failed_when_rotated_and_io_when_not(
    profile: Profile, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    before = seed(profile, credentials(expires_at_ms=NOW - 1))
    monkeypatch.setattr(install_module, "rename_exchange", refuse)
    endpoint.replies.append(ok_body(rotate=True))
    result, deposits = await run(profile, endpoint)
    assert result == RefreshFailed(failure="write-failed", deposited=True)
    assert deposits[0].deposit_id == "token-refresh-work-relogin-2025-10-09"
    assert cred_path(profile).read_bytes() == before
    assert_clean(profile)
    endpoint.replies.append(ok_body(rotate=False))
    result, deposits = await run(profile, endpoint)
    assert result == RefreshFailed(failure="io", deposited=True)
    assert deposits[0].deposit_id == "token-refresh-work-2025-10-09"
    assert_clean(profile)


async def test_step6b_half_written_file_is_read_again_after_a_wait(
    profile: Profile, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    path = cred_path(profile)
    whole = path.read_bytes()
    # Every read of the credentials file goes through `read_credentials_raw`'s gated read.
    real: Callable[..., bytearray | None] = getattr(credentials_module, "read_gated")  # noqa: B009
    calls: list[int] = []

    def flaky(p: str, **kwargs: Any) -> bytearray | None:
        if p == str(path):
            calls.append(1)
        if p == str(path) and len(calls) == 3:
            path.write_bytes(whole[: len(whole) // 2])  # step 6, first read: half-written
        elif p == str(path) and len(calls) == 4:
            path.write_bytes(whole)  # the writer finished
        return real(p, **kwargs)

    monkeypatch.setattr(credentials_module, "read_gated", flaky)
    endpoint.replies.append(ok_body())
    result, _ = await run(profile, endpoint)
    assert result.status == "refreshed"
    # Steps 1 and 3, step 6 twice (half-written, then whole), then the journal's look at the
    # file once the locks are released.
    assert len(calls) == 5
    assert_clean(profile)


async def test_timeout_is_capped_at_thirty_seconds(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[float] = []

    async def fake_exchange(client: Any, url: str, body: Any, timeout_s: float) -> Any:
        seen.append(timeout_s)
        raise RefreshStop(failure="network")

    monkeypatch.setattr(refresh_module, "send_token_request", fake_exchange)
    seed(profile, credentials(expires_at_ms=NOW - 1))
    await refresh_if_needed(
        profile, margin_ms=MARGIN, now_ms=NOW, timeout=3600, auth_url="https://a.test"
    )
    await refresh_if_needed(profile, margin_ms=MARGIN, now_ms=NOW, auth_url="https://a.test")
    assert seen == [MAX_REFRESH_TIMEOUT_MS / 1000, 10.0]
