"""app_installation_token: RS256 JWT claims, key refusal, exchange through a fake seam and real gh.

The real-gh tests run `gh` against a tiny aiohttp forge on 127.0.0.1 (GH_HOST=github.localhost,
HTTP_PROXY) that verifies the JWT's signature with the public key before answering a token, and
read the child's /proc/<pid>/cmdline while the server holds the request open.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from forge_automation._app_token import InstallationToken, app_installation_token, app_jwt
from forge_automation._errors import ForgeCliError, ForgeError, ForgeInputError
from forge_automation._exec import ExecOptions, ExecResult
from forge_automation._wire import run_gh
from forge_support import gh_env

NOW = 1_767_323_045  # 2026-01-02T03:04:05Z
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
    jwt = app_jwt(app_id=APP_ID, private_key_pem=pem, now=NOW + 0.9)
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
    jwt = app_jwt(app_id="42", private_key_pem=pkcs8, now=NOW)
    assert verify_jwt(jwt, key.public_key())[1]["iss"] == "42"


def test_a_tampered_jwt_fails_verification(key: rsa.RSAPrivateKey, pem: str) -> None:
    jwt = app_jwt(app_id=APP_ID, private_key_pem=pem, now=NOW)
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
def test_a_malformed_key_fails_before_gh_runs(bad: str) -> None:
    calls: list[Sequence[str]] = []

    def exec(args: Sequence[str], options: ExecOptions) -> ExecResult:
        calls.append(args)
        raise AssertionError("gh must not run")

    with pytest.raises(ForgeInputError) as caught:
        app_installation_token(
            app_id=APP_ID, installation_id=INSTALLATION, private_key_pem=bad, now=NOW, exec=exec
        )
    assert caught.value.field == "private_key_pem"
    assert calls == []
    text = "".join(traceback.format_exception(caught.value))
    assert not leaks(text, bad) or bad in ("", "not a key")
    assert caught.value.__suppress_context__ or caught.value.__context__ is None


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
    ],
)
def test_bad_ids_and_clock_are_refused(pem: str, kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {
        "app_id": APP_ID,
        "installation_id": INSTALLATION,
        "private_key_pem": pem,
        "now": NOW,
        "exec": lambda a, o: pytest.fail("gh must not run"),
        **kwargs,
    }
    with pytest.raises(ForgeInputError) as caught:
        app_installation_token(**args)  # type: ignore[arg-type]
    assert caught.value.field == field


# -- the exchange through a recording fake seam -----------------------------------------------


@dataclass
class FakeGh:
    """A GhExec that records argv and env and answers like `gh api -i`."""

    status: int = 201
    body: object = field(default_factory=lambda: {"token": TOKEN, "expires_at": FUTURE})
    returncode: int = 0
    stderr: bytes = b""
    calls: list[tuple[list[str], dict[str, str]]] = field(default_factory=list)

    def __call__(self, args: Sequence[str], options: ExecOptions) -> ExecResult:
        self.calls.append((list(args), dict(options.env or {})))
        text = self.body if isinstance(self.body, str) else json.dumps(self.body)
        out = f"HTTP/2.0 {self.status} X\r\nContent-Type: application/json\r\n\r\n{text}"
        return ExecResult(returncode=self.returncode, stdout=out.encode(), stderr=self.stderr)


def exchange(pem: str, fake: object) -> InstallationToken:
    return app_installation_token(
        app_id=APP_ID,
        installation_id=INSTALLATION,
        private_key_pem=pem,
        now=NOW,
        exec=fake,  # type: ignore[arg-type]
    )


def test_exchange_posts_the_jwt_in_env_only(key: rsa.RSAPrivateKey, pem: str) -> None:
    environ_before = dict(os.environ)
    fake = FakeGh()
    result = exchange(pem, fake)
    assert result == InstallationToken(token=TOKEN, expires_at_ms=FUTURE_MS)
    assert TOKEN not in repr(result)
    [(args, env)] = fake.calls
    assert args[:5] == [
        "api",
        "-i",
        "--method",
        "POST",
        f"/app/installations/{INSTALLATION}/access_tokens",
    ]
    jwt = env["GH_TOKEN"]
    assert verify_jwt(jwt, key.public_key())[1]["iss"] == str(APP_ID)
    assert not any(jwt in arg or "BEGIN" in arg for arg in args)
    assert dict(os.environ) == environ_before
    assert "GH_TOKEN" not in os.environ or os.environ["GH_TOKEN"] != jwt


def test_an_already_expired_answer_fails(pem: str) -> None:
    fake = FakeGh(body={"token": TOKEN, "expires_at": "2026-01-02T03:04:05Z"})
    with pytest.raises(ForgeError, match="already expired") as caught:
        exchange(pem, fake)
    assert TOKEN not in "".join(traceback.format_exception(caught.value))


@pytest.mark.parametrize(
    "body",
    [
        {"expires_at": FUTURE},
        {"token": "", "expires_at": FUTURE},
        {"token": TOKEN},
        {"token": TOKEN, "expires_at": "tomorrow"},
        {"token": TOKEN, "expires_at": "2026-01-02T04:04:05"},
        [TOKEN],
        "not json " + TOKEN,
    ],
)
def test_a_bad_answer_fails_without_quoting_the_token(pem: str, body: object) -> None:
    with pytest.raises(ForgeCliError) as caught:
        exchange(pem, FakeGh(body=body))
    assert TOKEN not in "".join(traceback.format_exception(caught.value))


def test_a_rejection_echoing_the_jwt_and_pem_is_redacted(pem: str) -> None:
    holder: dict[str, str] = {}

    def echo(args: Sequence[str], options: ExecOptions) -> ExecResult:
        jwt = (options.env or {})["GH_TOKEN"]
        holder["jwt"] = jwt
        body = json.dumps({"message": f"Bad credentials {jwt} for key {pem} and {TOKEN}"})
        return ExecResult(
            returncode=1,
            stdout=f"HTTP/2.0 401 Unauthorized\r\n\r\n{body}".encode(),
            stderr=f"gh: Bad credentials {jwt} (HTTP 401)\n".encode(),
        )

    with pytest.raises(ForgeCliError) as caught:
        exchange(pem, echo)
    assert caught.value.status == 401
    text = "".join(traceback.format_exception(caught.value))
    assert leaks(text, holder["jwt"], pem, TOKEN) == []
    assert "[redacted]" in text


@pytest.mark.parametrize("cut", [5, 30, 200])
def test_a_jwt_split_across_stdout_and_stderr_is_cut_from_both(pem: str, cut: int) -> None:
    holder: dict[str, str] = {}

    def split(args: Sequence[str], options: ExecOptions) -> ExecResult:
        jwt = (options.env or {})["GH_TOKEN"]
        holder["jwt"] = jwt
        return ExecResult(
            returncode=1,
            stdout=f"echo {jwt[:cut]}".encode(),
            stderr=f"{jwt[cut:]} rest\n".encode(),
        )

    with pytest.raises(ForgeCliError) as caught:
        exchange(pem, split)
    message = str(caught.value)
    jwt = holder["jwt"]
    assert jwt[:cut] not in message
    assert jwt[cut:] not in message
    assert "echo" in message
    assert "rest" in message


def test_an_exec_that_raises_quoting_the_jwt_is_redacted(pem: str) -> None:
    def boom(args: Sequence[str], options: ExecOptions) -> ExecResult:
        raise RuntimeError(f"cannot run with {(options.env or {})['GH_TOKEN']}")

    with pytest.raises(ForgeCliError) as caught:
        exchange(pem, boom)
    text = "".join(traceback.format_exception(caught.value))
    assert "eyJ" not in text
    assert "[redacted]" in text


# -- the exchange through the real gh against a local forge ------------------------------------


@dataclass
class TokenForge:
    """A tiny forge that verifies app JWTs and mints installation tokens."""

    public: rsa.RSAPublicKey
    answer: dict[str, Any] | None = None
    status: int = 201
    hold: threading.Event | None = None
    received: threading.Event = field(default_factory=threading.Event)
    seen: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    async def handle(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        scheme, _, jwt = auth.partition(" ")
        record: dict[str, Any] = {
            "method": request.method,
            "url": str(request.url),
            "scheme": scheme,
            "jwt": jwt,
        }
        self.seen.append(record)
        self.received.set()
        if self.hold is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.hold.wait, 10)
        expected = f"/app/installations/{INSTALLATION}/access_tokens"
        if request.method != "POST" or request.path != expected:
            return web.json_response({"message": "Not Found"}, status=404)
        try:
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


@pytest.fixture
def forge(key: rsa.RSAPrivateKey) -> Iterator[TokenForge]:
    state = TokenForge(public=key.public_key())
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, web.AppRunner] = {}

    async def boot() -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", state.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
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
def gh_config() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="gh-config-") as path:
        yield path


def real_gh(forge: TokenForge, config: str) -> Any:
    env = gh_env(forge.port, "gho_user_token_must_not_be_used_000000", config)

    def exec(args: Sequence[str], options: ExecOptions) -> ExecResult:
        return run_gh(args, ExecOptions(env={**env, **(options.env or {})}, timeout=30))

    return exec


def test_real_gh_exchange_verified_by_the_server(
    forge: TokenForge, gh_config: str, pem: str
) -> None:
    environ_before = dict(os.environ)
    result = app_installation_token(
        app_id=APP_ID,
        installation_id=INSTALLATION,
        private_key_pem=pem,
        now=NOW,
        exec=real_gh(forge, gh_config),
    )
    assert result == InstallationToken(token=TOKEN, expires_at_ms=FUTURE_MS)
    [seen] = forge.seen
    assert (
        seen["url"] == f"http://api.github.localhost/app/installations/{INSTALLATION}/access_tokens"
    )
    assert seen["claims"] == {"iat": NOW - 60, "exp": NOW + 540, "iss": str(APP_ID)}
    assert seen["scheme"].lower() in ("token", "bearer")
    assert dict(os.environ) == environ_before


def test_real_gh_child_has_the_jwt_in_env_and_not_in_cmdline(
    forge: TokenForge, gh_config: str, pem: str
) -> None:
    forge.hold = threading.Event()
    env = gh_env(forge.port, "gho_user_token_must_not_be_used_000000", gh_config)
    observed: dict[str, bytes] = {}

    def watching(args: Sequence[str], options: ExecOptions) -> ExecResult:
        child_env = {**os.environ, **env, **(options.env or {})}
        with subprocess.Popen(
            ["gh", *args],
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            # The server holds the request open, so the child is alive while we look at it.
            assert forge.received.wait(20)
            with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
                observed["cmdline"] = f.read()
            with open(f"/proc/{proc.pid}/environ", "rb") as f:
                observed["environ"] = f.read()
            assert forge.hold is not None
            forge.hold.set()
            out, err = proc.communicate(timeout=30)
        return ExecResult(returncode=proc.returncode, stdout=out, stderr=err)

    result = app_installation_token(
        app_id=APP_ID, installation_id=INSTALLATION, private_key_pem=pem, now=NOW, exec=watching
    )
    assert result.token == TOKEN
    jwt = forge.seen[0]["jwt"]
    assert jwt.encode() not in observed["cmdline"]
    assert b"BEGIN" not in observed["cmdline"]
    assert observed["cmdline"].split(b"\0")[0].endswith(b"gh")
    assert f"GH_TOKEN={jwt}".encode() in observed["environ"].split(b"\0")
    assert os.environ.get("GH_TOKEN") != jwt


@pytest.mark.parametrize("status", [401, 422])
def test_real_gh_rejection_is_redacted(
    forge: TokenForge, gh_config: str, pem: str, status: int
) -> None:
    forge.status = status
    with pytest.raises(ForgeCliError) as caught:
        app_installation_token(
            app_id=APP_ID,
            installation_id=INSTALLATION,
            private_key_pem=pem,
            now=NOW,
            exec=real_gh(forge, gh_config),
        )
    assert caught.value.status == status
    text = "".join(traceback.format_exception(caught.value))
    assert leaks(text, forge.seen[0]["jwt"], pem) == []
    assert "eyJ" not in text


def test_real_gh_expired_answer_fails(forge: TokenForge, gh_config: str, pem: str) -> None:
    forge.answer = {"token": TOKEN, "expires_at": "2020-01-01T00:00:00Z"}
    with pytest.raises(ForgeError, match="already expired") as caught:
        app_installation_token(
            app_id=APP_ID,
            installation_id=INSTALLATION,
            private_key_pem=pem,
            now=NOW,
            exec=real_gh(forge, gh_config),
        )
    assert TOKEN not in "".join(traceback.format_exception(caught.value))


def test_a_wrong_key_is_refused_by_the_server(forge: TokenForge, gh_config: str) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other_pem = other.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with pytest.raises(ForgeCliError) as caught:
        app_installation_token(
            app_id=APP_ID,
            installation_id=INSTALLATION,
            private_key_pem=other_pem,
            now=NOW,
            exec=real_gh(forge, gh_config),
        )
    assert caught.value.status == 401
    assert "eyJ" not in str(caught.value)
