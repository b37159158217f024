"""`local-daemon`: serve a registry, probe a daemon's health, serve MCP over stdio, manage tokens.

One argparse parser (`build_parser`: stdlib, so `serve` starts without a CLI framework), one
usage-error type (`UsageProblem`), the exit codes in one table (`_cli_exits`) and one boundary
(`main`): `local-daemon: <problem>` and the command's usage line for a usage error (64), one line
for any other failure, never a traceback (`LOCAL_DAEMON_DEBUG=1` adds one for a bug, exit 70).
`-h` and `--help` work on the tool and on every command.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ._cli_exits import (
    DEBUG_ENV,
    EX_CONFIG,
    EX_INTERRUPTED,
    EX_SOFTWARE,
    EX_UNAVAILABLE,
    EX_USAGE,
    PROG,
    CliExit,
    UsageProblem,
    echo_err,
)
from ._cli_serve import LOG_LEVELS, ServeArgs, load_registry

__all__ = ["EX_CONFIG", "EX_UNAVAILABLE", "EX_USAGE", "build_parser", "load_registry", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors raised as `UsageProblem` instead of exiting 2."""

    def error(self, message: str) -> NoReturn:
        raise _ParseError(message, self)


class _ParseError(UsageProblem):
    def __init__(self, problem: str, parser: argparse.ArgumentParser) -> None:
        super().__init__(problem)
        self.parser = parser


class _Once(argparse.Action):
    """An option given at most once: argparse would silently keep the last of two."""

    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, opt: Any = None
    ) -> None:
        given: set[str] = ns.__dict__.setdefault("_given", set())
        if self.dest in given:
            raise argparse.ArgumentError(self, "given twice")
        given.add(self.dest)
        setattr(ns, self.dest, values)


class _Flag(_Once):
    """A boolean flag given at most once."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, help=help)

    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, opt: Any = None
    ) -> None:
        super().__call__(parser, ns, True, opt)


class _Version(argparse.Action):
    """`--version`: print `local-daemon X.Y.Z` and exit 0 (the metadata is read only then)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, opt: Any = None
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version(PROG)
        except PackageNotFoundError:  # imported from a source tree nobody installed
            found = "(version unknown: not installed)"
        sys.stdout.write(f"{PROG} {found}\n")
        parser.exit(0)


def _command(
    sub: Any, name: str, help_text: str, usage: str | None = None
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text, description=help_text, usage=usage, allow_abbrev=False
    )
    return parser


COMMANDS = ("serve", "health", "mcp-stdio", "token", "sessions", "units")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of serve, health, mcp-stdio, token, sessions and units install."""
    top = _Parser(
        prog=PROG,
        description="Serve a command registry over loopback HTTP, SSE and MCP.",
        allow_abbrev=False,
    )
    top.add_argument("--version", action=_Version, help="print the version and exit")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    target_help = "MODULE:ATTR naming a registry or a factory returning one"

    serve = _command(
        sub,
        "serve",
        "serve MODULE:ATTR until SIGTERM or SIGINT",
        usage="%(prog)s MODULE:ATTR --state-dir DIR [--port N] [options]",
    )
    serve.add_argument("target", metavar="MODULE:ATTR", help=target_help)
    once: dict[str, Any] = {"action": _Once}

    def repeatable(flag: str, metavar: str, text: str) -> None:
        # Its dest is its ServeArgs field: the flag's name in the plural, every value given.
        dest = flag.removeprefix("--").replace("-", "_") + "s"
        text += " (repeatable)"
        serve.add_argument(flag, action="append", dest=dest, default=[], metavar=metavar, help=text)

    serve.add_argument(
        "--state-dir",
        **once,
        type=Path,
        required=True,
        metavar="DIR",
        help="holds daemon.pid and daemon.meta.json",
    )
    serve.add_argument(
        "--port",
        **once,
        type=int,
        default=0,
        metavar="N",
        help="loopback port; 0 (the default) binds a free one",
    )
    serve.add_argument(
        "--host", **once, default="127.0.0.1", help="loopback address to bind (others refused)"
    )
    serve.add_argument(
        "--version", **once, default="0.0.0", metavar="V", help="reported by /health and /version"
    )
    serve.add_argument(
        "--tool-prefix",
        **once,
        metavar="PREFIX",
        help="serve /mcp with tools named PREFIX_<command> (empty: the command names)",
    )
    serve.add_argument(
        "--mcp-client-header",
        action=_Flag,
        help="make /mcp demand x-local-client like /rpc (stock MCP clients do not send it)",
    )
    serve.add_argument(
        "--watch-root",
        **once,
        type=Path,
        metavar="DIR",
        help="broadcast changes under DIR on /events",
    )
    serve.add_argument(
        "--watch-debounce",
        **once,
        type=float,
        default=0.05,
        metavar="S",
        help="seconds of quiet that end a burst of changes: one change event per burst"
        " (default 0.05)",
    )
    repeatable("--allowed-host", "HOST", "extra Host value for loopback")
    repeatable("--allowed-origin", "ORIGIN", "extra origin for loopback")
    repeatable(
        "--cors-origin", "ORIGIN", "origin whose pages get CORS answers, e.g. a browser MCP client"
    )
    serve.add_argument("--max-body-bytes", **once, type=int, metavar="N", help="RPC body cap")
    serve.add_argument("--remote-host", **once, metavar="IP", help="IP literal of the TLS listener")
    serve.add_argument(
        "--token-file", **once, type=Path, metavar="FILE", help="the remote gate's token file"
    )
    repeatable("--remote-allowed-host", "NAME", "name the remote listener answers")
    serve.add_argument("--sign-in-hint", **once, metavar="TEXT", help="how users get a link")
    serve.add_argument("--tls-cert", **once, type=Path, metavar="PEM", help="certificate chain")
    serve.add_argument("--tls-key", **once, type=Path, metavar="PEM", help="its private key")
    serve.add_argument(
        "--log-level",
        **once,
        type=str.lower,
        choices=LOG_LEVELS,
        metavar="LEVEL",
        help="debug, info (default), warning or error; the MCP SDK logs below warning only"
        " when this is given",
    )

    serve.add_argument(
        "--insecure-unauthenticated-host",
        action=_Flag,
        help="let --host be a non-loopback address with NO credential: anyone who can reach it "
        "runs every command (use --remote-host to serve other devices)",
    )

    serve.add_argument(
        "--openapi",
        action=_Flag,
        help="serve GET /openapi.json: the OpenAPI document of every /rpc/<name>",
    )

    health = _command(
        sub,
        "health",
        "print a daemon's health document; exit 69 unless it is up",
        usage="%(prog)s (--port N | --state-dir DIR) [--host HOST] [--timeout S]",
    )
    health.add_argument("--port", **once, type=int, metavar="N", help="the daemon's port")
    health.add_argument(
        "--state-dir",
        **once,
        type=Path,
        metavar="DIR",
        help="the state dir serve was given; finds the port",
    )
    health.add_argument("--host", **once, help="default: --state-dir's, else 127.0.0.1")
    health.add_argument(
        "--timeout",
        **once,
        type=float,
        default=1.0,
        metavar="S",
        help="seconds to wait (default 1)",
    )

    mcp = _command(
        sub,
        "mcp-stdio",
        "serve MODULE:ATTR's commands as MCP tools on stdin/stdout, or relay them to the daemon"
        " of a state dir (--attach)",
        usage="%(prog)s (MODULE:ATTR | --attach DIR [--start MODULE:ATTR]) [--tool-prefix PREFIX]"
        " [--version V]",
    )
    mcp.add_argument("target", nargs="?", metavar="MODULE:ATTR", help=target_help)
    mcp.add_argument(
        "--attach",
        **once,
        type=Path,
        metavar="DIR",
        help="relay to the running daemon that owns state dir DIR (exit 69 when none runs)",
    )
    mcp.add_argument(
        "--start",
        **once,
        metavar="MODULE:ATTR",
        help="with --attach: start `serve MODULE:ATTR` detached when no daemon runs",
    )
    mcp.add_argument(
        "--start-timeout",
        **once,
        type=float,
        default=30.0,
        metavar="S",
        help="seconds --start waits for the daemon's /health (default 30)",
    )
    mcp.add_argument(
        "--tool-prefix",
        **once,
        default=None,
        metavar="PREFIX",
        help="tools are PREFIX_<command> (default: the command names)",
    )
    mcp.add_argument(
        "--version", **once, default=None, metavar="V", help="told to clients (default 0.0.0)"
    )

    token = _command(sub, "token", "create, rotate and mint sign-in links from a token file")
    token_sub = token.add_subparsers(dest="token_command", required=True, metavar="ACTION")
    path_help = "the token file (created 0600 by ensure)"
    for name, text in (
        ("ensure", "create the token file unless it exists; check it either way"),
        ("rotate", "replace the secret: every session, code and old bearer stops working"),
        ("login-code", "print a one-time login code (10 minutes), or with --url the link"),
    ):
        action = _command(token_sub, name, text)
        action.add_argument("path", type=Path, metavar="PATH", help=path_help)
        if name == "login-code":
            action.add_argument("--url", **once, metavar="URL", help="https://box.example:8443")

    from ._cli_sessions import add_sessions_command

    add_sessions_command(_command(sub, "sessions", "list or sign out the signed-in devices"), once)

    units = _command(sub, "units", "the systemd user units (socket activation) this package ships")
    units_sub = units.add_subparsers(dest="units_command", required=True, metavar="ACTION")
    units_install = _command(
        units_sub, "install", "write them to ~/.config/systemd/user and say how to enable them"
    )
    units_install.add_argument(
        "--dry-run", action=_Flag, help="say what would be written; write nothing"
    )
    units_install.add_argument("--force", action=_Flag, help="replace a unit file that differs")
    return top


def _serve_args(ns: argparse.Namespace) -> ServeArgs:
    # Each serve flag's dest is its ServeArgs field (repeatable ones read as lists).
    read: dict[str, Any] = {}
    for field in dataclasses.fields(ServeArgs):
        value = getattr(ns, field.name)
        read[field.name] = tuple(value) if isinstance(value, list) else value
    return ServeArgs(**read)


def _run(ns: argparse.Namespace) -> int:
    """Run the parsed command; raise `UsageProblem` or `CliExit` on failure."""
    if ns.command == "serve":
        from ._cli_serve import serve

        serve(_serve_args(ns))
    elif ns.command == "health":
        from ._cli_health import check_health

        print(check_health(port=ns.port, state_dir=ns.state_dir, host=ns.host, timeout=ns.timeout))
    elif ns.command == "mcp-stdio" and (ns.attach is not None or ns.start is not None):
        from ._cli_attach import attach

        attach(
            state_dir=ns.attach,
            target=ns.target,
            start=ns.start,
            tool_prefix=ns.tool_prefix,
            version=ns.version,
            start_timeout=ns.start_timeout,
        )
    elif ns.command == "mcp-stdio":
        import asyncio

        from ._cli_serve import setup_logging
        from ._mcp import run_mcp_stdio

        if ns.target is None:
            raise UsageProblem("mcp-stdio needs MODULE:ATTR or --attach DIR")
        registry = load_registry(ns.target)
        setup_logging("warning")  # stdout carries the protocol: logs go to stderr only
        version = ns.version if ns.version is not None else "0.0.0"
        asyncio.run(run_mcp_stdio(registry, tool_prefix=ns.tool_prefix, version=version))
    elif ns.command == "sessions":
        from ._cli_sessions import run_sessions

        return run_sessions(ns)
    elif ns.command == "units":
        from ._cli_units import install

        install(dry_run=ns.dry_run, force=ns.force)
    else:
        from . import _cli_token

        if ns.token_command == "ensure":
            print(_cli_token.ensure(ns.path))
        elif ns.token_command == "rotate":
            print(_cli_token.rotate(ns.path))
        else:
            print(_cli_token.login_code(ns.path, ns.url))
    return 0


def _usage_of(parser: argparse.ArgumentParser, args: list[str]) -> str:
    """The usage line of the deepest command `args` names (the tool's own when none)."""
    for word in args:
        choices = next(
            (a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
            None,
        )
        if not isinstance(choices, dict) or word not in choices:
            if word.startswith("-"):
                continue
            break
        parser = choices[word]
    return parser.format_usage()


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the `local-daemon` command line and exit with its code: the one boundary."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    code = 0
    try:
        if not args:
            raise UsageProblem(f"missing command ({', '.join(COMMANDS)})")
        if not args[0].startswith("-") and args[0] not in COMMANDS:
            raise UsageProblem(f"unknown command {args[0]!r} ({', '.join(COMMANDS)})")
        code = _run(parser.parse_args(args))
    except UsageProblem as exc:
        echo_err(f"{PROG}: {exc.problem}")
        if exc.usage:
            # A subcommand's own parse error knows its parser; the rest (an unrecognized
            # argument, a problem found after parsing) is the deepest command the line names.
            own = isinstance(exc, _ParseError) and exc.parser is not parser
            sys.stderr.write(exc.parser.format_usage() if own else _usage_of(parser, args))  # type: ignore[attr-defined]
        code = EX_USAGE
    except CliExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        code = EX_INTERRUPTED
    except SystemExit as exc:  # argparse's -h/--help, after printing the help
        code = exc.code if isinstance(exc.code, int) else 0
    except Exception as exc:  # a bug of ours: one line, the traceback only on request
        if os.environ.get(DEBUG_ENV):
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
        echo_err(f"{PROG}: unexpected {type(exc).__name__} (a bug; {DEBUG_ENV}=1 shows where)")
        code = EX_SOFTWARE
    raise SystemExit(code)


if __name__ == "__main__":
    main()
