"""What both listeners share below HTTP: which hosts may listen without a gate, and time bounds.

The loopback listener has no credential, so it listens on loopback only unless the product opts in
by name (`insecure_unauthenticated_host=True`); the remote listener is how other devices are served.
"""

from __future__ import annotations

import ipaddress
import socket

from ._errors import RemoteBindError

__all__ = [
    "IDLE_TIMEOUT",
    "check_loopback_listener",
    "is_loopback_host",
]

# A connection must deliver a whole request head within this many seconds of opening (or of the
# previous response), and an idle keep-alive connection closes after it. aiohttp's
# `keepalive_timeout` is both: its timer starts at `connection_made` and again after each
# response, and it fires whenever the connection is still waiting for a complete request.
IDLE_TIMEOUT = 5.0


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_loopback_host(host: str) -> bool:
    """Return True for `localhost` and for any loopback IP literal (127/8, ::1, mapped forms)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    address = _literal(host)
    return address is not None and address.is_loopback


def _refusal(what: str) -> RemoteBindError:
    return RemoteBindError(
        f"refusing to serve on {what}: it is not a loopback address, and the loopback listener "
        "has no credential, so anyone who can reach it could run every command. To serve other "
        "devices, use the remote listener (TLS behind the token-file gate: start_daemon("
        "remote=RemoteOptions(...)), or `local-daemon serve --remote-host ADDR --token-file "
        "FILE --tls-cert FILE --tls-key FILE`). To serve it anyway, opt in with "
        "insecure_unauthenticated_host=True (CLI: --insecure-unauthenticated-host)."
    )


def check_loopback_listener(
    host: str, sock: socket.socket | None, *, insecure_unauthenticated_host: bool
) -> None:
    """Refuse a non-loopback `host` (or inherited socket address) unless opted in by name."""
    if insecure_unauthenticated_host:
        return
    if sock is None:
        if not is_loopback_host(host):
            raise _refusal(f"host {host!r}")
        return
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return  # a Unix socket reaches this machine only
    bound = str(sock.getsockname()[0])
    if not is_loopback_host(bound):
        raise _refusal(f"the inherited socket's address {bound!r}")
