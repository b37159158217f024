"""The remote listener's certificate and key: every check of the spec, and loading a checked pair.

A pair is read once, checked from those bytes, and the same bytes are what OpenSSL loads, so a file
replaced between the check and the load can never slip an unchecked pair into service.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from local_daemon._errors import TlsFileError
from local_daemon._statefile import (
    SafeFileProblem,
    Signature,
    UnsafeFileError,
    path_signature,
    read_safe_file,
)

__all__ = [
    "TLS12_CIPHERS",
    "CheckedPair",
    "PairSignature",
    "check_tls_pair",
    "load_pair_into",
    "new_server_context",
    "pair_signature",
]

_MAX_PEM_BYTES = 1024 * 1024
# TLS 1.2 suites of Mozilla's "intermediate" profile (v5.7): forward secret and AEAD only, so no
# CBC suite (Lucky13-style padding oracles) is ever negotiated. TLS 1.3 suites are all AEAD and
# are not governed by this list.
TLS12_CIPHERS = ":".join(
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
        "DHE-RSA-AES128-GCM-SHA256",
        "DHE-RSA-AES256-GCM-SHA384",
        "DHE-RSA-CHACHA20-POLY1305",
    )
)

PairSignature = tuple[Signature | None, Signature | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedPair:
    """A certificate chain and key that passed every check, as the bytes that were checked."""

    cert_pem: bytes
    key_pem: bytes
    not_after: dt.datetime
    signature: PairSignature

    def __repr__(self) -> str:
        return f"CheckedPair(not_after={self.not_after.isoformat()})"


def pair_signature(
    cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str]
) -> PairSignature:
    """Return what changes when either file of the pair changes."""
    # Symlinks are followed on purpose: certbot's live/ names are symlinks into archive/, and a
    # renewal repoints them (the link's own stat is in the signature too).
    return (
        path_signature(cert_file, follow_symlinks=True),
        path_signature(key_file, follow_symlinks=True),
    )


# The TLS pair's names for the reader's problems (owner and mode concern the private key only).
_TLS_PROBLEM: dict[SafeFileProblem, str] = {
    "owner": "key_owner",
    "mode": "key_mode",
    "too_large": "invalid",
    "symlink": "unreadable",  # symlinks are followed: never reported
}


def _read(path: Path, what: str, *, private: bool) -> bytes:
    # Symlinks are followed on purpose: certbot's live/ names are symlinks into archive/.
    read = read_safe_file(
        path,
        max_bytes=_MAX_PEM_BYTES,
        follow_symlinks=True,
        owner=private,
        forbidden_mode=0o077 if private else 0,
    )
    if not isinstance(read, UnsafeFileError):
        return read.data
    way_out = "; chmod 600 it" if read.problem == "mode" else ""
    problem = _TLS_PROBLEM.get(read.problem, read.problem)
    raise TlsFileError(f"TLS {what} file {path} {read.what}{way_out}", problem=problem)


def _name_matches(pattern: str, name: str) -> bool:
    pattern, name = pattern.lower().rstrip("."), name.lower().rstrip(".")
    if pattern == name:
        return True
    # One wildcard, as the whole leftmost label only (RFC 6125): *.example.com covers a.example.com.
    if pattern.startswith("*.") and "*" not in pattern[2:]:
        head, _, rest = name.partition(".")
        return bool(head) and rest == pattern[2:] and rest.count(".") >= 1
    return False


def _covers(cert: x509.Certificate, name: str) -> bool:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return any(_name_matches(dns, name) for dns in san.get_values_for_type(x509.DNSName))
    return address in san.get_values_for_type(x509.IPAddress)


def check_tls_pair(
    cert_file: str | os.PathLike[str],
    key_file: str | os.PathLike[str],
    *,
    names: tuple[str, ...] = (),
    now: dt.datetime | None = None,
) -> CheckedPair:
    """Read and check a PEM certificate chain and key; `TlsFileError` names the failed check."""
    cert_path, key_path = Path(cert_file), Path(key_file)
    signature = pair_signature(cert_path, key_path)
    cert_pem = _read(cert_path, "certificate", private=False)
    key_pem = _read(key_path, "key", private=True)
    try:
        chain = x509.load_pem_x509_certificates(cert_pem)
    except ValueError:
        raise TlsFileError(
            f"TLS certificate file {cert_path} holds no PEM certificate", problem="invalid"
        ) from None
    leaf = chain[0]
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        raise TlsFileError(
            f"TLS key file {key_path} is encrypted; the daemon needs it unencrypted",
            problem="invalid",
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise TlsFileError(
            f"TLS key file {key_path} holds no PEM private key", problem="invalid"
        ) from None
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*spki) != leaf.public_key().public_bytes(*spki):
        raise TlsFileError(
            f"TLS key file {key_path} does not match the certificate {cert_path}",
            problem="mismatch",
        )
    moment = now or dt.datetime.now(dt.UTC)
    if moment < leaf.not_valid_before_utc:
        raise TlsFileError(
            f"TLS certificate {cert_path} is not valid before "
            f"{leaf.not_valid_before_utc.isoformat()}",
            problem="not_yet_valid",
        )
    if moment > leaf.not_valid_after_utc:
        raise TlsFileError(
            f"TLS certificate {cert_path} expired at {leaf.not_valid_after_utc.isoformat()}",
            problem="expired",
        )
    for name in names:
        if not _covers(leaf, name):
            raise TlsFileError(
                f"TLS certificate {cert_path} does not cover the name {name!r}", problem="name"
            )
    return CheckedPair(
        cert_pem=cert_pem, key_pem=key_pem, not_after=leaf.not_valid_after_utc, signature=signature
    )


def _no_password() -> bytes:
    # Without a callback OpenSSL would prompt on the terminal for an encrypted key.
    raise TlsFileError(
        "TLS key file is encrypted; the daemon needs it unencrypted", problem="invalid"
    )


def load_pair_into(context: ssl.SSLContext, pair: CheckedPair) -> None:
    """Load a checked pair into `context`; new handshakes use it, open connections keep theirs."""
    # load_cert_chain takes paths only: hand it the checked bytes through a private directory.
    with tempfile.TemporaryDirectory(prefix="local-daemon-tls-") as tmp:
        cert_path = Path(tmp, "cert.pem")
        key_path = Path(tmp, "key.pem")
        for path, data in ((cert_path, pair.cert_pem), (key_path, pair.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        try:
            context.load_cert_chain(cert_path, key_path, password=_no_password)
        except ssl.SSLError:
            raise TlsFileError(
                "OpenSSL refused the TLS certificate and key", problem="invalid"
            ) from None


def new_server_context(pair: CheckedPair) -> ssl.SSLContext:
    """Return a server-side TLS context (TLS 1.2 or later, AEAD suites only) serving `pair`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    context.set_alpn_protocols(["http/1.1"])
    load_pair_into(context, pair)
    return context
