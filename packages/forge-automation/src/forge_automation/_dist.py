"""The installed distribution's name and version, for `--version` (read only when asked)."""

from __future__ import annotations

__all__ = ["DIST", "version_line"]

DIST = "forge-automation"


def version_line(prog: str) -> str:
    """Return `PROG VERSION`, forge-automation's version from the installed metadata."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(DIST)
    except PackageNotFoundError:  # imported from a source tree nobody installed
        found = "(version unknown: not installed)"
    return f"{prog} {found}"
