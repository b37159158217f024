"""The registry the `mcp-stdio --attach` tests share: `serve attach_product:registry`.

`bump` increments a counter held by the daemon process, so two agent sessions relayed to one
daemon see one count; `hold` waits (bounded) after leaving a mark file, so a test can kill the
daemon while a call is in flight.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from local_daemon import Registry

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
