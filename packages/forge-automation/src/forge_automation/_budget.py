"""A per-process rate budget that paces pollers by the forge's rate-limit headers.

It only ever delays a call, never drops one. Two processes on one login each keep their own view
until their next response tells them the real remaining count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

__all__ = ["RateBudget", "shared_rate_budget"]


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
        self._remaining: int | None = None
        self._reset: float | None = None

    @property
    def remaining(self) -> int | None:
        """Return the last remaining count the forge reported, or None before any response."""
        with self._lock:
            return self._remaining

    @property
    def reset_at(self) -> float | None:
        """Return the epoch second the current window resets at, or None before any response."""
        with self._lock:
            return self._reset

    def observe(self, headers: Mapping[str, str]) -> None:
        """Record X-RateLimit-Remaining and X-RateLimit-Reset from one response's headers."""
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            remaining = int(lowered["x-ratelimit-remaining"])
            reset = float(lowered["x-ratelimit-reset"])
        except (KeyError, ValueError):
            return
        with self._lock:
            self._remaining = max(remaining, 0)
            self._reset = reset

    def delay(self) -> float:
        """Return how long the next paced call should wait, in seconds (0 when plenty is left)."""
        with self._lock:
            remaining, reset = self._remaining, self._reset
        if remaining is None or reset is None or remaining > self._reserve:
            return 0.0
        window = reset - self._now()
        if window <= 0:
            return 0.0
        # Spread what is left evenly over the rest of the window; with nothing left, wait it out.
        wait = window if remaining == 0 else window / remaining
        return min(wait, self._max_delay)

    def pace(self) -> float:
        """Sleep for `delay()` seconds and return the time slept."""
        wait = self.delay()
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
