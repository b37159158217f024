"""The gate on the daemon's own app (`build_http_app(gate=...)`), driven by aiohttp's test client."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import ClientResponse

from gate_support import Client, gate_client
from local_daemon import (
    DaemonAuth,
    create_daemon_auth,
    ensure_token_file,
    mint_login_code,
    rotate_token_file,
)

HINT = "Ask Ana <ana@example.test> & run `box link` </script><script>alert(1)</script>\u2028end"
JSON_POST = {"Content-Type": "application/json", "x-local-client": "tests"}
# What a stock MCP client sends: no x-local-client.
MCP_POST = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return ensure_token_file(tmp_path / "token")


@pytest.fixture
def auth(token_file: Path) -> DaemonAuth:
    return create_daemon_auth(token_file, sign_in_hint=HINT)


@pytest.fixture
async def client(auth: DaemonAuth) -> AsyncIterator[Client]:
    async with gate_client(auth) as c:
        yield c


async def _whoami(client: Client, headers: dict[str, str] | None = None) -> ClientResponse:
    """Call the `whoami` command, which answers the gate's record of the caller."""
    return await client.post("/rpc/whoami", data=b"{}", headers={**JSON_POST, **(headers or {})})


def _bearer(token_file: Path) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_file.read_text().strip()}"}


async def _login(client: Client, token_file: Path) -> str:
    code = mint_login_code(token_file)
    resp = await client.post("/auth/login", json={"code": code}, headers={"x-local-client": "t"})
    assert resp.status == 200
    return resp.headers["Set-Cookie"].split(";", 1)[0].split("=", 1)[1]


ROUTES = [
    ("GET", "/"),
    ("GET", "/whoami"),
    ("GET", "/health"),
    ("GET", "/version"),
    ("GET", "/events"),
    ("POST", "/rpc/echo"),
    ("GET", "/no/such/route"),
    ("POST", "/mcp"),
    ("GET", "/auth/loginx"),
    ("POST", "/auth/logout"),
]


class TestWithoutCredential:
    @pytest.mark.parametrize(("method", "path"), ROUTES)
    async def test_every_route_is_401_json(self, client: Client, method: str, path: str) -> None:
        resp = await client.request(
            method,
            path,
            headers=JSON_POST if method == "POST" else {},
            data=b"{}" if method == "POST" else None,
        )
        assert resp.status == 401
        body = await resp.json()
        assert body["ok"] is False
        assert body["error"]["code"] == 77
        assert resp.headers["WWW-Authenticate"].startswith("Bearer")

    async def test_browser_get_gets_the_html_page(self, client: Client) -> None:
        resp = await client.get(
            "/", headers={"Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"}
        )
        assert resp.status == 401
        assert resp.content_type == "text/html"
        text = await resp.text()
        assert '<a href="">Reload this page</a>' in text
        assert "Ask Ana &lt;ana@example.test&gt; &amp; run `box link` &lt;/script&gt;" in text
        assert "<script" not in text
        assert "10 minutes" in text
        assert "30 days" in text
        assert resp.headers["Cache-Control"] == "no-store"
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]

    @pytest.mark.parametrize(
        ("method", "accept"),
        [("GET", "application/json"), ("GET", "*/*"), ("POST", "text/html")],
    )
    async def test_other_requests_get_json(self, client: Client, method: str, accept: str) -> None:
        headers = {"Accept": accept, **(JSON_POST if method == "POST" else {})}
        resp = await client.request(
            method,
            "/whoami" if method == "GET" else "/rpc/x",
            headers=headers,
            data=b"{}" if method == "POST" else None,
        )
        assert resp.status == 401
        assert resp.content_type == "application/json"

    async def test_neither_answer_names_a_login_command(self, client: Client) -> None:
        for accept in ("text/html", "application/json"):
            text = await (await client.get("/", headers={"Accept": accept})).text()
            assert "local-daemon" not in text
            assert "login-code" not in text

    async def test_wrong_bearer_and_garbage_cookie(self, client: Client) -> None:
        assert (await _whoami(client, {"Authorization": "Bearer nope"})).status == 401
        assert (await _whoami(client, {"Authorization": "Basic Zm9vOmJhcg=="})).status == 401
        assert (await _whoami(client, {"Cookie": "local_session=v1.1.abc"})).status == 401


class TestGuardOrder:
    async def test_foreign_host_is_403_before_the_gate(self, client: Client) -> None:
        for path in ("/whoami", "/auth/login", "/auth/logout"):
            resp = await client.get(path, headers={"Host": "evil.test"})
            assert resp.status == 403, path

    async def test_foreign_origin_login_post_is_403(self, client: Client, token_file: Path) -> None:
        code = mint_login_code(token_file)
        resp = await client.post(
            "/auth/login", json={"code": code}, headers={"Origin": "https://evil.test"}
        )
        assert resp.status == 403
        # The code was not spent by the refused request.
        await _login_with(client, code)


async def _login_with(client: Client, code: str) -> None:
    resp = await client.post("/auth/login", json={"code": code}, headers={"x-local-client": "t"})
    assert resp.status == 200


class TestLoginPage:
    async def test_get_is_inert_and_locked_down(self, client: Client, token_file: Path) -> None:
        code = mint_login_code(token_file)
        resp = await client.get(f"/auth/login?code={code}")
        assert resp.status == 200
        text = await resp.text()
        assert code not in text
        assert resp.headers["Cache-Control"] == "no-store"
        assert resp.headers["Referrer-Policy"] == "no-referrer"
        csp = resp.headers["Content-Security-Policy"]
        nonce = re.search(r"script-src 'nonce-([A-Za-z0-9_-]+)'", csp)
        assert nonce is not None
        assert f'<script nonce="{nonce.group(1)}">' in text
        assert "default-src 'none'" in csp
        assert "'unsafe-inline'" not in csp
        assert "10 minutes" in text
        assert "30 days" in text
        again = await client.get(f"/auth/login?code={code}")
        assert again.headers["Content-Security-Policy"] != csp
        # Rendering twice spent nothing.
        await _login_with(client, code)

    async def test_hint_is_script_escaped(self, client: Client) -> None:
        text = await (await client.get("/auth/login")).text()
        literal = re.search(r"var hint = (\"[^\n]*\");", text)
        assert literal is not None
        assert json.loads(literal.group(1)) == HINT
        for raw in ("</script><script>", "<ana@", "\u2028", " & "):
            assert raw not in literal.group(1)
        assert text.count("</script>") == 1

    async def test_head(self, client: Client) -> None:
        resp = await client.head("/auth/login")
        assert resp.status == 200
        assert resp.headers["Referrer-Policy"] == "no-referrer"
        assert await resp.read() == b""

    @pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
    async def test_other_methods_are_405(self, client: Client, method: str) -> None:
        resp = await client.request(method, "/auth/login", headers=JSON_POST, data=b"{}")
        assert resp.status == 405
        assert resp.headers["Allow"] == "GET, HEAD, POST"


class TestLoginPost:
    async def test_spends_once_and_sets_the_cookie(self, client: Client, token_file: Path) -> None:
        code = mint_login_code(token_file)
        resp = await client.post(
            "/auth/login", json={"code": code}, headers={"x-local-client": "t"}
        )
        assert resp.status == 200
        cookie = resp.headers["Set-Cookie"]
        assert re.fullmatch(
            r"local_session=v2\.\d+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}; "
            r"HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=2592000",
            cookie,
        )
        assert resp.headers["Cache-Control"] == "no-store"
        second = await client.post(
            "/auth/login", json={"code": code}, headers={"x-local-client": "t"}
        )
        assert second.status == 401
        assert "Set-Cookie" not in second.headers

    @pytest.mark.parametrize(
        ("body", "status"),
        [
            (b"not json", 400),
            (b'{"code": 5}', 401),
            (b"[]", 401),
            (b'{"code": "v1.1.2.3"}', 401),
            (b"{" + b" " * 9000 + b"}", 413),
        ],
    )
    async def test_bad_bodies(self, client: Client, body: bytes, status: int) -> None:
        resp = await client.post("/auth/login", data=body, headers=JSON_POST)
        assert resp.status == status


class TestCredentials:
    async def test_cookie_gives_a_session_record(self, client: Client, token_file: Path) -> None:
        value = await _login(client, token_file)
        client.session.cookie_jar.clear()
        resp = await _whoami(client, {"Cookie": f"local_session={value}"})
        assert resp.status == 200
        data = (await resp.json())["data"]
        assert data["credential"] == "session"
        assert data["peer_local"] is True

    async def test_bearer_gives_a_bearer_record(self, client: Client, token_file: Path) -> None:
        resp = await _whoami(client, _bearer(token_file))
        assert resp.status == 200
        data = (await resp.json())["data"]
        assert data == {
            "credential": "bearer",
            "issued_at": int(token_file.stat().st_mtime),
            "peer_local": True,
        }

    async def test_rpc_with_bearer(self, client: Client, token_file: Path) -> None:
        resp = await client.post(
            "/rpc/echo", json={"a": 1}, headers={**_bearer(token_file), "x-local-client": "t"}
        )
        assert resp.status == 200
        assert (await resp.json())["data"] == {"a": 1}

    async def test_mcp_takes_the_bearer(self, client: Client, token_file: Path) -> None:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        call["params"] = {"name": "t_whoami", "arguments": {}}
        resp = await client.post("/mcp", json=call, headers={**MCP_POST, **_bearer(token_file)})
        assert resp.status == 200
        result = (await resp.json())["result"]
        assert result["structuredContent"]["data"]["credential"] == "bearer"

    @pytest.mark.parametrize("path", ["/mcp", "/mcp/x"])
    async def test_mcp_refuses_a_cookie_alone(
        self, client: Client, token_file: Path, path: str
    ) -> None:
        # A cookie rides along with any request a page makes (CSRF); /mcp wants the bearer.
        value = await _login(client, token_file)
        client.session.cookie_jar.clear()
        cookie = {"Cookie": f"local_session={value}"}
        resp = await client.post(path, data=b"{}", headers={**JSON_POST, **cookie})
        assert resp.status == 401
        # RFC 9728 §5.1: the challenge names where an MCP client learns how to sign in.
        metadata = f"http://{client.host}:{client.port}/.well-known/oauth-protected-resource/mcp"
        assert resp.headers["WWW-Authenticate"] == (
            f'Bearer realm="local-daemon", resource_metadata="{metadata}"'
        )
        body = await resp.json()
        assert body["error"]["message"] == (
            "sign-in required: /mcp takes a bearer token (Authorization: Bearer)"
        )
        assert value not in await resp.text()
        # The same cookie still opens the pages and /rpc.
        assert (await _whoami(client, cookie)).status == 200

    @pytest.mark.parametrize(
        "authorization", [None, "Bearer", "Bearer wrong", "Basic eDp5", "bearer  "]
    )
    async def test_mcp_without_a_good_bearer_is_401_with_nothing_echoed(
        self, client: Client, authorization: str | None
    ) -> None:
        headers = dict(JSON_POST)
        if authorization is not None:
            headers["Authorization"] = authorization
        resp = await client.post("/mcp", data=b"{}", headers=headers)
        assert resp.status == 401
        assert await resp.json() == {
            "ok": False,
            "error": {
                "code": 77,
                "message": "sign-in required: send a session cookie or a bearer token",
            },
        }

    async def test_rotation_voids_the_session(self, client: Client, token_file: Path) -> None:
        value = await _login(client, token_file)
        client.session.cookie_jar.clear()
        rotate_token_file(token_file)
        resp = await _whoami(client, {"Cookie": f"local_session={value}"})
        assert resp.status == 401


class TestLogout:
    async def test_clears_the_cookie(self, client: Client, token_file: Path) -> None:
        value = await _login(client, token_file)
        client.session.cookie_jar.clear()
        resp = await client.post(
            "/auth/logout",
            json={},
            headers={"Cookie": f"local_session={value}", "x-local-client": "t"},
        )
        assert resp.status == 200
        assert resp.headers["Set-Cookie"] == (
            "local_session=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0"
        )
        # Server-side too: a copied cookie stops working with it.
        assert (await _whoami(client, {"Cookie": f"local_session={value}"})).status == 401

    async def test_get_is_405(self, client: Client, token_file: Path) -> None:
        resp = await client.get("/auth/logout", headers=_bearer(token_file))
        assert resp.status == 405
        assert resp.headers["Allow"] == "POST"


class TestBadTokenFile:
    async def test_every_request_is_503_until_fixed(
        self, client: Client, token_file: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        secret = token_file.read_text().strip()
        caplog.set_level(logging.INFO, logger="local_daemon")
        os.chmod(token_file, 0o644)
        for method, path in [
            ("GET", "/whoami"),
            ("GET", "/auth/login"),
            ("POST", "/auth/login"),
            ("GET", "/health"),
        ]:
            resp = await client.request(
                method,
                path,
                headers={**JSON_POST, **_bearer(token_file)},
                data=b"{}" if method == "POST" else None,
            )
            assert resp.status == 503, path
            assert secret not in await resp.text()
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1
        assert "mode" in errors[0].getMessage()
        os.chmod(token_file, 0o600)
        assert (await _whoami(client, _bearer(token_file))).status == 200
        assert any("passes its checks again" in r.getMessage() for r in caplog.records)
        assert all(secret not in r.getMessage() for r in caplog.records)


async def test_without_gate_the_app_is_open() -> None:
    async with gate_client(None) as c:
        resp = await _whoami(c)
        assert resp.status == 200
        assert (await resp.json())["data"] is None
