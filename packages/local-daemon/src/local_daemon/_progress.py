"""Progress reporters and cancellation flags: what a long command takes to report and to stop.

A command declares a parameter annotated `Progress` or `CancelFlag`; `Registry` recognises it by
type, keeps it out of the command's JSON Schema (so out of `/rpc`, MCP `tools/list` and
`/openapi.json`) and hands in the call's own, from a `CallScope`: the surface's (`invoke` opens
one when the client asked for progress), else one of the call's own.

- a `Progress` forwards each report to the surface's sender (MCP `notifications/progress` when
  the client sent a progress token, an SSE event on `/rpc` with `Accept: text/event-stream`);
  without a sender a report goes nowhere. `report` never blocks and works from the event loop or
  from a worker thread; reports are sent in order by one pump task, and the pump sends what is
  still pending before the call's answer goes out. A producer that outruns the wire by more than
  `MAX_PENDING_REPORTS` loses its oldest unsent reports, never the newest.
- a `CancelFlag` is set when the call is cancelled (the MCP client sent `notifications/cancelled`,
  or the HTTP client went away). An async command is cancelled outright (`CancelledError` at its
  next `await`); a synchronous command runs on in its worker thread, so it polls the flag and
  stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = [
    "MAX_PENDING_REPORTS",
    "CallScope",
    "CancelFlag",
    "Progress",
    "ProgressSender",
    "current_call",
]

ProgressSender = Callable[[float, "float | None", "str | None"], Awaitable[None]]

# Reports waiting for the wire; past this the oldest unsent ones are dropped (the newest wins).
MAX_PENDING_REPORTS = 256

_Report = tuple[float, "float | None", "str | None"]


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"progress {name} must be a finite number")
    return float(value)


class Progress:
    """Reports how far a command has got; a parameter annotated `Progress` receives one."""

    __slots__ = ("_closing", "_loop", "_loop_thread", "_pending", "_pump", "_sender", "_wake")

    def __init__(self, sender: ProgressSender | None = None) -> None:
        self._sender = sender
        self._pending: deque[_Report] = deque(maxlen=MAX_PENDING_REPORTS)
        self._pump: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._closing = False
        if sender is not None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            self._wake = asyncio.Event()

    @property
    def listening(self) -> bool:
        """True when reports reach a client (a progress token, or a streamed `/rpc` answer)."""
        return self._sender is not None

    def report(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report `progress` (of `total`, if known) with an optional message; never blocks.

        Thread-safe. A report nobody listens to is dropped at once.
        """
        done = _number(progress, "progress")
        whole = None if total is None else _number(total, "total")
        if message is not None and not isinstance(message, str):
            raise TypeError("progress message must be a string")
        loop = self._loop
        if loop is None:
            return
        item = (done, whole, message)
        if threading.get_ident() == self._loop_thread:
            self._push(item)
        else:
            # RuntimeError: the loop closed, so the call is over and nobody listens any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._push, item)

    def _push(self, item: _Report) -> None:
        if self._closing:
            return  # the answer is on its way: a report now would arrive after it
        self._pending.append(item)
        wake = self._wake
        assert wake is not None
        wake.set()
        if self._pump is None:
            self._pump = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        wake, sender = self._wake, self._sender
        assert wake is not None
        assert sender is not None
        while True:
            while self._pending:
                await sender(*self._pending.popleft())
            if self._closing:
                return
            await wake.wait()
            wake.clear()

    async def _flush(self) -> None:
        """Send every pending report, then let the pump end."""
        pump = self._pump
        if pump is None:
            return
        # Reports a worker thread scheduled just before the command returned land first.
        await asyncio.sleep(0)
        self._closing = True
        assert self._wake is not None
        self._wake.set()
        # A failed wire (the client went away) fails the answer that follows the same way; a
        # cancel of this task cancels the pump with it.
        with contextlib.suppress(Exception):
            await pump
        self._pump = None

    def _stop(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None
        self._pending.clear()


class CancelFlag:
    """Set once the caller gave up on the call; a parameter annotated `CancelFlag` receives one.

    A synchronous command runs on in its worker thread after a cancel: it polls `is_set()` (or
    waits on it) and stops early.
    """

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def is_set(self) -> bool:
        """Return True once the call is cancelled."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the call is cancelled or `timeout` seconds pass; return `is_set()`."""
        return self._event.wait(timeout)

    def set(self) -> None:
        """Mark the call cancelled (the surfaces do this; a test may too)."""
        self._event.set()


class CallScope:
    """One command call's progress reporter and cancellation flag, made when first asked for."""

    __slots__ = ("_flag", "_progress", "_sender", "cancelled")

    def __init__(self, sender: ProgressSender | None) -> None:
        self._sender = sender
        self._progress: Progress | None = None
        self._flag: CancelFlag | None = None
        self.cancelled = False

    @property
    def progress(self) -> Progress:
        """This call's reporter."""
        if self._progress is None:
            self._progress = Progress(self._sender)
        return self._progress

    @property
    def cancel_flag(self) -> CancelFlag:
        """This call's cancellation flag."""
        if self._flag is None:
            self._flag = CancelFlag()
            if self.cancelled:
                self._flag.set()
        return self._flag

    def cancel(self) -> None:
        """Mark the call cancelled: set its flag and stop sending progress."""
        self.cancelled = True
        if self._flag is not None:
            self._flag.set()
        if self._progress is not None:
            self._progress._stop()

    @property
    def reporting(self) -> bool:
        """True once the command took its reporter (so `finish` has something to do)."""
        return self._progress is not None

    async def finish(self) -> None:
        """Send the reports still pending; called before the call's answer goes out."""
        if self._progress is not None:
            await self._progress._flush()


_CURRENT: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar(
    "local_daemon_call", default=None
)


def current_call() -> CallScope | None:
    """Return the scope of the command call running in this context (None outside one)."""
    return _CURRENT.get()


def enter_call(scope: CallScope) -> contextvars.Token[CallScope | None]:
    """Make `scope` the current call's (undo with `leave_call`)."""
    return _CURRENT.set(scope)


def leave_call(token: contextvars.Token[CallScope | None]) -> None:
    """Restore the scope that was current before `enter_call`."""
    _CURRENT.reset(token)
