"""poll_usage and poll_all: a real aiohttp server on 127.0.0.1:0 for the wire, respx for the table.

Every test runs with canary credentials and checks, after the test, that no log record (httpx and
httpcore included, at DEBUG), no captured output and no written file holds the canary.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import gzip
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from aiohttp import web

from accounts_support import (
    CANARY,
    HOUR_MS,
    NOW,
    UsageServer,
    assert_no_canary,
    canary_token,
    credentials,
    exception_text,
    make_profile,
    seed_credentials,
    usage_body,
)
from agent_accounts.io import (
    EXPIRY_MARGIN_MS,
    PollEntry,
    PollFailed,
    PollOk,
    Profile,
    poll_all,
    poll_usage,
)

FAKE_BASE = "https://api.test.invalid"
FAKE_URL = f"{FAKE_BASE}/api/oauth/usage"
LIMIT = 64 * 1024


pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".agent-profiles"
    path.mkdir(parents=True, exist_ok=True)
    return path


def clean(result: object) -> None:
    """Assert the canary is in neither the result, its repr nor its JSON."""
    assert_no_canary(result)
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        assert CANARY not in json.dumps(dataclasses.asdict(result), default=repr)


# --- the real server --------------------------------------------------------------------------


async def test_success_sends_one_request_with_the_spec_headers(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    profile, token = work
    result = await poll_usage(profile, now=NOW, api_base=server.url)
    clean(result)
    assert isinstance(result, PollOk)
    assert result.ok is True
    assert result.reading == {
        "session_id": "usage-poll",
        "written_at": NOW,
        "rate_limits": {
            "five_hour": {"used_percentage": 23.0, "resets_at": 1_893_456_000},
            "seven_day": {"used_percentage": 41.5},
        },
        "source": "oauth-usage",
        "account": "work",
    }
    assert len(server.requests) == 1
    headers = server.requests[0]
    assert headers["authorization"] == f"Bearer {token}"
    assert headers["vendor-beta"] == "oauth-2025-04-20"
    assert headers["accept"] == "application/json"
    assert server.other_hits == []


async def test_a_trailing_slash_on_the_base_is_fine(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    result = await poll_usage(work[0], now=NOW, api_base=server.url + "/")
    assert isinstance(result, PollOk)
    assert server.other_hits == []


async def test_a_caller_client_is_used(server: UsageServer, work: tuple[Profile, str]) -> None:
    async with httpx.AsyncClient() as client:
        result = await poll_usage(work[0], client=client, now=NOW, api_base=server.url)
        assert not client.is_closed  # the caller's client is the caller's to close
    assert isinstance(result, PollOk)


async def test_a_server_echoing_the_token_in_body_and_headers_leaks_nothing(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    async def echo(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        token = request.headers["authorization"]
        body = usage_body(extra_usage={"echo": token}, unknown_window={"note": token})
        return web.json_response(body, headers={"x-echo": token, "set-cookie": f"t={token}"})

    server.handler = echo
    result = await poll_usage(work[0], now=NOW, api_base=server.url)
    assert isinstance(result, PollOk)
    clean(result)


async def test_an_error_body_echoing_the_token_is_never_read(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    async def leaky_401(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        token = request.headers["authorization"]
        return web.json_response(
            {"error": {"message": f"bad token {token}"}}, status=401, headers={"x-echo": token}
        )

    server.handler = leaky_401
    result = await poll_usage(work[0], now=NOW, api_base=server.url)
    assert result == PollFailed(failure="http-401")
    clean(result)


async def test_a_stalled_body_is_a_network_failure_within_the_timeout(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    async def stall(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "application/json"})
        await response.prepare(request)
        await response.write(b'{"five_hour": {"utilization": 1')
        await srv.hold()
        return response

    server.handler = stall
    result = await poll_usage(work[0], now=NOW, api_base=server.url, timeout=0.3)
    assert result == PollFailed(failure="network")
    assert len(server.requests) == 1


async def test_stalled_headers_are_a_network_failure(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    async def silent(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        await srv.hold()
        return web.Response(status=204)

    server.handler = silent
    result = await poll_usage(work[0], now=NOW, api_base=server.url, timeout=0.3)
    assert result == PollFailed(failure="network")


async def redirect(request: web.Request, srv: UsageServer) -> web.StreamResponse:
    token = request.headers["authorization"].removeprefix("Bearer ")
    return web.Response(
        status=302,
        headers={"location": f"{srv.url}/elsewhere?token={token}", "x-echo": token},
        body=f"moved, token={token}".encode(),
    )


async def test_a_redirect_is_an_http_failure_and_its_target_receives_nothing(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    server.handler = redirect
    result = await poll_usage(work[0], now=NOW, api_base=server.url)
    assert result == PollFailed(failure="http-302")
    assert server.other_hits == []
    clean(result)


async def test_a_following_client_is_not_followed_and_gives_network(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    server.handler = redirect
    async with httpx.AsyncClient(follow_redirects=True) as client:
        result = await poll_usage(work[0], client=client, now=NOW, api_base=server.url)
    assert result == PollFailed(failure="network")
    assert server.other_hits == []
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [429, 500, 503, 404, 304])
async def test_non_2xx_is_http_status_and_its_body_is_never_read(
    server: UsageServer, work: tuple[Profile, str], status: int
) -> None:
    # The body never ends: had the client read it, the poll would end in a timeout (network).
    async def endless(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        response = web.StreamResponse(status=status, headers={"x-echo": CANARY})
        await response.prepare(request)
        await response.write(f"error for {request.headers['authorization']}".encode())
        await srv.hold()
        return response

    server.handler = endless
    result = await poll_usage(work[0], now=NOW, api_base=server.url, timeout=5.0)
    assert result == PollFailed(failure=f"http-{status}")
    assert len(server.requests) == 1


async def test_an_oversize_body_is_malformed_and_read_no_further(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    # 64 KiB + 1 byte, then a stall: the cap must end the read before the stall matters.
    async def oversize(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "application/json"})
        await response.prepare(request)
        await response.write(b" " * (LIMIT + 1))
        await srv.hold()
        return response

    server.handler = oversize
    result = await poll_usage(work[0], now=NOW, api_base=server.url, timeout=5.0)
    assert result == PollFailed(failure="malformed")


async def test_a_body_of_exactly_64_kib_is_read(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    body = json.dumps(usage_body()).encode()

    async def padded(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.Response(body=body + b" " * (LIMIT - len(body)))

    server.handler = padded
    assert isinstance(await poll_usage(work[0], now=NOW, api_base=server.url), PollOk)


async def test_a_refused_connection_is_a_network_failure(work: tuple[Profile, str]) -> None:
    async with UsageServer() as gone:
        url = gone.url
    result = await poll_usage(work[0], now=NOW, api_base=url, timeout=5.0)
    assert result == PollFailed(failure="network")


async def test_a_non_json_2xx_is_malformed(server: UsageServer, work: tuple[Profile, str]) -> None:
    async def html(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.Response(text=f"<html>{request.headers['authorization']}</html>")

    server.handler = html
    assert await poll_usage(work[0], now=NOW, api_base=server.url) == PollFailed(
        failure="malformed"
    )


# --- the failure table under respx: no request for the local rows ---------------------------


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as mock:
        yield mock


def expires(offset_ms: int) -> int:
    return int(NOW * 1000) + offset_ms


LOCAL_ROWS: list[tuple[str, Any, PollFailed]] = [
    ("no-block", {"other": 1}, PollFailed(failure="missing")),
    ("null-block", {"agentOauth": None}, PollFailed(failure="missing")),
    ("invalid-json", b'{"agentOauth": {', PollFailed(failure="refused", reason="malformed")),
    (
        "no-access-token",
        {"agentOauth": {"refreshToken": canary_token("ort"), "expiresAt": expires(HOUR_MS)}},
        PollFailed(failure="refused", reason="malformed"),
    ),
    (
        "expires-in-seconds",
        credentials(expires_at_ms=int(NOW) + 3600),
        PollFailed(failure="refused", reason="malformed"),
    ),
    (
        "token-with-space",
        credentials(expires_at_ms=expires(HOUR_MS), access="sk-ant-oat01-CANARY abc"),
        PollFailed(failure="refused", reason="malformed"),
    ),
    (
        "token-with-inner-equals",
        credentials(expires_at_ms=expires(HOUR_MS), access="CANARY=abc"),
        PollFailed(failure="refused", reason="malformed"),
    ),
    (
        "token-with-newline",
        credentials(expires_at_ms=expires(HOUR_MS), access="CANARY\r\nx-evil: 1"),
        PollFailed(failure="refused", reason="malformed"),
    ),
    (
        "token-over-4096",
        credentials(expires_at_ms=expires(HOUR_MS), access="CANARY" + "a" * 4091),
        PollFailed(failure="refused", reason="malformed"),
    ),
    ("expired", credentials(expires_at_ms=expires(-HOUR_MS)), PollFailed(failure="expired")),
    ("expires-now", credentials(expires_at_ms=expires(0)), PollFailed(failure="expired")),
    (
        "expires-within-60s",
        credentials(expires_at_ms=expires(EXPIRY_MARGIN_MS - 1000)),
        PollFailed(failure="expired"),
    ),
    (
        "expires-at-60s",
        credentials(expires_at_ms=expires(EXPIRY_MARGIN_MS)),
        PollFailed(failure="expired"),
    ),
]


@pytest.mark.parametrize(
    ("doc", "expected"), [r[1:] for r in LOCAL_ROWS], ids=[r[0] for r in LOCAL_ROWS]
)
async def test_local_failures_send_no_request(
    router: respx.MockRouter, root: Path, doc: Any, expected: PollFailed
) -> None:
    route = router.get(FAKE_URL).respond(json=usage_body())
    profile, _ = make_profile(root, "work", doc)
    result = await poll_usage(profile, now=NOW, api_base=FAKE_BASE)
    assert result == expected
    assert route.call_count == 0
    clean(result)


async def test_no_credentials_file_is_missing(router: respx.MockRouter, root: Path) -> None:
    route = router.get(FAKE_URL).respond(json=usage_body())
    profile, _ = make_profile(root, "work", seed=False)
    assert await poll_usage(profile, now=NOW, api_base=FAKE_BASE) == PollFailed(failure="missing")
    assert route.call_count == 0


def _symlink(config: Path, tmp: Path) -> None:
    target = tmp / "target.credentials.json"
    (config / ".credentials.json").rename(target)
    (config / ".credentials.json").symlink_to(target)


def _wide(config: Path, tmp: Path) -> None:
    os.chmod(config / ".credentials.json", 0o640)


def _linked(config: Path, tmp: Path) -> None:
    os.link(config / ".credentials.json", tmp / "other.credentials.json")


def _directory(config: Path, tmp: Path) -> None:
    (config / ".credentials.json").unlink()
    (config / ".credentials.json").mkdir()


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (_symlink, "not-a-regular-file"),
        (_directory, "not-a-regular-file"),
        (_wide, "mode-too-wide"),
        (_linked, "hard-linked"),
    ],
    ids=["symlink", "directory", "mode", "hard-link"],
)
async def test_gate_refusals_send_no_request(
    router: respx.MockRouter, root: Path, tmp_path: Path, spoil: Any, reason: str
) -> None:
    route = router.get(FAKE_URL).respond(json=usage_body())
    profile, _ = make_profile(root, "work")
    spoil(Path(profile.config_dir), tmp_path)
    result = await poll_usage(profile, now=NOW, api_base=FAKE_BASE)
    assert result == PollFailed(failure="refused", reason=reason)  # type: ignore[arg-type]
    assert route.call_count == 0


async def test_foreign_owner_sends_no_request(router: respx.MockRouter, root: Path) -> None:
    route = router.get(FAKE_URL).respond(json=usage_body())
    profile, _ = make_profile(root, "work")
    result = await poll_usage(profile, now=NOW, uid=os.getuid() + 4242, api_base=FAKE_BASE)
    assert result == PollFailed(failure="refused", reason="foreign-owner")
    assert route.call_count == 0


async def test_unexpected_filesystem_error_is_io_without_a_request(
    router: respx.MockRouter, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    route = router.get(FAKE_URL).respond(json=usage_body())
    profile, token = make_profile(root, "work")

    def failing_readv(fd: int, buffers: list[memoryview]) -> int:
        raise OSError(errno.EIO, f"read failed near {token}")

    monkeypatch.setattr(os, "readv", failing_readv)
    result = await poll_usage(profile, now=NOW, api_base=FAKE_BASE)
    assert result == PollFailed(failure="io")
    assert route.call_count == 0


@pytest.mark.parametrize("offset_ms", [EXPIRY_MARGIN_MS + 1000, 24 * HOUR_MS], ids=["61s", "a-day"])
async def test_tokens_valid_past_the_margin_are_sent(
    router: respx.MockRouter, root: Path, offset_ms: int
) -> None:
    route = router.get(FAKE_URL).respond(json=usage_body())
    profile, token = make_profile(root, "work", credentials(expires_at_ms=expires(offset_ms)))
    result = await poll_usage(profile, now=NOW, api_base=FAKE_BASE)
    assert isinstance(result, PollOk)
    assert route.call_count == 1
    assert route.calls[0].request.headers["authorization"] == f"Bearer {token}"


@pytest.mark.parametrize(
    "token",
    ["a" * 4096, "CANARY-._~+/abc==", "CANARY"],
    ids=["4096-chars", "every-b64token-char", "short"],
)
async def test_every_b64token_up_to_4096_chars_is_sent(
    router: respx.MockRouter, root: Path, token: str
) -> None:
    route = router.get(FAKE_URL).respond(json=usage_body())
    profile, _ = make_profile(
        root, "work", credentials(expires_at_ms=expires(HOUR_MS), access=token)
    )
    assert isinstance(await poll_usage(profile, now=NOW, api_base=FAKE_BASE), PollOk)
    assert route.calls[0].request.headers["authorization"] == f"Bearer {token}"


LONG_RESET = "2030-01-01T00:00:00." + "0" * 44 + "Z"  # 65 characters

BODY_ROWS: list[tuple[str, Any, PollFailed | None]] = [
    ("list", [usage_body()], PollFailed(failure="malformed")),
    ("string", "five_hour", PollFailed(failure="malformed")),
    ("null", None, PollFailed(failure="malformed")),
    ("empty-object", {}, PollFailed(failure="malformed")),
    ("no-known-window", {"extra_usage": {"utilization": 5, "resets_at": None}}, None),
    ("null-windows", {"five_hour": None, "seven_day": None}, None),
    ("window-not-object", {"five_hour": 23}, PollFailed(failure="malformed")),
    ("utilization-string", {"five_hour": {"utilization": "23", "resets_at": None}}, None),
    ("utilization-bool", {"five_hour": {"utilization": True, "resets_at": None}}, None),
    ("resets-at-number", {"five_hour": {"utilization": 1, "resets_at": 1_893_456_000}}, None),
    ("resets-at-65-chars", {"five_hour": {"utilization": 1, "resets_at": LONG_RESET}}, None),
    ("window-without-resets-at", {"five_hour": {"utilization": 1}}, None),
    ("window-without-utilization", {"five_hour": {"resets_at": None}}, None),
    (
        "extra-usage-is-no-window",
        {"extra_usage": {"is_enabled": True, "utilization": 5, "used_credits": 1}},
        None,
    ),
    (
        "one-bad-known-window-spoils-all",
        usage_body(seven_day_opus={"utilization": "x", "resets_at": None}),
        None,
    ),
]


@pytest.mark.parametrize(("body", "_"), [r[1:] for r in BODY_ROWS], ids=[r[0] for r in BODY_ROWS])
async def test_bad_2xx_bodies_are_malformed(
    router: respx.MockRouter, work: tuple[Profile, str], body: Any, _: object
) -> None:
    route = router.get(FAKE_URL).respond(json=body)
    result = await poll_usage(work[0], now=NOW, api_base=FAKE_BASE)
    assert result == PollFailed(failure="malformed")
    assert route.call_count == 1


async def test_resets_at_of_64_chars_is_kept_and_an_unparsable_one_omitted(
    router: respx.MockRouter, work: tuple[Profile, str]
) -> None:
    body = {
        "five_hour": {"utilization": 5, "resets_at": LONG_RESET[:-2] + "Z"},  # 64,
        "seven_day": {"utilization": 6, "resets_at": "x" * 64},
        "weird_window": {"utilization": "not checked", "resets_at": 5},  # not allowlisted
    }
    router.get(FAKE_URL).respond(json=body)
    result = await poll_usage(work[0], now=NOW, api_base=FAKE_BASE)
    assert isinstance(result, PollOk)
    assert set(result.reading["rate_limits"]) == {"five_hour", "seven_day"}
    assert "resets_at" not in result.reading["rate_limits"]["seven_day"]


@pytest.mark.parametrize(
    ("status", "expected"),
    [(204, "malformed"), (301, "http-301"), (401, "http-401"), (429, "http-429")],
)
async def test_statuses_under_respx(
    router: respx.MockRouter, work: tuple[Profile, str], status: int, expected: str
) -> None:
    headers = {"location": f"{FAKE_BASE}/x"} if status == 301 else {}
    router.get(FAKE_URL).respond(status, headers=headers)
    assert await poll_usage(work[0], now=NOW, api_base=FAKE_BASE) == PollFailed(failure=expected)


async def test_a_transport_error_quoting_the_token_is_network(
    router: respx.MockRouter, work: tuple[Profile, str]
) -> None:
    profile, token = work
    router.get(FAKE_URL).mock(side_effect=httpx.ConnectError(f"refused for Bearer {token}"))
    result = await poll_usage(profile, now=NOW, api_base=FAKE_BASE)
    assert result == PollFailed(failure="network")
    clean(result)


async def test_a_label_that_redaction_would_change_is_left_out(
    router: respx.MockRouter, root: Path
) -> None:
    router.get(FAKE_URL).respond(json=usage_body())
    profile, _ = make_profile(root, "work")
    shady = Profile(label="a1b2" * 10, config_dir=profile.config_dir)
    result = await poll_usage(shady, now=NOW, api_base=FAKE_BASE)
    assert isinstance(result, PollOk)
    assert "account" not in result.reading


# --- any caller client: httpx's own MockTransport, respx and a real socket --------------------

# The endpoint's answer once extra usage is on: `extra_usage` has a `utilization` but no
# `resets_at`, so it is not a window (AMENDMENTS) and never reaches the reading.
ENDPOINT_BODY: dict[str, Any] = {
    "five_hour": {"utilization": 23.0, "resets_at": "2030-01-01T00:00:00Z"},
    "seven_day": {"utilization": 41.5, "resets_at": None},
    "seven_day_opus": None,
    "extra_usage": {
        "is_enabled": True,
        "monthly_limit": 5000,
        "used_credits": 1234.5,
        "utilization": 24.69,
    },
}
ENDPOINT_WINDOWS = {
    "five_hour": {"used_percentage": 23, "resets_at": 1_893_456_000},
    "seven_day": {"used_percentage": 41.5},
}


def mock_client(
    answer: httpx.Response | Callable[[httpx.Request], httpx.Response],
    seen: list[httpx.Request] | None = None,
) -> httpx.AsyncClient:
    """A client over `httpx.MockTransport` whose handler records each request and answers."""

    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return answer if isinstance(answer, httpx.Response) else answer(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_mock_transport_with_an_already_read_response(work: tuple[Profile, str]) -> None:
    profile, token = work
    seen: list[httpx.Request] = []
    answer = httpx.Response(200, json=ENDPOINT_BODY)
    assert answer.is_stream_consumed  # httpx read it when it was built: no raw stream is left
    async with mock_client(answer, seen) as client:
        result = await poll_usage(profile, client=client, now=NOW, api_base=FAKE_BASE)
    assert isinstance(result, PollOk)
    assert result.reading["rate_limits"] == ENDPOINT_WINDOWS
    assert [str(r.url) for r in seen] == [FAKE_URL]
    assert seen[0].headers["authorization"] == f"Bearer {token}"
    assert seen[0].headers["vendor-beta"] == "oauth-2025-04-20"
    clean(result)


async def test_mock_transport_with_a_streamed_response(work: tuple[Profile, str]) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        data = json.dumps(ENDPOINT_BODY).encode()
        for start in range(0, len(data), 7):
            yield data[start : start + 7]

    async with mock_client(lambda _: httpx.Response(200, content=chunks())) as client:
        result = await poll_usage(work[0], client=client, now=NOW, api_base=FAKE_BASE)
    assert isinstance(result, PollOk)
    assert result.reading["rate_limits"] == ENDPOINT_WINDOWS


async def test_mock_transport_already_read_gzip_is_not_decoded_twice(
    work: tuple[Profile, str],
) -> None:
    packed = gzip.compress(json.dumps(ENDPOINT_BODY).encode())
    answer = httpx.Response(200, content=packed, headers={"content-encoding": "gzip"})
    async with mock_client(answer) as client:
        result = await poll_usage(work[0], client=client, now=NOW, api_base=FAKE_BASE)
    assert isinstance(result, PollOk)
    assert result.reading["rate_limits"] == ENDPOINT_WINDOWS


@pytest.mark.parametrize(
    ("size", "ok"), [(LIMIT, True), (LIMIT + 1, False)], ids=["64KiB", "64KiB+1"]
)
async def test_mock_transport_already_read_body_keeps_the_cap(
    work: tuple[Profile, str], size: int, ok: bool
) -> None:
    body = json.dumps(ENDPOINT_BODY).encode()
    answer = httpx.Response(200, content=body + b" " * (size - len(body)))
    async with mock_client(answer) as client:
        result = await poll_usage(work[0], client=client, now=NOW, api_base=FAKE_BASE)
    assert isinstance(result, PollOk) if ok else result == PollFailed(failure="malformed")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (httpx.Response(500, json={"error": f"bad {CANARY}"}), "http-500"),
        (httpx.Response(429), "http-429"),
        (httpx.Response(302, headers={"location": f"{FAKE_BASE}/x"}), "http-302"),
        (httpx.Response(200, text="<html>"), "malformed"),
        (httpx.Response(200, json={"extra_usage": ENDPOINT_BODY["extra_usage"]}), "malformed"),
        (httpx.Response(200, json={"five_hour": {"utilization": 5}}), "malformed"),
    ],
    ids=["500", "429", "302", "not-json", "only-extra-usage", "window-without-resets-at"],
)
async def test_mock_transport_failures(
    work: tuple[Profile, str], answer: httpx.Response, expected: str
) -> None:
    async with mock_client(answer) as client:
        result = await poll_usage(work[0], client=client, now=NOW, api_base=FAKE_BASE)
    assert result == PollFailed(failure=expected)
    clean(result)


async def test_mock_transport_raising_is_network(work: tuple[Profile, str]) -> None:
    profile, _ = work

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"no route for {request.headers['authorization']}")

    async with mock_client(refuse) as client:
        result = await poll_usage(profile, client=client, now=NOW, api_base=FAKE_BASE)
    assert result == PollFailed(failure="network")
    clean(result)


async def test_mock_transport_through_poll_all_writes_the_reading(
    root: Path, work: tuple[Profile, str]
) -> None:
    async with mock_client(httpx.Response(200, json=ENDPOINT_BODY)) as client:
        [entry] = await poll_all(client=client, profiles=[work[0]], now=NOW, api_base=FAKE_BASE)
    assert isinstance(entry.result, PollOk)
    assert entry.file is not None
    written = json.loads(Path(entry.file).read_text())
    assert written["rate_limits"] == ENDPOINT_WINDOWS


async def test_respx_answers_the_endpoint_shape(
    router: respx.MockRouter, work: tuple[Profile, str]
) -> None:
    route = router.get(FAKE_URL).respond(json=ENDPOINT_BODY)
    async with httpx.AsyncClient() as client:
        result = await poll_usage(work[0], client=client, now=NOW, api_base=FAKE_BASE)
    assert isinstance(result, PollOk)
    assert result.reading["rate_limits"] == ENDPOINT_WINDOWS
    assert route.call_count == 1


async def test_a_real_server_answers_the_endpoint_shape(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    async def endpoint(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.json_response(ENDPOINT_BODY)

    server.handler = endpoint
    async with httpx.AsyncClient() as client:
        result = await poll_usage(work[0], client=client, now=NOW, api_base=server.url)
    assert isinstance(result, PollOk)
    assert result.reading["rate_limits"] == ENDPOINT_WINDOWS


# --- argument refusals: ValueError before any request ----------------------------------------


@pytest.mark.parametrize(
    "base",
    [
        "http://example.com",
        "http://10.0.0.1",
        "ftp://127.0.0.1",
        "file:///etc",
        "https://user:pass@api.test.invalid",
        f"https://{CANARY}@api.test.invalid",
        "http://user@127.0.0.1:1",
        "https://api.test.invalid?x=1",
        "https://api.test.invalid#frag",
        "https://",
        "",
        "api.test.invalid",
        "https://api.test.invalid:99999",
        "https://api.test.invalid/?",
        "https://api.test.invalid/#",
        "https://api.test.invalid/p?q",
        "https://api.test.invalid\\@127.0.0.1",
        "http://evil.test\\@127.0.0.1",
        "http://127.0.0.1 @evil.test",
        "https://api.test\n.invalid",
        "https://api.test.invalid/\t",
    ],
)
async def test_refused_base_urls_raise_before_any_request(
    router: respx.MockRouter, work: tuple[Profile, str], root: Path, base: str
) -> None:
    with pytest.raises(ValueError, match="base URL") as caught:
        await poll_usage(work[0], now=NOW, api_base=base)
    assert CANARY not in exception_text(caught.value)
    with pytest.raises(ValueError, match="base URL"):
        await poll_all(profiles=[work[0]], now=NOW, api_base=base)
    assert router.calls.call_count == 0
    assert not (root / "work" / "status-cache").exists()


@pytest.mark.parametrize(
    "base", ["http://127.0.0.1:1", "http://localhost:1", "http://[::1]:1", "http://127.8.9.10"]
)
async def test_loopback_http_bases_are_accepted(
    router: respx.MockRouter, work: tuple[Profile, str], base: str
) -> None:
    router.get(f"{base}/api/oauth/usage").respond(json=usage_body())
    assert isinstance(await poll_usage(work[0], now=NOW, api_base=base), PollOk)


@pytest.mark.parametrize("now", [float("nan"), float("inf"), float("-inf"), "1760000000", True])
async def test_bad_now_raises_value_error(
    router: respx.MockRouter, work: tuple[Profile, str], now: Any
) -> None:
    with pytest.raises(ValueError, match="now"):
        await poll_usage(work[0], now=now, api_base=FAKE_BASE)
    with pytest.raises(ValueError, match="now"):
        await poll_all(profiles=[work[0]], now=now, api_base=FAKE_BASE)
    assert router.calls.call_count == 0


@pytest.mark.parametrize("timeout", [0, -1, 0.0, float("nan"), "10", False])
async def test_bad_timeout_raises_value_error(
    router: respx.MockRouter, work: tuple[Profile, str], timeout: Any
) -> None:
    with pytest.raises(ValueError, match="timeout"):
        await poll_usage(work[0], now=NOW, timeout=timeout, api_base=FAKE_BASE)
    with pytest.raises(ValueError, match="timeout"):
        await poll_all(profiles=[work[0]], now=NOW, timeout=timeout, api_base=FAKE_BASE)
    assert router.calls.call_count == 0


# --- poll_all against the real server ---------------------------------------------------------


async def test_poll_all_writes_each_reading_and_keeps_profile_order(
    server: UsageServer, root: Path
) -> None:
    profiles = [make_profile(root, name)[0] for name in ("b", "a", "c")]
    entries = await poll_all(profiles=profiles, now=NOW, api_base=server.url)
    clean(entries)
    assert [e.label for e in entries] == ["b", "a", "c"]
    for profile, entry in zip(profiles, entries, strict=True):
        assert isinstance(entry.result, PollOk)
        expected = os.path.join(profile.config_dir, "status-cache", "sessions", "usage-poll.json")
        assert entry.file == expected
        assert json.loads(Path(expected).read_bytes()) == entry.result.reading
        assert entry.write_error is None
        assert entry.backoff_until is None
    assert len(server.requests) == 3


async def test_poll_all_discovers_profiles_when_none_are_given(
    server: UsageServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    make_profile(home, ".agent")
    make_profile(home / ".agent-profiles", "x")
    entries = await poll_all(now=NOW, api_base=server.url, discover={"home": home, "env": {}})
    assert [(e.label, e.result.ok) for e in entries] == [("default", True), ("x", True)]


async def test_poll_all_polls_concurrently(server: UsageServer, root: Path) -> None:
    # Each request is held until all of them have arrived: polled one after the other, the
    # first would wait out its timeout and fail.
    count = 4
    arrived = asyncio.Event()

    async def barrier(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        if len(srv.requests) >= count:
            arrived.set()
        await asyncio.wait_for(arrived.wait(), 20)
        return web.json_response(usage_body())

    server.handler = barrier
    profiles = [make_profile(root, f"p{i}")[0] for i in range(count)]
    entries = await poll_all(profiles=profiles, now=NOW, api_base=server.url, timeout=15)
    assert [e.result.ok for e in entries] == [True] * count


async def test_poll_all_isolates_each_profile(server: UsageServer, root: Path) -> None:
    async def per_token(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        if request.headers["authorization"] == f"Bearer {tokens['broken']}":
            return web.Response(status=500, text=request.headers["authorization"])
        return web.json_response(usage_body())

    server.handler = per_token
    tokens: dict[str, str] = {}
    good, tokens["good"] = make_profile(root, "good")
    broken, tokens["broken"] = make_profile(root, "broken")
    missing, _ = make_profile(root, "missing", seed=False)
    refused, _ = make_profile(root, "refused", b"not json")
    unwritable, _ = make_profile(root, "unwritable")
    # The reading's name is taken by a directory: the write fails, the poll still succeeded.
    (Path(unwritable.config_dir) / "status-cache/sessions/usage-poll.json").mkdir(parents=True)
    entries = await poll_all(
        profiles=[good, broken, missing, refused, unwritable], now=NOW, api_base=server.url
    )
    clean(entries)
    by_label = {e.label: e for e in entries}
    assert [e.label for e in entries] == ["good", "broken", "missing", "refused", "unwritable"]
    assert isinstance(by_label["good"].result, PollOk)
    assert by_label["good"].file is not None
    assert by_label["broken"].result == PollFailed(failure="http-500")
    assert by_label["missing"].result == PollFailed(failure="missing")
    assert by_label["refused"].result == PollFailed(failure="refused", reason="malformed")
    bad_write = by_label["unwritable"]
    assert isinstance(bad_write.result, PollOk)
    assert bad_write.file is None
    assert isinstance(bad_write.write_error, OSError)
    assert bad_write.write_error.__context__ is None
    assert CANARY not in exception_text(bad_write.write_error)
    for entry in (by_label["broken"], by_label["missing"], by_label["refused"]):
        assert entry.file is None
        assert not (Path(root / entry.label) / "status-cache" / "sessions").exists()
    assert len(server.requests) == 3


def test_poll_entry_has_the_spec_fields() -> None:
    entry = PollEntry(label="x", result=PollFailed(failure="backoff"), backoff_until=NOW)
    assert [f.name for f in dataclasses.fields(entry)] == [
        "label",
        "result",
        "file",
        "write_error",
        "backoff_until",
    ]
    assert entry.result.ok is False


def test_seed_helper_writes_owner_only(tmp_path: Path) -> None:
    token = seed_credentials(tmp_path)
    assert CANARY in token
    assert os.stat(tmp_path / ".credentials.json").st_mode & 0o777 == 0o600
