"""`start_daemon`, `DaemonHandle` and `run_daemon_until_signal`: the daemon's lifecycle.

stopped -> starting (state dir locked, bound; `/health` answers 503) -> ready (pid file written)
-> stopped (`close()`: watcher stopped, event streams ended, sockets closed, pid and metadata
files removed only while they name this process, lock released). A second daemon on a locked
state dir is refused before it binds or writes anything. Whatever a start made is pushed on one
`AsyncExitStack`: a failed start unwinds it all, and `close()` unwinds the same stack. With
`remote`, both listeners start or neither does. Nothing here ever exits the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import inspect
import logging
import os
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec

from aiohttp import web

from ._app import Lifecycle, build_app
from ._config import MAX_WATCH_DEBOUNCE, AppOptions, DaemonConfig
from ._errors import DaemonPortInUseError, WatchRootError
from ._events import EventHub, change_event_data
from ._guards import Guards
from ._listen import (
    AcceptErrorLog,
    app_runner,
    check_loopback_listener,
    is_loopback_host,
    limit_receive_buffer,
)
from ._pidfile import (
    DaemonPaths,
    daemon_paths,
    discard_state_files,
    lock_state_dir,
    write_pid_file,
)
from ._rpc import LINGERING_TIME, RpcBodyLimit
from ._threads import busy_command_threads
from ._types import CommandRegistry, ContextFactory, ErrorFormatter, HealthFn, MountRoutes
from ._watch import watch_tree

_P = ParamSpec("_P")

if TYPE_CHECKING:
    from ._auth import DaemonAuth
    from ._remote import RemoteOptions

__all__ = ["DaemonHandle", "run_daemon_until_signal", "start_daemon"]

_log = logging.getLogger("local_daemon")

_BACKLOG = 128


class DaemonHandle:
    """A running daemon: its bound `port`, its `paths`, and `await close()`."""

    def __init__(
        self,
        *,
        port: int,
        paths: DaemonPaths,
        hub: EventHub,
        resources: contextlib.AsyncExitStack,
        pid: int,
    ) -> None:
        self.port = port
        self.paths = paths
        self.hub = hub
        self._resources = resources
        self._pid = pid
        self._closed = False

    async def close(self) -> None:
        """Stop the watcher, end event streams, close the listeners, release pid file and lock.

        Each goes in the reverse order `start_daemon` made it: the unwinding a failed start does.
        """
        if self._closed:
            return
        self._closed = True
        await self._resources.aclose()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if sys.platform != "win32":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(_BACKLOG)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise DaemonPortInUseError(port, host) from None
        raise
    return sock


def _inherited(fd: int) -> socket.socket:
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    return sock


async def start_daemon(
    *,
    registry: CommandRegistry,
    version: str,
    state_dir: str | os.PathLike[str],
    port: int = 0,
    host: str = "127.0.0.1",
    create_context: ContextFactory | None = None,
    tool_prefix: str | None = None,
    watch_root: str | os.PathLike[str] | None = None,
    watch_debounce: float = 0.05,
    health: HealthFn | None = None,
    mount_routes: MountRoutes | None = None,
    guards: Guards | None = None,
    rpc_body_limit: RpcBodyLimit | None = None,
    remote: RemoteOptions | None = None,
    listen_fd: int | None = None,
    format_error: ErrorFormatter | None = None,
    logger: logging.Logger | None = None,
    insecure_unauthenticated_host: bool = False,
    openapi: bool = False,
) -> DaemonHandle:
    """Bind, serve, start the watcher, then write the pid file; return the running daemon.

    The loopback listener has no credential: a non-loopback `host` (or inherited socket) is
    refused with `RemoteBindError` unless `insecure_unauthenticated_host=True`; `remote` is the
    way to serve other devices. `openapi=True` serves `GET /openapi.json` (on the remote listener
    too, behind its gate).
    """
    if not 0 <= watch_debounce <= MAX_WATCH_DEBOUNCE:  # NaN too
        raise ValueError(f"watch_debounce must be 0 to {MAX_WATCH_DEBOUNCE:g} seconds")
    config = DaemonConfig(
        app=AppOptions.of(locals()),
        state_dir=Path(state_dir),
        port=port,
        host=host,
        watch_root=None if watch_root is None else Path(watch_root),
        watch_debounce=watch_debounce,
        remote=remote,
        listen_fd=listen_fd,
        insecure_unauthenticated_host=insecure_unauthenticated_host,
    )
    return await _start(config)


async def _start(config: DaemonConfig) -> DaemonHandle:
    options = config.app
    log = options.logger
    host = config.host
    listen_fd = config.listen_fd
    remote = config.remote
    insecure = config.insecure_unauthenticated_host
    if listen_fd is None:
        check_loopback_listener(host, None, insecure_unauthenticated_host=insecure)
    if remote is not None:
        from ._remote import check_remote_options

        check_remote_options(remote, loopback_host=host)
    if config.watch_root is not None:
        _check_watch_root(config.watch_root)
    paths = daemon_paths(config.state_dir)
    pid = os.getpid()
    # Everything the start makes is pushed here as it is made; a failure anywhere unwinds it all
    # in reverse (no socket, no pid or metadata file, no lock is left), and on success the stack
    # moves into the handle, whose close() unwinds the same way.
    async with contextlib.AsyncExitStack() as made:
        # First, so a second daemon on this state dir stops here having touched nothing.
        made.callback(lock_state_dir(paths).release)
        made.callback(discard_state_files, paths, pid)
        if listen_fd is not None:
            sock = _inherited(listen_fd)
            made.callback(sock.close)  # idempotent; the runner's cleanup closes it once served
            check_loopback_listener(host, sock, insecure_unauthenticated_host=insecure)
        else:
            sock = _bind(host, config.port)
            made.callback(sock.close)
        limit_receive_buffer(sock)
        sockname = sock.getsockname()
        bound_port = int(sockname[1])
        bound_host = host if listen_fd is None else str(sockname[0])
        lifecycle = Lifecycle(ready=False, port=bound_port, started=time.monotonic())
        hub = EventHub(logger=log)
        tasks = None
        if options.tool_prefix is not None:
            # `/mcp`'s tasks, kept in the state dir across restarts (both listeners share them).
            from ._mcp_tasks import open_task_store
            from ._tasks import TASKS_DIR_NAME

            tasks = open_task_store(paths.state_dir / TASKS_DIR_NAME, logger=log)
        app = build_app(
            options, hub=hub, lifecycle=lifecycle, port=bound_port, host=bound_host, tasks=tasks
        )
        # Out of fds, asyncio would log a traceback per failed accept, dozens a second, and one
        # per accept retry still pending when the runner's cleanup closes the listener: the
        # handler goes in before the runner, so it comes out after that cleanup.
        made.callback(AcceptErrorLog(asyncio.get_running_loop(), log).uninstall)
        runner = await app_runner(app, lingering_time=LINGERING_TIME)
        made.push_async_callback(runner.cleanup)
        if tasks is not None:
            # Before the runner's cleanup: running commands stop and waiting clients are told.
            made.push_async_callback(tasks.close)
        made.callback(hub.close)  # event streams end before the runner waits for requests
        site = web.SockSite(runner, sock)
        # An inherited socket is served only once the pid file exists: until then connections
        # wait in the kernel backlog, so none of them sees the 503 `starting` answer.
        if listen_fd is None:
            await site.start()
        if remote is not None:
            from ._remote import open_remote_listener

            def build_remote_app(
                gate: DaemonAuth, allowed_hosts: frozenset[str], allowed_origins: frozenset[str]
            ) -> web.Application:
                # `/mcp` too, for bearer clients only (the gate refuses a cookie there); `guards`
                # only for `mcp_client_header`: the allowlists are the remote listener's own.
                return build_app(
                    options,
                    hub=hub,
                    lifecycle=lifecycle,
                    port=bound_port,
                    gate=gate,
                    allowed_hosts=allowed_hosts,
                    allowed_origins=allowed_origins,
                    tasks=tasks,
                )

            from ._sessions import SESSIONS_FILE_NAME

            remote_listener = await open_remote_listener(
                remote=remote,
                port=bound_port,
                build_app=build_remote_app,
                logger=log,
                sessions_file=paths.state_dir / SESSIONS_FILE_NAME,
            )
            made.push_async_callback(remote_listener.close)
            made.callback(hub.close)  # its streams too end before that listener closes
        if config.watch_root is not None:
            root = config.watch_root

            def on_change(changed: list[str]) -> None:
                hub.broadcast("change", change_event_data(_relative(root, changed)))

            watcher = watch_tree(root, on_change, debounce=config.watch_debounce)
            made.push_async_callback(watcher.close)
            try:
                await watcher.when_watching(root)
            except RuntimeError:  # the watcher stopped; it logged why
                raise WatchRootError(root, problem="unwatchable") from None
        write_pid_file(
            paths,
            pid,
            meta={
                "version": options.version,
                "port": bound_port,
                "host": bound_host,
                "started_at": int(time.time()),
                "remote": remote is not None,
                "tool_prefix": options.tool_prefix,
            },
        )
        lifecycle.ready = True
        if listen_fd is not None:
            await site.start()
        handle = DaemonHandle(
            port=bound_port, paths=paths, hub=hub, resources=made.pop_all(), pid=pid
        )
    if insecure and not is_loopback_host(bound_host):
        log.warning(
            "daemon serves %s:%d WITHOUT any credential (insecure_unauthenticated_host): anyone "
            "who can reach it can run every command",
            bound_host,
            bound_port,
        )
    url_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    log.info("serving http://%s:%d/ (pid %d)", url_host, bound_port, pid)
    return handle


def _check_watch_root(root: Path) -> None:
    """Refuse a watch root that is not a directory, before anything is locked or bound."""
    try:
        mode = os.stat(root).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise WatchRootError(root, problem="missing") from None
    except OSError:  # a parent it cannot search: the watcher could not read it either
        raise WatchRootError(root, problem="unwatchable") from None
    if not stat.S_ISDIR(mode):
        raise WatchRootError(root, problem="not_a_directory")


def _relative(root: Path, changed: list[str]) -> list[str]:
    absolute = os.path.abspath(root)
    # A checkout reports tens of thousands of paths at once, and `Path` costs ~10 us each on
    # the event loop; a clean path under the root is sliced instead, with the same result.
    prefix = absolute if absolute.endswith("/") else absolute + "/"
    fast = os.sep == "/"
    out: list[str] = []
    for path in changed:
        if fast and path.startswith(prefix):
            rel = path[len(prefix) :]
            if rel and "//" not in rel and "/./" not in f"/{rel}/":
                out.append(rel.removesuffix("/"))
                continue
        with contextlib.suppress(ValueError):
            out.append(Path(path).relative_to(absolute).as_posix())
    return out


def _until_signal(
    start: Callable[_P, Coroutine[Any, Any, DaemonHandle]],
) -> Callable[_P, Coroutine[Any, Any, None]]:
    """Make `run_daemon_until_signal` out of `start`: the same keywords, typed, declared once."""

    async def run_daemon_until_signal(*args: _P.args, **options: _P.kwargs) -> None:
        """Start the daemon with `start_daemon`'s options, wait for SIGTERM or SIGINT, then close.

        Returns within `SHUTDOWN_TIMEOUT` of the signal even while a synchronous command still
        runs (it runs in a daemon thread, so the process can exit without waiting for it).
        """
        logger = options.get("logger")
        # Not started yet: a coroutine runs once awaited, after the signal handlers are in place.
        starting = start(*args, **options)
        await _serve_until_signal(starting, logger if isinstance(logger, logging.Logger) else _log)

    # What `help()` and `inspect.signature` show: `start`'s keywords, answering None.
    run_daemon_until_signal.__signature__ = inspect.signature(start).replace(  # type: ignore[attr-defined]
        return_annotation="None"
    )
    return run_daemon_until_signal


run_daemon_until_signal = _until_signal(start_daemon)


async def _serve_until_signal(
    starting: Coroutine[Any, Any, DaemonHandle], log: logging.Logger
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    try:
        # Installed before the start: a supervisor may send SIGTERM the moment the pid file
        # appears, and that must close the daemon (pid file released), not kill it outright.
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
        handle = await starting
        try:
            await stop.wait()
        finally:
            await handle.close()
        busy = busy_command_threads()
        if busy:
            # In-flight requests had SHUTDOWN_TIMEOUT to finish and were then cancelled; a
            # synchronous command cannot be, and its daemon thread ends with the process.
            log.warning("closed with %d synchronous command(s) still running", busy)
    finally:
        starting.close()  # a no-op once awaited; else it would warn that it never ran
        for signum in installed:
            loop.remove_signal_handler(signum)
