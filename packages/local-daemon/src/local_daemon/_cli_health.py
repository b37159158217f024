"""`local-daemon health`: probe `/health` on `--port`, or on the port the state dir names.

Without `--port`, the daemon's own `daemon.pid` and `daemon.meta.json` (`read_daemon_address`)
name the pid, host and port, and the answer must come from that pid: a port since taken by some
other daemon is not this one's health. Exit codes: 64 neither `--port` nor `--state-dir`, or a
port outside 1 to 65535; 69 no daemon there (no pid file, a stale one, no metadata file, a
daemon starting or stopping, no 200 answer, or an answer from another pid); 78 a state file
refused (symlink, not a regular file, another owner, writable by others, too large, unreadable,
malformed, a bad port or host).
"""

from __future__ import annotations

import json
from pathlib import Path

from ._cli_exits import EX_CONFIG, EX_UNAVAILABLE, UsageProblem, fail
from ._errors import DaemonStateError
from ._health import probe_health
from ._pidfile import daemon_paths, read_daemon_address

__all__ = ["UNAVAILABLE_PROBLEMS", "check_health"]

# `DaemonStateError.problem` values that mean "no daemon there" (69); any other is a refusal (78).
UNAVAILABLE_PROBLEMS = frozenset({"missing", "stale", "meta_missing", "mismatch"})
_PORT_MAX = 65535


def check_health(
    *, port: int | None, state_dir: Path | None, host: str | None, timeout: float
) -> str:
    """Return the health document as one JSON line; raise `CliExit` or `UsageProblem` otherwise."""
    expected_pid: int | None = None
    if port is None:
        if state_dir is None:
            raise UsageProblem("health needs --port or --state-dir")
        try:
            address = read_daemon_address(daemon_paths(state_dir))
        except DaemonStateError as exc:
            code = EX_UNAVAILABLE if exc.problem in UNAVAILABLE_PROBLEMS else EX_CONFIG
            raise fail(code, str(exc)) from None
        port, expected_pid = address.port, address.pid
        host = address.host if host is None else host
    elif not 1 <= port <= _PORT_MAX:
        raise UsageProblem(f"--port must be 1 to {_PORT_MAX}")
    host = "127.0.0.1" if host is None else host
    document = probe_health(port, host=host, timeout=timeout)
    if document is None:
        raise fail(EX_UNAVAILABLE, f"no healthy daemon on {host}:{port}")
    if expected_pid is not None and document.get("pid") != expected_pid:
        raise fail(
            EX_UNAVAILABLE,
            f"the daemon on {host}:{port} is not process {expected_pid}, which daemon.pid names",
        )
    return json.dumps(document, sort_keys=True)
