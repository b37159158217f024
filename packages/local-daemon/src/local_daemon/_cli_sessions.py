"""`local-daemon sessions list|revoke ID`: the signed-in devices of a remote listener's gate.

The daemon records each browser sign-in in its sessions file (`STATE_DIR/sessions.json` for
`serve --remote-host`); these commands read it as untrusted input and remove one entry, which
signs that device out at its next request. Imports neither aiohttp nor the gate.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any, Final

from ._cli_exits import EX_CONFIG, EX_UNAVAILABLE, UsageProblem, fail

__all__ = ["EX_NO_SESSION", "add_sessions_command", "run_sessions"]

# sysexits EX_NOUSER: the session named does not exist (any more).
EX_NO_SESSION: Final = 67
_USER_AGENT_SHOWN = 80


def add_sessions_command(parser: argparse.ArgumentParser, once: dict[str, Any]) -> None:
    """Add `list` and `revoke ID`, each with `--state-dir DIR` or `--sessions-file FILE`."""
    actions = parser.add_subparsers(dest="sessions_command", required=True, metavar="ACTION")
    for name, text in (
        ("list", "show each signed-in device: id, sign-in, last seen, peer, user agent"),
        ("revoke", "sign out one device; the others stay signed in"),
    ):
        action = actions.add_parser(name, help=text, description=text, allow_abbrev=False)
        if name == "revoke":
            action.add_argument("session_id", metavar="ID", help="a session id from `list`")
        where = action.add_mutually_exclusive_group(required=True)
        where.add_argument(
            "--state-dir",
            **once,
            type=Path,
            metavar="DIR",
            help="the state dir `serve` was given (reads DIR/sessions.json)",
        )
        where.add_argument(
            "--sessions-file",
            **once,
            type=Path,
            metavar="FILE",
            help="a sessions file elsewhere (a gate of your own: TOKEN_FILE.sessions.json)",
        )
        if name == "list":
            action.add_argument("--json", action="store_true", help="print a JSON array")


def _when(epoch: int) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _table(sessions: list[Any]) -> str:
    from ._sessions import clean_text

    if not sessions:
        return "no device is signed in"
    rows = [("ID", "SIGNED IN", "LAST SEEN", "PEER", "USER AGENT")]
    for s in sessions:
        agent = clean_text(s.user_agent, 10_000)
        if s.client_id is not None:
            # An MCP client's sign-in: its registered name first (untrusted, cleaned too).
            name = clean_text(s.client_name or "unnamed", 10_000)
            agent = f"MCP client {name}: {agent}" if agent else f"MCP client {name}"
        if len(agent) > _USER_AGENT_SHOWN:
            agent = agent[: _USER_AGENT_SHOWN - 1] + "\u2026"
        peer = clean_text(s.peer, 64) if s.peer else "-"
        rows.append((s.id, _when(s.first_seen), _when(s.last_seen), peer, agent or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + "  "
        + row[4]
        for row in rows
    )


def run_sessions(ns: argparse.Namespace) -> int:
    """Run `sessions list` or `sessions revoke ID`; print the result; return the exit code."""
    from ._errors import SessionFileError
    from ._sessions import SESSION_ID_RE, SESSIONS_FILE_NAME, list_sessions, revoke_session

    path: Path = ns.sessions_file or ns.state_dir / SESSIONS_FILE_NAME
    try:
        if ns.sessions_command == "list":
            sessions = list_sessions(path)
            if ns.json:
                print(json.dumps([s.to_json() for s in sessions], indent=2))
            else:
                print(_table(sessions))
            return 0
        session_id: str = ns.session_id
        if not SESSION_ID_RE.fullmatch(session_id):
            raise UsageProblem("ID must be a session id as `sessions list` shows it")
        if not revoke_session(path, session_id):
            raise fail(EX_NO_SESSION, f"no signed-in device has session id {session_id} in {path}")
    except SessionFileError as exc:
        code = EX_UNAVAILABLE if exc.problem == "locked" else EX_CONFIG
        raise fail(code, f"{exc} (problem: {exc.problem})") from None
    print(f"signed out {session_id}")
    return 0
