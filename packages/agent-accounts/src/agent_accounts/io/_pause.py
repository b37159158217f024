"""Test-only seam: `AGENT_ACCOUNTS_TEST_PAUSE=<step>:<marker file>` pauses a refresh at a step.

The marker file is created when the step is reached; the refresh resumes when a test removes it
(or after 30 s). Unset, every call here returns at once. Crash tests use it to kill a refresher at
a named step; the strace harness needs no seam at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Final

__all__ = ["PAUSE_ENV", "PAUSE_STEPS", "pause", "pause_sync"]

PAUSE_ENV: Final = "AGENT_ACCOUNTS_TEST_PAUSE"
PAUSE_STEPS: Final = (
    "config-locked",
    "locked",
    "requested",
    "temp-written",
    "before-replace",
    "renamed",
)
_PAUSE_LIMIT_S: Final = 30.0


def _marker(step: str) -> str | None:
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return None
    name, _, marker = spec.partition(":")
    if name != step or not marker:
        return None
    with contextlib.suppress(OSError), open(marker, "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")
    return marker


async def pause(step: str) -> None:
    """Wait at `step` while its marker file exists (test-only)."""
    marker = _marker(step)
    if marker is None:
        return
    # Polling a file is the point: the test resuming us may be another process.
    deadline = time.monotonic() + _PAUSE_LIMIT_S
    while os.path.exists(marker) and time.monotonic() < deadline:  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.01)


def pause_sync(step: str) -> None:
    """As `pause`, for a step inside the synchronous lock acquisition."""
    marker = _marker(step)
    deadline = time.monotonic() + _PAUSE_LIMIT_S
    while marker is not None and os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
