"""`local-daemon mcp-stdio --attach DIR [--start MODULE:ATTR]`: relay stdio MCP to DIR's daemon.

Exit codes (`_cli_exits`): 64 a usage error (MODULE:ATTR beside --attach, --start without
--attach, --tool-prefix or --version without --start, a --start-timeout that is not positive);
69 no daemon runs for DIR (and none was started, or the one started did not come up in time), or
the daemon went away mid-session; 78 a state file or the daemon refused (unsafe state files, a
daemon without /mcp or off loopback).
A session that ends because stdin closed exits 0. `mcp` is imported only once a daemon is found;
aiohttp never is.
"""

from __future__ import annotations

import math
from pathlib import Path

from ._cli_exits import EX_CONFIG, EX_UNAVAILABLE, UsageProblem, fail

__all__ = ["attach"]


def attach(
    *,
    state_dir: Path | None,
    target: str | None,
    start: str | None,
    tool_prefix: str | None,
    version: str | None,
    start_timeout: float,
) -> None:
    """Find (or with `start`, start) the daemon of `state_dir` and relay stdio to its `/mcp`."""
    from ._attach import AttachProblem, find_daemon, start_detached
    from ._pidfile import daemon_paths

    if state_dir is None:
        raise UsageProblem("--start needs --attach DIR")
    if target is not None:
        raise UsageProblem("give MODULE:ATTR or --attach DIR, not both (--start MODULE:ATTR)")
    if start is None:
        # The running daemon's own prefix and version apply; these would be silently ignored.
        for flag, value in (("--tool-prefix", tool_prefix), ("--version", version)):
            if value is not None:
                raise UsageProblem(
                    f"{flag} only applies with --start (the running daemon's own is used)"
                )
    if not (math.isfinite(start_timeout) and start_timeout > 0):
        raise UsageProblem("--start-timeout must be a positive number of seconds")
    paths = daemon_paths(state_dir)
    try:
        if start is None:
            found = find_daemon(paths)
        else:
            module, sep, attr = start.partition(":")
            if not (module and sep and attr):
                raise UsageProblem(
                    f"--start expects MODULE:ATTR (e.g. mypackage.app:registry), got {start!r}"
                )
            # Not imported here: the relay stays free of the product's modules (and aiohttp);
            # a daemon that cannot load it exits, and its line is reported from daemon.log.
            found = start_detached(
                paths,
                start,
                tool_prefix=tool_prefix,
                version=version if version is not None else "0.0.0",
                timeout=start_timeout,
            )
    except AttachProblem as exc:
        if exc.kind == "refused":
            raise fail(EX_CONFIG, str(exc)) from None
        hint = "" if start is not None else " (pass --start MODULE:ATTR to start one)"
        raise fail(EX_UNAVAILABLE, f"{exc}{hint}") from None
    from ._cli_serve import setup_logging
    from ._relay import run_relay

    setup_logging("warning")  # stdout carries the protocol: logs go to stderr only
    if run_relay(found) == "lost":
        raise fail(
            EX_UNAVAILABLE,
            f"the daemon for {state_dir} (pid {found.pid}) went away; this MCP session ends",
        )
