"""Is a peer this machine? Loopback, or one of the machine's own interface addresses, read now.

On Linux the addresses come from one rtnetlink dump (RTM_GETADDR), which lists every address of
every interface, secondary ones included, in the caller's network namespace, with no subprocess.
Elsewhere the addresses the host name resolves to stand in.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import struct

__all__ = ["is_local_peer", "local_interface_addresses"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NLMSG_HDR = struct.Struct("=IHHII")
_RTATTR = struct.Struct("=HH")
_IFADDRMSG = struct.Struct("=BBBBI")
_NLMSG_ERROR = 2
_NLMSG_DONE = 3
_RTM_NEWADDR = 20
_RTM_GETADDR = 22
_NLM_F_REQUEST = 0x1
_NLM_F_DUMP = 0x300
_IFA_ADDRESS = 1
_IFA_LOCAL = 2
_MAX_DUMP_BYTES = 16 * 1024 * 1024


def _align(n: int) -> int:
    return (n + 3) & ~3


def _parse_addr_messages(data: bytes, out: set[IPAddress]) -> bool:
    """Collect addresses from one netlink read; return True once the dump is done."""
    offset = 0
    while offset + _NLMSG_HDR.size <= len(data):
        length, msg_type, _flags, _seq, _pid = _NLMSG_HDR.unpack_from(data, offset)
        if length < _NLMSG_HDR.size:
            return True
        if msg_type == _NLMSG_DONE:
            return True
        if msg_type == _NLMSG_ERROR:
            raise OSError("netlink address dump failed")
        if msg_type == _RTM_NEWADDR:
            body = offset + _NLMSG_HDR.size
            family = data[body]
            attrs: dict[int, bytes] = {}
            pos = body + _IFADDRMSG.size
            end = offset + length
            while pos + _RTATTR.size <= end:
                rta_len, rta_type = _RTATTR.unpack_from(data, pos)
                if rta_len < _RTATTR.size:
                    break
                attrs[rta_type] = data[pos + _RTATTR.size : pos + rta_len]
                pos += _align(rta_len)
            # IFA_LOCAL is our end of a point-to-point link; IFA_ADDRESS there is the far end.
            raw = attrs.get(_IFA_LOCAL) or attrs.get(_IFA_ADDRESS)
            if raw is not None and family == socket.AF_INET and len(raw) == 4:
                out.add(ipaddress.IPv4Address(raw))
            elif raw is not None and family == socket.AF_INET6 and len(raw) == 16:
                out.add(ipaddress.IPv6Address(raw))
        offset += _align(length)
    return False


def _netlink_addresses() -> set[IPAddress]:
    out: set[IPAddress] = set()
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.settimeout(2.0)
        request = _NLMSG_HDR.pack(
            _NLMSG_HDR.size + _IFADDRMSG.size, _RTM_GETADDR, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0
        ) + _IFADDRMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
        sock.sendto(request, (0, 0))
        received = 0
        while received < _MAX_DUMP_BYTES:
            data = sock.recv(65536)
            if not data:
                break
            received += len(data)
            if _parse_addr_messages(data, out):
                break
    return out


def _resolved_addresses() -> set[IPAddress]:
    out: set[IPAddress] = set()
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        return out
    for info in infos:
        try:
            out.add(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]))
        except ValueError:
            continue
    return out


def local_interface_addresses() -> frozenset[IPAddress]:
    """Return the addresses of this machine's interfaces, read now."""
    if hasattr(socket, "AF_NETLINK"):
        try:
            return frozenset(_netlink_addresses())
        except OSError:
            pass
    return frozenset(_resolved_addresses())


# A peer string's address and whether it is loopback never change, so the gate parses each
# once; the interface addresses a non-loopback peer is checked against are still read per call.
@functools.lru_cache(maxsize=256)
def _parse_peer(peer: str) -> tuple[IPAddress, bool] | None:
    try:
        address: IPAddress = ipaddress.ip_address(peer.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address, address.is_loopback


def is_local_peer(peer: str | None) -> bool:
    """Return True when `peer` is loopback, one of our interface addresses, or unknown."""
    if not peer:
        return True
    parsed = _parse_peer(peer)
    if parsed is None:
        # A Unix socket or some other non-IP transport: no remote address to speak of.
        return True
    address, loopback = parsed
    if loopback:
        return True
    return address in local_interface_addresses()
