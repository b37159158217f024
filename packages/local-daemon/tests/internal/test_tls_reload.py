"""`RemoteListener.reload_tls`, one tick at a time: a half-renewed pair is refused and logged once
however many ticks see it, the last good pair keeps serving, and the whole pair loads next.

White-box: the ticks are called by hand (the public route reloads on its own timer; the tick
that follows is tested in test_tls_files). Bound on 127.0.0.1, which the public route refuses.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme
from cryptography import x509

from gate_support import build_test_app, trustme_pair
from local_daemon import RemoteOptions, ensure_token_file
from local_daemon._remote import RemoteListener, open_remote_listener


@pytest.fixture
async def listener(tmp_path: Path) -> AsyncIterator[tuple[RemoteListener, trustme.CA]]:
    ca = trustme.CA()
    remote = RemoteOptions(
        host="127.0.0.1",
        token_file=ensure_token_file(tmp_path / "token"),
        tls=trustme_pair(ca, tmp_path / "tls", "127.0.0.1", "box.test", "*.wild.test"),
        tls_reload=3600.0,
    )
    opened = await open_remote_listener(remote=remote, port=0, build_app=build_test_app)
    try:
        yield opened, ca
    finally:
        await opened.close()


async def _handshake_serial(port: int, ctx: ssl.SSLContext) -> int:
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=ctx, server_hostname="box.test"
    )
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return x509.load_der_x509_certificate(der).serial_number
    finally:
        writer.close()
        await writer.wait_closed()


async def test_reload_keeps_the_last_good_pair_on_a_bad_change(
    listener: tuple[RemoteListener, trustme.CA], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    opened, ca = listener
    ctx = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
    first = await _handshake_serial(opened.port, ctx)
    assert opened.reload_tls() is False  # nothing changed
    tls = opened._remote.tls
    key_before = Path(tls.key_file).read_bytes()
    # Half a renewal: a new certificate beside the old key.
    fresh = trustme_pair(ca, tmp_path / "fresh", "127.0.0.1", "box.test", "*.wild.test")
    os.replace(fresh.cert_file, tls.cert_file)
    with caplog.at_level(logging.ERROR, logger="local_daemon"):
        assert opened.reload_tls() is False
        assert opened.reload_tls() is False
    assert [r.getMessage().count("does not match") for r in caplog.records] == [1]
    assert key_before.decode().splitlines()[1] not in caplog.text
    assert await _handshake_serial(opened.port, ctx) == first
    # The key arrives: the next tick loads the pair.
    os.replace(fresh.key_file, tls.key_file)
    assert opened.reload_tls() is True
    assert await _handshake_serial(opened.port, ctx) != first
