"""`account-cli status [--json | --statusline]`: login state and newest reading of every profile.

Reads local files only, no request. `--statusline` is `_statusline`'s (always exit 0).
"""

from __future__ import annotations

import sys

from ._exits import EXIT_FAILED, EXIT_LOGIN, EXIT_OK, err
from ._output import iso, percent, say_none_found, shown, window_order, windows_text

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


def _login_line(label: str, login: Any) -> str:
    detail = login.status
    if login.status == "refused":
        detail = f"refused ({login.reason})"
    return f"{label}: login {detail}"


def _pace_line(name: str, pace: dict[str, Any]) -> str:
    """One window's pace for the text view: used, elapsed, and the projected time of 100%."""
    parts = [f"{percent(pace['used_percentage'])} used"]
    elapsed = pace["elapsed_percentage"]
    if elapsed is None:
        parts.append("elapsed unknown")
    else:
        parts.append(f"{elapsed:.0f}% elapsed")
    full = pace["projected_full_at"]
    parts.append("100% not projected" if full is None else f"100% projected at {iso(full)}")
    return f"  {name}: {', '.join(parts)}"


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
    profiles = discover_profiles()
    if not profiles and not as_json:
        say_none_found()
    for profile in profiles:
        label = shown(profile.label)
        try:
            login: Any = read_login_state(profile.config_dir)
            login_json = login.to_json()
        except OSError:
            login, login_json = None, {"status": "unreadable"}
            code = max(code, EXIT_FAILED)
            err(f"{label}: login unreadable")
        if login is not None and login.status != "present":
            code = EXIT_LOGIN
            err(_login_line(label, login))
        lock_age = held_lock_age(str(profile.config_dir), now)
        if lock_age is not None and lock_age > LOCK_REPORT_AFTER_S:
            err(f"{label}: refresh lock held")
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
            err(f"{label}: usage unreadable")
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
                            reading_pace(usage.reading, now).items(),
                            key=lambda item: window_order(item[0]),
                        )
                    },
                    "older_windows": {
                        name: older[name] for name in sorted(older, key=window_order)
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
                f"{windows_text(usage_row['rate_limits'])} ({usage_row['age_seconds']}s old)"
            )
        sys.stdout.write(f"{row['label']}: {'; '.join(parts)}\n")
        if usage_row is not None:
            for name, pace in usage_row["pace"].items():
                sys.stdout.write(_pace_line(name, pace) + "\n")
            for name, window in usage_row["older_windows"].items():
                used, age = percent(window["used_percentage"]), window["age_seconds"]
                sys.stdout.write(f"  {name} {used} ({age}s old, an older reading)\n")
        for note in row["clockAhead"]:
            sys.stdout.write(f"  clock ahead: {note}\n")
    return code
