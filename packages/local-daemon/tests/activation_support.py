"""`systemd-socket-activate` running `local-daemon serve`: the activator listens first and starts
the daemon on the first connection, handing it the socket on fd 3."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from pathlib import Path

from daemon_support import TESTS_DIR, serve_argv

__all__ = ["free_port", "socket_activated", "wait_listening"]


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_listening(port: int) -> None:
    """Wait until something accepts on `port` (the activator binds within moments)."""
    for _ in range(1000):  # bounded
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except ConnectionRefusedError:
            await asyncio.sleep(0.01)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise AssertionError("the activator never listened")


def socket_activated(
    port: int, target: str, state: Path, *options: str, version: str = "socket-activated"
) -> subprocess.Popen[bytes]:
    """Start the activator on 127.0.0.1:`port` for `local-daemon serve TARGET` (the tests dir on
    PYTHONPATH); its stdout is discarded, its stderr piped."""
    activator = shutil.which("systemd-socket-activate")
    assert activator is not None, "install systemd (systemd-socket-activate)"
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
    return subprocess.Popen(
        [
            activator,
            "-l",
            f"127.0.0.1:{port}",
            "-E",
            "PYTHONPATH",
            *serve_argv(target, state, "--version", version, *options),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
