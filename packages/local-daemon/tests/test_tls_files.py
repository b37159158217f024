"""TLS files: every refusal row, and a real TLS listener on 127.0.0.1 (handshake, reload, bind)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from gate_support import build_test_app, custom_pair, trustme_pair, write_pair
from local_daemon._errors import RemoteBindError, TlsFileError
from local_daemon._remote import RemoteListener, RemoteOptions, TlsFiles, open_remote_listener
from local_daemon._tls import check_tls_pair
from local_daemon._tokenfile import ensure_token_file

SPARE_UID = 65534
NOW = dt.datetime.now(dt.UTC)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _good(ca: trustme.CA, d: Path) -> TlsFiles:
    return trustme_pair(ca, d, "127.0.0.1", "box.test", "*.wild.test")


def _mismatched(ca: trustme.CA, d: Path) -> TlsFiles:
    one = trustme_pair(ca, d / "one", "box.test")
    two = trustme_pair(ca, d / "two", "box.test")
    return TlsFiles(cert_file=one.cert_file, key_file=two.key_file)


def _expired(ca: trustme.CA, d: Path) -> TlsFiles:
    return write_pair(
        d,
        *custom_pair(
            d,
            names=("box.test",),
            not_before=NOW - dt.timedelta(days=90),
            not_after=NOW - dt.timedelta(days=1),
        ),
    )


def _not_yet_valid(ca: trustme.CA, d: Path) -> TlsFiles:
    return write_pair(
        d,
        *custom_pair(
            d,
            names=("box.test",),
            not_before=NOW + dt.timedelta(days=1),
            not_after=NOW + dt.timedelta(days=90),
        ),
    )


def _wrong_name(ca: trustme.CA, d: Path) -> TlsFiles:
    return write_pair(d, *custom_pair(d, names=("other.test", "192.0.2.99")))


def _missing_cert(ca: trustme.CA, d: Path) -> TlsFiles:
    good = _good(ca, d)
    Path(good.cert_file).unlink()
    return good


def _missing_key(ca: trustme.CA, d: Path) -> TlsFiles:
    good = _good(ca, d)
    Path(good.key_file).unlink()
    return good


def _key_mode(mode: int) -> Callable[[trustme.CA, Path], TlsFiles]:
    def make(ca: trustme.CA, d: Path) -> TlsFiles:
        good = _good(ca, d)
        os.chmod(good.key_file, mode)
        return good

    return make


def _key_owner(ca: trustme.CA, d: Path) -> TlsFiles:
    good = _good(ca, d)
    os.chown(good.key_file, SPARE_UID, -1)
    return good


def _garbage_cert(ca: trustme.CA, d: Path) -> TlsFiles:
    good = _good(ca, d)
    Path(good.cert_file).write_bytes(b"not a certificate\n")
    return good


def _encrypted_key(ca: trustme.CA, d: Path) -> TlsFiles:
    good = _good(ca, d)
    key = serialization.load_pem_private_key(Path(good.key_file).read_bytes(), password=None)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw"),
    )
    return write_pair(d, Path(good.cert_file).read_bytes(), pem, "enc")


def _directory_cert(ca: trustme.CA, d: Path) -> TlsFiles:
    good = _good(ca, d)
    Path(good.cert_file).unlink()
    Path(good.cert_file).mkdir()
    return good


REFUSALS: list[tuple[str, Callable[[trustme.CA, Path], TlsFiles], tuple[str, ...], str]] = [
    ("missing certificate", _missing_cert, (), "missing"),
    ("missing key", _missing_key, (), "missing"),
    ("certificate is a directory", _directory_cert, (), "not_regular"),
    ("key readable by group", _key_mode(0o640), (), "key_mode"),
    ("key readable by others", _key_mode(0o604), (), "key_mode"),
    ("key owned by another user", _key_owner, (), "key_owner"),
    ("key does not match", _mismatched, (), "mismatch"),
    ("expired", _expired, (), "expired"),
    ("not yet valid", _not_yet_valid, (), "not_yet_valid"),
    ("name not covered", _wrong_name, ("box.test",), "name"),
    ("one of two names not covered", _good, ("box.test", "nope.test"), "name"),
    ("wildcard is one label only", _good, ("a.b.wild.test",), "name"),
    ("wildcard does not cover the apex", _good, ("wild.test",), "name"),
    ("ip not covered", _good, ("192.0.2.10",), "name"),
    ("garbage certificate", _garbage_cert, (), "invalid"),
    ("encrypted key", _encrypted_key, (), "invalid"),
]


@pytest.mark.parametrize(
    ("make", "names", "problem"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_refusal_rows(
    ca: trustme.CA,
    tmp_path: Path,
    make: Callable[[trustme.CA, Path], TlsFiles],
    names: tuple[str, ...],
    problem: str,
) -> None:
    tls = make(ca, tmp_path)
    with pytest.raises(TlsFileError) as info:
        check_tls_pair(tls.cert_file, tls.key_file, names=names)
    assert info.value.problem == problem


@pytest.mark.parametrize(
    "names",
    [
        (),
        ("box.test",),
        ("BOX.test.",),
        ("x.wild.test",),
        ("127.0.0.1",),
        ("box.test", "y.wild.test"),
    ],
)
def test_good_pairs(ca: trustme.CA, tmp_path: Path, names: tuple[str, ...]) -> None:
    tls = _good(ca, tmp_path)
    pair = check_tls_pair(tls.cert_file, tls.key_file, names=names)
    assert pair.not_after > NOW


def test_symlinked_files_are_followed(ca: trustme.CA, tmp_path: Path) -> None:
    # certbot's live/ names are symlinks into archive/.
    tls = _good(ca, tmp_path / "archive")
    live = tmp_path / "live"
    live.mkdir()
    (live / "cert.pem").symlink_to(tls.cert_file)
    (live / "key.pem").symlink_to(tls.key_file)
    check_tls_pair(live / "cert.pem", live / "key.pem", names=("box.test",))


def test_no_key_material_in_errors(ca: trustme.CA, tmp_path: Path) -> None:
    tls = _mismatched(ca, tmp_path)
    key_text = Path(tls.key_file).read_text()
    with pytest.raises(TlsFileError) as info:
        check_tls_pair(tls.cert_file, tls.key_file)
    body = key_text.splitlines()[1]
    assert body not in str(info.value)
    assert info.value.__context__ is None or body not in str(info.value.__context__)


# --- a real TLS listener on 127.0.0.1 (the address refusal is check_remote_options' job) ----------


@pytest.fixture
async def listener(ca: trustme.CA, tmp_path: Path) -> RemoteListener:
    tls = _good(ca, tmp_path / "tls")
    remote = RemoteOptions(
        host="127.0.0.1",
        token_file=ensure_token_file(tmp_path / "token"),
        tls=tls,
        tls_reload=3600.0,
    )
    return await open_remote_listener(remote=remote, port=0, build_app=build_test_app)


async def _handshake_serial(port: int, ctx: ssl.SSLContext) -> int:
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=ctx, server_hostname="box.test"
    )
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True)
        return x509.load_der_x509_certificate(der).serial_number
    finally:
        writer.close()
        await writer.wait_closed()


async def test_plain_http_gets_no_http_reply(listener: RemoteListener) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(4096), 10)
        writer.close()
        await writer.wait_closed()
        assert not reply.startswith(b"HTTP/")
    finally:
        await listener.close()


async def test_reload_keeps_the_last_good_pair_on_a_bad_change(
    listener: RemoteListener, ca: trustme.CA, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
    try:
        first = await _handshake_serial(listener.port, ctx)
        assert listener.reload_tls() is False  # nothing changed
        tls = listener._remote.tls
        key_before = Path(tls.key_file).read_bytes()
        # Half a renewal: a new certificate beside the old key.
        fresh = trustme_pair(ca, tmp_path / "fresh", "127.0.0.1", "box.test", "*.wild.test")
        os.replace(fresh.cert_file, tls.cert_file)
        with caplog.at_level(logging.ERROR, logger="local_daemon"):
            assert listener.reload_tls() is False
            assert listener.reload_tls() is False
        assert [r.getMessage().count("does not match") for r in caplog.records] == [1]
        assert key_before.decode().splitlines()[1] not in caplog.text
        assert await _handshake_serial(listener.port, ctx) == first
        # The key arrives: the next tick loads the pair.
        os.replace(fresh.key_file, tls.key_file)
        assert listener.reload_tls() is True
        second = await _handshake_serial(listener.port, ctx)
        assert second != first
    finally:
        await listener.close()


async def test_reload_task_runs_every_tick(ca: trustme.CA, tmp_path: Path) -> None:
    tls = _good(ca, tmp_path / "tls")
    remote = RemoteOptions(
        host="127.0.0.1", token_file=ensure_token_file(tmp_path / "token"), tls=tls, tls_reload=0.02
    )
    listener = await open_remote_listener(remote=remote, port=0, build_app=build_test_app)
    ctx = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
    try:
        first = await _handshake_serial(listener.port, ctx)
        fresh = trustme_pair(ca, tmp_path / "fresh", "127.0.0.1", "box.test")
        os.replace(fresh.key_file, tls.key_file)
        os.replace(fresh.cert_file, tls.cert_file)
        serial = first
        for _ in range(500):
            serial = await _handshake_serial(listener.port, ctx)
            if serial != first:
                break
            await asyncio.sleep(0.02)
        assert serial != first
    finally:
        await listener.close()


async def test_port_in_use_is_a_remote_bind_error(ca: trustme.CA, tmp_path: Path) -> None:
    tls = _good(ca, tmp_path / "tls")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        remote = RemoteOptions(
            host="127.0.0.1", token_file=ensure_token_file(tmp_path / "token"), tls=tls
        )
        with pytest.raises(RemoteBindError) as info:
            await open_remote_listener(remote=remote, port=port, build_app=build_test_app)
        assert "in use" in str(info.value)


async def test_bad_files_refuse_before_binding(ca: trustme.CA, tmp_path: Path) -> None:
    tls = _expired(ca, tmp_path / "tls")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    remote = RemoteOptions(
        host="127.0.0.1", token_file=ensure_token_file(tmp_path / "token"), tls=tls
    )
    built: list[object] = []

    def build(*args: object) -> object:
        built.append(args)
        raise AssertionError("must not build")

    with pytest.raises(TlsFileError):
        await open_remote_listener(remote=remote, port=port, build_app=build)  # type: ignore[arg-type]
    assert built == []
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))  # still free: nothing bound it


# --- TLS 1.2 suites: AEAD only (Mozilla intermediate) ------------------------------------------

_CBC_ONLY = (
    "ECDHE-ECDSA-AES128-SHA256:ECDHE-RSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384:"
    "ECDHE-RSA-AES256-SHA384:ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:"
    "DHE-RSA-AES128-SHA256:DHE-RSA-AES256-SHA256:AES128-SHA256:AES256-SHA256:AES128-SHA"
)


def _tls12_client(ca: trustme.CA, ciphers: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(f"{ciphers}:@SECLEVEL=0")
    return ctx


async def _negotiated(port: int, ctx: ssl.SSLContext) -> tuple[str, str]:
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=ctx, server_hostname="box.test"
    )
    try:
        name, version, _bits = writer.get_extra_info("cipher")
        return name, version
    finally:
        writer.close()
        await writer.wait_closed()


async def test_tls12_offers_aead_suites_only(listener: RemoteListener, ca: trustme.CA) -> None:
    try:
        tls12 = [c for c in listener.ssl_context.get_ciphers() if c["protocol"] == "TLSv1.2"]
        assert tls12
        assert all(c["aead"] for c in tls12), [c["name"] for c in tls12 if not c["aead"]]
        # A client that offers CBC suites only gets no handshake at all (an alert, then the close).
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            await _negotiated(listener.port, _tls12_client(ca, _CBC_ONLY))
        # The same probe with the AEAD suites gets through (the probe itself works) ...
        aead = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
        name, version = await _negotiated(listener.port, _tls12_client(ca, f"{_CBC_ONLY}:{aead}"))
        assert (version, "GCM" in name) == ("TLSv1.2", True)
        # ... and a default client still gets TLS 1.3.
        default = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
        assert (await _negotiated(listener.port, default))[1] == "TLSv1.3"
    finally:
        await listener.close()


def test_openssl_s_client_with_cbc_suites_is_refused(ca: trustme.CA, tmp_path: Path) -> None:
    # The other side's own tool: OpenSSL's s_client offering TLS 1.2 CBC suites only.
    import re
    import subprocess
    import threading

    from local_daemon._tls import new_server_context

    tls = _good(ca, tmp_path / "tls")
    ctx = new_server_context(check_tls_pair(tls.cert_file, tls.key_file))
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        server.settimeout(30)
        port = server.getsockname()[1]
        outcomes: list[str] = []

        def accept(count: int) -> None:
            for _ in range(count):
                conn, _ = server.accept()
                try:
                    with ctx.wrap_socket(conn, server_side=True) as tls_conn:
                        outcomes.append(str(tls_conn.cipher()))
                except (ssl.SSLError, OSError) as exc:
                    outcomes.append(type(exc).__name__)
                finally:
                    conn.close()

        thread = threading.Thread(target=accept, args=(2,), daemon=True)
        thread.start()
        results = []
        for ciphers in (_CBC_ONLY, "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"):
            proc = subprocess.run(
                ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-tls1_2",
                 "-cipher", ciphers, "-servername", "box.test"],
                input=b"", capture_output=True, timeout=30, check=False,
            )  # fmt: skip
            results.append((proc.returncode, proc.stdout.decode(errors="replace")))
        thread.join(30)
    (cbc_rc, cbc_out), (_gcm_rc, gcm_out) = results
    assert cbc_rc != 0
    assert "Cipher is (NONE)" in cbc_out
    # The same s_client line with AEAD suites does negotiate (s_client itself exits 1 there
    # because the probe server hangs up right after the handshake).
    assert re.search(r"Cipher is ECDHE-(ECDSA|RSA)-AES256-GCM-SHA384", gcm_out), gcm_out[-1000:]
    assert outcomes[0] == "SSLError"
    assert "GCM" in outcomes[1]
