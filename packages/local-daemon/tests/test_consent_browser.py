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
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
import trustme
from aiohttp import web
from playwright.async_api import Browser, Route, async_playwright

from gate_support import trustme_pair
from local_daemon import (
    Registry,
    RemoteOptions,
    build_http_app,
    ensure_token_file,
    list_sessions,
    mint_login_code,
)
from local_daemon._remote import RemoteListener, open_remote_listener

pytestmark = pytest.mark.slow

CALLBACK = "http://127.0.0.1:9/callback"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[RemoteListener, ssl.SSLContext]]:
    ca = trustme.CA()
    tls = trustme_pair(ca, tmp_path / "tls", "127.0.0.1")
    remote = RemoteOptions(
        host="127.0.0.1", token_file=ensure_token_file(tmp_path / "token"), tls=tls
    )

    def build_app(auth: Any, hosts: frozenset[str], origins: frozenset[str]) -> web.Application:
        # The daemon's own app and guards, as `start_daemon` builds the remote one.
        return build_http_app(
            registry=Registry(),
            version="1",
            tool_prefix="t",
            gate=auth,
            allowed_hosts=hosts,
            allowed_origins=origins,
        )

    listener = await open_remote_listener(remote=remote, port=0, build_app=build_app)
    trust = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode("ascii"))
    try:
        yield listener, trust
    finally:
        await listener.close()


async def test_sign_in_allow_exchange_then_deny(
    browser: Browser, served: tuple[RemoteListener, ssl.SSLContext]
) -> None:
    listener, trust = served
    base = f"https://127.0.0.1:{listener.port}"
    async with httpx2.AsyncClient(verify=trust, timeout=20.0) as http:
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
            await page.fill("#code", mint_login_code(listener.auth.token_file))
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
            clients = [s for s in list_sessions(listener.auth.sessions_file) if s.client_id]
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
