"""`local-daemon serve` and `mcp-stdio`: load the user's registry, then serve it.

`load_registry` imports `MODULE:ATTR` from the current directory or `sys.path`: a module that does
not import is reported with its file and line, a factory that raises with its type and line, never
with a traceback (`LOCAL_DAEMON_DEBUG=1` adds one). This module imports neither aiohttp nor MCP;
`serve` imports the daemon when it runs.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ._cli_exits import DEBUG_ENV, EX_CONFIG, EX_UNAVAILABLE, UsageProblem, fail

if TYPE_CHECKING:
    from ._remote import RemoteOptions

__all__ = ["LOG_LEVELS", "ServeArgs", "load_registry", "serve", "setup_logging"]

_log = logging.getLogger("local_daemon")
_PORT_MAX = 65535
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
_STATE_DIR_WAY_OUT: Final = {
    "not_a_directory": "; give --state-dir a directory, or a path to create",
    "uncreatable": "; give --state-dir a directory you can write",
}


def _shown_path(filename: str) -> str:
    """A file under the current directory by its relative path, as the user typed it."""
    cwd = os.getcwd()
    return os.path.relpath(filename, cwd) if filename.startswith(cwd + os.sep) else filename


def _where(exc: BaseException) -> str:
    """Name the innermost frame of the user's own code: `path:line`."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{_shown_path(exc.filename)}:{exc.lineno}"
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith("<frozen ")
        and os.path.dirname(frame.filename) != os.path.dirname(__file__)
    ]
    return f"{_shown_path(frames[-1].filename)}:{frames[-1].lineno}" if frames else "?"


def _debug_traceback(exc: BaseException) -> None:
    if os.environ.get(DEBUG_ENV):
        traceback.print_exception(exc, file=sys.stderr)


def _import_problem(module_name: str, exc: BaseException) -> UsageProblem:
    if isinstance(exc, ModuleNotFoundError) and exc.name == module_name:
        return UsageProblem(
            f"cannot import {module_name!r}: no such module in {os.getcwd()} or on sys.path",
            usage=False,
        )
    if isinstance(exc, SyntaxError):
        detail = f"{type(exc).__name__}: {exc.msg}"
    else:
        # The user's message may hold anything; the type and the line say where to look.
        detail = type(exc).__name__
    return UsageProblem(
        f"cannot import {module_name!r}: {detail} at {_where(exc)}"
        + ("" if os.environ.get(DEBUG_ENV) else f" ({DEBUG_ENV}=1 shows the traceback)"),
        usage=False,
    )


def load_registry(target: str) -> Any:
    """Import `MODULE:ATTR` and return the registry it names (calling it when it is a factory)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageProblem(f"expected MODULE:ATTR (e.g. mypackage.app:registry), got {target!r}")
    if module_name.endswith(".py"):
        # A file name where a module name goes: say which name to give instead.
        dotted = module_name[: -len(".py")].removeprefix("./").replace("/", ".")
        raise UsageProblem(
            f"give the module's name without .py: {dotted}:{attr}, not {target}", usage=False
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        _debug_traceback(exc)
        raise _import_problem(module_name, exc) from None
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise UsageProblem(f"{module_name!r} has no attribute {attr!r}", usage=False)
        value = getattr(value, part)
    factory = not _is_registry(value) and callable(value)
    if factory and not _callable_without_arguments(value):
        raise UsageProblem(
            f"{target} is a function that takes arguments, not a command registry or a factory"
            " returning one (give the registry, e.g. mymodule:registry)",
            usage=False,
        )
    if factory:
        try:
            value = value()
        except Exception as exc:
            _debug_traceback(exc)
            raise UsageProblem(
                f"the factory {target} raised {type(exc).__name__} at {_where(exc)}"
                + ("" if os.environ.get(DEBUG_ENV) else f" ({DEBUG_ENV}=1 shows the traceback)"),
                usage=False,
            ) from None
    if not _is_registry(value):
        what = f"{target} returned {type(value).__name__}, which" if factory else target
        raise UsageProblem(
            f"{what} is not a command registry (needs invoke_command and commands)",
            usage=False,
        )
    return value


def _is_registry(value: object) -> bool:
    return hasattr(value, "invoke_command") and hasattr(value, "commands")


def _callable_without_arguments(value: Any) -> bool:
    import inspect

    try:
        inspect.signature(value).bind()
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): let the call decide
        return True
    return True


def setup_logging(level: str | None) -> None:
    """Send the `local_daemon` logger to stderr at `level` (`None`: info).

    The `mcp` SDK's loggers log warnings and worse only (its INFO lines, one per start and per
    stateless session, say nothing a user acts on), unless `level` was asked for: then they log
    at that level too, through the same handler, whatever the user's module set up for the root.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("local-daemon: %(levelname)s %(message)s"))
    _log.addHandler(handler)
    _log.setLevel((level or "info").upper())
    sdk = logging.getLogger("mcp")
    sdk.addHandler(handler)
    sdk.propagate = False
    sdk.setLevel(level.upper() if level is not None else logging.WARNING)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeArgs:
    """The options of `local-daemon serve`, as either parser read them."""

    target: str
    state_dir: Path
    port: int = 0
    host: str = "127.0.0.1"
    version: str = "0.0.0"
    tool_prefix: str | None = None
    mcp_client_header: bool = False
    watch_root: Path | None = None
    watch_debounce: float = 0.05
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int | None = None
    remote_host: str | None = None
    token_file: Path | None = None
    remote_allowed_hosts: tuple[str, ...] = ()
    sign_in_hint: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    log_level: str | None = None
    insecure_unauthenticated_host: bool = False
    openapi: bool = False


def serve(args: ServeArgs) -> None:
    """Serve the registry `args.target` names until SIGTERM or SIGINT; `CliExit` on failure."""
    import asyncio

    from ._config import MAX_WATCH_DEBOUNCE
    from ._daemon import run_daemon_until_signal
    from ._errors import (
        DaemonPortInUseError,
        DaemonStateError,
        RemoteBindError,
        TlsFileError,
        TokenFileError,
        WatchRootError,
    )
    from ._guards import Guards
    from ._rpc import RpcBodyLimit
    from ._systemd import systemd_listen_fd

    if not 0 <= args.port <= _PORT_MAX:
        raise UsageProblem(f"--port must be 0 to {_PORT_MAX}")
    if not 0 <= args.watch_debounce <= MAX_WATCH_DEBOUNCE:  # NaN too
        raise UsageProblem(f"--watch-debounce must be 0 to {MAX_WATCH_DEBOUNCE:g} seconds")
    registry = load_registry(args.target)
    remote: RemoteOptions | None = None
    if args.remote_host is not None or args.token_file is not None or args.tls_cert is not None:
        if (
            args.remote_host is None
            or args.token_file is None
            or args.tls_cert is None
            or args.tls_key is None
        ):
            raise UsageProblem("--remote-host needs --token-file, --tls-cert and --tls-key")
        from ._remote import RemoteOptions, TlsFiles

        remote = RemoteOptions(
            host=args.remote_host,
            token_file=args.token_file,
            tls=TlsFiles(cert_file=args.tls_cert, key_file=args.tls_key),
            allowed_hosts=args.remote_allowed_hosts,
            sign_in_hint=args.sign_in_hint,
        )
    try:
        listen_fd = systemd_listen_fd()
    except ValueError as exc:
        raise fail(EX_CONFIG, str(exc)) from None
    setup_logging(args.log_level)
    guards = Guards(
        allowed_hosts=args.allowed_hosts,
        allowed_origins=args.allowed_origins,
        mcp_client_header=args.mcp_client_header,
        cors_origins=args.cors_origins,
    )
    rpc_body_limit = (
        None if args.max_body_bytes is None else RpcBodyLimit(max_bytes=args.max_body_bytes)
    )
    running = run_daemon_until_signal(
        registry=registry,
        version=args.version,
        state_dir=args.state_dir,
        port=args.port,
        host=args.host,
        tool_prefix=args.tool_prefix,
        watch_root=args.watch_root,
        watch_debounce=args.watch_debounce,
        guards=guards,
        rpc_body_limit=rpc_body_limit,
        remote=remote,
        listen_fd=listen_fd,
        insecure_unauthenticated_host=args.insecure_unauthenticated_host,
        openapi=args.openapi,
    )
    try:
        asyncio.run(running)
    except DaemonPortInUseError as exc:
        way_out = "pick another with --port N (0 binds a free one)"
        raise fail(EX_UNAVAILABLE, f"{exc}: {way_out}") from None
    except DaemonStateError as exc:  # another daemon holds the state dir, or it is unusable
        if exc.problem == "running":
            raise fail(EX_UNAVAILABLE, str(exc)) from None
        way_out = _STATE_DIR_WAY_OUT.get(exc.problem, "")
        raise fail(EX_CONFIG, f"{exc}{way_out}") from None
    except TokenFileError as exc:
        raise fail(EX_CONFIG, f"{exc} (problem: {exc.problem})") from None
    except TlsFileError as exc:
        raise fail(EX_CONFIG, f"{exc} (problem: {exc.problem})") from None
    except RemoteBindError as exc:
        raise fail(EX_CONFIG, str(exc)) from None
    except WatchRootError as exc:
        raise fail(EX_CONFIG, f"{exc} (--watch-root)") from None
    except OSError as exc:
        where = f" {exc.filename}:" if exc.filename else ""
        raise fail(
            EX_UNAVAILABLE, f"cannot serve:{where} {exc.strerror or type(exc).__name__}"
        ) from None
