"""The registry `mcp-stdio --attach` shares between stock clients: a counter in the daemon.

`local-daemon serve mcp_counter_product:registry --tool-prefix ""`; every session relayed to that
one daemon sees the same count.
"""

from __future__ import annotations

import os

from local_daemon import Registry

__all__ = ["registry"]

registry = Registry()
_count = 0


@registry.command(title="Bump")
def bump() -> dict[str, int]:
    """Add one to the daemon's counter; return the count and the daemon's pid."""
    global _count
    _count += 1
    return {"count": _count, "pid": os.getpid()}
