"""The one argparse parser of `account-cli`, and the checks argparse cannot express.

One table, `_SUBCOMMANDS`, names each command's module (one per command, each with
`run(options) -> int`), its help line and the function declaring its arguments: a new command is
its module, that function and one row. A line naming a command builds only that command's
parser (the status line runs on every prompt). Every refused line is one `UsageError` (exit
64): the spec makes a repeated flag one, so each flag is taken at most once.
"""

from __future__ import annotations

import argparse
import math
import os

from ._exits import PROG, UsageError

TYPE_CHECKING = False  # not typing's: the status line parses its line here, never with typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Final, NoReturn

__all__ = ["COMMANDS", "parse"]

_DEFAULT_WINDOWS: Final = ("five_hour", "seven_day")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


class _Once(argparse.Action):
    """A boolean flag given at most once (the spec makes a repeated flag a usage error)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, help=help)

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        if getattr(namespace, self.dest):
            raise argparse.ArgumentError(self, "given twice")
        setattr(namespace, self.dest, True)


class _OnceValue(argparse.Action):
    """A flag with a value, given at most once."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        if getattr(namespace, self.dest) is not None:
            raise argparse.ArgumentError(self, "given twice")
        setattr(namespace, self.dest, values)


class _Version(argparse.Action):
    """`--version`: `account-cli <version>` from the installed metadata (read only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        import sys
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("agent-accounts")
        except PackageNotFoundError:  # run from a source tree that was never installed
            text = "(version unknown: not installed)"
        sys.stdout.write(f"{PROG} {text}\n")
        parser.exit()


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, sized without `shutil` (its import pulls in bz2 and lzma)."""

    def __init__(self, prog: str) -> None:
        width = os.environ.get("COLUMNS", "")
        try:
            columns = int(width) if width.isdigit() else os.get_terminal_size(1).columns
        except OSError:  # not a terminal
            columns = 80
        super().__init__(prog, width=max(columns, 20) - 2)


def _best_arguments(p: _Parser) -> None:
    p.add_argument(
        "--window",
        action="append",
        metavar="NAME",
        help="a window to weigh (repeatable; default: five_hour and seven_day)",
    )
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--json", action=_Once, help="print JSON")
    shape.add_argument("--path", action=_Once, help="print its config dir")


def _explain_arguments(p: _Parser) -> None:
    p.add_argument("label", nargs="?", metavar="LABEL", help="one profile's label")
    p.add_argument("--json", action=_Once, help="print JSON")


def _history_arguments(p: _Parser) -> None:
    p.add_argument("label", nargs="?", metavar="LABEL", help="one profile's label")
    p.add_argument(
        "--window", action=_OnceValue, metavar="NAME", help="only this window (default: all)"
    )
    p.add_argument(
        "--since",
        action=_OnceValue,
        metavar="TIME",
        help="from this ISO 8601 time, or this long ago (90s, 30m, 2h, 7d; default: 24h)",
    )
    p.add_argument("--json", action=_Once, help="print JSON (every reading and the forecasts)")


def _poll_arguments(p: _Parser) -> None:
    p.add_argument("--write", action=_Once, help="store each reading as usage-poll.json")
    p.add_argument(
        "--refresh", action=_Once, help="refresh tokens due within 10 minutes first (needs --write)"
    )
    p.add_argument(
        "--max-age",
        action=_OnceValue,
        metavar="SECONDS",
        help="skip a profile whose newest reading (session readings included) is younger",
    )
    p.add_argument(
        "--period",
        action=_OnceValue,
        metavar="SECONDS",
        help="spread the requests over SECONDS, each profile at its own stable time, and skip "
        "one a session reports (needs --write; the unit passes its timer's 150)",
    )
    p.add_argument(
        "--alert-at",
        action=_OnceValue,
        metavar="PERCENTS",
        help="alert when a window crosses one of these upward, e.g. 80,95 (needs --write; "
        "default: $AGENT_ALERT_AT)",
    )
    p.add_argument(
        "--alert-exec",
        action=_OnceValue,
        metavar="CMD",
        help="run CMD (by /bin/sh -c) for each alert (default: $AGENT_ALERT_EXEC)",
    )
    p.add_argument("--json", action=_Once, help="print one JSON object, a row per profile")


def _run_arguments(p: _Parser) -> None:
    p.add_argument(
        "--switch-at",
        action=_OnceValue,
        metavar="PERCENT",
        help="count a window at PERCENT or more as full and switch before it (default: 100)",
    )
    p.add_argument(
        "--label",
        action=_OnceValue,
        metavar="LABEL",
        help="stay on this profile while it has room (default: the most room)",
    )
    p.add_argument(
        "command_line",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND...",
        help="the command to run with AGENT_CONFIG_DIR set to the chosen profile",
    )


def _status_arguments(p: _Parser) -> None:
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--json", action=_Once, help="print JSON")
    shape.add_argument("--statusline", action=_Once, help="print status-line rows (always exit 0)")


def _line_arguments(p: _Parser, *, tee: bool = False) -> None:
    after = " (without --then)" if tee else ""
    p.add_argument(
        "--format",
        action=_OnceValue,
        choices=("human", "pipe"),
        help=f"human: 5h 23%% 1h48m · 7d 41%% 3d2h (default); pipe: the rows of status "
        f"--statusline{after}",
    )
    p.add_argument(
        "--no-color",
        action=_Once,
        help=f"no ANSI colour on the human line (also: NO_COLOR set){after}",
    )


def _tee_arguments(p: _Parser) -> None:
    p.add_argument(
        "--then",
        action=_OnceValue,
        metavar="CMD",
        help="run CMD (by /bin/sh -c) on the same stdin (default: print the status line)",
    )
    _line_arguments(p, tee=True)


def _units_arguments(p: _Parser) -> None:
    p.add_argument("action", choices=("install",), metavar="install", help="write the units")
    p.add_argument("--dry-run", action=_Once, help="say what would be written; write nothing")
    p.add_argument("--force", action=_Once, help="replace a unit file that differs")


_SUBCOMMANDS: Final = {
    "best": (
        "_best",
        "print the label of the profile with the most headroom now (exit 2 if none)",
        _best_arguments,
    ),
    "explain": (
        "_explain",
        "tell from the refresh journal what happened to each login (or LABEL's)",
        _explain_arguments,
    ),
    "history": (
        "_history",
        "show each profile's stored readings and when each window fills (no request)",
        _history_arguments,
    ),
    "poll": ("_poll", "poll the usage endpoint for every profile", _poll_arguments),
    "run": (
        "_run",
        "run COMMAND with AGENT_CONFIG_DIR on the profile with the most room (exit 75 if none)",
        _run_arguments,
    ),
    "status": (
        "_status",
        "report login state and the newest reading of every profile (no request)",
        _status_arguments,
    ),
    "statusline": (
        "_humanline",
        "print the status line a person reads: each window's use and time to reset",
        _line_arguments,
    ),
    "statusline-tee": (
        "_tee",
        "store the status-line JSON's rate_limits as a session reading, then pass it on",
        _tee_arguments,
    ),
    "units": (
        "_units",
        "write the systemd user units (poll timer) to ~/.config/systemd/user",
        _units_arguments,
    ),
}
"""Each command: its module in `agent_accounts.cli`, help line and function adding its arguments."""
COMMANDS: Final = {name: row[0] for name, row in _SUBCOMMANDS.items()}
"""Each command and the module of `agent_accounts.cli` that runs it."""
_COMMAND_LIST: Final = ", ".join(sorted(COMMANDS)[:-1]) + f" or {sorted(COMMANDS)[-1]}"


def _build(only: str | None = None) -> tuple[_Parser, dict[str, _Parser]]:
    """Build the parser; with `only`, just that command's subparser (the status line's is hot)."""
    top = _Parser(
        prog=PROG,
        formatter_class=_Formatter,
        description="Local agent-account usage and login state (every profile discover_profiles "
        "finds: ~/.agent, ~/.agent-profiles/*, or AGENT_PROFILE_ROOT / AGENT_CONFIG_DIRS).",
        allow_abbrev=False,
    )
    top.add_argument("--version", action=_Version, help="print the version and exit")
    # `prog` given: without it argparse formats one now, importing shutil (and bz2, lzma).
    sub = top.add_subparsers(
        dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}", prog=PROG
    )
    commands: dict[str, _Parser] = {}
    for name, (_, help, arguments) in _SUBCOMMANDS.items():
        if only is None or name == only:
            parser: _Parser = sub.add_parser(
                name, help=help, formatter_class=_Formatter, allow_abbrev=False
            )
            arguments(parser)
            commands[name] = parser
    return top, commands


def parse(args: Sequence[str]) -> argparse.Namespace:
    """Return the parsed command line; raise `UsageError` naming the problem (`-h` exits 0)."""
    top, commands = _build(args[0] if args and args[0] in COMMANDS else None)
    if not args:
        raise UsageError(f"missing command ({_COMMAND_LIST})", top.format_usage())
    if not args[0].startswith("-") and args[0] not in COMMANDS:
        raise UsageError(f"unknown command {args[0]!r} ({_COMMAND_LIST})", top.format_usage())
    options, extra = top.parse_known_args(list(args))
    command = commands[options.command]
    if extra:
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}", command.format_usage())
    if options.command == "poll":
        _check_poll(options, command.format_usage())
    elif options.command == "run":
        _check_run(options, command.format_usage())
    elif (
        options.command == "statusline-tee"
        and options.then
        and (options.format is not None or options.no_color)
    ):
        raise UsageError(
            "--format and --no-color are for the tee's own line, not --then's",
            command.format_usage(),
        )
    elif options.command == "history":
        _check_history(options, command.format_usage())
    elif options.command == "best":
        from agent_accounts._usage import KNOWN_WINDOWS

        for name in options.window or ():
            if name not in KNOWN_WINDOWS:  # a usage error, not "window missing" per profile
                known = ", ".join(KNOWN_WINDOWS[:-1]) + f" or {KNOWN_WINDOWS[-1]}"
                raise UsageError(
                    f"argument --window: unknown window {name!r} ({known})",
                    command.format_usage(),
                )
        options.window = tuple(dict.fromkeys(options.window or _DEFAULT_WINDOWS))
    return options


def _percentage(text: str) -> float:
    """A percentage above 0 and at most 100, or NaN."""
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value if math.isfinite(value) and 0 < value <= 100 else math.nan


def _check_run(options: argparse.Namespace, usage: str) -> None:
    """Check run's flags: a percentage, and a command after them (`--` optional)."""
    words = list(options.command_line)
    if words[:1] == ["--"]:  # argparse keeps the separator before a REMAINDER on some Pythons
        words = words[1:]
    if not words:
        raise UsageError("missing the command to run (-- COMMAND...)", usage)
    options.command_line = words
    if options.switch_at is None:
        options.switch_at = 100.0
    else:
        options.switch_at = _percentage(options.switch_at)
        if math.isnan(options.switch_at):
            raise UsageError(
                "argument --switch-at: not a percentage above 0 and at most 100", usage
            )


_SPANS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _since(text: str) -> float | None:
    """An ISO 8601 time (a zone-less one is UTC) or a span ago (`90s`, `30m`, `2h`, `7d`)."""
    import time

    if len(text) > 1 and text[-1] in _SPANS and text[:-1].isdigit() and text.isascii():
        return time.time() - int(text[:-1]) * _SPANS[text[-1]]
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def _check_history(options: argparse.Namespace, usage: str) -> None:
    """Check history's flags: a window name and a time."""
    from agent_accounts._usage import is_window_name

    if options.window is not None and not is_window_name(options.window):
        raise UsageError(f"argument --window: not a window name: {options.window!r}", usage)
    if options.since is not None:
        since = _since(options.since)
        if since is None or not math.isfinite(since):
            raise UsageError(
                f"argument --since: not a time (ISO 8601, or 90s, 30m, 2h, 7d): {options.since!r}",
                usage,
            )
        options.since = since


def _check_poll(options: argparse.Namespace, usage: str) -> None:
    """Check poll's flags; thresholds and the hook also come from the unit's environment."""
    if options.refresh and not options.write:
        raise UsageError("--refresh needs --write", usage)
    if options.max_age is not None:
        try:
            options.max_age = float(options.max_age)
        except ValueError:
            options.max_age = math.nan
        if not math.isfinite(options.max_age) or options.max_age <= 0:
            raise UsageError("argument --max-age: not a positive number of seconds", usage)
    if options.period is not None:
        try:
            options.period = float(options.period)
        except ValueError:
            options.period = math.nan
        if not math.isfinite(options.period) or not 0 < options.period <= 86400:
            raise UsageError(
                "argument --period: not a number of seconds above 0, at most 86400", usage
            )
        if not options.write:
            raise UsageError("--period needs --write", usage)
    from ._alerts import alert_options

    alert_options(options, usage)
