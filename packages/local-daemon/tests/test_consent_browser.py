"""The consent page in headless Chromium (Debian's, through Playwright), against a real TLS listener.

A client registers and sends the browser to `/authorize`; the page's own scripts sign the browser
in with a login code, then Allow sends it back to the client's redirect URI with a code, which
the client exchanges (PKCE) for a token that opens `/mcp`. A second request in the same browser
goes straight to the question; Deny sends `access_denied`.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
import trustme
from playwright.async_api import Browser, Route

from gate_support import trustme_pair
from local_daemon import (
    Registry,
    RemoteOptions,
    ensure_token_file,
    list_sessions,
    mint_login_code,
    start_daemon,
)

pytestmark = pytest.mark.slow

CALLBACK = "http://127.0.0.1:9/callback"


@dataclass(frozen=True, slots=True, kw_only=True)
class Served:
    base: str
    trust: ssl.SSLContext
    token_file: Path
    sessions_file: Path


@pytest.fixture
async def served(netns: str, tmp_path: Path) -> AsyncIterator[Served]:
    """The daemon's remote listener on the namespace's address, its CA trusted by `trust`."""
    ca = trustme.CA()
    token_file = ensure_token_file(tmp_path / "token")
    remote = RemoteOptions(
        host=netns, token_file=token_file, tls=trustme_pair(ca, tmp_path / "tls", netns)
    )
    handle = await start_daemon(
        registry=Registry(),
        version="1",
        tool_prefix="t",
        state_dir=tmp_path / "state",
        remote=remote,
    )
    try:
        yield Served(
            base=f"https://{netns}:{handle.port}",
            trust=ssl.create_default_context(cadata=ca.cert_pem.bytes().decode("ascii")),
            token_file=token_file,
            sessions_file=handle.paths.state_dir / "sessions.json",
        )
    finally:
        await handle.close()


async def test_sign_in_allow_exchange_then_deny(served: Served, browser: Browser) -> None:
    base = served.base
    async with httpx2.AsyncClient(verify=served.trust, timeout=20.0) as http:
        registered = await http.post(
            base + "/register", json={"redirect_uris": [CALLBACK], "client_name": "Laptop agent"}
        )
        assert registered.status_code == 201
        client_id = registered.json()["client_id"]
        verifier = secrets.token_urlsafe(48)
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .rstrip(b"=")
            .decode()
        )

        def authorize_url(state: str) -> str:
            query = {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": CALLBACK,
                "state": state,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": base + "/mcp",
            }
            return base + "/authorize?" + urlencode(query)

        async def callback(route: Route) -> None:
            # The client's loopback callback, played by the browser's router.
            await route.fulfill(status=200, body="done", content_type="text/plain")

        context = await browser.new_context(ignore_https_errors=True)
        try:
            page = await context.new_page()
            await page.route(CALLBACK + "*", callback)
            await page.goto(authorize_url("one"))
            assert page.url.startswith(base + "/auth/consent?request=")
            assert "Laptop agent" in await page.inner_text("body")
            await page.fill("#code", mint_login_code(served.token_file))
            async with page.expect_navigation():
                await page.click("#sign-in")
            assert "Allow Laptop agent?" in await page.inner_text("h1")
            async with page.expect_request(CALLBACK + "*") as allowed:
                await page.click("#allow")
            # The redirect to the callback must finish before the next sign-in, or the browser
            # interrupts that navigation with this one (seen on a loaded CI machine).
            await page.wait_for_url(CALLBACK + "*")
            result = parse_qs(urlsplit((await allowed.value).url).query)
            assert result["state"] == ["one"]
            assert result["iss"] == [base]
            exchanged = await http.post(
                base + "/token",
                data={
                    "grant_type": "authorization_code",
                    "code": result["code"][0],
                    "redirect_uri": CALLBACK,
                    "client_id": client_id,
                    "code_verifier": verifier,
                    "resource": base + "/mcp",
                },
            )
            assert exchanged.status_code == 200, exchanged.text
            access = exchanged.json()["access_token"]
            mcp = await http.post(
                base + "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}},
                headers={
                    "Authorization": f"Bearer {access}",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
            assert mcp.status_code == 200, mcp.text
            clients = [s for s in list_sessions(served.sessions_file) if s.client_id]
            assert [s.client_name for s in clients] == ["Laptop agent"]

            # Signed in already: straight to the question; Deny.
            await page.goto(authorize_url("two"))
            assert "Allow Laptop agent?" in await page.inner_text("h1")
            async with page.expect_request(CALLBACK + "*") as denied:
                await page.click("#deny")
            result = parse_qs(urlsplit((await denied.value).url).query)
            assert result["error"] == ["access_denied"]
            assert result["state"] == ["two"]
            assert "code" not in result
        finally:
            await context.close()
