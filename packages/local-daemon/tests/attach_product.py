"""The registry the `mcp-stdio --attach` tests share: `serve attach_product:registry`.

`bump` increments a counter held by the daemon process, so two agent sessions relayed to one
daemon see one count; `hold` waits (bounded) after leaving a mark file, so a test can kill the
daemon while a call is in flight; `steps` reports progress and `wait_cancel` marks its own
cancellation, for progress and cancel through the relay.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from local_daemon import Progress, Registry

__all__ = ["registry"]

registry = Registry()
_count = 0


@registry.command()
def bump() -> dict[str, int]:
    """Add one to this daemon's counter and return it with the daemon's pid."""
    global _count
    _count += 1
    return {"count": _count, "pid": os.getpid()}


@registry.command()
async def hold(mark: str, seconds: float = 60.0) -> str:
    """Write `mark` (a file path), then wait up to `seconds`."""
    Path(mark).write_text(str(os.getpid()))
    await asyncio.sleep(seconds)
    return "held"


@registry.command()
async def steps(n: int, progress: Progress) -> int:
    """Report n steps of n."""
    for step in range(1, n + 1):
        progress.report(step, n, f"step {step}")
        await asyncio.sleep(0)
    return n


@registry.command()
async def wait_cancel(mark: str, progress: Progress) -> str:
    """Write `<mark>.started`, wait (bounded) to be cancelled, then write `<mark>.cancelled`."""
    progress.report(0, None, "started")
    Path(mark + ".started").write_text("")
    try:
        await asyncio.sleep(120)
    except asyncio.CancelledError:
        Path(mark + ".cancelled").write_text("")
        raise
    return "not cancelled"
