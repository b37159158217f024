"""`local-daemon token ensure|rotate|login-code PATH`: the token file from the command line.

Mounted by `cli.py` as the `token` group. It imports only the token file and auth modules, so it
starts without aiohttp.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from local_daemon._errors import DaemonError

__all__ = ["EXIT_TOKEN_FILE", "token_app"]

# sysexits EX_CONFIG: the token file is configuration the operator must fix.
EXIT_TOKEN_FILE = 78

token_app = typer.Typer(
    name="token",
    help="Create, rotate and mint sign-in links from the remote listener's token file.",
    no_args_is_help=True,
    add_completion=False,
)

PathArg = Annotated[Path, typer.Argument(help="The token file (created 0600 by `ensure`).")]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"local-daemon: {message}", err=True)
    return typer.Exit(EXIT_TOKEN_FILE)


def _refused(exc: Exception, path: Path) -> typer.Exit:
    """The one fixed line for a token command that failed: the check and its problem."""
    from local_daemon._errors import TokenFileError

    if isinstance(exc, TokenFileError):
        return _fail(f"{exc} (problem: {exc.problem})")
    # Not expected (the library converts OS errors), but never a traceback either.
    strerror = exc.strerror if isinstance(exc, OSError) else type(exc).__name__
    return _fail(f"token file {path} cannot be used ({strerror}) (problem: unusable)")


@token_app.command("ensure")
def ensure(path: PathArg) -> None:
    """Create the token file with a fresh secret unless it exists; check it either way."""
    from local_daemon._tokenfile import ensure_token_file

    try:
        created = ensure_token_file(path)
    except (DaemonError, OSError) as exc:
        raise _refused(exc, path) from None
    typer.echo(str(created))


@token_app.command("rotate")
def rotate(path: PathArg) -> None:
    """Replace the secret: every session, every login code and the old bearer stop working."""
    from local_daemon._tokenfile import rotate_token_file

    try:
        rotated = rotate_token_file(path)
    except (DaemonError, OSError) as exc:
        raise _refused(exc, path) from None
    typer.echo(str(rotated))


@token_app.command("login-code")
def login_code(
    path: PathArg,
    url: Annotated[
        str | None,
        typer.Option(help="Base address of the remote listener, e.g. https://box.example:8443"),
    ] = None,
) -> None:
    """Print a one-time login code (valid 10 minutes), or with --url the sign-in link."""
    from local_daemon._auth import mint_login_code

    if url is not None and not url.startswith("https://"):
        typer.echo("local-daemon: --url must start with https://", err=True)
        raise typer.Exit(64)
    try:
        code = mint_login_code(path)
    except (DaemonError, OSError) as exc:
        raise _refused(exc, path) from None
    typer.echo(code if url is None else f"{url.rstrip('/')}/auth/login?code={code}")
