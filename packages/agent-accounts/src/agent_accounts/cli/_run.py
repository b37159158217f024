"""`account-cli run [--switch-at P] [--label L] -- COMMAND...`: start an agent on the best account.

It ranks every profile by `best`'s rule (`io._choice`, the same reader and `rank_rows`), with
`--switch-at P` counting a window at P% or more as full, then replaces itself with COMMAND
(`execvp`) with `AGENT_CONFIG_DIR` set to the chosen config dir, after one stderr line saying
which and why. `--label L` keeps L while it has room and says why it switched when it has not.
A login that is missing, refused or expired without a usable refresh token is never chosen.
No account with room: exit 75 (EX_TEMPFAIL) naming when the first one has room again; no
usable account at all: exit 2 with each profile's reason, as `best`.
"""

from __future__ import annotations

import math
import os
import sys

from ._exits import EXIT_LOGIN, EXIT_NOT_FOUND, EXIT_NOT_RUNNABLE, EXIT_TEMPFAIL, err
from ._output import iso, percent, plain_label

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Final

__all__ = ["CONFIG_DIR_ENV", "RUN_WINDOWS", "run"]

CONFIG_DIR_ENV: Final = "AGENT_CONFIG_DIR"
RUN_WINDOWS: Final = ("five_hour", "seven_day")
"""The windows `run` weighs: `best`'s defaults."""


def run(options: Namespace) -> int:
    """Run `run` as parsed: exec COMMAND on the chosen account, or return the exit code."""
    import time

    from agent_accounts._best import FRESH_READING_S, NO_ROOM, rank_rows
    from agent_accounts.io._choice import profile_rows

    now = time.time()
    full_at: float = options.switch_at
    profiles, rows = profile_rows(RUN_WINDOWS, now=now)
    switched = ""
    if options.label is not None:
        index = next((i for i, (label, _) in enumerate(profiles) if label == options.label), None)
        if index is None:
            err(f"no profile labelled {plain_label(options.label)!r}")
            return EXIT_LOGIN
        alone = rank_rows([rows[index]], now, RUN_WINDOWS, FRESH_READING_S, full_at)
        if not isinstance(alone, list):
            _, headroom, resets = alone
            why = f"as asked, {_room(headroom, resets)}"
            return _exec(options.command_line, profiles[index], why)
        _, reason, _ = alone[0]
        if reason == NO_ROOM:
            reason = f"no room below {percent(full_at)}"
        switched = f"switched from {plain_label(options.label)} ({reason}): "
    ranked = rank_rows(rows, now, RUN_WINDOWS, FRESH_READING_S, full_at)
    if isinstance(ranked, list):
        return _none_has_room(ranked, full_at)
    index, headroom, resets = ranked
    why = f"{switched}most room, {_room(headroom, resets)}"
    return _exec(options.command_line, profiles[index], why)


def _room(headroom: float, resets: float) -> str:
    when = "reset unknown" if math.isinf(resets) else f"resets {iso(resets)}"
    return f"{percent(round(headroom, 1))} left, {when}"


def _none_has_room(rejected: list[tuple[str, str, float | None]], full_at: float) -> int:
    """Say why no account was chosen: 75 when one only lacks room for now, else 2 as `best`."""
    from agent_accounts._best import NO_ROOM

    why = "; ".join(f"{plain_label(label)}: {reason}" for label, reason, _ in rejected)
    free = [at for _, reason, at in rejected if reason == NO_ROOM and at is not None]
    if not free:
        err(f"no account qualifies ({why or 'no profiles found'})")
        return EXIT_LOGIN
    first = min(free)
    when = "no reset time known" if math.isinf(first) else f"room again at {iso(first)}"
    err(f"run: no account has room below {percent(full_at)}; {when} ({why})")
    return EXIT_TEMPFAIL


def _exec(command: list[str], profile: tuple[str, str], why: str) -> int:
    """Replace this process with `command` on `profile`'s config dir; return only on failure."""
    label, config_dir = profile
    err(f"run: {plain_label(label)}: {why}")
    sys.stderr.flush()
    env = dict(os.environ)
    env[CONFIG_DIR_ENV] = config_dir
    try:
        os.execvpe(command[0], command, env)  # noqa: S606 - the very command the user gave
    except FileNotFoundError:
        err("run: command not found")
        return EXIT_NOT_FOUND
    except OSError:  # permission, not an executable, a directory: as a shell answers
        err("run: command cannot be run")
        return EXIT_NOT_RUNNABLE
    raise AssertionError("unreachable: exec returned")  # pragma: no cover
