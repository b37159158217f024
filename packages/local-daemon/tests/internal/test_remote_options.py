"""Remote options: every refused address and option, and the remote app's own allowlist."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trustme

from gate_support import trustme_pair
from local_daemon import RemoteBindError, TlsFileError, TokenFileError, ensure_token_file
from local_daemon._remote import RemoteOptions, TlsFiles, check_remote_options, remote_allowlist


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def remote(tmp_path: Path, ca: trustme.CA) -> RemoteOptions:
    tls = trustme_pair(ca, tmp_path, "192.0.2.10", "box.test")
    return RemoteOptions(
        host="192.0.2.10",
        token_file=ensure_token_file(tmp_path / "token"),
        allowed_hosts=("box.test",),
        tls=tls,
    )


def _with(remote: RemoteOptions, **changes: Any) -> RemoteOptions:
    fields: dict[str, Any] = {
        "host": remote.host,
        "token_file": remote.token_file,
        "allowed_hosts": remote.allowed_hosts,
        "sign_in_hint": remote.sign_in_hint,
        "tls": remote.tls,
        "tls_reload": remote.tls_reload,
    }
    fields.update(changes)
    return RemoteOptions(**fields)


REFUSED_HOSTS = [
    "0.0.0.0",
    "::",
    "0:0:0:0:0:0:0:0",
    "::0",
    "::ffff:0.0.0.0",
    "::ffff:0:0",
    "127.0.0.1",
    "127.8.9.10",
    "127.255.255.254",
    "::1",
    "0:0:0:0:0:0:0:1",
    "::ffff:127.0.0.1",
    "::ffff:127.8.9.10",
    "localhost",
    "example.com",
    "box.test",
    "[2001:db8::1]",
    "192.0.2.10:8080",
    "http://192.0.2.10",
    " 192.0.2.10",
    "",
    "224.0.0.1",
]


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_refused_remote_hosts(remote: RemoteOptions, host: str) -> None:
    with pytest.raises(RemoteBindError):
        check_remote_options(_with(remote, host=host), loopback_host="127.0.0.1")


@pytest.mark.parametrize(
    "host", ["192.0.2.10", "10.1.2.3", "2001:db8::10", "fd00::2", "100.64.1.2"]
)
def test_accepted_remote_hosts(remote: RemoteOptions, host: str) -> None:
    check_remote_options(_with(remote, host=host), loopback_host="127.0.0.1")


@pytest.mark.parametrize("loopback_host", ["0.0.0.0", "::", "192.0.2.5", "example.com", "10.0.0.1"])
def test_remote_beside_an_unauthenticated_non_loopback_host(
    remote: RemoteOptions, loopback_host: str
) -> None:
    with pytest.raises(RemoteBindError) as info:
        check_remote_options(remote, loopback_host=loopback_host)
    assert "not loopback" in str(info.value)


@pytest.mark.parametrize("loopback_host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_hosts_are_fine(remote: RemoteOptions, loopback_host: str) -> None:
    check_remote_options(remote, loopback_host=loopback_host)


@pytest.mark.parametrize(
    "changes",
    [
        {"tls": None},
        {"tls": ("cert.pem", "key.pem")},
        {"allowed_hosts": "box.test"},
        {"allowed_hosts": ("box.test:443",)},
        {"allowed_hosts": ("https://box.test",)},
        {"allowed_hosts": ("",)},
        {"allowed_hosts": (None,)},
        {"tls_reload": 0},
        {"tls_reload": -1.0},
        {"tls_reload": True},
    ],
    ids=repr,
)
def test_refused_option_shapes(remote: RemoteOptions, changes: dict[str, Any]) -> None:
    with pytest.raises(RemoteBindError):
        check_remote_options(_with(remote, **changes), loopback_host="127.0.0.1")


def test_token_file_is_read_before_binding(remote: RemoteOptions) -> None:
    os.chmod(remote.token_file, 0o644)
    with pytest.raises(TokenFileError) as info:
        check_remote_options(remote, loopback_host="127.0.0.1")
    assert info.value.problem == "mode"


def test_missing_token_file(remote: RemoteOptions, tmp_path: Path) -> None:
    with pytest.raises(TokenFileError) as info:
        check_remote_options(_with(remote, token_file=tmp_path / "nope"), loopback_host="127.0.0.1")
    assert info.value.problem == "missing"


def test_tls_files_are_read_before_binding(remote: RemoteOptions, tmp_path: Path) -> None:
    tls = TlsFiles(cert_file=tmp_path / "missing.crt", key_file=remote.tls.key_file)
    with pytest.raises(TlsFileError) as info:
        check_remote_options(_with(remote, tls=tls), loopback_host="127.0.0.1")
    assert info.value.problem == "missing"


def test_allowed_host_not_covered_by_the_certificate(remote: RemoteOptions) -> None:
    with pytest.raises(TlsFileError) as info:
        check_remote_options(
            _with(remote, allowed_hosts=("box.test", "other.test")), loopback_host="127.0.0.1"
        )
    assert info.value.problem == "name"


class TestAllowlist:
    def test_bound_port_only_and_https_only(self, remote: RemoteOptions) -> None:
        hosts, origins = remote_allowlist(remote, 8443)
        assert hosts == {"192.0.2.10:8443", "box.test:8443"}
        assert origins == {"https://192.0.2.10:8443", "https://box.test:8443"}

    def test_ipv6_is_bracketed_and_names_lowercased(self, remote: RemoteOptions) -> None:
        hosts, origins = remote_allowlist(
            _with(remote, host="2001:DB8::10", allowed_hosts=("Box.Test.",)), 9000
        )
        assert hosts == {"[2001:db8::10]:9000", "box.test:9000"}
        assert origins == {"https://[2001:db8::10]:9000", "https://box.test:9000"}

    def test_default_port_also_allows_the_portless_form(self, remote: RemoteOptions) -> None:
        hosts, origins = remote_allowlist(remote, 443)
        assert hosts == {"192.0.2.10:443", "192.0.2.10", "box.test:443", "box.test"}
        assert "https://box.test" in origins
        assert not any(o.startswith("http://") for o in origins)
