"""The registry of the MCP task tests: calls that wait for a gate file, report progress, and see
their cancellation; `local-daemon serve task_registry:registry` serves it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from local_daemon import CancelFlag, Progress, Registry

__all__ = ["TOOL_PREFIX", "WAIT_STEPS", "registry", "task_registry"]

TOOL_PREFIX = "tk"
# How many 10 ms pauses a gated command waits for its gate before it gives up.
WAIT_STEPS = 6000


def _mark(path: str, text: str) -> None:
    Path(path).write_text(text)


def task_registry() -> Registry:
    """Commands for tasks: `gated` (async) and `gated_sync` (a worker thread) wait for a file."""
    commands = Registry()

    @commands.command
    async def gated(gate: str, progress: Progress) -> dict[str, str]:
        """Report, wait until the file `gate` exists, report again and answer."""
        progress.report(1, 2, "waiting for the gate")
        try:
            for _ in range(WAIT_STEPS):
                if Path(gate).exists():
                    progress.report(2, 2, "through the gate")
                    return {"gate": "opened"}
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            _mark(gate + ".cancelled", "async")
            raise
        return {"gate": "timed out"}

    @commands.command
    def gated_sync(gate: str, flag: CancelFlag, progress: Progress) -> dict[str, str]:
        """The same from a worker thread, stopping when the call is cancelled."""
        progress.report(1, 2, "waiting for the gate")
        for _ in range(WAIT_STEPS):
            if Path(gate).exists():
                progress.report(2, 2, "through the gate")
                return {"gate": "opened"}
            if flag.wait(0.01):
                _mark(gate + ".cancelled", "sync")
                return {"gate": "cancelled"}
        return {"gate": "timed out"}

    @commands.command
    def echo(text: str) -> dict[str, str]:
        """Echo the text."""
        return {"text": text}

    @commands.command
    def sized(size: int) -> str:
        """Answer `size` characters."""
        return "x" * size

    return commands


registry = task_registry()
