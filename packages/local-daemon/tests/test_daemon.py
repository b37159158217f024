"""`start_daemon` lifecycle: readiness, pid file, port in use, remote failures, close."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import trustme

from daemon_support import demo_registry, http, running
from gate_support import trustme_pair
from local_daemon import (
    DaemonPortInUseError,
    RemoteBindError,
    RemoteOptions,
    TlsFileError,
    TlsFiles,
    daemon_paths,
    ensure_token_file,
    read_pid_file,
    start_daemon,
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refused(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
    return False


async def test_ready_lifecycle_and_close(tmp_path: Path) -> None:
    paths = daemon_paths(tmp_path / "state")
    async with running(tmp_path, health=lambda: {"ok": "product", "indexed": 3}) as handle:
        assert read_pid_file(paths) == os.getpid()
        meta = json.loads(paths.meta_file.read_text())
        assert meta["port"] == handle.port
        assert meta["pid"] == os.getpid()
        status, _, body = await http(handle.port, "GET", "/health")
        document = json.loads(body)
        assert status == 200
        assert document["ok"] is True, "core fields win a collision"
        assert document["indexed"] == 3
        assert document["version"] == "1.2.3"
        assert document["pid"] == os.getpid()
        assert document["port"] == handle.port
        assert isinstance(document["uptime_ms"], int)
        status, _, body = await http(handle.port, "GET", "/version")
        assert (status, json.loads(body)) == (200, {"version": "1.2.3"})
        port = handle.port
    assert read_pid_file(paths) is None
    assert not paths.meta_file.exists()
    assert refused(port)


async def test_close_keeps_a_successors_pid_file(tmp_path: Path) -> None:
    paths = daemon_paths(tmp_path / "state")
    async with running(tmp_path):
        paths.pid_file.write_text("999999\n")  # a successor took over
    assert read_pid_file(paths) == 999999


async def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = int(taken.getsockname()[1])
        with pytest.raises(DaemonPortInUseError) as caught:
            await start_daemon(
                registry=demo_registry(), version="1", state_dir=tmp_path / "s", port=port
            )
    assert caught.value.port == port
    assert not (tmp_path / "s" / "daemon.pid").exists()


def remote_options(tmp_path: Path, host: str, tls: TlsFiles) -> RemoteOptions:
    token = tmp_path / "token"
    ensure_token_file(token)
    return RemoteOptions(host=host, token_file=token, tls=tls, allowed_hosts=("box.test",))


@pytest.mark.parametrize("case", ["loopback-remote", "missing-tls", "address-not-here"])
async def test_remote_failure_leaves_nothing(tmp_path: Path, case: str) -> None:
    ca = trustme.CA()
    good = trustme_pair(ca, tmp_path, "box.test")
    options = {
        "loopback-remote": remote_options(tmp_path, "127.0.0.1", good),
        "missing-tls": remote_options(
            tmp_path,
            "192.0.2.10",
            TlsFiles(cert_file=tmp_path / "nope.pem", key_file=good.key_file),
        ),
        "address-not-here": remote_options(tmp_path, "192.0.2.10", good),
    }[case]
    expected: type[Exception] = TlsFileError if case == "missing-tls" else RemoteBindError
    port = free_port()
    with pytest.raises(expected):
        await start_daemon(
            registry=demo_registry(),
            version="1",
            state_dir=tmp_path / "state",
            port=port,
            remote=options,
        )
    assert not (tmp_path / "state" / "daemon.pid").exists()
    assert refused(port), "loopback was closed"
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))


async def test_serves_an_inherited_socket(tmp_path: Path) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = int(sock.getsockname()[1])
    fd = os.dup(sock.fileno())
    try:
        async with running(tmp_path, listen_fd=fd) as handle:
            assert handle.port == port
            assert (await http(port, "GET", "/health"))[0] == 200
        # Closing released this process's copy only: the original socket still listens.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        sock.close()


async def test_close_is_idempotent(tmp_path: Path) -> None:
    async with running(tmp_path) as handle:
        await handle.close()
        await handle.close()


_SIGTERM_DURING_START = """
import asyncio, os, signal, sys
from daemon_support import demo_registry
from local_daemon import run_daemon_until_signal

def mount_routes(app):
    # A supervisor's SIGTERM that lands while the daemon starts (the pid file may already be
    # there): it must close the daemon cleanly, never kill it with the default action.
    os.kill(os.getpid(), signal.SIGTERM)

asyncio.run(run_daemon_until_signal(
    registry=demo_registry(), version="1", state_dir=sys.argv[1], mount_routes=mount_routes
))
print("closed cleanly")
"""


def test_sigterm_during_start_closes_cleanly(tmp_path: Path) -> None:
    import subprocess
    import sys

    from daemon_support import TESTS_DIR

    state = tmp_path / "state"
    proc = subprocess.run(
        [sys.executable, "-c", _SIGTERM_DURING_START, str(state)],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "closed cleanly"
    assert not (state / "daemon.pid").exists()
