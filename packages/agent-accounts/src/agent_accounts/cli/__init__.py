"""`account-cli`: poll usage and report login state for every local agent account.

One module per command (`_status`, `_statusline`, `_poll` with `_alerts`, `_best`, `_explain`,
`_tee`, `_units`), one argparse parser (`_parse`), exit codes in one place (`_exits`), and one
boundary (`main`) that maps every outcome to them (0, 1, 2; 64 for any usage error, 130 on
Ctrl-C, 141 when stdout's reader went away), never with a traceback:

- a usage error (one type, `UsageError`): `account-cli: <problem>` naming what was wrong (any
  echoed argument redacted), then the command's usage line; `-h`/`--help` prints help, exit 0;
- a refused base URL: one fixed line, exit 64 (the URL is never printed);
- anything else is a bug: `account-cli: unexpected <type>`, exit 1; with ACCOUNT_CLI_DEBUG=1 the
  traceback too, redacted.

Each command imports what it uses when it runs: `status --statusline` runs on every prompt of an
agent client and pays for argparse and the files it reads, never for httpx.
"""

from __future__ import annotations

import os
import sys

from ._exits import (
    DEBUG_ENV,
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    err,
)

TYPE_CHECKING = False  # not typing's: the status line imports this package, never typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run `account-cli`; exits with the spec's code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`account-cli status | head -1`): stop quietly, as a program
        # killed by SIGPIPE would, and keep the interpreter's final flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_BROKEN_PIPE
    raise SystemExit(code)


def _dispatch(args: list[str]) -> int:
    from ._parse import COMMANDS, parse

    options = parse(args)
    # The builtin import, not importlib's (its package costs the status line milliseconds).
    module = COMMANDS[options.command]
    command = __import__(f"{__name__}.{module}", fromlist=[module])
    code: int = command.run(options)
    return code


def _run(args: list[str]) -> int:
    """Run one command line and map every outcome to the spec's exit codes: the one boundary."""
    try:
        return _dispatch(args)
    except UsageError as exc:
        # An argument is echoed only redacted: a pasted token must never reach stderr.
        err(_redact(exc.problem))
        sys.stderr.write(_redact(exc.usage))
        return EXIT_USAGE
    except SystemExit as exc:  # argparse's -h/--help and --version, after printing
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        raise  # handled in main, the same for every command
    except ValueError:  # a refused base URL: the URL itself is never printed
        err("configuration refused (check AGENT_API_BASE_URL and AGENT_AUTH_URL)")
        return EXIT_USAGE
    except Exception as exc:  # a fixed line, never a message
        if os.environ.get(DEBUG_ENV) == "1":
            import traceback

            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            sys.stderr.write(_redact(text))
        err(f"unexpected {type(exc).__name__}")
        return EXIT_FAILED


def _redact(text: str) -> str:
    from agent_accounts._redact import redact_secrets

    return redact_secrets(text)
