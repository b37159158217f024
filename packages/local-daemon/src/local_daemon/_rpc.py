"""`POST /rpc/{name}`: the body cap, JSON parsing and the command call.

Checks apply in the spec's order (the guards ran before): 413 body over the cap, 404 unknown
command, 400 bad JSON (strict: no `NaN`, no number beyond a float, no lone surrogate, no nesting
too deep to parse) or arguments, then the command's own refusals (403, 429) and 500. A body that
is late (408) or finds the body budget spent (503) is answered by `_bodies`.

The body is never held beyond the cap (`_bodies.read_body`): a `Content-Length` over it is
refused (413) before a byte is read, a sized body is read into one buffer of its size, and a
chunked body is counted as it arrives and refused the moment it passes the cap. A
`Content-Length` that is not a number never reaches this code: aiohttp's HTTP parser answers it
400 and closes the connection, before anything is read (the spec asks for 413 there).
The 413 closes the connection; the server's lingering window (0.5 s under `start_daemon`)
discards whatever the client still sends, then the socket closes.

Progress, opt-in per request: with `Accept: text/event-stream`, a command's `Progress` reports
stream as `event: progress` server-sent events (`data: {"progress", "total"?, "message"?}`) and
the answer follows as one `event: result` whose data is the envelope, then the stream ends. The
stream begins with the first report, so a call that reports nothing (or is refused before it
runs) answers exactly as without the header, status and all; once it has begun the status is
200 and the envelope says how the call ended. Without the header, reports go nowhere. A client
that goes away cancels the call (the server cancels the handler on disconnect).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import hdrs, web

from ._bodies import (
    LINGERING_TIME,
    BodyIncompleteError,
    BodyTooLargeError,
    read_body,
)
from ._invoke import Outcome, error_envelope, failure_outcome, invoke
from ._json import NonFiniteNumberError, parse_json
from ._types import AUTH_RECORD_KEY, CommandRegistry, ContextFactory, ErrorFormatter

__all__ = [
    "DEFAULT_RPC_BODY_LIMIT",
    "LINGERING_TIME",
    "RpcBodyLimit",
    "envelope_response",
    "rpc_handler",
]

DEFAULT_RPC_BODY_LIMIT = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcBodyLimit:
    """The RPC body cap in bytes, with per-command caps keyed by command name."""

    max_bytes: int = DEFAULT_RPC_BODY_LIMIT
    per_command: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        caps = [self.max_bytes, *self.per_command.values()]
        if any(isinstance(cap, bool) or cap < 0 for cap in caps):
            raise ValueError("body caps must be non-negative integers")

    def cap_for(self, name: str) -> int:
        """Return the body cap that applies to command `name`."""
        return self.per_command.get(name, self.max_bytes)


_JSON_HEADERS = {
    hdrs.CONTENT_TYPE: "application/json; charset=utf-8",
    hdrs.CACHE_CONTROL: "no-store",
}


def envelope_response(outcome: Outcome) -> web.Response:
    """Return the JSON response for an outcome."""
    text = outcome.body
    if text is None:
        text = json.dumps(outcome.envelope, ensure_ascii=False, separators=(",", ":"))
    return web.Response(status=outcome.status, body=text.encode(), headers=_JSON_HEADERS)


def _too_large() -> web.Response:
    response = envelope_response(
        Outcome(status=413, envelope=error_envelope(64, "request body too large"))
    )
    # Ends keep-alive: after the lingering window the socket closes.
    response.force_close()
    return response


_EVENT_STREAM = "text/event-stream"
_STREAM_HEADERS = {
    hdrs.CONTENT_TYPE: _EVENT_STREAM,
    hdrs.CACHE_CONTROL: "no-store",
    "X-Accel-Buffering": "no",
}


class _ProgressStream:
    """A streamed `/rpc` answer: progress events as they come, then the envelope."""

    __slots__ = ("request", "response")

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None

    async def send(self, progress: float, total: float | None, message: str | None) -> None:
        response = self.response
        if response is None:
            response = web.StreamResponse(status=200, headers=_STREAM_HEADERS)
            await response.prepare(self.request)
            self.response = response
        event: dict[str, Any] = {"progress": progress}
        if total is not None:
            event["total"] = total
        if message is not None:
            event["message"] = message
        data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        await response.write(b"event: progress\ndata: " + data.encode() + b"\n\n")

    async def answer(self, outcome: Outcome) -> web.StreamResponse:
        response = self.response
        if response is None:
            return envelope_response(outcome)
        text = outcome.body
        if text is None:
            text = json.dumps(outcome.envelope, ensure_ascii=False, separators=(",", ":"))
        await response.write(b"event: result\ndata: " + text.encode() + b"\n\n")
        await response.write_eof()
        return response


_NOT_JSON = "request body is not valid JSON"
_NOT_A_FLOAT = "request body holds a number beyond the range of a float"


def _bad_json(registry: CommandRegistry, name: str, message: str) -> web.Response:
    if not _known(registry, name):
        return envelope_response(
            Outcome(status=404, envelope=error_envelope(64, f"unknown command: {name}"))
        )
    return envelope_response(Outcome(status=400, envelope=error_envelope(65, message)))


def _known(registry: CommandRegistry, name: str) -> bool:
    try:
        return any(info.name == name for info in registry.commands())
    except Exception:
        return True  # cannot tell: let the call decide


def rpc_handler(
    *,
    registry: CommandRegistry,
    create_context: ContextFactory | None,
    format_error: ErrorFormatter | None,
    body_limit: RpcBodyLimit,
    logger: logging.Logger,
    gated: bool,
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Return the `/rpc/{name}` handler."""

    async def handle(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        try:
            raw = await read_body(request, body_limit.cap_for(name))
        except BodyTooLargeError:
            return _too_large()
        except BodyIncompleteError:
            return _bad_json(registry, name, _NOT_JSON)
        args: Any
        try:
            args = {} if not raw or raw.isspace() else parse_json(raw)
        except NonFiniteNumberError as exc:
            return _bad_json(registry, name, _NOT_JSON if exc.literal else _NOT_A_FLOAT)
        except (ValueError, RecursionError):  # UnicodeError is a ValueError
            return _bad_json(registry, name, _NOT_JSON)
        del raw  # the command may run long: its arguments are all it keeps of the body
        auth = request.get(AUTH_RECORD_KEY)
        if gated and auth is None:
            # A gated app never builds a context without the gate's record.
            return envelope_response(
                Outcome(status=401, envelope=error_envelope(77, "sign-in required"))
            )
        context: Any = None
        if create_context is not None:
            try:
                context = create_context("http", auth)
            except Exception as exc:
                return envelope_response(
                    failure_outcome(exc, format_error=format_error, logger=logger)
                )
        if _EVENT_STREAM not in request.headers.get(hdrs.ACCEPT, ""):
            outcome = await invoke(
                registry, name, args, context, format_error=format_error, logger=logger
            )
            return envelope_response(outcome)
        stream = _ProgressStream(request)
        outcome = await invoke(
            registry,
            name,
            args,
            context,
            format_error=format_error,
            logger=logger,
            progress=stream.send,
        )
        return await stream.answer(outcome)

    return handle
