"""The authorization server's endpoints on the remote listener, answered by the gate.

| Path | What |
|---|---|
| `GET /.well-known/oauth-protected-resource[/mcp]` | RFC 9728 metadata of `<origin>/mcp` |
| `GET /.well-known/oauth-authorization-server` | RFC 8414 metadata; the issuer is `<origin>` |
| `GET /authorize` | the SDK's `AuthorizationHandler`: checks, then the consent page |
| `POST /token` | the SDK's `TokenHandler` (form-encoded; `resource` must be this `/mcp`) |
| `POST /register` | the SDK's `RegistrationHandler` (RFC 7591) |
| `GET`, `POST /auth/consent` | the daemon's consent page; the browser signs in there first |

The SDK's handlers are Starlette endpoints; each runs for one request through `_asgi.run_asgi`.
Every URL is built from the request's Host, which the Host guard has already checked.
Importing this module imports `mcp` (the gate imports it on the first OAuth request).
"""

from __future__ import annotations

import html
import json
import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

from aiohttp import hdrs, web
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from starlette.routing import request_response

from ._asgi import run_asgi
from ._auth import DaemonAuth
from ._bodies import BodyIncompleteError, BodyTooLargeError, read_body
from ._oauth import OAuthProvider, OAuthState, Pending
from ._oauth_paths import (
    AUTHORIZATION_SERVER_METADATA_PATH,
    AUTHORIZE_PATH,
    CONSENT_PATH,
    PROTECTED_RESOURCE_METADATA_PATH,
    REGISTER_PATH,
    TOKEN_PATH,
    mcp_resource_url,
)
from ._pages import STYLE, envelope, html_response, script_json

__all__ = ["OAuthEndpoints", "consent_page"]

_MAX_FORM_BYTES = 16 * 1024
_MAX_CONSENT_BODY = 4096
_NO_STORE = {"Cache-Control": "no-store"}
_ALLOW = {TOKEN_PATH: "POST", REGISTER_PATH: "POST", CONSENT_PATH: "GET, HEAD, POST"}


def _origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host.lower()}"


def _json(model: Any, status: int = 200) -> web.Response:
    return web.Response(
        status=status,
        text=model.model_dump_json(exclude_none=True),
        content_type="application/json",
        headers=_NO_STORE,
    )


def _oauth_error(status: int, error: str, description: str) -> web.Response:
    body = {"error": error, "error_description": description}
    return web.json_response(body, status=status, headers={**_NO_STORE, "Pragma": "no-cache"})


def _consent_script(signed_in: bool, hint: str) -> str:
    return f"""(function () {{
  "use strict";
  var hint = {script_json(hint)};
  var request = new URLSearchParams(window.location.search).get("request");
  var msg = document.getElementById("msg");
  function post(path, body, then) {{
    msg.textContent = "\\u2026";
    fetch(path, {{
      method: "POST", credentials: "same-origin", cache: "no-store", redirect: "error",
      headers: {{"Content-Type": "application/json"}}, body: JSON.stringify(body)
    }}).then(function (response) {{
      return response.json().then(function (answer) {{ then(response.ok, answer); }});
    }}, function () {{ msg.textContent = "The daemon did not answer. Try again."; }});
  }}
  if ({"true" if signed_in else "false"}) {{
    function decide(allow) {{
      post("{CONSENT_PATH}", {{request: request, allow: allow}}, function (ok, answer) {{
        if (ok) {{ window.location.assign(answer.data.redirect); return; }}
        msg.textContent = "This request is unknown or expired. Start again from the client.";
      }});
    }}
    document.getElementById("allow").addEventListener("click", function () {{ decide(true); }});
    document.getElementById("deny").addEventListener("click", function () {{ decide(false); }});
    return;
  }}
  document.getElementById("sign-in").addEventListener("click", function () {{
    var code = document.getElementById("code").value.trim();
    post("/auth/login", {{code: code}}, function (ok, answer) {{
      if (ok) {{ window.location.reload(); return; }}
      msg.textContent = (answer && answer.error && answer.error.message || "Refused.") + " " + hint;
    }});
  }});
}}());"""


def consent_page(pending: Pending, *, signed_in: bool, hint: str, nonce: str) -> str:
    """Return the consent page: sign in with a login code first, then allow or deny the client."""
    client = pending.client.client_name or "An MCP client"
    back = urlsplit(str(pending.params.redirect_uri))
    returns_to = f"{back.scheme}://{back.netloc}"
    if signed_in:
        main = (
            f"<h1>Allow {html.escape(client)}?</h1>"
            f"<p><strong>{html.escape(client)}</strong> asks to use this daemon's tools as this "
            "device. It signs in as its own session: <code>local-daemon sessions list</code> "
            "shows it and <code>local-daemon sessions revoke ID</code> ends it.</p>"
            f"<p>After you answer, this browser goes back to <code>{html.escape(returns_to)}</code>"
            ".</p>"
            '<p><button id="allow" type="button">Allow</button> '
            '<button id="deny" type="button">Deny</button></p>'
        )
    else:
        main = (
            "<h1>Sign in to continue</h1>"
            f"<p>{html.escape(client)} asks to use this daemon's tools. Sign this browser in "
            "first with a login code.</p>"
            f"<p>{html.escape(hint)}</p>"
            '<p><label>Login code <input id="code" autocomplete="off" spellcheck="false">'
            '</label> <button id="sign-in" type="button">Sign in</button></p>'
        )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f'<title>Allow access</title><style nonce="{nonce}">{STYLE}</style></head>\n'
        f'<body><main>{main}<p id="msg" role="status" aria-live="polite"></p></main>\n'
        f'<script nonce="{nonce}">{_consent_script(signed_in, hint)}</script></body></html>\n'
    )


class OAuthEndpoints:
    """The authorization server of one gate: its state and the answers to `OAUTH_PATHS`."""

    __slots__ = ("_auth", "state")

    def __init__(self, auth: DaemonAuth) -> None:
        self._auth = auth
        self.state = OAuthState(auth)

    def _provider(self, request: web.Request) -> OAuthProvider:
        return OAuthProvider(
            self.state,
            resource=mcp_resource_url(request.scheme, request.host),
            issuer=_origin(request),
            consent_path=CONSENT_PATH,
            user_agent=request.headers.get(hdrs.USER_AGENT, ""),
            peer=request.remote,
        )

    async def answer(self, request: web.Request, signed_in: bool) -> web.StreamResponse:
        """Answer a request for one of `OAUTH_PATHS`; `signed_in`: the browser's cookie is good."""
        path, method = request.path, request.method
        get = method in ("GET", "HEAD")
        if path.startswith(PROTECTED_RESOURCE_METADATA_PATH) and get:
            return self._resource_metadata(request)
        if path == AUTHORIZATION_SERVER_METADATA_PATH and get:
            return self._server_metadata(request)
        if path == AUTHORIZE_PATH and get:
            handler = AuthorizationHandler(self._provider(request))
            return await run_asgi(request_response(handler.handle), request, b"")
        if path == TOKEN_PATH and method == "POST":
            return await self._token(request)
        if path == REGISTER_PATH and method == "POST":
            return await self._register(request)
        if path == CONSENT_PATH and get:
            return self._consent_page(request, signed_in)
        if path == CONSENT_PATH and method == "POST":
            return await self._consent(request, signed_in)
        return envelope(405, 64, "method not allowed", Allow=_ALLOW.get(path, "GET, HEAD"))

    def _resource_metadata(self, request: web.Request) -> web.Response:
        metadata = ProtectedResourceMetadata(
            resource=mcp_resource_url(request.scheme, request.host),  # type: ignore[arg-type]
            authorization_servers=[_origin(request)],  # type: ignore[list-item]
            bearer_methods_supported=["header"],
            resource_name="local-daemon",
        )
        return _json(metadata)

    def _server_metadata(self, request: web.Request) -> web.Response:
        origin = _origin(request)
        metadata = OAuthMetadata(
            issuer=origin,  # type: ignore[arg-type]
            authorization_endpoint=origin + AUTHORIZE_PATH,  # type: ignore[arg-type]
            token_endpoint=origin + TOKEN_PATH,  # type: ignore[arg-type]
            registration_endpoint=origin + REGISTER_PATH,  # type: ignore[arg-type]
            response_types_supported=["code"],
            grant_types_supported=["authorization_code", "refresh_token"],
            token_endpoint_auth_methods_supported=["none"],
            code_challenge_methods_supported=["S256"],
            authorization_response_iss_parameter_supported=True,
            client_id_metadata_document_supported=True,
        )
        return _json(metadata)

    async def _read(self, request: web.Request, cap: int) -> bytes | web.Response:
        try:
            return bytes(await read_body(request, cap))
        except BodyTooLargeError:
            return _oauth_error(413, "invalid_request", "the body is too large")
        except BodyIncompleteError:
            return _oauth_error(400, "invalid_request", "the body ended early")

    async def _token(self, request: web.Request) -> web.StreamResponse:
        throttle = self._auth.throttle
        wait = throttle.retry_after(request.remote)
        if wait is not None:
            refused = _oauth_error(
                429,
                "temporarily_unavailable",
                f"too many failed token requests: try again in {wait} seconds",
            )
            refused.headers["Retry-After"] = str(wait)
            return refused
        answer = await self._token_answer(request)
        if answer.status >= 400:
            throttle.failed(request.remote)
        return answer

    async def _token_answer(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(request, _MAX_FORM_BYTES)
        if isinstance(body, web.Response):
            return body
        try:
            form = parse_qs(body.decode("utf-8"), keep_blank_values=True)
        except (UnicodeDecodeError, ValueError):
            return _oauth_error(400, "invalid_request", "the body must be form-encoded")
        resource = mcp_resource_url(request.scheme, request.host)
        asked = form.get("resource")
        if asked is not None and asked != [resource]:
            # RFC 8707 §2: a token for another resource is not this server's to give.
            return _oauth_error(400, "invalid_target", "this server is the resource " + resource)
        provider = self._provider(request)
        handler = TokenHandler(provider, ClientAuthenticator(provider))
        return await run_asgi(request_response(handler.handle), request, body)

    async def _register(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(request, _MAX_FORM_BYTES)
        if isinstance(body, web.Response):
            return body
        handler = RegistrationHandler(
            self._provider(request),
            options=ClientRegistrationOptions(enabled=True),
        )
        return await run_asgi(request_response(handler.handle), request, body)

    def _consent_page(self, request: web.Request, signed_in: bool) -> web.Response:
        nonce = secrets.token_urlsafe(16)
        pending = self.state.pending(request.query.get("request", ""))
        if pending is None:
            text = (
                '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
                f'<title>Unknown request</title><style nonce="{nonce}">{STYLE}</style></head>'
                "<body><main><h1>Unknown or expired sign-in request</h1><p>Start the sign-in "
                "again from your MCP client.</p></main></body></html>\n"
            )
            return html_response(400, text, nonce)
        hint = self._auth.sign_in_hint
        return html_response(
            200, consent_page(pending, signed_in=signed_in, hint=hint, nonce=nonce), nonce
        )

    async def _consent(self, request: web.Request, signed_in: bool) -> web.Response:
        if not signed_in:
            return envelope(401, 77, "sign this browser in first")
        raw = await self._read(request, _MAX_CONSENT_BODY)
        if isinstance(raw, web.Response):
            return raw
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("request"), str):
            return envelope(400, 65, 'the body must be JSON: {"request": "...", "allow": true}')
        redirect = self.state.decide(body["request"], allow=body.get("allow") is True)
        if redirect is None:
            return envelope(404, 65, "this sign-in request is unknown or expired")
        return web.json_response({"ok": True, "data": {"redirect": redirect}}, headers=_NO_STORE)
