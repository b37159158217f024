"""The gate middleware: the login pages, 401/503 answers and each request's credential record.

It runs right after the Host/Origin guards, so a foreign Host never reaches it, and before every
route, so no route answers without a credential. Open are `/auth/login`, answered here, and the
authorization server's paths (`_oauth_paths.OAUTH_PATHS`), answered by `_oauth_http`. On `/mcp`
an MCP client's access token (`_oauth`) counts as a credential too; a 401 names the RFC 9728
metadata that tells such a client how to sign in.
"""

from __future__ import annotations

import asyncio
import functools
import html
import json
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import hdrs, web

from local_daemon._auth import (
    CODE_LIFETIME_SECONDS,
    SESSION_COOKIE,
    SESSION_LIFETIME_SECONDS,
    DaemonAuth,
    Verified,
)
from local_daemon._errors import SessionFileError, TokenFileError
from local_daemon._oauth_paths import (
    ACCESS_TOKEN_PREFIX,
    OAUTH_PATHS,
    mcp_resource_url,
    resource_metadata_url,
)
from local_daemon._pages import STYLE, envelope, html_response, script_json, too_many_sign_ins
from local_daemon._peer import is_local_peer
from local_daemon._tasks import owner_context
from local_daemon._types import (
    AUTH_CONTEXT_KEY,
    AUTH_RECORD_KEY,
    STILL_AUTHORISED_KEY,
    AuthRecord,
    Middleware,
)

if TYPE_CHECKING:
    from local_daemon._oauth_http import OAuthEndpoints

__all__ = [
    "LOGIN_PATH",
    "LOGOUT_PATH",
    "create_gate",
    "gate_middleware",
    "login_page",
    "session_cookie_value",
    "signed_out_page",
]

LOGIN_PATH = "/auth/login"
LOGOUT_PATH = "/auth/logout"
_LOGIN_ALLOW = "GET, HEAD, POST"
_SIGN_IN_REQUIRED = "sign-in required: send a session cookie or a bearer token"
_MCP_NEEDS_BEARER = "sign-in required: /mcp takes a bearer token (Authorization: Bearer)"
_MAX_LOGIN_BODY = 8192
_log = logging.getLogger("local_daemon")

_LIFETIMES = (
    f"A sign-in link works once, within {CODE_LIFETIME_SECONDS // 60} minutes of being made. "
    f"Signing in keeps this browser signed in for {SESSION_LIFETIME_SECONDS // 86400} days."
)


def login_page(sign_in_hint: str, nonce: str) -> str:
    """Return the inert login page: its script reads the code from the address and POSTs it."""
    script = f"""(function () {{
  "use strict";
  var hint = {script_json(sign_in_hint)};
  var code = new URLSearchParams(window.location.search).get("code");
  // Keep the code out of the address bar and history once the page holds it.
  window.history.replaceState(null, "", window.location.pathname);
  var button = document.getElementById("sign-in");
  var msg = document.getElementById("msg");
  if (!code) {{
    button.disabled = true;
    msg.textContent = "This page needs a sign-in link. " + hint;
    return;
  }}
  button.addEventListener("click", function () {{
    button.disabled = true;
    msg.textContent = "Signing in\\u2026";
    fetch("/auth/login", {{
      method: "POST",
      credentials: "same-origin",
      cache: "no-store",
      redirect: "error",
      headers: {{"Content-Type": "application/json"}},
      body: JSON.stringify({{code: code}})
    }}).then(function (response) {{
      if (response.ok) {{
        window.location.assign("/");
        return;
      }}
      if (response.status === 429) {{
        response.json().then(function (answer) {{
          button.disabled = false;
          msg.textContent = answer.error.message;
        }});
        return;
      }}
      msg.textContent = "This sign-in link is invalid, expired or already used. " + hint;
    }}, function () {{
      button.disabled = false;
      msg.textContent = "The daemon did not answer. Try again. " + hint;
    }});
  }});
}}());"""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f'<title>Sign in</title><style nonce="{nonce}">{STYLE}</style></head>\n'
        "<body><main><h1>Sign in</h1>"
        "<p>Press the button to sign this browser in.</p>"
        f"<p>{html.escape(_LIFETIMES)}</p>"
        '<p><button id="sign-in" type="button">Sign in</button></p>'
        '<p id="msg" role="status" aria-live="polite"></p></main>\n'
        f'<script nonce="{nonce}">{script}</script></body></html>\n'
    )


def signed_out_page(sign_in_hint: str, nonce: str) -> str:
    """Return the 401 page for a browser: what happened, how to get a link, and a reload link."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>Sign-in required</title><style nonce="{nonce}">{STYLE}</style></head>\n'
        "<body><main><h1>Sign-in required</h1>"
        "<p>This browser is not signed in to this daemon, or its session has ended.</p>"
        f"<p>{html.escape(sign_in_hint)}</p>"
        f"<p>{html.escape(_LIFETIMES)}</p>"
        '<p><a href="">Reload this page</a> once you have signed in.</p></main></body></html>\n'
    )


def _wants_html(request: web.Request) -> bool:
    if request.method not in ("GET", "HEAD"):
        return False
    accept = request.headers.get("Accept", "")
    return any(part.split(";", 1)[0].strip().lower() == "text/html" for part in accept.split(","))


def _session_cookie_header(value: str, max_age: int) -> str:
    return f"{SESSION_COOKIE}={value}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age={max_age}"


# A browser signed in here usually sends this daemon's cookie alone. Such a header is read with
# one match; aiohttp's parser, used for every other header, reads the same value from it.
_SOLE_SESSION_COOKIE = re.compile(
    re.escape(SESSION_COOKIE) + r"=(v2\.[0-9]{1,12}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})",
    re.ASCII,
)


def session_cookie_value(request: web.Request) -> str | None:
    """Return the request's session cookie value, as `request.cookies` would, or None."""
    header = request.headers.get(hdrs.COOKIE)
    if not header:
        return None
    sole = _SOLE_SESSION_COOKIE.fullmatch(header)
    if sole is not None:
        return sole.group(1)
    return request.cookies.get(SESSION_COOKIE)


def _bearer_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def _is_mcp(path: str) -> bool:
    return path == "/mcp" or path.startswith("/mcp/")


class _TooLarge(Exception):
    pass


async def _read_login_body(request: web.Request) -> Any:
    if request.content_length is not None and request.content_length > _MAX_LOGIN_BODY:
        raise _TooLarge
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.content.iter_chunked(4096):
        total += len(chunk)
        if total > _MAX_LOGIN_BODY:
            raise _TooLarge
        chunks.append(chunk)
    return json.loads(b"".join(chunks))


class _Gate:
    __slots__ = ("_auth", "_last_problem", "_oauth")

    def __init__(self, auth: DaemonAuth) -> None:
        self._auth = auth
        self._oauth: OAuthEndpoints | None = None
        self._last_problem: str | None = None

    def _oauth_endpoints(self) -> OAuthEndpoints:
        if self._oauth is None:
            # Imported on the first OAuth request or access token: it imports `mcp`.
            from local_daemon._oauth_http import OAuthEndpoints

            self._oauth = OAuthEndpoints(self._auth)
        return self._oauth

    def _token_file_bad(self, exc: TokenFileError) -> web.Response:
        message = str(exc)
        if message != self._last_problem:
            self._last_problem = message
            _log.error("gate: every request answers 503 until the token file is fixed: %s", message)
        return envelope(
            503,
            75,
            "the daemon's token file failed a check; ask its operator",
            **{"Retry-After": "30"},
        )

    def _unauthorized(self, request: web.Request, message: str = _SIGN_IN_REQUIRED) -> web.Response:
        if _wants_html(request) and message is _SIGN_IN_REQUIRED:
            nonce = secrets.token_urlsafe(16)
            response = html_response(401, signed_out_page(self._auth.sign_in_hint, nonce), nonce)
        else:
            response = envelope(401, 77, message)
        # RFC 9728 §5.1: where an MCP client finds how to sign in.
        metadata = resource_metadata_url(request.scheme, request.host)
        response.headers["WWW-Authenticate"] = (
            f'Bearer realm="local-daemon", resource_metadata="{metadata}"'
        )
        return response

    def _authenticate(self, request: web.Request) -> Verified | None:
        token = _bearer_token(request)
        if token is not None:
            if token.startswith(ACCESS_TOKEN_PREFIX):
                # An MCP client's access token is good for the `/mcp` it was issued for only.
                if not _is_mcp(request.path):
                    self._auth.check()
                    return None
                resource = mcp_resource_url(request.scheme, request.host)
                return self._oauth_endpoints().state.verify_access(token, resource)
            return self._auth.verify_bearer(token)
        cookie = session_cookie_value(request)
        if cookie:
            return self._auth.verify_session_cookie(cookie)
        # No credential still checks the file: while it is bad every request answers 503.
        self._auth.check()
        return None

    def _still_authorised(self, request: web.Request) -> bool:
        try:
            return self._authenticate(request) is not None
        except TokenFileError:
            return False

    async def _login(self, request: web.Request) -> web.StreamResponse:
        if request.method in ("GET", "HEAD"):
            # Inert: the code stays in the address for the page's script; nothing here reads it.
            nonce = secrets.token_urlsafe(16)
            return html_response(200, login_page(self._auth.sign_in_hint, nonce), nonce)
        if request.method != "POST":
            return envelope(405, 64, "method not allowed", Allow=_LOGIN_ALLOW)
        throttle = self._auth.throttle
        wait = throttle.retry_after(request.remote)
        if wait is not None:
            return too_many_sign_ins(wait)
        try:
            body = await _read_login_body(request)
        except _TooLarge:
            return envelope(413, 64, "the body is too large")
        except ValueError:
            return envelope(400, 65, 'the body must be JSON: {"code": "..."}')
        code = body.get("code") if isinstance(body, dict) else None
        cookie: str | None = None
        if isinstance(code, str):
            try:
                cookie = await self._auth.sign_in_async(
                    code,
                    user_agent=request.headers.get(hdrs.USER_AGENT, ""),
                    peer=request.remote,
                )
            except SessionFileError as exc:
                _log.error("gate: a sign-in could not be recorded: %s", exc)
                return envelope(503, 75, "the daemon could not record the sign-in; try again")
        if cookie is None:
            throttle.failed(request.remote)
            return envelope(401, 77, "this sign-in link is invalid, expired or already used")
        response = web.json_response(
            {"ok": True, "data": {"session_lifetime_s": SESSION_LIFETIME_SECONDS}}
        )
        response.headers["Cache-Control"] = "no-store"
        response.headers["Set-Cookie"] = _session_cookie_header(cookie, SESSION_LIFETIME_SECONDS)
        return response

    async def _logout(self, request: web.Request, verified: Verified) -> web.StreamResponse:
        if request.method != "POST":
            return envelope(405, 64, "method not allowed", Allow="POST")
        response = web.json_response({"ok": True, "data": None})
        if verified.session_id is not None:
            # Server-side too: a copy of this cookie stops working with it.
            try:
                # In a worker thread: the lock may be held by another process.
                await asyncio.to_thread(self._auth.end_session, verified.session_id)
            except SessionFileError as exc:
                _log.error("gate: a sign-out could not be recorded: %s", exc)
                response = envelope(
                    503, 75, "signed out in this browser only: the daemon could not end the session"
                )
        response.headers["Cache-Control"] = "no-store"
        response.headers["Set-Cookie"] = _session_cookie_header("", 0)
        return response

    async def __call__(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        path = request.path
        try:
            # Exactly one token file check per request on the common path (the stat is the cost).
            if path == LOGIN_PATH:
                self._auth.check()
                return await self._login(request)
            if path in OAUTH_PATHS:
                cookie = session_cookie_value(request)
                browser = self._auth.verify_session_cookie(cookie) if cookie else None
                self._auth.check()
                return await self._oauth_endpoints().answer(request, browser is not None)
            verified = self._authenticate(request)
        except TokenFileError as exc:
            return self._token_file_bad(exc)
        if self._last_problem is not None:
            self._last_problem = None
            _log.info("gate: the token file passes its checks again")
        if verified is None:
            return self._unauthorized(request)
        if path == LOGOUT_PATH:
            return await self._logout(request, verified)
        if _is_mcp(path) and verified.credential == "session":
            # A cookie is ambient: the browser attaches it to any request a page makes, so a
            # cookie alone would let a page drive the tools (CSRF). MCP clients send the bearer.
            return self._unauthorized(request, _MCP_NEEDS_BEARER)
        request[AUTH_RECORD_KEY] = AuthRecord(
            credential=verified.credential,
            issued_at=verified.issued_at,
            peer_local=is_local_peer(request.remote),
        )
        request[AUTH_CONTEXT_KEY] = owner_context(verified.credential, verified.session_id)
        still_authorised: Callable[[], bool] = functools.partial(self._still_authorised, request)
        request[STILL_AUTHORISED_KEY] = still_authorised
        return await handler(request)


def create_gate(auth: DaemonAuth) -> DaemonAuth:
    """Return the gate for `auth`: the auth itself, as `build_http_app(gate=...)` takes it."""
    return auth


def gate_middleware(auth: DaemonAuth) -> Middleware:
    """Return the gate middleware for `auth`, run right after the Host/Origin guards."""
    gate = _Gate(auth)

    @web.middleware
    async def gate_mw(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        return await gate(request, handler)

    return gate_mw
