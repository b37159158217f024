"""`local-daemon serve` reads each flag into the `ServeArgs` field of its dest: a flag cannot be
parsed and then dropped, and a field cannot lack its flag."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from local_daemon._cli_serve import ServeArgs


def _read(argv: list[str]) -> ServeArgs:
    from local_daemon.cli import _serve_args, build_parser

    return _serve_args(build_parser().parse_args(["serve", *argv]))


def test_every_serve_flag_reaches_its_serve_args_field() -> None:
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
