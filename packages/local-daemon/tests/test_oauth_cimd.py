"""Client ID metadata documents: an MCP client whose id is an HTTPS URL signs in without
registering; the daemon fetches and checks the document there.

The document is served over real TLS on loopback (a `trustme` CA the daemon trusts through
`SSL_CERT_FILE`, as OpenSSL's default paths read it); the client is the `mcp` SDK's own
`OAuthClientProvider(client_metadata_url=...)`.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2
import pytest
import trustme
from aiohttp import web
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from daemon_raw_http import serve_app
from local_daemon import (
    Registry,
    build_http_app,
    create_daemon_auth,
    ensure_token_file,
    list_sessions,
    mint_login_code,
)
from oauth_support import DaemonBrowser, MemoryStorage, sdk_handlers

_TIMEOUT = 20.0
REDIRECT = "http://127.0.0.1:9/callback"


@dataclass(slots=True)
class DocumentServer:
    """An HTTPS server on loopback holding client ID metadata documents by path."""

    port: int = 0
    documents: dict[str, Any] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.fetched.append(request.path)
        document = self.documents.get(request.path)
        if document is None:
            return web.Response(status=404)
        if isinstance(document, web.StreamResponse):
            return document
        if isinstance(document, bytes):
            return web.Response(body=document, content_type="application/json")
        return web.json_response(document)


@pytest.fixture
async def documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[DocumentServer]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    served = DocumentServer()
    app = web.Application()
    app.router.add_get("/{path:.*}", served.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ctx)
    await site.start()
    served.port = runner.addresses[0][1]
    try:
        yield served
    finally:
        await runner.cleanup()


@dataclass(slots=True)
class Daemon:
    origin: str
    token_file: Path
    sessions_file: Path
    http: httpx2.AsyncClient


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    token_file = ensure_token_file(tmp_path / "token")
    sessions_file = tmp_path / "sessions.json"
    auth = create_daemon_auth(token_file, sessions_file=sessions_file)
    registry = Registry()

    @registry.command
    def echo(text: str) -> dict[str, str]:
        """Echo the text."""
        return {"text": text}

    app = build_http_app(registry=registry, version="1", tool_prefix="t", gate=auth)
    async with serve_app(app) as port, httpx2.AsyncClient(timeout=_TIMEOUT) as http:
        yield Daemon(f"http://127.0.0.1:{port}", token_file, sessions_file, http)


def _document(url: str, **override: Any) -> dict[str, Any]:
    return {
        "client_id": url,
        "client_name": "cimd client",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        **override,
    }


async def test_sdk_client_signs_in_with_its_metadata_url(
    daemon: Daemon, documents: DocumentServer
) -> None:
    url = documents.url("/client.json")
    documents.documents["/client.json"] = _document(url)
    browser = DaemonBrowser(
        origin=daemon.origin,
        http=daemon.http,
        login_code=lambda: mint_login_code(daemon.token_file),
    )
    redirect_handler, callback_handler = sdk_handlers(browser)
    storage = MemoryStorage()
    oauth = OAuthClientProvider(
        server_url=daemon.origin + "/mcp",
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT]),  # type: ignore[list-item]
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=url,
    )
    http = httpx2.AsyncClient(auth=oauth, timeout=_TIMEOUT)
    transport = streamable_http_client(daemon.origin + "/mcp", http_client=http)
    async with http, Client(transport) as client:
        called = await client.call_tool("t_echo", {"text": "hi"})
    assert called.is_error is False
    assert storage.client_info is not None
    assert storage.client_info.client_id == url
    (device,) = [s for s in list_sessions(daemon.sessions_file) if s.client_id]
    assert (device.client_id, device.client_name) == (url, "cimd client")
    # Fetched once for /authorize and the code exchange together (cached).
    assert documents.fetched == ["/client.json"]
    assert "cimd client" in "\n".join(browser.pages)


async def _authorize_status(daemon: Daemon, client_id: str) -> int:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "s",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
    }
    answer = await daemon.http.get(daemon.origin + "/authorize?" + urlencode(params))
    return answer.status_code


@pytest.mark.parametrize(
    ("document", "why"),
    [
        (lambda url: _document(url + "x"), "another client id"),
        (lambda url: _document(url, redirect_uris=["http://evil.example/cb"]), "redirect URI"),
        (lambda url: _document(url, token_endpoint_auth_method="client_secret_post"), "secret"),
        (
            lambda url: b'{"client_id": "' + url.encode() + b'", "x": "' + b"a" * 9000 + b'"}',
            "size",
        ),
        (lambda url: b"not json", "not JSON"),
        (lambda url: web.Response(status=302, headers={"Location": "/good.json"}), "redirect"),
    ],
)
async def test_a_bad_document_names_no_client(
    daemon: Daemon, documents: DocumentServer, document: Any, why: str
) -> None:
    url = documents.url("/client.json")
    documents.documents["/client.json"] = document(url)
    documents.documents["/good.json"] = _document(url)
    assert await _authorize_status(daemon, url) == 400, why
    # Fetched, refused, and no redirect followed.
    assert documents.fetched == ["/client.json"]


async def test_only_https_urls_with_a_path_are_fetched(
    daemon: Daemon, documents: DocumentServer
) -> None:
    documents.documents["/client.json"] = _document(documents.url("/client.json"))
    for client_id in (
        f"http://127.0.0.1:{documents.port}/client.json",
        f"https://127.0.0.1:{documents.port}/",
        "file:///etc/passwd",
    ):
        assert await _authorize_status(daemon, client_id) == 400, client_id
    assert documents.fetched == []
