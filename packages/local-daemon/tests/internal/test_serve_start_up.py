"""`local-daemon serve`'s start-up path leaves MCP, the gate, TLS and file serving unimported:
the heavy packages by name, and the daemon's own lazy modules."""

from __future__ import annotations

from pathlib import Path

from daemon_support import DaemonProcess, rpc

# Top-level packages a plain `serve` must not import: a CLI framework (typer, click, pydantic),
# MCP, the watcher backend, and what the remote listener needs.
HEAVY_PACKAGES = frozenset({"typer", "click", "pydantic", "mcp", "watchfiles", "cryptography"})
# The daemon's own modules that a daemon without a remote listener, MCP or static files skips.
LAZY_MODULES = frozenset(
    {
        "local_daemon._auth",
        "local_daemon._cli_token",
        "local_daemon._files",
        "local_daemon._gate",
        "local_daemon._mcp",
        "local_daemon._mcp_http",
        "local_daemon._peer",
        "local_daemon._remote",
        "local_daemon._static",
        "local_daemon._tls",
        "local_daemon._tokenfile",
    }
)


async def test_serve_start_up_path_skips_heavy_modules(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "state", target="startup_registry:registry")
    try:
        port = daemon.wait_ready()
        status, body = await rpc(port, "loaded_modules", {})
    finally:
        daemon.stop()
    assert status == 200, body
    loaded = set(body["data"])
    assert {"aiohttp", "local_daemon._daemon"} <= loaded  # the probe sees the daemon's modules
    assert {name for name in loaded if name.split(".")[0] in HEAVY_PACKAGES} == set()
    assert loaded & LAZY_MODULES == set()
