"""One base-URL checker for every URL a token goes to: the usage API base and `auth_url`.

Through the public functions that take them: `poll_usage(api_base=)` and
`refresh_if_needed(auth_url=)`; an accepted URL is where the one request goes, a refused one
raises before any request with a fixed message naming the argument.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from accounts_refresh_support import CANARY, credentials, dump, write_file
from agent_accounts.io import Profile, poll_usage, refresh_if_needed

NOW_MS = 1_760_000_000_000

ACCEPTED = [
    ("https://api.test.invalid", "https://api.test.invalid"),
    ("https://api.test.invalid/", "https://api.test.invalid"),
    ("https://api.test.invalid/prefix/", "https://api.test.invalid/prefix"),
    ("https://api.test.invalid:8443", "https://api.test.invalid:8443"),
    ("http://127.0.0.1:1", "http://127.0.0.1:1"),
    ("http://127.8.9.10", "http://127.8.9.10"),
    ("http://localhost:8080/", "http://localhost:8080"),
    ("http://[::1]:1", "http://[::1]:1"),
]

REFUSED = [
    "http://example.com",
    "http://10.0.0.1",
    "ftp://127.0.0.1",
    "file:///etc",
    "nonsense",
    "http://",
    "https://",
    "",
    "https://user:pw@a.test",
    "https://user@a.test",
    f"https://{CANARY}@a.test",
    "https://a.test:99999",
    # a query or a fragment: the fixed path would land inside it (`https://auth/#f` posts to /)
    "https://auth/#f",
    "https://auth/?x=1",
    "https://auth/?",
    "https://auth/#",
    "https://auth/path?",
    # characters parsers disagree on
    "https://a.test\\@127.0.0.1",
    "http://evil.test\\@127.0.0.1",
    "http://127.0.0.1 @evil.test",
    "https://a.test\n",
    "https://a\t.test",
    "https://a.test/\x00",
    "https://a.test/\x7f",
]


@pytest.fixture
def due_profile(tmp_path: Path) -> Profile:
    config = tmp_path / "work"
    config.mkdir(mode=0o700)
    write_file(config / ".credentials.json", dump(credentials(expires_at_ms=NOW_MS - 1)))
    return Profile(label="work", config_dir=str(config))


def counting_client(seen: list[httpx.Request]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


@pytest.fixture
def live_profile(tmp_path: Path) -> Profile:
    config = tmp_path / "live"
    config.mkdir(mode=0o700)
    login = credentials(expires_at_ms=NOW_MS + 24 * 3_600_000)
    write_file(config / ".credentials.json", dump(login))
    return Profile(label="live", config_dir=str(config))


@pytest.mark.parametrize(("url", "expected"), ACCEPTED)
async def test_an_accepted_url_is_where_the_one_request_goes(
    live_profile: Profile, due_profile: Profile, url: str, expected: str
) -> None:
    seen: list[httpx.Request] = []
    async with counting_client(seen) as client:
        await poll_usage(live_profile, client=client, now=NOW_MS / 1000, api_base=url)
        await refresh_if_needed(
            due_profile, client=client, margin_ms=600_000, now_ms=NOW_MS, auth_url=url
        )
    assert [str(r.url) for r in seen] == [
        f"{expected}/api/oauth/usage",
        f"{expected}/v1/oauth/token",
    ]


@pytest.mark.parametrize("url", [None, 5, b"https://a.test", ["https://a.test"]])
async def test_a_non_string_is_refused(live_profile: Profile, url: object) -> None:
    with pytest.raises(ValueError, match="base URL"):
        await poll_usage(live_profile, now=NOW_MS / 1000, api_base=url)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", REFUSED)
async def test_refresh_refuses_auth_url_before_any_request(due_profile: Profile, url: str) -> None:
    seen: list[httpx.Request] = []
    before = sorted(os.listdir(due_profile.config_dir))
    async with counting_client(seen) as client:
        with pytest.raises(ValueError, match="auth_url") as caught:
            await refresh_if_needed(
                due_profile, client=client, margin_ms=600_000, now_ms=NOW_MS, auth_url=url
            )
    assert seen == []
    assert sorted(os.listdir(due_profile.config_dir)) == before  # no lock, no record, no temp
    assert str(caught.value) == "auth_url must be https://, or http:// to a loopback address"
    assert caught.value.__context__ is None


@pytest.mark.parametrize("url", REFUSED)
async def test_poll_refuses_api_base_before_any_request(due_profile: Profile, url: str) -> None:
    seen: list[httpx.Request] = []
    async with counting_client(seen) as client:
        with pytest.raises(ValueError) as caught:
            await poll_usage(due_profile, client=client, now=NOW_MS / 1000, api_base=url)
    assert seen == []
    assert str(caught.value) == "base URL must be https://, or http:// to a loopback address"
    assert caught.value.__context__ is None
