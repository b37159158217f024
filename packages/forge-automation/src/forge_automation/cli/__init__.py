"""forge-cli: ci-wait, pr-status, pr-context, ci-failures, premerge, merge and train over `gh`.

One module per command (`_ci_wait`, `_pr_status`, `_pr_context`, `_ci_failures`, `_premerge`,
`_merge`, `_train`),
one argparse parser (`_parse`), exit codes in one place (`_common`), and one boundary (`main`)
that maps every outcome to them, never with a traceback:

- a usage error (one type, `UsageError`): `forge-cli: <problem>` and the command's usage line on
  stderr, exit 64 (ci-wait, pr-status, pr-context, no or an unknown command) or 2 (ci-failures,
  premerge, and merge and train after it), as the spec fixes them; `-h`/`--help` anywhere prints
  help and exits 0;
- a forge error: one redacted `forge-cli: <message>` line, exit 1; ci-wait without a verdict: 69;
- Ctrl-C: 130; anything else is a bug: exit 70, and `--debug` first (or FORGE_CLI_DEBUG=1) adds a
  redacted traceback.
"""

from __future__ import annotations

import gc
import os
import sys

from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_SOFTWARE,
    EXIT_USAGE,
    USAGE_EXIT,
    CliExit,
    UsageError,
)
from ._pr_status import prefetch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

    from ._pr_status import _Prestarted

__all__ = ["main", "script"]


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run forge-cli and exit with the spec's code for whatever happened."""
    raise SystemExit(_main(argv))


def script() -> NoReturn:
    """Run forge-cli as its console script: the process ends when the command does."""
    code = _main(None)
    # Only here does the process end next: the interpreter's last collection would walk every
    # object the command's imports made, a third of pr-status's time after its answer. Frozen
    # objects are left to the OS; atexit handlers still run. A program calling `main` keeps a
    # collector that sees all its objects.
    gc.freeze()
    raise SystemExit(code)


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("FORGE_CLI_DEBUG") == "1"
    if args[:1] == ["--debug"]:
        debug, args = True, args[1:]
    # pr-status is one short read that makes little garbage: the collector's passes over the
    # modules it imports cost it a tenth of its CPU, so it runs without them, and the collector
    # is back on when it returns (ci-wait and train run long and keep theirs).
    pause = args[:1] == ["pr-status"] and gc.isenabled()
    if pause:
        gc.disable()
    try:
        code = _run(args, debug=debug)
    finally:
        if pause:
            gc.enable()
    sys.stdout.flush()
    return code


def _dispatch(args: list[str], early: _Prestarted | None) -> None:
    if early is not None:
        # `prefetch` started a read only for a plain, valid `pr-status <ref> [--json]`, which
        # needs no parser (argparse and gettext cost a gh call's tenth to import).
        from ._pr_status import pr_status_command

        ref = next(a for a in args[1:] if a != "--json")
        pr_status_command(ref, as_json="--json" in args, early=early)
        return
    from ._parse import parse

    command, values = parse(args)
    if command == "pr-status":
        from ._pr_status import pr_status_command

        pr_status_command(**values, early=early)
    elif command == "ci-wait":
        from ._ci_wait import ci_wait_command

        ci_wait_command(**values)
    elif command == "pr-context":
        from ._pr_context import pr_context_command

        pr_context_command(**values)
    elif command == "ci-failures":
        from ._ci_failures import ci_failures_command

        ci_failures_command(**values)
    elif command == "premerge":
        from ._premerge import premerge_command

        premerge_command(**values)
    elif command == "merge":
        from ._merge import merge_command

        merge_command(**values)
    else:
        from ._train import train_command

        train_command(**values)


def _run(args: list[str], *, debug: bool) -> int:
    """The one error boundary: run the command line, return its exit code."""
    command = args[0] if args and args[0] in USAGE_EXIT else None
    early = prefetch(args)  # first: everything below may run beside pr-status's first reads
    from .._errors import ForgeError, ForgeInputError

    try:
        try:
            _dispatch(args, early)
        finally:
            if early is not None:
                early.close()
    except CliExit as done:
        if done.message:
            _stderr(done.message)
        return done.code
    except UsageError as exc:
        return _usage(exc.problem, exc.command or command, exc.usage)
    except ForgeInputError as exc:
        return _usage(str(exc), command, "")
    except ForgeError as exc:
        _stderr(str(exc))
        return EXIT_FAILED
    except KeyboardInterrupt:
        _stderr("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # the boundary: anything else is a bug, shown without secrets
        if debug:
            import traceback

            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            sys.stderr.write(_redact(text))
        _stderr(f"internal error ({type(exc).__name__}); rerun with --debug")
        return EXIT_SOFTWARE
    return 0


def _usage(problem: str, command: str | None, usage: str) -> int:
    if not usage:
        from ._parse import usage_of

        usage = usage_of(command)
    _stderr(problem)
    sys.stderr.write(_redact(usage))
    sys.stderr.flush()
    return USAGE_EXIT.get(command or "", EXIT_USAGE)


def _redact(text: str) -> str:
    from .._redact import redact_forge_secrets

    return redact_forge_secrets(text)


def _stderr(message: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(f"forge-cli: {_redact(message)}\n")
    sys.stderr.flush()
