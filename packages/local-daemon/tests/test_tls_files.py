"""TLS files: every refusal row, and the real remote listener on 192.0.2.10 inside a namespace
this test makes (handshake, reload, bind), all through `start_daemon(remote=...)`."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from gate_support import custom_pair, trustme_pair, write_pair
from local_daemon import (
    DaemonHandle,
    Registry,
    RemoteBindError,
    RemoteOptions,
    TlsFileError,
    TlsFiles,
    ensure_token_file,
    start_daemon,
)

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


async def _start(
    address: str,
    tmp_path: Path,
    tls: TlsFiles,
    *,
    names: tuple[str, ...] = (),
    port: int = 0,
    reload: float = 3600.0,
) -> DaemonHandle:
    """Start a daemon whose remote listener on `address` serves `tls` for the `names`."""
    remote = RemoteOptions(
        host=address,
        token_file=ensure_token_file(tmp_path / "token"),
        tls=tls,
        allowed_hosts=names,
        tls_reload=reload,
    )
    return await start_daemon(
        registry=Registry(), version="1", state_dir=tmp_path / "state", port=port, remote=remote
    )


@pytest.mark.parametrize(
    ("make", "names", "problem"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
async def test_refusal_rows(
    netns: str,
    ca: trustme.CA,
    tmp_path: Path,
    make: Callable[[trustme.CA, Path], TlsFiles],
    names: tuple[str, ...],
    problem: str,
) -> None:
    tls = make(ca, tmp_path / "tls")
    with pytest.raises(TlsFileError) as info:
        await _start(netns, tmp_path, tls, names=names)
    assert info.value.problem == problem
    assert not (tmp_path / "state").exists()  # refused before the state dir was locked


async def _served_certificate(address: str, port: int, ctx: ssl.SSLContext) -> x509.Certificate:
    _, writer = await asyncio.open_connection(address, port, ssl=ctx, server_hostname="box.test")
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return x509.load_der_x509_certificate(der)
    finally:
        writer.close()
        await writer.wait_closed()


async def _handshake_serial(address: str, port: int, ctx: ssl.SSLContext) -> int:
    return (await _served_certificate(address, port, ctx)).serial_number


def _trusting(ca: trustme.CA) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())


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
async def test_good_pairs(
    netns: str, ca: trustme.CA, tmp_path: Path, names: tuple[str, ...]
) -> None:
    tls = _good(ca, tmp_path / "tls")
    handle = await _start(netns, tmp_path, tls, names=names)
    try:
        served = await _served_certificate(netns, handle.port, _trusting(ca))
        assert (
            served.serial_number
            == x509.load_pem_x509_certificate(Path(tls.cert_file).read_bytes()).serial_number
        )
        assert served.not_valid_after_utc > NOW
    finally:
        await handle.close()


async def test_symlinked_files_are_followed(netns: str, ca: trustme.CA, tmp_path: Path) -> None:
    # certbot's live/ names are symlinks into archive/.
    tls = _good(ca, tmp_path / "archive")
    live = tmp_path / "live"
    live.mkdir()
    (live / "cert.pem").symlink_to(tls.cert_file)
    (live / "key.pem").symlink_to(tls.key_file)
    linked = TlsFiles(cert_file=live / "cert.pem", key_file=live / "key.pem")
    handle = await _start(netns, tmp_path, linked, names=("box.test",))
    await handle.close()


async def test_no_key_material_in_errors(netns: str, ca: trustme.CA, tmp_path: Path) -> None:
    tls = _mismatched(ca, tmp_path / "tls")
    key_text = Path(tls.key_file).read_text()
    with pytest.raises(TlsFileError) as info:
        await _start(netns, tmp_path, tls)
    body = key_text.splitlines()[1]
    assert body not in str(info.value)
    assert info.value.__context__ is None or body not in str(info.value.__context__)


# --- the real TLS listener ---------------------------------------------------------------------


@pytest.fixture
async def served(netns: str, ca: trustme.CA, tmp_path: Path) -> AsyncIterator[int]:
    """A daemon serving `_good`'s pair on the namespace's address; yield its port."""
    handle = await _start(netns, tmp_path, _good(ca, tmp_path / "tls"))
    try:
        yield handle.port
    finally:
        await handle.close()


async def test_plain_http_gets_no_http_reply(netns: str, served: int) -> None:
    reader, writer = await asyncio.open_connection(netns, served)
    writer.write(f"GET /health HTTP/1.1\r\nHost: {netns}\r\n\r\n".encode())
    await writer.drain()
    reply = await asyncio.wait_for(reader.read(4096), 10)
    writer.close()
    await writer.wait_closed()
    assert not reply.startswith(b"HTTP/")


async def test_reload_task_runs_every_tick(netns: str, ca: trustme.CA, tmp_path: Path) -> None:
    tls = _good(ca, tmp_path / "tls")
    handle = await _start(netns, tmp_path, tls, reload=0.02)
    ctx = _trusting(ca)
    try:
        first = await _handshake_serial(netns, handle.port, ctx)
        fresh = trustme_pair(ca, tmp_path / "fresh", "127.0.0.1", "box.test")
        os.replace(fresh.key_file, tls.key_file)
        os.replace(fresh.cert_file, tls.cert_file)
        serial = first
        for _ in range(500):
            serial = await _handshake_serial(netns, handle.port, ctx)
            if serial != first:
                break
            await asyncio.sleep(0.02)
        assert serial != first
    finally:
        await handle.close()


async def test_port_in_use_is_a_remote_bind_error(
    netns: str, ca: trustme.CA, tmp_path: Path
) -> None:
    tls = _good(ca, tmp_path / "tls")
    with socket.socket() as taken:
        taken.bind((netns, 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(RemoteBindError) as info:
            await _start(netns, tmp_path, tls, port=port)
        assert "in use" in str(info.value)
    # The failed start unwound: its loopback socket on that port is closed again.
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))


async def test_bad_files_refuse_before_binding(
    netns: str, ca: trustme.CA, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tls = _expired(ca, tmp_path / "tls")
    with socket.socket() as probe:
        probe.bind((netns, 0))
        port = probe.getsockname()[1]
    with pytest.raises(TlsFileError):
        await _start(netns, tmp_path, tls, port=port)
    assert not (tmp_path / "state").exists()
    for address in (netns, "127.0.0.1"):
        with socket.socket() as again:
            again.bind((address, port))  # still free: nothing bound it


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


def _non_aead_tls12() -> str:
    """Every TLS 1.2 suite this machine's OpenSSL knows that is not AEAD, as a cipher string."""
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    probe.set_ciphers("ALL:COMPLEMENTOFALL:@SECLEVEL=0")
    # `protocol` names where a suite was introduced; SSLv3 and TLS 1.0 suites run on TLS 1.2 too.
    names = [c["name"] for c in probe.get_ciphers() if not c["aead"]]
    assert len(names) > 10, names
    return ":".join(names)


async def _negotiated(address: str, port: int, ctx: ssl.SSLContext) -> tuple[str, str]:
    _, writer = await asyncio.open_connection(address, port, ssl=ctx, server_hostname="box.test")
    try:
        name, version, _bits = writer.get_extra_info("cipher")
        return name, version
    finally:
        writer.close()
        await writer.wait_closed()


async def test_tls12_offers_aead_suites_only(netns: str, served: int, ca: trustme.CA) -> None:
    # A client that offers every non-AEAD TLS 1.2 suite gets no handshake (an alert, the close).
    with pytest.raises((ssl.SSLError, ConnectionResetError)):
        await _negotiated(netns, served, _tls12_client(ca, _non_aead_tls12()))
    with pytest.raises((ssl.SSLError, ConnectionResetError)):
        await _negotiated(netns, served, _tls12_client(ca, _CBC_ONLY))
    # The same probe with the AEAD suites gets through (the probe itself works) ...
    aead = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
    name, version = await _negotiated(netns, served, _tls12_client(ca, f"{_CBC_ONLY}:{aead}"))
    assert (version, "GCM" in name) == ("TLSv1.2", True)
    # ... and a default client still gets TLS 1.3.
    assert (await _negotiated(netns, served, _trusting(ca)))[1] == "TLSv1.3"


async def test_openssl_s_client_with_cbc_suites_is_refused(netns: str, served: int) -> None:
    # The other side's own tool: OpenSSL's s_client offering TLS 1.2 CBC suites only, against
    # the daemon's listener (s_client starts inside this test's namespace).
    import re

    results = []
    for ciphers in (_CBC_ONLY, "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"):
        proc = await asyncio.create_subprocess_exec(
            "openssl", "s_client", "-connect", f"{netns}:{served}", "-tls1_2",
            "-cipher", ciphers, "-servername", "box.test",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, _ = await asyncio.wait_for(proc.communicate(), 30)
        results.append((proc.returncode, stdout.decode(errors="replace")))
    (cbc_rc, cbc_out), (_gcm_rc, gcm_out) = results
    assert cbc_rc != 0
    assert "Cipher is (NONE)" in cbc_out
    # The same s_client line with AEAD suites does negotiate.
    assert re.search(r"Cipher is ECDHE-(ECDSA|RSA)-AES256-GCM-SHA384", gcm_out), gcm_out[-1000:]
