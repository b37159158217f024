"""refresh_if_needed: every result row and step, on a real local server and under respx."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import subprocess
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from accounts_endpoint_support import (
    HOUR_MS,
    MARGIN,
    NOW,
    Endpoint,
    Reply,
    assert_clean,
    cred_path,
    ok_body,
    run,
    seed,
)
from accounts_refresh_support import (
    CANARY,
    PAUSE_ENV,
    assert_no_canary,
    canary_token,
    credentials,
    dump,
    files_without_canary,
    serve_loopback,
    write_file,
)
from agent_accounts.io import (
    DEFAULT_REFRESH_SCOPES,
    OAUTH_CLIENT_ID,
    Profile,
    RefreshFailed,
    RefreshFailureDeposit,
    RefreshFresh,
    RefreshLocked,
    RefreshRefreshed,
    RefreshRefreshedElsewhere,
    RefreshSkipped,
    refresh_if_needed,
)

NODE_DIR = Path(__file__).resolve().parent / "node"


def stringify(doc: dict[str, Any], indent: str | None) -> bytes:
    """What the agent client's node writes: `JSON.stringify(doc, null, indent)`, by node itself."""
    script = (
        "const fs = require('fs');"
        "process.stdout.write(JSON.stringify(JSON.parse(fs.readFileSync(0)), null, process.argv[1]))"
    )
    done = subprocess.run(
        ["node", "-e", script, indent or ""],
        input=json.dumps(doc).encode(),
        capture_output=True,
        check=True,
        cwd=NODE_DIR,
    )
    return done.stdout


@pytest.fixture(autouse=True)
def no_logs(caplog: pytest.LogCaptureFixture) -> Any:
    caplog.set_level(logging.DEBUG)
    yield
    # It never logs; and nothing any library logged may hold a canary.
    assert [r for r in caplog.records if r.name.startswith("agent_accounts")] == []
    for record in caplog.records:
        assert CANARY not in record.getMessage()


# --- fresh -----------------------------------------------------------------------------------


async def test_fresh_when_not_due_sends_nothing(profile: Profile, endpoint: Endpoint) -> None:
    before = seed(profile, credentials(expires_at_ms=NOW + 2 * HOUR_MS))
    result, deposits = await run(profile, endpoint)
    assert result == RefreshFresh()
    assert endpoint.requests == []
    assert deposits == []
    assert cred_path(profile).read_bytes() == before
    assert_clean(profile)


# --- refreshed -------------------------------------------------------------------------------


@pytest.mark.parametrize("indent", [None, "  ", "    ", "\t"], ids=["compact", "2", "4", "tab"])
async def test_refreshed_changes_only_the_token_keys_in_every_layout(
    profile: Profile, endpoint: Endpoint, indent: str | None
) -> None:
    old_refresh = canary_token("ort")
    doc = credentials(
        expires_at_ms=NOW + 60_000,
        refresh=old_refresh,
        extra_block={"refreshTokenExpiresAt": NOW + 99 * HOUR_MS, "rateLimitTier": "tier_x"},
        extra_top={"zeta": [1.5, 1e21, None], "10": "int key"},
    )
    write_file(cred_path(profile), stringify(doc, indent))
    reply = ok_body(refresh_token_expires_in=7200)
    endpoint.replies.append(reply)
    result, deposits = await run(profile, endpoint)
    sent = json.loads(reply.body)
    assert result == RefreshRefreshed(expires_at_ms=NOW + 28800 * 1000)
    assert deposits == []
    # The file is what JSON.stringify would write with the four keys replaced in place.
    expected = json.loads(json.dumps(doc))
    block = expected["agentOauth"]
    block["accessToken"] = sent["access_token"]
    block["refreshToken"] = sent["refresh_token"]
    block["expiresAt"] = NOW + 28800 * 1000
    block["refreshTokenExpiresAt"] = NOW + 7200 * 1000
    assert cred_path(profile).read_bytes() == stringify(expected, indent)
    assert stat.S_IMODE(cred_path(profile).stat().st_mode) == 0o600
    assert endpoint.requests[0]["refresh_token"] == old_refresh
    assert_clean(profile)
    assert_no_canary(result, deposits)


async def test_request_is_one_json_post_with_the_spec_fields(
    profile: Profile, endpoint: Endpoint
) -> None:
    token = canary_token("ort")
    seed(profile, credentials(expires_at_ms=NOW - 1, refresh=token))
    endpoint.replies.append(ok_body())
    await run(profile, endpoint)
    assert endpoint.requests == [
        {
            "grant_type": "refresh_token",
            "refresh_token": token,
            "client_id": OAUTH_CLIENT_ID,
            "scope": " ".join(DEFAULT_REFRESH_SCOPES),
        }
    ]
    assert endpoint.headers[0]["content-type"] == "application/json"
    # The one sender asks for an uncompressed answer, as the usage poll does.
    assert endpoint.headers[0]["accept-encoding"] == "identity"


async def test_a_compressed_answer_is_undone_within_the_cap_and_a_bomb_is_malformed(
    profile: Profile, endpoint: Endpoint
) -> None:
    import gzip

    seed(profile, credentials(expires_at_ms=NOW - 1, refresh=canary_token("ort")))
    good = ok_body()
    endpoint.replies.append(
        Reply(body=gzip.compress(good.body), headers={"content-encoding": "gzip"})
    )
    result, _ = await run(profile, endpoint)
    assert result.status == "refreshed"
    before = seed(profile, credentials(expires_at_ms=NOW - 1, refresh=canary_token("ort")))
    bomb = gzip.compress(b" " * (2 * 1024 * 1024) + good.body)  # 2 MiB of JSON whitespace
    endpoint.replies.append(Reply(body=bomb, headers={"content-encoding": "gzip"}))
    result, _ = await run(profile, endpoint)
    assert isinstance(result, RefreshFailed)
    assert result.failure == "malformed"
    assert cred_path(profile).read_bytes() == before
    assert_clean(profile)


async def test_a_redirect_a_following_client_would_take_is_a_network_failure(
    profile: Profile,
) -> None:
    hits: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        hits.append(request.path)
        if request.path == "/v1/oauth/token":
            return web.Response(status=307, headers={"location": "/elsewhere"})
        return web.json_response({})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner, url = await serve_loopback(app)
    try:
        before = seed(profile, credentials(expires_at_ms=NOW - 1, refresh=canary_token("ort")))
        async with httpx.AsyncClient(follow_redirects=True) as client:
            result = await refresh_if_needed(
                profile,
                client=client,
                auth_url=url,
                margin_ms=MARGIN,
                now_ms=NOW,
            )
    finally:
        await runner.cleanup()
    assert isinstance(result, RefreshFailed)
    assert result.failure == "network"
    assert hits == ["/v1/oauth/token"]  # the refresh token never went to the redirect's target
    assert cred_path(profile).read_bytes() == before


@pytest.mark.parametrize(
    ("extra", "client_id", "scope"),
    [
        ({}, OAUTH_CLIENT_ID, " ".join(DEFAULT_REFRESH_SCOPES)),
        (
            {"scopes": ["user:inference", "user:projects:abc", "user:projects:abc"]},
            OAUTH_CLIENT_ID,
            " ".join([*DEFAULT_REFRESH_SCOPES, "user:projects:abc"]),
        ),
        (
            {"clientId": "custom-client", "scopes": ["user:inference"]},
            "custom-client",
            "user:inference",
        ),
        (
            {"clientId": "custom-client", "scopes": []},
            "custom-client",
            " ".join(DEFAULT_REFRESH_SCOPES),
        ),
        (
            {"scopes": "user:inference user:projects:p1"},
            OAUTH_CLIENT_ID,
            " ".join([*DEFAULT_REFRESH_SCOPES, "user:projects:p1"]),
        ),
    ],
)
async def test_client_id_and_scope_rules(
    profile: Profile, endpoint: Endpoint, extra: dict[str, Any], client_id: str, scope: str
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1, extra_block=extra))
    endpoint.replies.append(ok_body())
    result, _ = await run(profile, endpoint)
    assert result.status == "refreshed"
    assert endpoint.requests[0]["client_id"] == client_id
    assert endpoint.requests[0]["scope"] == scope


async def test_unrotated_refresh_keeps_refresh_token_and_its_expiry(
    profile: Profile, endpoint: Endpoint
) -> None:
    token = canary_token("ort")
    seed(
        profile,
        credentials(
            expires_at_ms=NOW - 1,
            refresh=token,
            extra_block={"refreshTokenExpiresAt": NOW + 50 * HOUR_MS},
        ),
    )
    endpoint.replies.append(ok_body(rotate=False))
    result, _ = await run(profile, endpoint)
    assert result.status == "refreshed"
    block = json.loads(cred_path(profile).read_bytes())["agentOauth"]
    assert block["refreshToken"] == token
    assert block["refreshTokenExpiresAt"] == NOW + 50 * HOUR_MS


async def test_rotation_without_refresh_expiry_drops_the_spent_tokens_expiry(
    profile: Profile, endpoint: Endpoint
) -> None:
    seed(
        profile,
        credentials(
            expires_at_ms=NOW - 1, extra_block={"refreshTokenExpiresAt": NOW + 50 * HOUR_MS}
        ),
    )
    endpoint.replies.append(ok_body())
    await run(profile, endpoint)
    block = json.loads(cred_path(profile).read_bytes())["agentOauth"]
    assert "refreshTokenExpiresAt" not in block


# --- locked ----------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["config", "legacy"])
async def test_locked_when_a_fresh_lock_dir_is_held_and_it_is_never_stolen(
    profile: Profile, endpoint: Endpoint, which: str
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    held = (
        Path(profile.config_dir) / ".oauth_refresh.lock"
        if which == "config"
        else Path(os.path.realpath(profile.config_dir) + ".lock")
    )
    held.mkdir()
    os.utime(held, (time.time() - 50, time.time() - 50))  # 50 s: still fresh for the agent client
    before = held.stat()
    result, deposits = await run(profile, endpoint)
    assert isinstance(result, RefreshLocked)
    assert result.age_seconds is not None
    assert 49 <= result.age_seconds < 70
    assert deposits == []
    assert endpoint.requests == []
    after = held.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    held.rmdir()
    assert_clean(profile)


@pytest.mark.parametrize("which", ["config", "legacy"])
async def test_a_stale_lock_dir_is_removed_and_retaken_as_the_agent_client_does(
    profile: Profile, endpoint: Endpoint, which: str
) -> None:
    """AMENDMENTS: a lock dir whose mtime is older than 60 s is stale and may be retaken."""
    seed(profile, credentials(expires_at_ms=NOW - 1))
    held = (
        Path(profile.config_dir) / ".oauth_refresh.lock"
        if which == "config"
        else Path(os.path.realpath(profile.config_dir) + ".lock")
    )
    held.mkdir()
    os.utime(held, (time.time() - 61, time.time() - 61))
    endpoint.replies.append(ok_body())
    result, deposits = await run(profile, endpoint)
    assert result.status == "refreshed"
    assert deposits == []
    assert len(endpoint.requests) == 1
    assert not held.exists()
    assert_clean(profile)


# --- skipped ---------------------------------------------------------------------------------


async def test_skipped_missing_file(profile: Profile, endpoint: Endpoint) -> None:
    result, deposits = await run(profile, endpoint)
    assert result == RefreshSkipped(reason="missing")
    assert deposits == []


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ("mode", "mode-too-wide"),
        ("symlink", "not-a-regular-file"),
        ("fifo", "not-a-regular-file"),
        ("hardlink", "hard-linked"),
        ("owner", "foreign-owner"),
        ("oversize", "malformed"),
        ("no-block", "missing"),
        ("no-access", "malformed"),
        ("not-json", "malformed"),
        ("api-login", "not-refreshable"),
    ],
)
async def test_skipped_reasons(
    profile: Profile, endpoint: Endpoint, tmp_path: Path, setup: str, reason: str
) -> None:
    path = cred_path(profile)
    doc = credentials(expires_at_ms=NOW - 1)
    if setup == "mode":
        write_file(path, dump(doc), mode=0o640)
    elif setup == "symlink":
        target = tmp_path / "elsewhere.json"
        write_file(target, dump(doc))
        path.symlink_to(target)
    elif setup == "fifo":
        os.mkfifo(path, 0o600)
    elif setup == "hardlink":
        write_file(path, dump(doc))
        os.link(path, tmp_path / "second-name")
    elif setup == "owner":
        write_file(path, dump(doc))
    elif setup == "oversize":
        doc["pad"] = "x" * (64 * 1024)
        write_file(path, dump(doc))
    elif setup == "no-block":
        write_file(path, b'{"other":1}')
    elif setup == "no-access":
        del doc["agentOauth"]["accessToken"]
        write_file(path, dump(doc))
    elif setup == "not-json":
        write_file(path, b'{"agentOauth":')
    elif setup == "api-login":
        doc["agentOauth"]["scopes"] = ["user:profile"]
        del doc["agentOauth"]["subscriptionType"]
        write_file(path, dump(doc))
    uid = os.getuid() + 4242 if setup == "owner" else None
    result, deposits = await run(profile, endpoint, uid=uid)
    assert isinstance(result, RefreshSkipped)
    assert result.reason == reason
    assert deposits == []
    assert endpoint.requests == []
    assert_clean(profile)


# --- failed ----------------------------------------------------------------------------------


async def test_login_required_without_a_usable_refresh_token(
    profile: Profile, endpoint: Endpoint
) -> None:
    seed(
        profile, credentials(expires_at_ms=NOW - 1, extra_block={"refreshTokenExpiresAt": NOW - 5})
    )
    result, deposits = await run(profile, endpoint)
    assert result == RefreshFailed(failure="login-required", deposited=True)
    assert [d.deposit_id for d in deposits] == ["token-refresh-work-relogin-2025-10-09"]
    assert endpoint.requests == []


@pytest.mark.parametrize("data", [b"\n", b" "])
async def test_unrecognized_format_fails_before_any_request(
    profile: Profile, endpoint: Endpoint, data: bytes
) -> None:
    write_file(cred_path(profile), dump(credentials(expires_at_ms=NOW - 1)) + data)
    result, _ = await run(profile, endpoint)
    assert result == RefreshFailed(failure="unrecognized-format", deposited=True)
    assert endpoint.requests == []
    assert_clean(profile)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 429, 500, 302])
async def test_http_status_fails_and_the_echoing_body_is_dropped(
    profile: Profile, endpoint: Endpoint, status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    token = canary_token("ort")
    before = seed(profile, credentials(expires_at_ms=NOW - 1, refresh=token))
    endpoint.replies.append(
        Reply(
            status=status,
            body=json.dumps({"error": "x", "echo": token}).encode(),
            headers={"x-echo": token, "location": f"http://127.0.0.1:1/?t={token}"},
        )
    )
    result, deposits = await run(profile, endpoint)
    assert result == RefreshFailed(failure=f"http-{status}", http_status=status, deposited=True)
    assert isinstance(result, RefreshFailed)
    assert result.failure_text == f"http-{status}"
    relogin = status in (400, 401, 403)
    assert deposits[0].deposit_id == (
        f"token-refresh-work-{'relogin-' if relogin else ''}2025-10-09"
    )
    assert len(endpoint.requests) == 1  # never retried, never redirected
    assert cred_path(profile).read_bytes() == before
    assert_clean(profile)
    out = capsys.readouterr()
    assert_no_canary(result, deposits, out.out, out.err)
    files_without_canary(Path(profile.config_dir).parent, [cred_path(profile)])
    # An invalid_grant (400, 401) is remembered token-free: the same token is not sent again.
    endpoint.replies.append(ok_body())
    again, _ = await run(profile, endpoint)
    if status in (400, 401):
        assert again == RefreshFailed(failure="login-required", deposited=True)
        assert len(endpoint.requests) == 1
        # A new login (another refresh token) is tried again.
        seed(profile, credentials(expires_at_ms=NOW - 1))
        endpoint.replies.append(ok_body())
        assert (await run(profile, endpoint))[0].status == "refreshed"
    else:
        assert again.status == "refreshed"
    assert len(endpoint.requests) == 2


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[]",
        b'{"expires_in": 3600}',
        b'{"access_token": "has space", "expires_in": 3600}',
        b'{"access_token": 5, "expires_in": 3600}',
        b'{"access_token": "' + b"a" * 5000 + b'", "expires_in": 3600}',
        b'{"access_token": "ok", "expires_in": 3600, "pad": "' + b"p" * 70000 + b'"}',
        b'{"access_token": "ok", "expires_in": NaN}',
    ],
)
async def test_malformed_response(profile: Profile, endpoint: Endpoint, payload: bytes) -> None:
    """Only an answer without a usable access token is malformed."""
    before = seed(profile, credentials(expires_at_ms=NOW - 1))
    endpoint.replies.append(Reply(body=payload, headers={"content-type": "application/json"}))
    result, deposits = await run(profile, endpoint)
    assert result == RefreshFailed(failure="malformed", deposited=True)
    assert deposits[0].deposit_id == "token-refresh-work-2025-10-09"
    assert cred_path(profile).read_bytes() == before
    assert_clean(profile)


YEAR_MS = 366 * 24 * HOUR_MS


@pytest.mark.parametrize(
    ("extra", "expires_at", "refresh", "refresh_expires_at"),
    [
        pytest.param({"expires_in": 1e11}, NOW + YEAR_MS, "new", None, id="expires-1e11"),
        pytest.param({"expires_in": 99999999999999}, NOW + YEAR_MS, "new", None, id="huge-int"),
        pytest.param({"expires_in": "3600"}, NOW + 300_000, "new", None, id="expires-string"),
        pytest.param({"expires_in": 1.5}, NOW + 1000, "new", None, id="expires-fraction"),
        pytest.param({"expires_in": -5}, NOW + 300_000, "new", None, id="expires-negative"),
        pytest.param({"expires_in": True}, NOW + 300_000, "new", None, id="expires-bool"),
        pytest.param({"expires_in": None}, NOW + 300_000, "new", None, id="expires-absent"),
        pytest.param(
            {"refresh_token_expires_in": "x"}, NOW + 28_800_000, "new", None, id="refresh-exp-str"
        ),
        pytest.param(
            {"refresh_token_expires_in": 7200},
            NOW + 28_800_000,
            "new",
            NOW + 7_200_000,
            id="refresh-exp-ok",
        ),
        pytest.param({"refresh_token": "a\nb"}, NOW + 28_800_000, None, None, id="refresh-bad"),
        pytest.param({"refresh_token": 5}, NOW + 28_800_000, None, None, id="refresh-int"),
    ],
)
async def test_a_200_with_a_usable_access_token_is_never_thrown_away(
    profile: Profile,
    endpoint: Endpoint,
    extra: dict[str, Any],
    expires_at: int,
    refresh: str | None,
    refresh_expires_at: int | None,
) -> None:
    """Out-of-range lifetimes are clamped and kept; an unusable rotated token drops the spent one."""
    seed(
        profile, credentials(expires_at_ms=NOW - 1, extra_block={"refreshTokenExpiresAt": NOW + 1})
    )
    reply = ok_body(rotate=True)
    payload = json.loads(reply.body)
    payload.update(extra)
    if payload.get("expires_in") is None:
        payload.pop("expires_in")
    endpoint.replies.append(Reply(body=json.dumps(payload).encode(), headers=reply.headers))
    result, deposits = await run(profile, endpoint)
    assert result == RefreshRefreshed(expires_at_ms=expires_at)
    assert deposits == []
    block = json.loads(cred_path(profile).read_bytes())["agentOauth"]
    assert block["accessToken"] == payload["access_token"]
    assert block["expiresAt"] == expires_at
    if refresh is None:
        assert "refreshToken" not in block  # the spent one is gone too: login-required later
        assert "refreshTokenExpiresAt" not in block
    else:
        assert block["refreshToken"] == payload["refresh_token"]
        assert block.get("refreshTokenExpiresAt") == refresh_expires_at
    assert_clean(profile)


async def test_network_failure_on_timeout(profile: Profile, endpoint: Endpoint) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    endpoint.replies.append(Reply(delay=1.0))
    result, _ = await run(profile, endpoint, timeout=0.2)
    assert result == RefreshFailed(failure="network", deposited=True)
    assert_clean(profile)


async def test_network_failure_when_nothing_listens(profile: Profile, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    seed(profile, credentials(expires_at_ms=NOW - 1))
    result = await refresh_if_needed(
        profile, margin_ms=MARGIN, now_ms=NOW, auth_url=f"http://127.0.0.1:{port}"
    )
    assert result == RefreshFailed(failure="network", deposited=False)
    assert_clean(profile)


async def test_network_failure_when_the_transport_raises_with_the_token(
    profile: Profile,
) -> None:
    token = canary_token("ort")
    seed(profile, credentials(expires_at_ms=NOW - 1, refresh=token))

    def boom(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"failed sending {request.content!r}")

    async with httpx.AsyncClient(transport=httpx.MockTransport(boom)) as client:
        result = await refresh_if_needed(
            profile, client=client, margin_ms=MARGIN, now_ms=NOW, auth_url="https://a.test"
        )
    assert result == RefreshFailed(failure="network", deposited=False)
    assert_no_canary(result)


async def test_io_before_any_request_when_the_temp_cannot_be_created(
    profile: Profile, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def no_temp(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".tmp") and ".credentials.json." in str(path):
            raise OSError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    before = seed(profile, credentials(expires_at_ms=NOW - 1))
    monkeypatch.setattr(os, "open", no_temp)
    endpoint.replies.append(ok_body(rotate=True))
    result, _ = await run(profile, endpoint)
    # Space before spending: the temp file comes before the request, so the token is unspent.
    assert result == RefreshFailed(failure="io", deposited=True)
    assert endpoint.requests == []
    assert cred_path(profile).read_bytes() == before
    assert_clean(profile)


# --- steps 3 and 6: other writers ------------------------------------------------------------


@pytest.fixture
def pause(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[str], Path]:
    def arm(step: str) -> Path:
        marker = tmp_path / f"pause-{step}"
        monkeypatch.setenv(PAUSE_ENV, f"{step}:{marker}")
        return marker

    return arm


async def wait_for(path: Path) -> None:
    for _ in range(2000):
        if path.exists():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{path} never appeared")


async def test_step3_file_changed_after_step1_is_refreshed_elsewhere(
    profile: Profile, endpoint: Endpoint, pause: Callable[[str], Path]
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    marker = pause("locked")
    task = asyncio.create_task(run(profile, endpoint))
    await wait_for(marker)
    other = seed(profile, credentials(expires_at_ms=NOW + 8 * HOUR_MS))
    marker.unlink()
    result, deposits = await task
    assert result == RefreshRefreshedElsewhere()
    assert deposits == []
    assert endpoint.requests == []
    assert cred_path(profile).read_bytes() == other
    assert_clean(profile)


@pytest.mark.parametrize("change", ["other-login", "logout"])
async def test_step6c_other_login_or_logout_stands(
    profile: Profile, endpoint: Endpoint, pause: Callable[[str], Path], change: str
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    marker = pause("temp-written")
    endpoint.replies.append(ok_body())
    task = asyncio.create_task(run(profile, endpoint))
    await wait_for(marker)
    other = None
    if change == "logout":
        cred_path(profile).unlink()
    else:
        other = seed(profile, credentials(expires_at_ms=NOW + 8 * HOUR_MS))
    marker.unlink()
    result, _ = await task
    assert result == RefreshRefreshedElsewhere()
    if other is None:
        assert not cred_path(profile).exists()
    else:
        assert cred_path(profile).read_bytes() == other
    assert_clean(profile)


async def test_step6a_writer_kept_the_spent_token_gets_the_new_tokens(
    profile: Profile, endpoint: Endpoint, pause: Callable[[str], Path]
) -> None:
    token = canary_token("ort")
    doc = credentials(expires_at_ms=NOW - 1, refresh=token)
    seed(profile, doc)
    marker = pause("requested")
    reply = ok_body()
    endpoint.replies.append(reply)
    task = asyncio.create_task(run(profile, endpoint))
    await wait_for(marker)
    # The agent client rewrote the file in place (same login, one more key, 2-space layout).
    doc["newKey"] = {"kept": True}
    with open(cred_path(profile), "r+b") as handle:
        handle.truncate(0)
        handle.write(dump(doc, "  "))
    marker.unlink()
    result, _ = await task
    assert result.status == "refreshed"
    written = cred_path(profile).read_bytes()
    assert written.startswith(b'{\n  "agentOauth"')
    parsed = json.loads(written)
    assert parsed["newKey"] == {"kept": True}
    assert parsed["agentOauth"]["refreshToken"] == json.loads(reply.body)["refresh_token"]
    assert_clean(profile)


async def test_step6d_write_conflict_after_four_attempts(
    profile: Profile, endpoint: Endpoint, pause: Callable[[str], Path]
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    marker = pause("temp-written")
    endpoint.replies.append(ok_body())
    task = asyncio.create_task(run(profile, endpoint))
    await wait_for(marker)
    cred_path(profile).write_bytes(b'{"agentOauth": {')  # left half-written
    marker.unlink()
    result, deposits = await task
    assert result == RefreshFailed(failure="write-conflict", deposited=True)
    assert deposits[0].deposit_id == "token-refresh-work-relogin-2025-10-09"
    assert cred_path(profile).read_bytes() == b'{"agentOauth": {'  # left as the writer left it
    assert_clean(profile)


# --- deposits and arguments ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("work", "work"),
        ("default", "default"),
        ("has space", "unlabelled"),
        ("a" * 65, "unlabelled"),
        ("sk-ant-api03-" + "x" * 40, "unlabelled"),
        ("", "unlabelled"),
    ],
)
def test_deposit_ids_and_unlabelled_form(label: str, expected: str) -> None:
    relogin = RefreshFailureDeposit.for_failure(label, "http", NOW, http_status=401)
    other = RefreshFailureDeposit.for_failure(label, "network", NOW)
    assert relogin.deposit_id == f"token-refresh-{expected}-relogin-2025-10-09"
    assert other.deposit_id == f"token-refresh-{expected}-2025-10-09"
    assert relogin.asker == "account"
    assert relogin.kind == "do"
    assert "http-401" in relogin.summary
    assert "\n" not in relogin.summary
    assert relogin.context == other.context
    if expected == "unlabelled":
        assert label not in relogin.summary or label == ""


async def test_on_failure_raising_gives_deposited_false(
    profile: Profile, endpoint: Endpoint
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    endpoint.replies.append(Reply(status=500))

    def broken(deposit: RefreshFailureDeposit) -> None:
        raise RuntimeError("queue down")

    result = await refresh_if_needed(
        profile,
        client=endpoint.client,
        auth_url=endpoint.url,
        margin_ms=MARGIN,
        now_ms=NOW,
        on_failure=broken,
    )
    assert result == RefreshFailed(failure="http-500", http_status=500, deposited=False)


async def test_async_on_failure_is_awaited_once(profile: Profile, endpoint: Endpoint) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    endpoint.replies.append(Reply(status=500))
    got: list[RefreshFailureDeposit] = []

    async def deposit(d: RefreshFailureDeposit) -> None:
        got.append(d)

    result = await refresh_if_needed(
        profile,
        client=endpoint.client,
        auth_url=endpoint.url,
        margin_ms=MARGIN,
        now_ms=NOW,
        on_failure=deposit,
    )
    assert result == RefreshFailed(failure="http-500", http_status=500, deposited=True)
    assert len(got) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"now_ms": float("nan")},
        {"now_ms": float("inf")},
        {"now_ms": True},
        {"now_ms": "1"},
        {"margin_ms": -1},
        {"margin_ms": float("nan")},
        {"timeout": 0},
        {"timeout": -1.0},
        {"timeout": float("inf")},
    ],
)
async def test_bad_arguments_raise_value_error_with_fixed_message(
    profile: Profile, kwargs: dict[str, Any]
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    kwargs.setdefault("margin_ms", MARGIN)
    with pytest.raises(ValueError) as info:
        await refresh_if_needed(profile, auth_url="https://a.test", **kwargs)
    assert CANARY not in "".join(traceback.format_exception(info.value))
    assert_clean(profile)


@pytest.mark.parametrize(
    "url",
    ["http://example.com", "ftp://127.0.0.1", "https://user:pw@a.test", "nonsense", "http://"],
)
async def test_auth_url_must_be_https_or_loopback_http(profile: Profile, url: str) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    with pytest.raises(ValueError) as info:
        await refresh_if_needed(profile, margin_ms=MARGIN, now_ms=NOW, auth_url=url)
    assert "pw" not in str(info.value)


async def test_no_canary_anywhere_after_a_full_refresh(
    profile: Profile, endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(profile, credentials(expires_at_ms=NOW - 1))
    endpoint.replies.append(ok_body())
    result, deposits = await run(profile, endpoint)
    out = capsys.readouterr()
    assert_no_canary(result, deposits, out.out, out.err)
    files_without_canary(tmp_path, [cred_path(profile)])
