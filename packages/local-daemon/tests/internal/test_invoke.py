"""`invoke`: statuses, envelopes, format_error and worker threads for sync registries."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from local_daemon import CommandError, CommandInfo, FormattedError, UnknownCommandError
from local_daemon._invoke import INTERNAL_ERROR_CODE, Outcome, invoke

CANARY = "CANARY-invoke-5f1e-secret"
LOG = logging.getLogger("local_daemon")


class AsyncRegistry:
    def commands(self) -> Sequence[CommandInfo]:
        return ()

    async def invoke_command(self, name: str, args: Any, context: Any) -> Any:
        if name == "ok":
            return {"args": args, "context": context}
        if name == "unknown":
            raise UnknownCommandError(name)
        if name.startswith("code"):
            raise CommandError("refused", int(name[4:]))
        if name == "crash":
            raise RuntimeError(CANARY)
        if name == "unserialisable":
            return {"value": object()}
        raise AssertionError(name)


class SyncRegistry:
    def __init__(self) -> None:
        self.thread: threading.Thread | None = None

    def commands(self) -> Sequence[CommandInfo]:
        return ()

    def invoke_command(self, name: str, args: Any, context: Any) -> Any:
        self.thread = threading.current_thread()
        return name


async def run(name: str, **kw: Any) -> Outcome:
    return await invoke(
        AsyncRegistry(), name, {"a": 1}, "ctx", format_error=kw.get("format_error"), logger=LOG
    )


async def test_success_envelope() -> None:
    out = await run("ok")
    assert out == Outcome(
        status=200, envelope={"ok": True, "data": {"args": {"a": 1}, "context": "ctx"}}
    )
    # The text `/rpc` sends is the envelope itself, encoded once, compact.
    assert out.body == '{"ok":true,"data":{"args":{"a":1},"context":"ctx"}}'
    assert out.body is not None
    assert json.loads(out.body) == out.envelope


@pytest.mark.parametrize(("code", "status"), [(64, 400), (65, 400), (75, 429), (77, 403)])
async def test_command_error_statuses(code: int, status: int) -> None:
    out = await run(f"code{code}")
    assert out.status == status
    assert out.envelope == {"ok": False, "error": {"code": code, "message": "refused"}}


async def test_unknown_command_is_404() -> None:
    out = await run("unknown")
    assert out.status == 404
    assert out.envelope["error"]["code"] == 64


@pytest.mark.parametrize("name", ["crash", "unserialisable"])
async def test_anything_else_is_500_without_leak(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="local_daemon"):
        out = await run(name)
    assert out.status == 500
    assert out.envelope == {
        "ok": False,
        "error": {"code": INTERNAL_ERROR_CODE, "message": "internal error"},
    }
    assert CANARY not in caplog.text
    assert all(record.exc_info is None for record in caplog.records)
    assert caplog.records, "the failure is logged (by type)"


async def test_format_error_applies_and_status_follows_its_code() -> None:
    def fmt(exc: BaseException) -> FormattedError:
        return FormattedError(message=f"product says: {type(exc).__name__}", code=77)

    out = await run("crash", format_error=fmt)
    assert out.status == 403
    assert out.envelope == {
        "ok": False,
        "error": {"code": 77, "message": "product says: RuntimeError"},
    }
    unknown = await run("unknown", format_error=fmt)
    assert unknown.status == 404


async def test_failing_format_error_falls_back_without_leak(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def fmt(exc: BaseException) -> FormattedError:
        raise ValueError(CANARY)

    out = await run("crash", format_error=fmt)
    assert out.status == 500
    assert CANARY not in repr(out.envelope)
    assert CANARY not in caplog.text
    refused = await run("code75", format_error=fmt)
    assert refused.status == 429


async def test_sync_registry_runs_in_a_worker_thread() -> None:
    registry = SyncRegistry()
    out = await invoke(registry, "hello", {}, None, format_error=None, logger=LOG)
    assert out.envelope == {"ok": True, "data": "hello"}
    assert registry.thread is not None
    assert registry.thread is not threading.main_thread()


async def test_blocking_sync_registry_does_not_block_the_loop() -> None:
    release = threading.Event()

    class Blocking:
        def commands(self) -> Sequence[CommandInfo]:
            return ()

        def invoke_command(self, name: str, args: Any, context: Any) -> Any:
            assert release.wait(10)
            return "done"

    task = asyncio.ensure_future(invoke(Blocking(), "x", {}, None, format_error=None, logger=LOG))
    await asyncio.sleep(0.01)  # the loop keeps running while the command blocks
    assert not task.done()
    release.set()
    out = await asyncio.wait_for(task, 10)
    assert out.envelope["data"] == "done"
