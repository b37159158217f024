"""`local-daemon serve` without typer: the serve body both parsers share, and the fast parser.

`serve` sits on a supervisor's start-up path, and typer (with the pydantic it coerces values
through) costs over 100 ms before the daemon has imported aiohttp. So `cli.main` reads a plain
`serve` command line itself with `parse_serve_args` and leaves everything else to typer: `--help`,
`--`, an unknown, abbreviated, repeated or valueless flag, a value that starts with `-` or that
typer would have to coerce (an int that is not plain ASCII digits). Typer then answers exactly as
it always did. Whichever parser read the line, `serve` below runs it.

This module imports neither typer nor aiohttp; `serve` imports the daemon when it runs.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

__all__ = [
    "EX_CONFIG",
    "EX_UNAVAILABLE",
    "EX_USAGE",
    "SERVE_FLAGS",
    "CliExit",
    "ServeArgs",
    "UsageProblem",
    "echo_err",
    "fail",
    "load_registry",
    "parse_serve_args",
    "serve",
    "setup_logging",
]

EX_USAGE = 64
EX_UNAVAILABLE = 69
EX_CONFIG = 78

_log = logging.getLogger("local_daemon")
# click.echo strips these styles when its stream is not a terminal; `echo_err` does the same.
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")
# Longer digit strings go to typer: `int()` refuses over 4,300 digits with its own error.
_MAX_INT_DIGITS = 18
_PORT_MAX = 65535


class UsageProblem(Exception):
    """A usage error: `cli.main` prints `local-daemon: <message>` and exits 64."""


class CliExit(Exception):
    """End the command with `code`; its message, if any, is already on stderr."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def echo_err(message: str) -> None:
    """Print one line to stderr as `typer.echo(message, err=True)` does, without typer."""
    stream = sys.stderr
    if stream is None:
        return
    isatty = getattr(stream, "isatty", None)
    if not (isatty is not None and isatty()):
        message = _ANSI.sub("", message)
    stream.write(message + "\n")
    stream.flush()


def fail(code: int, message: str) -> CliExit:
    """Print `local-daemon: <message>` to stderr and return the exit to raise."""
    echo_err(f"local-daemon: {message}")
    return CliExit(code)


def load_registry(target: str) -> Any:
    """Import `MODULE:ATTR` and return the registry it names (calling it when it is a factory)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageProblem(f"expected MODULE:ATTR, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageProblem(f"cannot import {module_name!r} ({type(exc).__name__})") from None
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise UsageProblem(f"{module_name!r} has no attribute {attr!r}")
        value = getattr(value, part)
    if not (hasattr(value, "invoke_command") and hasattr(value, "commands")) and callable(value):
        value = value()
    if not (hasattr(value, "invoke_command") and hasattr(value, "commands")):
        raise UsageProblem(
            f"{target} is not a command registry (needs invoke_command and commands)"
        )
    return value


def setup_logging(level: str) -> None:
    """Send the `local_daemon` logger to stderr at `level`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("local-daemon: %(levelname)s %(message)s"))
    _log.addHandler(handler)
    _log.setLevel(level.upper())


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeArgs:
    """The options of `local-daemon serve`, as either parser read them."""

    target: str
    state_dir: Path
    port: int = 0
    host: str = "127.0.0.1"
    version: str = "0.0.0"
    tool_prefix: str | None = None
    watch_root: Path | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int | None = None
    remote_host: str | None = None
    token_file: Path | None = None
    remote_allowed_hosts: tuple[str, ...] = ()
    sign_in_hint: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    log_level: str = "info"
    insecure_unauthenticated_host: bool = False


_Kind = Literal["str", "path", "int", "list", "flag"]
# Every flag of the typer `serve` command (`_cli_app.serve`), by the `ServeArgs` field it sets.
SERVE_FLAGS: Final[dict[str, tuple[str, _Kind]]] = {
    "--state-dir": ("state_dir", "path"),
    "--port": ("port", "int"),
    "--host": ("host", "str"),
    "--version": ("version", "str"),
    "--tool-prefix": ("tool_prefix", "str"),
    "--watch-root": ("watch_root", "path"),
    "--allowed-host": ("allowed_hosts", "list"),
    "--allowed-origin": ("allowed_origins", "list"),
    "--max-body-bytes": ("max_body_bytes", "int"),
    "--remote-host": ("remote_host", "str"),
    "--token-file": ("token_file", "path"),
    "--remote-allowed-host": ("remote_allowed_hosts", "list"),
    "--sign-in-hint": ("sign_in_hint", "str"),
    "--tls-cert": ("tls_cert", "path"),
    "--tls-key": ("tls_key", "path"),
    "--log-level": ("log_level", "str"),
    "--insecure-unauthenticated-host": ("insecure_unauthenticated_host", "flag"),
}


def parse_serve_args(argv: Sequence[str]) -> ServeArgs | None:
    """Read the arguments after `serve`; None leaves the line to typer (help, errors, oddities)."""
    target: str | None = None
    single: dict[str, Any] = {}
    lists: dict[str, Any] = {}
    tokens = iter(argv)
    for token in tokens:
        if not token.startswith("-"):
            if target is not None or not token:
                return None
            target = token
            continue
        name, equals, value = token.partition("=")
        flag = SERVE_FLAGS.get(name)
        if flag is None:
            return None
        if flag[1] == "flag":
            if equals or flag[0] in single:
                return None
            single[flag[0]] = True
            continue
        if not equals:
            value = next(tokens, "")
        if not value or value.startswith("-"):
            return None
        field, kind = flag
        if kind == "list":
            lists.setdefault(field, []).append(value)
            continue
        if field in single:
            return None
        if kind == "int":
            if not (value.isascii() and value.isdigit() and len(value) <= _MAX_INT_DIGITS):
                return None
            single[field] = int(value)
        elif kind == "path":
            single[field] = Path(value)
        else:
            single[field] = value
    if target is None or "state_dir" not in single:
        return None
    single.update((field, tuple(values)) for field, values in lists.items())
    return ServeArgs(target=target, **single)


def serve(args: ServeArgs) -> None:
    """Serve the registry `args.target` names until SIGTERM or SIGINT; `CliExit` on failure."""
    import asyncio

    from ._daemon import run_daemon_until_signal
    from ._errors import (
        DaemonPortInUseError,
        DaemonStateError,
        RemoteBindError,
        TlsFileError,
        TokenFileError,
    )
    from ._guards import Guards
    from ._rpc import RpcBodyLimit
    from ._systemd import systemd_listen_fd

    if args.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise UsageProblem("--log-level must be debug, info, warning or error")
    if not 0 <= args.port <= _PORT_MAX:
        raise UsageProblem(f"--port must be 0 to {_PORT_MAX}")
    registry = load_registry(args.target)
    remote: Any = None
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
    options: dict[str, Any] = {
        "registry": registry,
        "version": args.version,
        "state_dir": args.state_dir,
        "port": args.port,
        "host": args.host,
        "tool_prefix": args.tool_prefix,
        "watch_root": args.watch_root,
        "guards": Guards(allowed_hosts=args.allowed_hosts, allowed_origins=args.allowed_origins),
        "rpc_body_limit": None
        if args.max_body_bytes is None
        else RpcBodyLimit(max_bytes=args.max_body_bytes),
        "remote": remote,
        "listen_fd": listen_fd,
        "insecure_unauthenticated_host": args.insecure_unauthenticated_host,
    }
    try:
        asyncio.run(run_daemon_until_signal(**options))
    except DaemonPortInUseError as exc:
        raise fail(EX_UNAVAILABLE, str(exc)) from None
    except DaemonStateError as exc:  # another daemon holds the state dir, or its lock file is bad
        raise fail(EX_UNAVAILABLE if exc.problem == "running" else EX_CONFIG, str(exc)) from None
    except TokenFileError as exc:
        raise fail(EX_CONFIG, f"{exc} (problem: {exc.problem})") from None
    except TlsFileError as exc:
        raise fail(EX_CONFIG, f"{exc} (problem: {exc.problem})") from None
    except RemoteBindError as exc:
        raise fail(EX_CONFIG, str(exc)) from None
    except OSError as exc:
        raise fail(EX_UNAVAILABLE, f"cannot serve: {exc.strerror or type(exc).__name__}") from None
