"""`/events` server-sent events and `EventHub`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from daemon_support import running
from local_daemon import EventHub, WatchRootError
from sse_client import SseClient

# The spec's cap on the paths of one `change` event.
MAX_CHANGE_PATHS = 1000

_TIMEOUT = 10.0


async def test_ready_then_change_from_a_real_write(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    async with running(tmp_path, watch_root=root) as handle:
        client = await SseClient.open(handle.port)
        try:
            assert await client.next_event() == ("ready", '{"version":"1.2.3"}')
            (root / "a.txt").write_text("x")
            event, data = await client.next_event()
            assert event == "change"
            assert "a.txt" in data
        finally:
            await client.close()


async def test_a_burst_over_the_cap_is_one_truncated_change(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    total = MAX_CHANGE_PATHS + 500
    # A 1 s quiet window keeps the whole burst in one batch on a busy machine.
    async with running(tmp_path, watch_root=root, watch_debounce=1.0) as handle:
        client = await SseClient.open(handle.port)
        try:
            assert (await client.next_event())[0] == "ready"
            names = [f"f{n:05d}.txt" for n in range(total)]
            for name in names:
                os.close(os.open(root / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            event, data = await client.next_event()
            assert event == "change"
            assert json.loads(data) == {
                "paths": names[:MAX_CHANGE_PATHS],
                "truncated": True,
                "count": total,
            }
            # A small change afterwards has the plain shape, byte for byte.
            (root / "z.txt").touch()
            assert await client.next_event() == ("change", '{"paths":["z.txt"]}')
        finally:
            await client.close()


async def test_close_ends_open_streams(tmp_path: Path) -> None:
    async with running(tmp_path) as handle:
        client = await SseClient.open(handle.port)
        assert (await client.next_event())[0] == "ready"
        closing = asyncio.ensure_future(handle.close())
        rest = await asyncio.wait_for(client.reader.read(), _TIMEOUT)
        await asyncio.wait_for(closing, _TIMEOUT)
        await client.close()
    assert b"event:" not in rest


def test_hub_drops_a_raising_subscriber() -> None:
    hub = EventHub()
    got: list[tuple[str, Any]] = []

    def bad(event: str, data: Any) -> None:
        raise RuntimeError("dead client")

    hub.subscribe(bad)
    unsubscribe = hub.subscribe(lambda event, data: got.append((event, data)))
    assert hub.broadcast("change", 1) == 1
    assert hub.broadcast("change", 2) == 1
    assert got == [("change", 1), ("change", 2)]
    assert len(hub) == 1
    unsubscribe()
    assert len(hub) == 0
    assert hub.broadcast("change", 3) == 0


def test_hub_unsubscribe_by_callback() -> None:
    hub = EventHub()

    def sub(event: str, data: Any) -> None:
        return None

    hub.subscribe(sub)
    hub.unsubscribe(sub)
    assert len(hub) == 0


@pytest.mark.parametrize("count", [1000])
async def test_broadcast_reaches_many_streams(count: int) -> None:
    hub = EventHub()
    got = 0

    def sub(event: str, data: Any) -> None:
        nonlocal got
        got += 1

    for _ in range(count):
        hub.subscribe(sub)
    assert hub.broadcast("change", {}) == count
    assert got == count


@pytest.mark.parametrize(
    ("make", "problem", "text"),
    [
        (None, "missing", "does not exist: create the directory before starting the daemon"),
        ("file", "not_a_directory", "is not a directory: point the watch at a directory"),
        ("dangling", "missing", "does not exist: create the directory before starting the daemon"),
        (
            "under_file",
            "missing",
            "does not exist: create the directory before starting the daemon",
        ),
    ],
)
async def test_a_watch_root_that_is_no_directory_is_refused_before_anything_starts(
    tmp_path: Path, make: str | None, problem: str, text: str
) -> None:
    root = tmp_path / "tree"
    if make == "file":
        root.write_text("x")
    elif make == "dangling":
        root.symlink_to(tmp_path / "gone")
    elif make == "under_file":
        (tmp_path / "plain").write_text("x")
        root = tmp_path / "plain" / "tree"
    with pytest.raises(WatchRootError) as caught:
        async with running(tmp_path, watch_root=root):
            pass
    assert (caught.value.path, caught.value.problem) == (root, problem)
    assert str(caught.value) == f"watch root {root} {text}"
    # Refused before the state dir is locked or a socket bound: nothing was written.
    assert not (tmp_path / "state").exists()


async def test_change_events_resume_after_the_watch_root_is_recreated(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    async with running(tmp_path, watch_root=root) as handle:
        client = await SseClient.open(handle.port)
        try:
            assert (await client.next_event())[0] == "ready"
            shutil.rmtree(root)
            assert await client.next_event() == ("change", '{"paths":["."]}')
            root.mkdir()
            # Re-armed on the new directory: the whole tree is reported once more.
            assert await client.next_event() == ("change", '{"paths":["."]}')
            # That second report comes once the new directory is watched.
            (root / "back.txt").write_text("x")
            assert await client.next_event() == ("change", '{"paths":["back.txt"]}')
        finally:
            await client.close()
