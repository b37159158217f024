"""The registry of the progress and cancellation tests, with the events its commands set."""

from __future__ import annotations

import asyncio
import threading
from typing import Literal

from local_daemon import CancelFlag, Progress, Registry

__all__ = ["WAIT", "Seen", "progress_registry"]

WAIT = 10.0


class Seen:
    """What the commands of `progress_registry` saw, as events a test waits on."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.thread_started = threading.Event()
        self.polling = threading.Semaphore(0)  # released once per `poll_flag` call in its thread
        self.flag_seen = threading.Event()


def progress_registry(seen: Seen) -> Registry:
    """Commands that report progress, wait to be cancelled, and poll a flag in a thread."""
    registry = Registry()

    @registry.command
    async def steps(n: int, progress: Progress) -> int:
        """Report n steps of n."""
        for step in range(1, n + 1):
            progress.report(step, n, f"step {step}")
            await asyncio.sleep(0)
        return n

    @registry.command
    def thread_steps(n: int, progress: Progress) -> int:
        """Report n steps from a worker thread."""
        for step in range(1, n + 1):
            progress.report(step, n)
        return n

    @registry.command
    async def wait_forever(progress: Progress) -> str:
        """Report once, then wait until cancelled."""
        progress.report(0, None, "started")
        seen.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.cancelled.set()
            raise
        return "never"

    @registry.command
    def poll_flag(flag: CancelFlag, progress: Progress) -> str:
        """Block in a worker thread until the call is cancelled."""
        progress.report(0)
        seen.thread_started.set()
        seen.polling.release()
        if flag.wait(WAIT):
            seen.flag_seen.set()
            return "stopped"
        return "timed out"

    @registry.command
    async def was_cancelled(what: Literal["async", "sync"]) -> bool:
        """Wait (bounded) until the async command or the sync one saw its cancellation."""
        if what == "sync":
            return await asyncio.to_thread(seen.flag_seen.wait, WAIT)
        try:
            await asyncio.wait_for(seen.cancelled.wait(), WAIT)
        except TimeoutError:
            return False
        return True

    return registry
