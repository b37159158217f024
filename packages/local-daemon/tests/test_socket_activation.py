"""Socket activation end to end: `systemd-socket-activate` runs `local-daemon serve` on fd 3.

The activator listens first and starts the daemon on the first connection, so every connection
made before the daemon is ready waits in the kernel backlog: none is refused and none sees 503.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

from activation_support import free_port, socket_activated, wait_listening
from daemon_support import http

_CONNECTIONS = 12


async def test_connections_before_ready_wait_in_the_backlog(tmp_path: Path) -> None:
    port = free_port()
    state = tmp_path / "state"
    process = socket_activated(port, "daemon_support:demo_registry", state)
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
