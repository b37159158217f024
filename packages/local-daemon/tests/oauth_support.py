"""MCP sign-in helpers: the browser's part of the flow on the daemon's own pages, and the SDK
client's token storage. Used by the loopback tests and the namespace (TLS) scenario alike."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

__all__ = ["DaemonBrowser", "MemoryStorage", "callback_result", "cookie_from", "sdk_handlers"]

_COOKIE = re.compile(r"local_session=([^;]+)")


def cookie_from(response: httpx2.Response) -> str:
    """Return the session cookie value a sign-in answer set."""
    match = _COOKIE.search(response.headers.get("set-cookie", ""))
    assert match is not None, response.headers
    return match.group(1)


def callback_result(redirect: str) -> AuthorizationCodeResult:
    """Read what the client's redirect URI received: code (or error), state and iss."""
    query = parse_qs(urlsplit(redirect).query)
    return AuthorizationCodeResult(
        code=query.get("code", [""])[0],
        state=query.get("state", [None])[0],
        iss=query.get("iss", [None])[0],
    )


@dataclass(slots=True)
class MemoryStorage:
    """The SDK client's `TokenStorage`, in memory."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass(slots=True)
class DaemonBrowser:
    """What a person's browser does on the daemon's pages, as their scripts do it: open the
    authorization URL, sign in with a login code, allow (or deny) the client.

    The session cookie is kept by hand: it is `Secure`, and the loopback tests speak plain HTTP.
    """

    origin: str
    http: httpx2.AsyncClient
    login_code: Callable[[], str]
    cookie: str | None = None
    pages: list[str] = field(default_factory=list)

    def _headers(self, json_body: bool = False) -> dict[str, str]:
        headers = {"Accept": "text/html"}
        if self.cookie is not None:
            headers["Cookie"] = f"local_session={self.cookie}"
        if json_body:
            headers |= {"Origin": self.origin, "Content-Type": "application/json"}
        return headers

    async def open_consent(self, authorization_url: str) -> str:
        """Follow the authorization URL to the consent page; return the page's URL."""
        answer = await self.http.get(authorization_url, headers=self._headers())
        assert answer.status_code == 302, (answer.status_code, answer.text)
        location = urljoin(authorization_url, answer.headers["location"])
        assert location.startswith(self.origin + "/auth/consent?request="), location
        return location

    async def page(self, url: str) -> httpx2.Response:
        """GET a page as the browser would, keeping its text."""
        answer = await self.http.get(url, headers=self._headers())
        self.pages.append(answer.text)
        return answer

    async def sign_in(self) -> httpx2.Response:
        """Type a fresh login code into the page and press Sign in."""
        answer = await self.http.post(
            self.origin + "/auth/login",
            json={"code": self.login_code()},
            headers=self._headers(json_body=True),
        )
        if answer.status_code == 200:
            self.cookie = cookie_from(answer)
        return answer

    async def decide(self, consent_url: str, *, allow: bool) -> httpx2.Response:
        """Press Allow or Deny on the consent page."""
        request_id = parse_qs(urlsplit(consent_url).query)["request"][0]
        return await self.http.post(
            self.origin + "/auth/consent",
            json={"request": request_id, "allow": allow},
            headers=self._headers(json_body=True),
        )

    async def approve(self, authorization_url: str) -> str:
        """The whole browser step: consent page, sign in when needed, Allow; the redirect."""
        consent = await self.open_consent(authorization_url)
        first = await self.page(consent)
        assert first.status_code == 200, first.text
        if "Sign in to continue" in first.text:
            signed = await self.sign_in()
            assert signed.status_code == 200, signed.text
            again = await self.page(consent)
            assert "Allow" in again.text, again.text
        decided = await self.decide(consent, allow=True)
        assert decided.status_code == 200, decided.text
        redirect: str = decided.json()["data"]["redirect"]
        return redirect


def sdk_handlers(
    browser: DaemonBrowser,
) -> tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[AuthorizationCodeResult]]]:
    """Return the SDK client's redirect and callback handlers, played by `browser`."""
    seen: dict[str, Any] = {}

    async def redirect_handler(url: str) -> None:
        seen["url"] = url

    async def callback_handler() -> AuthorizationCodeResult:
        return callback_result(await browser.approve(seen.pop("url")))

    return redirect_handler, callback_handler
