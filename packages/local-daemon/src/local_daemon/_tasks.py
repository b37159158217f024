"""Tool calls that outlive their connection: the task store behind MCP's tasks (`_mcp_tasks`).

A call run as a task gets an id at once; the command runs in a task of the daemon's own (not the
request's), and its result is kept until its time to live runs out, whoever asks for it. Bounds
(`TaskLimits`): a time to live, from when the task finishes (a client may ask for less, never
more than `max_ttl_ms`), a size (a result larger than `max_result_bytes` is replaced by an error
saying so) and a count (at most `max_tasks` kept; the oldest finished one makes room, and a call
finds no room only while that many are still working).

With a directory (the daemon's `<state dir>/tasks`), each task is a file `<task id>.json` written
through the one state-file layer (`write_atomic`: 0600, whole or not at all) when it starts and
when it ends, and read back (`read_safe_file`) when the daemon starts again: finished tasks keep
their results for the rest of their time to live, and a task that was still working when the
daemon stopped is reported failed. A file holds the task's status, times and the call's result,
nothing of the request (no credential, no arguments) but its owner.

Each task belongs to the authorization context that started it, its `owner`: a name holding no
secret (`owner_context`: "loopback", "bearer", or "session:" and the SHA-256 of a remote
device's session id). Only that context finds it (`get`, `tasks`); a task file read back with
no owner belongs to nobody and is kept only until its time to live runs out.

The store holds JSON values (the wire form of the task and of the result); it imports nothing of
`mcp`, so the daemon can load it before the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ._invoke import INTERNAL_ERROR_CODE, INTERNAL_ERROR_MESSAGE, error_envelope
from ._progress import ProgressSender
from ._statefile import (
    UnsafeFileError,
    make_private_dir,
    parse_json_document,
    read_safe_file,
    write_atomic,
)
from ._threads import run_in_command_thread

__all__ = [
    "TASKS_DIR_NAME",
    "TaskLimits",
    "TaskState",
    "TaskStatus",
    "TaskStore",
    "TasksFullError",
    "owner_context",
]

TaskStatus: TypeAlias = Literal["working", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

# Inside the state dir: one file per task.
TASKS_DIR_NAME = "tasks"

_ID_BYTES = 18  # 144 random bits: 24 URL-safe characters, the file's name too
_FILE_NAME = re.compile(r"[A-Za-z0-9_-]{24}\.json")
_FILE_OVERHEAD = 64 * 1024  # the task's fields beside the result, generously
_RECORD_VERSION = 1

# What a task that was working when the daemon stopped reports (EX_TEMPFAIL: try it again).
DAEMON_STOPPED_CODE = 75
DAEMON_STOPPED_MESSAGE = "the daemon stopped before the call finished"
RESULT_TOO_LARGE_CODE = INTERNAL_ERROR_CODE

# A call's result as the wire has it (a tool result's JSON object), and what runs a call.
ResultValue: TypeAlias = dict[str, Any]
TaskRun: TypeAlias = Callable[[ProgressSender], Awaitable[ResultValue]]
# Builds the result a failed task reports from an RPC error envelope.
ErrorResult: TypeAlias = Callable[[Mapping[str, Any]], ResultValue]


# The owner of a task read back from a file that names none: no caller's context is this.
_NOBODY = ""


def owner_context(credential: str | None, session_id: str | None) -> str:
    """The owner a task started under this credential gets: "loopback" with none (the loopback
    listener, stdio), "session:<SHA-256 of the id>" for a remote device's session, else the
    credential's kind ("bearer")."""
    if credential is None:
        return "loopback"
    if session_id is not None:
        return "session:" + hashlib.sha256(session_id.encode()).hexdigest()
    return credential


class TasksFullError(Exception):
    """Every place for a task is taken by one still working."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskLimits:
    """How long, how large and how many task results are kept."""

    default_ttl_ms: int = 60 * 60 * 1000  # an hour, when the client names none
    max_ttl_ms: int = 24 * 60 * 60 * 1000  # a day, whatever the client asks
    max_result_bytes: int = 1 << 20  # the result's JSON
    max_tasks: int = 32  # working and finished together
    poll_interval_ms: int = 1000  # what clients are told between two polls


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat().replace("+00:00", "Z")


def _wall(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        return None
    return value.timestamp()


class TaskState:
    """One task: its status, times, latest progress and, once finished, its result."""

    __slots__ = (
        "cancel_requested",
        "changed",
        "created",
        "done",
        "expires",
        "owner",
        "report",
        "report_seq",
        "result",
        "runner",
        "saving",
        "status",
        "status_message",
        "task_id",
        "ttl_ms",
        "updated",
    )

    def __init__(self, task_id: str, *, created: float, ttl_ms: int, owner: str) -> None:
        self.task_id = task_id
        self.owner = owner
        self.status: TaskStatus = "working"
        self.status_message: str | None = None
        self.created = self.updated = created  # wall clock, for the wire and the file
        self.ttl_ms = ttl_ms
        self.expires = math.inf  # monotonic: its time to live runs from when it finishes
        self.result: ResultValue | None = None
        self.report: tuple[float, float | None, str | None] | None = None
        self.report_seq = 0
        self.changed = asyncio.Event()
        self.done = asyncio.Event()
        self.cancel_requested = False
        self.runner: asyncio.Task[None] | None = None
        self.saving: asyncio.Future[None] | None = None

    @property
    def terminal(self) -> bool:
        """True once the task is completed, failed or cancelled."""
        return self.status in TERMINAL

    def wire(self, poll_interval_ms: int | None) -> dict[str, Any]:
        """Return the task as MCP's `Task` object (camelCase keys); `pollInterval` while it
        works, when given."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.updated),
            "ttl": self.ttl_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if not self.terminal and poll_interval_ms is not None:
            task["pollInterval"] = poll_interval_ms
        return task

    def _wake(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        """Keep the newest progress report and wake whoever forwards it."""
        if self.terminal:
            return
        self.report = (progress, total, message)
        self.report_seq += 1
        if message is not None:
            self.status_message = message
        elif total is not None:
            self.status_message = f"{progress:g} of {total:g}"
        else:
            self.status_message = f"{progress:g}"
        self.updated = time.time()
        self._wake()

    def finish(
        self, status: TaskStatus, result: ResultValue | None, message: str | None, now: float
    ) -> None:
        """Make the task terminal (once: a cancelled task stays cancelled)."""
        if self.terminal:
            return
        self.status = status
        self.result = result
        self.status_message = message
        self.updated = time.time()
        self.expires = now + self.ttl_ms / 1000
        self.done.set()
        self._wake()

    def record(self) -> bytes:
        """The task's file: its wire object and its result."""
        document = {
            "version": _RECORD_VERSION,
            "owner": self.owner,
            "task": self.wire(None),
            "result": self.result,
        }
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


class TaskStore:
    """The daemon's tasks: started, looked up, waited for, cancelled and, with a `directory`,
    kept across restarts (`load` reads them back)."""

    def __init__(
        self,
        directory: Path | None = None,
        *,
        limits: TaskLimits | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.directory = directory
        self.limits = limits or TaskLimits()
        self._log = logger or logging.getLogger("local_daemon")
        self._tasks: dict[str, TaskState] = {}
        self._background: set[asyncio.Future[None]] = set()
        self._closed = False

    # -- reading back -------------------------------------------------------------------------

    def load(self, error_result: ErrorResult) -> None:
        """Read the tasks a previous run left in `directory`: finished ones keep their result
        for what is left of their time to live; working ones are reported failed."""
        directory = self.directory
        if directory is None:
            return
        try:
            names = sorted(os.listdir(directory))
        except FileNotFoundError:
            return
        except OSError as exc:
            self._log.warning("tasks not read back: %s", exc.strerror or type(exc).__name__)
            return
        now_wall, now = time.time(), time.monotonic()
        for name in names:
            path = directory / name
            if name.startswith(".") and name.endswith(".tmp"):
                # A write cut short by a crash (write_atomic's temp file).
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            if not _FILE_NAME.fullmatch(name):
                continue
            task = self._read(path, error_result, now_wall, now)
            if task == "expired":
                with contextlib.suppress(OSError):
                    path.unlink()
            elif task is not None:  # a file it cannot trust stays as it is, unread
                self._tasks[task.task_id] = task
        # Past the count (the limit was lowered): the newest are kept.
        ordered = sorted(self._tasks.values(), key=lambda task: task.created, reverse=True)
        for task in ordered[self.limits.max_tasks :]:
            self._forget(task)

    def _read(
        self, path: Path, error_result: ErrorResult, now_wall: float, now: float
    ) -> TaskState | Literal["expired"] | None:
        read = read_safe_file(path, max_bytes=self.limits.max_result_bytes + _FILE_OVERHEAD)
        if isinstance(read, UnsafeFileError):
            self._log.warning("task file %s skipped: %s", path.name, read.problem)
            return None
        document = parse_json_document(read.data)
        if not isinstance(document, dict) or document.get("version") != _RECORD_VERSION:
            self._log.warning("task file %s skipped: not a task record", path.name)
            return None
        wire, result = document.get("task"), document.get("result")
        if not isinstance(wire, dict) or not (result is None or isinstance(result, dict)):
            self._log.warning("task file %s skipped: not a task record", path.name)
            return None
        task_id, status, ttl = wire.get("taskId"), wire.get("status"), wire.get("ttl")
        created, updated = _wall(wire.get("createdAt")), _wall(wire.get("lastUpdatedAt"))
        if (
            task_id != path.name[: -len(".json")]
            or status not in ("working", *TERMINAL)
            or isinstance(ttl, bool)
            or not isinstance(ttl, int)
            or not 0 < ttl <= self.limits.max_ttl_ms
            or created is None
            or updated is None
            or (status in TERMINAL and status != "cancelled" and result is None)
        ):
            self._log.warning("task file %s skipped: not a task record", path.name)
            return None
        owner = document.get("owner")
        task = TaskState(
            task_id,
            created=created,
            ttl_ms=ttl,
            owner=owner if isinstance(owner, str) and owner else _NOBODY,
        )
        if status == "working":
            # Its command died with the daemon; the file says so from now on.
            stopped = error_result(error_envelope(DAEMON_STOPPED_CODE, DAEMON_STOPPED_MESSAGE))
            task.finish("failed", stopped, DAEMON_STOPPED_MESSAGE, now)
            self._write_now(task)
            return task
        task.status = status
        task.result = result
        message = wire.get("statusMessage")
        task.status_message = message if isinstance(message, str) else None
        task.updated = updated
        task.done.set()
        # What is left of its time to live since it finished, by the wall clock; never more than
        # the whole of it (a clock stepped back), never less than nothing (stepped forward).
        left = min(max(updated + ttl / 1000 - now_wall, 0.0), ttl / 1000)
        task.expires = now + left
        return task if left > 0 else "expired"

    def _write_now(self, task: TaskState) -> None:
        try:
            self._write(task.task_id, task.record())
        except OSError as exc:
            self._log.warning("task state not saved: %s", exc.strerror or type(exc).__name__)

    # -- the store's own bookkeeping ----------------------------------------------------------

    def _write(self, task_id: str, data: bytes) -> None:
        assert self.directory is not None
        make_private_dir(self.directory)
        write_atomic(self.directory / f"{task_id}.json", data)

    def _remove_file(self, task_id: str) -> None:
        assert self.directory is not None
        with contextlib.suppress(FileNotFoundError):
            (self.directory / f"{task_id}.json").unlink()

    def _chain(self, task: TaskState, work: Callable[[], None]) -> asyncio.Future[None]:
        """Run `work` (a file write or removal) in a worker thread after the task's previous
        one, so its file goes through its states in order whoever is cancelled meanwhile."""
        previous = task.saving

        async def step() -> None:
            if previous is not None:
                with contextlib.suppress(BaseException):
                    await previous
            try:
                await run_in_command_thread(work)
            except OSError as exc:
                # The result stays in memory for this run; only a restart would lose it.
                self._log.warning("task state not saved: %s", exc.strerror or type(exc).__name__)

        future = asyncio.ensure_future(step())
        task.saving = future
        self._background.add(future)
        future.add_done_callback(self._background.discard)
        return future

    async def _save(self, task: TaskState) -> None:
        if self.directory is None:
            return
        data = task.record()
        # Shielded: a cancel of the caller still leaves the file written, in order.
        await asyncio.shield(self._chain(task, lambda: self._write(task.task_id, data)))

    def _forget(self, task: TaskState) -> None:
        self._tasks.pop(task.task_id, None)
        if self.directory is not None:
            _ = self._chain(task, lambda: self._remove_file(task.task_id))  # in the background

    def _sweep(self) -> None:
        now = time.monotonic()
        for task in [task for task in self._tasks.values() if task.expires <= now]:
            self._forget(task)

    # -- the protocol's operations ------------------------------------------------------------

    def ttl_for(self, requested: int | None) -> int:
        """The time to live a task gets: the client's, within the bounds, else the default."""
        if requested is None or requested <= 0:
            return self.limits.default_ttl_ms
        return min(requested, self.limits.max_ttl_ms)

    def start(
        self, run: TaskRun, *, ttl_ms: int | None, error_result: ErrorResult, owner: str
    ) -> TaskState:
        """Start `run` as a new task of `owner` and return it (working); raise
        `TasksFullError`."""
        if self._closed:
            raise TasksFullError
        self._sweep()
        if len(self._tasks) >= self.limits.max_tasks:
            finished = [task for task in self._tasks.values() if task.terminal]
            if not finished:
                raise TasksFullError
            self._forget(min(finished, key=lambda task: task.updated))
        task_id = secrets.token_urlsafe(_ID_BYTES)
        task = TaskState(task_id, created=time.time(), ttl_ms=self.ttl_for(ttl_ms), owner=owner)
        self._tasks[task_id] = task
        task.runner = asyncio.ensure_future(self._run(task, run, error_result))
        return task

    async def _run(self, task: TaskState, run: TaskRun, error_result: ErrorResult) -> None:
        async def report(progress: float, total: float | None, message: str | None) -> None:
            task.progressed(progress, total, message)

        try:
            await self._save(task)
            result = await run(report)
        except asyncio.CancelledError:
            if not task.cancel_requested:
                raise  # the daemon is closing: the file says working, a restart says failed
            task.finish("cancelled", None, "cancelled by the client", time.monotonic())
        except Exception as exc:
            self._log.error("task failed: %s", type(exc).__name__)
            failed = error_result(error_envelope(INTERNAL_ERROR_CODE, INTERNAL_ERROR_MESSAGE))
            task.finish("failed", failed, None, time.monotonic())
        else:
            encoded = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
            if len(encoded.encode()) > self.limits.max_result_bytes:
                message = (
                    f"the result is larger than a task keeps ({self.limits.max_result_bytes} bytes)"
                )
                too_large = error_result(error_envelope(RESULT_TOO_LARGE_CODE, message))
                task.finish("failed", too_large, message, time.monotonic())
            else:
                status: TaskStatus = "failed" if result.get("isError") else "completed"
                task.finish(status, result, None, time.monotonic())
        await self._save(task)

    def get(self, task_id: str, owner: str) -> TaskState | None:
        """Return the task `task_id` while it is kept, if `owner` started it (another's is
        None, as an unknown id is)."""
        self._sweep()
        task = self._tasks.get(task_id)
        if task is None or not owner or task.owner != owner:
            return None
        return task

    def tasks(self, owner: str | None = None) -> list[TaskState]:
        """Return the tasks kept that `owner` started (every one with None), newest first."""
        self._sweep()
        kept = [
            task
            for task in self._tasks.values()
            if owner is None or (owner and task.owner == owner)
        ]
        return sorted(kept, key=lambda task: task.created, reverse=True)

    def cancel(self, task: TaskState) -> None:
        """Cancel a working task: it is cancelled at once, and its command is stopped."""
        if task.terminal:
            return
        task.cancel_requested = True
        task.finish("cancelled", None, "cancelled by the client", time.monotonic())
        if task.runner is not None:
            task.runner.cancel()

    async def wait(self, task: TaskState, progress: ProgressSender | None = None) -> None:
        """Wait until `task` is terminal, sending each newer progress report to `progress`."""
        seen = 0
        while not task.done.is_set():
            changed = task.changed
            if progress is not None and task.report is not None and task.report_seq != seen:
                seen = task.report_seq
                await progress(*task.report)
                continue
            await changed.wait()

    async def close(self) -> None:
        """Stop every running command (their files still say working: a restart reports them
        failed) and wait for the files being written."""
        self._closed = True
        runners = [task.runner for task in self._tasks.values() if task.runner is not None]
        for runner in runners:
            runner.cancel()
        for task in self._tasks.values():
            # In memory only (whoever still waits is told it failed, with no result).
            task.finish("failed", None, DAEMON_STOPPED_MESSAGE, time.monotonic())
        await asyncio.gather(*runners, *self._background, return_exceptions=True)
