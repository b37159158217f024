"""`account-cli poll [--write [--refresh]] [--max-age S] [--alert-at P] [--alert-exec CMD]`.

`--refresh` first runs the token refresh for every profile (10-minute margin, no deposit), then
every profile without a reading younger than `--max-age` is polled; `--write` stores each reading
(`poll_all`) and the parsed history `best` and `run` weigh (`store_choice_summary`), then the
alerts (`_alerts`) run over what was written. `--json` prints one object,
`{"profiles": [...]}`, one row per profile (`_row`; the README lists the keys) instead of the
lines; stderr and exit codes are the same. `--period S` polls one profile at a time, each at its
own stable phase of S (`_schedule`), at least a second after the previous answer, deciding at
that moment whether a fresh reading skips it (`period_skip_reading`).
"""

from __future__ import annotations

import os
import sys

from ._exits import EXIT_FAILED, EXIT_LOGIN, EXIT_OK, err
from ._output import iso, say_none_found, shown, windows_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Sequence
    from typing import Any, Final

    from agent_accounts.io import PollEntry, PollResult, Profile

__all__ = ["API_BASE_ENV", "AUTH_URL_ENV", "REFRESH_MARGIN_MS", "TURN_WAIT_S", "run"]

REFRESH_MARGIN_MS: Final = 10 * 60 * 1000
API_BASE_ENV: Final = "AGENT_API_BASE_URL"
AUTH_URL_ENV: Final = "AGENT_AUTH_URL"
TURN_WAIT_S: Final = 15.0
"""How long a spread poll waits for another run polling the same profile (its 10 s timeout)."""


def run(options: Namespace) -> int:
    """Run `poll` as parsed (see `_parse`)."""
    import asyncio

    return asyncio.run(_poll(options))


def _row(profile: Profile, outcome: str, **fields: Any) -> dict[str, Any]:
    """One profile's `--json` row: every key always present, null where it does not apply."""
    row: dict[str, Any] = {
        "label": shown(profile.label),
        "configDir": shown(str(profile.config_dir)),
        "outcome": outcome,
        "rate_limits": None,
        "age_seconds": None,
        "written": False,
        "failure": None,
        "reason": None,
        "backoff_until": None,
        "refresh": None,
    }
    row.update(fields)
    return row


def _report_poll(
    profile: Profile, result: PollResult, entry: PollEntry | None, rows: list[dict[str, Any]] | None
) -> int:
    """Print (or, with `rows`, add the row of) one profile's poll outcome; return its exit code."""
    label = shown(profile.label)
    if result.ok:
        limits = dict(result.reading["rate_limits"])
        written = entry is not None and entry.write_error is None
        if rows is None:
            sys.stdout.write(f"{label}: {windows_text(limits)}\n")
        else:
            rows.append(_row(profile, "polled", rate_limits=limits, written=written))
        if entry is not None and entry.write_error is not None:
            err(f"{label}: usage write failed")
            return EXIT_FAILED
        return EXIT_OK
    failure = result.failure
    if rows is not None:
        until = entry.backoff_until if entry is not None else None
        outcome = {"missing": "skipped", "backoff": "backoff"}.get(failure, "failed")
        rows.append(
            _row(profile, outcome, failure=failure, reason=result.reason, backoff_until=until)
        )
    if failure == "missing":
        if rows is None:
            sys.stdout.write(f"{label}: no login, skipped\n")
        return EXIT_OK
    if failure == "backoff" and entry is not None and entry.backoff_until is not None:
        if rows is None:
            sys.stdout.write(f"{label}: rate limited, skipped until {iso(entry.backoff_until)}\n")
        return EXIT_OK
    if failure == "expired":
        err(f"{label}: login expired")
        return EXIT_LOGIN
    if failure == "refused":
        err(f"{label}: login refused ({result.reason or 'malformed'})")
        return EXIT_LOGIN
    err(f"{label}: poll failed: {failure}")
    return EXIT_FAILED


async def _refresh_all(
    profiles: Sequence[Profile], auth_url: str | None, refreshed: dict[str, str] | None
) -> int:
    """Run the token refresh for every profile first; return the worst exit code.

    With `refreshed`, each profile's result status goes there (by config dir), not to stdout.
    """
    import asyncio

    from agent_accounts.io import DEFAULT_AUTH_URL, refresh_if_needed
    from agent_accounts.io._http import client_for

    # No onFailure: the command line files no deposit.
    async with client_for(None) as client:  # the one transport (one TLS context a process)
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
        if refreshed is not None:
            refreshed[str(profile.config_dir)] = result.status
        if result.status == "refreshed" and refreshed is None:
            sys.stdout.write(f"{shown(profile.label)}: token refreshed\n")
        elif result.status == "failed":
            err(f"{shown(profile.label)}: token refresh failed: {result.failure_text}")
            code = EXIT_FAILED
        elif result.status == "locked":
            # Never silent: a lock that blocks is named, and `status` shows its age.
            err(f"{shown(profile.label)}: token refresh locked: another refresh holds the lock")
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


async def _poll(options: Namespace) -> int:
    import asyncio

    from agent_accounts.io import DEFAULT_API_BASE, discover_profiles, poll_all, poll_usage

    api_base = os.environ.get(API_BASE_ENV) or DEFAULT_API_BASE
    profiles = discover_profiles()
    if not profiles and not options.json:
        say_none_found()
    code = EXIT_OK
    rows: list[dict[str, Any]] | None = [] if options.json else None
    refreshed: dict[str, str] | None = {} if options.json else None
    if options.refresh:
        code = await _refresh_all(profiles, os.environ.get(AUTH_URL_ENV) or None, refreshed)
    max_age = options.max_age
    alerting = bool(options.thresholds)
    outcomes: dict[str, tuple[PollResult, PollEntry | None]]
    if options.period is not None:
        fresh, outcomes = await _poll_spread(profiles, options.period, max_age, alerting, api_base)
        targets = []
    else:
        fresh = {} if max_age is None else _fresh_readings(profiles, max_age, alerting)
        targets = [p for p in profiles if str(p.config_dir) not in fresh]
    if options.period is not None:
        pass
    elif options.write:
        entries = await poll_all(profiles=targets, api_base=api_base) if targets else []
        outcomes = {str(p.config_dir): (e.result, e) for p, e in zip(targets, entries, strict=True)}
    else:
        from agent_accounts.io._http import client_for

        # One client for every profile, redirects off; one deadline per request bounds it.
        async with client_for(None) as client:
            results = await asyncio.gather(
                *(poll_usage(p, client=client, api_base=api_base) for p in targets)
            )
        outcomes = {str(p.config_dir): (r, None) for p, r in zip(targets, results, strict=True)}
    codes = []
    for profile in profiles:
        if str(profile.config_dir) in fresh:
            reading, age = fresh[str(profile.config_dir)]
            limits = dict(reading["rate_limits"])
            if rows is not None:
                rows.append(_row(profile, "not-polled", rate_limits=limits, age_seconds=age))
            else:
                text = windows_text(limits)
                sys.stdout.write(f"{shown(profile.label)}: {text} ({age}s old, not polled)\n")
            continue
        result, entry = outcomes[str(profile.config_dir)]
        codes.append(_report_poll(profile, result, entry, rows))
    if rows is not None and refreshed is not None:
        import json

        for profile, row in zip(profiles, rows, strict=True):
            row["refresh"] = refreshed.get(str(profile.config_dir))
        sys.stdout.write(json.dumps({"profiles": rows}, indent=2) + "\n")
    if options.write:
        from agent_accounts.io._choice import store_choice_summary

        for profile in profiles:  # what `best` and `run` weigh, parsed once here
            store_choice_summary(str(profile.config_dir))  # never fails the poll
    if options.thresholds:
        from ._alerts import run_alerts

        codes.append(run_alerts(profiles, options.thresholds, options.alert_exec))
    return max([code, *codes])


def _spread_skip(
    config_dir: str, fresh_for: float, max_age: float | None, alerting: bool
) -> tuple[Any, int] | None:
    """The reading that lets a spread poll skip this profile now, or None (then it polls)."""
    import time

    from agent_accounts.io._freshness import period_skip_reading, poll_skip_reading

    now = time.time()
    try:
        found = period_skip_reading(config_dir, max_age=fresh_for, now=now, alerting=alerting)
        if found is None and max_age is not None:
            found = poll_skip_reading(config_dir, max_age=max_age, now=now, alerting=alerting)
    except (OSError, ValueError):
        return None  # unreadable: poll it, and let the poll say what is wrong
    return found


async def _poll_spread(
    profiles: Sequence[Profile],
    period: float,
    max_age: float | None,
    alerting: bool,
    api_base: str,
) -> tuple[dict[str, tuple[Any, int]], dict[str, tuple[PollResult, PollEntry | None]]]:
    """Poll each profile at its phase of `period`, one request at a time; skip the fresh ones.

    The wait is measured on the monotonic clock from the start, so a wall clock stepped during
    the run neither stretches nor skips it; each request starts at least `MIN_POLL_GAP_S` after
    the previous one's answer, so no two are closer than that on the wire.
    """
    import asyncio
    import contextlib
    import time

    from agent_accounts._schedule import MIN_POLL_GAP_S, poll_phases, poll_times
    from agent_accounts.io import poll_all
    from agent_accounts.io._atomic import ensure_private_dir
    from agent_accounts.io._dirlock import dir_locked
    from agent_accounts.io._http import client_for
    from agent_accounts.io._readings import sessions_dir

    fresh_for = period if max_age is None else max_age
    keys = [str(p.config_dir) for p in profiles]
    phases = poll_phases(keys, period, machine=os.uname().nodename)
    wall, mono = time.time(), time.monotonic()
    due = poll_times(phases, period, wall)
    fresh: dict[str, tuple[Any, int]] = {}
    outcomes: dict[str, tuple[PollResult, PollEntry | None]] = {}
    answered: float | None = None
    async with client_for(None) as client:  # the one transport (one TLS context a process)
        for index in sorted(range(len(profiles)), key=lambda i: due[i]):
            profile, config_dir = profiles[index], str(profiles[index].config_dir)
            start = mono + (due[index] - wall)
            if answered is not None:
                start = max(start, answered + MIN_POLL_GAP_S)
            await asyncio.sleep(max(0.0, start - time.monotonic()))
            # One run at a time decides and polls a profile: two timers at the same phase wait
            # for each other, and the second finds the first's reading fresh. The lock is the
            # sessions dir's own (made first, as the poll's write would).
            with contextlib.suppress(OSError):
                ensure_private_dir(sessions_dir(config_dir))
            with dir_locked(sessions_dir(config_dir), wait_s=TURN_WAIT_S) as mine:
                found = _spread_skip(config_dir, fresh_for, max_age, alerting) if mine else None
                if found is not None:
                    fresh[config_dir] = found
                    continue
                (entry,) = await poll_all(profiles=[profile], api_base=api_base, client=client)
            outcomes[config_dir] = (entry.result, entry)
            answered = time.monotonic()
    return fresh, outcomes
