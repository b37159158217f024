"""`local_daemon.__all__` is the package's versioning contract: exactly these names."""

from __future__ import annotations

import subprocess
import sys

import pytest

import local_daemon

EXPECTED = {
    # constants
    "CLIENT_HEADER",
    "DEFAULT_RPC_BODY_LIMIT",
    # errors
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
    # options and records
    "AuthRecord",
    "CommandInfo",
    "CommandRegistry",
    "DaemonAuth",
    "DaemonHandle",
    "DaemonPaths",
    "FormattedError",
    "Guards",
    "RemoteOptions",
    "RpcBodyLimit",
    "TlsFiles",
    "TreeWatch",
    # what MCP clients are shown beside tools: resources, prompts, icons
    "Icon",
    "PromptArgumentInfo",
    "PromptInfo",
    "ResourceInfo",
    # the daemon and its registry
    "Registry",
    "Progress",
    "CancelFlag",
    "build_http_app",
    "run_daemon_until_signal",
    "start_daemon",
    # utilities usable alone
    "EventHub",
    "daemon_paths",
    "get_process_command",
    "is_process_alive",
    "probe_health",
    "read_pid_file",
    "remove_pid_file",
    "systemd_listen_fd",
    "watch_tree",
    "write_pid_file",
    # MCP (loaded on first access)
    "create_mcp_server",
    "invoke_tool",
    "list_tools",
    "run_mcp_stdio",
    # gate and files
    "SessionInfo",
    "create_daemon_auth",
    "list_sessions",
    "revoke_session",
    "ensure_token_file",
    "file_response",
    "mint_login_code",
    "mount_static_app",
    "rotate_token_file",
}


def _isort_key(name: str) -> tuple[int, str]:
    # ruff RUF022 order: SCREAMING_CASE, then CamelCase, then the rest, each alphabetical
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return (kind, name)


def test_all_is_sorted_and_resolvable() -> None:
    assert list(local_daemon.__all__) == sorted(local_daemon.__all__, key=_isort_key)
    for name in local_daemon.__all__:
        assert hasattr(local_daemon, name), name


def test_all_is_exactly_the_public_surface() -> None:
    assert set(local_daemon.__all__) == EXPECTED
    assert len(local_daemon.__all__) == len(EXPECTED)


def test_import_loads_neither_mcp_nor_watchfiles_nor_typer() -> None:
    code = (
        "import sys, local_daemon\n"
        "heavy = {'mcp', 'watchfiles', 'typer', 'cryptography'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_cli_module_loads_neither_aiohttp_nor_mcp() -> None:
    # `local-daemon health` and `token` start without aiohttp (the package's aiohttp-backed
    # names are lazy); `serve` and `mcp-stdio` import what they use when they run.
    code = (
        "import sys, local_daemon.cli\n"
        "heavy = {'aiohttp', 'mcp', 'httpx', 'httpx2', 'anyio'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "assert local_daemon.start_daemon.__module__ == 'local_daemon._daemon'\n"
        "assert 'aiohttp' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_import_leaves_the_gate_tls_and_file_modules_for_first_use() -> None:
    code = (
        "import sys, local_daemon\n"
        "lazy = {'_auth', '_files', '_gate', '_mcp', '_mcp_http', '_peer', '_remote', '_sessions', '_static',\n"
        "        '_tls', '_tokenfile'}\n"
        "loaded = {name for name in lazy if 'local_daemon.' + name in sys.modules}\n"
        "assert not loaded, loaded\n"
        "assert local_daemon.mint_login_code.__module__ == 'local_daemon._auth'\n"
        "assert local_daemon.RemoteOptions.__module__ == 'local_daemon._remote'\n"
        "assert 'local_daemon._remote' in sys.modules\n"
        "assert 'mint_login_code' in dir(local_daemon)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_import_leaves_http_client_for_the_first_probe() -> None:
    # `http.client` pulls in `email` and `ssl`: about half of the package's import otherwise.
    code = (
        "import sys, local_daemon\n"
        "assert 'http.client' not in sys.modules\n"
        "assert local_daemon.probe_health(1) is None\n"
        "assert 'http.client' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = local_daemon.no_such_name
