"""Sign-in throttling: failed login codes and failed token requests, per peer and overall.

Each failure is a timestamp in a sliding window (`SIGN_IN_WINDOW_SECONDS`). A peer with
`PER_PEER_FAILURES` failures in the window, or the whole listener with `OVERALL_FAILURES`, is
refused before anything is checked (no MAC, no file read, no lock): 429 with `Retry-After`, the
seconds until the oldest failure leaves the window. IPv6 peers count by their /64, which one
host usually holds whole. Memory is bounded: at most `PER_PEER_FAILURES` times per peer and
`MAX_PEERS` peers (the stalest are forgotten first); the clock is monotonic.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

__all__ = [
    "MAX_PEERS",
    "OVERALL_FAILURES",
    "PER_PEER_FAILURES",
    "SIGN_IN_WINDOW_SECONDS",
    "SignInThrottle",
]

SIGN_IN_WINDOW_SECONDS = 60.0
PER_PEER_FAILURES = 10
OVERALL_FAILURES = 100
MAX_PEERS = 4096


def _peer_key(peer: str | None) -> str:
    if peer is None:
        return ""
    try:
        address = ipaddress.ip_address(peer.split("%", 1)[0])
    except ValueError:
        return peer[:64]
    if address.version == 6 and address.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address.ipv4_mapped or address) if address.version == 6 else str(address)


class SignInThrottle:
    """Counts failed sign-ins per peer and overall; says how long a refused peer must wait."""

    __slots__ = ("_clock", "_overall", "_peers", "overall_limit", "per_peer_limit", "window")

    def __init__(
        self,
        *,
        per_peer: int = PER_PEER_FAILURES,
        overall: int = OVERALL_FAILURES,
        window: float = SIGN_IN_WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_peer_limit = per_peer
        self.overall_limit = overall
        self.window = window
        self._clock = clock
        self._peers: OrderedDict[str, deque[float]] = OrderedDict()
        self._overall: deque[float] = deque(maxlen=overall)

    def _wait(self, times: deque[float], limit: int, now: float) -> float:
        if len(times) < limit:
            return 0.0
        return max(0.0, times[0] + self.window - now)

    def retry_after(self, peer: str | None) -> int | None:
        """Return the whole seconds `peer` must wait before its next try, or None: go ahead."""
        now = self._clock()
        wait = self._wait(self._overall, self.overall_limit, now)
        times = self._peers.get(_peer_key(peer))
        if times is not None:
            wait = max(wait, self._wait(times, self.per_peer_limit, now))
        return math.ceil(wait) if wait > 0 else None

    def failed(self, peer: str | None) -> None:
        """Count one failed sign-in of `peer`."""
        now = self._clock()
        key = _peer_key(peer)
        times = self._peers.pop(key, None)
        if times is None:
            times = deque(maxlen=self.per_peer_limit)
            while len(self._peers) >= MAX_PEERS:
                self._peers.popitem(last=False)
        times.append(now)
        self._peers[key] = times  # most recent failure last: the stalest go first
        self._overall.append(now)
