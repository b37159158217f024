"""The typer app behind `local-daemon`: `serve`, `health`, `mcp-stdio` and the `token` group.

`cli.main` imports this module only for a command line its own `serve` parser leaves alone
(`_cli_serve.parse_serve_args`): help, usage errors and every other command.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from typer._click import exceptions as click_exceptions

from . import _cli_serve
from ._cli_serve import EX_USAGE, setup_logging
from ._cli_token import token_app

__all__ = ["app", "run_app"]

app = typer.Typer(
    name="local-daemon",
    help="Serve a command registry over loopback HTTP, SSE and MCP.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(token_app, name="token")


@app.command()
def serve(  # noqa: PLR0917 - typer maps each parameter to a flag
    target: Annotated[str, typer.Argument(help="MODULE:ATTR naming a registry or a factory.")],
    state_dir: Annotated[Path, typer.Option(help="Holds daemon.pid and daemon.meta.json.")],
    port: Annotated[int, typer.Option(help="Loopback port; 0 binds an ephemeral one.")] = 0,
    host: Annotated[
        str, typer.Option(help="Loopback address to bind (others are refused).")
    ] = "127.0.0.1",
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
    insecure_unauthenticated_host: Annotated[
        bool,
        typer.Option(
            "--insecure-unauthenticated-host",
            help="Let --host be a non-loopback address with NO credential: anyone who can "
            "reach it runs every command. Use --remote-host to serve other devices.",
        ),
    ] = False,
) -> None:
    """Serve MODULE:ATTR until SIGTERM or SIGINT (on the inherited socket under systemd)."""
    # Looked up on the module at call time, so a test can stand in for the serve body.
    _cli_serve.serve(
        _cli_serve.ServeArgs(
            target=target,
            state_dir=state_dir,
            port=port,
            host=host,
            version=version,
            tool_prefix=tool_prefix,
            watch_root=watch_root,
            allowed_hosts=tuple(allowed_host or ()),
            allowed_origins=tuple(allowed_origin or ()),
            max_body_bytes=max_body_bytes,
            remote_host=remote_host,
            token_file=token_file,
            remote_allowed_hosts=tuple(remote_allowed_host or ()),
            sign_in_hint=sign_in_hint,
            tls_cert=tls_cert,
            tls_key=tls_key,
            log_level=log_level,
            insecure_unauthenticated_host=insecure_unauthenticated_host,
        )
    )


@app.command()
def health(
    port: Annotated[
        int | None, typer.Option(help="The daemon's port; read from --state-dir when omitted.")
    ] = None,
    state_dir: Annotated[
        Path | None, typer.Option(help="The state dir `serve` was given; finds the port.")
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(help="The daemon's address; default: --state-dir's, else 127.0.0.1."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = 1.0,
) -> None:
    """Print the daemon's health document; exit 69 unless it answers 200 (78: bad state file)."""
    from ._cli_health import check_health

    typer.echo(check_health(port=port, state_dir=state_dir, host=host, timeout=timeout))


@app.command("mcp-stdio")
def mcp_stdio(
    target: Annotated[str, typer.Argument(help="MODULE:ATTR naming a registry or a factory.")],
    tool_prefix: Annotated[str, typer.Option(help="Tool names are PREFIX_<command>.")],
    version: Annotated[str, typer.Option(help="Reported to MCP clients.")] = "0.0.0",
) -> None:
    """Serve MODULE:ATTR's commands as MCP tools over stdin and stdout."""
    registry = _cli_serve.load_registry(target)
    # stdout carries the protocol: logs go to stderr only.
    setup_logging("warning")
    from ._mcp import run_mcp_stdio

    asyncio.run(run_mcp_stdio(registry, tool_prefix=tool_prefix, version=version))


def run_app(args: Sequence[str]) -> int:
    """Run the typer app on `args`; return the exit code (usage errors are 64, not click's 2)."""
    try:
        # Outside standalone mode click returns an `Exit`'s code instead of raising it.
        result = app(args=list(args), prog_name="local-daemon", standalone_mode=False)
    except click_exceptions.NoArgsIsHelpError as exc:
        if exc.ctx is not None:
            typer.echo(exc.ctx.get_help(), err=True)
        return EX_USAGE
    except click_exceptions.UsageError as exc:
        typer.echo(f"local-daemon: {exc.format_message()}", err=True)
        return EX_USAGE
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 130
    return result if isinstance(result, int) else 0
