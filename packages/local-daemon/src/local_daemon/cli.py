"""`local-daemon`: serve a registry, probe a daemon's health, serve MCP over stdio, manage tokens.

Exit codes: 0 success, 64 usage errors (bad flags, a MODULE:ATTR that does not load), 69 the
daemon is unavailable (`health` got no 200, the port is in use), 78 configuration refused (token
file, TLS pair, remote options, LISTEN_FDS). User input never produces a traceback.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer._click import exceptions as click_exceptions

from ._cli_token import token_app

__all__ = ["EX_CONFIG", "EX_UNAVAILABLE", "EX_USAGE", "app", "load_registry", "main"]

EX_USAGE = 64
EX_UNAVAILABLE = 69
EX_CONFIG = 78

app = typer.Typer(
    name="local-daemon",
    help="Serve a command registry over loopback HTTP, SSE and MCP.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(token_app, name="token")

_log = logging.getLogger("local_daemon")


class _Usage(Exception):
    pass


def _fail(code: int, message: str) -> typer.Exit:
    typer.echo(f"local-daemon: {message}", err=True)
    return typer.Exit(code)


def load_registry(target: str) -> Any:
    """Import `MODULE:ATTR` and return the registry it names (calling it when it is a factory)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise _Usage(f"expected MODULE:ATTR, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise _Usage(f"cannot import {module_name!r} ({type(exc).__name__})") from None
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise _Usage(f"{module_name!r} has no attribute {attr!r}")
        value = getattr(value, part)
    if not (hasattr(value, "invoke_command") and hasattr(value, "commands")) and callable(value):
        value = value()
    if not (hasattr(value, "invoke_command") and hasattr(value, "commands")):
        raise _Usage(f"{target} is not a command registry (needs invoke_command and commands)")
    return value


def _setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("local-daemon: %(levelname)s %(message)s"))
    _log.addHandler(handler)
    _log.setLevel(level.upper())


@app.command()
def serve(  # noqa: PLR0917 - typer maps each parameter to a flag
    target: Annotated[str, typer.Argument(help="MODULE:ATTR naming a registry or a factory.")],
    state_dir: Annotated[Path, typer.Option(help="Holds daemon.pid and daemon.meta.json.")],
    port: Annotated[int, typer.Option(help="Loopback port; 0 binds an ephemeral one.")] = 0,
    host: Annotated[str, typer.Option(help="Loopback address to bind.")] = "127.0.0.1",
    version: Annotated[str, typer.Option(help="Reported by /health and /version.")] = "0.0.0",
    tool_prefix: Annotated[str | None, typer.Option(help="Serve /mcp with this prefix.")] = None,
    watch_root: Annotated[Path | None, typer.Option(help="Broadcast changes here.")] = None,
    allowed_host: Annotated[
        list[str] | None, typer.Option(help="Extra Host value for loopback (repeatable).")
    ] = None,
    allowed_origin: Annotated[
        list[str] | None, typer.Option(help="Extra origin for loopback (repeatable).")
    ] = None,
    max_body_bytes: Annotated[int | None, typer.Option(help="RPC body cap in bytes.")] = None,
    remote_host: Annotated[str | None, typer.Option(help="IP literal of the TLS listener.")] = None,
    token_file: Annotated[Path | None, typer.Option(help="The remote gate's token file.")] = None,
    remote_allowed_host: Annotated[
        list[str] | None, typer.Option(help="Name the remote listener answers (repeatable).")
    ] = None,
    sign_in_hint: Annotated[str | None, typer.Option(help="How users get a sign-in link.")] = None,
    tls_cert: Annotated[Path | None, typer.Option(help="Remote PEM certificate chain.")] = None,
    tls_key: Annotated[Path | None, typer.Option(help="Remote PEM private key.")] = None,
    log_level: Annotated[str, typer.Option(help="Logging level.")] = "info",
) -> None:
    """Serve MODULE:ATTR until SIGTERM or SIGINT (on the inherited socket under systemd)."""
    from ._daemon import run_daemon_until_signal
    from ._errors import DaemonPortInUseError, RemoteBindError, TlsFileError, TokenFileError
    from ._guards import Guards
    from ._rpc import RpcBodyLimit
    from ._systemd import systemd_listen_fd

    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise _Usage("--log-level must be debug, info, warning or error")
    registry = load_registry(target)
    remote: Any = None
    if remote_host is not None or token_file is not None or tls_cert is not None:
        if remote_host is None or token_file is None or tls_cert is None or tls_key is None:
            raise _Usage("--remote-host needs --token-file, --tls-cert and --tls-key")
        from ._remote import RemoteOptions, TlsFiles

        remote = RemoteOptions(
            host=remote_host,
            token_file=token_file,
            tls=TlsFiles(cert_file=tls_cert, key_file=tls_key),
            allowed_hosts=tuple(remote_allowed_host or ()),
            sign_in_hint=sign_in_hint,
        )
    try:
        listen_fd = systemd_listen_fd()
    except ValueError as exc:
        raise _fail(EX_CONFIG, str(exc)) from None
    _setup_logging(log_level)
    options: dict[str, Any] = {
        "registry": registry,
        "version": version,
        "state_dir": state_dir,
        "port": port,
        "host": host,
        "tool_prefix": tool_prefix,
        "watch_root": watch_root,
        "guards": Guards(
            allowed_hosts=tuple(allowed_host or ()), allowed_origins=tuple(allowed_origin or ())
        ),
        "rpc_body_limit": None
        if max_body_bytes is None
        else RpcBodyLimit(max_bytes=max_body_bytes),
        "remote": remote,
        "listen_fd": listen_fd,
    }
    try:
        asyncio.run(run_daemon_until_signal(**options))
    except DaemonPortInUseError as exc:
        raise _fail(EX_UNAVAILABLE, str(exc)) from None
    except TokenFileError as exc:
        raise _fail(EX_CONFIG, f"{exc} (problem: {exc.problem})") from None
    except TlsFileError as exc:
        raise _fail(EX_CONFIG, f"{exc} (problem: {exc.problem})") from None
    except RemoteBindError as exc:
        raise _fail(EX_CONFIG, str(exc)) from None
    except OSError as exc:
        raise _fail(EX_UNAVAILABLE, f"cannot serve: {exc.strerror or type(exc).__name__}") from None


@app.command()
def health(
    port: Annotated[int, typer.Option(help="The daemon's loopback port.")],
    host: Annotated[str, typer.Option(help="The daemon's loopback address.")] = "127.0.0.1",
    timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = 1.0,
) -> None:
    """Print the daemon's health document; exit 69 unless it answers 200."""
    from ._health import probe_health

    document = probe_health(port, host=host, timeout=timeout)
    if document is None:
        raise _fail(EX_UNAVAILABLE, f"no healthy daemon on {host}:{port}")
    typer.echo(json.dumps(document, sort_keys=True))


@app.command("mcp-stdio")
def mcp_stdio(
    target: Annotated[str, typer.Argument(help="MODULE:ATTR naming a registry or a factory.")],
    tool_prefix: Annotated[str, typer.Option(help="Tool names are PREFIX_<command>.")],
    version: Annotated[str, typer.Option(help="Reported to MCP clients.")] = "0.0.0",
) -> None:
    """Serve MODULE:ATTR's commands as MCP tools over stdin and stdout."""
    registry = load_registry(target)
    # stdout carries the protocol: logs go to stderr only.
    _setup_logging("warning")
    from ._mcp import run_mcp_stdio

    asyncio.run(run_mcp_stdio(registry, tool_prefix=tool_prefix, version=version))


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the `local-daemon` command line and exit with its code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        # Outside standalone mode click returns an `Exit`'s code instead of raising it.
        result = app(args=args, prog_name="local-daemon", standalone_mode=False)
    except _Usage as exc:
        typer.echo(f"local-daemon: {exc}", err=True)
        raise SystemExit(EX_USAGE) from None
    except click_exceptions.NoArgsIsHelpError as exc:
        if exc.ctx is not None:
            typer.echo(exc.ctx.get_help(), err=True)
        raise SystemExit(EX_USAGE) from None
    except click_exceptions.UsageError as exc:
        typer.echo(f"local-daemon: {exc.format_message()}", err=True)
        raise SystemExit(EX_USAGE) from None
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        raise SystemExit(130) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    raise SystemExit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
