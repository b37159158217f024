"""local_daemon."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._auth import create_daemon_auth, mint_login_code
from ._files import file_response
from ._remote import RemoteOptions, TlsFiles
from ._static import mount_static_app
from ._tokenfile import ensure_token_file, rotate_token_file

if TYPE_CHECKING:
    from ._mcp import create_mcp_server, invoke_tool, list_tools, run_mcp_stdio

__all__: list[str] = [
    "RemoteOptions",
    "TlsFiles",
    "create_daemon_auth",
    "create_mcp_server",
    "ensure_token_file",
    "file_response",
    "invoke_tool",
    "list_tools",
    "mint_login_code",
    "mount_static_app",
    "rotate_token_file",
    "run_mcp_stdio",
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
