"""The refresher's heartbeat, at a 20 ms beat instead of 5 s (`io._refresh.HEARTBEAT_INTERVAL_S`
patched): it renews its own lock dirs with the record in step, and never touches a lock dir that
another client took over meanwhile. White-box: the beat is a module constant."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from accounts_locks_support import (
    config_lock,
    record,
    refresh,
    seed_due,
    wait_for,
)
from accounts_refresh_support import PAUSE_ENV, TokenServer, leftovers
from agent_accounts.io import Profile
from agent_accounts.io import _refresh as refresh_module


async def test_heartbeat_keeps_mtime_fresh_and_the_record_in_step(
    profile: Profile, server: TokenServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seed_due(profile, server)
    monkeypatch.setattr(refresh_module, "HEARTBEAT_INTERVAL_S", 0.02)
    marker = tmp_path / "paused"
    monkeypatch.setenv(PAUSE_ENV, f"requested:{marker}")
    task = asyncio.create_task(refresh(profile, server))
    await wait_for(marker)
    lock = config_lock(profile)
    first = lock.stat().st_mtime_ns
    for _ in range(500):
        await asyncio.sleep(0.01)
        st = lock.stat()
        rec = json.loads(record(profile).read_bytes())
        entry = next(e for e in rec["locks"] if e["path"] == str(lock))
        if st.st_mtime_ns > first and st.st_mtime_ns in entry["mtimes_ns"]:
            break
    else:
        raise AssertionError("the heartbeat never renewed the lock")
    marker.unlink()
    assert (await task).status == "refreshed"
    assert leftovers(Path(profile.config_dir)) == []


async def test_a_lock_replaced_while_held_is_neither_touched_nor_removed(
    profile: Profile, server: TokenServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seed_due(profile, server)
    monkeypatch.setattr(refresh_module, "HEARTBEAT_INTERVAL_S", 0.02)
    marker = tmp_path / "paused"
    monkeypatch.setenv(PAUSE_ENV, f"requested:{marker}")
    task = asyncio.create_task(refresh(profile, server))
    await wait_for(marker)
    lock = config_lock(profile)
    lock.rmdir()  # another client judged it stale and took it over
    lock.mkdir()
    os.utime(lock, (5, 5))
    await asyncio.sleep(0.1)
    assert lock.stat().st_mtime_ns == 5 * 10**9
    marker.unlink()
    await task
    assert lock.is_dir()
    assert lock.stat().st_mtime_ns == 5 * 10**9
    lock.rmdir()
