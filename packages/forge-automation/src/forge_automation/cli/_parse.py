"""The one argparse parser of forge-cli: every command's arguments, help and usage errors.

argparse is the standard library's (no typer: its import alone cost half a second). Its `error`
raises the one UsageError with the command's usage line instead of exiting with 2; an option
given twice is refused (`given twice`) instead of silently keeping the last value.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ._common import COMMANDS, UsageError

__all__ = ["parse", "usage_of"]

PROG = "forge-cli"
DESCRIPTION = (
    "Read a forge's PRs and CI through the logged-in gh (GH_HOST, GH_TOKEN and the rest of gh's "
    "environment work as usual)."
)


def _formatter(prog: str) -> argparse.HelpFormatter:
    # The width given here spares argparse its `shutil` import (and bz2, lzma, fnmatch with it),
    # which it would otherwise make for every `add_argument`.
    try:
        width = int(os.environ.get("COLUMNS", "")) - 2
    except ValueError:
        try:
            width = os.get_terminal_size(sys.stdout.fileno()).columns - 2
        except (OSError, ValueError):
            width = 78
    return argparse.HelpFormatter(prog, width=max(width, 40))


class _Parser(argparse.ArgumentParser):
    command: str | None = None

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, command=self.command, usage=_usage_line(self))


def _usage_line(parser: argparse.ArgumentParser) -> str:
    # One line whatever the terminal's width: argparse wraps a long usage to COLUMNS.
    return " ".join(part.strip() for part in parser.format_usage().splitlines()) + "\n"


class _Once(argparse.Action):
    """Store an option's value (or True for a flag), refusing the option given a second time."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if self.dest in getattr(namespace, "_given", set()):
            raise argparse.ArgumentError(self, "given twice")
        namespace._given = {*getattr(namespace, "_given", set()), self.dest}
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


class _Version(argparse.Action):
    """`--version`: print `forge-cli X.Y.Z` and exit 0 (the metadata is read only then)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from .._dist import version_line

        sys.stdout.write(version_line(PROG) + "\n")
        parser.exit(0)


def _flag(parser: argparse.ArgumentParser, name: str, dest: str, help: str) -> None:
    parser.add_argument(name, dest=dest, action=_Once, nargs=0, default=False, help=help)


def _text(
    parser: argparse.ArgumentParser, name: str, metavar: str, help: str, *, required: bool = False
) -> None:
    _option(parser, name, type=str, default=None, metavar=metavar, help=help, required=required)


def _merge_arguments(p: argparse.ArgumentParser) -> None:
    """REPO#N HEAD_SHA --approved-head SHA [--clone DIR]: what premerge and merge both take."""
    p.add_argument("ref", metavar="REPO#N", help="owner/name#number")
    p.add_argument("head_sha", metavar="HEAD_SHA", help="the head to merge, 40 hex characters")
    _text(p, "--approved-head", "SHA", "the head a reviewer approved", required=True)
    _text(p, "--clone", "DIR", "a fetched clone holding head, approved head and base tip")


def _ci_wait_options(p: argparse.ArgumentParser, *, timeout: str, grace: str) -> None:
    """--timeout S --interval S --grace S: how ci-wait and each CI wait of train poll."""
    _option(p, "--timeout", type=float, default=1800.0, metavar="S", help=timeout)
    _option(p, "--interval", type=float, default=15.0, metavar="S", help="between polls (15)")
    _option(p, "--grace", type=float, default=None, metavar="S", help=grace)


def _option(
    parser: argparse.ArgumentParser,
    name: str,
    *,
    type: Callable[[str], object],
    default: object,
    metavar: str,
    help: str,
    required: bool = False,
) -> None:
    parser.add_argument(
        name,
        action=_Once,
        type=type,
        default=default,
        metavar=metavar,
        help=help,
        required=required,
    )


def _build(only: str | None = None) -> tuple[_Parser, dict[str, _Parser]]:
    """Build the parser; with `only`, just that command's subparser (pr-status runs often)."""
    top = _Parser(
        prog=PROG, description=DESCRIPTION, allow_abbrev=False, formatter_class=_formatter
    )
    top.add_argument("--debug", action="store_true", help="show a redacted traceback for a bug")
    top.add_argument("--version", action=_Version, help="print the version and exit")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands: dict[str, _Parser] = {}

    def command(name: str, help: str) -> _Parser:
        if only is not None and name != only:
            # Not added to the top parser: its arguments below land on a throwaway one.
            return _Parser(prog=name, add_help=False, formatter_class=_formatter)
        parser: _Parser = sub.add_parser(
            name, help=help, description=help, allow_abbrev=False, formatter_class=_formatter
        )
        parser.command = name
        commands[name] = parser
        return parser

    p = command(
        "ci-wait",
        "Wait for CI on a sha or a PR's head: GREEN (0), RED (1), TIMEOUT (2), MOVED (3).",
    )
    p.add_argument("target", metavar="REPO|REPO#N", help="owner/name, or owner/name#number")
    p.add_argument(
        "sha", metavar="SHA", nargs="?", default=None, help="the pushed commit (REPO form)"
    )
    _ci_wait_options(
        p,
        timeout="seconds (1800)",
        grace="a required check not reported S seconds in is RED (never reported)",
    )
    _flag(p, "--required", "required", "count only the base branch's required checks")
    _flag(p, "--fail-fast", "fail_fast", "end RED on the first failure, not once all finish")
    _text(
        p,
        "--base",
        "BRANCH",
        "with --required and a sha: the branch (default: the repository's default)",
    )
    _flag(p, "--quiet", "quiet", "no progress on stderr, only the verdict")
    _flag(p, "--json", "as_json", "print the verdict as one JSON object")

    p = command("pr-status", "A PR's state, head, mergeability, checks and blockers, one line.")
    p.add_argument("ref", metavar="REPO#N", help="owner/name#number")
    _flag(p, "--json", "as_json", "print one JSON object")

    p = command("pr-context", "A PR's title, base, head sha and changed files, then its body.")
    p.add_argument("ref", metavar="REPO#N", help="owner/name#number")
    _flag(p, "--json", "as_json", "print one JSON object")

    p = command("ci-failures", "Why built-in CI failed at a PR's head (at most 5 jobs).")
    p.add_argument("target", metavar="REPO#N|REPO", help="owner/name#number, or owner/name --job")
    _option(p, "--job", type=int, default=None, metavar="ID", help="a check run (job) id")
    _option(p, "--lines", type=int, default=20, metavar="N", help="tail lines per log (20)")
    _flag(p, "--json", "as_json", "print one JSON object")

    p = command("premerge", "Check a PR may merge at HEAD_SHA: OK (0) or FAIL with reasons (1).")
    _merge_arguments(p)
    _flag(p, "--json", "as_json", "print one JSON object")

    p = command(
        "merge",
        "Premerge, squash-merge a PR at HEAD_SHA, delete its head branch: MERGED (0), FAIL (1) "
        "or MOVED (3).",
    )
    _merge_arguments(p)
    p.add_argument(
        "--task-id",
        dest="task_ids",
        action="append",
        default=[],
        metavar="ID",
        help="a task id for the squash subject and Refs line (repeatable)",
    )
    _flag(p, "--json", "as_json", "print one JSON object")

    p = command(
        "train",
        "Merge the PRs carrying LABEL one at a time, oldest first; drop (comment, unlabel) those "
        "that cannot merge.",
    )
    p.add_argument("repo", metavar="REPO", help="owner/name")
    _text(p, "--label", "LABEL", "the queue's label", required=True)
    _text(
        p,
        "--clone",
        "DIR",
        "a clone whose origin is the repository: fetched, then premerge runs git in it",
    )
    _flag(p, "--dry-run", "dry_run", "say what would happen; write nothing")
    _ci_wait_options(
        p,
        timeout="per CI wait (1800)",
        grace="a required check not reported S seconds into a CI wait is never reported (300;"
        " with --batch each check's own, from its recent runs on the base)",
    )
    _option(
        p,
        "--batch",
        type=int,
        default=None,
        metavar="N",
        help="test N PRs at once as a car on train/<base>/<id> (needs --clone); bisect a red car",
    )
    _option(
        p,
        "--max-wait",
        type=float,
        default=0.0,
        metavar="S",
        help="with --batch: wait up to S seconds for N labelled PRs before the first car (0)",
    )
    _option(
        p,
        "--retry-flaky",
        type=int,
        default=0,
        metavar="N",
        help="with --batch: rerun a red car's failed Actions jobs up to N times before bisecting",
    )
    _option(
        p,
        "--speculate",
        type=int,
        default=0,
        metavar="K",
        help="with --batch: up to K further cars ride on the car in CI, each tested at the same "
        "time on the commit of the car before; discarded when a car below is red (0)",
    )
    _option(
        p,
        "--max-cars",
        type=int,
        default=None,
        metavar="M",
        help="with --batch: at most M cars in CI at once, speculative and bisection cars "
        "together (1 + K); with M >= 2 a red car's halves are tested at once",
    )
    p.add_argument(
        "--land",
        action=_Once,
        choices=("merge", "push"),
        default="merge",
        help="with --batch: land a green car by merging its PRs one by one (merge, default) or "
        "by fast-forwarding the base to the tested car commit (push: needs a bypass of the "
        "base's protection)",
    )
    _flag(p, "--quiet", "quiet", "no CI progress on stderr")
    _flag(p, "--json", "as_json", "print one JSON object at the end (steps go to stderr)")
    return top, commands


def parse(args: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """Return (command, keyword arguments) for `args`, or raise UsageError; -h exits 0."""
    top, commands = _build(args[0] if args and args[0] in COMMANDS else None)
    if not args:
        raise UsageError(f"missing command ({', '.join(COMMANDS)})", usage=_usage_line(top))
    if not args[0].startswith("-") and args[0] not in commands:
        raise UsageError(
            f"unknown command {args[0][:100]!r} ({', '.join(COMMANDS)})", usage=_usage_line(top)
        )
    namespace, extra = top.parse_known_args(list(args))
    if namespace.command is None and extra:
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}", usage=_usage_line(top))
    if namespace.command is None:
        raise UsageError(f"missing command ({', '.join(COMMANDS)})", usage=_usage_line(top))
    if extra:
        # Reported with the command's usage line, not the top level's, as argparse would not.
        parser = commands[namespace.command]
        raise UsageError(
            f"unrecognized arguments: {' '.join(extra)}",
            command=namespace.command,
            usage=_usage_line(parser),
        )
    values = {k: v for k, v in vars(namespace).items() if k not in ("command", "debug", "_given")}
    return str(namespace.command), values


def usage_of(command: str | None) -> str:
    """Return the usage line of `command` (the top level's when None or unknown)."""
    top, commands = _build(command if command in COMMANDS else None)
    return _usage_line(commands.get(command or "", top))
