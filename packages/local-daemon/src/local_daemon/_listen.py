"""What both listeners share below HTTP: who may listen without a gate, time bounds, fd limits.

- The loopback listener has no credential, so it listens on loopback only unless the product opts
  in by name (`insecure_unauthenticated_host=True`); the remote listener serves other devices.
- Time bounds: a request head must arrive within `IDLE_TIMEOUT` (aiohttp's `keepalive_timeout`,
  set through the app's `handler_args`), a TLS handshake within `TLS_HANDSHAKE_TIMEOUT` (bodies:
  `_bodies`).
- Memory: each connection gets a small fixed kernel receive buffer (`limit_receive_buffer`), so
  what one connection pushes at the daemon before it is paused stays small.
- The remote listener accepts connections itself (`TlsAcceptor`): each handshake has a deadline,
  and at most `max_unauthenticated_connections()` connections that have not yet shown a credential
  are open at once; past that, a new connection is closed the moment it is accepted, so nobody
  outside can fill the fd table.
- Out of file descriptors, asyncio logs a traceback for every failed accept (and its retry loop
  makes that dozens a second); `AcceptErrorLog` turns that into one line a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import resource
import socket
import ssl
from collections.abc import Callable
from typing import Any

from aiohttp import web

from ._errors import RemoteBindError

__all__ = [
    "IDLE_TIMEOUT",
    "MAX_UNAUTHENTICATED",
    "RECEIVE_BUFFER",
    "SHUTDOWN_TIMEOUT",
    "TLS_HANDSHAKE_TIMEOUT",
    "AcceptErrorLog",
    "TlsAcceptor",
    "app_runner",
    "cancel_and_wait",
    "check_loopback_listener",
    "ip_literal",
    "is_loopback_host",
    "limit_receive_buffer",
    "max_unauthenticated_connections",
]

# A connection must deliver a whole request head within this many seconds of opening (or of the
# previous response), and an idle keep-alive connection closes after it. aiohttp's
# `keepalive_timeout` is both: its timer starts at `connection_made` and again after each
# response, and it fires whenever the connection is still waiting for a complete request.
IDLE_TIMEOUT = 5.0
# The kernel receive buffer of each accepted connection, in bytes (Linux doubles it for its own
# bookkeeping). asyncio reads up to 256 KiB at a time, so this bounds what one connection can
# hand the daemon before aiohttp pauses it: the autotuned default lets a few MiB wait in the
# kernel and a quarter of one into the process per connection, for anyone on the machine.
RECEIVE_BUFFER = 16 * 1024
# In-flight requests get this long to finish when the daemon closes (both listeners); then they
# are cancelled.
SHUTDOWN_TIMEOUT = 2.0
# A TLS client must finish its handshake within this many seconds of being accepted.
TLS_HANDSHAKE_TIMEOUT = 10.0
# ... and a TLS close_notify exchange within this many.
TLS_SHUTDOWN_TIMEOUT = 5.0
# At most this many remote connections without a credential at once (a quarter of the fd limit
# when that is lower), so the rest of the fd table stays for loopback, files and authenticated
# clients.
MAX_UNAUTHENTICATED = 256
# One log line per this many seconds while accepts keep failing (fd table full) or keep being
# refused (unauthenticated cap reached).
_LOG_EVERY = 60.0
_ASYNCIO_ACCEPT_MESSAGE = "socket.accept() out of system resource"
# After a failed accept, asyncio's selector loop stops reading the listener and re-adds it a
# second later (`call_later(ACCEPT_RETRY_DELAY, loop._start_serving, ...)`, CPython 3.11-3.13);
# closing the server does not cancel that timer, so one that fires after the listener closed
# fails on its fileno() of -1 ("Exception in callback ..._start_serving(...)", a ValueError).
_ASYNCIO_ACCEPT_RETRY = "._start_serving("


def ip_literal(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Return the address `text` spells exactly (an IPv4-mapped IPv6 one as IPv4), else None."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_loopback_host(host: str) -> bool:
    """Return True for `localhost` and for any loopback IP literal (127/8, ::1, mapped forms)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    address = ip_literal(host.strip("[]").split("%", 1)[0])
    return address is not None and address.is_loopback


def _refusal(what: str) -> RemoteBindError:
    return RemoteBindError(
        f"refusing to serve on {what}: it is not a loopback address, and the loopback listener "
        "has no credential, so anyone who can reach it could run every command. To serve other "
        "devices, use the remote listener (TLS behind the token-file gate: start_daemon("
        "remote=RemoteOptions(...)), or `local-daemon serve --remote-host ADDR --token-file "
        "FILE --tls-cert FILE --tls-key FILE`). To serve it anyway, opt in with "
        "insecure_unauthenticated_host=True (CLI: --insecure-unauthenticated-host)."
    )


def check_loopback_listener(
    host: str, sock: socket.socket | None, *, insecure_unauthenticated_host: bool
) -> None:
    """Refuse a non-loopback `host` (or inherited socket address) unless opted in by name."""
    if insecure_unauthenticated_host:
        return
    if sock is None:
        if not is_loopback_host(host):
            raise _refusal(f"host {host!r}")
        return
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return  # a Unix socket reaches this machine only
    bound = str(sock.getsockname()[0])
    if not is_loopback_host(bound):
        raise _refusal(f"the inherited socket's address {bound!r}")


async def cancel_and_wait(task: asyncio.Task[None] | None) -> None:
    """Cancel `task`, if any, and wait until it has finished."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def limit_receive_buffer(sock: socket.socket) -> None:
    """Give the connections `sock` accepts a small fixed receive buffer (`RECEIVE_BUFFER`)."""
    if sock.family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)


def max_unauthenticated_connections() -> int:
    """Return the cap on unauthenticated remote connections for this process's fd limit."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_UNAUTHENTICATED
    return max(4, min(MAX_UNAUTHENTICATED, soft // 4))


class _Throttled:
    """Log one line now and then about a condition that may repeat many times a second."""

    __slots__ = ("_log", "_next", "_suppressed")

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._next = 0.0
        self._suppressed = 0

    def __call__(self, now: float, message: str, *args: object) -> None:
        if now < self._next:
            self._suppressed += 1
            return
        if self._suppressed:
            message += " (%d more since the last such line)"
            args = (*args, self._suppressed)
        self._log.error(message, *args)
        self._next = now + _LOG_EVERY
        self._suppressed = 0


class AcceptErrorLog:
    """A loop exception handler: one line a minute for accepts failing for want of fds, and
    silence for asyncio's one-second accept retry when it fires after its listener closed.

    Everything else goes to the handler it replaced (or the loop's default). `uninstall()` puts
    that one back, unless someone installed another handler meanwhile.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, log: logging.Logger) -> None:
        self._loop = loop
        self._previous = loop.get_exception_handler()
        self._line = _Throttled(log)
        loop.set_exception_handler(self)

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if context.get("message") == _ASYNCIO_ACCEPT_MESSAGE and isinstance(exc, OSError):
            self._line(
                loop.time(),
                "cannot accept connections: %s; retrying every second",
                exc.strerror or type(exc).__name__,
            )
            return
        if isinstance(exc, ValueError) and _ASYNCIO_ACCEPT_RETRY in str(context.get("message")):
            return  # the accept retry of a listener closed since: nothing is left to serve
        if self._previous is not None:
            self._previous(loop, context)
        else:
            loop.default_exception_handler(context)

    def uninstall(self) -> None:
        """Restore the handler this one replaced."""
        if self._loop.get_exception_handler() is self:
            self._loop.set_exception_handler(self._previous)


class TlsAcceptor:
    """Accept TLS connections on `sock` for `protocol_factory` with a deadline and a cap.

    A connection counts as unauthenticated from its accept until `authenticated(protocol)` is
    called for it (the gate let one of its requests through) or it closes.
    """

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        ssl_context: ssl.SSLContext,
        *,
        logger: logging.Logger,
        cap: int | None = None,
        handshake_timeout: float = TLS_HANDSHAKE_TIMEOUT,
    ) -> None:
        self._sock = sock
        self._factory = protocol_factory
        self._ssl = ssl_context
        self._log = logger
        self.cap = max_unauthenticated_connections() if cap is None else cap
        self._handshake_timeout = handshake_timeout
        self._handshaking: set[asyncio.Task[None]] = set()
        # Established connections without a credential yet, by protocol (its `transport` turns
        # None once the connection is lost).
        self._unauthenticated: set[asyncio.BaseProtocol] = set()
        self._accept_failed = _Throttled(logger)
        self._cap_reached = _Throttled(logger)
        self._task: asyncio.Task[None] | None = None
        self.refused = 0

    def start(self) -> None:
        """Start accepting on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._accept_loop())

    def unauthenticated(self) -> int:
        """Return how many connections hold no credential yet (handshakes included)."""
        self._unauthenticated = {
            p for p in self._unauthenticated if getattr(p, "transport", None) is not None
        }
        return len(self._handshaking) + len(self._unauthenticated)

    def authenticated(self, protocol: asyncio.BaseProtocol | None) -> None:
        """Mark the connection of `protocol` as having shown a credential."""
        if protocol is not None:
            self._unauthenticated.discard(protocol)

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _addr = await loop.sock_accept(self._sock)
            except OSError as exc:
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue  # the client gave up before the accept
                # Out of fds (or anything else): one line a minute, one retry a second.
                self._accept_failed(
                    loop.time(),
                    "remote listener cannot accept connections: %s; retrying every second",
                    exc.strerror or type(exc).__name__,
                )
                await asyncio.sleep(1.0)
                continue
            if (
                len(self._handshaking) + len(self._unauthenticated) >= self.cap
                and self.unauthenticated() >= self.cap
            ):
                conn.close()
                self.refused += 1
                self._cap_reached(
                    loop.time(),
                    "remote listener: %d connections without a credential are open; "
                    "closing new ones until some finish",
                    self.cap,
                )
                continue
            task = loop.create_task(self._handshake(conn))
            self._handshaking.add(task)
            task.add_done_callback(self._handshaking.discard)

    async def _handshake(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        conn.setblocking(False)
        try:
            _transport, protocol = await loop.connect_accepted_socket(
                self._factory,
                conn,
                ssl=self._ssl,
                ssl_handshake_timeout=self._handshake_timeout,
                ssl_shutdown_timeout=TLS_SHUTDOWN_TIMEOUT,
            )
        except (TimeoutError, OSError):  # ssl.SSLError is an OSError
            conn.close()  # a failed or late handshake: the transport is closed already
            return
        except asyncio.CancelledError:
            conn.close()
            raise
        if getattr(protocol, "transport", None) is not None:
            self._unauthenticated.add(protocol)

    async def close(self) -> None:
        """Stop accepting, close the listening socket and abort handshakes in flight."""
        task, self._task = self._task, None
        await cancel_and_wait(task)
        self._sock.close()
        pending = list(self._handshaking)
        for handshake in pending:
            handshake.cancel()
        for handshake in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await handshake


async def app_runner(app: web.Application, **listener: float) -> web.AppRunner:
    """Set up `app`'s runner as each listener of the daemon runs it: no signal handlers of its
    own (the daemon has them), no access log, and `SHUTDOWN_TIMEOUT`'s grace, not aiohttp's 60 s
    (a request still running must not hold the daemon's close, and SIGTERM, for a minute).

    `listener` holds the listener's own `RequestHandler` timeouts (`keepalive_timeout`,
    `lingering_time`).
    """
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,
        shutdown_timeout=SHUTDOWN_TIMEOUT,
        **listener,  # type: ignore[arg-type]
    )
    await runner.setup()
    return runner
