"""The worker threads that run synchronous commands: the caller's context variables go along, and
the busy count the shutdown warning reads rises and falls with them."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from local_daemon._threads import busy_command_threads, run_in_command_thread

_REQUEST = contextvars.ContextVar("request", default="none")


async def test_result_exception_and_context_cross_the_thread() -> None:
    assert await run_in_command_thread(lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(ValueError, match="boom"):
        await run_in_command_thread(_raise, "boom")
    _REQUEST.set("r-1")
    assert await run_in_command_thread(_REQUEST.get) == "r-1"


def _raise(text: str) -> None:
    raise ValueError(text)


async def test_workers_are_daemon_threads_and_run_side_by_side() -> None:
    both = threading.Barrier(2, timeout=30)

    def meet() -> bool:
        both.wait()  # returns only once two commands run at the same time
        return threading.current_thread().daemon

    daemonic = await asyncio.gather(run_in_command_thread(meet), run_in_command_thread(meet))
    assert list(daemonic) == [True, True]


async def test_busy_counts_running_commands_and_a_cancelled_wait_leaves_it_running() -> None:
    started, release = threading.Event(), threading.Event()

    def block() -> str:
        started.set()
        assert release.wait(30)
        return "done"

    before = busy_command_threads()
    waiting = asyncio.ensure_future(run_in_command_thread(block))
    assert await asyncio.to_thread(started.wait, 30)
    assert busy_command_threads() == before + 1
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert busy_command_threads() == before + 1  # a thread cannot be cancelled
    release.set()
    # The next command gets a worker: the pool is not stuck on the cancelled answer.
    assert await run_in_command_thread(lambda: "next") == "next"
