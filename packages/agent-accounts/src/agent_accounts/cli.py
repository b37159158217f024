"""`account-cli`: poll usage and report login state for every local agent account.

`status --statusline` runs on every prompt of an agent client, so that exact line is dispatched
before anything else is imported (no argparse, no httpx), always exits 0 and never writes stderr.
Every other line goes through one argparse parser (`_parse`) and one boundary (`_run`) that maps
each outcome to the spec's exit codes (0, 1, 2; 64 for any usage error, 130 on Ctrl-C). A usage
error is one `UsageError`: `account-cli: <problem>` naming what was wrong (any echoed argument
redacted), then the command's usage line. No traceback, file content or token is ever printed.
"""

from __future__ import annotations

import math
import os
import sys

# Not `typing.TYPE_CHECKING`: the status line imports neither typing nor dataclasses (each costs
# milliseconds on every prompt); type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Final, Literal, NoReturn

    from agent_accounts import UsageReading
    from agent_accounts.io import PollEntry, PollResult, Profile

__all__ = ["main"]

PROG: Final = "account-cli"
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_LOGIN: Final = 2
EXIT_USAGE: Final = 64
EXIT_INTERRUPTED: Final = 130
REFRESH_MARGIN_MS: Final = 10 * 60 * 1000
LOCK_REPORT_AFTER_S: Final = 30
"""A refresh lock older than the 30 s refresh cap is reported by `status` on stderr."""
API_BASE_ENV: Final = "AGENT_API_BASE_URL"
AUTH_URL_ENV: Final = "AGENT_AUTH_URL"
CONFIG_DIR_ENV: Final = "AGENT_CONFIG_DIR"
ALERT_AT_ENV: Final = "AGENT_ALERT_AT"
ALERT_EXEC_ENV: Final = "AGENT_ALERT_EXEC"
_STATUSLINE_UNKNOWN: Final = "unknown|unknown|||||||"
_BOTH: Final = ("five_hour", "seven_day")


def _shown(text: str) -> str:
    """Redact a label or path before printing: a dir name can look like a token."""
    from agent_accounts._redact import redact_secrets

    return redact_secrets(text)


_PLAIN_LABEL_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._")


def _statusline_label(label: str) -> str:
    """Redact a label for the status line, skipping `re` for a short plain one.

    A label of at most 24 lower-case letters, digits, `.` and `_` (no `-`, so no `sk-...` key
    prefix; no `:`, `=`, `%`, `&` or space, so no field, scheme or encoded form; far shorter than
    the 32-character opaque run) is one `redact_secrets` returns unchanged, which a property test
    holds it to; anything else goes through `redact_secrets`.
    """
    if len(label) <= 24 and _PLAIN_LABEL_CHARS.issuperset(label):
        return label
    return _shown(label)


def _err(line: str) -> None:
    sys.stderr.write(f"{PROG}: {line}\n")


def _percent(value: float) -> str:
    return f"{value:g}%"


def _windows_text(rate_limits: dict[str, Any]) -> str:
    names = sorted(rate_limits, key=_window_order)
    return ", ".join(f"{name} {_percent(rate_limits[name]['used_percentage'])}" for name in names)


# ---- status --statusline: the hot path -------------------------------------------------------


def _floor(value: object) -> str:
    return str(math.floor(value)) if isinstance(value, int | float) else ""


def _statusline_fields(reading: UsageReading, age: int) -> tuple[str, str, str, str, str]:
    limits = reading["rate_limits"]
    five, week = limits["five_hour"], limits["seven_day"]
    return (
        _floor(five["used_percentage"]),
        _floor(week["used_percentage"]),
        _floor(five.get("resets_at")),
        _floor(week.get("resets_at")),
        str(age),
    )


def _statusline() -> str:
    # The dataclass-free cores of read_usage and discover_profiles: same files, same gate, same
    # redaction, without importing typing or dataclasses.
    from agent_accounts.io._discovery import default_config_dir, profile_dirs
    from agent_accounts.io._readings import newest_reading

    current = os.environ.get(CONFIG_DIR_ENV) or default_config_dir()
    lines: list[str] = []
    try:
        mine = newest_reading(current, windows=_BOTH, redact_text=False)
    except Exception:  # an unreadable dir is an unknown account, never a failed prompt
        mine = None
    if mine is None:
        lines.append(_STATUSLINE_UNKNOWN)
    else:
        five, week, five_reset, week_reset, age = _statusline_fields(mine[0], mine[2])
        lines.append(f"{five}|{week}|{five_reset}|{week_reset}|||||{age}")
    here = os.path.realpath(current)
    for label, config_dir in profile_dirs():
        # A label that could break the line format is left out rather than mangled.
        if "|" in label or not label.isprintable():
            continue
        try:
            same = os.path.realpath(config_dir) == here
            usage = None if same else newest_reading(config_dir, windows=_BOTH, redact_text=False)
        except Exception:  # one unreadable profile never hides the others
            usage = None
        if usage is not None:
            five, week, _, _, age = _statusline_fields(usage[0], usage[2])
            lines.append(f"other|{_statusline_label(label)}|{five}|{week}|{age}|")
    return "\n".join(lines) + "\n"


def _run_statusline() -> int:
    """Print the status line; exit 0 whatever happens, with nothing on stderr."""
    try:
        text = _statusline()
    except Exception:  # the status line never fails the prompt that runs it
        text = _STATUSLINE_UNKNOWN + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except Exception:  # a closed pipe is the agent client's business
        return EXIT_OK
    return EXIT_OK


# ---- status and poll ---------------------------------------------------------------------------


def _say_none_found() -> None:
    """Tell a user with no profile where discovery looked (on stdout: an answer, not a fault)."""
    from agent_accounts.io._discovery import searched_dirs

    where = " and ".join(_shown(d) for d in searched_dirs())
    sys.stdout.write(f"no profiles found (searched {where})\n")


def _login_line(label: str, login: Any) -> str:
    detail = login.status
    if login.status == "refused":
        detail = f"refused ({login.reason})"
    return f"{label}: login {detail}"


def _window_order(name: str) -> tuple[int, str]:
    # Known windows in the spec's order first (five_hour before seven_day), then any new ones.
    from agent_accounts._usage import KNOWN_WINDOWS

    return (KNOWN_WINDOWS.index(name) if name in KNOWN_WINDOWS else len(KNOWN_WINDOWS), name)


def _pace_line(name: str, pace: dict[str, Any]) -> str:
    """One window's pace for the text view: used, elapsed, and the projected time of 100%."""
    parts = [f"{_percent(pace['used_percentage'])} used"]
    elapsed = pace["elapsed_percentage"]
    if elapsed is None:
        parts.append("elapsed unknown")
    else:
        parts.append(f"{elapsed:.0f}% elapsed")
    full = pace["projected_full_at"]
    parts.append("100% not projected" if full is None else f"100% projected at {_iso(full)}")
    return f"  {name}: {', '.join(parts)}"


def _status(as_json: bool) -> int:
    import json
    import time

    from agent_accounts._pace import reading_pace
    from agent_accounts.io import discover_profiles, read_login_state, read_usage
    from agent_accounts.io._freshness import clock_ahead_notes, older_windows
    from agent_accounts.io._locks import held_lock_age

    now = time.time()
    code = EXIT_OK
    rows: list[dict[str, Any]] = []
    profiles = discover_profiles()
    if not profiles and not as_json:
        _say_none_found()
    for profile in profiles:
        label = _shown(profile.label)
        try:
            login: Any = read_login_state(profile.config_dir)
            login_json = login.to_json()
        except OSError:
            login, login_json = None, {"status": "unreadable"}
            code = max(code, EXIT_FAILED)
            _err(f"{label}: login unreadable")
        if login is not None and login.status != "present":
            code = EXIT_LOGIN
            _err(_login_line(label, login))
        lock_age = held_lock_age(str(profile.config_dir), now)
        if lock_age is not None and lock_age > LOCK_REPORT_AFTER_S:
            _err(f"{label}: refresh lock held")
        try:
            ahead = [_shown(note) for note in clock_ahead_notes(str(profile.config_dir), now=now)]
        except (OSError, ValueError):
            ahead = []  # the usage read below reports an unreadable sessions dir
        older: dict[str, Any] = {}
        try:
            usage = read_usage(profile.config_dir, now=now)
            if usage is not None:
                older = older_windows(
                    str(profile.config_dir), shown=usage.reading["rate_limits"], now=now
                )
        except OSError:
            usage = None
            code = max(code, EXIT_FAILED)
            _err(f"{label}: usage unreadable")
        rows.append(
            {
                "label": label,
                "configDir": _shown(profile.config_dir),
                "login": login_json,
                "usage": None
                if usage is None
                else {
                    "written_at": usage.reading["written_at"],
                    "age_seconds": usage.age_seconds,
                    "rate_limits": usage.reading["rate_limits"],
                    "pace": {
                        name: pace.to_json()
                        for name, pace in sorted(
                            reading_pace(usage.reading, now).items(),
                            key=lambda item: _window_order(item[0]),
                        )
                    },
                    "older_windows": {
                        name: older[name] for name in sorted(older, key=_window_order)
                    },
                },
                "refreshLock": None if lock_age is None else {"age_seconds": int(lock_age)},
                "clockAhead": ahead,
            }
        )
    if as_json:
        sys.stdout.write(json.dumps({"profiles": rows}, indent=2) + "\n")
        return code
    for row in rows:
        parts = [f"login {row['login']['status']}"]
        if row["refreshLock"] is not None and not any(
            note.startswith("refresh lock") for note in row["clockAhead"]
        ):
            parts.append(f"refresh lock held {row['refreshLock']['age_seconds']}s")
        usage_row = row["usage"]
        if usage_row is None:
            parts.append("no reading")
        else:
            parts.append(
                f"{_windows_text(usage_row['rate_limits'])} ({usage_row['age_seconds']}s old)"
            )
        sys.stdout.write(f"{row['label']}: {'; '.join(parts)}\n")
        if usage_row is not None:
            for name, pace in usage_row["pace"].items():
                sys.stdout.write(_pace_line(name, pace) + "\n")
            for name, window in usage_row["older_windows"].items():
                used, age = _percent(window["used_percentage"]), window["age_seconds"]
                sys.stdout.write(f"  {name} {used} ({age}s old, an older reading)\n")
        for note in row["clockAhead"]:
            sys.stdout.write(f"  clock ahead: {note}\n")
    return code


def _iso(epoch_s: float) -> str:
    from datetime import UTC, datetime

    return (
        datetime.fromtimestamp(epoch_s, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def _report_poll(label: str, result: PollResult, entry: PollEntry | None) -> int:
    """Print one profile's poll outcome; return its exit code."""
    label = _shown(label)
    if result.ok:
        sys.stdout.write(f"{label}: {_windows_text(dict(result.reading['rate_limits']))}\n")
        if entry is not None and entry.write_error is not None:
            _err(f"{label}: usage write failed")
            return EXIT_FAILED
        return EXIT_OK
    failure = result.failure
    if failure == "missing":
        sys.stdout.write(f"{label}: no login, skipped\n")
        return EXIT_OK
    if failure == "backoff" and entry is not None and entry.backoff_until is not None:
        sys.stdout.write(f"{label}: rate limited, skipped until {_iso(entry.backoff_until)}\n")
        return EXIT_OK
    if failure == "expired":
        _err(f"{label}: login expired")
        return EXIT_LOGIN
    if failure == "refused":
        _err(f"{label}: login refused ({result.reason or 'malformed'})")
        return EXIT_LOGIN
    _err(f"{label}: poll failed: {failure}")
    return EXIT_FAILED


async def _refresh_all(profiles: Sequence[Profile], auth_url: str | None) -> int:
    """Run the token refresh for every profile first; return the worst exit code."""
    import asyncio

    import httpx

    from agent_accounts.io import DEFAULT_AUTH_URL, refresh_if_needed

    # No onFailure: the command line files no deposit.
    async with httpx.AsyncClient(follow_redirects=False, timeout=None) as client:  # noqa: S113
        results = await asyncio.gather(
            *(
                refresh_if_needed(
                    p,
                    client=client,
                    margin_ms=REFRESH_MARGIN_MS,
                    auth_url=auth_url or DEFAULT_AUTH_URL,
                )
                for p in profiles
            )
        )
    code = EXIT_OK
    for profile, result in zip(profiles, results, strict=True):
        if result.status == "refreshed":
            sys.stdout.write(f"{_shown(profile.label)}: token refreshed\n")
        elif result.status == "failed":
            _err(f"{_shown(profile.label)}: token refresh failed: {result.failure_text}")
            code = EXIT_FAILED
        elif result.status == "locked":
            # Never silent: a lock that blocks is named, and `status` shows its age.
            _err(f"{_shown(profile.label)}: token refresh locked: another refresh holds the lock")
    return code


def _fresh_readings(
    profiles: Sequence[Profile], max_age: float, alerting: bool
) -> dict[str, tuple[Any, int]]:
    """The profiles (by config dir) whose poll `--max-age` skips: see `io._freshness`."""
    import time

    from agent_accounts.io._freshness import poll_skip_reading

    now = time.time()
    fresh: dict[str, tuple[Any, int]] = {}
    for profile in profiles:
        try:
            found = poll_skip_reading(
                str(profile.config_dir), max_age=max_age, now=now, alerting=alerting
            )
        except (OSError, ValueError):
            continue  # unreadable: poll it, and let the poll say what is wrong
        if found is not None:
            fresh[str(profile.config_dir)] = found
    return fresh


async def _poll(
    write: bool,
    refresh: bool,
    *,
    max_age: float | None = None,
    thresholds: Sequence[float] | None = None,
    alert_exec: str | None = None,
) -> int:
    import asyncio

    from agent_accounts.io import DEFAULT_API_BASE, discover_profiles, poll_all, poll_usage

    api_base = os.environ.get(API_BASE_ENV) or DEFAULT_API_BASE
    profiles = discover_profiles()
    if not profiles:
        _say_none_found()
    code = EXIT_OK
    if refresh:
        code = await _refresh_all(profiles, os.environ.get(AUTH_URL_ENV) or None)
    fresh = {} if max_age is None else _fresh_readings(profiles, max_age, bool(thresholds))
    targets = [p for p in profiles if str(p.config_dir) not in fresh]
    if write:
        entries = await poll_all(profiles=targets, api_base=api_base) if targets else []
        outcomes: dict[str, tuple[PollResult, PollEntry | None]] = {
            str(p.config_dir): (e.result, e) for p, e in zip(targets, entries, strict=True)
        }
    else:
        import httpx

        # One client for every profile, redirects off; one deadline per request bounds it.
        async with httpx.AsyncClient(follow_redirects=False, timeout=None) as client:  # noqa: S113
            results = await asyncio.gather(
                *(poll_usage(p, client=client, api_base=api_base) for p in targets)
            )
        outcomes = {str(p.config_dir): (r, None) for p, r in zip(targets, results, strict=True)}
    codes = []
    for profile in profiles:
        if str(profile.config_dir) in fresh:
            reading, age = fresh[str(profile.config_dir)]
            windows = _windows_text(dict(reading["rate_limits"]))
            sys.stdout.write(f"{_shown(profile.label)}: {windows} ({age}s old, not polled)\n")
            continue
        result, entry = outcomes[str(profile.config_dir)]
        codes.append(_report_poll(profile.label, result, entry))
    if thresholds:
        from agent_accounts.io._alerts import run_alerts

        codes.append(run_alerts(profiles, thresholds, alert_exec))
    return max([code, *codes])


# ---- best: the account to use now -------------------------------------------------------------


def _plain_path(path: str) -> str:
    """Redact a config dir before printing, skipping `re` for a path of plain segments.

    Each segment (between `/`) a plain label, `-` allowed but never `sk-` (the vendor key
    prefix): `/` and `.` split any opaque run, so nothing `redact_secrets` matches can form; a
    property test holds it to that. Anything else goes through `redact_secrets`.
    """
    for segment in path.split("/"):
        if len(segment) > 24 or not _PLAIN_PATH_CHARS.issuperset(segment) or "sk-" in segment:
            return _shown(path)
    return path


_PLAIN_PATH_CHARS: Final = _PLAIN_LABEL_CHARS | {"-"}


def _best(windows: Sequence[str], as_json: bool, as_path: bool) -> int:
    # The dataclass-free cores of discover_profiles, read_login_state and choose_best: the same
    # files, gate and rules, without typing, dataclasses, json or re (`best` runs before agents
    # start, over every profile).
    import time

    from agent_accounts._best import FRESH_READING_S, rank_rows
    from agent_accounts.io._credentials import read_login_facts
    from agent_accounts.io._discovery import profile_dirs
    from agent_accounts.io._readings import newest_reading

    now = time.time()
    profiles = profile_dirs()
    rows = []
    for label, config_dir in profiles:
        try:
            facts = read_login_facts(config_dir, now_ms=now * 1000)
            status: str | None = facts.status
            can_refresh = facts.can_refresh
        except OSError:
            status, can_refresh = None, False
        try:
            # The newest reading holding every named window (its text fields are never printed,
            # so they need no redaction); failing that, the newest at all, so the reason given
            # is the window it lacks rather than no reading.
            usage = newest_reading(config_dir, windows=windows, redact_text=False)
            if usage is None:
                usage = newest_reading(config_dir, redact_text=False)
        except OSError:
            usage = None
        rows.append((label, status, can_refresh, None if usage is None else usage[0]))
    ranked = rank_rows(rows, now, windows, FRESH_READING_S)
    if isinstance(ranked, list):
        why = "; ".join(f"{_shown(label)}: {reason}" for label, reason in ranked)
        _err(f"no account qualifies ({why or 'no profiles found'})")
        return EXIT_LOGIN
    index, headroom, resets = ranked
    label, config_dir = profiles[index]
    if as_path:
        sys.stdout.write(_plain_path(config_dir) + "\n")
    elif as_json:
        import json

        doc = {
            "label": _shown(label),
            "configDir": _shown(config_dir),
            "headroom_percentage": headroom,
            "resets_at": None if math.isinf(resets) else resets,
            "windows": list(windows),
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(_statusline_label(label) + "\n")
    return EXIT_OK


def _best_args(args: Sequence[str]) -> tuple[tuple[str, ...], bool, bool] | None:
    """Parse a well-formed `best` command line without argparse; None for anything else.

    Anything this does not take (help, errors, unknown flags) goes through `_parse`, which a
    test holds this to for every line it takes.
    """
    from agent_accounts._usage import is_window_name

    if not args or args[0] != "best":
        return None
    windows: list[str] = []
    as_json = as_path = False
    rest = iter(args[1:])
    for arg in rest:
        if arg == "--json" and not (as_json or as_path):
            as_json = True
        elif arg == "--path" and not (as_json or as_path):
            as_path = True
        elif arg == "--window" or arg.startswith("--window="):
            name = arg.partition("=")[2] if "=" in arg else next(rest, None)
            if name is None or not is_window_name(name):
                return None
            windows.append(name)
        else:
            return None
    return tuple(dict.fromkeys(windows or _BOTH)), as_json, as_path


# ---- explain: what happened to a login -------------------------------------------------------


def _explain(label: str | None, as_json: bool) -> int:
    import json

    from agent_accounts.io import discover_profiles
    from agent_accounts.io._explain import explain_profile

    profiles = discover_profiles()
    if label is not None:
        profiles = [p for p in profiles if p.label == label]
        if not profiles:
            _err(f"no profile labelled {_shown(label)!r}")
            return EXIT_LOGIN
    rows = []
    for profile in profiles:
        found = explain_profile(str(profile.config_dir))
        current = found.current
        if current is None or isinstance(current, str):
            now_held: dict[str, Any] = {"status": current or "missing"}
        else:
            now_held = {"status": "present", "generation": current.gen}
        rows.append(
            {
                "label": _shown(profile.label),
                "configDir": _shown(str(profile.config_dir)),
                "verdict": found.explanation.verdict,
                "summary": found.explanation.summary,
                "story": list(found.explanation.story),
                "current": now_held,
                "journal": [entry.to_json() for entry in found.entries],
            }
        )
    if as_json:
        sys.stdout.write(json.dumps({"profiles": rows}, indent=2) + "\n")
        return EXIT_OK
    if not rows:
        _say_none_found()
    for row in rows:
        sys.stdout.write(f"{row['label']}: {row['summary']}\n")
        for line in row["story"]:
            sys.stdout.write(f"  {line}\n")
    return EXIT_OK


# ---- the command line: one parser, one usage-error type, one boundary --------------------------

COMMANDS: Final = ("best", "explain", "poll", "status", "statusline-tee")
_COMMAND_LIST: Final = "best, explain, poll, status or statusline-tee"


class UsageError(Exception):
    """A command line refused: `account-cli: <problem>`, then the usage line; exit 64."""

    def __init__(self, problem: str, usage: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.usage = usage


def _parser() -> tuple[Any, dict[str, Any]]:
    """Build the argparse parser (stdlib: cheap to import) and its two subcommand parsers."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(message, self.format_usage())

    class Once(argparse.Action):
        """A boolean flag given at most once (the spec makes a repeated flag a usage error)."""

        def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
            super().__init__(option_strings, dest, nargs=0, default=False, help=help)

        def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
            if getattr(namespace, self.dest):
                raise argparse.ArgumentError(self, "given twice")
            setattr(namespace, self.dest, True)

    class OnceValue(argparse.Action):
        """A flag with a value, given at most once."""

        def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
            if getattr(namespace, self.dest) is not None:
                raise argparse.ArgumentError(self, "given twice")
            setattr(namespace, self.dest, values)

    class Formatter(argparse.HelpFormatter):
        """argparse's formatter, sized without `shutil` (its import pulls in bz2 and lzma)."""

        def __init__(self, prog: str) -> None:
            width = os.environ.get("COLUMNS", "")
            try:
                columns = int(width) if width.isdigit() else os.get_terminal_size(1).columns
            except OSError:  # not a terminal
                columns = 80
            super().__init__(prog, width=max(columns, 20) - 2)

    top = Parser(
        prog=PROG,
        formatter_class=Formatter,
        description="Local agent-account usage and login state (every profile discover_profiles "
        "finds: ~/.agent, ~/.agent-profiles/*, or AGENT_PROFILE_ROOT / AGENT_CONFIG_DIRS).",
        allow_abbrev=False,
    )
    # `prog` given: without it argparse formats one now, importing shutil (and bz2, lzma).
    commands = top.add_subparsers(
        dest="command",
        required=True,
        metavar="{best,explain,poll,status,statusline-tee}",
        prog=PROG,
    )
    best = commands.add_parser(
        "best",
        formatter_class=Formatter,
        help="print the label of the profile with the most headroom now (exit 2 if none)",
        allow_abbrev=False,
    )
    best.add_argument(
        "--window",
        action="append",
        metavar="NAME",
        help="a window to weigh (repeatable; default: five_hour and seven_day)",
    )
    best_shape = best.add_mutually_exclusive_group()
    best_shape.add_argument("--json", action=Once, help="print JSON")
    best_shape.add_argument("--path", action=Once, help="print its config dir")
    explain = commands.add_parser(
        "explain",
        formatter_class=Formatter,
        help="tell from the refresh journal what happened to each login (or LABEL's)",
        allow_abbrev=False,
    )
    explain.add_argument("label", nargs="?", metavar="LABEL", help="one profile's label")
    explain.add_argument("--json", action=Once, help="print JSON")
    poll = commands.add_parser(
        "poll",
        help="poll the usage endpoint for every profile",
        allow_abbrev=False,
        formatter_class=Formatter,
    )
    poll.add_argument("--write", action=Once, help="store each reading as usage-poll.json")
    poll.add_argument(
        "--refresh", action=Once, help="refresh tokens due within 10 minutes first (needs --write)"
    )
    poll.add_argument(
        "--max-age",
        action=OnceValue,
        metavar="SECONDS",
        help="skip a profile whose newest reading (session readings included) is younger",
    )
    poll.add_argument(
        "--alert-at",
        action=OnceValue,
        metavar="PERCENTS",
        help=f"alert when a window crosses one of these upward, e.g. 80,95 (needs --write; "
        f"default: ${ALERT_AT_ENV})",
    )
    poll.add_argument(
        "--alert-exec",
        action=OnceValue,
        metavar="CMD",
        help=f"run CMD (by /bin/sh -c) for each alert (default: ${ALERT_EXEC_ENV})",
    )
    tee = commands.add_parser(
        "statusline-tee",
        formatter_class=Formatter,
        help="store the status-line JSON's rate_limits as a session reading, then pass it on",
        allow_abbrev=False,
    )
    tee.add_argument(
        "--then",
        action=OnceValue,
        metavar="CMD",
        help="run CMD (by /bin/sh -c) on the same stdin (default: print "
        "the status line of status --statusline)",
    )
    status = commands.add_parser(
        "status",
        formatter_class=Formatter,
        help="report login state and the newest reading of every profile (no request)",
        allow_abbrev=False,
    )
    shape = status.add_mutually_exclusive_group()
    shape.add_argument("--json", action=Once, help="print JSON")
    shape.add_argument("--statusline", action=Once, help="print status-line rows (always exit 0)")
    return top, {
        "best": best,
        "explain": explain,
        "poll": poll,
        "status": status,
        "statusline-tee": tee,
    }


def _parse(args: list[str]) -> Any:
    """Return the parsed namespace; raise `UsageError` naming the problem."""
    top, subparsers = _parser()
    if not args:
        raise UsageError(f"missing command ({_COMMAND_LIST})", top.format_usage())
    if args and not args[0].startswith("-") and args[0] not in COMMANDS:
        raise UsageError(f"unknown command {args[0]!r} ({_COMMAND_LIST})", top.format_usage())
    ns, extra = top.parse_known_args(args)
    # Formatted only for an error: argparse's formatter imports shutil (and bz2, lzma).
    command = subparsers[ns.command]
    if extra:
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}", command.format_usage())
    if ns.command == "poll":
        _check_poll_args(ns, command.format_usage())
    if ns.command == "best":
        from agent_accounts._usage import is_window_name

        for name in ns.window or ():
            if not is_window_name(name):
                raise UsageError(
                    f"argument --window: not a window name: {name!r}", command.format_usage()
                )
        ns.window = tuple(dict.fromkeys(ns.window or ("five_hour", "seven_day")))
    return ns


def _check_poll_args(ns: Any, usage: str) -> None:
    """Check poll's flags; thresholds and the hook also come from the unit's environment."""
    if ns.refresh and not ns.write:
        raise UsageError("--refresh needs --write", usage)
    if ns.max_age is not None:
        try:
            ns.max_age = float(ns.max_age)
        except ValueError:
            ns.max_age = math.nan
        if not math.isfinite(ns.max_age) or ns.max_age <= 0:
            raise UsageError("argument --max-age: not a positive number of seconds", usage)
    if ns.alert_at is not None and not ns.write:
        raise UsageError("--alert-at needs --write", usage)
    if ns.alert_exec is not None and ns.alert_at is None and not os.environ.get(ALERT_AT_ENV):
        raise UsageError("--alert-exec needs --alert-at", usage)
    alert_at = ns.alert_at if ns.alert_at is not None else os.environ.get(ALERT_AT_ENV)
    ns.thresholds = None
    if ns.write and alert_at:
        from agent_accounts._alerts import parse_alert_thresholds

        ns.thresholds = parse_alert_thresholds(alert_at)
        if ns.thresholds is None:
            where = "argument --alert-at" if ns.alert_at is not None else ALERT_AT_ENV
            raise UsageError(f"{where}: not a list of percentages like 80,95", usage)
    if ns.alert_exec is None:
        ns.alert_exec = os.environ.get(ALERT_EXEC_ENV) or None


def _dispatch(args: list[str]) -> int:
    ns = _parse(args)
    if ns.command == "poll":
        import asyncio

        return asyncio.run(
            _poll(
                ns.write,
                ns.refresh,
                max_age=ns.max_age,
                thresholds=ns.thresholds,
                alert_exec=ns.alert_exec,
            )
        )
    if ns.command == "statusline-tee":
        from agent_accounts._tee import run_tee

        return run_tee(ns.then or None, _run_statusline)
    if ns.command == "best":
        return _best(ns.window, ns.json, ns.path)
    if ns.command == "explain":
        return _explain(ns.label, ns.json)
    if ns.statusline:
        return _run_statusline()
    return _status(ns.json)


def _run_best(windows: tuple[str, ...], as_json: bool, as_path: bool) -> int:
    """Run a well-formed `best` line (see `_best_args`) under the boundary of `_run`."""
    return _run([], lambda: _best(windows, as_json, as_path))


def _run(args: list[str], command: Callable[[], int] | None = None) -> int:
    """Run one command line and map every outcome to the spec's exit codes: the one boundary."""
    try:
        return _dispatch(args) if command is None else command()
    except UsageError as exc:
        # An argument is echoed only redacted: a pasted token must never reach stderr.
        _err(_shown(exc.problem))
        sys.stderr.write(exc.usage)
        return EXIT_USAGE
    except SystemExit as exc:  # argparse's -h/--help, after printing the help
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        raise  # handled in main, the same for every command
    except ValueError:  # a refused base URL: the URL itself is never printed
        _err("configuration refused (check AGENT_API_BASE_URL and AGENT_AUTH_URL)")
        return EXIT_USAGE
    except Exception as exc:  # a fixed line, never a traceback or a message
        _err(f"unexpected {type(exc).__name__}")
        return EXIT_FAILED


def _tee_then(rest: list[str]) -> str | Literal[False] | None:
    """`statusline-tee`'s CMD from `[]`, `[--then, CMD]` or `[--then=CMD]`; False otherwise."""
    if not rest:
        return None
    if len(rest) == 2 and rest[0] == "--then" and rest[1]:
        return rest[1]
    if len(rest) == 1 and rest[0].startswith("--then=") and len(rest[0]) > 7:
        return rest[0][7:]
    return False  # anything else goes through argparse: -h, errors


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run `account-cli`; exits with the spec's code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args == ["status", "--statusline"]:
            # The hot path, on every prompt: straight to the status line, before argparse loads.
            code = _run_statusline()
        elif (best := _best_args(args)) is not None:
            code = _run_best(*best)
        elif args[:1] == ["statusline-tee"] and (then := _tee_then(args[1:])) is not False:
            # The other one: the tee, with no flag or one --then, before argparse loads.
            from agent_accounts._tee import run_tee

            code = run_tee(then, _run_statusline)
        else:
            code = _run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`account-cli status | head -1`): stop quietly, as a program
        # killed by SIGPIPE would, and keep the interpreter's final flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 128 + 13
    raise SystemExit(code)


if __name__ == "__main__":
    main()
