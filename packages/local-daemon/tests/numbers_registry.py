"""A registry for `local-daemon serve` whose one command answers its argument as it came."""

from __future__ import annotations

from typing import Any

from local_daemon import Registry

registry = Registry()


@registry.command
def same(value: Any = None) -> Any:
    """Return `value` unchanged."""
    return value
