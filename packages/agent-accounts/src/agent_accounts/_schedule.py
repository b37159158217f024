"""When `poll --period S` polls each profile: a stable phase per profile, spread apart.

Polling every account at the same instant gets them rate-limited together (a timer on each of
two machines, or two timers, firing at once). So each profile gets its own phase in the period:
a point of `[0, S)` from a hash of the machine's name and the profile's config dir, the same on
every run of that machine and different on another machine. The phases are then pushed apart so
that no two lie closer than `min_gap` seconds (or `S / n` when `n` profiles cannot be that far
apart), keeping the hashed order. A run starting at `now` polls each profile at the first time
at or after `now` whose distance from the epoch is its phase modulo `S`: every profile once
within `[now, now + S)`. Pure: the caller passes the names, the period and the time.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Final

__all__ = ["MIN_POLL_GAP_S", "poll_phases", "poll_times"]

MIN_POLL_GAP_S: Final = 1.0
"""No two profiles are polled closer together than this (when the period leaves room)."""


def _fraction(machine: str, key: str) -> float:
    digest = hashlib.sha256(f"{machine}\0{key}".encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def poll_phases(
    keys: Sequence[str], period: float, *, machine: str, min_gap: float = MIN_POLL_GAP_S
) -> list[float]:
    """Return each key's phase in `[0, period)` seconds, in `keys`' order.

    A phase depends only on `machine`, the key and the other keys; any two phases are at least
    `min(min_gap, period / len(keys))` apart, the wrap-around from the last back to the first
    included. Raises ValueError for a period or gap that is not a positive finite number.
    """
    if not (math.isfinite(period) and period > 0):
        raise ValueError("period must be a positive number of seconds")
    if not (math.isfinite(min_gap) and min_gap > 0):
        raise ValueError("min_gap must be a positive number of seconds")
    if not keys:
        return []
    spacing = min(float(min_gap), period / len(keys))
    order = sorted(range(len(keys)), key=lambda i: (_fraction(machine, keys[i]), keys[i], i))
    placed: list[float] = []
    for i in order:
        start = _fraction(machine, keys[i]) * period
        placed.append(start if not placed else max(start, placed[-1] + spacing))
    if placed[-1] + spacing > placed[0] + period * (1 - 1e-12):
        # Pushed past the wrap: spread evenly from the first phase instead (still in hashed order).
        step = period / len(keys)
        placed = [placed[0] + n * step for n in range(len(keys))]
    phases = [0.0] * len(keys)
    for slot, i in enumerate(order):
        phases[i] = math.fmod(placed[slot], period)
    return phases


def poll_times(phases: Sequence[float], period: float, now: float) -> list[float]:
    """Return, for each phase, the first time at or after `now` (epoch seconds) at that phase."""
    if not (math.isfinite(now) and math.isfinite(period) and period > 0):
        raise ValueError("now must be a finite number of epoch seconds, period positive")
    # Python's float % takes the divisor's sign: the wait is in [0, period) for any `now`.
    return [now + (phase - now) % period for phase in phases]
