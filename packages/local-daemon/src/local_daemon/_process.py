"""Liveness and identity of a process, so a recycled pid is not mistaken for the daemon."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["get_process_command", "is_process_alive"]


def is_process_alive(pid: int) -> bool:
    """Return True when a process with this pid exists (and is not a zombie)."""
    if isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    # The state letter follows the command name, which is parenthesised and may hold spaces.
    state = stat.rpartition(")")[2].split()
    return not (state and state[0] in ("Z", "X"))


def get_process_command(pid: int) -> str | None:
    """Return the process's command line (arguments joined by spaces), or None when unknown."""
    if isinstance(pid, bool) or pid <= 0:
        return None
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    parts = [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]
    return " ".join(parts) if parts else None
