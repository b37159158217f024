"""The login page in headless Chromium (Debian's, through Playwright), against a real TLS listener.

The listener is the remote listener itself, bound to 127.0.0.1 for the browser's sake, serving a
tiny app behind the gate; the certificate comes from a trustme CA the browser context accepts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme
from playwright.async_api import Browser, async_playwright

from gate_support import build_test_app, trustme_pair
from local_daemon import (
    RemoteOptions,
    ensure_token_file,
    list_sessions,
    mint_login_code,
    revoke_session,
)
from local_daemon._remote import RemoteListener, open_remote_listener

pytestmark = pytest.mark.slow

HINT = "Ask Ana for a new link </script><script>window.__pwned = 1</script> & try again."
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
        # Playwright makes a fresh temporary profile (user data dir) for every launch.
        b = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
async def listener(tmp_path: Path) -> AsyncIterator[RemoteListener]:
    ca = trustme.CA()
    tls = trustme_pair(ca, tmp_path / "tls", "127.0.0.1")
    remote = RemoteOptions(
        host="127.0.0.1",
        token_file=ensure_token_file(tmp_path / "token"),
        tls=tls,
        sign_in_hint=HINT,
    )
    lst = await open_remote_listener(remote=remote, port=0, build_app=build_test_app)
    try:
        yield lst
    finally:
        await lst.close()


async def test_link_button_lands_on_home_signed_in_and_second_use_fails(
    browser: Browser, listener: RemoteListener
) -> None:
    base = f"https://127.0.0.1:{listener.port}"
    link = f"{base}/auth/login?code={mint_login_code(listener.auth.token_file)}"

    context = await browser.new_context(ignore_https_errors=True)
    try:
        page = await context.new_page()
        # Signed out first: a browser asking for HTML gets the page with the hint, escaped.
        response = await page.goto(f"{base}/")
        assert response is not None
        assert response.status == 401
        assert HINT in await page.inner_text("body")
        assert await page.evaluate("window.__pwned") is None

        await page.goto(link)
        assert page.url == f"{base}/auth/login"  # the script took the code out of the address
        assert HINT not in await page.inner_text("body")
        async with page.expect_navigation(url=f"{base}/"):
            await page.click("#sign-in")
        assert await page.inner_text("#who") == "signed in: session"
        cookies = await context.cookies()
        assert [(c["name"], c["httpOnly"], c["secure"], c["sameSite"]) for c in cookies] == [
            ("local_session", True, True, "Strict")
        ]
        assert await page.evaluate("document.cookie") == ""

        # A second device signs in; `sessions list` shows both; revoking the first signs out
        # that browser alone.
        second = await browser.new_context(ignore_https_errors=True)
        try:
            other_page = await second.new_page()
            await other_page.goto(
                f"{base}/auth/login?code={mint_login_code(listener.auth.token_file)}"
            )
            async with other_page.expect_navigation(url=f"{base}/"):
                await other_page.click("#sign-in")
            devices = list_sessions(listener.auth.sessions_file)
            assert len(devices) == 2
            assert all("Chrom" in device.user_agent for device in devices)
            assert {device.peer for device in devices} == {"127.0.0.1"}
            first_id = cookies[0]["value"].split(".")[2]
            assert revoke_session(listener.auth.sessions_file, first_id) is True
            response = await page.reload()
            assert response is not None
            assert response.status == 401
            assert HINT in await page.inner_text("body")
            response = await other_page.reload()
            assert response is not None
            assert response.status == 200
            assert await other_page.inner_text("#who") == "signed in: session"
        finally:
            await second.close()
    finally:
        await context.close()

    # The same link in another browser context: the code is spent, the page says so with the hint.
    other = await browser.new_context(ignore_https_errors=True)
    try:
        page = await other.new_page()
        await page.goto(link)
        await page.click("#sign-in")
        await page.wait_for_function(
            "document.getElementById('msg').textContent.includes('already used')"
        )
        message = await page.inner_text("#msg")
        assert HINT in message
        assert page.url == f"{base}/auth/login"
        assert await other.cookies() == []
        assert await page.evaluate("window.__pwned") is None
    finally:
        await other.close()


async def test_csp_blocks_an_injected_inline_script(
    browser: Browser, listener: RemoteListener
) -> None:
    base = f"https://127.0.0.1:{listener.port}"
    context = await browser.new_context(ignore_https_errors=True)
    try:
        page = await context.new_page()
        await page.goto(f"{base}/auth/login")
        # No code: the page's own (nonced) script ran and explains, with the hint.
        assert HINT in await page.inner_text("#msg")
        assert await page.is_disabled("#sign-in")
        violations = await page.evaluate(
            """() => new Promise((resolve) => {
                const seen = [];
                document.addEventListener("securitypolicyviolation", (e) => {
                    seen.push(e.violatedDirective);
                    resolve(seen);
                });
                const s = document.createElement("script");
                s.textContent = "window.__injected = 1;";
                document.body.appendChild(s);
                const a = document.createElement("div");
                a.innerHTML = '<img src="x" onerror="window.__injected = 2">';
                document.body.appendChild(a);
                setTimeout(() => resolve(seen), 2000);
            })"""
        )
        assert violations
        assert all(v.startswith(("script-src", "img-src")) for v in violations)
        assert await page.evaluate("window.__injected") is None
    finally:
        await context.close()
