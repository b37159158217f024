"""The login page in headless Chromium (Debian's, through Playwright), against a real TLS listener.

The daemon's remote listener on 192.0.2.10 inside a namespace the test makes (Chromium starts in
it too), with a home page and a `whoami` command behind the gate; the certificate comes from a
trustme CA the browser context accepts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from playwright.async_api import Browser, Page

from gate_support import auth_record, mount_home, trustme_pair, whoami_registry
from local_daemon import (
    RemoteOptions,
    ensure_token_file,
    list_sessions,
    mint_login_code,
    revoke_session,
    start_daemon,
)

pytestmark = pytest.mark.slow

HINT = "Ask Ana for a new link </script><script>window.__pwned = 1</script> & try again."
# The page's own call of the `whoami` command: what the gate made of this browser's credential.
WHOAMI = """() => fetch("/rpc/whoami", {
    method: "POST",
    headers: {"Content-Type": "application/json", "x-local-client": "page"},
    body: "{}",
}).then((r) => r.json())"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Served:
    base: str
    address: str
    token_file: Path
    sessions_file: Path


@pytest.fixture
async def served(netns: str, tmp_path: Path) -> AsyncIterator[Served]:
    """The daemon's remote listener on the namespace's address, with a home page and `whoami`."""
    ca = trustme.CA()
    token_file = ensure_token_file(tmp_path / "token")
    remote = RemoteOptions(
        host=netns,
        token_file=token_file,
        tls=trustme_pair(ca, tmp_path / "tls", netns),
        sign_in_hint=HINT,
    )
    handle = await start_daemon(
        registry=whoami_registry(),
        version="1",
        state_dir=tmp_path / "state",
        create_context=auth_record,
        mount_routes=mount_home,
        remote=remote,
    )
    try:
        yield Served(
            base=f"https://{netns}:{handle.port}",
            address=netns,
            token_file=token_file,
            sessions_file=handle.paths.state_dir / "sessions.json",
        )
    finally:
        await handle.close()


async def _credential(page: Page) -> object:
    answer = await page.evaluate(WHOAMI)
    assert isinstance(answer, dict)
    return answer["data"]["credential"]


async def test_link_button_lands_on_home_signed_in_and_second_use_fails(
    served: Served, browser: Browser
) -> None:
    base = served.base
    link = f"{base}/auth/login?code={mint_login_code(served.token_file)}"

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
        assert await page.inner_text("#who") == "home"
        assert await _credential(page) == "session"
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
            await other_page.goto(f"{base}/auth/login?code={mint_login_code(served.token_file)}")
            async with other_page.expect_navigation(url=f"{base}/"):
                await other_page.click("#sign-in")
            devices = list_sessions(served.sessions_file)
            assert len(devices) == 2
            assert all("Chrom" in device.user_agent for device in devices)
            assert {device.peer for device in devices} == {served.address}
            first_id = cookies[0]["value"].split(".")[2]
            assert revoke_session(served.sessions_file, first_id) is True
            response = await page.reload()
            assert response is not None
            assert response.status == 401
            assert HINT in await page.inner_text("body")
            response = await other_page.reload()
            assert response is not None
            assert response.status == 200
            assert await _credential(other_page) == "session"
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


async def test_csp_blocks_an_injected_inline_script(served: Served, browser: Browser) -> None:
    base = served.base
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
