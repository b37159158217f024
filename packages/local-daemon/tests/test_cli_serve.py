"""`local-daemon serve`: the parser reads every flag into `ServeArgs`, and the start-up path leaves
MCP, the gate, TLS and file serving unimported."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from daemon_support import DaemonProcess, rpc
from local_daemon._cli_serve import ServeArgs

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


def _read(argv: list[str]) -> ServeArgs:
    from local_daemon.cli import _serve_args, build_parser

    return _serve_args(build_parser().parse_args(["serve", *argv]))


def test_every_serve_flag_reaches_serve_args() -> None:
    argv = [
        "pkg.mod:factory.attr",
        "--port=0080",
        "--host",
        "127.0.0.2",
        "--version",
        "é 2",
        "--tool-prefix",
        "demo",
        "--watch-root",
        "~/w",
        "--allowed-host",
        "a.test",
        "--allowed-origin=http://a.test",
        "--allowed-host=b.test",
        "--max-body-bytes",
        "1048576",
        "--remote-host",
        "192.0.2.7",
        "--token-file",
        "tok",
        "--remote-allowed-host",
        "box.test",
        "--remote-allowed-host",
        "box2.test",
        "--sign-in-hint",
        "ask = the operator",
        "--tls-cert",
        "c.pem",
        "--tls-key",
        "k.pem",
        "--log-level",
        "DEBUG",
        "--insecure-unauthenticated-host",
        "--state-dir",
        "s",
    ]
    assert _read(argv) == ServeArgs(
        target="pkg.mod:factory.attr",
        state_dir=Path("s"),
        port=80,
        host="127.0.0.2",
        version="é 2",
        tool_prefix="demo",
        watch_root=Path("~/w"),
        allowed_hosts=("a.test", "b.test"),
        allowed_origins=("http://a.test",),
        max_body_bytes=1048576,
        remote_host="192.0.2.7",
        token_file=Path("tok"),
        remote_allowed_hosts=("box.test", "box2.test"),
        sign_in_hint="ask = the operator",
        tls_cert=Path("c.pem"),
        tls_key=Path("k.pem"),
        log_level="debug",
        insecure_unauthenticated_host=True,
    )
    # Every field of ServeArgs has its flag: a new option cannot be forgotten by the parser.
    defaults = _read(["m:r", "--state-dir", "s"])
    assert {f.name for f in dataclasses.fields(ServeArgs)} == set(dataclasses.asdict(defaults))


@pytest.mark.parametrize("port", ["70000", "99999999", "-1"])
def test_port_out_of_range_is_a_usage_error(
    port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from local_daemon.cli import main

    for argv in (["--port", port], [f"--port={port}"], ["--port", f" {port}"]):
        with pytest.raises(SystemExit) as caught:
            main(["serve", "daemon_support:demo_registry", "--state-dir", str(tmp_path), *argv])
        assert caught.value.code == 64
        assert capsys.readouterr().err.startswith("local-daemon: --port must be 0 to 65535\n")
    assert not (tmp_path / "daemon.pid").exists()
