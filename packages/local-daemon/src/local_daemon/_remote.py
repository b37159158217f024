"""The remote listener: a TLS-only second listener on a non-loopback address, behind the gate.

`check_remote_options` refuses every bad option and every bad token or TLS file before anything
binds; `open_remote_listener` reads the files again, binds, serves the app the caller builds around
the gate, and keeps the certificate pair fresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from local_daemon._auth import DaemonAuth, create_daemon_auth
from local_daemon._errors import RemoteBindError, TlsFileError
from local_daemon._listen import (
    IDLE_TIMEOUT,
    TlsAcceptor,
    app_runner,
    cancel_and_wait,
    ip_literal,
    is_loopback_host,
)
from local_daemon._types import AUTH_RECORD_KEY

if TYPE_CHECKING:
    from local_daemon._tls import CheckedPair

__all__ = [
    "RemoteListener",
    "RemoteOptions",
    "TlsFiles",
    "check_remote_options",
    "open_remote_listener",
    "remote_allowlist",
]

_log = logging.getLogger("local_daemon")


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsFiles:
    """The remote listener's PEM certificate chain and private key."""

    cert_file: str | os.PathLike[str]
    key_file: str | os.PathLike[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteOptions:
    """The second, TLS-only listener: a bare IP literal, the token file and the TLS pair."""

    host: str
    token_file: str | os.PathLike[str]
    tls: TlsFiles
    allowed_hosts: tuple[str, ...] = ()
    sign_in_hint: str | None = None
    tls_reload: float = 60.0


def _check_address(host: object) -> None:
    if not isinstance(host, str) or not host:
        raise RemoteBindError("remote.host must be a bare IP literal")
    address = ip_literal(host)
    if address is None:
        raise RemoteBindError(f"remote.host {host!r} is not a bare IP literal; names are refused")
    if address.is_unspecified:
        raise RemoteBindError(
            f"remote.host {host!r} is a wildcard address; name one interface address"
        )
    if address.is_loopback:
        raise RemoteBindError(
            f"remote.host {host!r} is a loopback address; the loopback listener serves it"
        )
    if address.is_multicast:
        raise RemoteBindError(f"remote.host {host!r} is a multicast address")


def _is_bare_name(name: object) -> bool:
    if not isinstance(name, str) or not name:
        return False
    if ip_literal(name.strip("[]")) is not None:
        return True
    return not any(char in name for char in "/:@[] \t\r\n")


def _check_shape(remote: RemoteOptions) -> None:
    # Typed as objects: callers without a type checker pass None, a bare string, and so on.
    tls: object = remote.tls
    allowed: object = remote.allowed_hosts
    reload: object = remote.tls_reload
    if not isinstance(tls, TlsFiles):
        raise RemoteBindError("remote.tls is required: the remote listener speaks TLS only")
    if not isinstance(allowed, tuple | list) or not all(_is_bare_name(name) for name in allowed):
        raise RemoteBindError("remote.allowed_hosts must be a tuple of bare host names, no ports")
    if isinstance(reload, bool) or not isinstance(reload, int | float) or not reload > 0:
        raise RemoteBindError("remote.tls_reload must be a positive number of seconds")


def check_remote_options(remote: RemoteOptions, *, loopback_host: str) -> None:
    """Refuse bad remote options and bad token or TLS files before anything binds."""
    _check_shape(remote)
    _check_address(remote.host)
    if not is_loopback_host(loopback_host):
        raise RemoteBindError(
            f"host {loopback_host!r} is not loopback: an unauthenticated listener beside the "
            "remote one would bypass the gate"
        )
    # cryptography's x509 costs a noticeable import; only a daemon with a remote pays for it.
    from local_daemon._tls import check_tls_pair

    create_daemon_auth(remote.token_file, sign_in_hint=remote.sign_in_hint)
    check_tls_pair(remote.tls.cert_file, remote.tls.key_file, names=tuple(remote.allowed_hosts))


def _host_form(name: str) -> str:
    bare = name.strip("[]")
    address = ip_literal(bare)
    if address is None:
        return name.lower().rstrip(".")
    try:
        v6 = ipaddress.IPv6Address(bare)
    except ValueError:
        return str(address)
    return f"[{v6.compressed}]"


def remote_allowlist(remote: RemoteOptions, port: int) -> tuple[frozenset[str], frozenset[str]]:
    """Return the remote app's Host and Origin allowlists: bound port only, https origins only."""
    hosts: set[str] = set()
    for name in (remote.host, *remote.allowed_hosts):
        form = _host_form(name)
        hosts.add(f"{form}:{port}")
        if port == 443:
            # Browsers leave the default port out of Host and Origin; it is still the bound port.
            hosts.add(form)
    origins = frozenset(f"https://{host}" for host in hosts)
    return frozenset(hosts), origins


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise RemoteBindError(f"port {port} is already in use on {host}") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise RemoteBindError(f"address {host} is not available on this machine") from None
        raise RemoteBindError(f"cannot bind {host}:{port} ({exc.strerror})") from None
    return sock


class RemoteListener:
    """A bound remote listener: its port, its gate, and `close()`."""

    __slots__ = (
        "_acceptor",
        "_last_failure",
        "_log",
        "_pair",
        "_reload_task",
        "_remote",
        "_runner",
        "auth",
        "port",
        "ssl_context",
    )

    def __init__(
        self,
        *,
        remote: RemoteOptions,
        runner: web.AppRunner,
        acceptor: TlsAcceptor,
        auth: DaemonAuth,
        port: int,
        ssl_context: ssl.SSLContext,
        pair: CheckedPair,
        logger: logging.Logger,
    ) -> None:
        self._log = logger
        self._acceptor = acceptor
        self._remote = remote
        self._runner = runner
        self.auth = auth
        self.port = port
        self.ssl_context = ssl_context
        self._pair = pair
        self._last_failure: tuple[object, str] | None = None
        self._reload_task: asyncio.Task[None] | None = None

    def _start_reloading(self) -> None:
        self._reload_task = asyncio.get_running_loop().create_task(self._reload_loop())

    async def _reload_loop(self) -> None:
        while True:
            await asyncio.sleep(self._remote.tls_reload)
            self.reload_tls()

    def reload_tls(self) -> bool:
        """Re-check the TLS pair now; load it when it changed and passes. True when it loaded."""
        from local_daemon._tls import check_tls_pair, load_pair_into, pair_signature

        tls = self._remote.tls
        signature = pair_signature(tls.cert_file, tls.key_file)
        if signature == self._pair.signature and self._last_failure is None:
            return False
        try:
            pair = check_tls_pair(
                tls.cert_file, tls.key_file, names=tuple(self._remote.allowed_hosts)
            )
            if pair.signature != signature:
                # Changed while being read: take it on the next tick, once it has settled.
                raise TlsFileError("TLS files changed while being read", problem="changing")
            load_pair_into(self.ssl_context, pair)
        except TlsFileError as exc:
            failure = (signature, exc.problem)
            if failure != self._last_failure:
                self._log.error(
                    "remote TLS pair refused, the last good pair keeps serving: %s", exc
                )
            self._last_failure = failure
            with contextlib.suppress(TlsFileError):
                # A failed load may leave the context half-updated; put the good pair back.
                load_pair_into(self.ssl_context, self._pair)
            return False
        if pair.signature == self._pair.signature and pair.cert_pem == self._pair.cert_pem:
            self._last_failure = None
            return False
        self._pair = pair
        self._last_failure = None
        self._log.info("remote TLS pair reloaded; valid until %s", pair.not_after.isoformat())
        return True

    @property
    def acceptor(self) -> TlsAcceptor:
        """Return the accept loop: its cap on unauthenticated connections and their count."""
        return self._acceptor

    async def close(self) -> None:
        """Stop the reload task and close the listener and its open connections."""
        task, self._reload_task = self._reload_task, None
        await cancel_and_wait(task)
        try:
            await self._acceptor.close()
        finally:
            await self._runner.cleanup()


async def open_remote_listener(
    *,
    remote: RemoteOptions,
    port: int,
    build_app: Callable[[DaemonAuth, frozenset[str], frozenset[str]], web.Application],
    logger: logging.Logger | None = None,
    sessions_file: str | os.PathLike[str] | None = None,
) -> RemoteListener:
    """Check the token and TLS files, bind `remote.host:port` with TLS and serve the gated app.

    Sessions go to `sessions_file` (default: beside the token file; `start_daemon` passes
    `sessions.json` in its state dir).
    """
    from local_daemon._tls import check_tls_pair, new_server_context

    _check_shape(remote)
    auth = create_daemon_auth(
        remote.token_file, sign_in_hint=remote.sign_in_hint, sessions_file=sessions_file
    )
    pair = check_tls_pair(
        remote.tls.cert_file, remote.tls.key_file, names=tuple(remote.allowed_hosts)
    )
    context = new_server_context(pair)
    sock = _bind(remote.host, port)
    bound_port = int(sock.getsockname()[1])
    log = logger or _log
    acceptors: list[TlsAcceptor] = []

    @web.middleware
    async def credential_seen(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        # Runs after the gate: a request carrying its record showed a good credential, so its
        # connection no longer counts against the cap on unauthenticated ones.
        if AUTH_RECORD_KEY in request:
            acceptors[0].authenticated(request.protocol)
        return await handler(request)

    try:
        hosts, origins = remote_allowlist(remote, bound_port)
        app = build_app(auth, hosts, origins)
        app.middlewares.append(credential_seen)
        # The request-head bound holds whatever app `build_app` made (the daemon's carries it
        # in its handler_args too).
        runner = await app_runner(app, keepalive_timeout=IDLE_TIMEOUT)
    except BaseException:
        sock.close()
        raise
    server = runner.server
    assert server is not None  # set by setup()
    # Accepted here, not by a SockSite: aiohttp gives a site no TLS handshake deadline and no
    # connection cap.
    acceptor = TlsAcceptor(sock, server, context, logger=log)
    acceptors.append(acceptor)
    acceptor.start()
    listener = RemoteListener(
        remote=remote,
        runner=runner,
        acceptor=acceptor,
        auth=auth,
        port=bound_port,
        ssl_context=context,
        pair=pair,
        logger=log,
    )
    listener._start_reloading()
    return listener
