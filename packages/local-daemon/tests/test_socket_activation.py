"""Socket activation end to end: `systemd-socket-activate` runs `local-daemon serve` on fd 3.

The activator listens first and starts the daemon on the first connection, so every connection
made before the daemon is ready waits in the kernel backlog: none is refused and none sees 503.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from daemon_support import TESTS_DIR, http

_CONNECTIONS = 12


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_listening(port: int) -> None:
    for _ in range(1000):  # bounded: the activator binds within moments
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except ConnectionRefusedError:
            await asyncio.sleep(0.01)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise AssertionError("the activator never listened")


async def test_connections_before_ready_wait_in_the_backlog(tmp_path: Path) -> None:
    activator = shutil.which("systemd-socket-activate")
    assert activator is not None, "install systemd (systemd-socket-activate)"
    port = free_port()
    state = tmp_path / "state"
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
    process = subprocess.Popen(
        [
            activator,
            "-l",
            f"127.0.0.1:{port}",
            "-E",
            "PYTHONPATH",
            sys.executable,
            "-m",
            "local_daemon.cli",
            "serve",
            "daemon_support:demo_registry",
            "--state-dir",
            str(state),
            "--version",
            "socket-activated",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # The first probe connection is what starts the daemon; the burst below races its
        # start-up, with every request sent at once before any answer.
        await wait_listening(port)
        started_before_ready = not (state / "daemon.pid").exists()
        results = await asyncio.gather(
            *(http(port, "GET", "/health") for _ in range(_CONNECTIONS)),
            return_exceptions=True,
        )
        statuses = [r if isinstance(r, BaseException) else r[0] for r in results]
        assert statuses == [200] * _CONNECTIONS, statuses
        for result in results:
            assert not isinstance(result, BaseException)
            document = json.loads(result[2])
            assert document["version"] == "socket-activated"
            assert document["port"] == port
        assert started_before_ready, "the burst was sent before the daemon was ready"
        meta = json.loads((state / "daemon.meta.json").read_text())
        assert meta["port"] == port
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode("utf-8", "replace")
    assert not (state / "daemon.pid").exists()
