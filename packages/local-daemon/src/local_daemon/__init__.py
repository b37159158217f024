"""local_daemon."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._app import build_http_app
from ._auth import create_daemon_auth, mint_login_code
from ._daemon import DaemonHandle, run_daemon_until_signal, start_daemon
from ._errors import (
    CommandError,
    DaemonError,
    DaemonPortInUseError,
    RemoteBindError,
    TlsFileError,
    TokenFileError,
    UnknownCommandError,
)
from ._events import EventHub
from ._files import file_response
from ._guards import CLIENT_HEADER, Guards
from ._health import probe_health
from ._pidfile import DaemonPaths, daemon_paths, read_pid_file, remove_pid_file, write_pid_file
from ._process import get_process_command, is_process_alive
from ._registry import Registry
from ._remote import RemoteOptions, TlsFiles
from ._rpc import DEFAULT_RPC_BODY_LIMIT, RpcBodyLimit
from ._static import mount_static_app
from ._systemd import systemd_listen_fd
from ._tokenfile import ensure_token_file, rotate_token_file
from ._types import AuthRecord, CommandInfo, CommandRegistry, FormattedError
from ._watch import TreeWatch, watch_tree

if TYPE_CHECKING:
    from ._mcp import create_mcp_server, invoke_tool, list_tools, run_mcp_stdio

__all__: list[str] = [
    "CLIENT_HEADER",
    "DEFAULT_RPC_BODY_LIMIT",
    "AuthRecord",
    "CommandError",
    "CommandInfo",
    "CommandRegistry",
    "DaemonError",
    "DaemonHandle",
    "DaemonPaths",
    "DaemonPortInUseError",
    "EventHub",
    "FormattedError",
    "Guards",
    "Registry",
    "RemoteBindError",
    "RemoteOptions",
    "RpcBodyLimit",
    "TlsFileError",
    "TlsFiles",
    "TokenFileError",
    "TreeWatch",
    "UnknownCommandError",
    "build_http_app",
    "create_daemon_auth",
    "create_mcp_server",
    "daemon_paths",
    "ensure_token_file",
    "file_response",
    "get_process_command",
    "invoke_tool",
    "is_process_alive",
    "list_tools",
    "mint_login_code",
    "mount_static_app",
    "probe_health",
    "read_pid_file",
    "remove_pid_file",
    "rotate_token_file",
    "run_daemon_until_signal",
    "run_mcp_stdio",
    "start_daemon",
    "systemd_listen_fd",
    "watch_tree",
    "write_pid_file",
]

# Importing `mcp` costs over a second: the MCP names load it on first access only.
_LAZY_MCP = frozenset({"create_mcp_server", "invoke_tool", "list_tools", "run_mcp_stdio"})


def __getattr__(name: str) -> Any:
    if name in _LAZY_MCP:
        from . import _mcp

        value = getattr(_mcp, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_MCP)
