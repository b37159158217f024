"""MCP authorization on a gated app: the `mcp` SDK's own OAuth client signs in end to end.

The app is the daemon's (`build_http_app(gate=...)` with `/mcp`) on a real loopback socket; the
client is `mcp.client.auth.OAuthClientProvider` under the SDK's streamable-HTTP client. The
browser step runs on the daemon's own pages (`oauth_support.DaemonBrowser`): the consent page,
the sign-in with a login code from the token file, Allow. The TypeScript SDK's OAuth client signs
in over TLS in a network namespace (test_oauth_remote.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth import routes
from mcp.shared.auth import OAuthClientMetadata

from daemon_raw_http import serve_app
from local_daemon import (
    Registry,
    build_http_app,
    create_daemon_auth,
    ensure_token_file,
    list_sessions,
    mint_login_code,
    revoke_session,
    rotate_token_file,
)
from oauth_support import DaemonBrowser, MemoryStorage, callback_result, sdk_handlers

_TIMEOUT = 20.0
REDIRECT = "http://127.0.0.1:9/callback"


def _registry() -> Registry:
    registry = Registry()

    @registry.command
    def echo(text: str) -> dict[str, str]:
        """Echo the text."""
        return {"text": text}

    return registry


@dataclass(slots=True)
class Served:
    port: int
    token_file: Path
    auth: Any
    http: httpx2.AsyncClient

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return self.origin + "/mcp"

    def browser(self) -> DaemonBrowser:
        return DaemonBrowser(
            origin=self.origin, http=self.http, login_code=lambda: mint_login_code(self.token_file)
        )

    def secret(self) -> str:
        return self.token_file.read_text().strip()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    token_file = tmp_path / "token"
    ensure_token_file(token_file)
    auth = create_daemon_auth(token_file, sessions_file=tmp_path / "sessions.json")
    app = build_http_app(registry=_registry(), version="1", tool_prefix="t", gate=auth)
    async with serve_app(app) as port, httpx2.AsyncClient(timeout=_TIMEOUT) as http:
        yield Served(port=port, token_file=token_file, auth=auth, http=http)


def _sdk_auth(
    served: Served, storage: MemoryStorage, name: str = "sdk test"
) -> OAuthClientProvider:
    redirect_handler, callback_handler = sdk_handlers(served.browser())
    return OAuthClientProvider(
        server_url=served.mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name=name,
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


async def _call_echo(served: Served, oauth: OAuthClientProvider) -> dict[str, Any]:
    http = httpx2.AsyncClient(auth=oauth, timeout=_TIMEOUT)
    async with http, Client(streamable_http_client(served.mcp_url, http_client=http)) as client:
        listed = await client.list_tools()
        called = await client.call_tool("t_echo", {"text": "hi"})
    return {
        "tools": sorted(tool.name for tool in listed.tools),
        "is_error": called.is_error,
        "structured": called.structured_content,
    }


class TestSdkClient:
    async def test_discovers_registers_signs_in_and_calls_a_tool(self, served: Served) -> None:
        storage = MemoryStorage()
        result = await _call_echo(served, _sdk_auth(served, storage))
        assert result["tools"] == ["t_echo"]
        assert result["is_error"] is False
        assert storage.tokens is not None
        assert storage.tokens.refresh_token
        assert storage.client_info is not None
        assert storage.client_info.token_endpoint_auth_method == "none"
        # The device's session is listed with the client's name; the browser's beside it.
        sessions = list_sessions(served.auth.sessions_file)
        clients = [s for s in sessions if s.client_id is not None]
        assert [s.client_name for s in clients] == ["sdk test"]
        assert len(sessions) == 2
        listed = json.dumps([s.to_json() for s in sessions])
        assert "refresh" not in listed
        assert storage.tokens.refresh_token not in listed

    async def test_an_expired_access_token_is_refreshed_silently(self, served: Served) -> None:
        storage = MemoryStorage()
        await _call_echo(served, _sdk_auth(served, storage))
        assert storage.tokens is not None
        first_refresh = storage.tokens.refresh_token
        # A client holding the stored tokens, its access token past the expiry it was given.
        oauth = _sdk_auth(served, storage)
        oauth.context.callback_handler = None  # a browser step would fail the test
        oauth._initialized = True
        oauth.context.current_tokens = storage.tokens
        oauth.context.client_info = storage.client_info
        oauth.context.token_expiry_time = 1.0
        result = await _call_echo(served, oauth)
        assert result["is_error"] is False
        assert storage.tokens.refresh_token != first_refresh
        assert len(list_sessions(served.auth.sessions_file)) == 2  # the same session

    async def test_a_revoked_session_is_refused_at_once(self, served: Served) -> None:
        storage = MemoryStorage()
        await _call_echo(served, _sdk_auth(served, storage))
        assert storage.tokens is not None
        access = storage.tokens.access_token
        assert await _mcp_status(served, access) == 200
        (device,) = [s for s in list_sessions(served.auth.sessions_file) if s.client_id]
        assert revoke_session(served.auth.sessions_file, device.id)
        assert await _mcp_status(served, access) == 401
        refreshed = await _refresh(served, storage)
        assert refreshed.status_code == 400
        assert refreshed.json()["error"] == "invalid_grant"

    async def test_rotating_the_token_file_voids_tokens(self, served: Served) -> None:
        storage = MemoryStorage()
        await _call_echo(served, _sdk_auth(served, storage))
        assert storage.tokens is not None
        rotate_token_file(served.token_file)
        assert await _mcp_status(served, storage.tokens.access_token) == 401
        assert (await _refresh(served, storage)).status_code == 400


async def _mcp_status(served: Served, access: str, path: str = "/mcp") -> int:
    answer = await served.http.post(
        served.origin + path,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            "Authorization": f"Bearer {access}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
    )
    return answer.status_code


async def _refresh(served: Served, storage: MemoryStorage, **extra: str) -> httpx2.Response:
    assert storage.tokens is not None
    assert storage.client_info is not None
    form = {
        "grant_type": "refresh_token",
        "refresh_token": storage.tokens.refresh_token or "",
        "client_id": storage.client_info.client_id,
        **extra,
    }
    return await served.http.post(served.origin + "/token", data=form)


# --- the flow by hand, for its refusals ------------------------------------------------------------


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(slots=True)
class Flow:
    served: Served
    client_id: str
    verifier: str
    challenge: str

    def authorize_url(self, **override: str) -> str:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT,
            "state": "st",
            "code_challenge": self.challenge,
            "code_challenge_method": "S256",
            "resource": self.served.mcp_url,
            **override,
        }
        return self.served.origin + "/authorize?" + urlencode(params)

    async def code(self) -> str:
        redirect = await self.served.browser().approve(self.authorize_url())
        result = callback_result(redirect)
        assert result.state == "st"
        assert result.iss == self.served.origin
        return result.code

    async def exchange(self, code: str, **override: str) -> httpx2.Response:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": self.client_id,
            "code_verifier": self.verifier,
            "resource": self.served.mcp_url,
            **override,
        }
        return await self.served.http.post(self.served.origin + "/token", data=form)


@pytest.fixture
async def flow(served: Served) -> Flow:
    registered = await served.http.post(
        served.origin + "/register",
        json={"redirect_uris": [REDIRECT], "client_name": "by hand"},
    )
    assert registered.status_code == 201, registered.text
    verifier, challenge = _pkce()
    return Flow(served, registered.json()["client_id"], verifier, challenge)


class TestRefusals:
    async def test_wrong_pkce_verifier(self, flow: Flow) -> None:
        code = await flow.code()
        answer = await flow.exchange(code, code_verifier=secrets.token_urlsafe(48))
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid_grant"
        # The code was spent by the failed try.
        assert (await flow.exchange(code)).json()["error"] == "invalid_grant"

    async def test_plain_pkce_method(self, flow: Flow) -> None:
        answer = await flow.served.http.get(
            flow.authorize_url(code_challenge=flow.verifier, code_challenge_method="plain")
        )
        assert answer.status_code == 302
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        assert query["error"] == ["invalid_request"]
        assert answer.headers["location"].startswith(REDIRECT)

    async def test_wrong_resource_at_authorize(self, flow: Flow) -> None:
        answer = await flow.served.http.get(
            flow.authorize_url(resource="https://elsewhere.example/mcp")
        )
        assert answer.status_code == 302
        assert parse_qs(urlsplit(answer.headers["location"]).query)["error"] == ["invalid_target"]

    async def test_wrong_resource_at_token(self, flow: Flow) -> None:
        code = await flow.code()
        answer = await flow.exchange(code, resource="https://elsewhere.example/mcp")
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid_target"

    async def test_token_for_another_host_is_refused(self, flow: Flow) -> None:
        answer = await flow.exchange(await flow.code())
        access = answer.json()["access_token"]
        served = flow.served
        good = await _mcp_status(served, access)
        assert good == 200
        # The same daemon reached by another allowed name is another resource (RFC 8707).
        other = await served.http.post(
            f"http://localhost:{served.port}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={
                "Authorization": f"Bearer {access}",
                "Accept": "application/json, text/event-stream",
            },
        )
        assert other.status_code == 401
        # And it is no credential for anything but /mcp.
        rpc = await served.http.post(
            served.origin + "/rpc/echo",
            json={"text": "x"},
            headers={"Authorization": f"Bearer {access}", "x-local-client": "t"},
        )
        assert rpc.status_code == 401

    async def test_reused_code_is_refused_and_ends_its_session(self, flow: Flow) -> None:
        code = await flow.code()
        first = await flow.exchange(code)
        assert first.status_code == 200
        access = first.json()["access_token"]
        assert await _mcp_status(flow.served, access) == 200
        again = await flow.exchange(code)
        assert again.status_code == 400
        assert again.json()["error"] == "invalid_grant"
        assert await _mcp_status(flow.served, access) == 401

    async def test_reused_refresh_token_is_refused_and_ends_the_session(self, flow: Flow) -> None:
        tokens = (await flow.exchange(await flow.code())).json()
        storage = MemoryStorage()
        from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

        storage.tokens = OAuthToken.model_validate(tokens)
        storage.client_info = OAuthClientInformationFull(
            client_id=flow.client_id,
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
        )
        rotated = await _refresh(flow.served, storage)
        assert rotated.status_code == 200, rotated.text
        new = rotated.json()
        assert new["refresh_token"] != tokens["refresh_token"]
        assert await _mcp_status(flow.served, new["access_token"]) == 200
        reused = await _refresh(flow.served, storage)  # the first refresh token again
        assert reused.status_code == 400
        assert reused.json()["error"] == "invalid_grant"
        assert await _mcp_status(flow.served, new["access_token"]) == 401
        storage.tokens = OAuthToken.model_validate(new)
        assert (await _refresh(flow.served, storage)).status_code == 400

    async def test_denied_consent_returns_access_denied(self, flow: Flow) -> None:
        browser = flow.served.browser()
        consent = await browser.open_consent(flow.authorize_url())
        await browser.sign_in()
        answer = await browser.decide(consent, allow=False)
        result = parse_qs(urlsplit(answer.json()["data"]["redirect"]).query)
        assert result["error"] == ["access_denied"]
        assert "code" not in result

    async def test_consent_needs_a_signed_in_browser(self, flow: Flow) -> None:
        browser = flow.served.browser()
        consent = await browser.open_consent(flow.authorize_url())
        page = await browser.page(consent)
        assert "Sign in to continue" in page.text
        assert "by hand" in page.text
        assert (await browser.decide(consent, allow=True)).status_code == 401
        browser.cookie = "v2.1.AAAAAAAAAAAAAAAAAAAAAA." + "A" * 43
        assert (await browser.decide(consent, allow=True)).status_code == 401

    async def test_redirect_uri_must_be_https_or_loopback(self, served: Served) -> None:
        for uri in ("http://evil.example/cb", "javascript:alert(1)", "ftp://127.0.0.1/cb"):
            answer = await served.http.post(
                served.origin + "/register", json={"redirect_uris": [uri]}
            )
            assert answer.status_code == 400, uri

    async def test_secret_bearer_still_works_for_scripts(self, served: Served) -> None:
        assert await _mcp_status(served, served.secret()) == 200


class TestDiscovery:
    async def test_401_names_the_protected_resource_metadata(self, served: Served) -> None:
        answer = await served.http.post(
            served.mcp_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert answer.status_code == 401
        challenge = answer.headers["www-authenticate"]
        expected = served.origin + "/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{expected}"' in challenge

    async def test_metadata_documents(self, served: Served) -> None:
        resource = (
            await served.http.get(served.origin + "/.well-known/oauth-protected-resource/mcp")
        ).json()
        assert resource["resource"] == served.mcp_url
        assert resource["authorization_servers"] == [served.origin]
        server = (
            await served.http.get(served.origin + "/.well-known/oauth-authorization-server")
        ).json()
        assert server["issuer"] == served.origin
        assert server["code_challenge_methods_supported"] == ["S256"]
        assert server["registration_endpoint"] == served.origin + "/register"
        # The SDK's own paths: a client without the metadata falls back to them.
        assert server["authorization_endpoint"] == served.origin + routes.AUTHORIZATION_PATH
        assert server["token_endpoint"] == served.origin + routes.TOKEN_PATH
        assert served.origin + routes.REGISTRATION_PATH == server["registration_endpoint"]
        assert server["token_endpoint_auth_methods_supported"] == ["none"]

    async def test_foreign_host_gets_403_first(self, served: Served) -> None:
        answer = await served.http.get(
            served.origin + "/.well-known/oauth-authorization-server",
            headers={"Host": "evil.example"},
        )
        assert answer.status_code == 403
