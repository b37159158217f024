"""The throttle's invariants: a sliding window per peer and overall, IPv6 by /64, bounded memory."""

from __future__ import annotations

from local_daemon._throttle import MAX_PEERS, SignInThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_peer_waits_until_its_oldest_failure_leaves_the_window() -> None:
    clock = Clock()
    throttle = SignInThrottle(per_peer=3, overall=100, window=60.0, clock=clock)
    for _ in range(3):
        assert throttle.retry_after("192.0.2.1") is None
        throttle.failed("192.0.2.1")
        clock.now += 10
    assert throttle.retry_after("192.0.2.1") == 30
    assert throttle.retry_after("192.0.2.2") is None  # another peer is not held back
    clock.now += 30
    assert throttle.retry_after("192.0.2.1") is None


def test_the_overall_limit_holds_back_every_peer() -> None:
    clock = Clock()
    throttle = SignInThrottle(per_peer=10, overall=5, window=60.0, clock=clock)
    for n in range(5):
        throttle.failed(f"192.0.2.{n}")
    assert throttle.retry_after("198.51.100.7") == 60
    clock.now += 60
    assert throttle.retry_after("198.51.100.7") is None


def test_ipv6_peers_count_by_their_64() -> None:
    throttle = SignInThrottle(per_peer=2, overall=100, clock=Clock())
    throttle.failed("2001:db8:1:2::1")
    throttle.failed("2001:db8:1:2:ffff::9")
    assert throttle.retry_after("2001:db8:1:2::77") is not None
    assert throttle.retry_after("2001:db8:1:3::1") is None
    throttle.failed("::ffff:192.0.2.9")
    throttle.failed("192.0.2.9")
    assert throttle.retry_after("192.0.2.9") is not None


def test_memory_is_bounded_and_the_stalest_peer_goes_first() -> None:
    clock = Clock()
    throttle = SignInThrottle(per_peer=1, overall=10**6, clock=clock)
    throttle.failed("10.0.0.1")
    for n in range(MAX_PEERS):
        clock.now += 0.001
        throttle.failed(f"2001:db8:{n:x}::1")
    assert len(throttle._peers) == MAX_PEERS
    assert throttle.retry_after("10.0.0.1") is None  # forgotten, as the stalest
    assert all(len(times) <= 1 for times in throttle._peers.values())
