"""A registry for `local-daemon serve` whose one command lists the serving process's modules."""

from __future__ import annotations

import sys

from local_daemon import Registry

registry = Registry()


@registry.command
def loaded_modules() -> list[str]:
    """Return every module name the daemon process has imported so far."""
    return sorted(sys.modules)
