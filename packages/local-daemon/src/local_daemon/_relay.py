"""The stdio-to-`/mcp` relay of `mcp-stdio --attach`: one agent session, one shared daemon.

Both ends are the `mcp` SDK's own transports: `stdio_server` reads and writes this process's
stdin and stdout, `streamable_http_client` posts to the daemon's loopback `/mcp`. The relay moves
JSON-RPC messages between them as they come (requests, responses, notifications, both ways), so
a progress notification the daemon streams reaches the agent as it is sent. The protocol is never
written here; what the relay adds is what an HTTP client adds to the messages a stdio client
sends: the `MCP-Protocol-Version` header after `initialize` (and, for the per-request envelope of
the 2026 wire, its `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers, computed with the SDK's
own helpers), and `x-local-client` (the relay is a local non-browser client; it sends no Origin).
Loopback needs no credential, so the relay reads no token.

It ends when stdin closes (after the answers still owed), or, with a clear line, when the daemon
goes away: its pid exits (a pidfd, polled where there is none) or its `/mcp` stops answering.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Mapping
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
    find_invalid_x_mcp_header,
    mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage

from ._attach import AttachTarget
from ._headers import CLIENT_HEADER
from ._process import is_process_alive

__all__ = ["RELAY_CLIENT_NAME", "RelayEnd", "relay_stdio", "run_relay"]

RELAY_CLIENT_NAME = "local-daemon-mcp-stdio"
RelayEnd = Literal["closed", "lost"]

_log = logging.getLogger("local_daemon")
_PID_POLL = 0.5  # seconds, only where pidfd_open is missing
_READ_SIZE = 65536
_STDIN_BACKLOG = 16


class _DaemonLost(Exception):
    """The daemon's `/mcp` stopped answering, or its process ended."""


class _Session:
    """What the relay learns from the traffic: the answers owed and the headers to stamp."""

    def __init__(self) -> None:
        self.owed: set[types.RequestId] = set()
        self.methods: dict[types.RequestId, str] = {}
        self.version: str | None = None  # negotiated by `initialize` (the handshake wire)
        self.param_headers: dict[str, dict[tuple[str, ...], str]] = {}  # tool -> x-mcp-header

    def outbound(self, message: types.JSONRPCMessage) -> dict[str, str]:
        """Note a message from the client; return the HTTP headers it travels with."""
        headers: dict[str, str] = {}
        if self.version is not None:
            headers[MCP_PROTOCOL_VERSION_HEADER] = self.version
        if isinstance(message, types.JSONRPCRequest):
            self.owed.add(message.id)
            self.methods[message.id] = message.method
            params: Mapping[str, Any] = message.params or {}
            meta = params.get("_meta")
            modern = meta.get(types.PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
            if isinstance(modern, str):
                # The per-request envelope: the HTTP wire repeats it in headers the server checks.
                headers[MCP_PROTOCOL_VERSION_HEADER] = modern
                headers[MCP_METHOD_HEADER] = message.method
                name_key = NAME_BEARING_METHODS.get(message.method)
                name = params.get(name_key) if name_key is not None else None
                if isinstance(name, str):
                    headers[MCP_NAME_HEADER] = encode_header_value(name)
                if message.method == "tools/call" and isinstance(name, str):
                    arguments = params.get("arguments")
                    header_map = self.param_headers.get(name)
                    if header_map and isinstance(arguments, dict):
                        headers.update(mcp_param_headers(header_map, arguments))
        return headers

    def inbound(self, message: types.JSONRPCMessage) -> None:
        """Note a message from the daemon."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return
        if message.id is None:
            return
        self.owed.discard(message.id)
        method = self.methods.pop(message.id, None)
        if not isinstance(message, types.JSONRPCResponse):
            return
        result = message.result
        if method == "initialize":
            version = result.get("protocolVersion")
            if isinstance(version, str):
                self.version = version
        elif method == "tools/list":
            for tool in result.get("tools") or ():
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    schema = tool.get("inputSchema")
                    if find_invalid_x_mcp_header(schema) is None:
                        self.param_headers[tool["name"]] = x_mcp_header_map(schema)


class _StdinLines:
    """This process's stdin as lines, read by a daemon thread from a duplicate of fd 0.

    The SDK's own reader runs each read in a worker thread the event loop must wait for, so a
    relay whose daemon went away would hang until the agent wrote again. A daemon thread is
    never waited for, and raw `os.read` holds no lock that interpreter shutdown could need. Lines
    cross to the loop as plain callbacks (no task that a closing loop would have to cancel); a
    semaphore bounds how many wait there.
    """

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[str](math.inf)
        self._slots = threading.BoundedSemaphore(_STDIN_BACKLOG)

    def start(self) -> None:
        """Start reading (from the event loop's thread)."""
        token = anyio.lowlevel.current_token()
        fd = os.dup(0)
        threading.Thread(target=self._pump, args=(fd, token), daemon=True).start()

    def _pump(self, fd: int, token: anyio.lowlevel.EventLoopToken) -> None:
        def hand_over(raw: bytes) -> None:
            self._slots.acquire()
            line = raw.decode("utf-8", "replace")
            anyio.from_thread.run_sync(self._send.send_nowait, line, token=token)

        pending = b""
        try:
            while chunk := os.read(fd, _READ_SIZE):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    hand_over(line)
            if pending:
                hand_over(pending)
            anyio.from_thread.run_sync(self._send.close, token=token)
        except Exception:  # noqa: S110 - stdin failed, or the relay (or its loop) already ended
            pass
        finally:
            os.close(fd)

    def close(self) -> None:
        """End the lines now (from the loop): the SDK's reader stops waiting for the next one."""
        self._send.close()

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
        self._slots.release()
        return line


async def _wait_exit(pid: int) -> None:
    """Return when process `pid` has ended."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):
        while True:  # no pidfd: look again every _PID_POLL seconds for as long as it lives
            if not is_process_alive(pid):
                return
            await anyio.sleep(_PID_POLL)
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def _quiet_sdk_loggers() -> None:
    # The SDK logs transport failures with tracebacks, which could hold message contents; the
    # relay reports what matters in its own one line.
    for name in ("mcp", "httpx2", "httpcore2"):
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


async def relay_stdio(target: AttachTarget) -> RelayEnd:
    """Relay MCP between stdin/stdout and `target`'s `/mcp` until stdin closes or it goes away."""
    _quiet_sdk_loggers()
    session = _Session()
    stdin_closed = False
    lost = False
    client = create_mcp_http_client(headers={CLIENT_HEADER: RELAY_CLIENT_NAME})
    stdin_lines = _StdinLines()
    stdin_lines.start()
    async with (
        client,
        stdio_server(stdin=stdin_lines) as (agent_in, agent_out),  # type: ignore[arg-type]
        agent_out,  # closed on the way out, so the SDK's stdout writer ends
    ):
        try:
            async with (
                streamable_http_client(
                    target.url, http_client=client, terminate_on_close=False
                ) as (daemon_in, daemon_out),
                anyio.create_task_group() as group,
            ):

                def finish_if_done() -> None:
                    if stdin_closed and not session.owed:
                        group.cancel_scope.cancel()

                async def upstream() -> None:
                    nonlocal stdin_closed
                    async for item in agent_in:
                        if isinstance(item, Exception):
                            _log.warning("mcp-stdio: skipped a line that is not a JSON-RPC message")
                            continue
                        headers = session.outbound(item.message)
                        metadata = ClientMessageMetadata(headers=headers) if headers else None
                        await daemon_out.send(SessionMessage(item.message, metadata=metadata))
                    stdin_closed = True
                    finish_if_done()

                async def downstream() -> None:
                    nonlocal lost
                    async for item in daemon_in:
                        if isinstance(item, Exception):
                            _log.warning("mcp-stdio: dropped a malformed message from the daemon")
                            continue
                        message = item.message
                        if (
                            isinstance(message, types.JSONRPCError)
                            and message.error.code == types.CONNECTION_CLOSED
                            and not await _answers(target)
                        ):
                            break  # the daemon is gone: its stand-in error is sent below
                        session.inbound(message)
                        await agent_out.send(SessionMessage(message))
                        finish_if_done()
                    lost = True  # the transport ended, or the daemon stopped answering
                    group.cancel_scope.cancel()

                async def watch() -> None:
                    nonlocal lost
                    await _wait_exit(target.pid)
                    lost = True
                    group.cancel_scope.cancel()

                group.start_soon(upstream)
                group.start_soon(downstream)
                group.start_soon(watch)
        except Exception as exc:
            if not _connection_failure(exc):
                raise
            lost = True
        stdin_lines.close()
        async for _ in agent_in:
            pass  # what the SDK's reader still holds, so that it reaches the end of the lines
        if lost:
            # Every call still open fails now, as the SDK's own transports fail a dead server's.
            for request_id in list(session.owed):
                gone = types.ErrorData(code=types.CONNECTION_CLOSED, message="the daemon went away")
                reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=gone)
                await agent_out.send(SessionMessage(reply))
    return "lost" if lost else "closed"


async def _answers(target: AttachTarget) -> bool:
    from ._health import probe_health

    document = await anyio.to_thread.run_sync(
        lambda: probe_health(target.port, host=target.host, timeout=1.0)
    )
    return document is not None and document.get("pid") == target.pid


def run_relay(target: AttachTarget) -> RelayEnd:
    """Run `relay_stdio` on a fresh event loop; `lost` when the daemon went away.

    The agent closing its end of stdout is an end like stdin closing (`closed`).
    """
    try:
        return anyio.run(relay_stdio, target)
    except Exception as exc:
        if _only(exc, (BrokenPipeError, ConnectionResetError)):
            return "closed"
        raise


def _only(exc: BaseException, kinds: type[BaseException] | tuple[type[BaseException], ...]) -> bool:
    """True when `exc` is one of `kinds`, or a group of nothing else."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only(inner, kinds) for inner in exc.exceptions)
    return isinstance(exc, kinds)


def _connection_failure(exc: BaseException) -> bool:
    import httpx2

    return _only(exc, httpx2.TransportError)
