"""One command call as every surface makes it: the registry call, the envelope and its HTTP status.

`/rpc` and MCP `tools/call` both go through `invoke`, so the envelope and exit codes are
identical across surfaces.

| Raised                          | Status | Envelope code                    |
|---------------------------------|--------|----------------------------------|
| `UnknownCommandError`           | 404    | 64                               |
| `CommandError(code=64)`         | 400    | 64 (usage error of the command)  |
| `CommandError(code=65)`         | 400    | 65                               |
| `CommandError(code=77)`         | 403    | 77                               |
| `CommandError(code=75)`         | 429    | 75                               |
| anything else                   | 500    | 70 (EX_SOFTWARE), fixed message  |

`format_error`, when given, maps every raised value to the envelope's message and code; the
status follows the code it returns (unknown commands stay 404).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from ._errors import CommandError, UnknownCommandError
from ._progress import CallScope, ProgressSender, enter_call, leave_call
from ._threads import run_in_command_thread
from ._types import CommandRegistry, ErrorFormatter, FormattedError

__all__ = [
    "INTERNAL_ERROR_CODE",
    "INTERNAL_ERROR_MESSAGE",
    "Outcome",
    "error_envelope",
    "failure_outcome",
    "invoke",
    "status_for_code",
]

INTERNAL_ERROR_CODE = 70  # sysexits EX_SOFTWARE: the command failed in a way it did not plan
INTERNAL_ERROR_MESSAGE = "internal error"

_STATUS_BY_CODE = {64: 400, 65: 400, 75: 429, 77: 403}


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """A finished command call: the HTTP status and the JSON envelope every surface answers."""

    status: int
    envelope: dict[str, Any]
    # The envelope as compact JSON when the call already encoded it, so `/rpc` encodes once.
    body: str | None = field(default=None, compare=False, repr=False)


def status_for_code(code: int) -> int:
    """Return the HTTP status for an envelope exit code (500 for any code a command cannot use)."""
    return _STATUS_BY_CODE.get(code, 500)


def error_envelope(code: int, message: str) -> dict[str, Any]:
    """Return the failure envelope `{"ok": false, "error": {"code", "message"}}`."""
    return {"ok": False, "error": {"code": code, "message": message}}


def _default_format(exc: BaseException) -> FormattedError:
    if isinstance(exc, CommandError):
        return FormattedError(message=exc.message, code=exc.code)
    return FormattedError(message=INTERNAL_ERROR_MESSAGE, code=INTERNAL_ERROR_CODE)


def _formatted(
    exc: BaseException, format_error: ErrorFormatter | None, logger: logging.Logger
) -> FormattedError:
    if format_error is None:
        return _default_format(exc)
    try:
        formatted = format_error(exc)
        message: object = getattr(formatted, "message", None)
        code: object = getattr(formatted, "code", None)
        if not isinstance(message, str) or isinstance(code, bool) or not isinstance(code, int):
            raise TypeError("format_error must return a FormattedError")
    except Exception as failure:
        # The formatter's own failure must not leak the original error either.
        logger.error("format_error failed: %s", type(failure).__name__)
        return _default_format(exc)
    return formatted


def failure_outcome(
    exc: BaseException, *, format_error: ErrorFormatter | None, logger: logging.Logger
) -> Outcome:
    """Return the outcome of a call that raised `exc` (logged by type only when unexpected)."""
    if not isinstance(exc, CommandError):
        # The type only: a message or traceback could carry argument values or secrets.
        logger.error("command failed: %s", type(exc).__name__)
    formatted = _formatted(exc, format_error, logger)
    status = 404 if isinstance(exc, UnknownCommandError) else status_for_code(formatted.code)
    return Outcome(status=status, envelope=error_envelope(formatted.code, formatted.message))


async def _call(registry: CommandRegistry, name: str, args: Any, context: Any) -> Any:
    method = registry.invoke_command
    if inspect.iscoroutinefunction(method):
        return await method(name, args, context)
    # A plain function may block: run it in a worker thread so the loop keeps serving.
    result = await run_in_command_thread(method, name, args, context)
    if inspect.isawaitable(result):
        return await result
    return result


async def _attempt(
    registry: CommandRegistry, name: str, args: Any, context: Any
) -> tuple[Any, Exception | None]:
    """The command's result, or the exception it failed with; a cancellation propagates."""
    try:
        return await _call(registry, name, args, context), None
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return None, exc


async def invoke(
    registry: CommandRegistry,
    name: str,
    args: Any,
    context: Any,
    *,
    format_error: ErrorFormatter | None,
    logger: logging.Logger,
    progress: ProgressSender | None = None,
) -> Outcome:
    """Run one command through `registry.invoke_command` and return its status and envelope.

    With `progress`, the call runs in a `CallScope` whose `Progress` reports through it
    (reports still pending are sent before this returns). Cancelling the call's `CancelFlag` is
    the registry's part (`Registry` sets it when this task is cancelled).
    """
    if progress is None:
        # The common case costs nothing more than it did before progress existed.
        data, failure = await _attempt(registry, name, args, context)
    else:
        scope = CallScope(progress)
        token = enter_call(scope)
        try:
            data, failure = await _attempt(registry, name, args, context)
            await scope.finish()
        except BaseException:
            scope.cancel()
            raise
        finally:
            leave_call(token)
    if failure is not None:
        return failure_outcome(failure, format_error=format_error, logger=logger)
    try:
        # Refuse a result that cannot be sent here, so every surface reports it the same way;
        # the text is kept so `/rpc` sends it without encoding the data a second time.
        encoded = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if not encoded.isascii():
            encoded.encode("utf-8")  # a lone surrogate cannot go out either
    except Exception as exc:
        return failure_outcome(exc, format_error=format_error, logger=logger)
    return Outcome(
        status=200, envelope={"ok": True, "data": data}, body=f'{{"ok":true,"data":{encoded}}}'
    )
