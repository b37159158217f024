"""`run_in_command_thread`: run a synchronous command off the event loop in a daemon thread.

`asyncio.to_thread` uses the loop's default executor, whose worker threads the interpreter joins
at exit: a SIGTERM that lands while a synchronous command runs would keep the process alive
until the command ends, however long that is. These workers are daemon threads, so once the
daemon has closed (in-flight requests get their grace, then are cancelled) the process can exit
and a command still running is abandoned with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["busy_command_threads", "run_in_command_thread"]

T = TypeVar("T")

# The default executor's size: enough for blocking commands, bounded so a flood cannot fork.
_MAX_WORKERS = min(32, (os.cpu_count() or 1) + 4)


class _Work:
    __slots__ = ("call", "future", "loop")

    def __init__(
        self, call: Callable[[], Any], future: asyncio.Future[Any], loop: asyncio.AbstractEventLoop
    ) -> None:
        self.call, self.future, self.loop = call, future, loop


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.cancelled():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class _DaemonPool:
    """A lazily grown pool of daemon worker threads, fed through one queue."""

    def __init__(self, max_workers: int) -> None:
        self._queue: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._max = max_workers
        self._threads = 0
        self._idle = 0
        self.busy = 0

    def submit(self, work: _Work) -> None:
        with self._lock:
            self.busy += 1
            spawn = self._idle == 0 and self._threads < self._max
            if spawn:
                self._threads += 1
            else:
                self._idle -= 1 if self._idle else 0
        self._queue.put(work)
        if spawn:
            threading.Thread(target=self._worker, name="local-daemon-command", daemon=True).start()

    def _worker(self) -> None:
        while True:
            work = self._queue.get()
            try:
                value = work.call()
                ok = True
            except BaseException as exc:
                value, ok = exc, False
            with self._lock:
                self.busy -= 1
                self._idle += 1
            # RuntimeError: the loop closed meanwhile, so nobody waits for this answer any more.
            with contextlib.suppress(RuntimeError):
                work.loop.call_soon_threadsafe(_settle, work.future, ok, value)
            del work, value


_pool = _DaemonPool(_MAX_WORKERS)


async def run_in_command_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run `fn(*args, **kwargs)` in a daemon worker thread with this task's context."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()
    _pool.submit(_Work(lambda: context.run(fn, *args, **kwargs), future, loop))
    return await future


def busy_command_threads() -> int:
    """Return how many synchronous commands are running now."""
    return _pool.busy
