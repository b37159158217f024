"""A per-process rate budget that paces pollers by the forge's rate-limit headers.

It only ever delays a call, never drops one. Two processes on one login each keep their own view
until their next response tells them the real remaining count. The forge keeps separate limits per
resource (`core` for REST, `graphql` for GraphQL points, ...) and names the one a response counted
against in `X-RateLimit-Resource`; the budget keeps them apart the same way (a response without
that header counts as `core`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

__all__ = ["CORE", "GRAPHQL", "RateBudget", "shared_rate_budget"]

CORE = "core"
GRAPHQL = "graphql"


class RateBudget:
    """Pace calls so the remaining points last until the window resets."""

    def __init__(
        self,
        *,
        reserve: int = 100,
        max_delay: float = 60.0,
        now: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._reserve = reserve
        self._max_delay = max_delay
        self._now = now
        self._sleep = sleep
        self._lock = threading.Lock()
        # resource -> (remaining, reset epoch second)
        self._windows: dict[str, tuple[int, float]] = {}

    @property
    def remaining(self) -> int | None:
        """Return the last `core` remaining count the forge reported, or None before any."""
        return self.remaining_for(CORE)

    @property
    def reset_at(self) -> float | None:
        """Return the epoch second the `core` window resets at, or None before any response."""
        return self.reset_for(CORE)

    def remaining_for(self, resource: str) -> int | None:
        """Return the last remaining count reported for `resource`, or None before any."""
        with self._lock:
            window = self._windows.get(resource)
        return None if window is None else window[0]

    def reset_for(self, resource: str) -> float | None:
        """Return the epoch second `resource`'s window resets at, or None before any response."""
        with self._lock:
            window = self._windows.get(resource)
        return None if window is None else window[1]

    def observe(self, headers: Mapping[str, str]) -> None:
        """Record X-RateLimit-Remaining and -Reset under the response's X-RateLimit-Resource."""
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            remaining = int(lowered["x-ratelimit-remaining"])
            reset = float(lowered["x-ratelimit-reset"])
        except (KeyError, ValueError):
            return
        resource = lowered.get("x-ratelimit-resource", "").strip() or CORE
        with self._lock:
            self._windows[resource[:64]] = (max(remaining, 0), reset)

    def delay(self, resource: str = CORE) -> float:
        """Return how long the next paced call on `resource` should wait (0 when plenty is left)."""
        with self._lock:
            window = self._windows.get(resource)
        remaining, reset = window if window is not None else (None, None)
        if remaining is None or reset is None or remaining > self._reserve:
            return 0.0
        left = reset - self._now()
        if left <= 0:
            return 0.0
        # Spread what is left evenly over the rest of the window; with nothing left, wait it out.
        wait = left if remaining == 0 else left / remaining
        return min(wait, self._max_delay)

    def pace(self, resource: str = CORE) -> float:
        """Sleep for `delay(resource)` seconds and return the time slept."""
        wait = self.delay(resource)
        if wait > 0:
            self._sleep(wait)
        return wait


_SHARED: RateBudget | None = None
_SHARED_LOCK = threading.Lock()


def shared_rate_budget() -> RateBudget:
    """Return this process's rate budget, shared by every wire and poller that is not given one."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = RateBudget()
        return _SHARED
