"""app_installation_token: RS256 JWT claims, key refusal, the exchange through a recording seam
and over real sockets.

The socket tests post to a tiny aiohttp forge on 127.0.0.1 that plays GitHub's rule for app JWTs:
only `Authorization: Bearer <JWT>` is decoded, and the JWT's signature is verified with the public
key before a token is answered. It is reached as gh reaches it (GH_HOST=github.localhost through
HTTP_PROXY), and as a GitHub Enterprise Server over real TLS with a certificate made for the test.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import NameOID

from fakeforge import gh_env
from forge_automation import (
    ExecOptions,
    ExecResult,
    ForgeCliError,
    ForgeError,
    ForgeInputError,
    InstallationToken,
    app_installation_token,
    forge_port,
    gh_cli_wire,
    run_gh,
)

NOW = 1_767_323_045  # 2026-01-02T03:04:05Z
# The exchange's `post` seam: (url, headers, timeout) -> (status, body).
TokenPost = Callable[[str, Mapping[str, str], float | None], tuple[int, bytes]]
APP_ID = 123456
INSTALLATION = 987654
TOKEN = "ghs_" + "InstallationCanary" * 2 + "0123"
FUTURE = "2026-01-02T04:04:05Z"
FUTURE_MS = (NOW + 3600) * 1000


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def b64decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def verify_jwt(jwt: str, public: rsa.RSAPublicKey) -> tuple[dict[str, Any], dict[str, Any]]:
    """Verify the RS256 signature with the public key and return header and claims."""
    header, claims, signature = jwt.split(".")
    public.verify(
        b64decode(signature),
        f"{header}.{claims}".encode(),
        padding.PKCS1v15(),
        hashes.SHA256(),
    )
    return json.loads(b64decode(header)), json.loads(b64decode(claims))


def leaks(text: str, *secrets: str) -> list[str]:
    """Return which secrets (or their key lines) appear in `text`."""
    found = [s for s in secrets if s and s in text]
    return found + [line for s in secrets for line in s.splitlines()[1:-1] if line in text]


# -- the JWT -----------------------------------------------------------------------------------


def test_jwt_is_rs256_with_the_spec_claims(key: rsa.RSAPrivateKey, pem: str) -> None:
    jwt = sent_jwt(pem, now=NOW + 0.9)
    header, claims = verify_jwt(jwt, key.public_key())
    assert header == {"alg": "RS256", "typ": "JWT"}
    assert claims == {"iat": NOW - 60, "exp": NOW + 540, "iss": str(APP_ID)}
    assert claims["exp"] - NOW < 600


def test_jwt_from_bytes_and_a_pkcs8_key(key: rsa.RSAPrivateKey) -> None:
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    jwt = sent_jwt(pkcs8, app_id="42")
    assert verify_jwt(jwt, key.public_key())[1]["iss"] == "42"


def test_a_tampered_jwt_fails_verification(key: rsa.RSAPrivateKey, pem: str) -> None:
    jwt = sent_jwt(pem)
    header, _claims, signature = jwt.split(".")
    forged = base64.urlsafe_b64encode(b'{"iat":0,"exp":9999999999,"iss":"1"}').decode().rstrip("=")
    with pytest.raises(InvalidSignature):
        verify_jwt(f"{header}.{forged}.{signature}", key.public_key())


def _bad_keys() -> list[tuple[str, str]]:
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    good = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    nopw = serialization.NoEncryption()
    pkcs8 = serialization.PrivateFormat.PKCS8
    return [
        ("garbage", "not a key"),
        ("empty", ""),
        (
            "truncated",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
        ),
        ("ec", ec_key.private_bytes(serialization.Encoding.PEM, pkcs8, nopw).decode()),
        ("small rsa", small.private_bytes(serialization.Encoding.PEM, pkcs8, nopw).decode()),
        (
            "encrypted",
            good.private_bytes(
                serialization.Encoding.PEM,
                pkcs8,
                serialization.BestAvailableEncryption(b"pw"),
            ).decode(),
        ),
        (
            "public key",
            good.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode(),
        ),
        ("non-ascii", "-----BEGIN PRIVATE KEY-----\nü\n-----END PRIVATE KEY-----"),
    ]


BAD_KEYS = _bad_keys()


@pytest.mark.parametrize("bad", [k[1] for k in BAD_KEYS], ids=[k[0] for k in BAD_KEYS])
def test_a_malformed_key_fails_before_any_request(bad: str) -> None:
    post = FakePost()
    with pytest.raises(ForgeInputError) as caught:
        app_installation_token(
            app_id=APP_ID, installation_id=INSTALLATION, private_key_pem=bad, now=NOW, post=post
        )
    assert caught.value.field == "private_key_pem"
    assert post.calls == []
    text = "".join(traceback.format_exception(caught.value))
    assert not leaks(text, bad) or bad in ("", "not a key")
    # Nothing chained either: a UnicodeEncodeError or a cryptography error would hold the key.
    assert caught.value.__context__ is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"app_id": 0}, "app_id"),
        ({"app_id": True}, "app_id"),
        ({"app_id": "12a"}, "app_id"),
        ({"installation_id": -3}, "installation_id"),
        ({"installation_id": "../1"}, "installation_id"),
        ({"installation_id": 1.5}, "installation_id"),
        ({"now": float("nan")}, "now"),
        ({"now": "soon"}, "now"),
        ({"host": "evil.example/path"}, "host"),
        ({"host": "user@github.com"}, "host"),
        ({"host": "github.com\r\nX-Injected: 1"}, "host"),
        ({"host": ""}, "host"),
        ({"host": "-github.com"}, "host"),
        ({"host": "github..com"}, "host"),
        ({"host": "github.com:"}, "host"),
        ({"host": "github.com:443:1"}, "host"),
        ({"host": 7}, "host"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"timeout": "1"}, "timeout"),
    ],
)
def test_bad_arguments_are_refused_before_any_request(
    pem: str, kwargs: dict[str, object], field: str
) -> None:
    post = FakePost()
    args: dict[str, object] = {
        "app_id": APP_ID,
        "installation_id": INSTALLATION,
        "private_key_pem": pem,
        "now": NOW,
        "post": post,
        **kwargs,
    }
    with pytest.raises(ForgeInputError) as caught:
        app_installation_token(**args)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert post.calls == []


def test_a_bad_gh_host_in_the_environment_is_refused(
    pem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_HOST", "github.com/evil")
    post = FakePost()
    with pytest.raises(ForgeInputError) as caught:
        exchange(pem, post, host=None)
    assert caught.value.field == "host"
    assert post.calls == []


@pytest.mark.parametrize(
    ("host", "base"),
    [
        ("github.com", "https://api.github.com"),
        ("GitHub.com", "https://api.github.com"),
        ("www.github.com", "https://api.github.com"),
        ("github.localhost", "http://api.github.localhost"),
        ("acme.ghe.com", "https://api.acme.ghe.com"),
        ("ghe.example.com", "https://ghe.example.com/api/v3"),
        ("ghe.example.com:8443", "https://ghe.example.com:8443/api/v3"),
        ("10.0.0.7", "https://10.0.0.7/api/v3"),
    ],
)
def test_the_api_base_follows_gh_host_rules(pem: str, host: str, base: str) -> None:
    post = FakePost()
    exchange(pem, post, host=host)
    assert [url for url, _, _ in post.calls] == [
        f"{base}/app/installations/{INSTALLATION}/access_tokens"
    ]


# -- the exchange through a recording seam ----------------------------------------------------


@dataclass
class FakePost:
    """A TokenPost that records each request and answers like the forge."""

    status: int = 201
    body: object = field(default_factory=lambda: {"token": TOKEN, "expires_at": FUTURE})
    calls: list[tuple[str, dict[str, str], float | None]] = field(default_factory=list)

    def __call__(
        self, url: str, headers: Mapping[str, str], timeout: float | None
    ) -> tuple[int, bytes]:
        self.calls.append((url, dict(headers), timeout))
        text = self.body if isinstance(self.body, str) else json.dumps(self.body)
        return self.status, text.encode()


def sent_jwt(pem: str | bytes, *, app_id: int | str = APP_ID, now: float = NOW) -> str:
    """Return the app JWT an exchange presents, from its `Authorization: Bearer` header."""
    post = FakePost()
    app_installation_token(
        app_id=app_id, installation_id=INSTALLATION, private_key_pem=pem, now=now, post=post
    )
    ((_, headers, _),) = post.calls
    return headers["Authorization"].removeprefix("Bearer ")


def exchange(pem: str, post: TokenPost, *, host: str | None = "github.com") -> InstallationToken:
    return app_installation_token(
        app_id=APP_ID,
        installation_id=INSTALLATION,
        private_key_pem=pem,
        now=NOW,
        host=host,
        post=post,
    )


def test_the_jwt_is_posted_as_bearer_in_a_header_and_nowhere_else(
    key: rsa.RSAPrivateKey, pem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("the exchange must not start a process")

    monkeypatch.setattr(subprocess.Popen, "__init__", no_child)
    environ_before = dict(os.environ)
    post = FakePost()
    result = exchange(pem, post)
    assert result == InstallationToken(token=TOKEN, expires_at_ms=FUTURE_MS)
    assert TOKEN not in repr(result)
    [(url, headers, timeout)] = post.calls
    assert url == f"https://api.github.com/app/installations/{INSTALLATION}/access_tokens"
    scheme, _, jwt = headers["Authorization"].partition(" ")
    assert scheme == "Bearer"
    assert verify_jwt(jwt, key.public_key())[1] == {
        "iat": NOW - 60,
        "exp": NOW + 540,
        "iss": str(APP_ID),
    }
    assert headers["Accept"] == "application/vnd.github+json"
    assert headers["X-GitHub-Api-Version"] == "2022-11-28"
    assert headers["User-Agent"]
    assert timeout == 60.0
    assert jwt not in url
    assert dict(os.environ) == environ_before


def test_gh_host_from_the_environment_picks_the_api(
    pem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_HOST", "ghe.example.com")
    post = FakePost()
    exchange(pem, post, host=None)
    assert post.calls[0][0] == (
        f"https://ghe.example.com/api/v3/app/installations/{INSTALLATION}/access_tokens"
    )
    monkeypatch.delenv("GH_HOST")
    exchange(pem, post, host=None)
    assert post.calls[1][0].startswith("https://api.github.com/app/installations/")


def test_an_already_expired_answer_fails(pem: str) -> None:
    post = FakePost(body={"token": TOKEN, "expires_at": "2026-01-02T03:04:05Z"})
    with pytest.raises(ForgeError, match="already expired") as caught:
        exchange(pem, post)
    assert TOKEN not in "".join(traceback.format_exception(caught.value))


@pytest.mark.parametrize(
    "body",
    [
        {"expires_at": FUTURE},
        {"token": "", "expires_at": FUTURE},
        {"token": TOKEN},
        {"token": TOKEN, "expires_at": "tomorrow"},
        {"token": TOKEN, "expires_at": "2026-01-02T04:04:05"},
        {"token": f"{TOKEN} extra", "expires_at": FUTURE},
        [TOKEN],
        "not json " + TOKEN,
        "\udcff",
    ],
)
def test_a_bad_answer_fails_without_quoting_the_token(pem: str, body: object) -> None:
    post = FakePost(body=body) if body != "\udcff" else _raw_post(201, b"\xff\xfe{")
    with pytest.raises(ForgeCliError) as caught:
        exchange(pem, post)
    assert TOKEN not in "".join(traceback.format_exception(caught.value))
    # A chained JSONDecodeError would carry the whole answer, token included, in its `doc`.
    assert caught.value.__context__ is None


def _raw_post(status: int, body: bytes) -> TokenPost:
    def post(url: str, headers: Mapping[str, str], timeout: float | None) -> tuple[int, bytes]:
        return status, body

    return post


def test_a_rejection_echoing_the_jwt_and_pem_is_redacted(pem: str) -> None:
    holder: dict[str, str] = {}

    def echo(url: str, headers: Mapping[str, str], timeout: float | None) -> tuple[int, bytes]:
        jwt = headers["Authorization"].removeprefix("Bearer ")
        holder["jwt"] = jwt
        body = json.dumps({"message": f"Bad credentials {jwt} for key {pem} and {TOKEN}"})
        return 401, body.encode()

    with pytest.raises(ForgeCliError) as caught:
        exchange(pem, echo)
    assert caught.value.status == 401
    text = "".join(traceback.format_exception(caught.value))
    assert leaks(text, holder["jwt"], pem, TOKEN) == []
    assert "[redacted]" in text
    assert "HTTP 401" in text


def test_a_transport_that_raises_quoting_the_jwt_is_redacted_and_not_chained(pem: str) -> None:
    def boom(url: str, headers: Mapping[str, str], timeout: float | None) -> tuple[int, bytes]:
        raise OSError(f"cannot send {headers['Authorization']} with {pem}")

    with pytest.raises(ForgeCliError) as caught:
        exchange(pem, boom)
    text = "".join(traceback.format_exception(caught.value))
    assert "eyJ" not in text
    assert "BEGIN" not in text
    assert "[redacted]" in text
    assert caught.value.__context__ is None
    assert caught.value.__cause__ is None


# -- the exchange over real sockets -----------------------------------------------------------


@dataclass
class TokenForge:
    """A tiny forge that decodes app JWTs only under `Bearer`, as GitHub does, and mints tokens."""

    public: rsa.RSAPublicKey
    answer: dict[str, Any] | None = None
    status: int = 201
    redirect_to: str | None = None
    hold: threading.Event | None = None
    received: threading.Event = field(default_factory=threading.Event)
    seen: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        scheme, _, jwt = auth.partition(" ")
        record: dict[str, Any] = {
            "method": request.method,
            "url": str(request.url),
            "scheme": scheme,
            "jwt": jwt,
            "user_agent": request.headers.get("User-Agent", ""),
            "body": await request.read(),
        }
        self.seen.append(record)
        self.received.set()
        if self.hold is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.hold.wait, 10)
        if self.redirect_to is not None:
            raise web.HTTPTemporaryRedirect(self.redirect_to)
        if request.method == "POST" and request.path == "/repos/acme/widgets/check-runs":
            posted = json.loads(record["body"])
            if scheme != "token" or jwt != TOKEN:
                return web.json_response({"message": "Bad credentials"}, status=401)
            return web.json_response(
                {**posted, "id": 77, "app": {"id": APP_ID}, "completed_at": FUTURE}, status=201
            )
        expected = f"/app/installations/{INSTALLATION}/access_tokens"
        if request.method != "POST" or request.path not in (expected, f"/api/v3{expected}"):
            return web.json_response({"message": "Not Found"}, status=404)
        try:
            if scheme != "Bearer":
                raise ValueError(scheme)
            _, claims = verify_jwt(jwt, self.public)
        except (InvalidSignature, ValueError):
            return web.json_response(
                {"message": f"A JSON web token could not be decoded: {jwt}"}, status=401
            )
        record["claims"] = claims
        if self.status >= 400:
            return web.json_response(
                {"message": f"Rejected {jwt}", "documentation_url": "x"}, status=self.status
            )
        answer = self.answer or {"token": TOKEN, "expires_at": FUTURE}
        return web.json_response(answer, status=self.status)


@contextmanager
def serving(state: TokenForge, ssl_context: ssl.SSLContext | None = None) -> Iterator[TokenForge]:
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, web.AppRunner] = {}

    async def boot() -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", state.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        holder["runner"] = runner
        server = site._server
        assert server is not None
        state.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(boot())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, name="token-forge", daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield state
    finally:
        if state.hold is not None:
            state.hold.set()
        asyncio.run_coroutine_threadsafe(holder["runner"].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.fixture
def forge(key: rsa.RSAPrivateKey, monkeypatch: pytest.MonkeyPatch) -> Iterator[TokenForge]:
    """The forge as gh reaches github.localhost: plain HTTP through HTTP_PROXY."""
    with serving(TokenForge(public=key.public_key())) as state:
        proxy = f"http://127.0.0.1:{state.port}"
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, proxy)
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("GH_HOST", "github.localhost")
        yield state


def over_sockets(pem: str, **kwargs: Any) -> InstallationToken:
    return app_installation_token(
        app_id=APP_ID, installation_id=INSTALLATION, private_key_pem=pem, now=NOW, **kwargs
    )


def test_the_exchange_over_a_socket_is_verified_by_the_server(forge: TokenForge, pem: str) -> None:
    environ_before = dict(os.environ)
    result = over_sockets(pem)
    assert result == InstallationToken(token=TOKEN, expires_at_ms=FUTURE_MS)
    [seen] = forge.seen
    assert (
        seen["url"] == f"http://api.github.localhost/app/installations/{INSTALLATION}/access_tokens"
    )
    assert seen["method"] == "POST"
    assert seen["scheme"] == "Bearer"
    assert seen["claims"] == {"iat": NOW - 60, "exp": NOW + 540, "iss": str(APP_ID)}
    assert seen["user_agent"].startswith("forge-automation")
    assert json.loads(seen["body"]) == {}
    assert dict(os.environ) == environ_before


@pytest.mark.gh
def test_gh_itself_cannot_make_this_exchange(forge: TokenForge, pem: str, tmp_path: Path) -> None:
    """Why the exchange is not a `gh api` call: gh sends GH_TOKEN as `token <JWT>`, not Bearer."""
    jwt = sent_jwt(pem)
    env = gh_env(forge.port, jwt, str(tmp_path))
    result = run_gh(
        ["api", "-i", "--method", "POST", f"/app/installations/{INSTALLATION}/access_tokens"],
        ExecOptions(env=env, timeout=30),
    )
    assert result.returncode != 0
    assert forge.seen[0]["scheme"] == "token"
    assert b"401" in result.stdout.split(b"\r\n", 1)[0]


@pytest.mark.parametrize("status", [401, 404, 422, 500])
def test_a_rejection_over_a_socket_is_redacted(forge: TokenForge, pem: str, status: int) -> None:
    forge.status = status
    with pytest.raises(ForgeCliError) as caught:
        over_sockets(pem)
    assert caught.value.status == status
    text = "".join(traceback.format_exception(caught.value))
    assert leaks(text, forge.seen[0]["jwt"], pem) == []
    assert "eyJ" not in text
    assert caught.value.__context__ is None


def test_an_expired_answer_over_a_socket_fails(forge: TokenForge, pem: str) -> None:
    forge.answer = {"token": TOKEN, "expires_at": "2020-01-01T00:00:00Z"}
    with pytest.raises(ForgeError, match="already expired") as caught:
        over_sockets(pem)
    assert TOKEN not in "".join(traceback.format_exception(caught.value))


def test_a_wrong_key_is_refused_by_the_server(forge: TokenForge) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other_pem = other.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with pytest.raises(ForgeCliError) as caught:
        over_sockets(other_pem)
    assert caught.value.status == 401
    assert "eyJ" not in str(caught.value)


def test_a_redirect_is_not_followed_so_the_jwt_goes_nowhere_else(
    forge: TokenForge, pem: str
) -> None:
    with serving(TokenForge(public=forge.public)) as elsewhere:
        forge.redirect_to = f"http://127.0.0.1:{elsewhere.port}/steal"
        with pytest.raises(ForgeCliError) as caught:
            over_sockets(pem)
        assert caught.value.status == 307
        assert len(forge.seen) == 1
        assert elsewhere.seen == []


def test_a_server_that_never_answers_times_out_with_a_clear_error(
    forge: TokenForge, pem: str
) -> None:
    forge.hold = threading.Event()
    try:
        with pytest.raises(ForgeCliError, match="could not reach") as caught:
            over_sockets(pem, timeout=0.5)
    finally:
        forge.hold.set()
    assert "eyJ" not in "".join(traceback.format_exception(caught.value))
    assert caught.value.__context__ is None


def test_a_closed_port_fails_with_a_clear_error(pem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(
        ForgeCliError, match=re.escape("could not reach http://api.github.localhost")
    ):
        over_sockets(pem, host="github.localhost")


# -- GitHub Enterprise Server over real TLS ---------------------------------------------------


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, written to a temp dir."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "forge test")])
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=3))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_forge(
    key: rsa.RSAPrivateKey, tls_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[TokenForge]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*tls_files)
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with serving(TokenForge(public=key.public_key()), context) as state:
        yield state


def test_an_enterprise_host_is_reached_over_verified_tls(
    tls_forge: TokenForge, tls_files: tuple[Path, Path], pem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_files[0]))
    result = over_sockets(pem, host=f"127.0.0.1:{tls_forge.port}")
    assert result.token == TOKEN
    [seen] = tls_forge.seen
    assert seen["url"].startswith("https://127.0.0.1:")
    assert seen["url"].endswith(f"/api/v3/app/installations/{INSTALLATION}/access_tokens")
    assert seen["scheme"] == "Bearer"


def test_an_untrusted_certificate_is_refused_before_the_jwt_is_sent(
    tls_forge: TokenForge, pem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-cas.pem"
    empty.write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(empty))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    with pytest.raises(
        ForgeCliError, match=re.escape("could not reach https://127.0.0.1")
    ) as caught:
        over_sockets(pem, host=f"127.0.0.1:{tls_forge.port}")
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    assert tls_forge.seen == []
    assert "eyJ" not in "".join(traceback.format_exception(caught.value))


# -- end to end: mint the token, then hand it to gh for one check-run post ---------------------


@pytest.mark.gh
def test_the_minted_token_reaches_gh_only_through_one_childs_environment(
    forge: TokenForge, pem: str, tmp_path: Path
) -> None:
    env = gh_env(forge.port, "gho_user_token_must_not_be_used_000000", str(tmp_path))
    observed: dict[str, bytes] = {}

    def watching(args: Sequence[str], options: ExecOptions) -> ExecResult:
        # The real gh, with the server holding the request so the child is alive while we look.
        forge.hold = threading.Event()
        forge.received.clear()
        body = tmp_path / "body.json"
        body.write_bytes(options.input or b"")
        with (
            body.open("rb") as stdin,
            subprocess.Popen(
                ["gh", *args],
                env={**os.environ, **env, **(options.env or {})},
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            ) as proc,
        ):
            assert forge.received.wait(20)
            observed["cmdline"] = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            observed["environ"] = Path(f"/proc/{proc.pid}/environ").read_bytes()
            forge.hold.set()
            out, err = proc.communicate(timeout=30)
        return ExecResult(returncode=proc.returncode, stdout=out, stderr=err)

    environ_before = dict(os.environ)

    def provider() -> str:
        return over_sockets(pem).token

    port = forge_port(gh_cli_wire(watching, app_token=provider))
    run = port.create_check_run(
        "acme/widgets",
        name="merge-gate",
        head_sha="a" * 40,
        conclusion="success",
        title="ok",
        summary="all green",
    )
    assert run.id == 77
    exchange_seen, post_seen = forge.seen
    assert exchange_seen["scheme"] == "Bearer"
    assert (post_seen["scheme"], post_seen["jwt"]) == ("token", TOKEN)
    assert TOKEN.encode() not in observed["cmdline"]
    assert b"eyJ" not in observed["cmdline"]
    assert observed["cmdline"].split(b"\0")[0] == b"gh"
    assert f"GH_TOKEN={TOKEN}".encode() in observed["environ"].split(b"\0")
    assert dict(os.environ) == environ_before
