"""The start order's invariant, pinned with a watcher held at its start (a seam only a test
needs): until the pid file exists, `/health` answers 503 `starting`, and connections already
queued on an inherited socket wait."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from daemon_support import demo_registry, http
from local_daemon import _daemon, daemon_paths, start_daemon
from local_daemon import watch_tree as real_watch_tree


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


async def test_health_is_503_until_the_pid_file_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = asyncio.Event()
    seen: list[tuple[int, Any, bool]] = []
    paths = daemon_paths(tmp_path / "state")

    def slow_watch_tree(root: Any, on_change: Any, **kw: Any) -> Any:
        watch = real_watch_tree(root, on_change, **kw)
        original = watch.when_watching

        async def when_watching(path: Any, **kw2: Any) -> None:
            await original(path, **kw2)
            await asyncio.wait_for(release.wait(), 10)

        watch.when_watching = when_watching  # type: ignore[method-assign]
        return watch

    monkeypatch.setattr(_daemon, "watch_tree", slow_watch_tree)
    port = free_port()
    starting = asyncio.ensure_future(
        start_daemon(
            registry=demo_registry(),
            version="1",
            state_dir=paths.state_dir,
            port=port,
            watch_root=tmp_path,
        )
    )
    for _ in range(500):  # bounded: wait until the listener accepts
        if not refused(port):
            break
        await asyncio.sleep(0.01)
    status, _, body = await http(port, "GET", "/health")
    seen.append((status, json.loads(body), paths.pid_file.exists()))
    release.set()
    handle = await asyncio.wait_for(starting, 10)
    try:
        status, _, body = await http(port, "GET", "/health")
        seen.append((status, json.loads(body)["ok"], paths.pid_file.exists()))
    finally:
        await handle.close()
    assert seen == [(503, {"ok": False, "starting": True}, False), (200, True, True)]


async def test_an_inherited_socket_holds_connections_until_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Requests already queued on the inherited socket while the daemon starts (here, while its
    # watcher starts, held open by the test) are answered only once the pid file exists.
    release = asyncio.Event()

    def slow_watch_tree(root: Any, on_change: Any, **kw: Any) -> Any:
        watch = real_watch_tree(root, on_change, **kw)
        original = watch.when_watching

        async def when_watching(path: Any, **kw2: Any) -> None:
            await original(path, **kw2)
            await asyncio.wait_for(release.wait(), 10)

        watch.when_watching = when_watching  # type: ignore[method-assign]
        return watch

    monkeypatch.setattr(_daemon, "watch_tree", slow_watch_tree)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = int(sock.getsockname()[1])
    fd = os.dup(sock.fileno())
    sock.close()
    pending = [asyncio.ensure_future(http(port, "GET", "/health")) for _ in range(4)]
    starting = asyncio.ensure_future(
        start_daemon(
            registry=demo_registry(),
            version="1",
            state_dir=tmp_path / "state",
            listen_fd=fd,
            watch_root=tmp_path,
        )
    )
    for _ in range(20):  # let the daemon run up to its held watcher start
        await asyncio.sleep(0.01)
    assert not any(task.done() for task in pending), "answered before the pid file existed"
    release.set()
    handle = await asyncio.wait_for(starting, 10)
    try:
        statuses = [status for status, _, _ in await asyncio.gather(*pending)]
    finally:
        await handle.close()
    assert statuses == [200] * 4
