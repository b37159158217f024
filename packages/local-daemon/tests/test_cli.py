"""The `local-daemon` CLI as real subprocesses: serve, health, usage errors and exit codes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_support import TESTS_DIR, DaemonProcess
from local_daemon.cli import main


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "local_daemon.cli", *args],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_serve_health_and_sigterm(tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = DaemonProcess(state, "--version", "7.7.7")
    try:
        port = daemon.wait_ready()
        probe = cli("health", "--port", str(port))
        assert probe.returncode == 0, probe.stderr
        assert '"version": "7.7.7"' in probe.stdout
        assert f'"port": {port}' in probe.stdout
        daemon.process.send_signal(signal.SIGTERM)
        daemon.process.wait(timeout=30)
    finally:
        err = daemon.stop()
    assert daemon.process.returncode == 0, err
    assert not (state / "daemon.pid").exists()
    assert "Traceback" not in err


def test_serve_accepts_a_factory(tmp_path: Path) -> None:
    # `demo_registry` is a factory; `daemon_support.demo_registry` would also be a registry
    # once called, so both forms load.
    daemon = DaemonProcess(tmp_path / "s", target="daemon_support:demo_registry")
    try:
        daemon.wait_ready()
    finally:
        daemon.stop()
    assert daemon.process.returncode == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "Usage"),
        (["serve", "daemon_support:demo_registry"], "--state-dir"),
        (["serve", "nocolon", "--state-dir", "x"], "MODULE:ATTR"),
        (["serve", "no_such_module_here:x", "--state-dir", "x"], "cannot import"),
        (["serve", "daemon_support:nothing", "--state-dir", "x"], "no attribute"),
        (["serve", "daemon_support:CANARY", "--state-dir", "x"], "not a command registry"),
        (["serve", "daemon_support:demo_registry", "--state-dir", "x", "--port", "abc"], "port"),
        (
            [
                "serve",
                "daemon_support:demo_registry",
                "--state-dir",
                "x",
                "--remote-host",
                "1.2.3.4",
            ],
            "--token-file",
        ),
        (["bogus"], "No such command"),
    ],
)
def test_usage_errors_exit_64_without_traceback(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    assert caught.value.code == 64, (out, err)
    assert "Traceback" not in err
    assert needle in err + out


def test_health_without_a_daemon_is_69() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = cli("health", "--port", str(port), "--timeout", "0.5")
    assert result.returncode == 69
    assert "no healthy daemon" in result.stderr


def test_port_in_use_is_69(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cli(
            "serve",
            "daemon_support:demo_registry",
            "--state-dir",
            str(tmp_path),
            "--port",
            str(port),
        )
    assert result.returncode == 69, result.stderr
    assert "already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_listen_fds_is_78(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; os.environ['LISTEN_PID'] = str(os.getpid()); "
            "os.environ['LISTEN_FDS'] = '2'; "
            "sys.argv = ['local-daemon', 'serve', 'daemon_support:demo_registry', '--state-dir', "
            f"{str(tmp_path)!r}]; "
            "from local_daemon.cli import main; main()",
        ],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 78, result.stderr
    assert "LISTEN_FDS" in result.stderr


def test_token_group_is_mounted(tmp_path: Path) -> None:
    token = tmp_path / "token"
    result = cli("token", "ensure", str(token))
    assert result.returncode == 0, result.stderr
    assert token.exists()
