"""Test helpers for the gate and the remote listener: token files, certificates, the daemon's app
behind a gate with a `whoami` command, served on loopback.

Run as a script (`python gate_support.py SCENARIO WORKDIR [PORT]`) it plays one side of a network
namespace test and prints its observations as one JSON line; the tests assert on them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import http.client
import json
import logging
import os
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from local_daemon import (
    AuthRecord,
    DaemonAuth,
    Registry,
    RemoteOptions,
    TlsFiles,
    build_http_app,
    ensure_token_file,
    mint_login_code,
    rotate_token_file,
    start_daemon,
)
from netns_support import ADDR

__all__ = [
    "NS_CLIENT_ADDR",
    "NS_SERVER_ADDR",
    "Client",
    "LogLines",
    "RemoteSetup",
    "auth_record",
    "build_test_app",
    "capture_logs",
    "client_context",
    "custom_pair",
    "gate_client",
    "mount_home",
    "remote_setup",
    "secret_of",
    "trustme_pair",
    "whoami_headers",
    "whoami_registry",
    "write_pair",
]

NS_SERVER_ADDR = ADDR
NS_CLIENT_ADDR = "192.0.2.20"
Client = TestClient[web.Request, web.Application]
_JSON_POST = {"x-local-client": "t", "Content-Type": "application/json"}
# What a stock MCP client sends: no x-local-client.
_MCP_POST = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
_TOOLS_LIST = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}'


def secret_of(token_file: Path) -> str:
    """Return the secret text of a token file."""
    return token_file.read_text().strip()


def _write_private(path: Path, data: bytes) -> None:
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def write_pair(directory: Path, cert_pem: bytes, key_pem: bytes, stem: str = "tls") -> TlsFiles:
    """Write a certificate chain and key (0600) and return them as `TlsFiles`."""
    directory.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_file.write_bytes(cert_pem)
    _write_private(key_file, key_pem)
    return TlsFiles(cert_file=cert_file, key_file=key_file)


def trustme_pair(ca: trustme.CA, directory: Path, *names: str, stem: str = "tls") -> TlsFiles:
    """Issue a certificate for `names` from a trustme CA and write the pair."""
    leaf = ca.issue_cert(*names)
    chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
    return write_pair(directory, chain, leaf.private_key_pem.bytes(), stem)


def custom_pair(
    directory: Path,
    *,
    names: tuple[str, ...] = ("127.0.0.1",),
    not_before: dt.datetime | None = None,
    not_after: dt.datetime | None = None,
    stem: str = "custom",
) -> tuple[bytes, bytes]:
    """Build a self-signed certificate with `cryptography`: any names and any validity window."""
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    sans: list[x509.GeneralName] = []
    for name in names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before or now - dt.timedelta(days=1))
        .not_valid_after(not_after or now + dt.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def whoami_registry() -> Registry:
    """A registry whose `whoami` answers the caller's auth record and `echo(a)` its argument."""
    registry = Registry()

    @registry.command
    async def whoami(context: Any) -> Any:
        return context

    @registry.command
    async def echo(a: int) -> dict[str, int]:
        return {"a": a}

    return registry


def auth_record(surface: str, auth: AuthRecord | None) -> dict[str, Any] | None:
    """The context `whoami` answers: the gate's record of who is calling, or None without one."""
    if auth is None:
        return None
    return {
        "credential": auth.credential,
        "issued_at": auth.issued_at,
        "peer_local": auth.peer_local,
    }


async def _home(request: web.Request) -> web.Response:
    return web.Response(
        text="<!doctype html><title>home</title><p id='who'>home</p>", content_type="text/html"
    )


def mount_home(app: web.Application) -> None:
    """Mount a product page at `/` (what a signed-in browser lands on)."""
    app.router.add_get("/", _home)


def build_test_app(
    gate: DaemonAuth | None,
    hosts: frozenset[str] | None = None,
    origins: frozenset[str] | None = None,
) -> web.Application:
    """Build the daemon's own app (`build_http_app`) behind `gate`, with `whoami_registry()` and
    the home page; the loopback allowlist of the port each request came in on unless `hosts`
    and `origins` are given."""
    return build_http_app(
        registry=whoami_registry(),
        version="1",
        tool_prefix="t",
        create_context=auth_record,
        mount_routes=mount_home,
        gate=gate,
        allowed_hosts=hosts,
        allowed_origins=origins,
    )


def whoami_headers(cookie: str) -> dict[str, str]:
    """The headers of a `whoami` call (a JSON POST to `/rpc/whoami`) with a session cookie."""
    return {**_JSON_POST, "Cookie": f"local_session={cookie}"}


@asynccontextmanager
async def gate_client(gate: DaemonAuth | None) -> AsyncIterator[Client]:
    """Serve `build_test_app(gate)` on loopback and yield aiohttp's test client for it."""
    async with TestClient(TestServer(build_test_app(gate))) as client:
        yield client


# --- network namespace scenarios (run as a script inside the namespace) ---------------------------


class LogLines(logging.Handler):
    """Every record a logger emits, formatted (`lines`); `errors` is set by one at ERROR or above."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.errors = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        if record.levelno >= logging.ERROR:
            self.errors.set()

    def holds(self, *secrets: str) -> bool:
        """Tell whether any captured line holds one of `secrets`."""
        logged = "\n".join(self.lines)
        return any(secret in logged for secret in secrets)


@contextmanager
def capture_logs(name: str | None = None) -> Iterator[LogLines]:
    """Capture logger `name` (the root logger by default) at DEBUG for the length of a `with`."""
    lines = LogLines()
    logger = logging.getLogger(name)
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    try:
        yield lines
    finally:
        logger.removeHandler(lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteSetup:
    """A namespace scenario's remote listener: its token file, options and the test CA's PEM."""

    token_file: Path
    remote: RemoteOptions
    ca_pem: bytes


def remote_setup(
    workdir: Path, *names: str, allowed_hosts: tuple[str, ...] = (), **options: Any
) -> RemoteSetup:
    """Make `workdir/token` and a TLS pair for `NS_SERVER_ADDR` and `names` from a fresh trustme
    CA, and the `RemoteOptions` (`options` besides) of a remote listener on `NS_SERVER_ADDR`."""
    token_file = ensure_token_file(workdir / "token")
    ca = trustme.CA()
    remote = RemoteOptions(
        host=NS_SERVER_ADDR,
        token_file=token_file,
        allowed_hosts=allowed_hosts,
        tls=trustme_pair(ca, workdir, NS_SERVER_ADDR, *names),
        **options,
    )
    return RemoteSetup(token_file=token_file, remote=remote, ca_pem=ca.cert_pem.bytes())


def client_context(ca_pem: bytes) -> ssl.SSLContext:
    """Return a client TLS context trusting only the test CA `ca_pem`."""
    return ssl.create_default_context(cadata=ca_pem.decode("ascii"))


class _Conn:
    """One keep-alive HTTPS connection, driven from a worker thread."""

    def __init__(self, host: str, port: int, ctx: ssl.SSLContext, host_header: str) -> None:
        self.http = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
        self.host_header = host_header
        self.port = port

    def request(
        self,
        method: str,
        path: str,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> tuple[int, dict[str, str], str]:
        all_headers = {"Host": f"{self.host_header}:{self.port}", **(headers or {})}
        self.http.request(method, path, body=body, headers=all_headers)
        resp = self.http.getresponse()
        text = resp.read().decode("utf-8", "replace")
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, text

    def whoami(self, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        """Call `whoami` with `headers` added to a JSON POST's."""
        return self.request("POST", "/rpc/whoami", {**_JSON_POST, **(headers or {})}, b"{}")

    def peer_serial(self) -> int:
        sock = self.http.sock
        assert isinstance(sock, ssl.SSLSocket)
        der = sock.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    def close(self) -> None:
        self.http.close()


def _plain_http_reply(host: str, port: int) -> str:
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        data = b""
        try:
            while len(data) < 4096:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    return data[:5].decode("latin-1")


def _client_observations(host: str, port: int, ca_pem: bytes, token_file: Path) -> dict[str, Any]:
    """Talk to the remote listener as a client and record what it answers."""
    ctx = client_context(ca_pem)
    out: dict[str, Any] = {}
    secret = secret_of(token_file)
    out["plain_http_reply"] = _plain_http_reply(host, port)
    conn = _Conn(host, port, ctx, host)
    try:
        out["foreign_host"] = conn.whoami({"Host": f"evil.test:{port}"})[0]
        out["foreign_host_login"] = conn.request(
            "GET", "/auth/login", {"Host": f"evil.test:{port}"}
        )[0]
        out["localhost_host"] = conn.whoami({"Host": f"localhost:{port}"})[0]
        out["wrong_port_host"] = conn.whoami({"Host": f"{host}:{port + 1}"})[0]
        out["no_credential"] = conn.whoami()[0]
        out["no_credential_mcp"] = conn.request(
            "POST", "/mcp", {**_MCP_POST, **_JSON_POST}, _TOOLS_LIST
        )[0]
        status, _, text = conn.whoami({"Authorization": f"Bearer {secret}"})
        out["bearer"] = [status, json.loads(text)["data"]]
        out["bearer_mcp"] = conn.request(
            "POST", "/mcp", {**_MCP_POST, "Authorization": f"Bearer {secret}"}, _TOOLS_LIST
        )[0]
        code = mint_login_code(token_file)
        out["login_page"] = conn.request("GET", f"/auth/login?code={code}")[0]
        origin = {"Origin": f"https://{host}:{port}", "Content-Type": "application/json"}
        out["http_origin_login"] = conn.request(
            "POST",
            "/auth/login",
            {**origin, "Origin": f"http://{host}:{port}"},
            json.dumps({"code": code}).encode(),
        )[0]
        status, headers, _ = conn.request(
            "POST", "/auth/login", origin, json.dumps({"code": code}).encode()
        )
        out["login_post"] = status
        cookie = headers.get("set-cookie", "")
        out["cookie_attributes"] = cookie.split(";", 1)[1].strip() if ";" in cookie else ""
        cookie_pair = cookie.split(";", 1)[0]
        out["login_again"] = conn.request(
            "POST", "/auth/login", origin, json.dumps({"code": code}).encode()
        )[0]
        status, _, text = conn.whoami({"Cookie": cookie_pair})
        out["cookie"] = [status, json.loads(text)["data"]]
        out["cookie_mcp"] = conn.request(
            "POST", "/mcp", {**_MCP_POST, "Cookie": cookie_pair}, _TOOLS_LIST
        )[0]
        out["leaked"] = secret in json.dumps(out)
    finally:
        conn.close()
    out["cookie_pair"] = cookie_pair
    return out


async def _serve(
    workdir: Path,
    port: int,
    ready: Callable[[int], Awaitable[None]],
    extra: Callable[[int, TlsFiles, dict[str, Any]], Awaitable[None]] | None = None,
) -> dict[str, Any]:
    setup = remote_setup(workdir, "box.test", allowed_hosts=("box.test",), tls_reload=0.05)
    (workdir / "ca.pem").write_bytes(setup.ca_pem)
    out: dict[str, Any] = {}
    with capture_logs("local_daemon") as records:
        handle = await start_daemon(
            registry=whoami_registry(),
            version="1",
            state_dir=workdir / "state",
            port=port,
            tool_prefix="t",
            create_context=auth_record,
            remote=setup.remote,
        )
        try:
            await ready(handle.port)
            if extra is not None:
                await extra(handle.port, setup.remote.tls, out)
        finally:
            await handle.close()
    out["log_leaked"] = records.holds(secret_of(setup.token_file))
    return out


async def _scenario_local(workdir: Path) -> dict[str, Any]:
    """Server and client in one namespace: 192.0.2.10 is on lo, so the peer is this machine."""
    ca_pem_path = workdir / "ca.pem"
    token_file = workdir / "token"

    async def ready(port: int) -> None:
        pass

    async def extra(port: int, tls: TlsFiles, out: dict[str, Any]) -> None:
        ca_pem = ca_pem_path.read_bytes()
        out.update(
            await asyncio.to_thread(_client_observations, NS_SERVER_ADDR, port, ca_pem, token_file)
        )
        ctx = client_context(ca_pem)
        # The allowed name is served too (SNI and Host both box.test), through the same address.
        box = _Conn(NS_SERVER_ADDR, port, ctx, "box.test")
        try:
            out["box_host"] = (
                await asyncio.to_thread(
                    box.whoami,
                    {"Authorization": f"Bearer {secret_of(token_file)}"},
                )
            )[0]
        finally:
            box.close()

        # Hot reload: an old connection lives on its pair while a new handshake sees the new one.
        old = _Conn(NS_SERVER_ADDR, port, ctx, NS_SERVER_ADDR)
        bearer = {"Authorization": f"Bearer {secret_of(token_file)}"}
        try:
            out["old_first"] = (await asyncio.to_thread(old.whoami, bearer))[0]
            old_serial = old.peer_serial()
            # The renewed pair comes from another CA, which new client contexts trust as well.
            ca2 = trustme.CA()
            new_pair = trustme_pair(ca2, workdir / "new", NS_SERVER_ADDR, "box.test")
            both = client_context(ca_pem)
            both.load_verify_locations(cadata=ca2.cert_pem.bytes().decode("ascii"))
            os.replace(new_pair.key_file, tls.key_file)
            os.replace(new_pair.cert_file, tls.cert_file)
            new_serial = old_serial
            for _ in range(200):
                probe = _Conn(NS_SERVER_ADDR, port, both, NS_SERVER_ADDR)
                try:
                    await asyncio.to_thread(probe.whoami, bearer)
                    new_serial = probe.peer_serial()
                finally:
                    probe.close()
                if new_serial != old_serial:
                    break
                await asyncio.sleep(0.05)
            out["new_handshake_new_cert"] = new_serial != old_serial
            out["old_after_reload"] = (await asyncio.to_thread(old.whoami, bearer))[0]
            out["old_still_old_cert"] = old.peer_serial() == old_serial
        finally:
            old.close()

        # A bad change (an expired pair) is logged and the last good pair keeps serving.
        cert_pem, key_pem = custom_pair(
            workdir,
            names=(NS_SERVER_ADDR,),
            not_before=dt.datetime.now(dt.UTC) - dt.timedelta(days=60),
            not_after=dt.datetime.now(dt.UTC) - dt.timedelta(days=1),
        )
        records = next(
            h for h in logging.getLogger("local_daemon").handlers if isinstance(h, LogLines)
        )
        records.errors.clear()
        Path(tls.cert_file).write_bytes(cert_pem)
        _write_private(Path(tls.key_file), key_pem)
        await asyncio.wait_for(records.errors.wait(), 10)
        out["bad_change_logged"] = any("expired" in line for line in records.lines)
        probe = _Conn(NS_SERVER_ADDR, port, both, NS_SERVER_ADDR)
        try:
            out["after_bad_change"] = (await asyncio.to_thread(probe.whoami, bearer))[0]
            out["after_bad_change_serial_kept"] = probe.peer_serial() == new_serial
        finally:
            probe.close()

        # Rotation voids the session and the old bearer; the new bearer works.
        cookie_pair = out.pop("cookie_pair")
        rotate_token_file(token_file)
        conn = _Conn(NS_SERVER_ADDR, port, both, NS_SERVER_ADDR)
        try:
            out["cookie_after_rotation"] = (
                await asyncio.to_thread(conn.whoami, {"Cookie": cookie_pair})
            )[0]
            out["old_bearer_after_rotation"] = (await asyncio.to_thread(conn.whoami, bearer))[0]
            out["new_bearer_after_rotation"] = (
                await asyncio.to_thread(
                    conn.whoami,
                    {"Authorization": f"Bearer {secret_of(token_file)}"},
                )
            )[0]
            # A token file that goes bad answers 503 until it is fixed.
            os.chmod(token_file, 0o644)
            out["bad_token_file"] = (await asyncio.to_thread(conn.whoami))[0]
            os.chmod(token_file, 0o600)
            out["fixed_token_file"] = (await asyncio.to_thread(conn.whoami))[0]
        finally:
            conn.close()

    return await _serve(workdir, 0, ready, extra)


async def _scenario_serve(workdir: Path) -> dict[str, Any]:
    """Serve on 192.0.2.10 until stdin closes; print the port first."""

    async def ready(port: int) -> None:
        print(json.dumps({"port": port}), flush=True)
        await asyncio.to_thread(sys.stdin.read)

    return await _serve(workdir, 0, ready)


def _scenario_client(workdir: Path, port: int) -> dict[str, Any]:
    """Run the client side from the other namespace."""
    return _client_observations(
        NS_SERVER_ADDR, port, (workdir / "ca.pem").read_bytes(), workdir / "token"
    )


def main(argv: list[str]) -> int:
    """Run one namespace scenario and print its observations as JSON."""
    scenario, workdir = argv[0], Path(argv[1])
    if scenario == "local":
        out = asyncio.run(_scenario_local(workdir))
    elif scenario == "serve":
        out = asyncio.run(_scenario_serve(workdir))
    elif scenario == "client":
        out = _scenario_client(workdir, int(argv[2]))
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
