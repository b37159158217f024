"""`account-cli status [--json | --statusline]`: login state and newest reading of every profile.

Reads local files only, no request. `--statusline` is `_statusline`'s (always exit 0).
"""

from __future__ import annotations

import sys

from ._exits import EXIT_FAILED, EXIT_LOGIN, EXIT_OK, err
from ._output import (
    config_dir_problem,
    countdown,
    iso,
    local_time,
    percent,
    say_none_found,
    shown,
    window_order,
    windows_text,
)

TYPE_CHECKING = False  # not typing's: `status --statusline` passes through this module
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any, Final

__all__ = ["LOCK_REPORT_AFTER_S", "run"]

LOCK_REPORT_AFTER_S: Final = 30
"""A refresh lock older than the 30 s refresh cap is reported by `status` on stderr."""


def run(options: Namespace) -> int:
    """Run `status` as parsed."""
    if options.statusline:
        from ._statusline import run_statusline

        return run_statusline()
    return _status(as_json=options.json)


def _login_line(login: dict[str, Any]) -> str:
    """`login missing`, `login refused (<reason>)`: from a login's JSON form."""
    if login["status"] == "refused":
        return f"login refused ({login['reason']})"
    return f"login {login['status']}"


def _pace_line(name: str, pace: dict[str, Any], now: float) -> str:
    """One window's pace for the text view: used, elapsed, the reset (a countdown and the local
    time) and the projected time of 100%, in local time."""
    parts = [f"{percent(pace['used_percentage'])} used"]
    elapsed = pace["elapsed_percentage"]
    if elapsed is None:
        parts.append("elapsed unknown")
    else:
        parts.append(f"{elapsed:.0f}% elapsed")
    resets = pace["resets_at"]
    if resets is not None and resets > now:
        parts.append(f"resets in {countdown(resets - now)} ({local_time(resets, now=now)})")
    elif resets is not None:
        parts.append(f"reset {countdown(now - resets)} ago ({local_time(resets, now=now)})")
    full = pace["projected_full_at"]
    if full is None:
        parts.append("100% not projected")
    else:
        parts.append(f"100% projected at {local_time(full, now=now)}")
    forecast = pace.get("forecast")
    if forecast is not None:
        parts.append(_forecast_part(forecast))
    return f"  {name}: {', '.join(parts)}"


def _forecast_part(forecast: dict[str, Any]) -> str:
    """`forecast full at T (E .. L)` from the history's slope, or `not full before reset`."""
    if forecast["full_at"] is None:
        return "forecast not full before reset"
    low = "?" if forecast["earliest"] is None else iso(forecast["earliest"])
    high = "after reset" if forecast["latest"] is None else iso(forecast["latest"])
    return f"forecast full at {iso(forecast['full_at'])} ({low} .. {high})"


def _history(config_dir: str, now: float) -> list[Any]:
    """The profile's usage history for the forecasts; an unreadable one gives none."""
    from agent_accounts.io import read_usage_history

    try:
        return read_usage_history(config_dir, now=now, since=now - 7 * 86400)
    except OSError:
        return []


def _status(*, as_json: bool) -> int:
    import json
    import time

    from agent_accounts._pace import reading_pace
    from agent_accounts.io import discover_profiles, read_login_state, read_usage
    from agent_accounts.io._freshness import clock_ahead_notes, older_windows
    from agent_accounts.io._lock_dirs import held_lock_age

    now = time.time()
    code = EXIT_OK
    rows: list[dict[str, Any]] = []
    problems: list[list[str]] = []  # each told once: in the text line, or on stderr beside JSON
    profiles = discover_profiles()
    if not profiles and not as_json:
        say_none_found()
    for profile in profiles:
        label = shown(profile.label)
        said: list[str] = []
        dir_problem = config_dir_problem(str(profile.config_dir))
        if dir_problem is not None:
            said.append(dir_problem)
        try:
            login: Any = read_login_state(profile.config_dir)
            login_json = login.to_json()
        except OSError:
            login, login_json = None, {"status": "unreadable"}
            code = max(code, EXIT_FAILED)
            said.append("login unreadable")
        if login is not None and login.status != "present":
            code = EXIT_LOGIN
            said.append(_login_line(login_json))
        lock_age = held_lock_age(str(profile.config_dir), now)
        if lock_age is not None and lock_age > LOCK_REPORT_AFTER_S:
            said.append("refresh lock held")
        try:
            ahead = [shown(note) for note in clock_ahead_notes(str(profile.config_dir), now=now)]
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
            said.append("usage unreadable")
        if dir_problem is not None:  # the dir's problem is why the rest failed: say only it
            said = [dir_problem]
        problems.append(said)
        rows.append(
            {
                "label": label,
                "configDir": shown(profile.config_dir),
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
                            reading_pace(
                                usage.reading, now, history=_history(profile.config_dir, now)
                            ).items(),
                            key=lambda item: window_order(item[0]),
                        )
                    },
                    "older_windows": {
                        name: older[name] for name in sorted(older, key=window_order)
                    },
                },
                "refreshLock": None if lock_age is None else {"age_seconds": int(lock_age)},
                "clockAhead": ahead,
                "configDirProblem": dir_problem,
            }
        )
    if as_json:
        sys.stdout.write(json.dumps({"profiles": rows}, indent=2) + "\n")
        for row, said in zip(rows, problems, strict=True):
            for problem in said:
                err(f"{row['label']}: {problem}")
        return code
    for row, said in zip(rows, problems, strict=True):
        if row["configDirProblem"] is not None:
            sys.stdout.write(f"{row['label']}: {row['configDirProblem']}\n")
            continue
        parts = [_login_line(row["login"])]
        if row["refreshLock"] is not None and not any(
            note.startswith("refresh lock") for note in row["clockAhead"]
        ):
            parts.append(f"refresh lock held {row['refreshLock']['age_seconds']}s")
        usage_row = row["usage"]
        if usage_row is None:
            parts.append("usage unreadable" if "usage unreadable" in said else "no reading")
        else:
            parts.append(
                f"{windows_text(usage_row['rate_limits'])} ({usage_row['age_seconds']}s old)"
            )
        sys.stdout.write(f"{row['label']}: {'; '.join(parts)}\n")
        if usage_row is not None:
            for name, pace in usage_row["pace"].items():
                sys.stdout.write(_pace_line(name, pace, now) + "\n")
            for name, window in usage_row["older_windows"].items():
                used, age = percent(window["used_percentage"]), window["age_seconds"]
                sys.stdout.write(f"  {name} {used} ({age}s old, an older reading)\n")
        for note in row["clockAhead"]:
            sys.stdout.write(f"  clock ahead: {note}\n")
    return code
