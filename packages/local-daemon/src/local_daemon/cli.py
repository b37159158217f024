"""`local-daemon`: serve a registry, probe a daemon's health, serve MCP over stdio, manage tokens.

Exit codes: 0 success, 64 usage errors (bad flags, a MODULE:ATTR that does not load), 69 the
daemon is unavailable (`health` got no 200, the port is in use), 78 configuration refused (token
file, TLS pair, remote options, LISTEN_FDS). User input never produces a traceback.

A plain `serve` command line is read without typer (`_cli_serve.parse_serve_args`), so a
supervised daemon answers `/health` sooner; anything else, `--help` and every usage error
included, goes through the typer app in `_cli_app`, which is imported only then.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ._cli_serve import (
    EX_CONFIG,
    EX_UNAVAILABLE,
    EX_USAGE,
    CliExit,
    UsageProblem,
    echo_err,
    load_registry,
    parse_serve_args,
    serve,
)

if TYPE_CHECKING:
    from ._cli_app import app

__all__ = ["EX_CONFIG", "EX_UNAVAILABLE", "EX_USAGE", "app", "load_registry", "main"]


def __getattr__(name: str) -> Any:
    # The typer app is built on first access only: `serve` must not pay for typer.
    if name == "app":
        from ._cli_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the `local-daemon` command line and exit with its code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options = parse_serve_args(args[1:]) if args[:1] == ["serve"] else None
        if options is not None:
            serve(options)
            code = 0
        else:
            from ._cli_app import run_app

            code = run_app(args)
    except UsageProblem as exc:
        echo_err(f"local-daemon: {exc}")
        raise SystemExit(EX_USAGE) from None
    except CliExit as exc:
        raise SystemExit(exc.code) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    raise SystemExit(code)


if __name__ == "__main__":
    main()
