"""`local-daemon serve` without typer: the fast parser agrees with typer or steps aside, and the
start-up path leaves typer, MCP, the gate, TLS and file serving unimported."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from daemon_support import DaemonProcess, rpc
from local_daemon import _cli_serve
from local_daemon._cli_serve import SERVE_FLAGS, ServeArgs, parse_serve_args

# Top-level packages a plain `serve` must not import: typer (and its vendored click, and the
# pydantic it coerces through), MCP, the watcher backend, and what the remote listener needs.
HEAVY_PACKAGES = frozenset({"typer", "click", "pydantic", "mcp", "watchfiles", "cryptography"})
# The daemon's own modules that a daemon without a remote listener, MCP or static files skips.
LAZY_MODULES = frozenset(
    {
        "local_daemon._auth",
        "local_daemon._cli_app",
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


def _typer_reading(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> ServeArgs:
    from local_daemon._cli_app import run_app

    seen: list[ServeArgs] = []
    monkeypatch.setattr(_cli_serve, "serve", seen.append)
    assert run_app(["serve", *argv]) == 0
    assert len(seen) == 1
    return seen[0]


PLAIN_LINES = [
    ["mod:reg", "--state-dir", "s"],
    ["--state-dir", "s", "mod:reg"],
    ["mod:reg", "--state-dir", "./a//b/", "--version", " 1 ", "--host", "::1"],
    ["mod:reg", "--state-dir=s", "--version=a=b", "--port=0080", "--max-body-bytes", "0"],
    ["mod:reg", "--insecure-unauthenticated-host", "--host", "192.0.2.1", "--state-dir", "s"],
    [
        "pkg.mod:factory.attr",
        "--port",
        "8765",
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
        "--state-dir",
        "s",
    ],
]


@pytest.mark.parametrize("argv", PLAIN_LINES)
def test_fast_parser_reads_what_typer_reads(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = parse_serve_args(argv)
    assert fast is not None
    assert fast == _typer_reading(argv, monkeypatch)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["mod:reg", "--state-dir", "s", "--help"],
        ["mod:reg", "--state-dir", "s", "-h"],
        ["mod:reg"],
        ["--state-dir", "s"],
        ["", "--state-dir", "s"],
        ["mod:reg", "--state-dir"],
        ["mod:reg", "--state-dir="],
        ["mod:reg", "--state", "s"],
        ["mod:reg", "--state-dir", "s", "extra"],
        ["mod:reg", "--state-dir", "s", "--", "x"],
        ["--state-dir", "s", "--", "mod:reg"],
        ["-mod:reg", "--state-dir", "s"],
        ["mod:reg", "--state-dir", "s", "--version", "-1"],
        ["mod:reg", "--state-dir", "s", "--port", "-1"],
        ["mod:reg", "--state-dir", "s", "--port", " 5"],
        ["mod:reg", "--state-dir", "s", "--port", "+5"],
        ["mod:reg", "--state-dir", "s", "--port", "5_0"],
        ["mod:reg", "--state-dir", "s", "--port", "\u0665"],
        ["mod:reg", "--state-dir", "s", "--port", "1" * 19],
        ["mod:reg", "--state-dir", "s", "--port", "5", "--port", "6"],
        ["mod:reg", "--state-dir", "s", "--state-dir", "t"],
        ["mod:reg", "--state-dir", "s", "--max-body-bytes", "1.5"],
        ["mod:reg", "--state-dir", "s", "--insecure-unauthenticated-host=1"],
        ["mod:reg", "--state-dir", "s"] + ["--insecure-unauthenticated-host"] * 2,
    ],
)
def test_fast_parser_leaves_everything_else_to_typer(argv: list[str]) -> None:
    assert parse_serve_args(argv) is None


def test_fast_parser_knows_every_serve_flag() -> None:
    import typer.main

    from local_daemon._cli_app import app

    command = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    flags = {
        opt: bool(param.multiple)
        for param in command.params
        for opt in param.opts
        if opt.startswith("--")
    }
    assert flags == {name: kind == "list" for name, (_, kind) in SERVE_FLAGS.items()}
    fields = {field.name for field in dataclasses.fields(ServeArgs)}
    assert fields == {"target"} | {field for field, _ in SERVE_FLAGS.values()}


@pytest.mark.parametrize("port", ["70000", "99999999"])
def test_port_out_of_range_is_a_usage_error(
    port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from local_daemon.cli import main

    for argv in (["--port", port], [f"--port={port}"], ["--port", f" {port}"]):
        with pytest.raises(SystemExit) as caught:
            main(["serve", "daemon_support:demo_registry", "--state-dir", str(tmp_path), *argv])
        assert caught.value.code == 64
        assert "--port must be 0 to 65535" in capsys.readouterr().err
    assert not (tmp_path / "daemon.pid").exists()


def test_echo_err_strips_styles_off_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    _cli_serve.echo_err("local-daemon: \033[31mred\033[0m")
    assert capsys.readouterr().err == "local-daemon: red\n"
