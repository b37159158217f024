"""local_daemon."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import (
    CommandError,
    DaemonError,
    DaemonPortInUseError,
    DaemonStateError,
    RemoteBindError,
    SessionFileError,
    TlsFileError,
    TokenFileError,
    UnknownCommandError,
    WatchRootError,
)
from ._health import probe_health
from ._pidfile import DaemonPaths, daemon_paths, read_pid_file, remove_pid_file, write_pid_file
from ._process import get_process_command, is_process_alive
from ._systemd import systemd_listen_fd

if TYPE_CHECKING:
    from ._app import build_http_app
    from ._auth import DaemonAuth, create_daemon_auth, mint_login_code
    from ._daemon import DaemonHandle, run_daemon_until_signal, start_daemon
    from ._events import EventHub
    from ._files import file_response
    from ._guards import Guards
    from ._headers import CLIENT_HEADER
    from ._mcp import create_mcp_server, invoke_tool, list_tools, run_mcp_stdio
    from ._progress import CancelFlag, Progress
    from ._registry import Registry
    from ._remote import RemoteOptions, TlsFiles
    from ._rpc import DEFAULT_RPC_BODY_LIMIT, RpcBodyLimit
    from ._sessions import SessionInfo, list_sessions, revoke_session
    from ._static import mount_static_app
    from ._tokenfile import ensure_token_file, rotate_token_file
    from ._types import (
        AuthRecord,
        CommandInfo,
        CommandRegistry,
        FormattedError,
        Icon,
        PromptArgumentInfo,
        PromptInfo,
        ResourceInfo,
    )
    from ._watch import TreeWatch, watch_tree

__all__: list[str] = [
    "CLIENT_HEADER",
    "DEFAULT_RPC_BODY_LIMIT",
    "AuthRecord",
    "CancelFlag",
    "CommandError",
    "CommandInfo",
    "CommandRegistry",
    "DaemonAuth",
    "DaemonError",
    "DaemonHandle",
    "DaemonPaths",
    "DaemonPortInUseError",
    "DaemonStateError",
    "EventHub",
    "FormattedError",
    "Guards",
    "Icon",
    "Progress",
    "PromptArgumentInfo",
    "PromptInfo",
    "Registry",
    "RemoteBindError",
    "RemoteOptions",
    "ResourceInfo",
    "RpcBodyLimit",
    "SessionFileError",
    "SessionInfo",
    "TlsFileError",
    "TlsFiles",
    "TokenFileError",
    "TreeWatch",
    "UnknownCommandError",
    "WatchRootError",
    "build_http_app",
    "create_daemon_auth",
    "create_mcp_server",
    "daemon_paths",
    "ensure_token_file",
    "file_response",
    "get_process_command",
    "invoke_tool",
    "is_process_alive",
    "list_sessions",
    "list_tools",
    "mint_login_code",
    "mount_static_app",
    "probe_health",
    "read_pid_file",
    "remove_pid_file",
    "revoke_session",
    "rotate_token_file",
    "run_daemon_until_signal",
    "run_mcp_stdio",
    "start_daemon",
    "systemd_listen_fd",
    "watch_tree",
    "write_pid_file",
]

# Loaded on first access, so a daemon without a remote listener or static files never imports
# them: `mcp` alone costs over a second, and the gate, TLS and file-serving modules are on
# `local-daemon serve`'s start-up path otherwise. The aiohttp-backed names are lazy too, so
# `local-daemon health`, `token` and `mcp-stdio --attach` (whose `cli` imports this package
# first) never pay for aiohttp.
_LAZY: dict[str, str] = {
    "AuthRecord": "._types",
    "CLIENT_HEADER": "._headers",
    "CancelFlag": "._progress",
    "CommandInfo": "._types",
    "CommandRegistry": "._types",
    "DEFAULT_RPC_BODY_LIMIT": "._rpc",
    "DaemonHandle": "._daemon",
    "EventHub": "._events",
    "FormattedError": "._types",
    "Icon": "._types",
    "PromptArgumentInfo": "._types",
    "PromptInfo": "._types",
    "ResourceInfo": "._types",
    "Guards": "._guards",
    "Progress": "._progress",
    "Registry": "._registry",
    "RpcBodyLimit": "._rpc",
    "TreeWatch": "._watch",
    "build_http_app": "._app",
    "run_daemon_until_signal": "._daemon",
    "start_daemon": "._daemon",
    "watch_tree": "._watch",
    "RemoteOptions": "._remote",
    "TlsFiles": "._remote",
    "DaemonAuth": "._auth",
    "create_daemon_auth": "._auth",
    "create_mcp_server": "._mcp",
    "ensure_token_file": "._tokenfile",
    "file_response": "._files",
    "invoke_tool": "._mcp",
    "list_tools": "._mcp",
    "mint_login_code": "._auth",
    "mount_static_app": "._static",
    "rotate_token_file": "._tokenfile",
    "run_mcp_stdio": "._mcp",
    "SessionInfo": "._sessions",
    "list_sessions": "._sessions",
    "revoke_session": "._sessions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
