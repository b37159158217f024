"""The serve options, declared once: `AppOptions` (what every app of a daemon serves) inside
`DaemonConfig` (plus where and how the daemon listens).

`start_daemon` builds one `DaemonConfig` from its public keywords and passes it down; each app
the daemon builds (loopback, remote) is built from the same `AppOptions`. The public
`build_http_app` builds an `AppOptions` from its own keywords. Defaults are filled in here, once
(the logger, the RPC body cap), so nothing below re-derives them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._rpc import RpcBodyLimit
from ._types import CommandRegistry, ContextFactory, ErrorFormatter, HealthFn, MountRoutes

if TYPE_CHECKING:
    from ._guards import Guards
    from ._remote import RemoteOptions

__all__ = ["MAX_WATCH_DEBOUNCE", "AppOptions", "DaemonConfig"]

# The longest quiet window `watch_debounce` takes, in seconds.
MAX_WATCH_DEBOUNCE = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AppOptions:
    """What each HTTP app of one daemon serves, and how it answers."""

    registry: CommandRegistry
    version: str
    create_context: ContextFactory | None = None
    health: HealthFn | None = None
    mount_routes: MountRoutes | None = None
    guards: Guards | None = None
    rpc_body_limit: RpcBodyLimit = field(default_factory=RpcBodyLimit)
    tool_prefix: str | None = None
    format_error: ErrorFormatter | None = None
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("local_daemon"))
    openapi: bool = False

    @classmethod
    def of(cls, keywords: Mapping[str, Any]) -> AppOptions:
        """Take these options from a public entry point's keywords (its `locals()`), each under
        its own name; `None` for the RPC body cap or the logger means the default.

        `start_daemon` and `build_http_app` declare the options, typed, in their signatures; a
        test keeps those signatures and these fields in line.
        """
        values = {option.name: keywords[option.name] for option in dataclasses.fields(cls)}
        for name in ("rpc_body_limit", "logger"):
            if values[name] is None:
                del values[name]
        return cls(**values)


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonConfig:
    """`start_daemon`'s options: the apps' options plus the listeners, state dir and watcher."""

    app: AppOptions
    state_dir: Path
    port: int = 0
    host: str = "127.0.0.1"
    watch_root: Path | None = None
    watch_debounce: float = 0.05
    remote: RemoteOptions | None = None
    listen_fd: int | None = None
    insecure_unauthenticated_host: bool = False
