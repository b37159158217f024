"""`systemd_listen_fd`: the socket a service manager passed (sd_listen_fds with one socket)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import MutableMapping

__all__ = ["SD_LISTEN_FDS_START", "systemd_listen_fd"]

SD_LISTEN_FDS_START = 3
_VARIABLES = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def systemd_listen_fd(
    env: MutableMapping[str, str] | None = None, pid: int | None = None
) -> int | None:
    """Return the inherited socket (fd 3), or None when none was passed or it was for another pid.

    Raises ValueError unless `LISTEN_FDS` is 1. Once it takes the fd it removes the `LISTEN_*`
    variables from `env` (default `os.environ`) so a child process does not take it too.
    """
    environ: MutableMapping[str, str] = os.environ if env is None else env
    listen_pid = environ.get("LISTEN_PID")
    listen_fds = environ.get("LISTEN_FDS")
    if listen_pid is None or listen_fds is None:
        return None
    own = os.getpid() if pid is None else pid
    if listen_pid.strip() != str(own):
        return None
    if listen_fds.strip() != "1":
        raise ValueError("LISTEN_FDS must be 1: the daemon serves exactly one inherited socket")
    for name in _VARIABLES:
        environ.pop(name, None)
    fd = SD_LISTEN_FDS_START
    # The manager passes it inheritable; keep it from leaking into commands' subprocesses.
    with contextlib.suppress(OSError):
        os.set_inheritable(fd, False)
    return fd
