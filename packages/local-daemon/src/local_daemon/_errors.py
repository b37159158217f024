"""Errors raised by the daemon host.

DaemonError
├── CommandError            a command refuses (code 64, 65, 75 or 77)
│   └── UnknownCommandError no command of that name (404)
├── DaemonPortInUseError    the loopback port is taken
├── DaemonStateError        the pid or metadata file names no live daemon (`problem` says why)
├── RemoteBindError         the remote listener's address or options are refused
├── SessionFileError        the gate's sessions file fails a check or cannot be written
├── TlsFileError            a certificate or key file fails a check
├── TokenFileError          the gate's token file fails a check (`problem` says which)
└── WatchRootError          the watch root is missing, not a directory, or cannot be watched
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "CommandError",
    "DaemonError",
    "DaemonPortInUseError",
    "DaemonStateError",
    "RemoteBindError",
    "SessionFileError",
    "TlsFileError",
    "TokenFileError",
    "UnknownCommandError",
    "WatchRootError",
]

_COMMAND_CODES = frozenset({64, 65, 75, 77})


class DaemonError(Exception):
    """Root of every error the daemon package raises."""


class CommandError(DaemonError):
    """A command refuses its input or its caller; `code` is the exit code the envelope carries."""

    def __init__(self, message: str, code: int = 65) -> None:
        if code not in _COMMAND_CODES:
            raise ValueError("CommandError code must be one of 64, 65, 75, 77")
        super().__init__(message)
        self.message = message
        self.code = code


class UnknownCommandError(CommandError):
    """The registry has no command of this name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown command: {name}", 64)
        self.name = name


class DaemonPortInUseError(DaemonError):
    """The requested port is already bound by another process."""

    def __init__(self, port: int, host: str) -> None:
        super().__init__(f"port {port} on {host} is already in use")
        self.port = port
        self.host = host


class DaemonStateError(DaemonError):
    """The state dir cannot be used, or its pid or metadata file names no daemon to reach;
    `problem` says why."""

    def __init__(self, message: str, *, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


class RemoteBindError(DaemonError):
    """The remote listener's options are refused before anything binds."""


class SessionFileError(DaemonError):
    """The gate's sessions file fails a check or cannot be written; `problem` names which."""

    def __init__(self, message: str, *, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


class TlsFileError(DaemonError):
    """A TLS certificate or key file fails a check; `problem` names which check."""

    def __init__(self, message: str, *, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


class TokenFileError(DaemonError):
    """The gate's token file fails a check; `problem` names which check."""

    def __init__(self, message: str, *, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


WatchRootProblem = Literal["missing", "not_a_directory", "unwatchable"]

_WATCH_ROOT_TEXT: dict[WatchRootProblem, str] = {
    "missing": "does not exist: create the directory before starting the daemon",
    "not_a_directory": "is not a directory: point the watch at a directory",
    "unwatchable": (
        "cannot be watched (the log says why): check that it is readable and that the "
        "inotify watch limit (fs.inotify.max_user_watches) is not reached"
    ),
}


class WatchRootError(DaemonError):
    """The daemon's watch root cannot be watched; `path` names it, `problem` says why."""

    def __init__(self, path: Path, *, problem: WatchRootProblem) -> None:
        super().__init__(f"watch root {path} {_WATCH_ROOT_TEXT[problem]}")
        self.path = path
        self.problem = problem
